/* SPDX-License-Identifier: BSD-3-Clause */
/* PFC honoured by the engine, on a virtual clock: a device on one end of a net_ring pair,
 * the other end driven by the test (it injects PFC frames and sees what the device
 * sends). Two QPs: one on priority 3 (DSCP 26), one on priority 0. Shard::poll is called
 * with the test's own time, so the pause length is checked to the timer wheel's tick. */
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <droce/droce.h>

#include "engine.h"
#include "net.h"
#include "net_pfc.h"

using namespace droce;

namespace {

const net::Mac kPeerMac = {0x02, 0, 0, 0, 0x01, 0x09};
constexpr uint32_t kPeerIp = 0x0A4D0009;
constexpr uint64_t kT0 = 1'000'000'000; /* the virtual clock's start */
constexpr uint64_t kTickNs = 1024;      /* the shard's timer wheel granularity */

class Pfc : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        static const char *eal[] = {"test_engine_pfc", "--no-huge",   "-m",   "512",
                                    "--no-pci",        "--no-shconf", "-l",   "0",
                                    "--log-level",     "*:warning",   nullptr};
        EngineOptions o;
        o.embedded = true;
        o.mbufs = 4095;
        o.log_level = "warn";
        int consumed = 0;
        auto rt = engine::Runtime::create(10, const_cast<char **>(eal), &consumed, o);
        ASSERT_TRUE(rt) << rt.status().message();
        rt_ = std::move(*rt);
    }
    static void TearDownTestSuite() { rt_.reset(); }

    void SetUp() override {
        ASSERT_TRUE(rt_);
        auto ports = rt_->create_ring_pair();
        ASSERT_TRUE(ports);
        DeviceConfig c;
        c.port = ports->first;
        c.ipv4_cidr = "10.77.0.1/24";
        c.mac = "02:00:00:00:01:01";
        c.dcqcn = false; /* no pacer: what leaves is decided by PFC alone */
        configure(c);
        auto d = rt_->open_device(c);
        ASSERT_TRUE(d) << d.status().message();
        dev = *d;
        ASSERT_EQ(rte_eth_dev_get_port_by_name(ports->second.c_str(), &peer), 0);
        static int seq = 0;
        const std::string pn = "test_pfc_pool" + std::to_string(seq++);
        pool = rte_pktmbuf_pool_create(pn.c_str(), 511, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                       SOCKET_ID_ANY);
        ASSERT_NE(pool, nullptr);
        rte_eth_conf conf{};
        ASSERT_EQ(rte_eth_dev_configure(peer, 1, 1, &conf), 0);
        ASSERT_EQ(rte_eth_rx_queue_setup(peer, 0, 512, SOCKET_ID_ANY, nullptr, pool), 0);
        ASSERT_EQ(rte_eth_tx_queue_setup(peer, 0, 512, SOCKET_ID_ANY, nullptr), 0);
        ASSERT_EQ(rte_eth_dev_start(peer), 0);
        cq = std::make_unique<engine::CqCtx>();
        cq->ring = engine::ring_alloc(("test_pfc_cq" + std::to_string(seq)).c_str(), sizeof(Wc),
                                      4096, RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
        ASSERT_NE(cq->ring, nullptr);
        buf.assign(1 << 16, 0x5a);
        key = dev->reg_mr(1, buf.data(), buf.size(), kAccessLocalWrite)->key;
        q3 = make_qp(26 << 2); /* DSCP 26: priority 3 */
        q0 = make_qp(0);       /* priority 0 */
        ASSERT_NE(q3, nullptr);
        ASSERT_NE(q0, nullptr);
        now = kT0;
    }
    /** A derived fixture's device settings. */
    virtual void configure(DeviceConfig &) {}
    void TearDown() override {
        rte_eth_dev_stop(peer);
        rte_eth_dev_close(peer);
        /* The runtime outlives the tests (one EAL): its devices stay open. */
        rte_mempool_free(pool);
    }

    engine::QpCtx *make_qp(uint8_t tos) {
        QpInitAttr ia;
        ia.cap.max_send_wr = 64;
        ia.cap.max_recv_wr = 4;
        engine::QpCtx *ctx = nullptr;
        auto n = dev->create_qp(1, ia, cq.get(), cq.get(), nullptr, nullptr, &ctx);
        if (!n)
            return nullptr;
        rc::Path p;
        std::memcpy(p.eth.dst, kPeerMac.data(), 6);
        std::memcpy(p.eth.src, dev->iface().mac.data(), 6);
        p.eth.ethertype = wire::kEtherTypeIpv4;
        std::memcpy(p.sgid, dev->gids().at(1)->raw, 16);
        wire::gid_from_ipv4(kPeerIp, p.dgid);
        p.tos = tos;
        p.ttl = 64;
        p.udp_sport = wire::udp_sport_for_qpn(*n);
        QpAttr a;
        a.qp_state = QpState::Init;
        if (!ctx->qp->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags))
            return nullptr;
        a.qp_state = QpState::Rtr;
        a.path_mtu = Mtu::Mtu1024;
        a.dest_qp_num = 0x99;
        a.max_dest_rd_atomic = 4;
        if (!ctx->qp->modify(a,
                             kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                 kQpMaxDestRdAtomic | kQpMinRnrTimer,
                             &p))
            return nullptr;
        a.qp_state = QpState::Rts;
        a.timeout = 20; /* ~4 s: no retransmission within a test */
        a.retry_cnt = 7;
        a.max_rd_atomic = 4;
        if (!ctx->qp->modify(a, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                    kQpMaxQpRdAtomic))
            return nullptr;
        return ctx;
    }

    /* n one-frame RDMA WRITEs on q (the doorbell: scheduled at once). */
    void post_writes(engine::QpCtx *q, int n) {
        for (int i = 0; i < n; ++i) {
            SendWr w;
            w.opcode = WrOpcode::RdmaWrite;
            w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(buf.data()), 64, key};
            w.num_sge = 1;
            w.remote_addr = 0x1000;
            w.rkey = 0x1234;
            ASSERT_TRUE(q->qp->post_send(w).is_ok());
        }
        dev->touch(*q);
    }
    void poll_at(uint64_t t) {
        now = t;
        uint32_t work = 0;
        dev->shard(0).poll(now, &work);
    }
    void inject(const std::vector<uint8_t> &f) {
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        ASSERT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
        ASSERT_EQ(rte_eth_tx_burst(peer, 0, &m, 1), 1);
    }
    std::vector<uint8_t> pfc(uint8_t enable, uint16_t quanta) {
        net::PfcFrame p;
        p.enable = enable;
        for (auto &x : p.quanta)
            x = quanta;
        std::vector<uint8_t> f(64);
        f.resize(net::build_pfc(kPeerMac, p, f.data(), f.size()));
        return f;
    }
    /* Frames the device sent since the last call, by priority (DSCP >> 3). */
    std::map<int, int> sent() {
        std::map<int, int> out;
        rte_mbuf *m[32];
        uint16_t n;
        while ((n = rte_eth_rx_burst(peer, 0, m, 32)) != 0)
            for (uint16_t i = 0; i < n; ++i) {
                const auto *p = rte_pktmbuf_mtod(m[i], const uint8_t *);
                ++out[p[15] >> 5];
                rte_pktmbuf_free(m[i]);
            }
        return out;
    }
    uint64_t counter(const std::string &name) const {
        for (const auto &[k, v] : dev->counters())
            if (k == name)
                return v;
        ADD_FAILURE() << "no counter " << name;
        return 0;
    }
    bool q3_shows_paused() const {
        for (const auto &[qpn, s] : dev->qp_summaries(0))
            if (qpn == q3->qp->qpn())
                return s.find("paused prio 3") != std::string::npos;
        return false;
    }

    static std::unique_ptr<engine::Runtime> rt_;
    engine::Dev *dev = nullptr;
    uint16_t peer = 0;
    rte_mempool *pool = nullptr;
    std::unique_ptr<engine::CqCtx> cq;
    std::vector<uint8_t> buf;
    uint32_t key = 0;
    engine::QpCtx *q3 = nullptr, *q0 = nullptr;
    uint64_t now = 0;
};
std::unique_ptr<engine::Runtime> Pfc::rt_;

TEST_F(Pfc, PausedPriorityIsHeldForItsQuantaWhileOthersFlow) {
    constexpr uint16_t kQuanta = 1000;
    const uint64_t pause = net::pfc_pause_ns(kQuanta, dev->line_rate_bps());
    ASSERT_GT(pause, 10 * kTickNs);
    ASSERT_NO_FATAL_FAILURE(inject(pfc(1u << 3, kQuanta)));
    poll_at(kT0); /* the pause starts now */
    EXPECT_EQ(dev->shard(0).paused_mask(), 1u << 3);
    ASSERT_NO_FATAL_FAILURE(post_writes(q3, 4));
    ASSERT_NO_FATAL_FAILURE(post_writes(q0, 4));
    poll_at(kT0 + 100);
    auto s = sent();
    EXPECT_EQ(s[0], 4) << "priority 0 is not paused";
    EXPECT_EQ(s[3], 0) << "priority 3 is paused";
    EXPECT_TRUE(q3_shows_paused());
    EXPECT_EQ(dev->shard(0).ready_qps(), 0u) << "the paused QP is parked, not polled";
    /* Polling while paused does nothing for it (no spinning through the ready list). */
    for (uint64_t t = kT0 + 1000; t < kT0 + pause; t += 5000)
        poll_at(t);
    poll_at(kT0 + pause - 1);
    EXPECT_EQ(sent()[3], 0) << "held until quanta x 512 bit times";
    poll_at(kT0 + pause + kTickNs);
    EXPECT_EQ(sent()[3], 4) << "resumed within one timer tick of the pause's end";
    EXPECT_FALSE(q3_shows_paused());
    EXPECT_EQ(dev->shard(0).paused_mask(), 0u);
    /* Traffic continues afterwards. */
    ASSERT_NO_FATAL_FAILURE(post_writes(q3, 2));
    poll_at(now + 100);
    EXPECT_EQ(sent()[3], 2);

    EXPECT_EQ(counter("rx_prio3_pause"), 1u);
    EXPECT_EQ(counter("rx_prio0_pause"), 0u);
    EXPECT_EQ(counter("rx_prio3_pause_transition"), 1u);
    const uint64_t us = counter("rx_prio3_pause_duration");
    EXPECT_GE(us, pause / 1000);
    EXPECT_LE(us, (pause + kTickNs) / 1000 + 1);
    EXPECT_EQ(counter("pfc_qps_parked"), 1u);
    EXPECT_GE(counter("tx_pfc_held"), 1u);
    EXPECT_EQ(counter("tx_prio3_pause"), 0u) << "droce sends no pause";
    EXPECT_EQ(counter("pfc_paused_qps"), 0u);
}

TEST_F(Pfc, QuantaZeroResumesAtOnceAndANewTimeReplacesTheOld) {
    ASSERT_NO_FATAL_FAILURE(inject(pfc(1u << 3, 0xFFFF)));
    poll_at(kT0);
    ASSERT_NO_FATAL_FAILURE(post_writes(q3, 3));
    poll_at(kT0 + 100);
    EXPECT_EQ(sent()[3], 0);
    /* A refresh with a shorter time: the pause now ends sooner (802.1Qbb). */
    ASSERT_NO_FATAL_FAILURE(inject(pfc(1u << 3, 100)));
    poll_at(kT0 + 200);
    EXPECT_EQ(sent()[3], 0);
    ASSERT_NO_FATAL_FAILURE(inject(pfc(1u << 3, 0)));
    poll_at(kT0 + 300);
    EXPECT_EQ(sent()[3], 3) << "quanta 0: resumed in the poll that received it";
    EXPECT_EQ(dev->shard(0).paused_mask(), 0u);
    EXPECT_EQ(counter("rx_prio3_pause"), 3u);
    EXPECT_EQ(counter("rx_prio3_pause_transition"), 1u);
    EXPECT_EQ(counter("rx_prio3_pause_duration"), 0u) << "300 ns";
}

TEST_F(Pfc, MalformedAndOtherMacControlFramesAreCountedAndPauseNothing) {
    auto bad = [&](std::vector<uint8_t> f) {
        ASSERT_NO_FATAL_FAILURE(inject(f));
        poll_at(now + 100);
    };
    auto f = pfc(0xFF, 0xFFFF);
    auto t = f;
    t.resize(30);
    bad(t); /* truncated */
    t = f;
    t.resize(100, 0);
    bad(t); /* oversized */
    t = f;
    t[0] = 0x02; /* unicast, not the reserved group */
    bad(t);
    t = f;
    t[15] = 0x01;
    t[14] = 0x00; /* 802.3x PAUSE */
    bad(t);
    t = f;
    t[15] = 0x03; /* REPORT */
    bad(t);
    bad(pfc(0, 0xFFFF)); /* no class enabled */
    EXPECT_EQ(dev->shard(0).paused_mask(), 0u);
    ASSERT_NO_FATAL_FAILURE(post_writes(q3, 1));
    poll_at(now + 100);
    EXPECT_EQ(sent()[3], 1);
    for (const char *n : {"too_short", "oversized", "wrong_dst", "classic_pause", "unknown_opcode",
                          "no_class_enabled"})
        EXPECT_EQ(counter(std::string("rx_mac_ctrl_") + n), 1u) << n;
    EXPECT_EQ(counter("rx_mac_ctrl_not_mac_control"), 0u);
    for (int p = 0; p < 8; ++p)
        EXPECT_EQ(counter("rx_prio" + std::to_string(p) + "_pause"), 0u);
    EXPECT_EQ(counter("rx_drop_not_our_mac"), 0u) << "MAC Control is not counted as foreign";
}

TEST_F(Pfc, StormWatchdogReportsOncePerStorm) {
    dev->pfc().storm_ns = 1'000'000; /* 1 ms watchdog */
    ASSERT_NO_FATAL_FAILURE(post_writes(q3, 1));
    /* A peer refreshing the pause every 200 us, for 3 ms. */
    uint64_t t = kT0;
    for (; t < kT0 + 3'000'000; t += 200'000) {
        ASSERT_NO_FATAL_FAILURE(inject(pfc(1u << 3, 0xFFFF)));
        poll_at(t);
    }
    /* Held for the watchdog's 1 ms, then the pauses were ignored (storm protection). */
    EXPECT_EQ(sent()[3], 1);
    EXPECT_EQ(counter("rx_pfc_pause_storm"), 1u) << "one report per storm";
    EXPECT_EQ(dev->shard(0).paused_mask(), 0u);
    EXPECT_EQ(counter("pfc_storm_prios"), 1u << 3);
    const uint64_t us = counter("rx_prio3_pause_duration");
    EXPECT_GE(us, 1000u);
    EXPECT_LE(us, 1300u);
    /* The peer stops: once its last pause would have run out, pauses count again. */
    poll_at(t + net::pfc_pause_ns(0xFFFF, dev->line_rate_bps()) + kTickNs);
    EXPECT_EQ(counter("pfc_storm_prios"), 0u);
    ASSERT_NO_FATAL_FAILURE(inject(pfc(1u << 3, 0xFFFF)));
    poll_at(now + 100);
    EXPECT_EQ(dev->shard(0).paused_mask(), 1u << 3);
    ASSERT_NO_FATAL_FAILURE(inject(pfc(1u << 3, 0)));
    poll_at(now + 100);
    engine::EngineEvent ev{};
    bool storm = false;
    while (dev->next_event(&ev))
        storm |= ev.type == AsyncEventType::PauseStorm;
    EXPECT_TRUE(storm);
    dev->pfc().storm_ns = engine::kPfcStormNsDefault;
}

/* An embedded engine with two workers (the EAL is the process's: a later engine reuses it). */
Result<std::unique_ptr<engine::Runtime>> two_worker_engine() {
    static const char *eal[] = {"test_engine_pfc", "--no-huge",   "-m",   "512",
                                "--no-pci",        "--no-shconf", "-l",   "0",
                                "--log-level",     "*:warning",   nullptr};
    EngineOptions o;
    o.embedded = true;
    o.workers = 2;
    o.mbufs = 2047;
    o.log_level = "warn";
    int consumed = 0;
    return engine::Runtime::create(10, const_cast<char **>(eal), &consumed, o);
}

/* Side A of a ring pair, without DCQCN. */
DeviceConfig ring_side_a(const std::string &port) {
    DeviceConfig c;
    c.port = port;
    c.ipv4_cidr = "10.77.0.1/24";
    c.mac = "02:00:00:00:01:01";
    c.dcqcn = false;
    return c;
}

/* Several workers: the frame lands on one shard's RX queue and every shard holds the
 * pause (each transmits on the port); it is counted once. */
TEST(PfcWorkers, EveryShardHoldsAPauseOneOfThemReceived) {
    auto rt = two_worker_engine();
    ASSERT_TRUE(rt) << rt.status().message();
    auto ports = (*rt)->create_ring_pair(2);
    ASSERT_TRUE(ports);
    DeviceConfig c = ring_side_a(ports->first);
    auto d = (*rt)->open_device(c);
    ASSERT_TRUE(d) << d.status().message();
    engine::Dev *dev = *d;
    ASSERT_EQ(dev->workers(), 2u);
    const uint16_t nq = dev->rx_queues(), q1 = dev->shard(1).rx_queue();
    ASSERT_LT(q1, nq);
    EXPECT_EQ(dev->shard(0).rx_queue(), 0u);
    EXPECT_EQ(q1, drivers::kRingQueueStride) << "a cache line of the ring PMD's away from 0";
    EXPECT_EQ(dev->shard(1).tx_queue(), q1);
    uint16_t peer = 0;
    ASSERT_EQ(rte_eth_dev_get_port_by_name(ports->second.c_str(), &peer), 0);
    rte_mempool *pool = rte_pktmbuf_pool_create("test_pfc_w_pool", 255, 0, 0,
                                                RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(pool, nullptr);
    rte_eth_conf conf{};
    ASSERT_EQ(rte_eth_dev_configure(peer, nq, nq, &conf), 0);
    for (uint16_t q = 0; q < nq; ++q) {
        ASSERT_EQ(rte_eth_rx_queue_setup(peer, q, 256, SOCKET_ID_ANY, nullptr, pool), 0);
        ASSERT_EQ(rte_eth_tx_queue_setup(peer, q, 256, SOCKET_ID_ANY, nullptr), 0);
    }
    ASSERT_EQ(rte_eth_dev_start(peer), 0);
    auto send_pfc = [&](uint16_t quanta) {
        net::PfcFrame p;
        p.enable = 1u << 3;
        p.quanta[3] = quanta;
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        ASSERT_NE(m, nullptr);
        uint8_t *b = reinterpret_cast<uint8_t *>(rte_pktmbuf_append(m, 60));
        ASSERT_EQ(net::build_pfc(kPeerMac, p, b, 60), 60u);
        ASSERT_EQ(rte_eth_tx_burst(peer, q1, &m, 1), 1) << "to worker 1's RX queue";
    };
    auto poll_both = [&](uint64_t t) {
        uint32_t work = 0;
        dev->shard(1).poll(t, &work); /* receives, passes it on */
        dev->shard(0).poll(t, &work);
    };
    auto counter = [&](const char *name) -> uint64_t {
        for (const auto &[k, v] : dev->counters())
            if (k == name)
                return v;
        ADD_FAILURE() << "no counter " << name;
        return 0;
    };
    ASSERT_NO_FATAL_FAILURE(send_pfc(0xFFFF));
    poll_both(kT0);
    EXPECT_EQ(dev->shard(1).paused_mask(), 1u << 3);
    EXPECT_EQ(dev->shard(0).paused_mask(), 1u << 3);
    EXPECT_EQ(counter("rx_prio3_pause"), 1u);
    ASSERT_NO_FATAL_FAILURE(send_pfc(0));
    poll_both(kT0 + 500'000);
    EXPECT_EQ(dev->shard(1).paused_mask(), 0u);
    EXPECT_EQ(dev->shard(0).paused_mask(), 0u);
    EXPECT_EQ(counter("rx_prio3_pause"), 2u);
    EXPECT_EQ(counter("rx_prio3_pause_transition"), 1u) << "counted once, not per worker";
    EXPECT_EQ(counter("rx_prio3_pause_duration"), 500u);
    EXPECT_EQ(counter("rx_drop_handoff_full"), 0u);
    rte_eth_dev_stop(peer);
    rte_eth_dev_close(peer);
    rt->reset();
    rte_mempool_free(pool);
}

/* DeviceConfig::queue_stride: the spacing asked for is the one the workers get, and one
 * the port has no queues for (or out of range) is refused, not shrunk. */
TEST(QueueStride, AskedSpacingOrWhyNot) {
    auto rt = two_worker_engine();
    ASSERT_TRUE(rt) << rt.status().message();
    auto ports = (*rt)->create_ring_pair(2); /* 5 queues: room for net_ring's stride 4 */
    ASSERT_TRUE(ports);
    DeviceConfig c = ring_side_a(ports->first);
    c.queue_stride = 2;
    auto a = (*rt)->open_device(c);
    ASSERT_TRUE(a) << a.status().message();
    EXPECT_EQ((*a)->shard(0).rx_queue(), 0u);
    EXPECT_EQ((*a)->shard(1).rx_queue(), 2u) << "the asked spacing, not the adapter's 4";
    EXPECT_EQ((*a)->shard(1).tx_queue(), 2u);

    c.port = ports->second;
    c.ipv4_cidr = "10.77.0.2/24";
    c.mac = "02:00:00:00:01:02";
    c.queue_stride = 8; /* worker 1 on queue 8: the pair has 5 */
    auto refused = (*rt)->open_device(c);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.status().code(), EINVAL);
    EXPECT_NE(refused.status().message().find("needs 9 queues for 2 workers; the port has 5"),
              std::string::npos)
        << refused.status().message();
    c.queue_stride = 65;
    auto range = (*rt)->open_device(c);
    ASSERT_FALSE(range);
    EXPECT_NE(range.status().message().find("queue_stride must be 0..64"), std::string::npos)
        << range.status().message();
    c.queue_stride = 1;
    auto b = (*rt)->open_device(c);
    ASSERT_TRUE(b) << b.status().message();
    EXPECT_EQ((*b)->shard(1).rx_queue(), 1u) << "neighbours, as asked";
    rt->reset();
}

} // namespace

/* droce sending PFC (DeviceConfig::pfc_tx_xoff): net_ring has no rx_queue_count, so the
 * level is the fill of the burst just read. */
class PfcTx : public Pfc {
  protected:
    void configure(DeviceConfig &c) override {
        c.pfc_priority = 3;
        c.pfc_tx_xoff = 16;
        c.pfc_tx_xon = 4;
    }
    /* n frames the engine drops at once (an EtherType it does not serve) */
    void inject_junk(int n) {
        std::vector<uint8_t> f(60, 0);
        std::memcpy(f.data(), dev->iface().mac.data(), 6);
        std::memcpy(f.data() + 6, kPeerMac.data(), 6);
        f[12] = 0x88;
        f[13] = 0xB5; /* IEEE local experimental */
        for (int i = 0; i < n; ++i)
            ASSERT_NO_FATAL_FAILURE(inject(f));
    }
    /* The frames the device sent since the last call, whole. */
    std::vector<std::vector<uint8_t>> frames() {
        std::vector<std::vector<uint8_t>> out;
        rte_mbuf *m[32];
        uint16_t n;
        while ((n = rte_eth_rx_burst(peer, 0, m, 32)) != 0)
            for (uint16_t i = 0; i < n; ++i) {
                const auto *p = rte_pktmbuf_mtod(m[i], const uint8_t *);
                out.emplace_back(p, p + m[i]->data_len);
                rte_pktmbuf_free(m[i]);
            }
        return out;
    }
    /* f is a 60-byte 802.1Qbb frame from the device pausing priority 3 for `quanta` */
    void expect_pfc(const std::vector<uint8_t> &f, uint16_t quanta) {
        ASSERT_EQ(f.size(), 60u);
        const uint8_t dst[6] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
        EXPECT_EQ(std::memcmp(f.data(), dst, 6), 0);
        EXPECT_EQ(std::memcmp(f.data() + 6, dev->iface().mac.data(), 6), 0);
        EXPECT_EQ(f[12], 0x88);
        EXPECT_EQ(f[13], 0x08);
        EXPECT_EQ(f[14], 0x01) << "opcode 0x0101";
        EXPECT_EQ(f[15], 0x01);
        EXPECT_EQ(f[16], 0x00) << "class-enable vector: priority 3 only";
        EXPECT_EQ(f[17], 0x08);
        for (unsigned p = 0; p < 8; ++p) {
            const unsigned q = static_cast<unsigned>(f[18 + 2 * p] << 8 | f[19 + 2 * p]);
            EXPECT_EQ(q, p == 3 ? quanta : 0u) << "pause time of priority " << p;
        }
        for (size_t i = 34; i < 60; ++i)
            EXPECT_EQ(f[i], 0) << "padding byte " << i;
    }
};

TEST_F(PfcTx, RxQueueAtXoffSendsPauseRefreshesAndResumesAtXon) {
    const uint64_t refresh = net::pfc_pause_ns(0xFFFF, dev->line_rate_bps()) / 2;
    EXPECT_NE(dev->pfc().status.find("droce sends PFC for priority 3"), std::string::npos)
        << dev->pfc().status;
    /* net_ring has neither DPDK PFC API: the status says so, naming both */
    EXPECT_NE(dev->pfc().status.find("implements neither rte_eth_dev_priority_flow_ctrl_set "
                                     "nor the queue-based"),
              std::string::npos)
        << dev->pfc().status;
    ASSERT_NO_FATAL_FAILURE(inject_junk(15));
    poll_at(kT0);
    EXPECT_TRUE(frames().empty()) << "15 frames: below XOFF (16)";
    ASSERT_NO_FATAL_FAILURE(inject_junk(16));
    poll_at(kT0 + 1000);
    auto f = frames();
    ASSERT_EQ(f.size(), 1u) << "16 frames in the burst: XOFF";
    expect_pfc(f[0], 0xFFFF);
    /* between XON and XOFF: the pause stands, nothing new until the refresh is due */
    ASSERT_NO_FATAL_FAILURE(inject_junk(10));
    poll_at(kT0 + 2000);
    EXPECT_TRUE(frames().empty());
    ASSERT_NO_FATAL_FAILURE(inject_junk(10));
    poll_at(kT0 + 1000 + refresh);
    f = frames();
    ASSERT_EQ(f.size(), 1u) << "refreshed at half the pause time";
    expect_pfc(f[0], 0xFFFF);
    /* down to XON: quanta 0 */
    ASSERT_NO_FATAL_FAILURE(inject_junk(4));
    poll_at(kT0 + 1000 + refresh + 5000);
    f = frames();
    ASSERT_EQ(f.size(), 1u) << "4 frames: at XON, resume";
    expect_pfc(f[0], 0);
    poll_at(kT0 + 1000 + refresh + 6000);
    EXPECT_TRUE(frames().empty()) << "resumed once";
    EXPECT_EQ(counter("tx_prio3_pause"), 3u);
    EXPECT_EQ(counter("tx_prio0_pause"), 0u);
    EXPECT_EQ(counter("tx_prio3_pause_duration"), (refresh + 5000) / 1000);
    EXPECT_EQ(counter("tx_pfc_nombuf"), 0u);
}

TEST_F(PfcTx, OpenRefusesXonNotBelowXoffAndNoPriority) {
    auto ports = rt_->create_ring_pair();
    ASSERT_TRUE(ports);
    DeviceConfig c;
    c.port = ports->first;
    c.ipv4_cidr = "10.77.0.2/24";
    c.mac = "02:00:00:00:01:02";
    c.pfc_tx_xoff = 16;
    c.pfc_tx_xon = 4;
    auto d = rt_->open_device(c);
    ASSERT_FALSE(d);
    EXPECT_NE(d.status().message().find("needs pfc_priority"), std::string::npos);
    c.pfc_priority = 3;
    c.pfc_tx_xon = 16;
    d = rt_->open_device(c);
    ASSERT_FALSE(d);
    EXPECT_NE(d.status().message().find("below pfc_tx_xoff"), std::string::npos);
}
