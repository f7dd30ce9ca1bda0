/* SPDX-License-Identifier: BSD-3-Clause */
/* Two CM state machines through an in-memory link on a virtual clock, with deterministic
 * loss: whatever is lost (REQ, REP, RTU, DREQ, DREP, once or always), both sides end
 * connected, or with the event that says why not, and the link goes quiet (no hang). */
#include <gtest/gtest.h>

#include "cm_test_link.h"
#include "cm_time.h"

using namespace droce::cm;
using namespace droce::cm::test;

namespace {

constexpr uint16_t kReq = 0x10, kMra = 0x11, kRej = 0x12, kRep = 0x13, kRtu = 0x14, kDreq = 0x15,
                   kDrep = 0x16;
constexpr uint64_t kSid = 0x0000000001061C06ull; /* TCP port 7174, rping's */

/* B listens and accepts at once (from inside the ConnectRequest callback). */
void auto_accept(Link &l, uint32_t qpn = 0x19, uint32_t psn = 0x61eef5) {
    l.b.cm.listen(kSid, 77);
    l.b.log.on = [&l, qpn, psn](const CmEvent &ev) {
        if (ev.type != CmEventType::ConnectRequest)
            return;
        AcceptParams p;
        p.local_qpn = qpn;
        p.rq_psn = psn;
        static const uint8_t pd[] = {'o', 'k'};
        p.private_data = pd;
        p.private_data_len = sizeof pd;
        EXPECT_TRUE(l.b.cm.accept(ev.conn, p, l.now));
    };
}

uint32_t connect(Link &l) {
    ConnectParams p;
    p.service_id = kSid;
    p.peer = l.b.self;
    p.local_qpn = 0x18;
    p.rq_psn = 0xf12f97;
    static const uint8_t pd[] = {1, 2, 3, 4};
    p.private_data = pd;
    p.private_data_len = sizeof pd;
    p.user_ctx = 5;
    const uint32_t id = l.a.cm.connect(p, l.now);
    EXPECT_NE(id, 0u);
    return id;
}

/* Only B's connection (there is one at most in these tests). */
uint32_t b_conn(const Link &l) {
    const LoggedEvent *e = l.b.log.first(CmEventType::ConnectRequest);
    return e ? e->ev.conn : 0;
}

void expect_established_pair(const Link &l, uint32_t a_id) {
    ASSERT_EQ(l.a.cm.state(a_id), ConnState::Established);
    ASSERT_EQ(l.b.cm.state(b_conn(l)), ConnState::Established);
    const QpParams &qa = *l.a.cm.qp_params(a_id);
    const QpParams &qb = *l.b.cm.qp_params(b_conn(l));
    EXPECT_EQ(qa.local_qpn, 0x18u);
    EXPECT_EQ(qa.remote_qpn, 0x19u);
    EXPECT_EQ(qb.local_qpn, 0x19u);
    EXPECT_EQ(qb.remote_qpn, 0x18u);
    /* Each side's send PSN is what the other expects. */
    EXPECT_EQ(qa.sq_psn, qb.rq_psn);
    EXPECT_EQ(qb.sq_psn, qa.rq_psn);
    EXPECT_EQ(qa.sq_psn, 0x61eef5u);
    EXPECT_EQ(qb.sq_psn, 0xf12f97u);
    EXPECT_EQ(0, std::memcmp(qa.remote_gid, qb.local_gid, 16));
    EXPECT_EQ(0, std::memcmp(qb.remote_gid, qa.local_gid, 16));
    EXPECT_EQ(qa.path_mtu, qb.path_mtu);
    EXPECT_EQ(qa.local_ack_timeout, qb.local_ack_timeout);
    EXPECT_EQ(l.a.log.count(CmEventType::Established), 1u);
    EXPECT_EQ(l.b.log.count(CmEventType::Established), 1u);
}

TEST(CmLink, ConnectDisconnectClean) {
    Link l;
    auto_accept(l);
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    expect_established_pair(l, id);
    /* Private data both ways: the REQ's to B, the REP's (B's "ok") to A. */
    const LoggedEvent *cr = l.b.log.first(CmEventType::ConnectRequest);
    ASSERT_NE(cr, nullptr);
    EXPECT_EQ(cr->pd[0], 1);
    EXPECT_EQ(cr->pd[3], 4);
    EXPECT_EQ(cr->ev.user_ctx, 77u);
    const LoggedEvent *est = l.a.log.first(CmEventType::Established);
    EXPECT_EQ(est->pd[0], 'o');
    EXPECT_EQ(est->ev.user_ctx, 5u);
    EXPECT_EQ(l.a.cm.counter(CmCtr::tx_req), 1u);
    EXPECT_EQ(l.b.cm.counter(CmCtr::tx_rep), 1u);
    EXPECT_EQ(l.a.cm.counter(CmCtr::tx_rtu), 1u);
    EXPECT_EQ(l.a.cm.counter(CmCtr::est_active), 1u);
    EXPECT_EQ(l.b.cm.counter(CmCtr::est_passive), 1u);

    ASSERT_TRUE(l.a.cm.disconnect(id, nullptr, 0, l.now));
    ASSERT_TRUE(l.run());
    ASSERT_NE(l.a.log.first(CmEventType::Disconnected), nullptr);
    EXPECT_EQ(l.a.log.first(CmEventType::Disconnected)->ev.cause, DiscCause::LocalDone);
    ASSERT_NE(l.b.log.first(CmEventType::Disconnected), nullptr);
    EXPECT_EQ(l.b.log.first(CmEventType::Disconnected)->ev.cause, DiscCause::Remote);
    /* Timewait ran out on both: slots free, said so once each. */
    EXPECT_EQ(l.a.log.count(CmEventType::TimewaitExit), 1u);
    EXPECT_EQ(l.b.log.count(CmEventType::TimewaitExit), 1u);
    EXPECT_EQ(l.a.cm.live_conns(), 0u);
    EXPECT_EQ(l.b.cm.live_conns(), 0u);
    EXPECT_EQ(l.a.cm.state(id), ConnState::Idle);
    for (CmCtr c : {CmCtr::resend_req, CmCtr::resend_rep, CmCtr::resend_rtu, CmCtr::resend_dreq,
                    CmCtr::resend_drep})
        EXPECT_EQ(l.a.cm.counter(c) + l.b.cm.counter(c), 0u) << cm_ctr_name(c);
}

TEST(CmLink, LostReqResent) {
    Link l;
    auto_accept(l);
    l.a.wire.lose = [](uint16_t a, unsigned n) { return a == kReq && n < 2; };
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    expect_established_pair(l, id);
    EXPECT_EQ(l.a.cm.counter(CmCtr::resend_req), 2u);
    EXPECT_EQ(l.a.wire.lost, 2u);
    /* Two waits of 2 * packet life + response timeout before the third REQ went. */
    EXPECT_GE(l.now, 1'000'000 + 2 * cm_wait_ns(8, 10));
}

TEST(CmLink, LostRepRecovered) {
    Link l;
    auto_accept(l);
    l.b.wire.lose = [](uint16_t a, unsigned n) { return a == kRep && n == 0; };
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    expect_established_pair(l, id);
    /* A's REQ timer and B's REP timer run out together: the REP goes again, and the
     * duplicate REQ is answered with the REP as well. */
    EXPECT_GE(l.b.cm.counter(CmCtr::resend_rep), 1u);
    EXPECT_EQ(l.b.log.count(CmEventType::ConnectRequest), 1u); /* the dup made no new one */
}

TEST(CmLink, LostRtuRecovered) {
    Link l;
    auto_accept(l);
    l.a.wire.lose = [](uint16_t a, unsigned n) { return a == kRtu && n == 0; };
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    expect_established_pair(l, id);
    EXPECT_EQ(l.b.cm.counter(CmCtr::resend_rep), 1u);
    EXPECT_EQ(l.a.cm.counter(CmCtr::resend_rtu), 1u); /* duplicate REP -> RTU again */
}

TEST(CmLink, LostRtuCommEst) {
    /* The RTU is lost but A starts sending: B's QP sees the first packet (COMM_EST). */
    Link l;
    auto_accept(l);
    l.a.wire.lose = [](uint16_t a, unsigned) { return a == kRtu; };
    const uint32_t id = connect(l);
    l.run_until(l.now + 1000);
    ASSERT_EQ(l.a.cm.state(id), ConnState::Established);
    ASSERT_EQ(l.b.cm.state(b_conn(l)), ConnState::RepSent);
    ASSERT_TRUE(l.b.cm.notify_comm_est(b_conn(l), l.now));
    ASSERT_TRUE(l.run());
    expect_established_pair(l, id);
    EXPECT_EQ(l.b.cm.counter(CmCtr::est_comm_est), 1u);
    EXPECT_EQ(l.b.cm.counter(CmCtr::resend_rep), 0u); /* the REP timer stopped */
}

TEST(CmLink, EveryReqLostUnreachable) {
    Link l;
    auto_accept(l);
    l.a.wire.lose = [](uint16_t a, unsigned) { return a == kReq || a == kRej; };
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    ASSERT_EQ(l.a.log.count(CmEventType::Unreachable), 1u);
    EXPECT_EQ(l.a.log.first(CmEventType::Unreachable)->ev.conn, id);
    EXPECT_EQ(l.a.cm.counter(CmCtr::tx_req) + l.a.cm.counter(CmCtr::resend_req), 4u); /* 1+3 */
    EXPECT_EQ(l.a.cm.counter(CmCtr::timeout_req), 1u);
    EXPECT_EQ(l.a.cm.counter(CmCtr::rej_sent_timeout), 1u);
    EXPECT_EQ(l.b.log.events.size(), 0u);
    EXPECT_EQ(l.a.cm.live_conns(), 0u); /* timewait over too */
    /* Gave up after 4 waits, not before. */
    EXPECT_GE(l.now, 1'000'000 + 4 * cm_wait_ns(8, 10));
}

TEST(CmLink, EveryRepLostBothGiveUp) {
    Link l;
    auto_accept(l);
    l.b.wire.lose = [](uint16_t a, unsigned) { return a == kRep; };
    connect(l);
    ASSERT_TRUE(l.run());
    EXPECT_EQ(l.a.log.count(CmEventType::Established), 0u);
    EXPECT_EQ(l.b.log.count(CmEventType::Established), 0u);
    /* Each side ends with its own give-up, or with the other's Timeout REJ. */
    const bool a_done =
        l.a.log.count(CmEventType::Unreachable) == 1 || l.a.log.count(CmEventType::Rejected) == 1;
    const bool b_done =
        l.b.log.count(CmEventType::ConnectError) == 1 || l.b.log.count(CmEventType::Rejected) == 1;
    EXPECT_TRUE(a_done);
    EXPECT_TRUE(b_done);
    if (const LoggedEvent *r = l.b.log.first(CmEventType::Rejected)) {
        EXPECT_EQ(r->ev.rej_reason, static_cast<uint16_t>(RejReason::Timeout));
    }
    EXPECT_EQ(l.a.cm.live_conns() + l.b.cm.live_conns(), 0u);
}

TEST(CmLink, EveryRtuLostPassiveGivesUp) {
    Link l;
    auto_accept(l);
    l.a.wire.lose = [](uint16_t a, unsigned) { return a == kRtu; };
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    /* B never heard an RTU: REP resent max_cm_retries times, then ConnectError and a
     * Timeout REJ that tells A its connection is gone. */
    EXPECT_EQ(l.b.log.count(CmEventType::ConnectError), 1u);
    EXPECT_EQ(l.b.cm.counter(CmCtr::resend_rep), 3u);
    EXPECT_EQ(l.a.cm.counter(CmCtr::resend_rtu), 3u);
    ASSERT_EQ(l.a.log.count(CmEventType::Rejected), 1u);
    EXPECT_EQ(l.a.log.first(CmEventType::Rejected)->ev.rej_reason,
              static_cast<uint16_t>(RejReason::Timeout));
    EXPECT_EQ(l.a.cm.state(id), ConnState::Idle);
}

TEST(CmLink, LostDreqResent) {
    Link l;
    auto_accept(l);
    l.a.wire.lose = [](uint16_t a, unsigned n) { return a == kDreq && n == 0; };
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    ASSERT_TRUE(l.a.cm.disconnect(id, nullptr, 0, l.now));
    ASSERT_TRUE(l.run());
    EXPECT_EQ(l.a.cm.counter(CmCtr::resend_dreq), 1u);
    EXPECT_EQ(l.a.log.first(CmEventType::Disconnected)->ev.cause, DiscCause::LocalDone);
    EXPECT_EQ(l.b.log.first(CmEventType::Disconnected)->ev.cause, DiscCause::Remote);
}

TEST(CmLink, LostDrepAnsweredFromTimewait) {
    Link l;
    auto_accept(l);
    l.b.wire.lose = [](uint16_t a, unsigned n) { return a == kDrep && n == 0; };
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    ASSERT_TRUE(l.a.cm.disconnect(id, nullptr, 0, l.now));
    ASSERT_TRUE(l.run());
    EXPECT_EQ(l.a.cm.counter(CmCtr::resend_dreq), 1u);
    EXPECT_EQ(l.b.cm.counter(CmCtr::resend_drep), 1u);
    EXPECT_EQ(l.a.log.first(CmEventType::Disconnected)->ev.cause, DiscCause::LocalDone);
    EXPECT_EQ(l.b.log.count(CmEventType::Disconnected), 1u);
}

TEST(CmLink, EveryDreqLostLocalTimeout) {
    Link l;
    auto_accept(l);
    l.a.wire.lose = [](uint16_t a, unsigned) { return a == kDreq; };
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    ASSERT_TRUE(l.a.cm.disconnect(id, nullptr, 0, l.now));
    ASSERT_TRUE(l.run());
    ASSERT_NE(l.a.log.first(CmEventType::Disconnected), nullptr);
    EXPECT_EQ(l.a.log.first(CmEventType::Disconnected)->ev.cause, DiscCause::LocalTimeout);
    EXPECT_EQ(l.a.cm.counter(CmCtr::timeout_dreq), 1u);
    EXPECT_EQ(l.a.cm.live_conns(), 0u);
    /* B never heard: still established, as ib_cm leaves it (its QP will time out). */
    EXPECT_EQ(l.b.cm.state(b_conn(l)), ConnState::Established);
}

TEST(CmLink, SimultaneousDisconnect) {
    Link l;
    auto_accept(l);
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    ASSERT_TRUE(l.a.cm.disconnect(id, nullptr, 0, l.now));
    ASSERT_TRUE(l.b.cm.disconnect(b_conn(l), nullptr, 0, l.now));
    ASSERT_TRUE(l.run());
    EXPECT_EQ(l.a.log.count(CmEventType::Disconnected), 1u);
    EXPECT_EQ(l.b.log.count(CmEventType::Disconnected), 1u);
    EXPECT_EQ(l.a.cm.live_conns() + l.b.cm.live_conns(), 0u);
}

TEST(CmLink, ConsumerReject) {
    Link l;
    l.b.cm.listen(kSid);
    l.b.log.on = [&l](const CmEvent &ev) {
        if (ev.type == CmEventType::ConnectRequest) {
            static const uint8_t why[] = {'n', 'o'};
            EXPECT_TRUE(l.b.cm.reject(ev.conn, why, sizeof why, l.now));
        }
    };
    /* The first REJ is lost: A resends the REQ and gets the same REJ from B's timewait. */
    l.b.wire.lose = [](uint16_t a, unsigned n) { return a == kRej && n == 0; };
    const uint32_t id = connect(l);
    ASSERT_TRUE(l.run());
    ASSERT_EQ(l.a.log.count(CmEventType::Rejected), 1u);
    const LoggedEvent *r = l.a.log.first(CmEventType::Rejected);
    EXPECT_EQ(r->ev.conn, id);
    EXPECT_EQ(r->ev.rej_reason, static_cast<uint16_t>(RejReason::ConsumerDefined));
    EXPECT_EQ(r->pd[0], 'n');
    EXPECT_EQ(l.b.cm.counter(CmCtr::resend_rej), 1u);
    EXPECT_EQ(l.b.log.count(CmEventType::ConnectRequest), 1u);
}

TEST(CmLink, NoListenerInvalidServiceId) {
    Link l;
    connect(l);
    ASSERT_TRUE(l.run());
    ASSERT_EQ(l.a.log.count(CmEventType::Rejected), 1u);
    EXPECT_EQ(l.a.log.first(CmEventType::Rejected)->ev.rej_reason,
              static_cast<uint16_t>(RejReason::InvalidServiceId));
    EXPECT_EQ(l.b.cm.counter(CmCtr::drop_req_no_listener), 1u);
    EXPECT_EQ(l.b.cm.live_conns(), 0u);
}

TEST(CmLink, SlowAcceptMra) {
    /* B takes longer than A's REQ wait to decide: the duplicate REQ gets an MRA, A waits
     * the MRA's service timeout instead of giving up, then B accepts. */
    Link l;
    l.b.cm.listen(kSid);
    const uint32_t id = connect(l);
    l.run_until(l.now + cm_wait_ns(8, 10) + 1);
    ASSERT_EQ(l.b.cm.state(b_conn(l)), ConnState::MraReqSent);
    ASSERT_EQ(l.a.cm.state(id), ConnState::MraReqRcvd);
    EXPECT_EQ(l.b.cm.counter(CmCtr::tx_mra), 1u);
    /* A's next resend waits 2 * packet life + the MRA's 2^14 * 4 us. */
    EXPECT_GE(l.a.cm.next_deadline(), l.now + iba_time_ns(14));
    AcceptParams p;
    p.local_qpn = 0x19;
    p.rq_psn = 0x61eef5;
    ASSERT_TRUE(l.b.cm.accept(b_conn(l), p, l.now));
    ASSERT_TRUE(l.run());
    expect_established_pair(l, id);
    EXPECT_EQ(l.a.cm.counter(CmCtr::st_mra_req_rcvd), 1u);
}

TEST(CmLink, RandomLossNeverHangs) {
    /* Every loss pattern over the first MADs each way (bit i of the mask: lose the i-th
     * A sends, modulo 6; B's modulo 3): the run always goes quiet, each side has heard
     * how its attempt ended, and when both are established they agree on the QP. One-
     * sided ends are legitimate when the last word was lost (A established, B's Timeout
     * REJ lost): the RC QP's own retries end that connection. */
    for (unsigned mask = 0; mask < 64; ++mask) {
        Link l;
        auto_accept(l);
        unsigned na = 0, nb = 0;
        l.a.wire.lose = [mask, &na](uint16_t, unsigned) { return (mask >> (na++ % 6)) & 1; };
        l.b.wire.lose = [mask, &nb](uint16_t, unsigned) { return (mask >> (nb++ % 3)) & 1; };
        const uint32_t id = connect(l);
        ASSERT_TRUE(l.run()) << "hang, mask " << mask;
        std::string evs;
        for (const auto &e : l.a.log.events)
            evs += std::string(cm_event_name(e.ev.type)) + " ";
        const size_t a_end = l.a.log.count(CmEventType::Established) +
                             l.a.log.count(CmEventType::Unreachable) +
                             l.a.log.count(CmEventType::Rejected);
        EXPECT_GE(a_end, 1u) << "mask " << mask << ": " << evs;
        if (l.b.log.count(CmEventType::ConnectRequest)) {
            EXPECT_GE(l.b.log.count(CmEventType::Established) +
                          l.b.log.count(CmEventType::ConnectError) +
                          l.b.log.count(CmEventType::Rejected),
                      1u)
                << "mask " << mask;
        }
        if (l.a.cm.state(id) == ConnState::Established &&
            l.b.cm.state(b_conn(l)) == ConnState::Established)
            expect_established_pair(l, id);
        if (l.a.cm.state(id) == ConnState::Established) {
            ASSERT_TRUE(l.a.cm.disconnect(id, nullptr, 0, l.now));
            ASSERT_TRUE(l.run()) << "hang in disconnect, mask " << mask;
            EXPECT_EQ(l.a.log.count(CmEventType::Disconnected), 1u);
        }
        EXPECT_EQ(l.a.cm.live_conns(), 0u) << "mask " << mask;
    }
}

} // namespace
