/* SPDX-License-Identifier: BSD-3-Clause */
/* ACK hold (engine_ack_hold.cpp): the ACK a poll's RX burst owes waits one poll, so that
 * a reply the application posts in between leaves in the same TX burst, and never
 * longer. The engine's device is on one end of a net_ring pair and the test drives the
 * other end by hand, one engine poll at a time: it sees exactly which poll sent what. */
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
#include "raw_peer_write.h"
#include "wire_packet.h"

using namespace droce;

namespace {

using droce::test::device_counter;

const uint8_t kDevMac[6] = {0x02, 0, 0, 0, 0x02, 0x01};
const uint8_t kPeerMac[6] = {0x02, 0, 0, 0, 0x02, 0x09};
constexpr uint32_t kPeerQpn = 0x60;
constexpr uint32_t kRqPsn = 0x300, kSqPsn = 0x900;

struct Frame {
    uint8_t opcode;
    uint32_t psn;
    uint8_t syndrome;
};

class AckHold : public droce::test::RawPeerQpTest {
  protected:
    /* Embedded, one worker; AckHoldTwoWorkers overrides it. */
    virtual std::unique_ptr<Engine> make_engine() {
        return droce::test::embedded_engine("test_engine_ack_hold");
    }
    void SetUp() override {
        engine = make_engine();
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports);
        DeviceConfig c;
        c.port = ports->first;
        c.ipv4_cidr = "10.78.0.1/24";
        c.mac = "02:00:00:00:02:01";
        auto d = engine->open_device(c);
        ASSERT_TRUE(d) << d.status().message();
        dev = *d;
        const uint8_t peer_ip[4] = {10, 78, 0, 9}, dev_ip[4] = {10, 78, 0, 1};
        ASSERT_NO_FATAL_FAILURE(
            start_peer(ports->second, "ack_hold_pool", kPeerMac, peer_ip, dev_ip));
        /* The CQs on worker 0 (the QP's worker), also with AckHoldTwoWorkers. */
        ASSERT_NO_FATAL_FAILURE(
            create_qp_objects(kAccessLocalWrite | kAccessRemoteWrite, /*cq_worker=*/0));
        ASSERT_NO_FATAL_FAILURE(to_rts(*qp, kPeerQpn));
        /* Nothing left over from the set-up. */
        for (int i = 0; i < 4; ++i)
            engine->poll();
        receive();
    }
    /* Init -> RTR -> RTS toward the peer's QP dest_qpn. */
    void to_rts(QueuePair &qp, uint32_t dest_qpn) {
        ASSERT_NO_FATAL_FAILURE(
            droce::test::connect_to_peer(qp, {dest_qpn, 0x0A4E0009, kRqPsn, kSqPsn, 18,
                                              kAccessLocalWrite | kAccessRemoteWrite}));
    }

    /* Into the device's RX ring in one go (no engine poll): one RX burst. */
    void inject(const std::vector<std::vector<uint8_t>> &frames) {
        ASSERT_NO_FATAL_FAILURE(droce::test::peer_send(peer, pool, frames));
    }
    /* What the device sent so far, parsed (ICRC checked). */
    std::vector<Frame> receive() {
        std::vector<Frame> out;
        for (const auto &f : droce::test::peer_receive(peer)) {
            wire::ParsedPacket pp;
            const wire::ParseResult r = wire::parse_frame(f.data(), f.size(), pp, true);
            if (r == wire::ParseResult::NotRoce)
                continue; /* ARP, ND: the device's own */
            EXPECT_EQ(r, wire::ParseResult::Ok) << wire::parse_result_name(r);
            if (r == wire::ParseResult::Ok)
                out.push_back(
                    {pp.bth.opcode, pp.bth.psn,
                     pp.bth.opcode == wire::kRcAcknowledge ? pp.aeth.syndrome : uint8_t{0}});
        }
        return out;
    }
    /* Everything the peer's RX ring holds, parsed: receive() reads one burst of 32, and
     * 64 of them empty the 1024-slot ring. */
    std::vector<Frame> drain() {
        std::vector<Frame> all;
        for (int i = 0; i < 64; ++i) {
            const auto got = receive();
            all.insert(all.end(), got.begin(), got.end());
        }
        return all;
    }
    static size_t count_naks(const std::vector<Frame> &fs) {
        size_t n = 0;
        for (const auto &f : fs)
            n += f.opcode == wire::kRcAcknowledge && f.syndrome == wire::kAethNakPsnSeqErr &&
                 f.psn == kRqPsn;
        return n;
    }
    /* A 64-byte RDMA WRITE ONLY from the peer into buf. */
    std::vector<uint8_t> write_frame(uint32_t psn, bool ack_req) {
        return test::peer_write_frame({kDevMac, kPeerMac, 0x0A4E0009, 0x0A4E0001, 0xC124},
                                      qp->qp_num(), psn, ack_req,
                                      reinterpret_cast<uint64_t>(buf.data()), mr->rkey());
    }
    void post_write() {
        SendWr w;
        w.wr_id = 1;
        w.opcode = WrOpcode::RdmaWrite;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(buf.data()), 64, mr->lkey()};
        w.num_sge = 1;
        w.remote_addr = 0x10000;
        w.rkey = 0x1234;
        ASSERT_TRUE(qp->post_send(w));
    }
};

constexpr uint8_t kAck = 0x1F;

/* A burst of 8 WRITEs, the last with AckReq: one ACK, for the last PSN, one poll late. */
TEST_F(AckHold, BurstOfWritesGetsOneAckOnePollLate) {
    const uint64_t held0 = device_counter(*dev, "tx_ack_held");
    std::vector<std::vector<uint8_t>> burst;
    for (uint32_t i = 0; i < 8; ++i)
        burst.push_back(write_frame(kRqPsn + i, i == 7));
    ASSERT_NO_FATAL_FAILURE(inject(burst));
    engine->poll();
    EXPECT_TRUE(receive().empty()) << "held for one poll";
    engine->poll();
    const auto got = receive();
    ASSERT_EQ(got.size(), 1u) << "one ACK for the burst, at the next poll";
    EXPECT_EQ(got[0].opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[0].syndrome, kAck);
    EXPECT_EQ(got[0].psn, kRqPsn + 7);
    EXPECT_EQ(device_counter(*dev, "tx_ack_held") - held0, 1u);
    engine->poll();
    EXPECT_TRUE(receive().empty());
}

/* Without AckReq (fewer than ack_every packets): no ACK at all. */
TEST_F(AckHold, WritesWithoutAckReqAreNotAcked) {
    std::vector<std::vector<uint8_t>> burst;
    for (uint32_t i = 0; i < 8; ++i)
        burst.push_back(write_frame(kRqPsn + i, false));
    ASSERT_NO_FATAL_FAILURE(inject(burst));
    for (int i = 0; i < 4; ++i)
        engine->poll();
    EXPECT_TRUE(receive().empty());
}

/* Ping-pong: the application answers a WRITE between two polls; the ACK and its WRITE
 * leave in the same burst, the ACK first (responses before the QP's own requests). */
TEST_F(AckHold, AckLeavesWithThePostedReply) {
    ASSERT_NO_FATAL_FAILURE(inject({write_frame(kRqPsn, true)}));
    engine->poll();
    EXPECT_TRUE(receive().empty());
    ASSERT_NO_FATAL_FAILURE(post_write());
    engine->poll();
    const auto got = receive();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[0].psn, kRqPsn);
    EXPECT_EQ(got[1].opcode, wire::kRcWriteOnly);
    EXPECT_EQ(got[1].psn, kSqPsn);
}

/* Embedded mode: the post that answers a held ACK sends the ACK and the reply at once,
 * without waiting for the next poll (Dev::posted); the frames and their order are those
 * the next poll would have sent. */
TEST_F(AckHold, PostToTheHeldQpSendsAtOnce) {
    const uint64_t ans0 = device_counter(*dev, "tx_ack_answered");
    ASSERT_NO_FATAL_FAILURE(inject({write_frame(kRqPsn, true)}));
    engine->poll();
    EXPECT_TRUE(receive().empty()) << "held for one poll";
    ASSERT_NO_FATAL_FAILURE(post_write());
    auto got = receive(); /* no poll in between */
    ASSERT_EQ(got.size(), 2u) << "the reply and the ACK wait for no poll";
    EXPECT_EQ(got[0].opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[0].syndrome, kAck);
    EXPECT_EQ(got[0].psn, kRqPsn);
    EXPECT_EQ(got[1].opcode, wire::kRcWriteOnly);
    EXPECT_EQ(got[1].psn, kSqPsn);
    EXPECT_EQ(device_counter(*dev, "tx_ack_answered") - ans0, 1u);
    /* Nothing held any more: a second post waits for the poll, as any post does. */
    ASSERT_NO_FATAL_FAILURE(post_write());
    EXPECT_TRUE(receive().empty());
    engine->poll();
    got = receive();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].opcode, wire::kRcWriteOnly);
    EXPECT_EQ(got[0].psn, kSqPsn + 1);
    EXPECT_EQ(device_counter(*dev, "tx_ack_answered") - ans0, 1u);
}

/* A post to another QP while this one's ACK is held does not send anything early: the
 * ACK keeps its one-poll hold and leaves at the next poll, with the other QP's WRITE. */
TEST_F(AckHold, PostToAnotherQpWaitsForThePoll) {
    QpInitAttr qa;
    qa.send_cq = scq.get();
    qa.recv_cq = rcq.get();
    auto q2 = pd->create_qp(qa);
    ASSERT_TRUE(q2) << q2.status().message();
    ASSERT_NO_FATAL_FAILURE(to_rts(**q2, kPeerQpn + 1));
    for (int i = 0; i < 4; ++i)
        engine->poll();
    receive();
    const uint64_t ans0 = device_counter(*dev, "tx_ack_answered");
    ASSERT_NO_FATAL_FAILURE(inject({write_frame(kRqPsn, true)}));
    engine->poll();
    EXPECT_TRUE(receive().empty());
    SendWr w;
    w.wr_id = 2;
    w.opcode = WrOpcode::RdmaWrite;
    w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(buf.data()), 64, mr->lkey()};
    w.num_sge = 1;
    w.remote_addr = 0x10000;
    w.rkey = 0x1234;
    ASSERT_TRUE((*q2)->post_send(w));
    EXPECT_TRUE(receive().empty()) << "another QP's post sent the held ACK early";
    engine->poll();
    const auto got = receive();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].opcode, wire::kRcAcknowledge) << "the held QP is served first";
    EXPECT_EQ(got[0].psn, kRqPsn);
    EXPECT_EQ(got[1].opcode, wire::kRcWriteOnly);
    EXPECT_EQ(device_counter(*dev, "tx_ack_answered"), ans0);
}

/* A chain posted to the held QP answers it too, with the whole chain. */
TEST_F(AckHold, PostedChainToTheHeldQpSendsAtOnce) {
    ASSERT_NO_FATAL_FAILURE(inject({write_frame(kRqPsn, true)}));
    engine->poll();
    EXPECT_TRUE(receive().empty());
    SendWr w[2];
    for (int i = 0; i < 2; ++i) {
        w[i].wr_id = 10 + static_cast<uint64_t>(i);
        w[i].opcode = WrOpcode::RdmaWrite;
        w[i].sg_list[0] = Sge{reinterpret_cast<uint64_t>(buf.data()), 64, mr->lkey()};
        w[i].num_sge = 1;
        w[i].remote_addr = 0x10000;
        w[i].rkey = 0x1234;
    }
    uint32_t bad = 99;
    ASSERT_TRUE(qp->post_send(w, 2, &bad));
    const auto got = receive();
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[1].psn, kSqPsn);
    EXPECT_EQ(got[2].psn, kSqPsn + 1);
}

/* Embedded mode with two workers: a worker's poll runs under its lock, so the post does
 * not send (Dev::posted); the held ACK and the reply leave at the next poll, as before. */
class AckHoldTwoWorkers : public AckHold {
  protected:
    std::unique_ptr<Engine> make_engine() override {
        static const char *args[] = {
            "test_engine_ack_hold", "--no-huge", "-m",   "512",         "--no-pci",
            "--no-shconf",          "-l",        "0",    "--log-level", "*:warning",
            "--no-telemetry",       "--",        nullptr};
        EngineOptions o;
        o.embedded = true;
        o.workers = 2;
        o.mbufs = 4095;
        o.log_level = "warn";
        int consumed = 0;
        auto e = Engine::create(12, const_cast<char **>(args), &consumed, o);
        EXPECT_TRUE(e) << e.status().message();
        return e ? std::move(*e) : nullptr;
    }
};

TEST_F(AckHoldTwoWorkers, PostToTheHeldQpWaitsForThePoll) {
    const uint64_t ans0 = device_counter(*dev, "tx_ack_answered");
    ASSERT_NO_FATAL_FAILURE(inject({write_frame(kRqPsn, true)}));
    engine->poll();
    EXPECT_TRUE(receive().empty()) << "held for one poll";
    ASSERT_NO_FATAL_FAILURE(post_write());
    EXPECT_TRUE(receive().empty()) << "sent outside the worker's lock";
    engine->poll();
    const auto got = receive();
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[0].psn, kRqPsn);
    EXPECT_EQ(got[1].opcode, wire::kRcWriteOnly);
    EXPECT_EQ(got[1].psn, kSqPsn);
    EXPECT_EQ(device_counter(*dev, "tx_ack_answered"), ans0);
}

/* What the application posted since the last poll leaves before that poll's RX burst is
 * read (the reply is not behind it); the ACK the burst then owes waits one poll. */
TEST_F(AckHold, PostedDataLeavesBeforeTheRxBurst) {
    ASSERT_NO_FATAL_FAILURE(post_write());
    ASSERT_NO_FATAL_FAILURE(inject({write_frame(kRqPsn, true)}));
    const uint64_t held0 = device_counter(*dev, "tx_ack_held");
    engine->poll();
    auto got = receive();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].opcode, wire::kRcWriteOnly);
    EXPECT_EQ(got[0].psn, kSqPsn);
    engine->poll();
    got = receive();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[0].psn, kRqPsn);
    EXPECT_EQ(device_counter(*dev, "tx_ack_held") - held0, 1u);
}

/* A NAK (a PSN gap) is not held. */
TEST_F(AckHold, NakIsNotHeld) {
    ASSERT_NO_FATAL_FAILURE(inject({write_frame(kRqPsn + 2, true)}));
    engine->poll();
    const auto got = receive();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[0].syndrome, wire::kAethNakPsnSeqErr);
    EXPECT_EQ(got[0].psn, kRqPsn);
}

/* A NAK that met a full TX queue is owed (transmit refused, tx_blocked); it still leaves
 * at the first poll with room, not one poll later: ack_only_tx_work() excludes NAKs. To
 * fill the queue the peer stops reading: the ring toward it takes 1023 frames
 * (kPairRingSize) and the shard queues kTxQueueCap (512) more. A QP keeps at most 128
 * unacked packets (max_inflight_pkts), so 13 filler QPs post 128 64-B WRITEs each toward
 * a peer QPN that never acknowledges (1664 frames; 129 stay unbuilt: the queue stays
 * full). The QP under test has no requester work, so only the owed NAK is its TX. */
TEST_F(AckHold, NakOwedAfterFullTxQueueIsNotHeld) {
    constexpr int kFillers = 13;
    constexpr uint32_t kPerQp = 128;
    std::vector<std::unique_ptr<QueuePair>> fill;
    for (int i = 0; i < kFillers; ++i) {
        QpInitAttr qa;
        qa.send_cq = scq.get();
        qa.recv_cq = rcq.get();
        qa.cap.max_send_wr = kPerQp;
        auto q = pd->create_qp(qa);
        ASSERT_TRUE(q) << q.status().message();
        ASSERT_NO_FATAL_FAILURE(to_rts(**q, kPeerQpn + 1 + static_cast<uint32_t>(i)));
        for (uint32_t k = 0; k < kPerQp; ++k) {
            SendWr w;
            w.wr_id = k;
            w.opcode = WrOpcode::RdmaWrite;
            w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(buf.data()), 64, mr->lkey()};
            w.num_sge = 1;
            w.remote_addr = 0x10000;
            w.rkey = 0x1234;
            ASSERT_TRUE((*q)->post_send(w));
        }
        fill.push_back(std::move(*q));
    }
    const uint64_t full0 = device_counter(*dev, "tx_queue_full");
    for (int i = 0; i < 64; ++i)
        engine->poll();
    ASSERT_GT(device_counter(*dev, "tx_queue_full"), full0) << "the TX queue never filled";

    /* The gap: the NAK finds the queue full and is owed. */
    const uint64_t blocked0 = device_counter(*dev, "tx_blocked");
    const uint64_t held0 = device_counter(*dev, "tx_ack_held");
    ASSERT_NO_FATAL_FAILURE(inject({write_frame(kRqPsn + 2, true)}));
    engine->poll();
    ASSERT_GT(device_counter(*dev, "tx_blocked"), blocked0)
        << "the NAK was not refused by a full queue";

    /* The peer reads everything; the next poll has room and must send the NAK. */
    EXPECT_EQ(count_naks(drain()), 0u);
    engine->poll();
    EXPECT_EQ(count_naks(drain()), 1u) << "the owed NAK waited a poll";
    EXPECT_EQ(device_counter(*dev, "tx_ack_held"), held0) << "a NAK was held";
    fill.clear();
}

/* Held, then the QP is destroyed before the next poll (the application saw the request
 * complete and closed at once, as ibv_rc_pingpong after its last message): the ACK leaves
 * with the destroy, once, and the held list forgets the QP. Without it the peer
 * retransmits to a QP that is gone until its retries run out. */
TEST_F(AckHold, QpDestroyedWhileHeldSendsItsAck) {
    ASSERT_NO_FATAL_FAILURE(inject({write_frame(kRqPsn, true)}));
    engine->poll();
    EXPECT_TRUE(receive().empty()) << "held for one poll";
    qp.reset();
    const auto got = receive();
    ASSERT_EQ(got.size(), 1u) << "the ACK, sent by the destroy";
    EXPECT_EQ(got[0].opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[0].syndrome, kAck);
    EXPECT_EQ(got[0].psn, kRqPsn);
    for (int i = 0; i < 4; ++i)
        engine->poll();
    EXPECT_TRUE(receive().empty());
}

} // namespace
