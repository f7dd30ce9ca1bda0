/* SPDX-License-Identifier: BSD-3-Clause */
/* RoCEv1 GIDs (DeviceConfig::rocev1_gids) through the engine over net_ring: the GID table
 * layout, SEND / WRITE / READ between two droce devices over a RoCEv1 GID (IPv6 and
 * IPv4-mapped), and against a raw port: the QP's frames are RoCEv1 (0x8915, GRH, valid
 * ICRC), a RoCEv1 frame with a bad ICRC or to a device without RoCEv1 GIDs is a counted
 * drop. */
#include <gtest/gtest.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <chrono>
#include <cstring>
#include <map>

#include <droce/droce.h>

#include "engine_test_util.h"
#include "net_ipv6.h"
#include "wire_packet.h"
#include "wire_rocev1.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Engine> make_engine() {
    return droce::test::make_test_engine("test_engine_rocev1",
                                         droce::test::embedded_test_options());
}
using droce::test::counter_map;

constexpr uint32_t kRights = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;

/* Both sides move up to 16 KiB with SEND, WRITE and READ. */
struct Side : droce::test::RcSide {
    void init(Device *d) { RcSide::init(d, 16384, kRights); }
};

Status to_rts(QueuePair &qp, const AhAttr &ah, uint32_t dqpn) {
    return droce::test::rc_to_rts(qp, ah, dqpn, kRights);
}

constexpr uint32_t kLen = 3000;

DeviceConfig config(const std::string &port, int n) {
    DeviceConfig c;
    c.port = port;
    c.ipv4_cidr = "10.77.0." + std::to_string(n) + "/24";
    c.ipv6_cidrs = {"fd77:20::" + std::to_string(n) + "/64"};
    c.mac = "02:00:00:00:01:0" + std::to_string(n);
    c.rocev1_gids = true;
    return c;
}

} // namespace

class RoceV1E2E : public ::testing::Test {
  protected:
    void SetUp() override {
        engine = make_engine();
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports);
        auto da = engine->open_device(config(ports->first, 1));
        ASSERT_TRUE(da) << da.status().message();
        auto db = engine->open_device(config(ports->second, 2));
        ASSERT_TRUE(db) << db.status().message();
        dev_a = *da;
        dev_b = *db;
    }
    void TearDown() override {
        a.reset();
        b.reset();
        engine.reset();
    }
    void connect(uint8_t gidx) {
        a.init(dev_a);
        b.init(dev_b);
        AhAttr ah;
        ah.sgid_index = gidx;
        ah.hop_limit = 1;
        ah.dgid = dev_b->gids()[gidx].gid;
        Status s = to_rts(*a.qp, ah, b.qp->qp_num());
        ASSERT_TRUE(s) << s.message();
        ah.dgid = dev_a->gids()[gidx].gid;
        s = to_rts(*b.qp, ah, a.qp->qp_num());
        ASSERT_TRUE(s) << s.message();
    }
    /* Polls until cq yields one completion; returns it (status Success expected). */
    Wc wait(CompletionQueue &cq) {
        Wc wc{};
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < deadline) {
            engine->poll();
            if (cq.poll(&wc, 1) == 1)
                return wc;
        }
        ADD_FAILURE() << "no completion";
        return wc;
    }
    /* SEND a -> b, WRITE a -> b, READ b -> a, each kLen bytes, data checked. */
    void send_write_read() {
        for (uint32_t i = 0; i < kLen; ++i)
            a.buf[i] = static_cast<uint8_t>(i * 13 + 1);
        RecvWr r;
        r.wr_id = 9;
        r.sg_list[0] = Sge{reinterpret_cast<uint64_t>(b.buf.data()), 4096, b.mr->lkey()};
        r.num_sge = 1;
        ASSERT_TRUE(b.qp->post_recv(r));
        SendWr w;
        w.wr_id = 1;
        w.opcode = WrOpcode::Send;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(a.buf.data()), kLen, a.mr->lkey()};
        w.num_sge = 1;
        ASSERT_TRUE(a.qp->post_send(w));
        EXPECT_EQ(wait(*a.scq).status, WcStatus::Success);
        const Wc rc = wait(*b.rcq);
        EXPECT_EQ(rc.status, WcStatus::Success);
        EXPECT_EQ(rc.byte_len, kLen);
        EXPECT_EQ(std::memcmp(a.buf.data(), b.buf.data(), kLen), 0);

        w.wr_id = 2;
        w.opcode = WrOpcode::RdmaWrite;
        w.remote_addr = reinterpret_cast<uint64_t>(b.buf.data() + 4096);
        w.rkey = b.mr->rkey();
        ASSERT_TRUE(a.qp->post_send(w));
        EXPECT_EQ(wait(*a.scq).status, WcStatus::Success);
        EXPECT_EQ(std::memcmp(a.buf.data(), b.buf.data() + 4096, kLen), 0);

        for (uint32_t i = 0; i < kLen; ++i)
            a.buf[8192 + i] = static_cast<uint8_t>(i * 5 + 3);
        w.wr_id = 3;
        w.opcode = WrOpcode::RdmaRead;
        w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(b.buf.data() + 8192), kLen, b.mr->lkey()};
        w.remote_addr = reinterpret_cast<uint64_t>(a.buf.data() + 8192);
        w.rkey = a.mr->rkey();
        ASSERT_TRUE(b.qp->post_send(w));
        EXPECT_EQ(wait(*b.scq).status, WcStatus::Success);
        EXPECT_EQ(std::memcmp(a.buf.data() + 8192, b.buf.data() + 8192, kLen), 0);
    }
    void expect_no_drops(const Device &d) {
        for (const auto &[k, v] : counter_map(d))
            if (k.rfind("rx_drop_", 0) == 0 || k == "retransmitted_packets") {
                EXPECT_EQ(v, 0u) << d.name() << " " << k;
            }
    }
    std::unique_ptr<Engine> engine;
    Device *dev_a = nullptr, *dev_b = nullptr;
    Side a, b;
};

TEST_F(RoceV1E2E, GidTableAppendsOneV1EntryPerV2Entry) {
    const auto g = dev_a->gids();
    ASSERT_EQ(g.size(), 6u); /* link-local, IPv4, IPv6; then the same three as RoCEv1 */
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_STREQ(g[i].type, "RoCE v2") << i;
        EXPECT_STREQ(g[i + 3].type, "IB/RoCE v1") << i;
        EXPECT_EQ(std::memcmp(g[i].gid.raw, g[i + 3].gid.raw, 16), 0) << i;
    }
}

TEST_F(RoceV1E2E, SendWriteReadOverIpv6V1Gid) {
    connect(5);
    send_write_read();
    expect_no_drops(*dev_a);
    expect_no_drops(*dev_b);
}

TEST_F(RoceV1E2E, SendWriteReadOverIpv4MappedV1Gid) {
    connect(4);
    send_write_read();
    expect_no_drops(*dev_a);
    expect_no_drops(*dev_b);
}

/* UD over a v1 GID is allowed (the SEND itself: test_engine_gid_vlan). */
TEST_F(RoceV1E2E, UdAcceptsAV1Gid) {
    auto pd = dev_a->alloc_pd();
    ASSERT_TRUE(pd);
    AhAttr ah;
    ah.sgid_index = 4;
    ah.dgid = dev_b->gids()[4].gid;
    auto h = (*pd)->create_ah(ah);
    ASSERT_TRUE(h) << h.status().message();
}

/* ---- one device against a raw port ---- */

class RawV1 : public ::testing::Test {
  protected:
    void open(bool v1) {
        engine = make_engine();
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports);
        DeviceConfig c = config(ports->first, 1);
        c.rocev1_gids = v1;
        auto d = engine->open_device(c);
        ASSERT_TRUE(d) << d.status().message();
        dev = *d;
        ASSERT_EQ(rte_eth_dev_get_port_by_name(ports->second.c_str(), &peer), 0);
        static int seq = 0;
        const std::string pn = "v1_raw_pool" + std::to_string(seq++);
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
    /* A RoCEv1 SEND Only from the peer (fd77:20::9) to our fd77:20::1, QP qpn. */
    std::vector<uint8_t> v1_frame(uint32_t qpn) {
        static const uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
        wire::FrameSpec::Seg seg{payload, 8, 0};
        wire::FrameSpec f{};
        std::memcpy(f.eth.dst, kDevMac.data(), 6);
        std::memcpy(f.eth.src, kPeerMac.data(), 6);
        f.rocev1 = true;
        net::Ip6 a;
        EXPECT_TRUE(net::parse_ipv6("fd77:20::9", &a));
        std::memcpy(f.src_gid, a.data(), 16);
        EXPECT_TRUE(net::parse_ipv6("fd77:20::1", &a));
        std::memcpy(f.dst_gid, a.data(), 16);
        f.ttl = 1;
        f.bth.opcode = wire::kRcSendOnly;
        f.bth.pkey = wire::kDefaultPkey;
        f.bth.dest_qp = qpn;
        f.segs = &seg;
        f.nsegs = 1;
        f.payload_len = 8;
        std::vector<uint8_t> out(wire::frame_len(f));
        EXPECT_EQ(wire::build_frame(f, out.data(), out.size()), out.size());
        return out;
    }
    static constexpr net::Mac kDevMac = {0x02, 0, 0, 0, 0x01, 0x01};
    static constexpr net::Mac kPeerMac = {0x02, 0, 0, 0, 0x01, 0x09};
    std::unique_ptr<Engine> engine;
    Device *dev = nullptr;
    uint16_t peer = 0;
    rte_mempool *pool = nullptr;
    net::Iface6 peer6;
    Side s;
};

TEST_F(RawV1, QpOnAV1GidSendsGrhFramesWithAValidIcrc) {
    open(true);
    /* The peer solicits us: the device learns its MAC (no ND wait below). */
    uint8_t ns[128];
    net::Ip6 ours;
    ASSERT_TRUE(net::parse_ipv6("fd77:20::1", &ours));
    send(ns, net::build_ns(peer6, ours.data(), ns, sizeof ns));
    receive();
    s.init(dev);
    AhAttr ah;
    ah.sgid_index = 5;
    ah.hop_limit = 1;
    ASSERT_TRUE(net::parse_ipv6("fd77:20::9", &ours));
    std::memcpy(ah.dgid.raw, ours.data(), 16);
    Status st = to_rts(*s.qp, ah, 0x77);
    ASSERT_TRUE(st) << st.message();
    SendWr w;
    w.opcode = WrOpcode::Send;
    w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(s.buf.data()), 64, s.mr->lkey()};
    w.num_sge = 1;
    ASSERT_TRUE(s.qp->post_send(w));
    const auto r = receive();
    ASSERT_FALSE(r.empty());
    const auto &f = r[0];
    ASSERT_GE(f.size(), 14u + wire::kGrhLen);
    EXPECT_EQ(f[12], 0x89);
    EXPECT_EQ(f[13], 0x15);
    wire::ParsedPacket p{};
    ASSERT_EQ(wire::parse_frame(f.data(), f.size(), p, true), wire::ParseResult::Ok);
    EXPECT_TRUE(p.rocev1);
    EXPECT_EQ(p.ip6.next_hdr, wire::kGrhNextHdrBth);
    EXPECT_EQ(p.bth.opcode, wire::kRcSendOnly);
    EXPECT_EQ(p.bth.dest_qp, 0x77u);
    EXPECT_EQ(p.payload_len, 64u);
    EXPECT_EQ(std::memcmp(p.dst_gid, ah.dgid.raw, 16), 0);
}

TEST_F(RawV1, MalformedOrUnwantedV1FramesAreCountedDrops) {
    open(true);
    std::vector<uint8_t> f = v1_frame(0x11);
    f[f.size() - 1] ^= 1; /* bad ICRC */
    send(f.data(), f.size());
    f = v1_frame(0x11);
    f[14 + 6] = 17; /* GRH next header not BTH */
    send(f.data(), f.size());
    f = v1_frame(0x11);
    send(f.data(), f.size() - 10); /* cut */
    auto c = counter_map(*dev);
    EXPECT_EQ(c.at("rx_drop_bad_icrc"), 1u);
    EXPECT_EQ(c.at("rx_drop_bad_ip_header"), 1u);
    EXPECT_EQ(c.at("rx_drop_too_short"), 1u);
    /* Well-formed, to a QP that does not exist: past the parser, dropped as unknown. */
    f = v1_frame(0x11);
    send(f.data(), f.size());
    c = counter_map(*dev);
    EXPECT_EQ(c.at("rx_drop_unknown_qpn"), 1u);
    EXPECT_EQ(c.at("rx_drop_not_our_ip"), 0u);
}

TEST_F(RawV1, V1FrameToADeviceWithoutV1GidsIsNotOurs) {
    open(false);
    const std::vector<uint8_t> f = v1_frame(0x11);
    send(f.data(), f.size());
    EXPECT_EQ(counter_map(*dev).at("rx_drop_not_our_ip"), 1u);
}
