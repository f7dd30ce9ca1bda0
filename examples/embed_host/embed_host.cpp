/* SPDX-License-Identifier: BSD-3-Clause */
/* embed_host: droce inside a process that owns the EAL and its NIC ports, as a storage
 * data plane (SPDK) does. The host initialises the EAL, creates and starts two ports
 * (a net_ring pair here: one process, no NIC, no hugepages) with its own mempool, and
 * hands one RX/TX queue pair of each to droce; one poll loop on the main thread runs
 * both droce devices and the "application". Per round trip, the client posts an NVMe-oF
 * read's pattern in one call: the data as an RDMA WRITE and the response as a SEND,
 * chained; the server answers with a SEND. Async events are drained each loop.
 *
 *   embed_host [rounds] [bytes]        (defaults 2000 and 4096)
 *
 * See doc/embedding.md. */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include <droce/droce.h>

using namespace droce;

namespace {

/* ---- the host's side: EAL, mempool, ports (droce is not involved yet) ---- */

bool host_ports(rte_mempool *pool, uint16_t *pa, uint16_t *pb) {
    rte_ring *ab = rte_ring_create("eh_ab", 1024, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
    rte_ring *ba = rte_ring_create("eh_ba", 1024, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (ab == nullptr || ba == nullptr)
        return false;
    const int a = rte_eth_from_rings("eh_a", &ba, 1, &ab, 1, rte_socket_id());
    const int b = rte_eth_from_rings("eh_b", &ab, 1, &ba, 1, rte_socket_id());
    if (a < 0 || b < 0)
        return false;
    *pa = static_cast<uint16_t>(a);
    *pb = static_cast<uint16_t>(b);
    for (uint16_t p : {*pa, *pb}) {
        rte_eth_conf conf{};
        if (rte_eth_dev_configure(p, 1, 1, &conf) != 0 ||
            rte_eth_rx_queue_setup(p, 0, 512, rte_socket_id(), nullptr, pool) != 0 ||
            rte_eth_tx_queue_setup(p, 0, 512, rte_socket_id(), nullptr) != 0 ||
            rte_eth_dev_start(p) != 0)
            return false;
        /* droce's MACs below are not the ports' (net_ring has none): the host lets every
         * frame in, droce filters by its MAC in software. */
        rte_eth_promiscuous_enable(p);
    }
    return true;
}

/* ---- droce: one endpoint ---- */

struct Endpoint {
    Device *dev = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<CompletionQueue> cq;
    std::vector<uint8_t> buf;
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<QueuePair> qp;

    Status init(Device *d) {
        dev = d;
        auto p = d->alloc_pd();
        if (!p)
            return p.status();
        pd = std::move(*p);
        auto c = d->create_cq(1024);
        if (!c)
            return c.status();
        cq = std::move(*c);
        buf.assign(1 << 20, 0);
        auto m = pd->reg_mr(buf.data(), buf.size(), kAccessLocalWrite | kAccessRemoteWrite);
        if (!m)
            return m.status();
        mr = std::move(*m);
        QpInitAttr a;
        a.send_cq = a.recv_cq = cq.get();
        auto q = pd->create_qp(a);
        if (!q)
            return q.status();
        qp = std::move(*q);
        QpAttr i;
        i.qp_state = QpState::Init;
        i.qp_access_flags = kAccessLocalWrite | kAccessRemoteWrite;
        return qp->modify(i, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags);
    }
    /* RTR then RTS. With DeviceConfig::rtr_nonblocking this returns at once even though
     * the peer's MAC is not known yet: the poll loop resolves it. */
    Status connect(const Endpoint &peer) {
        QpAttr r;
        r.qp_state = QpState::Rtr;
        r.path_mtu = Mtu::Mtu1024;
        r.dest_qp_num = peer.qp->qp_num();
        r.ah_attr.dgid = peer.dev->gids().at(1).gid; /* the peer's IPv4 GID */
        r.ah_attr.sgid_index = 1;
        if (Status s = qp->modify(r, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                         kQpMaxDestRdAtomic | kQpMinRnrTimer);
            !s)
            return s;
        QpAttr t;
        t.qp_state = QpState::Rts;
        return qp->modify(t, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                 kQpMaxQpRdAtomic);
    }
    Sge sge(size_t off, uint32_t len) const {
        return Sge{reinterpret_cast<uint64_t>(buf.data() + off), len, mr->lkey()};
    }
    Status post_recv(uint64_t id) {
        RecvWr r;
        r.wr_id = id;
        r.sg_list[0] = sge(0x80000, 64);
        r.num_sge = 1;
        return qp->post_recv(r);
    }
};

/* The host's poll loop body: droce's devices, then the async events the host must see. */
void poll_once(Engine &e, Endpoint &a, Endpoint &b, bool *fatal) {
    e.poll();
    AsyncEvent ev;
    for (Endpoint *p : {&a, &b})
        while (p->dev->get_async_event(ev)) {
            std::fprintf(stderr, "embed_host: %s: async event %s (QP %u)\n", p->dev->name().c_str(),
                         async_event_str(ev.type), ev.qp_num);
            *fatal |= ev.type == AsyncEventType::QpFatal || ev.type == AsyncEventType::CqErr ||
                      ev.type == AsyncEventType::DeviceFatal;
        }
}

} // namespace

int main(int argc, char **argv) {
    const int rounds = argc > 1 ? std::atoi(argv[1]) : 2000;
    const uint32_t bytes = argc > 2 ? static_cast<uint32_t>(std::atoi(argv[2])) : 4096;
    if (rounds <= 0 || bytes == 0 || bytes > 0x40000) {
        std::fprintf(stderr, "usage: embed_host [rounds > 0] [bytes 1..262144]\n");
        return 2;
    }
    /* 1. The host starts the EAL itself (droce is told not to: Engine::attach). */
    const char *eal[] = {"embed_host", "--no-huge",   "-m",          "256",
                         "--no-pci",   "--no-shconf", "--log-level", "*:warning"};
    if (rte_eal_init(8, const_cast<char **>(eal)) < 0) {
        std::fprintf(stderr, "embed_host: rte_eal_init failed\n");
        return 1;
    }
    int rc = 1;
    {
        /* 2. Its mempool and ports, configured and started by the host. */
        rte_mempool *pool = rte_pktmbuf_pool_create("eh_pool", 4095, 128, 0,
                                                    RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
        uint16_t pa = 0, pb = 0;
        if (pool == nullptr || !host_ports(pool, &pa, &pb)) {
            std::fprintf(stderr, "embed_host: host port set-up failed\n");
            return 1;
        }
        /* 3. droce on that EAL, embedded (the host's loop polls), no pools of its own. */
        EngineOptions eo;
        eo.embedded = true;
        eo.mbufs = 0;
        eo.log_level = "warn";
        auto engine = Engine::attach(eo);
        if (!engine) {
            std::fprintf(stderr, "embed_host: %s\n", engine.status().message().c_str());
            return 1;
        }
        /* 4. Each port's queue 0 and the host's mempool handed over. */
        DeviceConfig dc;
        dc.host_mempool = pool;
        dc.host_rx_queue = dc.host_tx_queue = 0;
        dc.rtr_nonblocking = true;
        dc.port = std::to_string(pa);
        dc.mac = "02:00:00:00:e0:01"; /* net_ring ports have none of their own */
        dc.ipv4_cidr = "10.79.0.1/24";
        auto da = (*engine)->open_device(dc);
        dc.port = std::to_string(pb);
        dc.mac = "02:00:00:00:e0:02";
        dc.ipv4_cidr = "10.79.0.2/24";
        auto db = da ? (*engine)->open_device(dc) : Result<Device *>(da.status());
        if (!da || !db) {
            std::fprintf(stderr, "embed_host: open_device: %s\n",
                         (!da ? da : db).status().message().c_str());
            return 1;
        }
        Endpoint cli, srv;
        Status s = cli.init(*da);
        if (s)
            s = srv.init(*db);
        if (s)
            s = cli.connect(srv);
        if (s)
            s = srv.connect(cli);
        if (!s) {
            std::fprintf(stderr, "embed_host: %s\n", s.message().c_str());
            return 1;
        }
        /* 5. Ping: client chain [WRITE data, SEND response], server SEND back. */
        for (uint32_t i = 0; i < bytes; ++i)
            cli.buf[i] = static_cast<uint8_t>(i * 31 + 7);
        std::vector<double> rtt_us;
        rtt_us.reserve(static_cast<size_t>(rounds));
        bool fatal = false;
        const uint64_t kRemote = 0x1000;
        for (int r = 0; r < rounds && !fatal; ++r) {
            if (!srv.post_recv(static_cast<uint64_t>(r)) ||
                !cli.post_recv(static_cast<uint64_t>(r)))
                break;
            SendWr w[2];
            w[0].wr_id = 1;
            w[0].opcode = WrOpcode::RdmaWrite;
            w[0].sg_list[0] = cli.sge(0, bytes);
            w[0].num_sge = 1;
            w[0].remote_addr = reinterpret_cast<uint64_t>(srv.buf.data() + kRemote);
            w[0].rkey = srv.mr->rkey();
            w[1].wr_id = 2;
            w[1].opcode = WrOpcode::Send;
            w[1].send_flags = kSendSignaled;
            w[1].sg_list[0] = cli.sge(0x40000, 16);
            w[1].num_sge = 1;
            const auto t0 = std::chrono::steady_clock::now();
            uint32_t bad = 0;
            if (Status ps = cli.qp->post_send(w, 2, &bad); !ps) {
                std::fprintf(stderr, "embed_host: post_send (WR %u): %s\n", bad,
                             ps.message().c_str());
                break;
            }
            /* The server answers each request it receives; the client waits for it. */
            bool answered = false, got_reply = false, sent = false;
            const auto limit = t0 + std::chrono::seconds(5);
            while (!(got_reply && sent) && !fatal && std::chrono::steady_clock::now() < limit) {
                poll_once(**engine, cli, srv, &fatal);
                Wc wc[8];
                for (int k = srv.cq->poll(wc, 8), j = 0; j < k; ++j) {
                    if (wc[j].status != WcStatus::Success)
                        fatal = true;
                    if (wc[j].opcode == WcOpcode::Recv && !answered) {
                        SendWr rep;
                        rep.opcode = WrOpcode::Send;
                        rep.sg_list[0] = srv.sge(0x40000, 16);
                        rep.num_sge = 1;
                        answered = static_cast<bool>(srv.qp->post_send(rep));
                    }
                }
                for (int k = cli.cq->poll(wc, 8), j = 0; j < k; ++j) {
                    if (wc[j].status != WcStatus::Success)
                        fatal = true;
                    got_reply |= wc[j].opcode == WcOpcode::Recv;
                    sent |= wc[j].opcode == WcOpcode::Send;
                }
            }
            if (!(got_reply && sent)) {
                std::fprintf(stderr, "embed_host: round %d did not complete\n", r);
                fatal = true;
                break;
            }
            rtt_us.push_back(
                std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                    .count());
        }
        const bool data_ok = std::memcmp(srv.buf.data() + kRemote, cli.buf.data(), bytes) == 0;
        if (!fatal && data_ok && rtt_us.size() == static_cast<size_t>(rounds)) {
            std::sort(rtt_us.begin(), rtt_us.end());
            std::printf("embed_host: %d round trips (WRITE %u B + SEND chained, SEND back) on "
                        "the host's ports: RTT min %.1f us, median %.1f us, max %.1f us\n",
                        rounds, bytes, rtt_us.front(), rtt_us[rtt_us.size() / 2], rtt_us.back());
            rc = 0;
        } else {
            std::fprintf(stderr, "embed_host: FAILED (%zu of %d rounds, data %s)\n", rtt_us.size(),
                         rounds, data_ok ? "ok" : "wrong");
        }
        /* 6. droce first (children before parents), then the host closes its ports. */
        for (Endpoint *p : {&cli, &srv}) {
            p->qp.reset();
            p->mr.reset();
            p->cq.reset();
            p->pd.reset();
        }
        engine->reset();
        for (uint16_t p : {pa, pb}) {
            if (!rte_eth_dev_is_valid_port(p)) {
                std::fprintf(stderr, "embed_host: droce closed the host's port %u\n", p);
                rc = 1;
                continue;
            }
            rte_eth_dev_stop(p);
            rte_eth_dev_close(p);
        }
        rte_mempool_free(pool);
    }
    rte_eal_cleanup();
    return rc;
}
