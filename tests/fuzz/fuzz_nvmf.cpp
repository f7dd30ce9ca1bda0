/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for lib/nvmf: a target with a RAM-disk namespace, an admin queue and an
 * I/O queue already connected and enabled, then the input as a stream of capsules. Each
 * record is [control][len lo][len hi][len bytes]: control bit 0 picks the queue (admin /
 * I/O), bit 1 makes the next RDMA READ fail, bit 2 first patches the capsule's SGL to a
 * valid keyed one (so deep paths are reached), bit 7 means "these bytes are an Ethernet
 * frame": its RoCE payload is the capsule (the seeds: every frame of the NVMe-oF
 * captures). Also the CM private data codec and Target::accept on the raw input.
 * Invariants (abort otherwise): no backend I/O outside the namespace, no RDMA outside the
 * host's buffer, at most one response per capsule, CIDs answered are CIDs sent, and after
 * a disconnect every slot comes back. */
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "nvmf.h"
#include "nvmf_capsule.h"
#include "nvmf_cm_priv.h"
#include "wire_packet.h"

using namespace droce;
using namespace droce::nvmf;

namespace {

[[noreturn]] void fail(const char *why) {
    __builtin_printf("fuzz_nvmf: %s\n", why);
    std::abort();
}
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            fail(#c);                                                                              \
    } while (0)

constexpr uint64_t kHostBase = 0x100000;
constexpr size_t kHostLen = 256 * 1024;
constexpr uint32_t kKey = 0x1234;

class GuardBdev : public Bdev {
  public:
    explicit GuardBdev(std::unique_ptr<Bdev> b) : b_(std::move(b)) {}
    uint64_t size_bytes() const override { return b_->size_bytes(); }
    uint32_t block_size() const override { return b_->block_size(); }
    Submit submit(BdevIo &io) override {
        if (io.op != BdevOp::Flush)
            CHECK(io.offset <= size_bytes() && io.len <= size_bytes() - io.offset);
        return b_->submit(io);
    }
    size_t poll(BdevIo **o, size_t m) override { return b_->poll(o, m); }
    size_t in_flight() const override { return b_->in_flight(); }

  private:
    std::unique_ptr<Bdev> b_;
};

struct Tx : TransportActions {
    std::vector<uint8_t> host = std::vector<uint8_t>(kHostLen, 0x5A);
    std::vector<std::pair<uint16_t, bool>> reads;
    std::vector<uint16_t> sends;
    std::vector<Cqe> cqes;
    bool fail_next = false;
    bool in_host(uint64_t a, uint32_t len, uint32_t key) const {
        return key == kKey && a >= kHostBase && a - kHostBase <= kHostLen &&
               len <= kHostLen - (a - kHostBase);
    }
    bool rdma_read(uint16_t tag, void *local, uint32_t len, uint64_t a, uint32_t key) override {
        const bool ok = in_host(a, len, key) && !fail_next;
        fail_next = false;
        if (ok)
            std::memcpy(local, host.data() + (a - kHostBase), len);
        reads.emplace_back(tag, ok);
        return true;
    }
    bool rdma_write(uint16_t, const void *local, uint32_t len, uint64_t a, uint32_t key) override {
        /* The core writes only to the SGL the host gave, whatever it holds; the host's
         * HCA would refuse a bad one: model that, but never write outside. */
        if (in_host(a, len, key))
            std::memcpy(host.data() + (a - kHostBase), local, len);
        return true;
    }
    bool send(uint16_t tag, const uint8_t *c, bool, uint32_t) override {
        cqes.push_back(decode_cqe(c));
        sends.push_back(tag);
        return true;
    }
    void disconnect() override {}
    void pump(Queue &q) {
        while (!reads.empty() || !sends.empty()) {
            if (!reads.empty()) {
                auto [t, ok] = reads.back();
                reads.pop_back();
                q.on_read_done(t, ok, 0);
            } else {
                const uint16_t t = sends.back();
                sends.pop_back();
                q.on_send_done(t);
            }
        }
    }
};

Queue *open_queue(Target &t, Tx &tx, uint16_t qid) {
    CmReqPriv r{0, qid, 8, 7, 0};
    uint8_t b[kCmReqPrivLen];
    encode_cm_req_priv(r, b, sizeof b);
    AcceptResult a = t.accept(b, sizeof b, tx);
    CHECK(a.queue);
    return a.queue;
}

Cqe run(Queue &q, Tx &tx, const uint8_t *cap, size_t len) {
    const size_t n = tx.cqes.size();
    CHECK(q.on_capsule(cap, len, 0) == CapsuleResult::Accepted);
    tx.pump(q);
    CHECK(tx.cqes.size() == n + 1);
    return tx.cqes.back();
}

void connect(Queue &q, Tx &tx, uint16_t qid, uint16_t cntlid, const char *sub) {
    uint8_t *d = tx.host.data();
    std::memset(d, 0, kConnectDataLen);
    st16(d + 16, cntlid);
    std::memcpy(d + 256, sub, std::strlen(sub));
    std::memcpy(d + 512, "nqn.host", 8);
    uint8_t s[kSqeLen];
    build_sqe(s, kOpcFabrics, 1, 0);
    s[4] = kFcConnect;
    st16(s + 42, qid);
    st16(s + 44, 7);
    set_keyed_sgl(s, kHostBase, kConnectDataLen, kKey, false);
    CHECK(run(q, tx, s, sizeof s).status == 0);
}

void check_priv(const uint8_t *p, size_t n) {
    CmReqPriv r;
    if (parse_cm_req_priv(p, n, r) == CmPrivError::Ok) {
        uint8_t b[kCmReqPrivLen];
        CHECK(encode_cm_req_priv(r, b, sizeof b) == kCmReqPrivLen);
        CmReqPriv r2;
        CHECK(parse_cm_req_priv(b, sizeof b, r2) == CmPrivError::Ok);
        CHECK(r2.qid == r.qid && r2.hsqsize == r.hsqsize && r2.hrqsize == r.hrqsize);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_priv(data, size);
    GuardBdev disk(make_ram_bdev(64 * 1024, 512));
    TargetConfig cfg;
    SubsystemConfig s;
    s.nqn = "nqn.fuzz:sub";
    s.allow_any_host = true;
    s.namespaces = {{1, &disk, {}}};
    cfg.subsystems = {s};
    cfg.max_io_bytes = 8192;
    cfg.in_capsule_bytes = 4096;
    cfg.max_admin_depth = 8;
    cfg.max_io_depth = 8;
    std::string err;
    auto t = Target::create(cfg, err);
    CHECK(t);
    {
        Tx junk;
        AcceptResult a = t->accept(data, size, junk); /* raw input as REQ private data */
        if (a.queue)
            t->destroy_queue(a.queue);
    }
    Tx atx, itx;
    Queue *aq = open_queue(*t, atx, 0);
    connect(*aq, atx, 0, 0xFFFF, "nqn.fuzz:sub");
    const uint16_t cntlid = static_cast<uint16_t>(atx.cqes.back().dw0);
    uint8_t sq[kSqeLen];
    build_sqe(sq, kOpcFabrics, 2, 0);
    sq[4] = kFcPropertySet;
    st32(sq + 44, kPropCc);
    st32(sq + 48, 1u | (6u << 16) | (4u << 20));
    set_keyed_sgl(sq, 0, 0, 0, false);
    CHECK(run(*aq, atx, sq, sizeof sq).status == 0);
    build_sqe(sq, kAdminSetFeatures, 3, 0);
    st32(sq + 40, kFidNumQueues);
    set_keyed_sgl(sq, 0, 0, 0, false);
    CHECK(run(*aq, atx, sq, sizeof sq).status == 0);
    Queue *iq = open_queue(*t, itx, 1);
    connect(*iq, itx, 1, cntlid, "nqn.fuzz:sub");

    std::set<uint16_t> sent[2];
    size_t off = 0;
    std::vector<uint8_t> cap;
    while (off + 3 <= size) {
        const uint8_t ctl = data[off];
        size_t len = data[off + 1] | (size_t{data[off + 2]} << 8);
        off += 3;
        if (len > size - off)
            len = size - off;
        const uint8_t *p = data + off;
        off += len;
        if (ctl & 0x80) { /* a frame: its payload */
            wire::ParsedPacket pk{};
            if (wire::parse_frame(p, len, pk, false) != wire::ParseResult::Ok || !pk.payload)
                continue;
            p = pk.payload;
            len = pk.payload_len;
        }
        cap.assign(p, p + len);
        if ((ctl & 4) && cap.size() >= kSqeLen) {
            /* A keyed SGL into the host buffer; on the I/O queue as long as a Read or Write
             * of this NLB needs, so the LBA checks behind the SGL check get exercised. */
            uint32_t l = ld32(cap.data() + 24 + 8) & 0x3FFFF;
            if (ctl & 1)
                l = (cap[0] == kNvmRead || cap[0] == kNvmWrite)
                        ? ((ld32(cap.data() + 48) & 0xFFFF) + 1u) * 512u
                        : 0;
            set_keyed_sgl(cap.data(), kHostBase + (ld16(cap.data() + 24) & 0xFFF0), l, kKey,
                          ctl & 8);
        }
        const int qi = ctl & 1;
        Queue &q = qi ? *iq : *aq;
        Tx &tx = qi ? itx : atx;
        tx.fail_next = ctl & 2;
        const size_t before = tx.cqes.size();
        const CapsuleResult r = q.on_capsule(cap.data(), cap.size(), 0);
        tx.pump(q);
        t->poll(0);
        CHECK(tx.cqes.size() <= before + 1);
        if (r == CapsuleResult::Accepted && cap.size() >= kSqeLen)
            sent[qi].insert(ld16(cap.data() + 2));
        for (size_t i = before; i < tx.cqes.size(); ++i)
            CHECK(sent[qi].count(tx.cqes[i].cid));
        if (r != CapsuleResult::Accepted)
            CHECK(tx.cqes.size() == before);
    }
    iq->on_disconnect();
    aq->on_disconnect();
    CHECK(iq->drained() && aq->drained());
    return 0;
}
