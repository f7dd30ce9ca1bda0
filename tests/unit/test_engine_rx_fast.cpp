/* SPDX-License-Identifier: BSD-3-Clause */
/* The RX fast path (Shard::rx_one_t, wire::parse_small_frame, rc::Qp::on_small_frame): an
 * untagged IPv4 ACK or WRITE ONLY to our MAC and address skips the generic classification.
 * Whatever it takes must end exactly as the generic path would (completion, NAK handling,
 * the drop counters of an ACK for no QP); whatever it does not take (bad ICRC, another MAC
 * or address, a broadcast MAC, a VLAN tag) must be left to the generic path, which counts
 * it as before. The device is on one end of a net_ring pair; the test is the raw peer on
 * the other. */
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "net.h"
#include "raw_peer.h"
#include "raw_peer_fixture.h"
#include "raw_peer_write.h"
#include "wire_icrc.h"
#include "wire_packet.h"

using namespace droce;

namespace {

using droce::test::device_counter;

const uint8_t kDevMac[6] = {0x02, 0, 0, 0, 0x03, 0x01};
const uint8_t kPeerMac[6] = {0x02, 0, 0, 0, 0x03, 0x09};
constexpr uint32_t kDevIp = 0x0A4F0001, kPeerIp = 0x0A4F0009;
constexpr uint32_t kPeerQpn = 0x70;
constexpr uint32_t kRqPsn = 0x400, kSqPsn = 0xA00;
constexpr uint8_t kAck = 0x1F;

struct AckOpts {
    const uint8_t *dst_mac = kDevMac;
    uint32_t dst_ip = kDevIp;
    uint32_t src_ip = kPeerIp;
    uint32_t qpn = 0; /* 0: the QP under test */
    bool vlan = false;
};

class RxFast : public droce::test::RawPeerQpTest {
  protected:
    void SetUp() override {
        engine = droce::test::embedded_engine("test_engine_rx_fast");
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports);
        DeviceConfig c;
        c.port = ports->first;
        c.ipv4_cidr = "10.79.0.1/24";
        c.mac = "02:00:00:00:03:01";
        c.vlan = port_vlan;
        auto d = engine->open_device(c);
        ASSERT_TRUE(d) << d.status().message();
        dev = *d;
        const uint8_t peer_ip[4] = {10, 79, 0, 9}, dev_ip[4] = {10, 79, 0, 1};
        /* The peer on the port's VLAN, if any. */
        ASSERT_NO_FATAL_FAILURE(
            start_peer(ports->second, "rx_fast_pool", kPeerMac, peer_ip, dev_ip, port_vlan));
        ASSERT_NO_FATAL_FAILURE(create_qp_objects(kAccessLocalWrite | kAccessRemoteWrite));
        ASSERT_NO_FATAL_FAILURE(droce::test::connect_to_peer(
            *qp, {kPeerQpn, kPeerIp, kRqPsn, kSqPsn, 18, kAccessLocalWrite | kAccessRemoteWrite}));
        for (int i = 0; i < 4; ++i)
            engine->poll();
        droce::test::peer_receive(peer);
    }

    /* The peer's ACK (or NAK: syndrome) for psn, as rxe would build it. */
    std::vector<uint8_t> ack_frame(uint32_t psn, uint8_t syndrome, const AckOpts &o = {}) {
        wire::FrameSpec s{};
        std::memcpy(s.eth.dst, o.dst_mac, 6);
        std::memcpy(s.eth.src, kPeerMac, 6);
        s.eth.has_vlan = o.vlan;
        s.eth.vlan_tci = o.vlan ? 5 : 0;
        wire::gid_from_ipv4(o.src_ip, s.src_gid);
        wire::gid_from_ipv4(o.dst_ip, s.dst_gid);
        s.ttl = 64;
        s.udp_sport = 0xC321;
        s.bth.opcode = wire::kRcAcknowledge;
        s.bth.pkey = 0xFFFF;
        s.bth.dest_qp = o.qpn != 0 ? o.qpn : qp->qp_num();
        s.bth.psn = psn;
        s.aeth = {syndrome, 1};
        std::vector<uint8_t> f(wire::frame_len(s));
        f.resize(wire::build_frame(s, f.data(), f.size()));
        return f;
    }
    /* One signaled 64-byte WRITE posted and sent (PSN kSqPsn + k for the k-th). */
    void post_write(uint64_t id) {
        SendWr w;
        w.wr_id = id;
        w.opcode = WrOpcode::RdmaWrite;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(buf.data()), 64, mr->lkey()};
        w.num_sge = 1;
        w.remote_addr = 0x10000;
        w.rkey = 0x1234;
        ASSERT_TRUE(qp->post_send(w));
        engine->poll();
        const auto got = droce::test::peer_receive(peer);
        ASSERT_EQ(got.size(), 1u);
    }
    /* Injects frames as one RX burst and polls once. */
    void rx(const std::vector<std::vector<uint8_t>> &frames) {
        ASSERT_NO_FATAL_FAILURE(droce::test::peer_send(peer, pool, frames));
        engine->poll();
    }
    int completions(WcStatus *st = nullptr) {
        Wc wc[8];
        const int n = scq->poll(wc, 8);
        if (n > 0 && st != nullptr)
            *st = wc[0].status;
        return n;
    }
    uint64_t ctr(const char *name) { return device_counter(*dev, name); }

    uint16_t port_vlan = 0; /* DeviceConfig::vlan */
};

/* The ping-pong pair: the peer's ACK of our WRITE and its own WRITE, in one burst (the
 * burst of two takes the path without the prefetch pipeline), both on the fast path. */
TEST_F(RxFast, AckAndWriteTakeTheFastPath) {
    ASSERT_NO_FATAL_FAILURE(post_write(7));
    const uint64_t fast0 = ctr("rx_fast_path"), rcv0 = ctr("port_rcv_packets");
    const auto w = droce::test::peer_write_frame(
        {kDevMac, kPeerMac, kPeerIp, kDevIp, 0xC321}, qp->qp_num(), kRqPsn, true,
        reinterpret_cast<uint64_t>(buf.data()), mr->rkey());
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck), w}));
    EXPECT_EQ(ctr("rx_fast_path") - fast0, 2u);
    EXPECT_EQ(ctr("port_rcv_packets") - rcv0, 2u);
    WcStatus st{};
    EXPECT_EQ(completions(&st), 1);
    EXPECT_EQ(st, WcStatus::Success);
    const size_t slot = 64 * (kRqPsn & 15);
    EXPECT_EQ(buf[slot], 1);
    EXPECT_EQ(buf[slot + 1], 2);
    EXPECT_EQ(buf[slot + 2], 3);
    /* Our ACK of the peer's WRITE follows (held one poll). */
    engine->poll();
    engine->poll();
    const auto got = droce::test::peer_receive(peer);
    ASSERT_EQ(got.size(), 1u);
    wire::ParsedPacket pp;
    ASSERT_EQ(wire::parse_frame(got[0].data(), got[0].size(), pp, true), wire::ParseResult::Ok);
    EXPECT_EQ(pp.bth.opcode, wire::kRcAcknowledge);
    EXPECT_EQ(pp.bth.psn, kRqPsn);
}

/* A bad ICRC is not taken: the generic path counts it and the WRITE stays outstanding
 * until a good ACK comes. */
TEST_F(RxFast, BadIcrcFallsBackAndIsCounted) {
    ASSERT_NO_FATAL_FAILURE(post_write(1));
    const uint64_t fast0 = ctr("rx_fast_path"), bad0 = ctr("rx_drop_bad_icrc");
    auto f = ack_frame(kSqPsn, kAck);
    f.back() ^= 0x40;
    ASSERT_NO_FATAL_FAILURE(rx({f}));
    EXPECT_EQ(ctr("rx_fast_path"), fast0);
    EXPECT_EQ(ctr("rx_drop_bad_icrc") - bad0, 1u);
    EXPECT_EQ(completions(), 0);
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck)}));
    EXPECT_EQ(completions(), 1);
}

/* A host on the segment that is not the QP's peer (10.79.0.66) forges the two frames of
 * the fast path with its own source address: a WRITE with the right QPN, PSN and rkey,
 * and an ACK (then a NAK) of our outstanding WRITE. Both are parsed on the fast path and
 * dropped by the QP (rx_drop_src_addr): no byte written, no ACK sent, nothing completed
 * or failed. The peer's own ACK then completes the WRITE. */
TEST_F(RxFast, FramesFromAnotherSourceAreDropped) {
    ASSERT_NO_FATAL_FAILURE(post_write(1));
    constexpr uint32_t kOffPath = 0x0A4F0042;
    const uint64_t fast0 = ctr("rx_fast_path"), src0 = ctr("rx_drop_src_addr");
    const auto w = droce::test::peer_write_frame(
        {kDevMac, kPeerMac, kOffPath, kDevIp, 0xC321}, qp->qp_num(), kRqPsn, true,
        reinterpret_cast<uint64_t>(buf.data()), mr->rkey());
    AckOpts o;
    o.src_ip = kOffPath;
    ASSERT_NO_FATAL_FAILURE(
        rx({w, ack_frame(kSqPsn, kAck, o), ack_frame(kSqPsn, wire::kAethNakRemoteAccessErr, o)}));
    EXPECT_EQ(ctr("rx_fast_path") - fast0, 3u);
    EXPECT_EQ(ctr("rx_drop_src_addr") - src0, 3u);
    EXPECT_EQ(ctr("rx_write_requests"), 0u);
    const size_t slot = 64 * (kRqPsn & 15);
    EXPECT_EQ(buf[slot], 0) << "the forged WRITE was executed";
    EXPECT_EQ(completions(), 0) << "a forged ACK or NAK completed our WRITE";
    QpAttr qa;
    ASSERT_TRUE(qp->query(qa));
    EXPECT_EQ(qa.cur_qp_state, QpState::Rts);
    engine->poll();
    engine->poll();
    EXPECT_TRUE(droce::test::peer_receive(peer).empty()) << "nothing answers a forged frame";
    WcStatus st{};
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck)}));
    EXPECT_EQ(completions(&st), 1);
    EXPECT_EQ(st, WcStatus::Success);
}

/* A PSN nothing outstanding carries: taken, and the completer drops it as a ghost. */
TEST_F(RxFast, AckOutsideTheWindowIsAGhost) {
    ASSERT_NO_FATAL_FAILURE(post_write(1));
    const uint64_t fast0 = ctr("rx_fast_path"), ghost0 = ctr("rx_ghost_response");
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn + 5, kAck)}));
    EXPECT_EQ(ctr("rx_fast_path") - fast0, 1u);
    EXPECT_EQ(ctr("rx_ghost_response") - ghost0, 1u);
    EXPECT_EQ(completions(), 0);
}

/* A NAK (PSN sequence error) is an ACKNOWLEDGE too: the completer rewinds and resends. */
TEST_F(RxFast, NakRewindsAndResends) {
    ASSERT_NO_FATAL_FAILURE(post_write(1));
    const uint64_t fast0 = ctr("rx_fast_path"), seq0 = ctr("packet_seq_err");
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, wire::kAethNakPsnSeqErr)}));
    EXPECT_EQ(ctr("rx_fast_path") - fast0, 1u);
    EXPECT_EQ(ctr("packet_seq_err") - seq0, 1u);
    EXPECT_EQ(completions(), 0);
    engine->poll();
    const auto got = droce::test::peer_receive(peer);
    ASSERT_EQ(got.size(), 1u) << "the WRITE again";
    wire::ParsedPacket pp;
    ASSERT_EQ(wire::parse_frame(got[0].data(), got[0].size(), pp, true), wire::ParseResult::Ok);
    EXPECT_EQ(pp.bth.opcode, wire::kRcWriteOnly);
    EXPECT_EQ(pp.bth.psn, kSqPsn);
}

/* An ACK for a QPN nobody has: parsed on the fast path, then dropped as the generic path
 * drops it (counted as unknown QPN). */
TEST_F(RxFast, AckForAnotherQpIsUnknownQpn) {
    ASSERT_NO_FATAL_FAILURE(post_write(1));
    const uint64_t unk0 = ctr("rx_drop_unknown_qpn");
    AckOpts o;
    o.qpn = qp->qp_num() + 100;
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck, o)}));
    EXPECT_EQ(ctr("rx_drop_unknown_qpn") - unk0, 1u);
    EXPECT_EQ(completions(), 0);
}

/* Not for our MAC, not for our address, VLAN-tagged on an untagged port: not taken, and
 * dropped with the generic path's counters. A broadcast MAC is not taken either, and the
 * generic path accepts it. */
TEST_F(RxFast, OtherMacIpVlanFallBack) {
    ASSERT_NO_FATAL_FAILURE(post_write(1));
    const uint64_t fast0 = ctr("rx_fast_path"), mac0 = ctr("rx_drop_not_our_mac"),
                   ip0 = ctr("rx_drop_not_our_ip"), vlan0 = ctr("rx_drop_vlan_mismatch");
    const uint8_t other[6] = {0x02, 0, 0, 0, 0x03, 0x05};
    AckOpts o;
    o.dst_mac = other;
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck, o)}));
    EXPECT_EQ(ctr("rx_drop_not_our_mac") - mac0, 1u);
    o = {};
    o.dst_ip = kDevIp + 1;
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck, o)}));
    EXPECT_EQ(ctr("rx_drop_not_our_ip") - ip0, 1u);
    o = {};
    o.vlan = true;
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck, o)}));
    EXPECT_EQ(ctr("rx_drop_vlan_mismatch") - vlan0, 1u);
    EXPECT_EQ(ctr("rx_fast_path"), fast0);
    EXPECT_EQ(completions(), 0);
    o = {};
    o.dst_mac = net::kBroadcastMac.data();
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck, o)}));
    EXPECT_EQ(ctr("rx_fast_path"), fast0);
    EXPECT_EQ(completions(), 1) << "a broadcast-MAC ACK is accepted by the generic path";
}

/* A burst of more than two takes the prefetch pipeline, and each frame the fast path. */
TEST_F(RxFast, LongerBurstUsesThePipeline) {
    for (uint64_t i = 0; i < 3; ++i)
        ASSERT_NO_FATAL_FAILURE(post_write(i));
    const uint64_t fast0 = ctr("rx_fast_path");
    ASSERT_NO_FATAL_FAILURE(
        rx({ack_frame(kSqPsn, kAck), ack_frame(kSqPsn + 1, kAck), ack_frame(kSqPsn + 2, kAck)}));
    EXPECT_EQ(ctr("rx_fast_path") - fast0, 3u);
    EXPECT_EQ(completions(), 3);
}

/* The ACK ICRC cache: the second ACK of the QP hits it; a bad ICRC on a hit is still
 * caught and counted by the generic path. */
TEST_F(RxFast, BadIcrcOnACacheHit) {
    ASSERT_NO_FATAL_FAILURE(post_write(1));
    ASSERT_NO_FATAL_FAILURE(post_write(2));
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck)}));
    EXPECT_EQ(completions(), 1);
    const uint64_t hit0 = ctr("rx_ack_icrc_cached"), bad0 = ctr("rx_drop_bad_icrc"),
                   fast0 = ctr("rx_fast_path");
    auto f = ack_frame(kSqPsn + 1, kAck);
    f[f.size() - 5] ^= 0x01; /* the AETH's MSN: past the cached part, covered */
    ASSERT_NO_FATAL_FAILURE(rx({f}));
    EXPECT_EQ(ctr("rx_ack_icrc_cached") - hit0, 1u);
    EXPECT_EQ(ctr("rx_drop_bad_icrc") - bad0, 1u);
    EXPECT_EQ(ctr("rx_fast_path"), fast0);
    EXPECT_EQ(completions(), 0);
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn + 1, kAck)}));
    EXPECT_EQ(ctr("rx_ack_icrc_cached") - hit0, 2u);
    EXPECT_EQ(ctr("rx_fast_path") - fast0, 1u);
    EXPECT_EQ(completions(), 1);
}

/* A port on VLAN 5: the fast path is for untagged ports only. An untagged ACK is dropped
 * as a VLAN mismatch, a tagged one accepted, both by the generic path. */
class RxFastVlan : public RxFast {
  protected:
    RxFastVlan() { port_vlan = 5; }
};

TEST_F(RxFastVlan, TaggedPortTakesTheGenericPath) {
    ASSERT_NO_FATAL_FAILURE(post_write(1));
    const uint64_t fast0 = ctr("rx_fast_path"), vlan0 = ctr("rx_drop_vlan_mismatch");
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck)}));
    EXPECT_EQ(ctr("rx_drop_vlan_mismatch") - vlan0, 1u);
    EXPECT_EQ(completions(), 0);
    AckOpts o;
    o.vlan = true;
    ASSERT_NO_FATAL_FAILURE(rx({ack_frame(kSqPsn, kAck, o)}));
    EXPECT_EQ(completions(), 1);
    EXPECT_EQ(ctr("rx_fast_path"), fast0);
}

} // namespace
