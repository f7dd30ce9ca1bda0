/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-cmatose: librdmacm's ucmatose (examples/cmatose.c) on droce, so that either side
 * can be Linux's ucmatose. -c connections are made by the CM on QP1 (droce::CmDevice) to
 * one port (7471); each has an RC QP with -C receives of -S bytes posted before it
 * connects or is accepted. Then:
 *   server: once every connection is established, -C SENDs of -S bytes on each; waits
 *           for their completions, then for the client's -C replies on each; disconnects
 *           every connection and waits until each is gone.
 *   client: waits for the -C messages on each connection, sends -C replies on each, and
 *           ends once the server disconnected every connection.
 * The output follows ucmatose's lines ("cmatose: starting server", ..., "return status
 * N"). One thread runs everything (engine, CM, completions) in a non-blocking loop. */
#include <arpa/inet.h>
#include <getopt.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
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

struct Options : app::DeviceOptions {
    Options() : app::DeviceOptions(0) {}
    std::string dst; /* -s: the server's IPv4 address (client mode) */
    std::string bind;
    uint16_t port = 7471;
    uint32_t connections = 1;
    uint32_t count = 10;
    uint32_t size = 100;
};

const app::DeviceOptionRules kRules{};

void usage(const char *argv0, FILE *f) {
    std::fprintf(f,
                 "usage: %s [EAL args --] [options]\n"
                 "\t[-s server_address]\t(client mode; IPv4)\n"
                 "\t[-b bind_address]\t(accepted: droce binds its --ip address)\n"
                 "\t[-c connections]\n"
                 "\t[-C message_count]\n"
                 "\t[-S message_size]\n"
                 "\t[-p port_number]\n"
                 "droce device options: --dpdk-port NAME|ID --ip A.B.C.D/P [--mac M] "
                 "[--eth-mtu N]\n"
                 "  [--embedded|--worker] [--timeout S] [--counters] [--log-level L]\n",
                 argv0);
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
            getopt_long(split.ours_argc(), ours.data(), ":s:b:c:C:S:p:h", longs.data(), nullptr);
        if (c == -1)
            break;
        uint64_t u = 0;
        switch (c) {
        case 's':
            o.dst = optarg;
            break;
        case 'b':
            o.bind = optarg;
            break;
        case 'p':
            if (!app::parse_u64(optarg, 65535, u) || u == 0) {
                std::fprintf(stderr, "%s: invalid port %s\n", argv0, optarg);
                return 1;
            }
            o.port = static_cast<uint16_t>(u);
            break;
        case 'c':
            /* One QP1 and one CM table: well below its 256 connections. */
            if (!app::parse_u64(optarg, 128, u) || u == 0) {
                std::fprintf(stderr, "%s: invalid connections %s (1..128)\n", argv0, optarg);
                return 1;
            }
            o.connections = static_cast<uint32_t>(u);
            break;
        case 'C':
            if (!app::parse_u64(optarg, 4096, u)) {
                std::fprintf(stderr, "%s: invalid message_count %s (0..4096)\n", argv0, optarg);
                return 1;
            }
            o.count = static_cast<uint32_t>(u);
            break;
        case 'S':
            if (!app::parse_u64(optarg, 1u << 20, u)) {
                std::fprintf(stderr, "%s: invalid message_size %s (0..1048576)\n", argv0, optarg);
                return 1;
            }
            o.size = static_cast<uint32_t>(u);
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
    if (o.size == 0) /* as cmatose: no message, no transfer */
        o.count = 0;
    in_addr a{};
    if (!o.dst.empty() && inet_pton(AF_INET, o.dst.c_str(), &a) != 1) {
        std::fprintf(stderr, "%s: -s needs the server's IPv4 address\n", argv0);
        return 1;
    }
    if (o.loopback) {
        std::fprintf(stderr, "%s: --loopback is not supported\n", argv0);
        return 1;
    }
    if (std::string err = app::finish_device_options(o, !o.dst.empty(), kRules); !err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return 1;
    }
    return 0;
}

struct Node {
    uint32_t id = 0; /* the CM connection, 0: none */
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<QueuePair> qp;
    std::vector<uint8_t> mem;
    bool connected = false, gone = false;
    uint32_t sent = 0, received = 0; /* completions */
};

class Cmatose {
  public:
    Cmatose(const Options &o, app::EngineRun &run, Device &dev, CmDevice &cm)
        : o_(o), run_(run), dev_(dev), cm_(cm), nodes_(o.connections) {}
    ~Cmatose() {
        for (Node &n : nodes_)
            if (n.id)
                cm_.release(n.id);
    }

    int run() {
        auto pd = dev_.alloc_pd();
        if (!pd)
            return fail("cmatose: unable to allocate PD");
        pd_ = std::move(*pd);
        return o_.dst.empty() ? server() : client();
    }

  private:
    int fail(const std::string &why) {
        std::printf("%s\n", why.c_str());
        ok_ = false;
        return 1;
    }

    bool init_node(Node &n) {
        /* ucmatose: a CQ of -C entries per direction; one CQ of both here. */
        const uint32_t cqe = o_.count ? 2 * o_.count : 1;
        auto cq = dev_.create_cq(cqe);
        if (!cq)
            return fail("cmatose: unable to create CQ: " + cq.status().message()), false;
        n.cq = std::move(*cq);
        QpInitAttr qa;
        qa.send_cq = qa.recv_cq = n.cq.get();
        qa.cap.max_send_wr = qa.cap.max_recv_wr = o_.count ? o_.count : 1;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        auto qp = pd_->create_qp(qa);
        if (!qp)
            return fail("cmatose: unable to create QP: " + qp.status().message()), false;
        n.qp = std::move(*qp);
        if (o_.count == 0)
            return true;
        n.mem.assign(o_.size, 0);
        auto mr = pd_->reg_mr(n.mem.data(), n.mem.size(), kAccessLocalWrite);
        if (!mr)
            return fail("failed to reg MR: " + mr.status().message()), false;
        n.mr = std::move(*mr);
        /* ucmatose receives into and sends from one buffer; the data is not looked at. */
        RecvWr r;
        r.num_sge = 1;
        r.sg_list[0] = Sge{reinterpret_cast<uintptr_t>(n.mem.data()), o_.size, n.mr->lkey()};
        for (uint32_t i = 0; i < o_.count; ++i)
            if (Status s = n.qp->post_recv(r); !s)
                return fail("failed to post receives: " + s.message()), false;
        return true;
    }

    bool post_sends(Node &n) {
        SendWr w;
        w.opcode = WrOpcode::Send;
        w.send_flags = kSendSignaled; /* ucmatose's QPs signal every send (sq_sig_all) */
        w.num_sge = 1;
        w.sg_list[0] = Sge{reinterpret_cast<uintptr_t>(n.mem.data()), o_.size, n.mr->lkey()};
        for (uint32_t i = 0; i < o_.count; ++i)
            if (Status s = n.qp->post_send(w); !s)
                return fail("failed to post sends: " + s.message()), false;
        return true;
    }

    Node *node_of(uint32_t id) {
        for (Node &n : nodes_)
            if (n.id == id && id != 0)
                return &n;
        return nullptr;
    }

    void on_event(const CmEventInfo &ev) {
        Node *n = node_of(ev.id);
        switch (ev.kind) {
        case CmEventKind::ConnectRequest: {
            if (accepted_ == nodes_.size()) {
                std::printf("cmatose: failing connection request\n");
                cm_.reject(ev.id);
                break;
            }
            Node &m = nodes_[accepted_++];
            m.id = ev.id;
            CmAcceptParam ap;
            ap.rq_psn = app::random_psn();
            if (!init_node(m) || !cm_.accept(ev.id, *m.qp, ap)) {
                std::printf("cmatose: failure accepting\n");
                ok_ = false;
                --connects_left_;
            }
            break;
        }
        case CmEventKind::Established:
            if (n && !n->connected) {
                n->connected = true;
                --connects_left_;
            }
            break;
        case CmEventKind::Rejected:
        case CmEventKind::Unreachable:
        case CmEventKind::ConnectError:
            if (n) {
                std::printf("cmatose: event: %s, error: %u\n", cm_event_kind_name(ev.kind),
                            ev.reason);
                ok_ = false;
                --connects_left_;
            }
            break;
        case CmEventKind::Disconnected:
            if (n && !n->gone) {
                n->gone = true;
                ++gone_;
            }
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

    bool tick() {
        bool busy = run_.pump() > 0;
        busy |= cm_.poll() > 0;
        CmEventInfo ev;
        while (cm_.channel().poll_event(ev)) {
            busy = true;
            on_event(ev);
        }
        Wc wc[16];
        for (Node &n : nodes_) {
            if (!n.cq)
                continue;
            const int k = n.cq->poll(wc, 16);
            for (int i = 0; i < k; ++i) {
                busy = true;
                if (wc[i].status != WcStatus::Success) {
                    if (wc[i].status != WcStatus::WrFlushErr || !n.gone)
                        fail(std::string("cmatose: completion error: ") +
                             wc_status_str(wc[i].status));
                    continue;
                }
                if (wc[i].opcode == WcOpcode::Recv) {
                    if (!n.connected && o_.dst.empty() && n.id)
                        cm_.channel().notify_comm_est(n.id, cm_.now_ns()); /* COMM_EST */
                    ++n.received;
                } else {
                    ++n.sent;
                }
            }
        }
        return busy;
    }

    /** Runs until `until`, a failure, or --timeout. */
    bool wait(const char *what, const std::function<bool()> &until) {
        app::Backoff b(o_.busy_poll, 2000);
        while (!until()) {
            const bool busy = tick();
            if (!ok_)
                return false;
            if (run_.timed_out()) {
                fail(std::string("cmatose: timed out (") + what + ")");
                return false;
            }
            busy ? b.progress() : b.idle();
        }
        return ok_;
    }

    bool all(bool (*pred)(const Node &, uint32_t), uint32_t arg) const {
        for (const Node &n : nodes_)
            if (n.connected && !pred(n, arg))
                return false;
        return true;
    }

    int finish(int rc) {
        /* The last DREP (or DREQ) was only queued: let it leave (and answer a resent DREQ). */
        app::cm_linger(run_, cm_);
        std::printf("test complete\nreturn status %d\n", rc);
        return rc;
    }

    int server() {
        std::printf("cmatose: starting server\n");
        std::fflush(stdout);
        if (!cm_.channel().listen(o_.port))
            return finish(fail("cmatose: failure trying to listen"));
        if (!wait("connecting", [&] { return connects_left_ == 0; }))
            return finish(1);
        if (o_.count) {
            std::printf("initiating data transfers\n");
            for (Node &n : nodes_)
                if (n.connected && !post_sends(n))
                    return finish(1);
            std::printf("completing sends\n");
            if (!wait("completing sends", [&] {
                    return all([](const Node &n, uint32_t c) { return n.sent >= c; }, o_.count);
                }))
                return finish(1);
            std::printf("receiving data transfers\n");
            if (!wait("receiving", [&] {
                    return all([](const Node &n, uint32_t c) { return n.received >= c; }, o_.count);
                }))
                return finish(1);
            std::printf("data transfers complete\n");
        }
        std::printf("cmatose: disconnecting\n");
        uint32_t want = 0;
        for (Node &n : nodes_)
            if (n.connected && !n.gone) {
                cm_.disconnect(n.id);
                ++want;
            }
        if (!wait("disconnecting", [&] { return gone_ >= want; }))
            return finish(1);
        std::printf("disconnected\n");
        return finish(0);
    }

    int client() {
        std::printf("cmatose: starting client\n");
        in_addr a{};
        inet_pton(AF_INET, o_.dst.c_str(), &a);
        std::printf("cmatose: connecting\n");
        std::fflush(stdout);
        for (Node &n : nodes_) {
            if (!init_node(n))
                return finish(1);
            CmConnectParam p;
            p.rq_psn = app::random_psn();
            p.responder_resources = p.initiator_depth = 1;
            p.retry_count = 5;
            n.id = cm_.connect(ntohl(a.s_addr), o_.port, *n.qp, p);
            if (n.id == 0)
                return finish(fail("cmatose: failure connecting"));
        }
        if (!wait("connecting", [&] { return connects_left_ == 0; }))
            return finish(1);
        if (o_.count) {
            std::printf("receiving data transfers\n");
            if (!wait("receiving", [&] {
                    return all([](const Node &n, uint32_t c) { return n.received >= c; }, o_.count);
                }))
                return finish(1);
            std::printf("sending replies\n");
            for (Node &n : nodes_)
                if (n.connected && !post_sends(n))
                    return finish(1);
            std::printf("data transfers complete\n");
        }
        /* The server disconnects once it has every reply. */
        uint32_t want = 0;
        for (const Node &n : nodes_)
            want += n.connected ? 1 : 0;
        if (!wait("disconnect events", [&] { return gone_ >= want; }))
            return finish(1);
        return finish(0);
    }

    const Options &o_;
    app::EngineRun &run_;
    Device &dev_;
    CmDevice &cm_;
    std::unique_ptr<ProtectionDomain> pd_;
    std::vector<Node> nodes_;
    uint32_t accepted_ = 0, gone_ = 0;
    int64_t connects_left_ = static_cast<int64_t>(o_.connections);
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
    auto cm = app::open_cm(*engine, *dev, o);
    if (!cm)
        return 1;
    int rc;
    {
        Cmatose t(o, run, *dev, *cm);
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
