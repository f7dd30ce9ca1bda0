/* SPDX-License-Identifier: BSD-3-Clause */
/* A VLAN per GID (DeviceConfig::ipv6_cidrs "ADDR/P@VID"): two droce devices whose IPv4 GID
 * is on the port's VLAN 100 and whose IPv6 GID is on VLAN 200, joined through a relay the
 * test runs (A <-ring-> X | test | Y <-ring-> B) so that every frame is seen raw. RC over
 * each GID (and the RoCEv1 twin of the IPv6 one) carries its GID's tag with PCP = SL;
 * ARP/ND go out and are answered per VLAN; a frame for a GID on another VLAN than the
 * GID's is a counted drop, not delivered. */
#include <gtest/gtest.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

#include <droce/droce.h>

#include "engine_test_util.h"
#include "net_ipv6.h"
#include "wire_packet.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Engine> make_engine() {
    return droce::test::make_test_engine("test_engine_gid_vlan",
                                         droce::test::embedded_test_options());
}
using droce::test::counter_map;
using Side = droce::test::RcSide;
using droce::test::rc_to_rts;

constexpr uint16_t kPortVid = 100; /* GIDs 0 and 1 (link-local, IPv4) */
constexpr uint16_t kGidVid = 200;  /* GID 2 (the IPv6 address) and its RoCEv1 twin, GID 5 */

uint16_t be16(const uint8_t *p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

/* A relayed frame: its bytes and which way it went. */
struct Seen {
    bool a_to_b;
    std::vector<uint8_t> bytes;
    bool tagged() const { return bytes.size() >= 18 && be16(bytes.data() + 12) == 0x8100; }
    uint16_t vid() const { return tagged() ? be16(bytes.data() + 14) & 0xFFF : 0; }
    uint8_t pcp() const { return tagged() ? bytes[14] >> 5 : 0; }
    /* The ethertype inside the tag. */
    uint16_t ethertype() const { return be16(bytes.data() + (tagged() ? 16 : 12)); }
    bool roce() const {
        wire::ParsedPacket p;
        return wire::parse_frame(bytes.data(), bytes.size(), p, true) == wire::ParseResult::Ok;
    }
};

} // namespace

class GidVlan : public ::testing::Test {
  protected:
    void SetUp() override {
        engine = make_engine();
        ASSERT_TRUE(engine);
        auto p1 = engine->create_ring_pair();
        auto p2 = engine->create_ring_pair();
        ASSERT_TRUE(p1 && p2);
        DeviceConfig ca;
        ca.port = p1->first;
        ca.ipv4_cidr = "10.77.0.1/24";
        ca.ipv6_cidrs = {"fd77:20::1/64@" + std::to_string(kGidVid)};
        ca.mac = "02:00:00:00:01:01";
        ca.vlan = kPortVid;
        ca.rocev1_gids = true;
        DeviceConfig cb = ca;
        cb.port = p2->second;
        cb.ipv4_cidr = "10.77.0.2/24";
        cb.ipv6_cidrs = {"fd77:20::2/64@" + std::to_string(kGidVid)};
        cb.mac = "02:00:00:00:01:02";
        auto da = engine->open_device(ca);
        ASSERT_TRUE(da) << da.status().message();
        auto db = engine->open_device(cb);
        ASSERT_TRUE(db) << db.status().message();
        dev_a = *da;
        dev_b = *db;
        pool = rte_pktmbuf_pool_create("gid_vlan_relay", 511, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                       SOCKET_ID_ANY);
        ASSERT_NE(pool, nullptr);
        ASSERT_EQ(rte_eth_dev_get_port_by_name(p1->second.c_str(), &x), 0);
        ASSERT_EQ(rte_eth_dev_get_port_by_name(p2->first.c_str(), &y), 0);
        for (uint16_t port : {x, y}) {
            rte_eth_conf conf{};
            ASSERT_EQ(rte_eth_dev_configure(port, 1, 1, &conf), 0);
            ASSERT_EQ(rte_eth_rx_queue_setup(port, 0, 256, SOCKET_ID_ANY, nullptr, pool), 0);
            ASSERT_EQ(rte_eth_tx_queue_setup(port, 0, 256, SOCKET_ID_ANY, nullptr), 0);
            ASSERT_EQ(rte_eth_dev_start(port), 0);
        }
        started = true;
    }
    void TearDown() override {
        a.reset();
        b.reset();
        if (started)
            for (uint16_t port : {x, y}) {
                rte_eth_dev_stop(port);
                rte_eth_dev_close(port);
            }
        engine.reset();
        rte_mempool_free(pool);
    }
    /* One engine iteration, then every frame each side sent is recorded and passed on. */
    void pump() {
        engine->poll();
        relay_only();
    }
    /* A raw frame into B, as if from the wire. */
    void inject_to_b(const std::vector<uint8_t> &f) {
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        ASSERT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
        ASSERT_EQ(rte_eth_tx_burst(y, 0, &m, 1), 1);
        for (int i = 0; i < 3; ++i)
            pump();
    }
    /* A and B connected on GID gidx with SL sl; one 3000-byte SEND A -> B. */
    void connect_and_send(uint8_t gidx, uint8_t sl) {
        a.reset();
        b.reset();
        a.init(dev_a);
        b.init(dev_b);
        const auto ga = dev_a->gids(), gb = dev_b->gids();
        ASSERT_GT(ga.size(), gidx);
        AhAttr ah;
        ah.sgid_index = gidx;
        ah.sl = sl;
        ah.dgid = gb[gidx].gid;
        /* modify QP waits for ARP / ND while polling the engine itself: the relay runs
         * beside it on this test's thread meanwhile. */
        Status s = with_relay([&] { return rc_to_rts(*a.qp, ah, b.qp->qp_num()); });
        ASSERT_TRUE(s) << s.message();
        ah.dgid = ga[gidx].gid;
        s = with_relay([&] { return rc_to_rts(*b.qp, ah, a.qp->qp_num()); });
        ASSERT_TRUE(s) << s.message();
        RecvWr r;
        r.wr_id = 9;
        r.sg_list[0] = Sge{reinterpret_cast<uint64_t>(b.buf.data()), 4096, b.mr->lkey()};
        r.num_sge = 1;
        ASSERT_TRUE(b.qp->post_recv(r));
        for (uint32_t i = 0; i < 3000; ++i)
            a.buf[i] = static_cast<uint8_t>(i * 7 + gidx);
        SendWr w;
        w.wr_id = 7;
        w.opcode = WrOpcode::Send;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(a.buf.data()), 3000, a.mr->lkey()};
        w.num_sge = 1;
        ASSERT_TRUE(a.qp->post_send(w));
        Wc wc{};
        int got = 0;
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (got < 2 && std::chrono::steady_clock::now() < deadline) {
            pump();
            if (a.scq->poll(&wc, 1) == 1) {
                EXPECT_EQ(wc.status, WcStatus::Success);
                ++got;
            }
            if (b.rcq->poll(&wc, 1) == 1) {
                EXPECT_EQ(wc.status, WcStatus::Success);
                EXPECT_EQ(wc.byte_len, 3000u);
                ++got;
            }
        }
        ASSERT_EQ(got, 2);
        EXPECT_EQ(std::memcmp(a.buf.data(), b.buf.data(), 3000), 0);
    }
    template <class F> Status with_relay(F &&f) {
        std::atomic<bool> stop{false};
        std::thread relay([&] {
            while (!stop.load())
                relay_only();
        });
        Status s = f();
        stop = true;
        relay.join();
        return s;
    }
    /* The relay alone (the engine is polled by modify QP's wait loop meanwhile). */
    void relay_only() {
        for (const bool a_to_b : {true, false}) {
            rte_mbuf *m[32];
            const uint16_t n = rte_eth_rx_burst(a_to_b ? x : y, 0, m, 32);
            if (n == 0)
                continue;
            {
                std::lock_guard<std::mutex> lk(seen_mu);
                for (uint16_t i = 0; i < n; ++i) {
                    /* Data frames may be chains (headers + the registered payload). */
                    std::vector<uint8_t> f(rte_pktmbuf_pkt_len(m[i]));
                    const void *p = rte_pktmbuf_read(m[i], 0, f.size(), f.data());
                    if (p != f.data())
                        std::memcpy(f.data(), p, f.size());
                    seen.push_back({a_to_b, std::move(f)});
                }
            }
            const uint16_t sent = rte_eth_tx_burst(a_to_b ? y : x, 0, m, n);
            for (uint16_t i = sent; i < n; ++i)
                rte_pktmbuf_free(m[i]);
        }
    }
    std::unique_ptr<Engine> engine;
    Device *dev_a = nullptr, *dev_b = nullptr;
    uint16_t x = 0, y = 0;
    rte_mempool *pool = nullptr;
    bool started = false;
    std::vector<Seen> seen;
    std::mutex seen_mu;
    Side a, b;
};

TEST_F(GidVlan, EachGidCarriesItsVlan) {
    const auto g = dev_a->gids();
    ASSERT_EQ(g.size(), 6u); /* link-local, IPv4, IPv6; their RoCEv1 twins */
    const uint16_t want[6] = {kPortVid, kPortVid, kGidVid, kPortVid, kPortVid, kGidVid};
    for (size_t i = 0; i < g.size(); ++i)
        EXPECT_EQ(g[i].vlan, want[i]) << "GID " << i;
}

TEST_F(GidVlan, RcFramesCarryTheTagOfTheirSgid) {
    struct Case {
        uint8_t gidx, sl;
        uint16_t vid, ethertype, resolver; /* resolver: ARP or IPv6 (ND) */
    };
    const Case cases[] = {
        {1, 3, kPortVid, 0x0800, 0x0806}, /* IPv4 GID: the port's VLAN */
        {2, 5, kGidVid, 0x86DD, 0x86DD},  /* IPv6 GID: its own */
        {5, 6, kGidVid, 0x8915, 0x86DD},  /* its RoCEv1 twin: the same VLAN */
    };
    for (const Case &c : cases) {
        SCOPED_TRACE("GID " + std::to_string(c.gidx));
        seen.clear();
        const uint64_t v1_before = counter_map(*dev_b).at("rx_rocev1_packets");
        connect_and_send(c.gidx, c.sl);
        /* RoCEv1 frames are counted as such (3 data frames to B), v2 ones not. */
        const uint64_t v1 = counter_map(*dev_b).at("rx_rocev1_packets") - v1_before;
        if (c.ethertype == 0x8915) {
            EXPECT_EQ(v1, 3u);
        } else {
            EXPECT_EQ(v1, 0u);
        }
        size_t roce = 0, resolve = 0;
        for (const Seen &s : seen) {
            if (s.roce()) {
                ++roce;
                EXPECT_TRUE(s.tagged());
                EXPECT_EQ(s.vid(), c.vid);
                EXPECT_EQ(s.pcp(), c.sl);
                EXPECT_EQ(s.ethertype(), c.ethertype);
            } else if (s.ethertype() == c.resolver) {
                ++resolve; /* ARP / NS / NA: on the GID's VLAN, priority 0 */
                EXPECT_EQ(s.vid(), c.vid);
            }
        }
        EXPECT_GE(roce, 4u); /* 3 data frames, at least one ACK */
        if (c.gidx != 5) {   /* the twin's peer is resolved already */
            EXPECT_GE(resolve, 2u);
        }
    }
    for (Device *d : {dev_a, dev_b}) {
        const auto m = counter_map(*d);
        EXPECT_EQ(m.at("rx_drop_vlan_mismatch"), 0u) << d->name();
        EXPECT_EQ(m.at("icmp6_drop_wrong_vlan"), 0u) << d->name();
        EXPECT_EQ(m.at("retransmitted_packets"), 0u) << d->name();
    }
}

/* A frame for a GID on another VLAN than the GID's is dropped and counted (the QP sees
 * nothing); ARP / ND for an address on the wrong VLAN is not answered. */
TEST_F(GidVlan, FramesOnAnotherVlanThanTheirGidsAreCountedDrops) {
    connect_and_send(2, 0);
    std::vector<uint8_t> v6;
    for (const Seen &s : seen)
        if (s.a_to_b && s.roce() && s.ethertype() == 0x86DD)
            v6 = s.bytes;
    ASSERT_FALSE(v6.empty());
    const auto before = counter_map(*dev_b);
    /* Retagged to the port's VLAN (a VLAN of ours, but not this GID's), then to one of
     * no GID, then untagged. */
    auto f = v6;
    f[14] = 0;
    f[15] = kPortVid;
    inject_to_b(f);
    f[14] = 0x01;
    f[15] = 0x2c; /* 300 */
    inject_to_b(f);
    auto untagged = v6;
    untagged.erase(untagged.begin() + 12, untagged.begin() + 16);
    inject_to_b(untagged);
    auto after = counter_map(*dev_b);
    EXPECT_EQ(after.at("rx_drop_vlan_mismatch") - before.at("rx_drop_vlan_mismatch"), 3u);
    EXPECT_EQ(after.at("rx_drop_not_our_ip"), before.at("rx_drop_not_our_ip"));
    /* Nothing reached the QP: no duplicate seen, no ACK sent. */
    EXPECT_EQ(after.at("duplicate_request"), before.at("duplicate_request"));

    /* ND for B's fd77:20::2 on the port's VLAN: not answered, counted. */
    net::Iface6 peer = net::make_iface6({0x02, 0, 0, 0, 0x01, 0x09});
    net::Ip6 pa, target;
    ASSERT_TRUE(net::parse_ipv6("fd77:20::9", &pa));
    ASSERT_TRUE(net::parse_ipv6("fd77:20::2", &target));
    peer.add(pa, 64);
    peer.vlan_tci = kPortVid;
    uint8_t ns[128];
    size_t n = net::build_ns(peer, target.data(), ns, sizeof ns);
    seen.clear();
    inject_to_b(std::vector<uint8_t>(ns, ns + n));
    /* ... and on its own VLAN: answered there. */
    peer.vlan_tci = kGidVid;
    n = net::build_ns(peer, target.data(), ns, sizeof ns);
    inject_to_b(std::vector<uint8_t>(ns, ns + n));
    size_t adverts = 0;
    for (const Seen &s : seen)
        if (!s.a_to_b && s.ethertype() == 0x86DD) {
            ++adverts;
            EXPECT_EQ(s.vid(), kGidVid);
        }
    EXPECT_EQ(adverts, 1u);
    /* ARP for B's IPv4 address on the IPv6 GID's VLAN: not answered. */
    net::Iface arp_peer;
    arp_peer.ip = 0x0A4D0009;
    arp_peer.prefix_len = 24;
    arp_peer.mac = {0x02, 0, 0, 0, 0x01, 0x09};
    uint8_t arp[128];
    n = net::build_arp_request(arp_peer, 0x0A4D0002, arp, sizeof arp);
    n = net::vlan_push(arp, n, sizeof arp, kGidVid);
    seen.clear();
    inject_to_b(std::vector<uint8_t>(arp, arp + n));
    for (const Seen &s : seen)
        EXPECT_TRUE(s.a_to_b) << "B answered an ARP request on VLAN " << kGidVid;
    after = counter_map(*dev_b);
    EXPECT_EQ(after.at("icmp6_drop_wrong_vlan") - before.at("icmp6_drop_wrong_vlan"), 1u);
    EXPECT_EQ(after.at("rx_drop_vlan_mismatch") - before.at("rx_drop_vlan_mismatch"), 4u);
}

/* UD SEND over the RoCEv1 twin of the IPv4 GID (4): 0x8915 frames on the port's VLAN,
 * PCP = SL; the receive reports the GRH (40 bytes, version 6, next header 0x1B, A's GID
 * as source) before the payload. */
TEST_F(GidVlan, UdSendOverRoceV1GidReportsTheGrh) {
    constexpr uint32_t kQkey = 0x11111111;
    struct Ud {
        std::unique_ptr<ProtectionDomain> pd;
        std::unique_ptr<CompletionQueue> cq;
        std::vector<uint8_t> buf = std::vector<uint8_t>(4096);
        std::unique_ptr<MemoryRegion> mr;
        std::unique_ptr<QueuePair> qp;
        std::unique_ptr<AddressHandle> ah;
    } ua, ub;
    for (auto [u, d] : {std::pair{&ua, dev_a}, std::pair{&ub, dev_b}}) {
        u->pd = std::move(*d->alloc_pd());
        u->cq = std::move(*d->create_cq(64));
        u->mr = std::move(*u->pd->reg_mr(u->buf.data(), u->buf.size(), kAccessLocalWrite));
        QpInitAttr ia;
        ia.qp_type = QpType::Ud;
        ia.send_cq = ia.recv_cq = u->cq.get();
        auto q = u->pd->create_qp(ia);
        ASSERT_TRUE(q) << q.status().message();
        u->qp = std::move(*q);
        QpAttr at;
        at.qp_state = QpState::Init;
        at.qkey = kQkey;
        ASSERT_TRUE(u->qp->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpQkey));
        at.qp_state = QpState::Rtr;
        ASSERT_TRUE(u->qp->modify(at, kQpState));
        at.qp_state = QpState::Rts;
        ASSERT_TRUE(u->qp->modify(at, kQpState | kQpSqPsn));
    }
    AhAttr ah;
    ah.sgid_index = 4;
    ah.sl = 2;
    ah.dgid = dev_b->gids()[4].gid;
    Result<std::unique_ptr<AddressHandle>> r = Status(EINVAL, "not tried");
    Status st = with_relay([&] {
        r = ua.pd->create_ah(ah);
        return r ? Status{} : r.status();
    });
    ASSERT_TRUE(st) << st.message();
    ua.ah = std::move(*r);
    RecvWr rw;
    rw.wr_id = 1;
    rw.sg_list[0] = Sge{reinterpret_cast<uint64_t>(ub.buf.data()), 2048, ub.mr->lkey()};
    rw.num_sge = 1;
    ASSERT_TRUE(ub.qp->post_recv(rw));
    for (uint32_t i = 0; i < 500; ++i)
        ua.buf[i] = static_cast<uint8_t>(i * 3 + 1);
    SendWr w;
    w.wr_id = 2;
    w.opcode = WrOpcode::Send;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(ua.buf.data()), 500, ua.mr->lkey()};
    w.num_sge = 1;
    w.ah = ua.ah.get();
    w.remote_qpn = ub.qp->qp_num();
    w.remote_qkey = kQkey;
    seen.clear();
    const uint64_t v1_before = counter_map(*dev_b).at("rx_rocev1_packets");
    ASSERT_TRUE(ua.qp->post_send(w));
    Wc wc{};
    int got = 0;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (got < 2 && std::chrono::steady_clock::now() < deadline) {
        pump();
        if (ua.cq->poll(&wc, 1) == 1) {
            EXPECT_EQ(wc.status, WcStatus::Success);
            ++got;
        }
    }
    ASSERT_EQ(got, 1);
    for (int i = 0; i < 100 && ub.cq->poll(&wc, 1) == 0; ++i)
        pump();
    ASSERT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.byte_len, 40u + 500u);
    EXPECT_TRUE(wc.wc_flags & kWcGrh);
    EXPECT_EQ(wc.src_qp, ua.qp->qp_num());
    const uint8_t *grh = ub.buf.data();
    EXPECT_EQ(grh[0] >> 4, 6);
    EXPECT_EQ(grh[6], 0x1B); /* next header: BTH */
    EXPECT_EQ(std::memcmp(grh + 8, dev_a->gids()[4].gid.raw, 16), 0);
    EXPECT_EQ(std::memcmp(grh + 24, dev_b->gids()[4].gid.raw, 16), 0);
    EXPECT_EQ(std::memcmp(grh + 40, ua.buf.data(), 500), 0);
    EXPECT_EQ(counter_map(*dev_b).at("rx_rocev1_packets") - v1_before, 1u);
    size_t frames = 0;
    for (const Seen &s : seen)
        if (s.a_to_b && s.roce()) {
            ++frames;
            EXPECT_EQ(s.ethertype(), 0x8915);
            EXPECT_EQ(s.vid(), kPortVid);
            EXPECT_EQ(s.pcp(), 2);
        }
    EXPECT_EQ(frames, 1u);
    ua.ah.reset();
    for (Ud *u : {&ua, &ub}) {
        u->qp.reset();
        u->mr.reset();
        u->cq.reset();
        u->pd.reset();
    }
}

TEST(GidVlanConfig, BadVlanSuffixIsRefusedNamingIt) {
    auto engine = make_engine();
    ASSERT_TRUE(engine);
    for (const char *bad : {"fd77::1/64@4095", "fd77::1/64@", "fd77::1/64@x1"}) {
        auto pp = engine->create_ring_pair();
        ASSERT_TRUE(pp);
        DeviceConfig d;
        d.port = pp->first;
        d.ipv4_cidr = "10.77.0.1/24";
        d.ipv6_cidrs = {bad};
        auto r = engine->open_device(d);
        ASSERT_FALSE(r) << bad;
        EXPECT_EQ(r.status().code(), EINVAL);
        EXPECT_NE(r.status().message().find("bad VLAN"), std::string::npos) << r.status().message();
    }
}

/* The fuzz seed of a RoCEv1 frame (tests/fuzz/seeds, taken from a droce-pingpong
 * --gid-type v1 capture) is a whole, valid one: parse_frame accepts it with its ICRC. */
TEST(FuzzSeeds, RoceV1SeedIsAValidRoceV1Frame) {
    std::ifstream in(DROCE_FUZZ_SEEDS_DIR "/rocev1_rc_send_only", std::ios::binary);
    ASSERT_TRUE(in) << DROCE_FUZZ_SEEDS_DIR "/rocev1_rc_send_only";
    const std::vector<uint8_t> f((std::istreambuf_iterator<char>(in)),
                                 std::istreambuf_iterator<char>());
    wire::ParsedPacket p;
    ASSERT_EQ(wire::parse_frame(f.data(), f.size(), p, true), wire::ParseResult::Ok);
    EXPECT_TRUE(p.rocev1);
    EXPECT_EQ(p.eth.ethertype, 0x8915);
    EXPECT_EQ(p.bth.opcode, 0x04); /* RC SEND_ONLY */
}
