/* SPDX-License-Identifier: BSD-3-Clause */
/* The responder pacing flags end to end: a tool's --dup-ack-interval-ns and
 * --seq-nak-after-run (apps/common/device_options) parsed as the tools parse them, the
 * device opened as they open it (open_port_device: DeviceConfig::rc_pacing, copied into
 * each QP's rc::QpTuning), and a raw peer on the other end of a net_ring pair (raw_peer.h)
 * counting what the QP answers on the wire for two values of the flag:
 *   - duplicate WRITEs: re-ACKed every time (0) or once per interval (2 s);
 *   - a run of ahead PSNs after a NAK: NAKed again once the run is long enough
 *     (seq_nak_after_run 2), or held to the lone-packet interval (100).
 * Embedded engine: every poll is the test's, so it sees exactly what each frame drew. */
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "app_engine.h"
#include "device_options.h"
#include "net.h"
#include "raw_peer.h"
#include "raw_peer_fixture.h"
#include "raw_peer_write.h"
#include "wire_packet.h"

using namespace droce;

namespace {

using droce::test::device_counter;

const uint8_t kDevMac[6] = {0x02, 0, 0, 0, 0x06, 0x01};
const uint8_t kPeerMac[6] = {0x02, 0, 0, 0, 0x06, 0x09};
constexpr uint32_t kPeerIp = 0x0A520009, kDevIp = 0x0A520001; /* 10.82.0.9, 10.82.0.1 */
constexpr uint32_t kPeerQpn = 0x61;
constexpr uint32_t kRqPsn = 0x500;
constexpr uint8_t kAck = 0x1F;

struct Answers {
    int acks = 0, seq_naks = 0;
};

class RcPacing : public droce::test::RawPeerQpTest {
  protected:
    /* flags: (option, value) pairs, taken as a tool's command line takes them. */
    void open(const std::vector<std::pair<int, const char *>> &flags) {
        engine = droce::test::embedded_engine("test_engine_rc_pacing");
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports);
        app::DeviceOptions o(10);
        char prog[] = "t";
        char *argv[] = {prog, nullptr};
        const auto longs = app::with_device_options({});
        for (const auto &[c, v] : flags)
            ASSERT_EQ(app::take_device_option(c, v, argv, longs.data(), o, {}), "") << v;
        o.dpdk_port = ports->first;
        o.ip = "10.82.0.1/24";
        o.mac = "02:00:00:00:06:01";
        dev = app::open_port_device(*engine, o);
        ASSERT_NE(dev, nullptr);
        ASSERT_TRUE(engine->start());
        const uint8_t peer_ip[4] = {10, 82, 0, 9}, dev_ip[4] = {10, 82, 0, 1};
        ASSERT_NO_FATAL_FAILURE(
            start_peer(ports->second, "rc_pacing_pool", kPeerMac, peer_ip, dev_ip));
        ASSERT_NO_FATAL_FAILURE(create_qp_objects(kAccessLocalWrite | kAccessRemoteWrite, -1,
                                                  /*one_cq=*/true));
        /* 4.096 us x 2^22 = 17 s: the pacing intervals are capped at a quarter of the
         * ACK timeout, so the 2 s ones below hold whatever the machine's load. */
        ASSERT_NO_FATAL_FAILURE(droce::test::connect_to_peer(
            *qp, {kPeerQpn, kPeerIp, kRqPsn, 0x900, 22, kAccessLocalWrite | kAccessRemoteWrite}));
        polls(4);
        receive();
    }
    void inject(const std::vector<uint8_t> &f) {
        ASSERT_NO_FATAL_FAILURE(droce::test::peer_send(peer, pool, {f}));
    }
    /* What the QP answered to the frames so far. */
    Answers receive() {
        Answers a;
        for (const auto &f : droce::test::peer_receive(peer)) {
            wire::ParsedPacket pp;
            if (wire::parse_frame(f.data(), f.size(), pp, true) != wire::ParseResult::Ok ||
                pp.bth.opcode != wire::kRcAcknowledge)
                continue;
            a.acks += pp.aeth.syndrome == kAck;
            a.seq_naks += pp.aeth.syndrome == wire::kAethNakPsnSeqErr;
        }
        return a;
    }
    /* One frame in, two polls (an ACK is held one poll), its answers out. */
    Answers exchange(uint32_t psn, bool ack_req) {
        inject(write_frame(psn, ack_req));
        polls(2);
        return receive();
    }
    /* A 64-byte RDMA WRITE ONLY from the peer into buf. */
    std::vector<uint8_t> write_frame(uint32_t psn, bool ack_req) {
        return test::peer_write_frame({kDevMac, kPeerMac, kPeerIp, kDevIp, 0xC125}, qp->qp_num(),
                                      psn, ack_req, reinterpret_cast<uint64_t>(buf.data()),
                                      mr->rkey());
    }

    /* A WRITE, then `dups` duplicates of it (AckReq set), one per two polls: the ACKs
     * the duplicates drew. */
    int dup_acks(int dups) {
        EXPECT_EQ(exchange(kRqPsn, true).acks, 1);
        int acks = 0;
        for (int i = 0; i < dups; ++i)
            acks += exchange(kRqPsn, true).acks;
        return acks;
    }
    /* A lone ahead PSN (NAKed: the first), the missing PSN (in sequence again), then a
     * run of three consecutive ahead PSNs: the sequence NAKs the run drew. */
    int run_naks() {
        EXPECT_EQ(exchange(kRqPsn + 5, false).seq_naks, 1);
        EXPECT_EQ(exchange(kRqPsn, false).seq_naks, 0);
        int naks = 0;
        for (uint32_t psn = kRqPsn + 3; psn < kRqPsn + 6; ++psn)
            naks += exchange(psn, false).seq_naks;
        return naks;
    }
};

TEST_F(RcPacing, DupAckIntervalZeroReAcksEveryDuplicate) {
    ASSERT_NO_FATAL_FAILURE(open({{app::kOptDupAckInterval, "0"}}));
    EXPECT_EQ(dup_acks(5), 5);
    EXPECT_EQ(device_counter(*dev, "duplicate_request"), 5u);
    EXPECT_EQ(device_counter(*dev, "duplicate_ack_suppressed"), 0u);
}

TEST_F(RcPacing, DupAckIntervalLongReAcksOnce) {
    ASSERT_NO_FATAL_FAILURE(open({{app::kOptDupAckInterval, "2000000000"}}));
    EXPECT_EQ(dup_acks(5), 1);
    EXPECT_EQ(device_counter(*dev, "duplicate_request"), 5u);
    EXPECT_EQ(device_counter(*dev, "duplicate_ack_suppressed"), 4u);
}

/* A lone ahead PSN waits seq_nak_interval (2 s) for another NAK; a run of
 * seq_nak_after_run consecutive ones only dup_ack_interval (0). */
TEST_F(RcPacing, ShortSeqNakRunNaksAgain) {
    ASSERT_NO_FATAL_FAILURE(open({{app::kOptSeqNakAfterRun, "2"},
                                  {app::kOptSeqNakInterval, "2000000000"},
                                  {app::kOptDupAckInterval, "0"}}));
    /* PSN +3 (run 1) held back, +4 (run 2) NAKed; +5 not: one NAK per gap. */
    EXPECT_EQ(run_naks(), 1);
    EXPECT_EQ(device_counter(*dev, "nak_seq_suppressed"), 1u);
}

TEST_F(RcPacing, LongSeqNakRunHoldsTheNak) {
    ASSERT_NO_FATAL_FAILURE(open({{app::kOptSeqNakAfterRun, "100"},
                                  {app::kOptSeqNakInterval, "2000000000"},
                                  {app::kOptDupAckInterval, "0"}}));
    EXPECT_EQ(run_naks(), 0);
    EXPECT_EQ(device_counter(*dev, "nak_seq_suppressed"), 3u);
}

} // namespace
