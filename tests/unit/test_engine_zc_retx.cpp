/* SPDX-License-Identifier: BSD-3-Clause */
/* Zero-copy TX and late frames (issue 15): no frame may read the application's memory
 * after the WR's completion was delivered. The engine's device is on one end of a
 * net_ring pair, the test drives the other end by hand, so it decides exactly when the
 * peer reads a frame out of the ring: a retransmission (or a re-served READ response)
 * is left in the ring while the ACK completes the WR, the application refills its
 * buffer, and only then does the peer read the frame. It must still be the bytes the WR
 * sent, under a valid ICRC (with the frame attached zero-copy it was the refilled bytes
 * under the old ICRC: rx_drop_bad_icrc on a lossless link). */
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "net.h"
#include "raw_peer.h"
#include "raw_peer_fixture.h"
#include "wire_packet.h"

using namespace droce;

namespace {

std::map<std::string, uint64_t> counters(const Device &d) {
    std::map<std::string, uint64_t> m;
    for (const auto &[k, v] : d.counters())
        m[k] = v;
    return m;
}

const uint8_t kDevMac[6] = {0x02, 0, 0, 0, 0x01, 0x01};
const uint8_t kPeerMac[6] = {0x02, 0, 0, 0, 0x01, 0x09};
constexpr uint32_t kPeerQpn = 0x50;
constexpr uint32_t kLen = 1024; /* one MTU-1024 packet, at the zero-copy threshold */

class ZcLateFrame : public droce::test::RawPeerQpTest {
  protected:
    void SetUp() override {
        engine = droce::test::embedded_engine("test_engine_zc_retx", /*zero_copy=*/true);
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports);
        DeviceConfig c;
        c.port = ports->first;
        c.ipv4_cidr = "10.77.0.1/24";
        c.mac = "02:00:00:00:01:01";
        auto d = engine->open_device(c);
        ASSERT_TRUE(d) << d.status().message();
        dev = *d;
        const uint8_t peer_ip[4] = {10, 77, 0, 9}, dev_ip[4] = {10, 77, 0, 1};
        ASSERT_NO_FATAL_FAILURE(
            start_peer(ports->second, "zc_retx_pool", kPeerMac, peer_ip, dev_ip));
        ASSERT_NO_FATAL_FAILURE(create_qp_objects(kAccessLocalWrite | kAccessRemoteRead));
        /* ACK timeout ~1 s: only the test's NAK makes the requester go back. */
        ASSERT_NO_FATAL_FAILURE(droce::test::connect_to_peer(
            *qp, {kPeerQpn, 0x0A4D0009, 0x300, 0x900, 18, kAccessLocalWrite | kAccessRemoteRead}));
    }

    void poll() {
        for (int i = 0; i < 4; ++i)
            engine->poll();
    }
    void send(const std::vector<uint8_t> &f) {
        ASSERT_NO_FATAL_FAILURE(droce::test::peer_send(peer, pool, {f}));
        poll();
    }
    /* The peer's RX: reads whatever the ring holds now (chains too: zero-copy frames are
     * a header mbuf, the attached payload and an ICRC mbuf). */
    std::vector<std::vector<uint8_t>> receive() { return droce::test::peer_receive(peer); }
    /* A frame from the peer to the device's QP. */
    std::vector<uint8_t> peer_frame(uint8_t opcode, uint32_t psn, const wire::Reth &reth,
                                    const wire::Aeth &aeth) {
        wire::FrameSpec s{};
        std::memcpy(s.eth.dst, kDevMac, 6);
        std::memcpy(s.eth.src, kPeerMac, 6);
        wire::gid_from_ipv4(0x0A4D0009, s.src_gid);
        wire::gid_from_ipv4(0x0A4D0001, s.dst_gid);
        s.ttl = 64;
        s.udp_sport = 0xC123;
        s.bth.opcode = opcode;
        s.bth.pkey = 0xFFFF;
        s.bth.dest_qp = qp->qp_num();
        s.bth.psn = psn;
        s.bth.ack_req = opcode != wire::kRcAcknowledge;
        s.reth = reth;
        s.aeth = aeth;
        std::vector<uint8_t> f(wire::frame_len(s));
        f.resize(wire::build_frame(s, f.data(), f.size()));
        return f;
    }
    /* The one frame the ring holds: parsed with its ICRC checked; its payload. */
    std::vector<uint8_t> one_valid_frame(uint8_t opcode, uint32_t psn) {
        auto got = receive();
        EXPECT_EQ(got.size(), 1u);
        if (got.size() != 1)
            return {};
        wire::ParsedPacket p;
        const wire::ParseResult r = wire::parse_frame(got[0].data(), got[0].size(), p, true);
        EXPECT_EQ(r, wire::ParseResult::Ok)
            << wire::parse_result_name(r) << ": the frame does not match its ICRC";
        if (r != wire::ParseResult::Ok)
            return {};
        EXPECT_EQ(p.bth.opcode, opcode);
        EXPECT_EQ(p.bth.psn, psn);
        std::vector<uint8_t> payload;
        wire::for_each_payload_chunk(
            p, [&](const uint8_t *d, uint32_t n) { payload.insert(payload.end(), d, d + n); });
        return payload;
    }
    void fill(uint8_t seed) {
        for (uint32_t i = 0; i < kLen; ++i)
            buf[i] = static_cast<uint8_t>(seed + i * 7);
    }
};

/* Requester: a zero-copy RDMA WRITE is sent, NAKed (sequence error: go back to it), so
 * its retransmission is queued; the ACK of the original completes the WR before the peer
 * reads the retransmission; the application refills the buffer. The retransmission the
 * peer then reads must be the WR's bytes under a valid ICRC. */
TEST_F(ZcLateFrame, RetransmissionReadAfterCompletionCarriesTheWrBytes) {
    fill(0x11);
    const std::vector<uint8_t> sent(buf.begin(), buf.begin() + kLen);
    const auto c0 = counters(*dev);
    SendWr w;
    w.wr_id = 7;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(buf.data()), kLen, mr->lkey()};
    w.num_sge = 1;
    w.remote_addr = 0x10000;
    w.rkey = 0x1234;
    ASSERT_TRUE(qp->post_send(w));
    poll();
    EXPECT_EQ(one_valid_frame(wire::kRcWriteOnly, 0x900), sent) << "the original";
    const auto c1 = counters(*dev);
    ASSERT_EQ(c1.at("tx_bytes_zero_copy") - c0.at("tx_bytes_zero_copy"), kLen)
        << "the original must be attached zero-copy, or this test proves nothing";

    ASSERT_NO_FATAL_FAILURE(
        send(peer_frame(wire::kRcAcknowledge, 0x900, {}, {wire::kAethNakPsnSeqErr, 0})));
    EXPECT_EQ(counters(*dev).at("retransmitted_packets"), 1u) << "queued, not yet read";
    ASSERT_NO_FATAL_FAILURE(send(peer_frame(wire::kRcAcknowledge, 0x900, {}, {0x1F, 1})));
    Wc wc[2];
    ASSERT_EQ(scq->poll(wc, 2), 1) << "the ACK completes the WR";
    EXPECT_EQ(wc[0].status, WcStatus::Success) << wc_status_str(wc[0].status);
    EXPECT_EQ(wc[0].wr_id, 7u);

    fill(0x5A); /* the application reuses its buffer after the completion */
    EXPECT_EQ(one_valid_frame(wire::kRcWriteOnly, 0x900), sent) << "the retransmission";
    const auto c2 = counters(*dev);
    EXPECT_EQ(c2.at("tx_bytes_zero_copy") - c1.at("tx_bytes_zero_copy"), 0u)
        << "a retransmission is copied";
    EXPECT_EQ(c2.at("tx_bytes_copied") - c1.at("tx_bytes_copied"), kLen);
}

/* Responder: a READ answered zero-copy, then the same READ again (the requester's
 * retry): the re-served response is queued, the requester completed its READ from the
 * first one and its application tells ours, which rewrites the memory; the replay the
 * peer then reads must be consistent with its ICRC. */
TEST_F(ZcLateFrame, ReplayedReadResponseReadAfterRewriteIsConsistent) {
    fill(0x22);
    const std::vector<uint8_t> served(buf.begin(), buf.begin() + kLen);
    const wire::Reth reth{reinterpret_cast<uint64_t>(buf.data()), mr->rkey(), kLen};
    const auto c0 = counters(*dev);
    ASSERT_NO_FATAL_FAILURE(send(peer_frame(wire::kRcReadRequest, 0x300, reth, {})));
    EXPECT_EQ(one_valid_frame(wire::kRcReadResponseOnly, 0x300), served) << "the response";
    const auto c1 = counters(*dev);
    ASSERT_EQ(c1.at("tx_bytes_zero_copy") - c0.at("tx_bytes_zero_copy"), kLen)
        << "the response must be attached zero-copy, or this test proves nothing";

    ASSERT_NO_FATAL_FAILURE(send(peer_frame(wire::kRcReadRequest, 0x300, reth, {})));
    EXPECT_EQ(counters(*dev).at("duplicate_request") - c1.at("duplicate_request"), 1u);
    fill(0x77); /* rewritten while the replay waits in the ring */
    EXPECT_EQ(one_valid_frame(wire::kRcReadResponseOnly, 0x300), served) << "the replay";
    const auto c2 = counters(*dev);
    EXPECT_EQ(c2.at("tx_bytes_zero_copy") - c1.at("tx_bytes_zero_copy"), 0u)
        << "a replay is copied";
    EXPECT_EQ(c2.at("tx_bytes_copied") - c1.at("tx_bytes_copied"), kLen);
}

} // namespace
