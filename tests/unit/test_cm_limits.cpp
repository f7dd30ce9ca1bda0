/* SPDX-License-Identifier: BSD-3-Clause */
/* REQ floods against a listener (issue 15): beyond the listener's backlog or one
 * source's pending limit a REQ is rejected with reason 3 "no resources" and counted,
 * other sources still get in; a request the application never answers is rejected with
 * reason 4 "timeout" after CmConfig::req_answer_timeout_ns and its slot comes back. */
#include <gtest/gtest.h>

#include "cm_test_link.h"

using namespace droce::cm;
using namespace droce::cm::test;

namespace {

constexpr uint64_t kSid = 0x0000000001061C06ull;
constexpr uint64_t kAnswerNs = 2'000'000'000;

struct Box {
    MadAddr self = addr_v4(0x0A4D0002);
    RecordSink out;
    EventLog log;
    CmManager cm;
    uint64_t now = 1000;
    explicit Box(uint32_t per_source, uint32_t max_conns = 32, uint32_t per_sec = 1000,
                 uint32_t burst = 64)
        : cm(cfg(per_source, max_conns, per_sec, burst), out, log) {}
    CmConfig cfg(uint32_t per_source, uint32_t max_conns, uint32_t per_sec, uint32_t burst) {
        CmConfig c = test_config(0xB0B0, self);
        c.max_conns = max_conns;
        c.max_pending_per_source = per_source;
        c.req_answer_timeout_ns = kAnswerNs;
        c.stateless_per_sec = per_sec;
        c.stateless_burst = burst;
        return c;
    }
    /* A REQ from host `ip`, comm ID `id`. */
    void req_from(uint32_t ip, uint32_t id, uint64_t sid = kSid) {
        CmMad m{};
        m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Req);
        m.hdr.tid = 0x4200 + id;
        m.req.local_comm_id = id;
        m.req.service_id = sid;
        m.req.local_ca_guid = 0xA000 + ip;
        m.req.local_qpn = 0x100 + id;
        m.req.responder_resources = 1;
        m.req.initiator_depth = 1;
        m.req.remote_cm_response_timeout = 10;
        m.req.local_cm_response_timeout = 10;
        m.req.retry_count = 7;
        m.req.rnr_retry_count = 7;
        m.req.path_mtu = 3;
        m.req.max_cm_retries = 2;
        m.req.pkey = 0xFFFF;
        const MadAddr from = addr_v4(ip);
        std::memcpy(m.req.primary.local_gid, from.gid, 16);
        std::memcpy(m.req.primary.remote_gid, self.gid, 16);
        m.req.primary.local_ack_timeout = 19;
        m.req.primary.hop_limit = 64;
        uint8_t b[kMadLen];
        ASSERT_EQ(build_cm_mad(m, b, sizeof b), kMadLen);
        cm.on_mad(from, b, sizeof b, now);
    }
    CmMad last_sent() const { return out.sent.back().decode(); }
    /* A REP or DREQ for a connection that does not exist (comm ID `id`). */
    void stray(CmAttr attr, uint32_t id) {
        CmMad m{};
        m.hdr.attr_id = static_cast<uint16_t>(attr);
        m.hdr.tid = 0x9900 + id;
        if (attr == CmAttr::Rep) {
            m.rep.local_comm_id = id;
            m.rep.remote_comm_id = 0xDEAD0000 + id;
            m.rep.local_qpn = 0x300;
        } else {
            m.dreq.local_comm_id = id;
            m.dreq.remote_comm_id = 0xDEAD0000 + id;
            m.dreq.remote_qpn = 0x300;
        }
        uint8_t b[kMadLen];
        ASSERT_EQ(build_cm_mad(m, b, sizeof b), kMadLen);
        cm.on_mad(addr_v4(0x0A0000EE), b, sizeof b, now);
    }
};

TEST(CmLimits, ListenerBacklogRejectsNoResources) {
    Box b(0);
    ASSERT_TRUE(b.cm.listen(kSid, 0, 3));
    for (uint32_t i = 1; i <= 3; ++i)
        b.req_from(0x0A000001 + i, i); /* three sources: the backlog, not a source, limits */
    EXPECT_EQ(b.log.count(CmEventType::ConnectRequest), 3u);
    EXPECT_TRUE(b.out.sent.empty());
    b.req_from(0x0A000009, 4);
    EXPECT_EQ(b.cm.counter(CmCtr::drop_req_backlog), 1u);
    EXPECT_EQ(b.cm.counter(CmCtr::rej_sent_no_resources), 1u);
    ASSERT_EQ(b.out.sent.size(), 1u);
    const CmMad r = b.last_sent();
    ASSERT_EQ(r.hdr.attr_id, static_cast<uint16_t>(CmAttr::Rej));
    EXPECT_EQ(r.rej.reason, 3u) << "IBTA / ib_cm: no resources";
    EXPECT_EQ(r.rej.remote_comm_id, 4u);
    EXPECT_EQ(r.rej.message_rejected, 0);
    EXPECT_EQ(r.hdr.tid, 0x4200u + 4);
    EXPECT_EQ(b.cm.live_conns(), 3u);
    /* An answered request leaves the backlog: the next REQ gets in. */
    AcceptParams p;
    ASSERT_TRUE(b.cm.accept(b.log.events[0].ev.conn, p, b.now));
    b.req_from(0x0A000009, 5);
    EXPECT_EQ(b.log.count(CmEventType::ConnectRequest), 4u);
    EXPECT_EQ(b.cm.counter(CmCtr::drop_req_backlog), 1u);
}

TEST(CmLimits, PerSourceLimitKeepsOthersIn) {
    Box b(2);
    ASSERT_TRUE(b.cm.listen(kSid));
    for (uint32_t i = 1; i <= 5; ++i)
        b.req_from(0x0A0000AA, i); /* one source floods */
    EXPECT_EQ(b.log.count(CmEventType::ConnectRequest), 2u);
    EXPECT_EQ(b.cm.counter(CmCtr::drop_req_source_limit), 3u);
    EXPECT_EQ(b.cm.counter(CmCtr::rej_sent_no_resources), 3u);
    ASSERT_EQ(b.out.sent.size(), 3u);
    for (const auto &s : b.out.sent)
        EXPECT_EQ(s.decode().rej.reason, static_cast<uint16_t>(RejReason::NoResources));
    b.req_from(0x0A0000BB, 1); /* another source: its own allowance */
    EXPECT_EQ(b.log.count(CmEventType::ConnectRequest), 3u);
    /* A duplicate of a held REQ is not a new request: an MRA, not a REJ. */
    b.req_from(0x0A0000AA, 1);
    EXPECT_EQ(b.last_sent().hdr.attr_id, static_cast<uint16_t>(CmAttr::Mra));
    EXPECT_EQ(b.cm.counter(CmCtr::drop_req_source_limit), 3u);
}

TEST(CmLimits, UnansweredRequestExpires) {
    Box b(0, 2);
    ASSERT_TRUE(b.cm.listen(kSid));
    b.req_from(0x0A000001, 1);
    b.req_from(0x0A000002, 2);
    b.req_from(0x0A000003, 3); /* the table (2) is full */
    EXPECT_EQ(b.cm.counter(CmCtr::drop_req_no_resources), 1u);
    const uint32_t id = b.log.events[0].ev.conn;
    EXPECT_EQ(b.cm.next_deadline(), b.now + kAnswerNs);
    b.cm.on_time(b.now + kAnswerNs - 1);
    EXPECT_EQ(b.cm.state(id), ConnState::ReqRcvd);
    b.now += kAnswerNs;
    b.cm.on_time(b.now);
    EXPECT_EQ(b.cm.counter(CmCtr::timeout_req_unanswered), 2u);
    EXPECT_EQ(b.cm.state(id), ConnState::Timewait);
    EXPECT_EQ(b.log.count(CmEventType::ConnectError), 2u);
    const CmMad r = b.last_sent();
    ASSERT_EQ(r.hdr.attr_id, static_cast<uint16_t>(CmAttr::Rej));
    EXPECT_EQ(r.rej.reason, static_cast<uint16_t>(RejReason::Timeout));
    EXPECT_EQ(r.rej.message_rejected, 0) << "the REQ is what is rejected";
    AcceptParams p;
    EXPECT_FALSE(b.cm.accept(id, p, b.now)) << "too late";
    /* After timewait the slots are free again. */
    b.now = b.cm.next_deadline();
    b.cm.on_time(b.now);
    EXPECT_EQ(b.cm.live_conns(), 0u);
    b.req_from(0x0A000003, 3);
    EXPECT_EQ(b.log.count(CmEventType::ConnectRequest), 3u);
}

/* Stateless answers (REJ to a REQ for an unknown service, REJ to a REP nobody asked
 * for, DREP to a DREQ for no connection) come from a token bucket shared by all of
 * them: a burst, then stateless_per_sec on average; the rest are counted, not sent,
 * and the answer's own counters (rej_sent_*, tx_*) only count what left. */
TEST(CmLimits, StatelessAnswersAreRateLimited) {
    constexpr uint32_t kPerSec = 100, kBurst = 8; /* one token per 10 ms */
    Box b(0, 32, kPerSec, kBurst);
    ASSERT_TRUE(b.cm.listen(kSid));
    for (uint32_t i = 1; i <= 20; ++i)
        b.req_from(0x0A0000CC, i, kSid + 1); /* a service nobody listens on */
    EXPECT_EQ(b.cm.counter(CmCtr::drop_req_no_listener), 20u) << "every REQ counted";
    EXPECT_EQ(b.out.sent.size(), kBurst) << "the burst, then nothing";
    EXPECT_EQ(b.cm.counter(CmCtr::rej_sent_invalid_service_id), kBurst);
    EXPECT_EQ(b.cm.counter(CmCtr::tx_rej), kBurst);
    EXPECT_EQ(b.cm.counter(CmCtr::stateless_rate_limited), 20u - kBurst);
    for (const auto &s : b.out.sent)
        EXPECT_EQ(s.decode().rej.reason, static_cast<uint16_t>(RejReason::InvalidServiceId));

    /* The same bucket for stray REPs and DREQs. */
    b.stray(CmAttr::Rep, 1);
    b.stray(CmAttr::Dreq, 2);
    EXPECT_EQ(b.cm.counter(CmCtr::drop_rep_unknown), 1u);
    EXPECT_EQ(b.cm.counter(CmCtr::drop_dreq_unknown), 1u);
    EXPECT_EQ(b.out.sent.size(), kBurst);
    EXPECT_EQ(b.cm.counter(CmCtr::stateless_rate_limited), 22u - kBurst);

    /* 25 ms later: two tokens earned (one per 10 ms), not a new burst. */
    b.now += 25'000'000;
    b.stray(CmAttr::Dreq, 3);
    b.stray(CmAttr::Rep, 4);
    b.stray(CmAttr::Dreq, 5);
    ASSERT_EQ(b.out.sent.size(), kBurst + 2);
    EXPECT_EQ(b.out.sent[kBurst].decode().hdr.attr_id, static_cast<uint16_t>(CmAttr::Drep));
    EXPECT_EQ(b.out.sent[kBurst + 1].decode().hdr.attr_id, static_cast<uint16_t>(CmAttr::Rej));
    EXPECT_EQ(b.cm.counter(CmCtr::tx_drep), 1u);
    EXPECT_EQ(b.cm.counter(CmCtr::stateless_rate_limited), 23u - kBurst);

    /* A quiet second refills the bucket to its burst, no more. */
    b.now += 1'000'000'000;
    for (uint32_t i = 100; i < 100 + 2 * kBurst; ++i)
        b.req_from(0x0A0000CC, i, kSid + 1);
    EXPECT_EQ(b.out.sent.size(), 2 * kBurst + 2);
    EXPECT_EQ(b.cm.counter(CmCtr::stateless_rate_limited), 23u);

    /* A listener still takes a real REQ while its stateless answers are throttled. */
    b.req_from(0x0A0000DD, 7);
    EXPECT_EQ(b.log.count(CmEventType::ConnectRequest), 1u);
}

/* 0 turns the limit off: every stateless answer leaves. */
TEST(CmLimits, StatelessLimitZeroIsOff) {
    Box b(0, 32, 0, 1);
    for (uint32_t i = 1; i <= 200; ++i)
        b.req_from(0x0A0000CC, i, kSid + 1);
    EXPECT_EQ(b.out.sent.size(), 200u);
    EXPECT_EQ(b.cm.counter(CmCtr::stateless_rate_limited), 0u);
}

} // namespace
