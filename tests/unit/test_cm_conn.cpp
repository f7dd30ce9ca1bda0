/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/cm's state machine against single MADs: hostile and malformed ones are counted
 * drops (or the REJ / DREP ib_cm would answer with), never a crash or a state change;
 * the API refuses what does not fit the state; timeouts follow the REQ's fields. */
#include <gtest/gtest.h>

#include "cm_test_link.h"
#include "cm_time.h"

using namespace droce::cm;
using namespace droce::cm::test;

namespace {

constexpr uint64_t kSid = 0x0000000001061C06ull;

struct One {
    MadAddr self = addr_v4(0x0A4D0002);
    MadAddr peer = addr_v4(0x0A4D0003);
    RecordSink out;
    EventLog log;
    CmManager cm;
    uint64_t now = 1000;
    explicit One(uint32_t max_conns = 8) : cm(cfg(max_conns), out, log) {}
    CmConfig cfg(uint32_t n) {
        CmConfig c = test_config(0xB0B0, self);
        c.max_conns = n;
        return c;
    }
    void rx(const CmMad &m) {
        uint8_t b[kMadLen];
        ASSERT_EQ(build_cm_mad(m, b, sizeof b), kMadLen);
        cm.on_mad(peer, b, sizeof b, now);
    }
    void rx_bytes(const uint8_t *b, size_t n) { cm.on_mad(peer, b, n, now); }
    /* A MAD that names this connection but comes from another GID (a forger's). */
    void rx_from(const MadAddr &from, const CmMad &m) {
        uint8_t b[kMadLen];
        ASSERT_EQ(build_cm_mad(m, b, sizeof b), kMadLen);
        cm.on_mad(from, b, sizeof b, now);
    }
};

CmMad req(uint32_t comm_id = 0x1111, uint32_t qpn = 0x18) {
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Req);
    m.hdr.tid = 0xABCDEF0000000042ull;
    m.req.local_comm_id = comm_id;
    m.req.service_id = kSid;
    m.req.local_ca_guid = 0xA0A0;
    m.req.local_qpn = qpn;
    m.req.responder_resources = 4;
    m.req.initiator_depth = 2;
    m.req.remote_cm_response_timeout = 10;
    m.req.local_cm_response_timeout = 10;
    m.req.starting_psn = 0x123456;
    m.req.retry_count = 7;
    m.req.rnr_retry_count = 6;
    m.req.path_mtu = 3;
    m.req.max_cm_retries = 2;
    m.req.pkey = 0xFFFF;
    /* The path as the sender (One::peer) names it: from its GID to ours. */
    std::memcpy(m.req.primary.local_gid, addr_v4(0x0A4D0003).gid, 16);
    std::memcpy(m.req.primary.remote_gid, addr_v4(0x0A4D0002).gid, 16);
    m.req.primary.local_ack_timeout = 19;
    m.req.primary.hop_limit = 64;
    return m;
}

uint64_t total_drops(const CmManager &cm) {
    uint64_t n = 0;
    for (size_t i = 0; i < kCmCtrCount; ++i)
        if (std::string(cm_ctr_name(static_cast<CmCtr>(i))).rfind("drop_", 0) == 0)
            n += cm.counters().v[i];
    return n;
}

TEST(CmConn, CounterNames) {
    EXPECT_STREQ(cm_ctr_name(CmCtr::rx_mad), "rx_mad");
    EXPECT_STREQ(cm_ctr_name(CmCtr::api_refused), "api_refused");
    EXPECT_STREQ(cm_ctr_name(CmCtr::Count_), "?");
    EXPECT_STREQ(conn_state_name(ConnState::MraRepRcvd), "mra_rep_rcvd");
    EXPECT_STREQ(cm_event_name(CmEventType::TimewaitExit), "timewait_exit");
}

TEST(CmConn, TimeFields) {
    EXPECT_EQ(iba_time_ns(0), 4096u);
    EXPECT_EQ(iba_time_ns(20), 4096ull << 20); /* 4.29 s: rdma_cm's response timeout */
    EXPECT_EQ(iba_time_ns(31), 4096ull << 31);
    EXPECT_EQ(cm_wait_ns(16, 20), 2 * (4096ull << 16) + (4096ull << 20));
}

/* ---- malformed MADs: codec drops, counted per reason, nothing sent ---- */

TEST(CmHostile, MalformedMadsCounted) {
    One o;
    o.cm.listen(kSid);
    uint8_t good[kMadLen];
    ASSERT_EQ(build_cm_mad(req(), good, sizeof good), kMadLen);
    o.rx_bytes(good, 255); /* truncated */
    o.rx_bytes(good, 0);
    o.rx_bytes(nullptr, 256);
    uint8_t big[300] = {};
    std::memcpy(big, good, kMadLen);
    o.rx_bytes(big, sizeof big); /* trailing garbage */
    EXPECT_EQ(o.cm.counter(CmCtr::drop_bad_length), 4u);
    auto with = [&](size_t off, uint8_t v) {
        uint8_t b[kMadLen];
        std::memcpy(b, good, sizeof b);
        b[off] = v;
        o.rx_bytes(b, sizeof b);
    };
    with(0, 2);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_bad_base_version), 1u);
    with(1, 0x04); /* performance management */
    EXPECT_EQ(o.cm.counter(CmCtr::drop_not_cm_class), 1u);
    with(2, 1); /* CM class version 1 */
    with(2, 3);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_bad_class_version), 2u);
    with(3, 0x81);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_bad_method), 1u);
    with(17, 0x19); /* LAP */
    with(17, 0x1A); /* APR */
    with(17, 0x01); /* ClassPortInfo */
    with(17, 0xFF);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_unknown_attribute), 4u);
    EXPECT_EQ(o.cm.counter(CmCtr::rx_mad), 0u);
    EXPECT_TRUE(o.out.sent.empty());
    EXPECT_TRUE(o.log.events.empty());
    EXPECT_EQ(o.cm.live_conns(), 0u);
}

/* ---- well-formed but unwelcome ---- */

TEST(CmHostile, ReqUnknownServiceIdRejected) {
    One o;
    o.cm.listen(kSid + 1);
    o.rx(req());
    EXPECT_EQ(o.cm.counter(CmCtr::drop_req_no_listener), 1u);
    EXPECT_EQ(o.cm.counter(CmCtr::rej_sent_invalid_service_id), 1u);
    ASSERT_EQ(o.out.sent.size(), 1u);
    const CmMad r = o.out.sent[0].decode();
    ASSERT_EQ(r.hdr.attr_id, static_cast<uint16_t>(CmAttr::Rej));
    EXPECT_EQ(r.rej.reason, static_cast<uint16_t>(RejReason::InvalidServiceId));
    EXPECT_EQ(r.rej.remote_comm_id, 0x1111u);
    EXPECT_EQ(r.rej.message_rejected, 0);
    EXPECT_EQ(r.hdr.tid, req().hdr.tid); /* the answer is in the REQ's transaction */
    EXPECT_EQ(0, std::memcmp(o.out.sent[0].to.gid, o.peer.gid, 16));
    EXPECT_TRUE(o.log.events.empty());
    EXPECT_EQ(o.cm.live_conns(), 0u);
}

TEST(CmHostile, ReqBadTransportRejected) {
    One o;
    o.cm.listen(kSid);
    CmMad m = req();
    m.req.transport_type = 1; /* UC */
    o.rx(m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_req_bad_transport), 1u);
    ASSERT_EQ(o.out.sent.size(), 1u);
    EXPECT_EQ(o.out.sent[0].decode().rej.reason,
              static_cast<uint16_t>(RejReason::InvalidTransportType));
    EXPECT_EQ(o.cm.live_conns(), 0u);
}

TEST(CmHostile, ReqTableFullNoResources) {
    One o(1);
    o.cm.listen(kSid);
    o.rx(req(1, 0x18));
    o.rx(req(2, 0x20));
    EXPECT_EQ(o.cm.live_conns(), 1u);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_req_no_resources), 1u);
    ASSERT_EQ(o.out.sent.size(), 1u);
    EXPECT_EQ(o.out.sent[0].decode().rej.reason, static_cast<uint16_t>(RejReason::NoResources));
    EXPECT_EQ(o.log.count(CmEventType::ConnectRequest), 1u);
}

/* A REQ flood the application rejects leaves Timewait slots behind for as long as each
 * REQ's response timeout: a full table of them gives way (the one ending first) to the
 * next REQ instead of locking every peer out. */
TEST(CmHostile, TableOfTimewaitGivesWay) {
    One o(2);
    o.cm.listen(kSid);
    o.rx(req(1, 0x18));
    const uint32_t first = o.log.events.back().ev.conn;
    ASSERT_TRUE(o.cm.reject(first, nullptr, 0, o.now));
    o.now += 1000;
    o.rx(req(2, 0x20));
    ASSERT_TRUE(o.cm.reject(o.log.events.back().ev.conn, nullptr, 0, o.now));
    EXPECT_EQ(o.cm.state(first), ConnState::Timewait);
    o.rx(req(3, 0x28));
    EXPECT_EQ(o.cm.counter(CmCtr::timewait_evicted), 1u);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_req_no_resources), 0u);
    EXPECT_EQ(o.log.count(CmEventType::ConnectRequest), 3u);
    EXPECT_EQ(o.log.count(CmEventType::TimewaitExit), 1u);
    EXPECT_EQ(o.cm.state(first), ConnState::Idle); /* the older one went */
    /* Nothing left to give: pending requests are not evicted. */
    o.rx(req(4, 0x30));
    o.rx(req(5, 0x38));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_req_no_resources), 1u);
}

TEST(CmHostile, RepNeverRequested) {
    One o;
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Rep);
    m.rep.local_comm_id = 0x7777;
    m.rep.remote_comm_id = 0x1234; /* no such connection here */
    m.rep.local_qpn = 0x99;
    o.rx(m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rep_unknown), 1u);
    ASSERT_EQ(o.out.sent.size(), 1u); /* as ib_cm: REJ invalid comm ID to its sender */
    const CmMad r = o.out.sent[0].decode();
    EXPECT_EQ(r.rej.reason, static_cast<uint16_t>(RejReason::InvalidCommId));
    EXPECT_EQ(r.rej.remote_comm_id, 0x7777u);
    EXPECT_EQ(r.rej.message_rejected, 1);
    EXPECT_TRUE(o.log.events.empty());
    EXPECT_EQ(o.cm.live_conns(), 0u);
    /* A REP naming a passive connection (we sent no REQ for it) is just as unknown. */
    o.cm.listen(kSid);
    o.rx(req());
    m.rep.remote_comm_id = o.log.events.back().ev.conn;
    o.rx(m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rep_unknown), 2u);
    EXPECT_EQ(o.cm.state(m.rep.remote_comm_id), ConnState::ReqRcvd);
}

TEST(CmHostile, DreqUnknownConnection) {
    One o;
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Dreq);
    m.hdr.tid = 99;
    m.dreq.local_comm_id = 0x5555;
    m.dreq.remote_comm_id = 0x6666;
    o.rx(m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_dreq_unknown), 1u);
    /* ib_cm answers a DREQ it cannot place so that its sender stops retrying. */
    ASSERT_EQ(o.out.sent.size(), 1u);
    const CmMad d = o.out.sent[0].decode();
    EXPECT_EQ(d.hdr.attr_id, static_cast<uint16_t>(CmAttr::Drep));
    EXPECT_EQ(d.drep.remote_comm_id, 0x5555u);
    EXPECT_EQ(d.hdr.tid, 99u);
    EXPECT_TRUE(o.log.events.empty());
}

TEST(CmHostile, StrayMessagesDropped) {
    One o;
    for (CmAttr a : {CmAttr::Rtu, CmAttr::Mra, CmAttr::Rej, CmAttr::Drep}) {
        CmMad m{};
        m.hdr.attr_id = static_cast<uint16_t>(a);
        m.rtu.remote_comm_id = m.mra.remote_comm_id = m.rej.remote_comm_id = m.drep.remote_comm_id =
            0x4242;
        o.rx(m);
    }
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rtu_unknown), 1u);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_mra_unknown), 1u);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_unknown), 1u);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_drep_unknown), 1u);
    EXPECT_EQ(total_drops(o.cm), 4u);
    EXPECT_TRUE(o.out.sent.empty());
    EXPECT_TRUE(o.log.events.empty());
}

TEST(CmHostile, WrongPeerIdsDoNotTouchConnection) {
    /* MADs that name our connection but not its peer's comm ID (a guess, or a stale
     * peer): dropped, the connection stays as it is. */
    One o;
    o.cm.listen(kSid);
    o.rx(req());
    const uint32_t id = o.log.events.back().ev.conn;
    AcceptParams p;
    p.local_qpn = 0x19;
    ASSERT_TRUE(o.cm.accept(id, p, o.now));
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Rtu);
    m.rtu.remote_comm_id = id;
    m.rtu.local_comm_id = 0x2222; /* not the REQ's 0x1111 */
    o.rx(m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rtu_unknown), 1u);
    m = CmMad{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Rej);
    m.rej.remote_comm_id = id;
    m.rej.local_comm_id = 0x2222;
    o.rx(m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_unknown), 1u);
    m = CmMad{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Dreq);
    m.dreq.remote_comm_id = id;
    m.dreq.local_comm_id = 0x1111;
    m.dreq.remote_qpn = 0x77; /* not our QPN */
    o.rx(m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_dreq_unknown), 1u);
    EXPECT_EQ(o.cm.state(id), ConnState::RepSent);
    /* The right RTU then establishes it. */
    m = CmMad{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Rtu);
    m.rtu.remote_comm_id = id;
    m.rtu.local_comm_id = 0x1111;
    o.rx(m);
    EXPECT_EQ(o.cm.state(id), ConnState::Established);
    /* And a second RTU is a counted duplicate. */
    o.rx(m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rtu_state), 1u);
}

TEST(CmHostile, StaleConnection) {
    /* The peer's QP 0x18 connected; a REQ with a new comm ID from the same QP and GID
     * means the peer lost its state: REJ stale connection. */
    One o;
    o.cm.listen(kSid);
    o.rx(req(0x1111, 0x18));
    const uint32_t id = o.log.events.back().ev.conn;
    AcceptParams p;
    ASSERT_TRUE(o.cm.accept(id, p, o.now));
    o.out.sent.clear();
    o.rx(req(0x2222, 0x18));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_req_stale), 1u);
    ASSERT_EQ(o.out.sent.size(), 1u);
    EXPECT_EQ(o.out.sent[0].decode().rej.reason, static_cast<uint16_t>(RejReason::StaleConn));
    EXPECT_EQ(o.log.count(CmEventType::ConnectRequest), 1u);
}

/* The passive side's QP sends to the REQ's primary path: a REQ whose path names
 * another host than the one the MAD came from would aim the target's traffic (READ
 * responses, ACKs, retries) at a third host. It is rejected (REJ invalid GID, IBTA
 * reason 12, to the MAD's real source) and counted; no connection is kept. */
TEST(CmHostile, ReqPathGidNotTheSenderRejected) {
    One o;
    o.cm.listen(kSid);
    CmMad m = req();
    std::memcpy(m.req.primary.local_gid, addr_v4(0x0A4D0009).gid, 16); /* a third host */
    o.rx(m);
    EXPECT_EQ(o.log.count(CmEventType::ConnectRequest), 0u);
    EXPECT_EQ(o.cm.live_conns(), 0u);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_req_path_gid), 1u);
    EXPECT_EQ(o.cm.counter(CmCtr::rej_sent_invalid_gid), 1u);
    ASSERT_EQ(o.out.sent.size(), 1u);
    const CmMad r = o.out.sent[0].decode();
    ASSERT_EQ(r.hdr.attr_id, static_cast<uint16_t>(CmAttr::Rej));
    EXPECT_EQ(r.rej.reason, static_cast<uint16_t>(RejReason::InvalidGid));
    EXPECT_EQ(r.rej.remote_comm_id, 0x1111u);
    EXPECT_EQ(0, std::memcmp(o.out.sent[0].to.gid, o.peer.gid, 16));
    /* The same REQ with the sender's own GID is taken, its path towards the sender. */
    o.rx(req(0x2222));
    ASSERT_EQ(o.log.count(CmEventType::ConnectRequest), 1u);
    EXPECT_EQ(0, std::memcmp(o.log.events.back().ev.qp.remote_gid, o.peer.gid, 16));
}

TEST(CmHostile, DuplicateReqAnswers) {
    One o;
    o.cm.listen(kSid);
    o.rx(req());
    const uint32_t id = o.log.events.back().ev.conn;
    o.rx(req()); /* deciding: MRA */
    ASSERT_EQ(o.out.sent.size(), 1u);
    const CmMad a = o.out.sent[0].decode();
    EXPECT_EQ(a.hdr.attr_id, static_cast<uint16_t>(CmAttr::Mra));
    EXPECT_EQ(a.mra.message_mraed, 0);
    EXPECT_EQ(a.mra.remote_comm_id, 0x1111u);
    EXPECT_EQ(a.mra.local_comm_id, id);
    o.rx(req()); /* the MRA again */
    EXPECT_EQ(o.cm.counter(CmCtr::resend_mra), 1u);
    AcceptParams p;
    ASSERT_TRUE(o.cm.accept(id, p, o.now));
    o.rx(req()); /* the REP again */
    EXPECT_EQ(o.cm.counter(CmCtr::resend_rep), 1u);
    ASSERT_EQ(o.out.sent.size(), 4u);
    EXPECT_EQ(o.out.sent[3].bytes, o.out.sent[2].bytes);
    EXPECT_EQ(o.log.count(CmEventType::ConnectRequest), 1u);
}

TEST(CmHostile, HostileTimeoutsClamped) {
    /* A REQ asking for 2^31 * 4 us (2.4 hours) per retry: we wait at most the limit. */
    One o;
    o.cm.listen(kSid);
    CmMad m = req();
    m.req.local_cm_response_timeout = 31;
    m.req.max_cm_retries = 15;
    o.rx(m);
    AcceptParams p;
    ASSERT_TRUE(o.cm.accept(o.log.events.back().ev.conn, p, o.now));
    const CmConfig c = o.cfg(8);
    EXPECT_EQ(o.cm.next_deadline(), o.now + cm_wait_ns(c.packet_life_time, 24));
}

/* ---- REJ and the other MADs of a connection: only from its peer, in a state that
 * takes them (issue 33: a forged REJ tore established connections down) ---- */

const MadAddr kStranger = addr_v4(0x0A4D0099);

CmMad rej(uint32_t to, uint32_t from_id, uint8_t msg, RejReason why) {
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Rej);
    m.rej.remote_comm_id = to;
    m.rej.local_comm_id = from_id;
    m.rej.message_rejected = msg;
    m.rej.reason = static_cast<uint16_t>(why);
    return m;
}
CmMad rtu(uint32_t to, uint32_t from_id) {
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Rtu);
    m.rtu.remote_comm_id = to;
    m.rtu.local_comm_id = from_id;
    return m;
}
CmMad dreq(uint32_t to, uint32_t from_id, uint32_t qpn) {
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Dreq);
    m.hdr.tid = 0x77;
    m.dreq.remote_comm_id = to;
    m.dreq.local_comm_id = from_id;
    m.dreq.remote_qpn = qpn;
    return m;
}
CmMad rep(uint32_t to, uint32_t from_id) {
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Rep);
    m.rep.remote_comm_id = to;
    m.rep.local_comm_id = from_id;
    m.rep.local_qpn = 0x44;
    m.rep.local_ca_guid = 0xA0A0;
    return m;
}

/* Passive: REQ 0x1111 in, accepted with QPN 0x19 (RepSent). */
uint32_t passive_rep_sent(One &o) {
    o.cm.listen(kSid);
    o.rx(req());
    const uint32_t id = o.log.events.back().ev.conn;
    AcceptParams p;
    p.local_qpn = 0x19;
    EXPECT_TRUE(o.cm.accept(id, p, o.now));
    return id;
}
uint32_t passive_established(One &o) {
    const uint32_t id = passive_rep_sent(o);
    o.rx(rtu(id, 0x1111));
    EXPECT_EQ(o.cm.state(id), ConnState::Established);
    return id;
}
/* Active: REQ out to o.peer (ReqSent). */
uint32_t active_req_sent(One &o) {
    ConnectParams cp;
    cp.peer = o.peer;
    cp.local_qpn = 0x21;
    const uint32_t id = o.cm.connect(cp, o.now);
    EXPECT_NE(id, 0u);
    return id;
}

TEST(CmHostile, ForgedRejAgainstEstablishedDropped) {
    One o;
    const uint32_t id = passive_established(o);
    /* The peer's comm ID left 0 (the check used to be skipped then). */
    o.rx(rej(id, 0, 2, RejReason::ConsumerDefined));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_unknown), 1u);
    /* Both IDs right, from the peer: an established connection takes no REJ. */
    o.rx(rej(id, 0x1111, 2, RejReason::ConsumerDefined));
    o.rx(rej(id, 0x1111, 2, RejReason::Timeout));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_state), 2u);
    /* Both IDs right, from another GID. */
    o.rx_from(kStranger, rej(id, 0x1111, 2, RejReason::ConsumerDefined));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_source), 1u);
    EXPECT_EQ(o.cm.counter(CmCtr::rej_rcvd), 0u);
    EXPECT_EQ(o.cm.state(id), ConnState::Established);
    EXPECT_EQ(o.log.count(CmEventType::Rejected), 0u);
    /* The connection still works: its peer's DREQ closes it, answered. */
    const size_t sent = o.out.sent.size();
    o.rx(dreq(id, 0x1111, 0x19));
    EXPECT_EQ(o.cm.state(id), ConnState::Timewait);
    EXPECT_EQ(o.log.count(CmEventType::Disconnected), 1u);
    ASSERT_EQ(o.out.sent.size(), sent + 1);
    EXPECT_EQ(o.out.sent.back().attr(), static_cast<uint16_t>(CmAttr::Drep));
}

TEST(CmHostile, ForgedRejAgainstActiveEstablishedDropped) {
    One o;
    const uint32_t id = active_req_sent(o);
    o.rx(rep(id, 0x3333));
    ASSERT_EQ(o.cm.state(id), ConnState::Established);
    o.rx(rej(id, 0x3333, 2, RejReason::ConsumerDefined));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_state), 1u);
    o.rx(rej(id, 0, 2, RejReason::Timeout));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_unknown), 1u);
    o.rx_from(kStranger, rej(id, 0x3333, 2, RejReason::Timeout));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_source), 1u);
    /* The passive side's Timeout REJ (every RTU lost: CmLink.EveryRtuLostPassiveGivesUp)
     * comes while it still resends its REP; long after that it is no longer one. */
    const CmConfig c = o.cfg(8);
    o.now += (c.max_cm_retries + 3u) * cm_wait_ns(c.packet_life_time, c.cm_response_timeout);
    o.rx(rej(id, 0x3333, 2, RejReason::Timeout));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_state), 2u);
    EXPECT_EQ(o.cm.state(id), ConnState::Established);
    EXPECT_EQ(o.log.count(CmEventType::Rejected), 0u);
    EXPECT_TRUE(o.cm.disconnect(id, nullptr, 0, o.now));
}

TEST(CmHostile, RejDuringSetupStillTaken) {
    {
        /* Active, REQ out: the peer's CM rejects it (no comm ID of its own: it kept
         * nothing). Not from another GID, not as a REJ of a REP (the passive side's). */
        One o;
        const uint32_t id = active_req_sent(o);
        o.rx_from(kStranger, rej(id, 0, 0, RejReason::ConsumerDefined));
        EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_source), 1u);
        o.rx(rej(id, 0, 1, RejReason::ConsumerDefined));
        EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_state), 1u);
        EXPECT_EQ(o.cm.state(id), ConnState::ReqSent);
        o.rx(rej(id, 0, 0, RejReason::InvalidServiceId));
        EXPECT_EQ(o.cm.state(id), ConnState::Timewait);
        ASSERT_EQ(o.log.count(CmEventType::Rejected), 1u);
        EXPECT_EQ(o.log.first(CmEventType::Rejected)->ev.rej_reason,
                  static_cast<uint16_t>(RejReason::InvalidServiceId));
    }
    {
        /* Passive, REP out: the active side rejects the REP. */
        One o;
        const uint32_t id = passive_rep_sent(o);
        o.rx(rej(id, 0x1111, 0, RejReason::ConsumerDefined)); /* "REQ rejected": not ours */
        o.rx(rej(id, 0x2222, 1, RejReason::ConsumerDefined)); /* not the peer's ID */
        o.rx_from(kStranger, rej(id, 0x1111, 1, RejReason::ConsumerDefined));
        EXPECT_EQ(o.cm.state(id), ConnState::RepSent);
        o.rx(rej(id, 0x1111, 1, RejReason::ConsumerDefined));
        EXPECT_EQ(o.cm.state(id), ConnState::Timewait);
        EXPECT_EQ(o.log.count(CmEventType::Rejected), 1u);
        EXPECT_EQ(o.cm.counter(CmCtr::drop_rej_state) + o.cm.counter(CmCtr::drop_rej_unknown) +
                      o.cm.counter(CmCtr::drop_rej_source),
                  3u);
    }
    {
        /* Passive, still deciding: the active side gave up (its Timeout REJ). */
        One o;
        o.cm.listen(kSid);
        o.rx(req());
        const uint32_t id = o.log.events.back().ev.conn;
        o.rx(rej(id, 0x1111, 2, RejReason::Timeout));
        EXPECT_EQ(o.cm.state(id), ConnState::Timewait);
        EXPECT_EQ(o.log.count(CmEventType::Rejected), 1u);
    }
}

TEST(CmHostile, ConnectionMadsFromAnotherSourceDropped) {
    One o;
    const uint32_t id = passive_rep_sent(o);
    o.rx_from(kStranger, rtu(id, 0x1111));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_rtu_source), 1u);
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Mra);
    m.mra.remote_comm_id = id;
    m.mra.local_comm_id = 0x1111;
    m.mra.message_mraed = 1;
    m.mra.service_timeout = 20;
    o.rx_from(kStranger, m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_mra_source), 1u);
    EXPECT_EQ(o.cm.state(id), ConnState::RepSent);
    o.rx(rtu(id, 0x1111));
    ASSERT_EQ(o.cm.state(id), ConnState::Established);
    /* A DREQ with every field right from elsewhere: no DREP to the forger either. */
    const size_t sent = o.out.sent.size();
    o.rx_from(kStranger, dreq(id, 0x1111, 0x19));
    EXPECT_EQ(o.cm.counter(CmCtr::drop_dreq_source), 1u);
    EXPECT_EQ(o.out.sent.size(), sent);
    EXPECT_EQ(o.cm.state(id), ConnState::Established);
    ASSERT_TRUE(o.cm.disconnect(id, nullptr, 0, o.now));
    m = CmMad{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Drep);
    m.drep.remote_comm_id = id;
    m.drep.local_comm_id = 0x1111;
    o.rx_from(kStranger, m);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_drep_source), 1u);
    EXPECT_EQ(o.cm.state(id), ConnState::DreqSent);
    o.rx(m);
    EXPECT_EQ(o.cm.state(id), ConnState::Timewait);
    EXPECT_EQ(o.log.count(CmEventType::Disconnected), 1u);
    /* Active: a REP from elsewhere neither establishes nor gets a REJ. */
    One a;
    const uint32_t aid = active_req_sent(a);
    const size_t asent = a.out.sent.size();
    a.rx_from(kStranger, rep(aid, 0x3333));
    EXPECT_EQ(a.cm.counter(CmCtr::drop_rep_source), 1u);
    EXPECT_EQ(a.cm.state(aid), ConnState::ReqSent);
    EXPECT_EQ(a.out.sent.size(), asent);
    EXPECT_TRUE(a.log.events.empty());
}

TEST(CmHostile, DuplicateReqFromAnotherSourceDropped) {
    /* A copy of a REQ we hold (same comm ID and CA GUID) from another GID: not the active
     * side resending it. No MRA, no REP again, no REJ to the forger; nothing changes. */
    One o;
    o.cm.listen(kSid);
    o.rx(req());
    const uint32_t id = o.log.events.back().ev.conn;
    o.rx_from(kStranger, req());
    EXPECT_EQ(o.cm.counter(CmCtr::drop_req_source), 1u);
    EXPECT_EQ(o.cm.state(id), ConnState::ReqRcvd);
    EXPECT_TRUE(o.out.sent.empty());
    AcceptParams p;
    ASSERT_TRUE(o.cm.accept(id, p, o.now));
    o.rx_from(kStranger, req());
    EXPECT_EQ(o.cm.counter(CmCtr::drop_req_source), 2u);
    EXPECT_EQ(o.cm.counter(CmCtr::resend_rep), 0u);
    EXPECT_EQ(o.log.count(CmEventType::ConnectRequest), 1u);
    o.rx(req()); /* the peer's own copy still gets its REP again */
    EXPECT_EQ(o.cm.counter(CmCtr::resend_rep), 1u);
}

TEST(CmConn, ApiRefusals) {
    One o;
    AcceptParams ap;
    EXPECT_FALSE(o.cm.accept(0, ap, o.now));
    EXPECT_FALSE(o.cm.accept(0x12345, ap, o.now));
    EXPECT_FALSE(o.cm.disconnect(0x12345, nullptr, 0, o.now));
    EXPECT_FALSE(o.cm.reject(0x12345, nullptr, 0, o.now));
    EXPECT_FALSE(o.cm.notify_comm_est(0x12345, o.now));
    ConnectParams cp;
    cp.peer = o.peer;
    cp.private_data_len = kReqPrivLen + 1;
    uint8_t big[300] = {};
    cp.private_data = big;
    EXPECT_EQ(o.cm.connect(cp, o.now), 0u);
    cp.private_data_len = kReqPrivLen;
    const uint32_t id = o.cm.connect(cp, o.now);
    ASSERT_NE(id, 0u);
    EXPECT_FALSE(o.cm.accept(id, ap, o.now));             /* an active connection */
    EXPECT_FALSE(o.cm.disconnect(id, nullptr, 0, o.now)); /* not established */
    EXPECT_TRUE(o.cm.listen(kSid));
    EXPECT_FALSE(o.cm.listen(kSid));
    EXPECT_TRUE(o.cm.unlisten(kSid));
    EXPECT_FALSE(o.cm.unlisten(kSid));
    EXPECT_EQ(o.cm.counter(CmCtr::api_refused), 9u);
}

TEST(CmConn, CommIdsDifferOnReuse) {
    /* One slot, reused: the comm ID changes, and the old one no longer finds anything. */
    One o(1);
    ConnectParams cp;
    cp.peer = o.peer;
    const uint32_t a = o.cm.connect(cp, o.now);
    ASSERT_NE(a, 0u);
    EXPECT_EQ(o.cm.connect(cp, o.now), 0u); /* full */
    /* No answer: retries, give up, timewait, free. */
    while (o.cm.live_conns())
        o.cm.on_time(o.cm.next_deadline());
    const uint32_t b = o.cm.connect(cp, o.now);
    ASSERT_NE(b, 0u);
    EXPECT_NE(a, b);
    EXPECT_EQ(o.cm.state(a), ConnState::Idle);
    EXPECT_EQ(o.cm.state(b), ConnState::ReqSent);
}

TEST(CmConn, SinkRefusalCountedThenRetried) {
    One o;
    o.out.refuse = true;
    ConnectParams cp;
    cp.peer = o.peer;
    const uint32_t id = o.cm.connect(cp, o.now);
    EXPECT_EQ(o.cm.counter(CmCtr::tx_failed), 1u);
    o.out.refuse = false;
    o.cm.on_time(o.cm.next_deadline());
    ASSERT_EQ(o.out.sent.size(), 1u);
    EXPECT_EQ(o.out.sent[0].attr(), static_cast<uint16_t>(CmAttr::Req));
    EXPECT_EQ(o.cm.state(id), ConnState::ReqSent);
}

} // namespace
