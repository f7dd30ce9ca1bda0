/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's IP and L2 policy over net_ring: RC between two droce devices over IPv6
 * GIDs (global and link-local) on a VLAN, and one device against a raw port the test
 * drives — ND answered and learned, ICMPv6 echo, VLAN accepted / mismatches counted,
 * PCP = SL & 7, forced traffic class / hop limit, the UDP source port rxe derives for
 * IPv6, and peers off-subnet reached through the gateway's MAC (IPv4 and IPv6). */
#include <gtest/gtest.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include <droce/droce.h>

#include "engine_test_util.h"
#include "net_ipv6.h"
#include "wire_packet.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Engine> make_engine() {
    return droce::test::make_test_engine("test_engine_l3", droce::test::embedded_test_options());
}
using droce::test::counter_map;
using Side = droce::test::RcSide;
using droce::test::rc_to_rts;

Gid gid6(const char *s) {
    Gid g{};
    net::Ip6 a;
    EXPECT_TRUE(net::parse_ipv6(s, &a));
    std::memcpy(g.raw, a.data(), 16);
    return g;
}

SendWr send_wr(Side &s, uint32_t len) {
    SendWr w;
    w.wr_id = 7;
    w.opcode = WrOpcode::Send;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(s.buf.data()), len, s.mr->lkey()};
    w.num_sge = 1;
    return w;
}

} // namespace

/* ---- two droce devices ---- */

class L3E2E : public ::testing::Test {
  protected:
    void open(uint16_t vlan) {
        engine = make_engine();
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports);
        DeviceConfig ca;
        ca.port = ports->first;
        ca.ipv4_cidr = "10.77.0.1/24";
        ca.ipv6_cidrs = {"fd77:20::1/64"};
        ca.mac = "02:00:00:00:01:01";
        ca.vlan = vlan;
        DeviceConfig cb = ca;
        cb.port = ports->second;
        cb.ipv4_cidr = "10.77.0.2/24";
        cb.ipv6_cidrs = {"fd77:20::2/64"};
        cb.mac = "02:00:00:00:01:02";
        auto da = engine->open_device(ca);
        ASSERT_TRUE(da) << da.status().message();
        auto db = engine->open_device(cb);
        ASSERT_TRUE(db) << db.status().message();
        dev_a = *da;
        dev_b = *db;
    }
    void TearDown() override {
        a.reset();
        b.reset();
        engine.reset();
    }
    /* A and B connected on GID index gidx of each; one 3000-byte SEND A -> B. */
    void connect_and_send(uint8_t gidx) {
        a.init(dev_a);
        b.init(dev_b);
        const auto ga = dev_a->gids(), gb = dev_b->gids();
        ASSERT_GT(ga.size(), gidx);
        AhAttr ah;
        ah.sgid_index = gidx;
        ah.sl = 3;
        ah.dgid = gb[gidx].gid;
        Status s = rc_to_rts(*a.qp, ah, b.qp->qp_num());
        ASSERT_TRUE(s) << s.message();
        ah.dgid = ga[gidx].gid;
        s = rc_to_rts(*b.qp, ah, a.qp->qp_num());
        ASSERT_TRUE(s) << s.message();
        RecvWr r;
        r.wr_id = 9;
        r.sg_list[0] = Sge{reinterpret_cast<uint64_t>(b.buf.data()), 4096, b.mr->lkey()};
        r.num_sge = 1;
        ASSERT_TRUE(b.qp->post_recv(r));
        for (uint32_t i = 0; i < 3000; ++i)
            a.buf[i] = static_cast<uint8_t>(i * 13);
        ASSERT_TRUE(a.qp->post_send(send_wr(a, 3000)));
        Wc wc{};
        int got = 0;
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (got < 2 && std::chrono::steady_clock::now() < deadline) {
            engine->poll();
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
    void expect_no_drops(const Device &d) {
        for (const auto &[k, v] : counter_map(d))
            if (k.rfind("rx_drop_", 0) == 0 || k.rfind("icmp6_drop", 0) == 0 ||
                k.rfind("nd_drop", 0) == 0 || k == "retransmitted_packets") {
                EXPECT_EQ(v, 0u) << d.name() << " " << k;
            }
    }
    std::unique_ptr<Engine> engine;
    Device *dev_a = nullptr, *dev_b = nullptr;
    Side a, b;
};

TEST_F(L3E2E, RcOverIpv6GlobalGidOnVlan) {
    open(100);
    const auto g = dev_a->gids();
    ASSERT_EQ(g.size(), 3u); /* link-local, IPv4, IPv6 */
    EXPECT_EQ(std::memcmp(g[2].gid.raw, gid6("fd77:20::1").raw, 16), 0);
    connect_and_send(2);
    const auto ca = counter_map(*dev_a), cb = counter_map(*dev_b);
    EXPECT_GE(ca.at("nd_solicits_sent"), 1u);
    EXPECT_GE(ca.at("nd_adverts_received"), 1u);
    EXPECT_GE(cb.at("nd_adverts_sent"), 1u);
    expect_no_drops(*dev_a);
    expect_no_drops(*dev_b);
}

TEST_F(L3E2E, RcOverLinkLocalGid) {
    open(0);
    connect_and_send(0);
    expect_no_drops(*dev_a);
    expect_no_drops(*dev_b);
}

TEST_F(L3E2E, RcOverIpv4StillWorksBesideIpv6) {
    open(0);
    connect_and_send(1);
    EXPECT_EQ(counter_map(*dev_a).at("nd_solicits_sent"), 0u);
    expect_no_drops(*dev_a);
}

/* UD over the IPv6 GID on the VLAN: the address handle resolves the peer by Neighbour
 * Discovery and its frames carry the port's tag (an untagged one would be a counted
 * rx_drop_vlan_mismatch on the peer). What the CM's QP1 sends over IPv6 rides on this. */
TEST_F(L3E2E, UdOverIpv6GlobalGidOnVlan) {
    open(100);
    Side *sides[] = {&a, &b};
    Device *devs[] = {dev_a, dev_b};
    std::unique_ptr<AddressHandle> ah;
    for (int i = 0; i < 2; ++i) {
        Side &s = *sides[i];
        s.pd = std::move(*devs[i]->alloc_pd());
        s.scq = std::move(*devs[i]->create_cq(64));
        s.rcq = std::move(*devs[i]->create_cq(64));
        s.buf.assign(8192, 0);
        s.mr = std::move(*s.pd->reg_mr(s.buf.data(), s.buf.size(), kAccessLocalWrite));
        QpInitAttr ia;
        ia.qp_type = QpType::Ud;
        ia.send_cq = s.scq.get();
        ia.recv_cq = s.rcq.get();
        auto q = s.pd->create_qp(ia);
        ASSERT_TRUE(q) << q.status().message();
        s.qp = std::move(*q);
        QpAttr at;
        at.qp_state = QpState::Init;
        at.qkey = 0x1111;
        ASSERT_TRUE(s.qp->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpQkey));
        at.qp_state = QpState::Rtr;
        ASSERT_TRUE(s.qp->modify(at, kQpState));
        at.qp_state = QpState::Rts;
        ASSERT_TRUE(s.qp->modify(at, kQpState | kQpSqPsn));
    }
    AhAttr aa;
    aa.dgid = dev_b->gids().at(2).gid;
    aa.sgid_index = 2;
    aa.sl = 3;
    auto r = a.pd->create_ah(aa);
    ASSERT_TRUE(r) << r.status().message();
    ah = std::move(*r);
    RecvWr rw;
    rw.sg_list[0] = Sge{reinterpret_cast<uint64_t>(b.buf.data()), 4096, b.mr->lkey()};
    rw.num_sge = 1;
    ASSERT_TRUE(b.qp->post_recv(rw));
    std::memcpy(a.buf.data(), "datagram over IPv6", 19);
    SendWr sw;
    sw.opcode = WrOpcode::Send;
    sw.send_flags = kSendSignaled;
    sw.sg_list[0] = Sge{reinterpret_cast<uint64_t>(a.buf.data()), 19, a.mr->lkey()};
    sw.num_sge = 1;
    sw.ah = ah.get();
    sw.remote_qpn = b.qp->qp_num();
    sw.remote_qkey = 0x1111;
    ASSERT_TRUE(a.qp->post_send(sw));
    Wc wc{};
    bool got = false;
    for (auto end = std::chrono::steady_clock::now() + 5s;
         !got && std::chrono::steady_clock::now() < end;) {
        engine->poll();
        got = b.rcq->poll(&wc, 1) == 1;
    }
    ASSERT_TRUE(got);
    EXPECT_EQ(wc.status, WcStatus::Success);
    ASSERT_EQ(wc.byte_len, 40u + 19u); /* the GRH in front, as verbs gives it */
    EXPECT_EQ(b.buf[0] >> 4, 6);       /* an IPv6 header: the datagram came over IPv6 */
    EXPECT_STREQ(reinterpret_cast<const char *>(b.buf.data() + 40), "datagram over IPv6");
    ah.reset();
    expect_no_drops(*dev_b);
}

TEST(L3Config, BadValuesAreRefusedWithTheValueNamed) {
    auto engine = make_engine();
    ASSERT_TRUE(engine);
    DeviceConfig c;
    c.ipv4_cidr = "10.77.0.1/24";
    c.mac = "02:00:00:00:01:01";
    const std::pair<std::function<void(DeviceConfig &)>, const char *> cases[] = {
        {[](DeviceConfig &d) { d.ipv6_cidrs = {"fd77::1"}; }, "prefix length"},
        {[](DeviceConfig &d) { d.ipv6_cidrs = {"fe80::5/64"}; }, "link-local"},
        {[](DeviceConfig &d) {
             d.ipv6_cidrs = {"fd77::1/64", "fd77::1/64"};
         },
         "repeated"},
        {[](DeviceConfig &d) { d.vlan = 4095; }, "VLAN 4095"},
        {[](DeviceConfig &d) { d.gateway = "10.78.0.1"; }, "gateway 10.78.0.1 is not on"},
        {[](DeviceConfig &d) {
             d.ipv6_cidrs = {"fd77::1/64"};
             d.gateway6 = "fd78::1";
         },
         "not on any of our IPv6 prefixes"},
        {[](DeviceConfig &d) { d.force_tclass = 256; }, "force_tclass 256"},
        {[](DeviceConfig &d) { d.force_hop_limit = 0; }, "force_hop_limit 0"},
    };
    for (const auto &[set, want] : cases) {
        /* A refused open releases its port: a fresh pair each time. */
        auto pp = engine->create_ring_pair();
        ASSERT_TRUE(pp);
        DeviceConfig d = c;
        d.port = pp->first;
        set(d);
        auto r = engine->open_device(d);
        ASSERT_FALSE(r) << want;
        EXPECT_EQ(r.status().code(), EINVAL);
        EXPECT_NE(r.status().message().find(want), std::string::npos) << r.status().message();
    }
}

/* ---- one device against a raw port ---- */

namespace {
constexpr net::Mac kDevMac = {0x02, 0, 0, 0, 0x01, 0x01};
constexpr net::Mac kPeerMac = {0x02, 0, 0, 0, 0x01, 0x09};
constexpr uint16_t kVid = 100;
} // namespace

class RawL3 : public ::testing::Test {
  protected:
    void open(const DeviceConfig &extra) {
        engine = make_engine();
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports);
        DeviceConfig c = extra;
        c.port = ports->first;
        c.ipv4_cidr = "10.77.0.1/24";
        c.ipv6_cidrs = {"fd77:20::1/64"};
        c.mac = net::mac_str(kDevMac);
        c.dcqcn = false; /* the TOS exactly as configured (no ECT bits) */
        auto d = engine->open_device(c);
        ASSERT_TRUE(d) << d.status().message();
        dev = *d;
        ASSERT_EQ(rte_eth_dev_get_port_by_name(ports->second.c_str(), &peer), 0);
        static int seq = 0;
        const std::string pn = "l3_raw_pool" + std::to_string(seq++);
        pool = rte_pktmbuf_pool_create(pn.c_str(), 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                       SOCKET_ID_ANY);
        ASSERT_NE(pool, nullptr);
        rte_eth_conf conf{};
        ASSERT_EQ(rte_eth_dev_configure(peer, 1, 1, &conf), 0);
        ASSERT_EQ(rte_eth_rx_queue_setup(peer, 0, 256, SOCKET_ID_ANY, nullptr, pool), 0);
        ASSERT_EQ(rte_eth_tx_queue_setup(peer, 0, 256, SOCKET_ID_ANY, nullptr), 0);
        ASSERT_EQ(rte_eth_dev_start(peer), 0);
        peer6 = net::make_iface6(kPeerMac);
        net::Ip6 a;
        ASSERT_TRUE(net::parse_ipv6("fd77:20::9", &a));
        peer6.add(a, 64);
        peer6.vlan_tci = extra.vlan;
    }
    void TearDown() override {
        s.reset();
        if (pool) {
            rte_eth_dev_stop(peer);
            rte_eth_dev_close(peer);
        }
        engine.reset();
        rte_mempool_free(pool);
    }
    void send(const uint8_t *f, size_t n) {
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        ASSERT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(n)), f, n);
        ASSERT_EQ(rte_eth_tx_burst(peer, 0, &m, 1), 1);
        engine->poll();
    }
    std::vector<std::vector<uint8_t>> receive() {
        std::vector<std::vector<uint8_t>> out;
        for (int i = 0; i < 3; ++i)
            engine->poll();
        rte_mbuf *m[8];
        const uint16_t n = rte_eth_rx_burst(peer, 0, m, 8);
        for (uint16_t i = 0; i < n; ++i) {
            const auto *p = rte_pktmbuf_mtod(m[i], const uint8_t *);
            out.emplace_back(p, p + rte_pktmbuf_pkt_len(m[i]));
            rte_pktmbuf_free(m[i]);
        }
        return out;
    }
    /* The peer (MAC kPeerMac, fd77:20::9) solicits our fd77:20::1: we answer and learn it. */
    std::vector<uint8_t> solicit() {
        uint8_t f[128];
        net::Ip6 ours;
        EXPECT_TRUE(net::parse_ipv6("fd77:20::1", &ours));
        const size_t n = net::build_ns(peer6, ours.data(), f, sizeof f);
        send(f, n);
        const auto r = receive();
        return r.empty() ? std::vector<uint8_t>{} : r[0];
    }
    /* A who-has for our IPv4 address from (ip, mac), tagged with tci when nonzero. */
    void arp_request_from(uint32_t ip, const net::Mac &mac, uint16_t tci) {
        net::Iface g;
        g.ip = ip;
        g.prefix_len = 24;
        g.mac = mac;
        uint8_t f[128];
        size_t n = net::build_arp_request(g, 0x0A4D0001, f, sizeof f);
        if (tci)
            n = net::vlan_push(f, n, sizeof f, tci);
        send(f, n);
    }
    /* Connects a QP to a peer that never answers (we only look at its first frame). */
    std::vector<uint8_t> first_frame_to(const AhAttr &ah, uint32_t *qpn) {
        s.init(dev);
        Status st = rc_to_rts(*s.qp, ah, 0x77);
        EXPECT_TRUE(st) << st.message();
        if (!st)
            return {};
        *qpn = s.qp->qp_num();
        receive(); /* anything before */
        EXPECT_TRUE(s.qp->post_send(send_wr(s, 64)));
        const auto r = receive();
        return r.empty() ? std::vector<uint8_t>{} : r[0];
    }
    std::unique_ptr<Engine> engine;
    Device *dev = nullptr;
    uint16_t peer = 0;
    rte_mempool *pool = nullptr;
    net::Iface6 peer6;
    Side s;
};

TEST_F(RawL3, NeighbourSolicitationAnsweredAndEchoOnVlan) {
    DeviceConfig c;
    c.vlan = kVid;
    open(c);
    const uint16_t tci = kVid;
    peer6.vlan_tci = tci;
    const auto na = solicit();
    ASSERT_EQ(na.size(), net::kNdFrameLen + 4);
    EXPECT_EQ(std::memcmp(na.data(), kPeerMac.data(), 6), 0);
    EXPECT_EQ(na[12], 0x81);
    EXPECT_EQ((na[14] << 8 | na[15]) & 0xFFF, kVid);
    EXPECT_EQ(na[18 + 40], 136); /* neighbour advertisement */

    /* Untagged and other-VLAN frames: counted, not answered. */
    peer6.vlan_tci = 0;
    EXPECT_TRUE(solicit().empty());
    peer6.vlan_tci = 200;
    EXPECT_TRUE(solicit().empty());
    arp_request_from(0x0A4D0009, kPeerMac, 0);
    EXPECT_TRUE(receive().empty());
    arp_request_from(0x0A4D0009, kPeerMac, (5 << 13) | kVid);
    const auto arp = receive();
    ASSERT_EQ(arp.size(), 1u);
    EXPECT_EQ(arp[0][12], 0x81);
    const auto c1 = counter_map(*dev);
    EXPECT_EQ(c1.at("rx_drop_vlan_mismatch"), 3u);
    EXPECT_EQ(c1.at("nd_solicits_received"), 1u);
    EXPECT_EQ(c1.at("nd_adverts_sent"), 1u);
    EXPECT_EQ(c1.at("arp_replies_sent"), 1u);

    /* ICMPv6 echo to fd77:20::1 on the VLAN. */
    uint8_t e[18 + 40 + 12] = {};
    std::memcpy(e, kDevMac.data(), 6);
    std::memcpy(e + 6, kPeerMac.data(), 6);
    e[12] = 0x81;
    e[14] = 0;
    e[15] = kVid;
    e[16] = 0x86;
    e[17] = 0xdd;
    uint8_t *ip = e + 18;
    ip[0] = 0x60;
    ip[5] = 12;
    ip[6] = net::kIpProtoIcmpv6;
    ip[7] = 64;
    std::memcpy(ip + 8, peer6.addrs[1].addr.data(), 16);
    std::memcpy(ip + 24, dev->gids()[2].gid.raw, 16);
    ip[40] = 128;
    ip[44] = 0x42;
    const uint16_t ck = net::icmp6_checksum(ip, ip + 40, 12);
    ip[42] = static_cast<uint8_t>(ck >> 8);
    ip[43] = static_cast<uint8_t>(ck);
    send(e, sizeof e);
    const auto rep = receive();
    ASSERT_EQ(rep.size(), 1u);
    EXPECT_EQ(rep[0][18 + 40], 129);
    EXPECT_EQ(net::icmp6_checksum(rep[0].data() + 18, rep[0].data() + 58, 12), 0);
    EXPECT_EQ(counter_map(*dev).at("icmp6_echo_replies"), 1u);
}

/* SL 5 -> PCP 5; forced hop limit 7 beats the AH's 64; the AH's traffic class kept;
 * flow label 0 and the rxe sport of the QPN pair. */
TEST_F(RawL3, Ipv6QpFrameCarriesPcpTclassHopLimitAndRxeSport) {
    DeviceConfig c;
    c.vlan = kVid;
    c.force_hop_limit = 7;
    open(c);
    ASSERT_FALSE(solicit().empty()); /* teaches droce the peer's MAC */
    AhAttr ah;
    ah.dgid = gid6("fd77:20::9");
    ah.sgid_index = 2;
    ah.sl = 5;
    ah.traffic_class = 0x68; /* DSCP 26 */
    uint32_t qpn = 0;
    const auto f = first_frame_to(ah, &qpn);
    ASSERT_FALSE(f.empty());
    wire::ParsedPacket p;
    ASSERT_EQ(wire::parse_frame(f.data(), f.size(), p, true), wire::ParseResult::Ok);
    EXPECT_TRUE(p.ipv6);
    ASSERT_TRUE(p.eth.has_vlan);
    EXPECT_EQ(p.eth.vlan_tci, (5u << 13) | kVid);
    EXPECT_EQ(p.ip6.tclass, 0x68);
    EXPECT_EQ(p.ip6.hop_limit, 7);
    EXPECT_EQ(p.ip6.flow_label, 0u);
    EXPECT_EQ(p.udp.sport, wire::udp_sport_for_flow_label(wire::rdma_calc_flow_label(qpn, 0x77)));
    EXPECT_EQ(std::memcmp(p.eth.dst, kPeerMac.data(), 6), 0);
    EXPECT_EQ(std::memcmp(p.dst_gid, gid6("fd77:20::9").raw, 16), 0);
}

/* Off-subnet IPv4 peer: the frame goes to the gateway's MAC with the peer's IP, TOS
 * forced device-wide. */
TEST_F(RawL3, Ipv4PeerOffSubnetThroughGatewayWithForcedTos) {
    DeviceConfig c;
    c.gateway = "10.77.0.254";
    c.force_tclass = 0x60; /* DSCP 24 */
    open(c);
    const net::Mac gw_mac = {0x02, 0, 0, 0, 0x0f, 0xfe};
    arp_request_from(0x0A4D00FE, gw_mac, 0); /* the gateway asks for us: learned */
    ASSERT_EQ(receive().size(), 1u);
    AhAttr ah;
    ah.dgid = net::GidTable::ipv4_mapped(0x0A630005); /* 10.99.0.5 */
    ah.sgid_index = 1;
    ah.traffic_class = 0x10;
    uint32_t qpn = 0;
    const auto f = first_frame_to(ah, &qpn);
    ASSERT_FALSE(f.empty());
    wire::ParsedPacket p;
    ASSERT_EQ(wire::parse_frame(f.data(), f.size(), p, true), wire::ParseResult::Ok);
    EXPECT_FALSE(p.ipv6);
    EXPECT_FALSE(p.eth.has_vlan);
    EXPECT_EQ(std::memcmp(p.eth.dst, gw_mac.data(), 6), 0);
    EXPECT_EQ(p.ip4.dst, 0x0A630005u);
    EXPECT_EQ(p.ip4.tos, 0x60);
    EXPECT_EQ(p.ip4.ttl, 64);
}

/* Off-link IPv6 peer: resolved through the IPv6 gateway (which solicits us first). */
TEST_F(RawL3, Ipv6PeerOffLinkThroughGateway) {
    DeviceConfig c;
    c.gateway6 = "fd77:20::9"; /* the raw peer is the router */
    open(c);
    ASSERT_FALSE(solicit().empty());
    AhAttr ah;
    ah.dgid = gid6("fd99::5");
    ah.sgid_index = 2;
    uint32_t qpn = 0;
    const auto f = first_frame_to(ah, &qpn);
    ASSERT_FALSE(f.empty());
    wire::ParsedPacket p;
    ASSERT_EQ(wire::parse_frame(f.data(), f.size(), p, true), wire::ParseResult::Ok);
    EXPECT_EQ(std::memcmp(p.eth.dst, kPeerMac.data(), 6), 0);
    EXPECT_EQ(std::memcmp(p.dst_gid, gid6("fd99::5").raw, 16), 0);
    EXPECT_EQ(std::memcmp(p.src_gid, gid6("fd77:20::1").raw, 16), 0);
}

TEST_F(RawL3, Ipv6ErrorsAreClear) {
    open(DeviceConfig{});
    s.init(dev);
    AhAttr ah;
    ah.dgid = gid6("fd99::5"); /* off-link, no gateway */
    ah.sgid_index = 2;
    Status st = rc_to_rts(*s.qp, ah, 0x77);
    EXPECT_EQ(st.code(), ENETUNREACH) << st.message();
    EXPECT_NE(st.message().find("no IPv6 gateway"), std::string::npos) << st.message();
    ah.sgid_index = 1; /* IPv4 GID, IPv6 dgid */
    s.reset();
    s.init(dev);
    st = rc_to_rts(*s.qp, ah, 0x77);
    EXPECT_EQ(st.code(), EINVAL);
    EXPECT_NE(st.message().find("is an IPv4 GID but the dgid is IPv6"), std::string::npos)
        << st.message();
}
