/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-nvmf-perf: a small NVMe-oF RDMA initiator on droce, in the spirit of SPDK's
 * spdk_nvme_perf, for droce-to-droce figures (droce-nvmf as the target) and for checking a
 * target's data path end to end. It connects an admin queue and one I/O queue through
 * RDMA-CM (NVMe-oF private data), runs Fabrics Connect, enables the controller, reads the
 * namespace's size and block size from Identify, then keeps -q commands of -o bytes in
 * flight for -t seconds:
 *   randread   random aligned reads (the target RDMA WRITEs into our buffer);
 *   randwrite  random aligned writes (the target RDMA READs our buffer);
 *   verify     each slot writes a pattern naming the block and a generation to a block of
 *              its own, reads it back and compares every byte; any difference fails the run.
 * Output: one spdk_nvme_perf-like summary (IOPS, MiB/s, average/min/max latency in us) plus
 * percentiles, and a `result:` line with key=value pairs for scripts. One thread runs the
 * engine, the CM and the queues in one non-blocking loop (embedded mode unless --worker). */
#include <arpa/inet.h>
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <droce/cm_device.h>
#include <droce/droce.h>

#include "app_cm.h"
#include "app_engine.h"
#include "cli_numbers.h"
#include "device_options.h"
#include "eal_args.h"
#include "nvmf_capsule.h"
#include "nvmf_cm_priv.h"
#include "nvmf_spec.h"

using namespace droce;
using namespace droce::nvmf;

namespace {

enum ToolOption : int { kOptHostNqn = app::kFirstToolOption, kOptNsid, kOptMaxSamples };

enum class Workload { RandRead, RandWrite, Verify };

struct Options : app::DeviceOptions {
    Options() : app::DeviceOptions(0) {}
    std::string addr; /* -a: the target's IPv4 address */
    uint16_t port = 4420;
    std::string subnqn = "nqn.2026-11.io.droce:nvmf0";
    std::string hostnqn = "nqn.2014-08.org.nvmexpress:uuid:droce-nvmf-perf";
    uint32_t depth = 1;
    uint32_t io_size = 4096;
    Workload workload = Workload::RandRead;
    double seconds = 5;
    uint32_t nsid = 1;
    uint32_t max_samples = 1u << 24; /* latency samples kept for percentiles */
};

const app::DeviceOptionRules kRules{};
constexpr uint64_t kLingerNs = 200'000'000;
constexpr uint32_t kAdminDepth = 31; /* commands; the SQ has one entry more */
constexpr uint32_t kMaxDepth = 127;  /* -q: the target's 128-entry I/O SQ */
constexpr uint32_t kRecvSlot = 64;   /* a response capsule is 16 bytes; room to spare */
constexpr uint64_t kPatternSeed = 0x9E3779B97F4A7C15ull;
constexpr uint16_t kIoConnectCid = 0xC0C0; /* above any slot's CID (slots are CIDs 0..126) */

void usage(const char *argv0, FILE *f) {
    std::fprintf(
        f,
        "Usage: %s [EAL args --] -a TARGET_IP [options]\n"
        "  -a ADDR           the target's IPv4 address\n"
        "  -s PORT           RDMA-CM port (4420)\n"
        "  -n NQN            subsystem NQN (nqn.2026-11.io.droce:nvmf0)\n"
        "  --hostnqn NQN     our host NQN\n"
        "  --nsid N          namespace (1)\n"
        "  -q DEPTH          commands in flight, 1..127 (1)\n"
        "  -o BYTES          I/O size, a multiple of the block size, up to 128 KiB (4096)\n"
        "  -w WORKLOAD       randread | randwrite | verify (randread)\n"
        "  -t SECONDS        run time (5)\n"
        "  --max-samples N   latency samples kept for percentiles (16M)\n"
        "droce device options: --dpdk-port NAME|ID --ip A.B.C.D/P [--mac M] [--eth-mtu N]\n"
        "  [--embedded|--worker] [--busy-poll] [--timeout S] [--counters] [--log-level L]\n",
        argv0);
}

/* BYTES with an optional k/K (KiB) suffix. */
bool parse_io_size(const char *s, uint64_t &out) {
    std::string v = s;
    uint64_t mult = 1;
    if (!v.empty() && (v.back() == 'k' || v.back() == 'K')) {
        mult = 1024;
        v.pop_back();
    }
    if (v.empty() || !app::parse_u64(v.c_str(), 1u << 20, out))
        return false;
    out *= mult;
    return true;
}

/* 0: run, 1: exit with error, 2: exit ok. */
int parse(int argc, char **argv, Options &o) {
    const char *argv0 = argv[0];
    app::SplitArgs split = app::split_at_dashdash(argc, argv, 1);
    o.eal_args = std::move(split.eal);
    std::vector<char *> &ours = split.ours;
    const std::vector<struct option> longs = app::with_device_options({
        {"help", no_argument, nullptr, 'h'},
        {"hostnqn", required_argument, nullptr, kOptHostNqn},
        {"nsid", required_argument, nullptr, kOptNsid},
        {"max-samples", required_argument, nullptr, kOptMaxSamples},
    });
    opterr = 0;
    optind = 1;
    for (;;) {
        const int c =
            getopt_long(split.ours_argc(), ours.data(), ":a:s:n:q:o:w:t:h", longs.data(), nullptr);
        if (c == -1)
            break;
        uint64_t u = 0;
        switch (c) {
        case 'a':
            o.addr = optarg;
            break;
        case 's':
            if (!app::parse_u64(optarg, 65535, u) || u == 0) {
                std::fprintf(stderr, "%s: invalid port %s\n", argv0, optarg);
                return 1;
            }
            o.port = static_cast<uint16_t>(u);
            break;
        case 'n':
        case kOptHostNqn: {
            const size_t len = std::strlen(optarg);
            if (len == 0 || len >= kNqnLen) {
                std::fprintf(stderr, "%s: invalid NQN '%s' (1..%zu characters)\n", argv0, optarg,
                             kNqnLen - 1);
                return 1;
            }
            (c == 'n' ? o.subnqn : o.hostnqn) = optarg;
            break;
        }
        case kOptNsid:
            if (!app::parse_u64(optarg, 0xFFFFFFFEu, u) || u == 0) {
                std::fprintf(stderr, "%s: invalid nsid %s\n", argv0, optarg);
                return 1;
            }
            o.nsid = static_cast<uint32_t>(u);
            break;
        case 'q':
            if (!app::parse_u64(optarg, kMaxDepth, u) || u == 0) {
                std::fprintf(stderr, "%s: invalid queue depth %s (1..127)\n", argv0, optarg);
                return 1;
            }
            o.depth = static_cast<uint32_t>(u);
            break;
        case 'o':
            if (!parse_io_size(optarg, u) || u < 512 || u > 128 * 1024 || u % 512) {
                std::fprintf(stderr, "%s: invalid I/O size %s (512..128K, a multiple of 512)\n",
                             argv0, optarg);
                return 1;
            }
            o.io_size = static_cast<uint32_t>(u);
            break;
        case 'w': {
            const std::string w = optarg;
            if (w == "randread")
                o.workload = Workload::RandRead;
            else if (w == "randwrite")
                o.workload = Workload::RandWrite;
            else if (w == "verify")
                o.workload = Workload::Verify;
            else {
                std::fprintf(stderr, "%s: invalid workload %s (randread, randwrite, verify)\n",
                             argv0, optarg);
                return 1;
            }
            break;
        }
        case 't':
            if (!app::parse_u64(optarg, 3600, u) || u == 0) {
                std::fprintf(stderr, "%s: invalid time %s (1..3600 s)\n", argv0, optarg);
                return 1;
            }
            o.seconds = static_cast<double>(u);
            break;
        case kOptMaxSamples:
            if (!app::parse_u64(optarg, 1u << 28, u)) {
                std::fprintf(stderr, "%s: invalid --max-samples %s\n", argv0, optarg);
                return 1;
            }
            o.max_samples = static_cast<uint32_t>(u);
            break;
        case 'h':
            usage(argv0, stdout);
            return 2;
        default:
            if (std::string err =
                    app::take_device_option(c, optarg, ours.data(), longs.data(), o, kRules);
                !err.empty()) {
                std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
                usage(argv0, stderr);
                return 1;
            }
        }
    }
    if (optind < split.ours_argc()) {
        std::fprintf(stderr, "%s: unexpected argument '%s'\n", argv0, ours[optind]);
        return 1;
    }
    in_addr a{};
    if (o.addr.empty() || inet_pton(AF_INET, o.addr.c_str(), &a) != 1) {
        std::fprintf(stderr, "%s: -a needs the target's IPv4 address\n", argv0);
        return 1;
    }
    if (o.loopback) {
        std::fprintf(stderr, "%s: --loopback is not supported\n", argv0);
        return 1;
    }
    if (std::string err = app::finish_device_options(o, true, kRules); !err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return 1;
    }
    return 0;
}

/* One NVMe-oF queue: an RC QP connected by the CM, its CQ, and per command slot an SQE
 * buffer, a response buffer and (I/O queue) a data buffer, all in one registered region. */
struct NvmeQueue {
    uint16_t qid = 0;
    uint32_t depth = 0; /* command slots */
    uint32_t cm_id = 0;
    bool established = false, gone = false, failed = false;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<QueuePair> qp;
};

/* The state of one command slot of the I/O queue. */
struct Slot {
    bool send_done = true, resp_done = true;
    bool verify_read = false; /* verify: the write is done, the read is in flight */
    uint64_t lba = 0;
    uint32_t gen = 0;
    std::chrono::steady_clock::time_point start;
    Cqe cqe;
};

class Initiator {
  public:
    Initiator(const Options &o, app::EngineRun &run, Device &dev, CmDevice &cm)
        : o_(o), run_(run), dev_(dev), cm_(cm), rng_(std::random_device{}()) {}
    ~Initiator() {
        for (NvmeQueue *q : {&admin_, &io_})
            if (q->cm_id)
                cm_.release(q->cm_id);
    }

    int run();

  private:
    /* Region layout: the SQEs (admin: kAdminDepth, I/O: up to kMaxDepth), the response
     * slots (one more per queue than its commands), the Connect data, the Identify page,
     * then one I/O buffer per slot. */
    static size_t sqe_off(const NvmeQueue &q, uint32_t s) {
        return (q.qid ? kAdminDepth : 0) * kSqeLen + s * kSqeLen;
    }
    static size_t recv_off(const NvmeQueue &q, uint32_t s) {
        return (kAdminDepth + kMaxDepth) * kSqeLen +
               ((q.qid ? kAdminDepth + 1 : 0) + s) * kRecvSlot;
    }
    static size_t connect_off() {
        return (kAdminDepth + kMaxDepth) * kSqeLen + (kAdminDepth + kMaxDepth + 2) * kRecvSlot;
    }
    size_t identify_off() const { return connect_off() + kConnectDataLen; }
    size_t data_off(uint32_t s) const {
        return identify_off() + kIdentifyLen + static_cast<size_t>(s) * o_.io_size;
    }
    uint8_t *at(size_t off) { return mem_.data() + off; }
    uint64_t addr(size_t off) { return reinterpret_cast<uintptr_t>(at(off)); }

    int fail(const std::string &why) {
        std::fprintf(stderr, "droce-nvmf-perf: %s\n", why.c_str());
        ok_ = false;
        return 1;
    }

    bool open_queue(NvmeQueue &q, uint16_t qid, uint32_t depth);
    bool post_recv(NvmeQueue &q, uint32_t s);
    bool post_capsule(NvmeQueue &q, uint32_t s);
    bool admin_cmd(uint8_t *sqe_template, Cqe &out, const char *what);
    bool fabrics_connect(NvmeQueue &q, uint16_t cntlid, uint16_t &cntlid_out);
    bool bring_up();
    void issue(uint32_t s);
    void on_io_response(uint32_t s);
    bool tick();
    bool wait(const char *what, const std::function<bool()> &until);
    void on_event(const CmEventInfo &ev);
    void fill_pattern(uint32_t s);
    bool check_pattern(uint32_t s);
    void report(double secs);
    int finish(int rc);

    const Options &o_;
    app::EngineRun &run_;
    Device &dev_;
    CmDevice &cm_;
    std::mt19937_64 rng_;
    std::unique_ptr<ProtectionDomain> pd_;
    std::vector<uint8_t> mem_;
    std::unique_ptr<MemoryRegion> mr_;
    NvmeQueue admin_, io_;
    /* The admin queue runs one command at a time: its response lands here. */
    bool admin_resp_ = false;
    Cqe admin_cqe_;
    uint16_t admin_cid_ = 0;
    std::vector<Slot> slots_;
    uint64_t ns_blocks_ = 0; /* namespace size in blocks */
    uint32_t block_ = 512;
    uint64_t ios_ = 0, errors_ = 0, mismatches_ = 0;
    std::vector<uint32_t> lat_ns_;
    bool measuring_ = false;
    bool io_connecting_ = false; /* slot 0 carries the I/O queue's Fabrics Connect */
    bool ok_ = true;
};

bool Initiator::open_queue(NvmeQueue &q, uint16_t qid, uint32_t depth) {
    q.qid = qid;
    q.depth = depth;
    auto cq = dev_.create_cq(2 * depth + 2);
    if (!cq)
        return fail("unable to create a CQ: " + cq.status().message()), false;
    q.cq = std::move(*cq);
    QpInitAttr qa;
    qa.send_cq = qa.recv_cq = q.cq.get();
    qa.cap.max_send_wr = depth;
    qa.cap.max_recv_wr = depth + 1;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    qa.sq_sig_all = true;
    auto qp = pd_->create_qp(qa);
    if (!qp)
        return fail("unable to create a QP: " + qp.status().message()), false;
    q.qp = std::move(*qp);
    /* Responses may arrive as soon as the target accepted: receives go first. */
    for (uint32_t s = 0; s <= depth; ++s)
        if (!post_recv(q, s))
            return false;
    CmReqPriv rp;
    rp.qid = qid;
    /* An SQ of N entries holds N - 1 commands: depth + 1 entries, 0's based. */
    rp.hsqsize = static_cast<uint16_t>(depth);
    rp.hrqsize = static_cast<uint16_t>(depth + 1);
    rp.cntlid = 0xFFFF;
    uint8_t priv[kCmReqPrivLen];
    encode_cm_req_priv(rp, priv, sizeof priv);
    CmConnectParam cp;
    cp.rq_psn = app::random_psn();
    cp.responder_resources = 16; /* the target READs our write data */
    cp.initiator_depth = 0;
    cp.private_data = priv;
    cp.private_data_len = sizeof priv;
    in_addr a{};
    inet_pton(AF_INET, o_.addr.c_str(), &a);
    q.cm_id = cm_.connect(ntohl(a.s_addr), o_.port, *q.qp, cp);
    if (q.cm_id == 0)
        return fail("RDMA-CM connect failed"), false;
    return wait("connecting", [&] { return q.established || q.failed; }) && !q.failed;
}

bool Initiator::post_recv(NvmeQueue &q, uint32_t s) {
    RecvWr r;
    r.wr_id = (static_cast<uint64_t>(q.qid) << 32) | s;
    r.num_sge = 1;
    r.sg_list[0] = Sge{addr(recv_off(q, s)), kRecvSlot, mr_->lkey()};
    if (Status st = q.qp->post_recv(r); !st)
        return fail("post_recv: " + st.message()), false;
    return true;
}

bool Initiator::post_capsule(NvmeQueue &q, uint32_t s) {
    SendWr w;
    w.wr_id = (static_cast<uint64_t>(q.qid) << 32) | s;
    w.opcode = WrOpcode::Send;
    w.num_sge = 1;
    w.sg_list[0] = Sge{addr(sqe_off(q, s)), static_cast<uint32_t>(kSqeLen), mr_->lkey()};
    if (Status st = q.qp->post_send(w); !st)
        return fail("post_send: " + st.message()), false;
    return true;
}

/* One admin command (SQE already built at slot 0 but for its CID), synchronously. */
bool Initiator::admin_cmd(uint8_t *sqe, Cqe &out, const char *what) {
    st16(sqe + 2, ++admin_cid_);
    admin_resp_ = false;
    if (!post_capsule(admin_, 0))
        return false;
    if (!wait(what, [&] { return admin_resp_; }))
        return false;
    out = admin_cqe_;
    if (out.cid != admin_cid_)
        return fail(std::string(what) + ": response for CID " + std::to_string(out.cid)), false;
    if (status_sc(out.status) != kScSuccess || status_sct(out.status) != kSctGeneric) {
        char b[96];
        std::snprintf(b, sizeof b, "%s failed: SCT %u SC 0x%02x", what, status_sct(out.status),
                      status_sc(out.status));
        return fail(b), false;
    }
    return true;
}

bool Initiator::fabrics_connect(NvmeQueue &q, uint16_t cntlid, uint16_t &cntlid_out) {
    uint8_t *d = at(connect_off());
    std::memset(d, 0, kConnectDataLen);
    static const uint8_t kHostId[16] = {0xd7, 0x0c, 0xe0, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    std::memcpy(d, kHostId, 16);
    st16(d + 16, cntlid);
    std::memcpy(d + 256, o_.subnqn.data(), o_.subnqn.size());
    std::memcpy(d + 512, o_.hostnqn.data(), o_.hostnqn.size());
    uint8_t *s = at(sqe_off(q, 0));
    build_sqe(s, kOpcFabrics, 0, 0);
    s[4] = kFcConnect;
    st16(s + 42, q.qid);
    st16(s + 44, static_cast<uint16_t>(q.depth)); /* SQSIZE, as in the CM REQ */
    st32(s + 48, 0);                              /* no keep-alive */
    set_keyed_sgl(s, addr(connect_off()), kConnectDataLen, mr_->rkey(), false);
    Cqe c;
    if (q.qid == 0) {
        if (!admin_cmd(s, c, "Fabrics Connect (admin queue)"))
            return false;
    } else {
        /* The I/O queue's Connect goes on the I/O queue itself. */
        st16(s + 2, kIoConnectCid);
        io_connecting_ = true;
        slots_[0].send_done = slots_[0].resp_done = false;
        if (!post_capsule(q, 0) || !wait("Fabrics Connect (I/O queue)", [&] {
                return slots_[0].send_done && slots_[0].resp_done;
            }))
            return false;
        io_connecting_ = false;
        c = slots_[0].cqe;
        if (status_sc(c.status) != kScSuccess || status_sct(c.status) != kSctGeneric) {
            char b[96];
            std::snprintf(b, sizeof b, "Fabrics Connect (I/O queue) failed: SCT %u SC 0x%02x",
                          status_sct(c.status), status_sc(c.status));
            return fail(b), false;
        }
    }
    cntlid_out = static_cast<uint16_t>(c.dw0);
    return true;
}

bool Initiator::bring_up() {
    auto pd = dev_.alloc_pd();
    if (!pd)
        return fail("unable to allocate a PD"), false;
    pd_ = std::move(*pd);
    mem_.assign(data_off(o_.depth), 0);
    /* The target READs write data and Connect data, and WRITEs read data. */
    auto mr = pd_->reg_mr(mem_.data(), mem_.size(),
                          kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite);
    if (!mr)
        return fail("unable to register memory: " + mr.status().message()), false;
    mr_ = std::move(*mr);
    slots_.assign(o_.depth, Slot{});

    if (!open_queue(admin_, 0, kAdminDepth))
        return false;
    uint16_t cntlid = 0;
    if (!fabrics_connect(admin_, 0xFFFF, cntlid))
        return false;
    uint8_t *s = at(sqe_off(admin_, 0));
    Cqe c;
    /* CC: enable, 64-byte SQEs, 16-byte CQEs (as Linux's nvme_enable_ctrl). */
    build_sqe(s, kOpcFabrics, 0, 0);
    s[4] = kFcPropertySet;
    st32(s + 44, kPropCc);
    st64(s + 48, kCcEn | (6u << 16) | (4u << 20));
    set_keyed_sgl(s, 0, 0, 0, false);
    if (!admin_cmd(s, c, "Property Set CC.EN"))
        return false;
    for (int i = 0;; ++i) {
        build_sqe(s, kOpcFabrics, 0, 0);
        s[4] = kFcPropertyGet;
        st32(s + 44, kPropCsts);
        set_keyed_sgl(s, 0, 0, 0, false);
        if (!admin_cmd(s, c, "Property Get CSTS"))
            return false;
        if (c.dw0 & kCstsRdy)
            break;
        if (i == 1000)
            return fail("the controller never became ready (CSTS.RDY)"), false;
    }
    /* Number of Queues: one I/O queue pair (0's based). */
    build_sqe(s, kAdminSetFeatures, 0, 0);
    st32(s + 40, kFidNumQueues);
    st32(s + 44, 0);
    set_keyed_sgl(s, 0, 0, 0, false);
    if (!admin_cmd(s, c, "Set Features (Number of Queues)"))
        return false;
    /* Identify Namespace: NSZE and the block size of the formatted LBA format. */
    build_sqe(s, kAdminIdentify, 0, o_.nsid);
    st32(s + 40, 0); /* CNS 0 */
    set_keyed_sgl(s, addr(identify_off()), kIdentifyLen, mr_->rkey(), false);
    if (!admin_cmd(s, c, "Identify Namespace"))
        return false;
    const uint8_t *id = at(identify_off());
    ns_blocks_ = ld64(id);
    const uint8_t lbads = id[128 + 4 * (id[26] & 0xF) + 2];
    if (ns_blocks_ == 0 || lbads < 9 || lbads > 16)
        return fail("namespace " + std::to_string(o_.nsid) + " is not active"), false;
    block_ = 1u << lbads;
    if (o_.io_size % block_)
        return fail("-o " + std::to_string(o_.io_size) + " is not a multiple of the block size " +
                    std::to_string(block_)),
               false;
    const uint64_t units = ns_blocks_ / (o_.io_size / block_);
    if (units < o_.depth)
        return fail("the namespace holds fewer I/O units than -q"), false;

    if (!open_queue(io_, 1, o_.depth))
        return false;
    uint16_t io_cntlid = 0;
    if (!fabrics_connect(io_, cntlid, io_cntlid))
        return false;
    std::printf("Attached to NVMe over Fabrics controller at %s:%u: %s (cntlid %u)\n",
                o_.addr.c_str(), o_.port, o_.subnqn.c_str(), cntlid);
    std::printf("Namespace ID: %u size: %" PRIu64 " blocks of %u bytes\n", o_.nsid, ns_blocks_,
                block_);
    return true;
}

void Initiator::fill_pattern(uint32_t s) {
    /* Every 8-byte word names the block, the generation and its index: a stale, shifted or
     * misdirected block cannot match. */
    uint64_t *w = reinterpret_cast<uint64_t *>(at(data_off(s)));
    const Slot &sl = slots_[s];
    for (uint32_t i = 0; i < o_.io_size / 8; ++i)
        w[i] = ((sl.lba << 24) ^ (static_cast<uint64_t>(sl.gen) << 48) ^ i) * kPatternSeed;
}

bool Initiator::check_pattern(uint32_t s) {
    const uint64_t *w = reinterpret_cast<const uint64_t *>(at(data_off(s)));
    const Slot &sl = slots_[s];
    for (uint32_t i = 0; i < o_.io_size / 8; ++i)
        if (w[i] != (((sl.lba << 24) ^ (static_cast<uint64_t>(sl.gen) << 48) ^ i) * kPatternSeed))
            return false;
    return true;
}

/* Next command of slot s. Verify: slot s owns the I/O units u with u % depth == s, so no
 * two slots ever touch one block. */
void Initiator::issue(uint32_t s) {
    Slot &sl = slots_[s];
    const uint32_t nlb = o_.io_size / block_;
    const uint64_t units = ns_blocks_ / nlb;
    bool write = o_.workload == Workload::RandWrite;
    if (o_.workload == Workload::Verify) {
        if (!sl.verify_read) {
            const uint64_t per_slot = (units - s + o_.depth - 1) / o_.depth;
            sl.lba = ((rng_() % per_slot) * o_.depth + s) * nlb;
            ++sl.gen;
            fill_pattern(s);
            write = true;
        } else {
            std::memset(at(data_off(s)), 0, o_.io_size);
        }
    } else {
        sl.lba = (rng_() % units) * nlb;
    }
    uint8_t *sqe = at(sqe_off(io_, s));
    build_sqe(sqe, write ? kNvmWrite : kNvmRead, static_cast<uint16_t>(s), o_.nsid);
    st32(sqe + 40, static_cast<uint32_t>(sl.lba));
    st32(sqe + 44, static_cast<uint32_t>(sl.lba >> 32));
    st32(sqe + 48, nlb - 1);
    set_keyed_sgl(sqe, addr(data_off(s)), o_.io_size, mr_->rkey(), false);
    sl.send_done = sl.resp_done = false;
    sl.start = std::chrono::steady_clock::now();
    if (!post_capsule(io_, s))
        return;
}

void Initiator::on_io_response(uint32_t s) {
    Slot &sl = slots_[s];
    if (status_sc(sl.cqe.status) != kScSuccess || status_sct(sl.cqe.status) != kSctGeneric) {
        if (errors_++ < 5)
            std::fprintf(stderr,
                         "droce-nvmf-perf: I/O error on LBA %" PRIu64 ": SCT %u SC 0x%02x\n",
                         sl.lba, status_sct(sl.cqe.status), status_sc(sl.cqe.status));
        ok_ = false;
        return;
    }
    if (o_.workload == Workload::Verify) {
        if (sl.verify_read && !check_pattern(s)) {
            if (mismatches_++ < 5)
                std::fprintf(stderr, "droce-nvmf-perf: data mismatch at LBA %" PRIu64 "\n", sl.lba);
            ok_ = false;
        }
        sl.verify_read = !sl.verify_read;
    }
    if (!measuring_)
        return;
    ++ios_;
    if (lat_ns_.size() < o_.max_samples)
        lat_ns_.push_back(static_cast<uint32_t>(
            std::min<int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - sl.start)
                                  .count(),
                              UINT32_MAX)));
    issue(s);
}

void Initiator::on_event(const CmEventInfo &ev) {
    for (NvmeQueue *q : {&admin_, &io_}) {
        if (q->cm_id != ev.id || ev.id == 0)
            continue;
        switch (ev.kind) {
        case CmEventKind::Established:
            q->established = true;
            break;
        case CmEventKind::Rejected:
        case CmEventKind::Unreachable:
        case CmEventKind::ConnectError: {
            std::string why =
                std::string("queue ") + std::to_string(q->qid) + ": " + cm_event_kind_name(ev.kind);
            CmRejPriv rej;
            if (ev.kind == CmEventKind::Rejected &&
                parse_cm_rej_priv(ev.private_data, ev.private_data_len, rej) == CmPrivError::Ok)
                why += " (NVMe-oF status " + std::to_string(static_cast<int>(rej.status)) + ")";
            q->failed = true;
            fail(why);
            break;
        }
        case CmEventKind::Disconnected:
            q->gone = true;
            if (measuring_)
                fail("the target disconnected queue " + std::to_string(q->qid));
            break;
        default:
            break;
        }
    }
}

bool Initiator::tick() {
    bool busy = run_.pump() > 0;
    busy |= cm_.poll() > 0;
    CmEventInfo ev;
    while (cm_.channel().poll_event(ev)) {
        busy = true;
        on_event(ev);
    }
    Wc wc[32];
    for (NvmeQueue *q : {&admin_, &io_}) {
        if (!q->cq)
            continue;
        const int n = q->cq->poll(wc, 32);
        for (int i = 0; i < n; ++i) {
            busy = true;
            const uint32_t s = static_cast<uint32_t>(wc[i].wr_id);
            if (wc[i].status != WcStatus::Success) {
                if (wc[i].status != WcStatus::WrFlushErr || !q->gone)
                    fail(std::string("completion error on queue ") + std::to_string(q->qid) + ": " +
                         wc_status_str(wc[i].status));
                continue;
            }
            if (wc[i].opcode != WcOpcode::Recv) {
                if (q == &io_ && s < slots_.size()) {
                    slots_[s].send_done = true;
                    if (slots_[s].resp_done && !io_connecting_)
                        on_io_response(s);
                }
                continue;
            }
            if (!q->established && q->cm_id) /* the RTU is late: verbs' COMM_EST */
                cm_.channel().notify_comm_est(q->cm_id, cm_.now_ns());
            const Cqe c = decode_cqe(at(recv_off(*q, s)));
            if (wc[i].byte_len < kCqeLen)
                fail("a response capsule of " + std::to_string(wc[i].byte_len) + " bytes");
            else if (q == &admin_) {
                admin_cqe_ = c;
                admin_resp_ = true;
            } else {
                const uint32_t slot = io_connecting_ && c.cid == kIoConnectCid ? 0 : c.cid;
                if (slot >= slots_.size() || slots_[slot].resp_done) {
                    fail("a response for CID " + std::to_string(c.cid) + " not in flight");
                } else {
                    slots_[slot].cqe = c;
                    slots_[slot].resp_done = true;
                    if (slots_[slot].send_done && !io_connecting_)
                        on_io_response(slot);
                }
            }
            post_recv(*q, s);
        }
    }
    return busy;
}

bool Initiator::wait(const char *what, const std::function<bool()> &until) {
    app::Backoff b(o_.busy_poll, 2000);
    while (!until()) {
        const bool busy = tick();
        if (!ok_)
            return false;
        if (run_.timed_out()) {
            fail(std::string("timed out (") + what + ")");
            return false;
        }
        busy ? b.progress() : b.idle();
    }
    return ok_;
}

void Initiator::report(double secs) {
    const double iops = static_cast<double>(ios_) / secs;
    const double mibps = iops * o_.io_size / (1024.0 * 1024.0);
    auto us = [](uint32_t ns) { return ns / 1000.0; };
    double avg = 0;
    uint32_t mn = 0, mx = 0, p50 = 0, p99 = 0, p999 = 0;
    if (!lat_ns_.empty()) {
        std::sort(lat_ns_.begin(), lat_ns_.end());
        uint64_t sum = 0;
        for (uint32_t v : lat_ns_)
            sum += v;
        avg = static_cast<double>(sum) / lat_ns_.size() / 1000.0;
        mn = lat_ns_.front();
        mx = lat_ns_.back();
        auto pct = [&](double p) {
            return lat_ns_[std::min(lat_ns_.size() - 1,
                                    static_cast<size_t>(p / 100.0 * lat_ns_.size()))];
        };
        p50 = pct(50);
        p99 = pct(99);
        p999 = pct(99.9);
    }
    static const char *kName[] = {"randread", "randwrite", "verify"};
    std::printf("========================================================\n");
    std::printf("%-52s %12s %10s %10s %10s %10s\n", "Latency(us)", "IOPS", "MiB/s", "Average",
                "min", "max");
    char dev[64];
    std::snprintf(dev, sizeof dev, "RDMA (addr:%s) NSID %u", o_.addr.c_str(), o_.nsid);
    std::printf("%-52s %12.2f %10.2f %10.2f %10.2f %10.2f\n", dev, iops, mibps, avg, us(mn),
                us(mx));
    std::printf("Percentiles(us): 50.00%%: %.2f  99.00%%: %.2f  99.90%%: %.2f\n", us(p50), us(p99),
                us(p999));
    std::printf("result: workload=%s io_size=%u depth=%u seconds=%.3f ios=%" PRIu64
                " iops=%.0f mibps=%.2f lat_avg_us=%.2f lat_min_us=%.2f lat_p50_us=%.2f "
                "lat_p99_us=%.2f lat_p999_us=%.2f lat_max_us=%.2f errors=%" PRIu64
                " mismatches=%" PRIu64 "\n",
                kName[static_cast<int>(o_.workload)], o_.io_size, o_.depth, secs, ios_, iops, mibps,
                avg, us(mn), us(p50), us(p99), us(p999), us(mx), errors_, mismatches_);
}

int Initiator::finish(int rc) {
    for (NvmeQueue *q : {&io_, &admin_})
        if (q->established && !q->gone)
            cm_.disconnect(q->cm_id);
    const uint64_t until = cm_.now_ns() + kLingerNs;
    const bool was_ok = ok_;
    while (cm_.now_ns() < until &&
           !((admin_.gone || !admin_.established) && (io_.gone || !io_.established)))
        tick();
    app::cm_linger(run_, cm_); /* the last DREQ/DREP leaves */
    return was_ok ? rc : 1;
}

int Initiator::run() {
    if (!bring_up())
        return finish(1);
    lat_ns_.reserve(std::min<uint32_t>(o_.max_samples, 1u << 22));
    measuring_ = true;
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration<double>(o_.seconds);
    for (uint32_t s = 0; s < o_.depth; ++s)
        issue(s);
    while (ok_ && std::chrono::steady_clock::now() < end) {
        tick();
        if (run_.timed_out()) {
            fail("timed out");
            break;
        }
    }
    measuring_ = false;
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    /* Drain what is in flight (verify: still checked). */
    const bool drained = wait("draining", [&] {
        for (const Slot &sl : slots_)
            if (!sl.send_done || !sl.resp_done)
                return false;
        return true;
    });
    report(secs);
    return finish(ok_ && drained && errors_ == 0 && mismatches_ == 0 && ios_ > 0 ? 0 : 1);
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    switch (parse(argc, argv, o)) {
    case 1:
        return 1;
    case 2:
        return 0;
    default:
        break;
    }
    if (!o.embedded_given && !o.worker)
        o.embedded = true; /* the SPDK model: one poll loop runs droce and the initiator */
    app::seed_random_psn();
    app::EalArgv eal(argv[0], o.eal_args);
    std::unique_ptr<Engine> engine = app::create_engine(eal, o);
    if (!engine)
        return 1;
    app::EngineRun run{*engine, {}};
    app::arm_waiter(run, o.timeout_s, 1);
    Device *dev = app::open_port_device(*engine, o);
    if (dev == nullptr || !app::start_engine(*engine))
        return 1;
    CmDeviceOptions cmo;
    cmo.access_flags = kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite;
    auto cm = app::open_cm(*engine, *dev, o, cmo);
    if (!cm)
        return 1;
    int rc;
    {
        Initiator t(o, run, *dev, *cm);
        rc = t.run();
    }
    std::fflush(stdout);
    if (o.counters) {
        app::print_cm_counters(*cm);
        app::print_device_counters(dev, "");
    }
    std::fflush(stdout);
    cm.reset();
    engine->stop();
    return rc;
}
