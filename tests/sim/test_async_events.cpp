/* SPDX-License-Identifier: BSD-3-Clause */
/* Asynchronous events of lib/rc on the simulator: a CQ overrun is a CQ error and puts
 * the QP in ERR (never a silent counter), COMM_EST on the first packet in RTR,
 * SQ_DRAINED in SQD with en_sqd_async_notify, LAST_WQE_REACHED for an SRQ QP in ERR, and
 * no event where a completion reports the error. (QP_REQ_ERR / QP_ACCESS_ERR of the
 * responder are checked case by case in test_hostile.) */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "sim_fabric.h"

using namespace droce;
using namespace droce::sim;

namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kAll =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
using Ev = std::vector<AsyncEventType>;
/* The simulator's connect grants what it is given (nothing by default). */
QpAttr all_rights() {
    QpAttr x;
    x.qp_access_flags = kAll;
    return x;
}

struct Pair {
    explicit Pair(QpState b_upto = QpState::Rts, qp::RecvQueue *srq_b = nullptr)
        : fab(7), a(fab, kIpA, 1), b(fab, kIpB, 2) {
        qa = &a.create_qp(0x11, &scq_a, &rcq_a);
        qb = &b.create_qp(0x22, &scq_b, &rcq_b, QpCap{}, rc::QpTuning{}, srq_b);
        a.connect(*qa, b, *qb, 0x100, 0x200, all_rights());
        b.connect(*qb, a, *qa, 0x200, 0x100, all_rights(), Mtu::Mtu1024, b_upto);
        buf_a.assign(1 << 20, 0x11);
        buf_b.assign(1 << 20, 0x22);
        mr_a = a.mrs.reg(1, buf_a.data(), buf_a.size(), kAll).value();
        mr_b = b.mrs.reg(1, buf_b.data(), buf_b.size(), kAll).value();
    }
    SendWr write(uint64_t id, uint32_t len, uint64_t off = 0) const {
        SendWr wr;
        wr.wr_id = id;
        wr.opcode = WrOpcode::RdmaWrite;
        wr.send_flags = kSendSignaled;
        wr.num_sge = 1;
        wr.sg_list[0] = {mr_a.addr + off, len, mr_a.key};
        wr.remote_addr = mr_b.addr + off;
        wr.rkey = mr_b.key;
        return wr;
    }
    SendWr send(uint64_t id, uint32_t len) const {
        SendWr wr = write(id, len);
        wr.opcode = WrOpcode::Send;
        return wr;
    }
    RecvWr recv(uint64_t id, uint32_t len, uint64_t off = 0) const {
        RecvWr wr;
        wr.wr_id = id;
        wr.num_sge = 1;
        wr.sg_list[0] = {mr_b.addr + off, len, mr_b.key};
        return wr;
    }
    void settle(Time ns = 50'000'000) {
        fab.run_until([] { return false; }, fab.now + ns);
    }

    Fabric fab;
    Endpoint a, b;
    SimCq scq_a, rcq_a, scq_b, rcq_b;
    rc::Qp *qa, *qb;
    std::vector<uint8_t> buf_a, buf_b;
    mem::MemoryRegion mr_a{}, mr_b{};
};

} // namespace

TEST(AsyncEvents, EventNames) {
    EXPECT_STREQ(async_event_str(AsyncEventType::CqErr), "CQ error");
    EXPECT_STREQ(async_event_str(AsyncEventType::QpFatal), "local work queue catastrophic error");
    EXPECT_STREQ(async_event_str(AsyncEventType::QpLastWqeReached), "last WQE reached");
    EXPECT_STREQ(async_event_str(AsyncEventType::WqFatal), "WQ fatal");
    EXPECT_STREQ(async_event_str(static_cast<AsyncEventType>(200)), "unknown");
}

/* Send CQ of 4 entries, 8 signaled WRs: the 5th completion has no room. It is lost and
 * said so: CQ_ERR (naming the CQ) and QP_FATAL, once each, the QP in ERR, its remaining
 * WRs flushed into the same full CQ (counted, nothing more raised, nothing loops). */
TEST(AsyncEvents, SendCqOverflowIsCqErrAndQpFatal) {
    Pair p;
    p.scq_a.capacity = 4;
    for (uint64_t i = 0; i < 8; ++i)
        ASSERT_TRUE(p.qa->post_send(p.write(i, 256, i * 256)));
    p.settle();
    EXPECT_EQ(p.qa->state(), QpState::Err) << p.qa->debug_string();
    ASSERT_EQ(p.a.events.log.size(), 2u);
    EXPECT_EQ(p.a.events.of(p.qa->qpn()), (Ev{AsyncEventType::CqErr, AsyncEventType::QpFatal}));
    EXPECT_EQ(p.a.events.log[0].cq, &p.scq_a);
    EXPECT_EQ(p.a.events.log[1].cq, nullptr);
    /* 4 written; the 5th lost; 6..8 flushed into the full CQ: lost too. */
    EXPECT_EQ(p.a.counters.cq_overflow, 4u);
    ASSERT_EQ(p.scq_a.q.size(), 4u);
    for (uint64_t i = 0; i < 4; ++i) {
        EXPECT_EQ(p.scq_a.q[i].wr_id, i);
        EXPECT_EQ(p.scq_a.q[i].status, WcStatus::Success);
    }
    EXPECT_EQ(p.qa->send_queue_depth(), 0u);
    EXPECT_FALSE(p.qa->has_tx_work());
    EXPECT_EQ(p.qa->next_deadline(), 0u) << "no timer left armed in ERR";
    /* The application drains the CQ: a WR posted now is flushed into it, no new event. */
    p.scq_a.q.clear();
    ASSERT_TRUE(p.qa->post_send(p.write(9, 64)));
    ASSERT_EQ(p.scq_a.q.size(), 1u);
    EXPECT_EQ(p.scq_a.q[0].status, WcStatus::WrFlushErr);
    EXPECT_EQ(p.a.events.log.size(), 2u);
    /* The peer is unaffected: it executed the WRITEs and stays up. */
    EXPECT_EQ(p.qb->state(), QpState::Rts);
    EXPECT_TRUE(p.b.events.log.empty());
    /* RESET -> RTS again: the QP works, and a new overrun is a new CQ_ERR. */
    QpAttr r;
    r.qp_state = QpState::Reset;
    ASSERT_TRUE(p.qa->modify(r, kQpState));
    ASSERT_TRUE(p.qb->modify(r, kQpState));
    p.a.connect(*p.qa, p.b, *p.qb, 0x100, 0x200, all_rights());
    p.b.connect(*p.qb, p.a, *p.qa, 0x200, 0x100, all_rights());
    p.scq_a.q.clear();
    p.scq_a.capacity = 1;
    ASSERT_TRUE(p.qa->post_send(p.write(10, 64)));
    ASSERT_TRUE(p.qa->post_send(p.write(11, 64)));
    p.settle();
    EXPECT_EQ(p.a.events.of(p.qa->qpn()), (Ev{AsyncEventType::CqErr, AsyncEventType::QpFatal,
                                              AsyncEventType::CqErr, AsyncEventType::QpFatal}));
    EXPECT_EQ(p.a.counters.cq_overflow, 5u);
}

/* The receive side: a recv CQ of 2, 4 SENDs. The 3rd receive completion is lost: B's QP
 * raises CQ_ERR + QP_FATAL, goes to ERR, and does not ACK the SEND it could not report. */
TEST(AsyncEvents, RecvCqOverflowIsCqErrAndQpFatal) {
    Pair p;
    p.rcq_b.capacity = 2;
    for (uint64_t i = 0; i < 4; ++i)
        ASSERT_TRUE(p.qb->post_recv(p.recv(100 + i, 1024, i * 1024)));
    for (uint64_t i = 0; i < 4; ++i)
        ASSERT_TRUE(p.qa->post_send(p.send(i, 512)));
    p.settle(5'000'000);
    EXPECT_EQ(p.qb->state(), QpState::Err);
    ASSERT_EQ(p.b.events.log.size(), 2u);
    EXPECT_EQ(p.b.events.log[0].type, AsyncEventType::CqErr);
    EXPECT_EQ(p.b.events.log[0].cq, &p.rcq_b);
    EXPECT_EQ(p.b.events.log[1].type, AsyncEventType::QpFatal);
    EXPECT_EQ(p.b.events.log[1].qp_num, p.qb->qpn());
    EXPECT_EQ(p.b.counters.cq_overflow, 2u) << "the 3rd completion and the 4th receive's flush";
    EXPECT_EQ(p.rcq_b.q.size(), 2u);
    EXPECT_EQ(p.qb->recv_queue_depth(), 0u);
    /* A got ACKs for the first two only. */
    EXPECT_EQ(p.scq_a.q.size(), 2u);
}

/* A SEND longer than its receive: the LOC_LEN_ERR completion reports it (no event), the
 * requester gets NAK invalid request (a completion too). */
TEST(AsyncEvents, ErrorsReportedByCompletionsRaiseNoEvent) {
    Pair p;
    ASSERT_TRUE(p.qb->post_recv(p.recv(100, 256)));
    ASSERT_TRUE(p.qa->post_send(p.send(1, 512)));
    p.settle();
    ASSERT_EQ(p.rcq_b.q.size(), 1u);
    EXPECT_EQ(p.rcq_b.q[0].status, WcStatus::LocLenErr);
    ASSERT_EQ(p.scq_a.q.size(), 1u);
    EXPECT_EQ(p.scq_a.q[0].status, WcStatus::RemInvReqErr);
    EXPECT_EQ(p.qa->state(), QpState::Err);
    EXPECT_EQ(p.qb->state(), QpState::Err);
    EXPECT_TRUE(p.a.events.log.empty());
    EXPECT_TRUE(p.b.events.log.empty());
}

/* COMM_EST: raised once, on the first packet B receives while in RTR. */
TEST(AsyncEvents, CommEstOnFirstPacketInRtr) {
    Pair p(QpState::Rtr);
    ASSERT_EQ(p.qb->state(), QpState::Rtr);
    EXPECT_TRUE(p.b.events.log.empty());
    ASSERT_TRUE(p.qb->post_recv(p.recv(100, 4096)));
    ASSERT_TRUE(p.qa->post_send(p.send(1, 3000))); /* 3 packets */
    ASSERT_TRUE(p.qa->post_send(p.write(2, 100)));
    p.settle();
    EXPECT_EQ(p.b.events.of(p.qb->qpn()), Ev{AsyncEventType::CommEst});
    EXPECT_EQ(p.scq_a.q.size(), 2u) << "an RTR responder works";
    /* RTS afterwards: no more COMM_EST. */
    QpAttr at;
    at.qp_state = QpState::Rts;
    at.sq_psn = 0x200;
    ASSERT_TRUE(p.qb->modify(at, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                     kQpMaxQpRdAtomic));
    ASSERT_TRUE(p.qa->post_send(p.write(3, 100)));
    p.settle();
    EXPECT_EQ(p.b.events.of(p.qb->qpn()), Ev{AsyncEventType::CommEst});
    EXPECT_TRUE(p.a.events.log.empty()) << "A was in RTS before anything arrived";
}

/* SQ_DRAINED: RTS -> SQD with en_sqd_async_notify while a 16-packet WRITE is in flight;
 * raised when it has completed, not before; a WR never started does not hold it back. */
TEST(AsyncEvents, SqDrainedWhenInFlightWorkCompletes) {
    for (bool notify : {true, false}) {
        SCOPED_TRACE(notify ? "with notify" : "without notify");
        Pair p;
        p.a.tx_budget = 1; /* one packet per step: the WRITE is still going at the modify */
        ASSERT_TRUE(p.qa->post_send(p.write(1, 16 << 10)));
        p.fab.step();
        p.fab.step();
        QpAttr sqd;
        sqd.qp_state = QpState::Sqd;
        sqd.en_sqd_async_notify = notify;
        ASSERT_TRUE(p.qa->modify(sqd, kQpState | kQpEnSqdAsyncNotify));
        ASSERT_TRUE(p.qa->post_send(p.write(2, 100, 1 << 16)));
        EXPECT_TRUE(p.a.events.log.empty()) << "the WRITE is still in flight";
        ASSERT_TRUE(p.fab.run_until([&] { return !p.scq_a.q.empty(); }, p.fab.now + 100'000'000));
        EXPECT_EQ(p.scq_a.q[0].wr_id, 1u);
        p.settle();
        EXPECT_EQ(p.scq_a.q.size(), 1u) << "SQD starts nothing new";
        EXPECT_EQ(p.a.events.of(p.qa->qpn()), notify ? Ev{AsyncEventType::SqDrained} : Ev{});
        /* Back to RTS: the queued WR goes, no further SQ_DRAINED. */
        QpAttr rts;
        rts.qp_state = QpState::Rts;
        ASSERT_TRUE(p.qa->modify(rts, kQpState));
        p.settle();
        EXPECT_EQ(p.scq_a.q.size(), 2u);
        EXPECT_EQ(p.a.events.of(p.qa->qpn()), notify ? Ev{AsyncEventType::SqDrained} : Ev{});
    }
}

TEST(AsyncEvents, SqDrainedAtOnceWhenIdle) {
    Pair p;
    QpAttr sqd;
    sqd.qp_state = QpState::Sqd;
    sqd.en_sqd_async_notify = 1;
    ASSERT_TRUE(p.qa->modify(sqd, kQpState | kQpEnSqdAsyncNotify));
    EXPECT_EQ(p.a.events.of(p.qa->qpn()), Ev{AsyncEventType::SqDrained});
}

/* An SRQ QP that goes to ERR (by the application or by the transport) raises
 * LAST_WQE_REACHED; a QP with its own receive queue does not. */
TEST(AsyncEvents, LastWqeReachedForSrqQpInErr) {
    qp::RecvQueue srq(16, kMaxSge);
    {
        Pair p(QpState::Rts, &srq);
        QpAttr err;
        err.qp_state = QpState::Err;
        ASSERT_TRUE(p.qb->modify(err, kQpState));
        EXPECT_EQ(p.b.events.of(p.qb->qpn()), Ev{AsyncEventType::QpLastWqeReached});
        ASSERT_TRUE(p.qa->modify(err, kQpState));
        EXPECT_TRUE(p.a.events.log.empty());
    }
    {
        /* by the transport: a WRITE with a bad rkey */
        Pair p(QpState::Rts, &srq);
        SendWr wr = p.write(1, 64);
        wr.rkey ^= 0x40;
        ASSERT_TRUE(p.qa->post_send(wr));
        p.settle();
        EXPECT_EQ(p.qb->state(), QpState::Err);
        EXPECT_EQ(p.b.events.of(p.qb->qpn()),
                  (Ev{AsyncEventType::QpAccessErr, AsyncEventType::QpLastWqeReached}));
    }
}

/* A QP created without a sink (QpConfig::events == nullptr): an overrun is handled the
 * same way (counted, ERR), nothing is dereferenced. */
TEST(AsyncEvents, NoSinkIsFine) {
    Pair p;
    SimCq full;
    full.capacity = 0;
    rc::QpConfig cfg;
    cfg.qpn = 0x66;
    cfg.pd = 1;
    cfg.port = &p.a;
    cfg.send_cq = &full;
    cfg.recv_cq = &full;
    cfg.mrs = &p.a.mrs;
    cfg.counters = &p.a.counters;
    rc::Qp q(cfg);
    QpAttr init;
    init.qp_state = QpState::Init;
    init.qp_access_flags = kAll;
    ASSERT_TRUE(q.modify(init, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags));
    RecvWr r;
    r.wr_id = 1;
    r.num_sge = 1;
    r.sg_list[0] = {p.mr_a.addr, 64, p.mr_a.key};
    ASSERT_TRUE(q.post_recv(r));
    ASSERT_TRUE(q.post_recv(r));
    QpAttr err;
    err.qp_state = QpState::Err;
    ASSERT_TRUE(q.modify(err, kQpState)); /* two flush completions, no room for either */
    EXPECT_EQ(p.a.counters.cq_overflow, 2u);
    EXPECT_EQ(q.state(), QpState::Err);
    EXPECT_EQ(q.recv_queue_depth(), 0u);
}
