/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-rping: librdmacm's rping on droce, speaking its protocol so that either side can
 * be Linux's rping. The connection is made by the CM on QP1 (droce::CmDevice); then,
 * per ping, on one RC QP:
 *   client: SEND {addr, rkey, len} of its start buffer (all big-endian, 16 bytes)
 *   server: RDMA READ of that buffer into its own, then a 16-byte SEND ("go ahead")
 *   client: SEND {addr, rkey, len} of its rdma buffer
 *   server: RDMA WRITE of what it read (up to the NUL) there, then a SEND ("done")
 *   client: compares (-V), prints (-v) "ping data: ...", next ping; after -C pings it
 *           disconnects, and the server ends when the peer disconnects.
 * One thread runs everything (engine, CM, completions) in a non-blocking loop. */
#include <arpa/inet.h>
#include <getopt.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <droce/cm_device.h>
#include <droce/droce.h>

#include "app_cm.h"
#include "app_engine.h"
#include "cli_numbers.h"
#include "device_options.h"
#include "eal_args.h"

using namespace droce;

namespace {

constexpr uint32_t kMaxSize = 64 * 1024; /* rping's RPING_BUFSIZE */
constexpr uint32_t kMinSize = 26;        /* "rdma-ping-2147483647: " and a NUL, as rping */
constexpr size_t kInfoLen = 16;          /* rping_rdma_info: be64 buf, be32 rkey, be32 size */

struct Options : app::DeviceOptions {
    Options() : app::DeviceOptions(0) {}
    int server = -1;
    std::string addr;
    uint16_t port = 7174;
    uint32_t count = 0; /* 0: forever */
    uint32_t size = 64;
    bool verbose = false;
    bool validate = false;
    bool debug = false;
};

const app::DeviceOptionRules kRules{};

void usage(const char *argv0, FILE *f) {
    std::fprintf(f,
                 "Usage: %s [EAL args --] -s [-vVd] [-S size] [-C count] [-a addr] [-p port]\n"
                 "       %s [EAL args --] -c [-vVd] [-S size] [-C count] -a addr [-p port]\n"
                 "\t-c\t\tclient side\n"
                 "\t-s\t\tserver side\n"
                 "\t-v\t\tdisplay ping data to stdout\n"
                 "\t-V\t\tvalidate ping data\n"
                 "\t-d\t\tdebug printfs\n"
                 "\t-S size \tping data size\n"
                 "\t-C count\tping count times\n"
                 "\t-a addr\t\taddress (client: the server's IPv4 or IPv6 address)\n"
                 "\t-p port\t\tport\n"
                 "droce device options: --dpdk-port NAME|ID --ip A.B.C.D/P [--mac M] "
                 "[--eth-mtu N]\n"
                 "  [--embedded|--worker] [--timeout S] [--counters] [--log-level L]\n",
                 argv0, argv0);
}

/* 0: run, 1: exit with error, 2: exit ok. */
int parse(int argc, char **argv, Options &o) {
    const char *argv0 = argv[0];
    app::SplitArgs split = app::split_at_dashdash(argc, argv, 1);
    o.eal_args = std::move(split.eal);
    std::vector<char *> &ours = split.ours;
    const std::vector<struct option> longs = app::with_device_options({
        {"help", no_argument, nullptr, 'h'},
    });
    opterr = 0;
    optind = 1;
    for (;;) {
        const int c =
            getopt_long(split.ours_argc(), ours.data(), ":a:p:C:S:scvVdh", longs.data(), nullptr);
        if (c == -1)
            break;
        uint64_t u = 0;
        switch (c) {
        case 's':
            o.server = 1;
            break;
        case 'c':
            o.server = 0;
            break;
        case 'a':
            o.addr = optarg;
            break;
        case 'p':
            if (!app::parse_u64(optarg, 65535, u)) {
                std::fprintf(stderr, "%s: invalid port %s\n", argv0, optarg);
                return 1;
            }
            o.port = static_cast<uint16_t>(u);
            break;
        case 'C':
            if (!app::parse_u64(optarg, 0x7FFFFFFF, u)) {
                std::fprintf(stderr, "Invalid count %s\n", optarg);
                return 1;
            }
            o.count = static_cast<uint32_t>(u);
            break;
        case 'S':
            if (!app::parse_u64(optarg, kMaxSize - 1, u) || u < kMinSize) {
                std::fprintf(stderr, "Invalid size %s (valid range is %u to %u)\n", optarg,
                             kMinSize, kMaxSize - 1);
                return 1;
            }
            o.size = static_cast<uint32_t>(u);
            break;
        case 'v':
            o.verbose = true;
            break;
        case 'V':
            o.validate = true;
            break;
        case 'd':
            o.debug = true;
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
    if (o.server == -1) {
        usage(argv0, stderr);
        return 1;
    }
    if (o.loopback) {
        std::fprintf(stderr, "%s: --loopback is not supported\n", argv0);
        return 1;
    }
    in_addr a{};
    in6_addr a6{};
    if (o.server == 0 && (o.addr.empty() || (inet_pton(AF_INET, o.addr.c_str(), &a) != 1 &&
                                             inet_pton(AF_INET6, o.addr.c_str(), &a6) != 1))) {
        std::fprintf(stderr, "%s: the client needs -a with the server's IPv4 or IPv6 address\n",
                     argv0);
        return 1;
    }
    if (std::string err = app::finish_device_options(o, o.server == 0, kRules); !err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return 1;
    }
    return 0;
}

enum class St {
    Idle,
    Connecting,
    Connected,
    ReadAdv,       /* server: the client's start buffer named; RDMA READ out */
    WriteAdv,      /* client: go-ahead received / server: the client's rdma buffer named */
    WriteComplete, /* client: the server wrote / server: write done */
    Disconnected,
    Error,
};

class Rping {
  public:
    Rping(const Options &o, app::EngineRun &run, Device &dev, CmDevice &cm)
        : o_(o), run_(run), dev_(dev), cm_(cm), rdma_(kMaxSize), start_(kMaxSize) {}

    ~Rping() {
        if (qp_ && conn_)
            cm_.release(conn_);
        qp_.reset();
    }

    bool setup() {
        auto pd = dev_.alloc_pd();
        auto cq = dev_.create_cq(64);
        if (!pd || !cq)
            return fail("setup_qp failed");
        pd_ = std::move(*pd);
        cq_ = std::move(*cq);
        QpInitAttr qa;
        qa.send_cq = qa.recv_cq = cq_.get();
        qa.cap.max_send_wr = 64;
        qa.cap.max_recv_wr = 2;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        auto qp = pd_->create_qp(qa);
        if (!qp)
            return fail("setup_qp failed: " + qp.status().message());
        qp_ = std::move(*qp);
        const uint32_t rw = kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite;
        auto m1 = pd_->reg_mr(recv_, sizeof recv_, kAccessLocalWrite);
        auto m2 = pd_->reg_mr(send_, sizeof send_, kAccessLocalWrite);
        auto m3 = pd_->reg_mr(rdma_.data(), rdma_.size(), rw);
        auto m4 = pd_->reg_mr(start_.data(), start_.size(), rw);
        if (!m1 || !m2 || !m3 || !m4)
            return fail("rping_setup_buffers failed");
        recv_mr_ = std::move(*m1);
        send_mr_ = std::move(*m2);
        rdma_mr_ = std::move(*m3);
        start_mr_ = std::move(*m4);
        return post_recv();
    }

    int run() {
        if (o_.server) {
            if (!cm_.channel().listen(o_.port))
                return fail("rdma_listen failed"), 1;
            dbg("rdma_listen\n"); /* tests wait for this line before starting a client */
        } else {
            if (!setup())
                return 1;
            in_addr a{};
            in6_addr a6{};
            const bool v6 = inet_pton(AF_INET, o_.addr.c_str(), &a) != 1 &&
                            inet_pton(AF_INET6, o_.addr.c_str(), &a6) == 1;
            CmConnectParam p;
            p.rq_psn = app::random_psn();
            p.path_mtu = active_mtu_enum();
            p.responder_resources = 1;
            p.initiator_depth = 1;
            /* IPv6: from the device's IPv6 GID (--ip X:Y::Z/P). */
            conn_ = v6 ? cm_.connect6(a6.s6_addr, o_.port, *qp_, p)
                       : cm_.connect(ntohl(a.s_addr), o_.port, *qp_, p);
            if (conn_ == 0)
                return fail("rdma_connect failed"), 1;
            st_ = St::Connecting;
        }
        std::fflush(stderr);
        app::Backoff backoff(o_.busy_poll, 2000);
        while (st_ != St::Disconnected && st_ != St::Error) {
            bool busy = run_.pump() > 0;
            busy |= cm_.poll() > 0;
            busy |= cm_events();
            busy |= completions();
            if (run_.timed_out()) {
                fail("timed out");
                break;
            }
            busy ? backoff.progress() : backoff.idle();
        }
        return st_ == St::Disconnected && ok_ ? 0 : 1;
    }

  private:
    uint8_t active_mtu_enum() const {
        uint8_t m = 5;
        while (m > 1 && mtu_bytes(static_cast<Mtu>(m)) > dev_.active_mtu())
            --m;
        return m;
    }

    bool fail(const std::string &why) {
        std::fprintf(stderr, "%s\n", why.c_str());
        ok_ = false;
        st_ = St::Error;
        return false;
    }
    void dbg(const char *fmt, ...) __attribute__((format(printf, 2, 3))) {
        if (!o_.debug)
            return;
        va_list ap;
        va_start(ap, fmt);
        std::vfprintf(stderr, fmt, ap);
        va_end(ap);
    }

    bool post_recv() {
        RecvWr r;
        r.sg_list[0] = Sge{reinterpret_cast<uint64_t>(recv_), sizeof recv_, recv_mr_->lkey()};
        r.num_sge = 1;
        if (Status s = qp_->post_recv(r); !s)
            return fail("post recv error: " + s.message());
        return true;
    }
    bool post(WrOpcode op, uint8_t *local, uint32_t len, uint32_t lkey, uint64_t raddr = 0,
              uint32_t rkey = 0) {
        SendWr w;
        w.opcode = op;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(local), len, lkey};
        w.num_sge = 1;
        w.remote_addr = raddr;
        w.rkey = rkey;
        if (Status s = qp_->post_send(w); !s)
            return fail("post send error: " + s.message());
        return true;
    }
    /* rping_format_send: advertise a buffer (big-endian). */
    bool send_info(const uint8_t *buf, uint32_t rkey) {
        const uint64_t a = reinterpret_cast<uint64_t>(buf);
        for (int i = 0; i < 8; ++i)
            send_[i] = static_cast<uint8_t>(a >> (56 - 8 * i));
        for (int i = 0; i < 4; ++i) {
            send_[8 + i] = static_cast<uint8_t>(rkey >> (24 - 8 * i));
            send_[12 + i] = static_cast<uint8_t>(o_.size >> (24 - 8 * i));
        }
        dbg("RDMA addr %" PRIx64 " rkey %x len %u\n", a, rkey, o_.size);
        return post(WrOpcode::Send, send_, kInfoLen, send_mr_->lkey());
    }

    void next_ping() {
        if (o_.count && ping_ >= o_.count) {
            dbg("client: %u pings done, disconnecting\n", ping_);
            cm_.disconnect(conn_);
            return;
        }
        st_ = St::ReadAdv;
        char *b = reinterpret_cast<char *>(start_.data());
        int cc = std::snprintf(b, o_.size, "rdma-ping-%u: ", ping_);
        unsigned char c = static_cast<unsigned char>(start_char_);
        for (uint32_t i = static_cast<uint32_t>(cc); i < o_.size; ++i) {
            b[i] = static_cast<char>(c);
            if (++c > 122)
                c = 65;
        }
        if (++start_char_ > 122)
            start_char_ = 65;
        b[o_.size - 1] = 0;
        send_info(start_.data(), start_mr_->rkey());
    }

    bool cm_events() {
        bool any = false;
        CmEventInfo ev;
        while (cm_.channel().poll_event(ev)) {
            any = true;
            dbg("cm event %s id %#x\n", cm_event_kind_name(ev.kind), ev.id);
            switch (ev.kind) {
            case CmEventKind::ConnectRequest:
                if (conn_ != 0) { /* one connection at a time, as rping without -P */
                    cm_.reject(ev.id);
                    break;
                }
                conn_ = ev.id;
                if (!setup())
                    return true;
                {
                    CmAcceptParam ap;
                    ap.rq_psn = app::random_psn();
                    ap.responder_resources = 1;
                    ap.initiator_depth = 1;
                    if (!cm_.accept(ev.id, *qp_, ap)) {
                        fail("rdma_accept failed");
                        return true;
                    }
                }
                st_ = St::Connecting;
                break;
            case CmEventKind::Established:
                if (ev.id != conn_)
                    break;
                if (st_ == St::Connecting)
                    st_ = St::Connected;
                if (!o_.server && ping_ == 0 && st_ == St::Connected)
                    next_ping();
                break;
            case CmEventKind::Rejected:
            case CmEventKind::Unreachable:
            case CmEventKind::ConnectError:
                if (ev.id == conn_)
                    fail(std::string("cma event ") + cm_event_kind_name(ev.kind) + ", error " +
                         std::to_string(ev.reason));
                break;
            case CmEventKind::Disconnected:
                if (ev.id != conn_)
                    break;
                dbg("%s DISCONNECT EVENT...\n", o_.server ? "server" : "client");
                /* The client asked for it after its pings; the server ends with its peer. */
                if (!o_.server && (!o_.count || ping_ < o_.count))
                    ok_ = false;
                st_ = St::Disconnected;
                break;
            case CmEventKind::TimewaitExit:
                break;
            case CmEventKind::SidrRequest: /* UD (SIDR): never listened for or asked here */
            case CmEventKind::SidrResolved:
            case CmEventKind::SidrRejected:
            case CmEventKind::SidrUnreachable:
                break;
            }
        }
        return any;
    }

    bool completions() {
        if (!cq_)
            return false;
        Wc wc[16];
        const int n = cq_->poll(wc, 16);
        for (int i = 0; i < n && st_ != St::Error; ++i)
            on_wc(wc[i]);
        return n > 0;
    }

    void on_wc(const Wc &wc) {
        if (wc.status != WcStatus::Success) {
            if (wc.status == WcStatus::WrFlushErr)
                return;
            fail("cq completion failed status " + std::to_string(static_cast<int>(wc.status)));
            return;
        }
        switch (wc.opcode) {
        case WcOpcode::Send:
            break;
        case WcOpcode::RdmaRead: /* server: the client's start buffer is here */
            if (o_.verbose)
                std::printf("server ping data: %s\n", reinterpret_cast<char *>(rdma_.data()));
            post(WrOpcode::Send, send_, kInfoLen, send_mr_->lkey());
            break;
        case WcOpcode::RdmaWrite: /* server: echoed; tell the client */
            st_ = St::WriteComplete;
            post(WrOpcode::Send, send_, kInfoLen, send_mr_->lkey());
            break;
        case WcOpcode::Recv:
            on_recv(wc);
            break;
        default:
            fail("unknown completion");
        }
    }

    void on_recv(const Wc &wc) {
        if (st_ == St::Connecting) {
            /* The peer sent before its RTU reached us: it is connected (COMM_EST). */
            cm_.channel().notify_comm_est(conn_, cm_.now_ns());
            st_ = St::Connected;
        }
        if (o_.server) {
            if (wc.byte_len != kInfoLen) {
                fail("Received bogus data, size " + std::to_string(wc.byte_len));
                return;
            }
            uint64_t addr = 0;
            uint32_t rkey = 0, len = 0;
            for (int i = 0; i < 8; ++i)
                addr = addr << 8 | recv_[i];
            for (int i = 0; i < 4; ++i) {
                rkey = rkey << 8 | recv_[8 + i];
                len = len << 8 | recv_[12 + i];
            }
            dbg("Received rkey %x addr %" PRIx64 " len %u from peer\n", rkey, addr, len);
            if (!post_recv())
                return;
            if (st_ <= St::Connected || st_ == St::WriteComplete) {
                st_ = St::ReadAdv;
                if (len > rdma_.size()) {
                    fail("client buffer of " + std::to_string(len) + " bytes is too big");
                    return;
                }
                post(WrOpcode::RdmaRead, rdma_.data(), len, rdma_mr_->lkey(), addr, rkey);
            } else {
                st_ = St::WriteAdv;
                const uint32_t n = static_cast<uint32_t>(
                    strnlen(reinterpret_cast<char *>(rdma_.data()), rdma_.size() - 1) + 1);
                post(WrOpcode::RdmaWrite, rdma_.data(), n < len ? n : len, rdma_mr_->lkey(), addr,
                     rkey);
            }
            return;
        }
        if (!post_recv())
            return;
        if (st_ == St::ReadAdv) {
            st_ = St::WriteAdv;
            send_info(rdma_.data(), rdma_mr_->rkey());
            return;
        }
        st_ = St::WriteComplete;
        if (o_.validate && std::memcmp(start_.data(), rdma_.data(), o_.size) != 0) {
            fail("data mismatch!");
            cm_.disconnect(conn_);
            return;
        }
        if (o_.verbose)
            std::printf("ping data: %s\n", reinterpret_cast<char *>(rdma_.data()));
        ++ping_;
        next_ping();
    }

    const Options &o_;
    app::EngineRun &run_;
    Device &dev_;
    CmDevice &cm_;
    std::unique_ptr<ProtectionDomain> pd_;
    std::unique_ptr<CompletionQueue> cq_;
    std::unique_ptr<MemoryRegion> recv_mr_, send_mr_, rdma_mr_, start_mr_;
    std::unique_ptr<QueuePair> qp_;
    uint8_t recv_[kInfoLen] = {};
    uint8_t send_[kInfoLen] = {};
    std::vector<uint8_t> rdma_, start_;
    uint32_t conn_ = 0;
    uint32_t ping_ = 0;
    int start_char_ = 65;
    St st_ = St::Idle;
    bool ok_ = true;
};

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
    /* rping's server RDMA READs the client's start buffer and RDMA WRITEs its rdma
     * buffer: only the client's QP needs remote rights (its MRs say which buffers). */
    CmDeviceOptions cmo;
    cmo.access_flags =
        kAccessLocalWrite | (o.server == 1 ? 0u : kAccessRemoteRead | kAccessRemoteWrite);
    auto cm = app::open_cm(*engine, *dev, o, cmo);
    if (!cm)
        return 1;
    int rc;
    {
        Rping r(o, run, *dev, *cm);
        rc = r.run();
        /* The server ends on the peer's DREQ: its DREP is only queued yet. */
        app::cm_linger(run, *cm);
    }
    if (o.counters) {
        app::print_cm_counters(*cm);
        app::print_device_counters(dev, "");
    }
    std::fflush(stdout);
    cm.reset();
    engine->stop();
    return rc;
}
