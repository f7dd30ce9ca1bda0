/* SPDX-License-Identifier: BSD-3-Clause */
/* The embedding API a storage host needs (issue 13 item 5), in a process that owns the
 * EAL and its ports as SPDK does: the test's main() initialises the EAL, each test makes
 * a net_ring pair, configures and starts it with the host's own mempool, and hands one
 * queue of each port to droce (DeviceConfig::host_mempool). Checked: droce leaves the
 * process's spdlog level alone; it polls the queues it was given, builds its frames from
 * the host's mempool and never stops or closes the host's port; chained posts with
 * ibv_post_send's bad_wr semantics; modify to RTR that never waits for ARP (frames held
 * until the neighbour answers, QP to ERR with QpFatal when it never does); a port going
 * down raised as PortErr. */
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <spdlog/spdlog.h>

#include <droce/droce.h>

using namespace droce;
using namespace std::chrono_literals;

namespace {

int g_seq = 0;

/* The host's side: a net_ring pair with `queues` queues per port (queue i of A feeds
 * queue i of B), configured and started by the host with its own mempool. */
struct HostPorts {
    uint16_t a = 0, b = 0;
    rte_mempool *pool = nullptr;
    std::vector<rte_ring *> rings;

    bool make(uint16_t queues) {
        const std::string id = std::to_string(++g_seq);
        pool = rte_pktmbuf_pool_create(("host_pool" + id).c_str(), 2047, 64, 0,
                                       RTE_MBUF_DEFAULT_BUF_SIZE, rte_socket_id());
        if (pool == nullptr)
            return false;
        std::vector<rte_ring *> a2b, b2a;
        for (uint16_t i = 0; i < queues; ++i) {
            const std::string n = "hr" + id + "_" + std::to_string(i);
            a2b.push_back(rte_ring_create((n + "ab").c_str(), 1024, rte_socket_id(),
                                          RING_F_SP_ENQ | RING_F_SC_DEQ));
            b2a.push_back(rte_ring_create((n + "ba").c_str(), 1024, rte_socket_id(),
                                          RING_F_SP_ENQ | RING_F_SC_DEQ));
            rings.push_back(a2b.back());
            rings.push_back(b2a.back());
        }
        const int pa = rte_eth_from_rings(("hosta" + id).c_str(), b2a.data(), queues, a2b.data(),
                                          queues, rte_socket_id());
        const int pb = rte_eth_from_rings(("hostb" + id).c_str(), a2b.data(), queues, b2a.data(),
                                          queues, rte_socket_id());
        if (pa < 0 || pb < 0)
            return false;
        a = static_cast<uint16_t>(pa);
        b = static_cast<uint16_t>(pb);
        for (uint16_t p : {a, b}) {
            rte_eth_conf conf{};
            if (rte_eth_dev_configure(p, queues, queues, &conf) != 0)
                return false;
            for (uint16_t q = 0; q < queues; ++q)
                if (rte_eth_rx_queue_setup(p, q, 512, rte_socket_id(), nullptr, pool) != 0 ||
                    rte_eth_tx_queue_setup(p, q, 512, rte_socket_id(), nullptr) != 0)
                    return false;
            if (rte_eth_dev_start(p) != 0)
                return false;
        }
        return true;
    }
    /* The host closes its ports, after the engine is gone. */
    ~HostPorts() {
        for (uint16_t p : {a, b})
            if (rte_eth_dev_is_valid_port(p)) {
                rte_eth_dev_stop(p);
                rte_eth_dev_close(p);
            }
        for (rte_ring *r : rings)
            rte_ring_free(r);
        rte_mempool_free(pool);
    }
};

std::map<std::string, uint64_t> counters(const Device &d) {
    std::map<std::string, uint64_t> m;
    for (const auto &[k, v] : d.counters())
        m[k] = v;
    return m;
}

struct Side {
    Device *dev = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<CompletionQueue> cq;
    std::vector<uint8_t> buf;
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<QueuePair> qp;
    void init(Device *d) {
        dev = d;
        pd = std::move(*d->alloc_pd());
        cq = std::move(*d->create_cq(256));
        buf.assign(1 << 16, 0);
        mr = std::move(*pd->reg_mr(buf.data(), buf.size(),
                                   kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead));
        QpInitAttr a;
        a.send_cq = a.recv_cq = cq.get();
        qp = std::move(*pd->create_qp(a));
    }
    void reset() {
        qp.reset();
        mr.reset();
        cq.reset();
        pd.reset();
    }
    Sge sge(size_t off, uint32_t len) const {
        return Sge{reinterpret_cast<uint64_t>(buf.data() + off), len, mr->lkey()};
    }
    uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data() + off); }
};

Status to_init(QueuePair &qp) {
    QpAttr a;
    a.qp_state = QpState::Init;
    a.qp_access_flags = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
    return qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags);
}

Status to_rtr(QueuePair &qp, const Gid &dgid, uint32_t dqpn) {
    QpAttr a;
    a.qp_state = QpState::Rtr;
    a.path_mtu = Mtu::Mtu1024;
    a.dest_qp_num = dqpn;
    a.rq_psn = 0;
    a.ah_attr.dgid = dgid;
    a.ah_attr.sgid_index = 1;
    return qp.modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic |
                            kQpMinRnrTimer);
}

Status to_rts(QueuePair &qp) {
    QpAttr a;
    a.qp_state = QpState::Rts;
    a.sq_psn = 0;
    a.timeout = 18;
    return qp.modify(a, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                            kQpMaxQpRdAtomic);
}

Gid gid_of(uint32_t ip_host_order) {
    Gid g{};
    g.raw[10] = g.raw[11] = 0xFF;
    g.raw[12] = static_cast<uint8_t>(ip_host_order >> 24);
    g.raw[13] = static_cast<uint8_t>(ip_host_order >> 16);
    g.raw[14] = static_cast<uint8_t>(ip_host_order >> 8);
    g.raw[15] = static_cast<uint8_t>(ip_host_order);
    return g;
}

class EmbedHost : public ::testing::Test {
  protected:
    /* An engine on the host's EAL, devices on queue `q` of each host port. */
    void open(uint16_t queues, uint16_t q, bool nonblocking, uint32_t arp_timeout_ms = 3000) {
        ASSERT_TRUE(host.make(queues));
        EngineOptions o;
        o.embedded = true;
        o.mbufs = 0; /* no pool of droce's own: every frame comes from the host's */
        o.log_level = "off";
        auto e = Engine::attach(o);
        ASSERT_TRUE(e) << e.status().message();
        engine = std::move(*e);
        DeviceConfig c;
        c.host_mempool = host.pool;
        c.host_rx_queue = c.host_tx_queue = q;
        c.rtr_nonblocking = nonblocking;
        c.arp_timeout_ms = arp_timeout_ms;
        /* net_ring ports have MAC 00:00:00:00:00:00 (and pass every frame): own MACs, so
         * that a frame sent to no MAC is dropped and counted (rx_drop_not_our_mac). */
        c.port = std::to_string(host.a);
        c.mac = "02:00:00:00:78:01";
        c.ipv4_cidr = "10.78.0.1/24";
        auto da = engine->open_device(c);
        ASSERT_TRUE(da) << da.status().message();
        c.port = std::to_string(host.b);
        c.mac = "02:00:00:00:78:02";
        c.ipv4_cidr = "10.78.0.2/24";
        auto db = engine->open_device(c);
        ASSERT_TRUE(db) << db.status().message();
        a.init(*da);
        b.init(*db);
        ASSERT_TRUE(to_init(*a.qp));
        ASSERT_TRUE(to_init(*b.qp));
    }
    void connect() {
        Status s = to_rtr(*a.qp, b.dev->gids().at(1).gid, b.qp->qp_num());
        ASSERT_TRUE(s) << s.message();
        s = to_rtr(*b.qp, a.dev->gids().at(1).gid, a.qp->qp_num());
        ASSERT_TRUE(s) << s.message();
        ASSERT_TRUE(to_rts(*a.qp));
        ASSERT_TRUE(to_rts(*b.qp));
    }
    std::vector<Wc> wait(CompletionQueue &cq, size_t n, std::chrono::milliseconds limit = 5s) {
        std::vector<Wc> out;
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
            Wc wc[16];
            const int k = cq.poll(wc, 16);
            out.insert(out.end(), wc, wc + k);
            if (k == 0)
                engine->poll();
        }
        return out;
    }
    void TearDown() override {
        a.reset();
        b.reset();
        engine.reset();
    }
    HostPorts host; /* destroyed last: the host's ports outlive droce's devices */
    std::unique_ptr<Engine> engine;
    Side a, b;
};

/* EngineOptions::log_level is droce's logger's level, not the process's. */
TEST(EmbedHostLog, LogLevelIsDrocesOwn) {
    spdlog::set_level(spdlog::level::info);
    EngineOptions o;
    o.embedded = true;
    o.log_level = "off";
    {
        auto e = Engine::attach(o);
        ASSERT_TRUE(e) << e.status().message();
        EXPECT_EQ(spdlog::get_level(), spdlog::level::info)
            << "the engine changed the process's spdlog level";
    }
    spdlog::set_level(spdlog::level::err);
    o.log_level = "debug";
    auto e = Engine::attach(o);
    ASSERT_TRUE(e) << e.status().message();
    EXPECT_EQ(spdlog::get_level(), spdlog::level::err);
    spdlog::set_level(spdlog::level::warn);
}

/* The host's queue 1 of 2 (so droce must poll the one it was given), the host's mempool
 * (droce has none), and a WRITE + SEND chain in one call. */
TEST_F(EmbedHost, HostPortQueueAndMempoolChainedWriteSend) {
    open(2, 1, false);
    connect();
    RecvWr r;
    r.wr_id = 7;
    r.sg_list[0] = b.sge(0x8000, 64);
    r.num_sge = 1;
    ASSERT_TRUE(b.qp->post_recv(&r, 1));
    for (uint32_t i = 0; i < 4096; ++i)
        a.buf[i] = static_cast<uint8_t>(i * 13 + 1);
    std::memcpy(a.buf.data() + 0x4000, "response", 8);
    SendWr w[2];
    w[0].wr_id = 1;
    w[0].opcode = WrOpcode::RdmaWrite;
    w[0].sg_list[0] = a.sge(0, 4096);
    w[0].num_sge = 1;
    w[0].remote_addr = b.addr(0x1000);
    w[0].rkey = b.mr->rkey();
    w[1].wr_id = 2;
    w[1].opcode = WrOpcode::Send;
    w[1].send_flags = kSendSignaled;
    w[1].sg_list[0] = a.sge(0x4000, 8);
    w[1].num_sge = 1;
    uint32_t bad = 99;
    ASSERT_TRUE(a.qp->post_send(w, 2, &bad));
    EXPECT_EQ(bad, 2u);
    auto rc = wait(*b.cq, 1);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, WcStatus::Success);
    EXPECT_EQ(rc[0].byte_len, 8u);
    /* The SEND follows the WRITE: its completion means the data is there. */
    EXPECT_EQ(std::memcmp(b.buf.data() + 0x1000, a.buf.data(), 4096), 0);
    EXPECT_EQ(std::memcmp(b.buf.data() + 0x8000, "response", 8), 0);
    auto sc = wait(*a.cq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].wr_id, 2u);
    /* Queue 0 of the host's ports carried nothing: droce used the queue it was given. */
    rte_mbuf *m[8];
    EXPECT_EQ(rte_eth_rx_burst(host.b, 0, m, 8), 0);
    /* droce's frames came from the host's pool, and went back to it. */
    EXPECT_GT(counters(*a.dev)["port_xmit_packets"], 0u);
    const uint16_t pa = host.a;
    TearDown();
    /* The host's port is still the host's: open, and a frame still passes. */
    ASSERT_TRUE(rte_eth_dev_is_valid_port(pa)) << "droce closed the host's port";
    rte_mbuf *f = rte_pktmbuf_alloc(host.pool);
    ASSERT_NE(f, nullptr);
    rte_pktmbuf_append(f, 64);
    ASSERT_EQ(rte_eth_tx_burst(pa, 1, &f, 1), 1);
    EXPECT_EQ(rte_eth_rx_burst(host.b, 1, m, 8), 1);
    rte_pktmbuf_free(m[0]);
}

/* ibv_post_send's bad_wr: the WRs before the refused one are posted, it and the rest not. */
TEST_F(EmbedHost, ChainStopsAtTheBadWr) {
    open(1, 0, false);
    connect();
    SendWr w[3];
    for (int i = 0; i < 3; ++i) {
        w[i].wr_id = 10 + static_cast<uint64_t>(i);
        w[i].opcode = WrOpcode::RdmaWrite;
        w[i].send_flags = kSendSignaled;
        w[i].sg_list[0] = a.sge(0, 256);
        w[i].num_sge = 1;
        w[i].remote_addr = b.addr(0);
        w[i].rkey = b.mr->rkey();
    }
    w[1].num_sge = kMaxSge + 1;
    uint32_t bad = 99;
    Status s = a.qp->post_send(w, 3, &bad);
    EXPECT_FALSE(s);
    EXPECT_EQ(bad, 1u);
    auto sc = wait(*a.cq, 2, 500ms);
    ASSERT_EQ(sc.size(), 1u) << "only the WR before the bad one is posted";
    EXPECT_EQ(sc[0].wr_id, 10u);
    EXPECT_EQ(sc[0].status, WcStatus::Success);
    RecvWr r[2];
    r[0].sg_list[0] = b.sge(0, 64);
    r[0].num_sge = 1;
    r[1].num_sge = -1;
    bad = 99;
    EXPECT_FALSE(b.qp->post_recv(r, 2, &bad));
    EXPECT_EQ(bad, 1u);
}

/* Non-blocking RTR: modify returns before the neighbour answers (nothing is polled inside
 * it), the QP's frames wait, and leave once the ARP reply is in. */
TEST_F(EmbedHost, RtrDoesNotWaitForArpAndFramesWait) {
    open(1, 0, true);
    const auto t0 = std::chrono::steady_clock::now();
    connect();
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_LT(took, 100ms);
    EXPECT_EQ(counters(*a.dev)["rtr_neigh_wait"], 1u);
    EXPECT_EQ(counters(*a.dev)["rtr_neigh_resolved"], 0u) << "modify waited for the neighbour";
    RecvWr r;
    r.sg_list[0] = b.sge(0, 64);
    r.num_sge = 1;
    ASSERT_TRUE(b.qp->post_recv(r));
    SendWr w;
    w.opcode = WrOpcode::Send;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = a.sge(0, 32);
    w.num_sge = 1;
    ASSERT_TRUE(a.qp->post_send(w));
    auto sc = wait(*a.cq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::Success);
    const auto ca = counters(*a.dev), cb = counters(*b.dev);
    EXPECT_EQ(ca.at("rtr_neigh_resolved"), 1u);
    EXPECT_EQ(ca.at("rtr_neigh_timeout"), 0u);
    /* Nothing left with a MAC not yet known. */
    EXPECT_EQ(cb.at("rx_drop_not_our_mac"), 0u);
    EXPECT_EQ(ca.at("rx_drop_not_our_mac"), 0u);
}

/* A next hop that never answers: modify still returns at once; after arp_timeout_ms the
 * QP is in ERR, its WR flushed, and the host hears QpFatal. */
TEST_F(EmbedHost, RtrNeighbourNeverAnswersQpFatal) {
    open(1, 0, true, 300);
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(to_rtr(*a.qp, gid_of(0x0A4E0063), 0x123)); /* 10.78.0.99: nobody */
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 100ms);
    ASSERT_TRUE(to_rts(*a.qp));
    SendWr w;
    w.wr_id = 5;
    w.opcode = WrOpcode::Send;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = a.sge(0, 32);
    w.num_sge = 1;
    ASSERT_TRUE(a.qp->post_send(w));
    auto sc = wait(*a.cq, 1, 3s);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].wr_id, 5u);
    EXPECT_EQ(sc[0].status, WcStatus::WrFlushErr);
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    EXPECT_GE(elapsed, 250ms) << "failed before the ARP timeout";
    AsyncEvent ev;
    bool fatal = false;
    while (a.dev->get_async_event(ev))
        fatal |= ev.type == AsyncEventType::QpFatal && ev.qp_num == a.qp->qp_num();
    EXPECT_TRUE(fatal);
    QpAttr at;
    ASSERT_TRUE(a.qp->query(at));
    EXPECT_EQ(at.qp_state, QpState::Err);
    EXPECT_EQ(counters(*a.dev)["rtr_neigh_timeout"], 1u);
    /* Only ARP requests left: the SEND was never built for a MAC not known. */
    EXPECT_EQ(counters(*a.dev)["tx_bytes_copied"], 0u) << "a held frame was sent";
    EXPECT_EQ(counters(*b.dev)["rx_drop_not_our_mac"], 0u) << "a held frame was sent";
}

/* Without rtr_nonblocking the old contract holds: modify waits, then ETIMEDOUT. */
TEST_F(EmbedHost, BlockingRtrStillTimesOut) {
    open(1, 0, false, 200);
    const auto t0 = std::chrono::steady_clock::now();
    const Status s = to_rtr(*a.qp, gid_of(0x0A4E0063), 0x123);
    EXPECT_EQ(s.code(), ETIMEDOUT) << s.message();
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 190ms);
}

/* The host's port going down reaches the host as PortErr (and back up as PortActive). */
TEST_F(EmbedHost, PortDownIsAnAsyncEvent) {
    open(1, 0, false);
    AsyncEvent ev;
    /* The link check (every 10 ms) learns the state first: a change before it is none. */
    std::this_thread::sleep_for(50ms);
    while (a.dev->get_async_event(ev)) {
    }
    ASSERT_EQ(rte_eth_dev_set_link_down(host.a), 0);
    auto got = [&](AsyncEventType t) {
        const auto deadline = std::chrono::steady_clock::now() + 2s;
        while (std::chrono::steady_clock::now() < deadline) {
            engine->poll();
            while (a.dev->get_async_event(ev))
                if (ev.type == t)
                    return true;
            std::this_thread::sleep_for(1ms);
        }
        return false;
    };
    EXPECT_TRUE(got(AsyncEventType::PortErr));
    ASSERT_EQ(rte_eth_dev_set_link_up(host.a), 0);
    EXPECT_TRUE(got(AsyncEventType::PortActive));
}

} // namespace

int main(int argc, char **argv) {
    ::testing::InitGoogleTest(&argc, argv);
    /* The host owns the EAL (as SPDK does): droce is attached to it afterwards. */
    const char *eal[] = {"test_embed_host", "--no-huge",   "-m",          "256",
                         "--no-pci",        "--no-shconf", "--log-level", "*:warning"};
    if (rte_eal_init(8, const_cast<char **>(eal)) < 0) {
        std::fprintf(stderr, "rte_eal_init failed\n");
        return 1;
    }
    return RUN_ALL_TESTS();
}
