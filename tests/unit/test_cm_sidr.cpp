/* SPDX-License-Identifier: BSD-3-Clause */
/* SIDR (IBTA 12.11, rdma_cm's UDP port space): SIDR_REQ / SIDR_REP at the IBTA offsets
 * from hand-built bytes, malformed ones refused; the exchange between two CmManagers over
 * the lossy in-memory link (lost requests retried, lost replies answered again from
 * Timewait, no answer -> unreachable, no listener -> "not supported"); single hostile
 * MADs counted and dropped; and the same through CmChannel with rdma_cm's IP header. */
#include <gtest/gtest.h>

#include <droce/cm.h>

#include <cstring>
#include <deque>
#include <vector>

#include "cm_test_link.h"
#include "cm_time.h"

using namespace droce::cm;
using namespace droce::cm::test;

namespace {

constexpr uint64_t kUdpSid = 0x0000000001114E20ull; /* RDMA_PS_UDP, port 20000 */
constexpr uint32_t kQkey = 0x01234567;

/* A MAD header for attr, method Send, TID 0x0102030405060708. */
void hdr(uint8_t *b, uint16_t attr) {
    std::memset(b, 0, kMadLen);
    b[0] = 1;
    b[1] = 0x07;
    b[2] = 2;
    b[3] = 0x03;
    for (int i = 0; i < 8; ++i)
        b[8 + i] = static_cast<uint8_t>(i + 1);
    b[16] = static_cast<uint8_t>(attr >> 8);
    b[17] = static_cast<uint8_t>(attr);
}

TEST(SidrCodec, ReqAtIbtaOffsets) {
    uint8_t b[kMadLen];
    hdr(b, 0x0017);
    uint8_t *d = b + kMadHdrLen;
    const uint8_t id[] = {0x11, 0x22, 0x33, 0x44};
    std::memcpy(d, id, 4);    /* request ID at 0 */
    d[4] = 0xFF, d[5] = 0xFF; /* P_Key at 4 */
    const uint8_t sid[] = {0, 0, 0, 0, 0x01, 0x11, 0x4E, 0x20};
    std::memcpy(d + 8, sid, 8); /* service ID at 8 */
    d[16] = 0x00, d[17] = 0x40; /* private data at 16: rdma_cm's header, IPv4 */
    d[16 + 215] = 0xEE;         /* its last byte */
    CmMad m{};
    ASSERT_EQ(parse_cm_mad(b, sizeof b, m), MadError::Ok);
    EXPECT_EQ(m.hdr.tid, 0x0102030405060708ull);
    EXPECT_EQ(m.sidr_req.request_id, 0x11223344u);
    EXPECT_EQ(m.sidr_req.pkey, 0xFFFF);
    EXPECT_EQ(m.sidr_req.service_id, kUdpSid);
    EXPECT_EQ(m.sidr_req.private_data[1], 0x40);
    EXPECT_EQ(m.sidr_req.private_data[215], 0xEE);
    uint8_t again[kMadLen];
    ASSERT_EQ(build_cm_mad(m, again, sizeof again), kMadLen);
    EXPECT_EQ(0, std::memcmp(b, again, kMadLen));
    EXPECT_STREQ(cm_attr_name(0x0017), "SIDR_REQ");
}

TEST(SidrCodec, RepAtIbtaOffsets) {
    uint8_t b[kMadLen];
    hdr(b, 0x0018);
    uint8_t *d = b + kMadHdrLen;
    d[0] = 0xCA, d[1] = 0xFE, d[2] = 0xBA, d[3] = 0xBE; /* request ID */
    d[4] = 0;                                           /* status: QP valid */
    d[5] = 0;                                           /* additional info length */
    d[8] = 0x00, d[9] = 0x01, d[10] = 0x2A;             /* QPN 0x00012A */
    const uint8_t sid[] = {0, 0, 0, 0, 0x01, 0x11, 0x4E, 0x20};
    std::memcpy(d + 12, sid, 8);                            /* service ID at 12 */
    d[20] = 0x01, d[21] = 0x23, d[22] = 0x45, d[23] = 0x67; /* Q_Key at 20 */
    d[24] = 0xC1;                                           /* ClassPortInfo at 24 */
    d[96] = 'o', d[97] = 'k';                               /* private data at 96 */
    d[231] = 0x5A;                                          /* its last byte (136) */
    CmMad m{};
    ASSERT_EQ(parse_cm_mad(b, sizeof b, m), MadError::Ok);
    EXPECT_EQ(m.sidr_rep.request_id, 0xCAFEBABEu);
    EXPECT_EQ(m.sidr_rep.status, 0);
    EXPECT_EQ(m.sidr_rep.qpn, 0x12Au);
    EXPECT_EQ(m.sidr_rep.service_id, kUdpSid);
    EXPECT_EQ(m.sidr_rep.qkey, kQkey);
    EXPECT_EQ(m.sidr_rep.info[0], 0xC1);
    EXPECT_EQ(m.sidr_rep.private_data[0], 'o');
    EXPECT_EQ(m.sidr_rep.private_data[135], 0x5A);
    uint8_t again[kMadLen];
    ASSERT_EQ(build_cm_mad(m, again, sizeof again), kMadLen);
    EXPECT_EQ(0, std::memcmp(b, again, kMadLen));
    /* Byte 11 (the vendor ID's low byte beside the QPN) is not part of the QPN. */
    d[11] = 0x99;
    ASSERT_EQ(parse_cm_mad(b, sizeof b, m), MadError::Ok);
    EXPECT_EQ(m.sidr_rep.qpn, 0x12Au);
}

TEST(SidrCodec, MalformedRefused) {
    uint8_t b[kMadLen];
    CmMad m{};
    hdr(b, 0x0018);
    b[kMadHdrLen + 4] = 6; /* status: none IBTA defines */
    EXPECT_EQ(parse_cm_mad(b, sizeof b, m), MadError::BadSidrRep);
    b[kMadHdrLen + 4] = 5;
    EXPECT_EQ(parse_cm_mad(b, sizeof b, m), MadError::Ok);
    b[kMadHdrLen + 5] = 73; /* longer than the 72-byte ClassPortInfo */
    EXPECT_EQ(parse_cm_mad(b, sizeof b, m), MadError::BadSidrRep);
    hdr(b, 0x0017);
    b[3] = 0x81; /* a GetResp, not a Send */
    EXPECT_EQ(parse_cm_mad(b, sizeof b, m), MadError::BadMethod);
    hdr(b, 0x0017);
    EXPECT_EQ(parse_cm_mad(b, kMadLen - 1, m), MadError::BadLength);
    EXPECT_STREQ(mad_error_name(MadError::BadSidrRep), "bad_sidr_rep");
}

/* ---- two CmManagers ---- */

CmMad sidr_req_mad(uint32_t request_id, uint64_t sid = kUdpSid) {
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::SidrReq);
    m.hdr.tid = 0x77;
    m.sidr_req.request_id = request_id;
    m.sidr_req.pkey = 0xFFFF;
    m.sidr_req.service_id = sid;
    m.sidr_req.private_data[0] = 'q';
    return m;
}

/* b listens on the UDP service ID and answers each request with accept (QPN 0x2A). */
struct SidrLink : Link {
    bool refuse = false;
    SidrLink() {
        EXPECT_TRUE(b.cm.listen(kUdpSid, 5));
        b.log.on = [this](const CmEvent &ev) {
            if (ev.type != CmEventType::SidrRequest)
                return;
            const uint8_t pd[] = "pong";
            if (refuse)
                EXPECT_TRUE(b.cm.sidr_reject(ev.conn, SidrStatus::Reject, pd, sizeof pd, now));
            else
                EXPECT_TRUE(b.cm.sidr_accept(ev.conn, 0x2A, kQkey, pd, sizeof pd, now));
        };
    }
    uint32_t request() {
        SidrParams p;
        p.service_id = kUdpSid;
        p.peer = b.self;
        const uint8_t pd[] = "ping";
        p.private_data = pd;
        p.private_data_len = sizeof pd;
        p.user_ctx = 3;
        return a.cm.sidr_request(p, now);
    }
};

TEST(CmSidr, Resolved) {
    SidrLink l;
    const uint32_t id = l.request();
    ASSERT_NE(id, 0u);
    EXPECT_EQ(l.a.cm.state(id), ConnState::SidrReqSent);
    ASSERT_TRUE(l.run());
    const LoggedEvent *rq = l.b.log.first(CmEventType::SidrRequest);
    ASSERT_NE(rq, nullptr);
    EXPECT_EQ(rq->ev.user_ctx, 5u);
    EXPECT_EQ(rq->ev.service_id, kUdpSid);
    ASSERT_EQ(rq->pd.size(), kSidrReqPrivLen);
    EXPECT_EQ(0, std::memcmp(rq->pd.data(), "ping", 5));
    const LoggedEvent *r = l.a.log.first(CmEventType::SidrResolved);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ev.conn, id);
    EXPECT_EQ(r->ev.user_ctx, 3u);
    EXPECT_EQ(r->ev.qp.remote_qpn, 0x2Au);
    EXPECT_EQ(r->ev.qkey, kQkey);
    EXPECT_EQ(r->ev.sidr_status, 0);
    ASSERT_EQ(r->pd.size(), kSidrRepPrivLen);
    EXPECT_EQ(0, std::memcmp(r->pd.data(), "pong", 5));
    EXPECT_EQ(l.a.log.events.size(), 1u);
    /* The active side keeps nothing; the passive one held its answer until Timewait
     * ended (run() ran every timer). */
    EXPECT_EQ(l.a.cm.live_conns(), 0u);
    EXPECT_EQ(l.b.cm.live_conns(), 0u);
    EXPECT_EQ(l.a.cm.counter(CmCtr::sidr_resolved), 1u);
    EXPECT_EQ(l.b.cm.counter(CmCtr::tx_sidr_rep), 1u);
}

TEST(CmSidr, Rejected) {
    SidrLink l;
    l.refuse = true;
    ASSERT_NE(l.request(), 0u);
    ASSERT_TRUE(l.run());
    const LoggedEvent *r = l.a.log.first(CmEventType::SidrRejected);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ev.sidr_status, static_cast<uint8_t>(SidrStatus::Reject));
    EXPECT_EQ(0, std::memcmp(r->pd.data(), "pong", 5));
    EXPECT_EQ(l.a.log.count(CmEventType::SidrResolved), 0u);
    EXPECT_EQ(l.a.cm.counter(CmCtr::sidr_rejected), 1u);
}

TEST(CmSidr, NoListenerNotSupported) {
    SidrLink l;
    ASSERT_TRUE(l.b.cm.unlisten(kUdpSid));
    ASSERT_NE(l.request(), 0u);
    ASSERT_TRUE(l.run());
    const LoggedEvent *r = l.a.log.first(CmEventType::SidrRejected);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ev.sidr_status, static_cast<uint8_t>(SidrStatus::Unsupported));
    EXPECT_EQ(l.b.cm.counter(CmCtr::drop_sidr_req_no_listener), 1u);
    EXPECT_TRUE(l.b.log.events.empty());
    EXPECT_EQ(l.b.cm.live_conns(), 0u);
}

TEST(CmSidr, LostRequestRetried) {
    SidrLink l;
    l.a.wire.lose = [](uint16_t attr, unsigned n) {
        return attr == static_cast<uint16_t>(CmAttr::SidrReq) && n < 2;
    };
    ASSERT_NE(l.request(), 0u);
    ASSERT_TRUE(l.run());
    EXPECT_EQ(l.a.cm.counter(CmCtr::resend_sidr_req), 2u);
    EXPECT_EQ(l.a.log.count(CmEventType::SidrResolved), 1u);
    EXPECT_EQ(l.b.log.count(CmEventType::SidrRequest), 1u);
}

TEST(CmSidr, LostReplyAnsweredAgain) {
    SidrLink l;
    l.b.wire.lose = [](uint16_t attr, unsigned n) {
        return attr == static_cast<uint16_t>(CmAttr::SidrRep) && n == 0;
    };
    ASSERT_NE(l.request(), 0u);
    ASSERT_TRUE(l.run());
    /* The resent SIDR_REQ found the answered request: the same SIDR_REP, no second
     * SidrRequest for the application. */
    EXPECT_EQ(l.b.log.count(CmEventType::SidrRequest), 1u);
    EXPECT_EQ(l.b.cm.counter(CmCtr::resend_sidr_rep), 1u);
    EXPECT_EQ(l.b.cm.counter(CmCtr::tx_sidr_rep), 1u);
    const LoggedEvent *r = l.a.log.first(CmEventType::SidrResolved);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ev.qp.remote_qpn, 0x2Au);
    EXPECT_EQ(r->ev.qkey, kQkey);
}

TEST(CmSidr, NoAnswerUnreachable) {
    SidrLink l;
    l.a.wire.lose = [](uint16_t, unsigned) { return true; };
    const uint64_t t0 = l.now;
    ASSERT_NE(l.request(), 0u);
    ASSERT_TRUE(l.run());
    EXPECT_EQ(l.a.log.count(CmEventType::SidrUnreachable), 1u);
    EXPECT_EQ(l.a.cm.counter(CmCtr::resend_sidr_req), 3u); /* the config's 3 retries */
    EXPECT_EQ(l.a.cm.counter(CmCtr::timeout_sidr_req), 1u);
    EXPECT_EQ(l.a.cm.live_conns(), 0u);
    /* Each try waited 2 packet lives + the response timeout (test_config: 8, 10). */
    EXPECT_EQ(l.now - t0, 4 * cm_wait_ns(8, 10));
}

/* ---- single MADs against one manager ---- */

struct OneSidr {
    MadAddr self = addr_v4(0x0A4D0002);
    MadAddr peer = addr_v4(0x0A4D0003);
    RecordSink out;
    EventLog log;
    CmManager cm{test_config(0xB0B0, self), out, log};
    uint64_t now = 1000;
    void rx(const CmMad &m, const MadAddr *from = nullptr) {
        uint8_t b[kMadLen];
        ASSERT_EQ(build_cm_mad(m, b, sizeof b), kMadLen);
        cm.on_mad(from ? *from : peer, b, sizeof b, now);
    }
};

TEST(CmSidr, DuplicateRequests) {
    OneSidr o;
    ASSERT_TRUE(o.cm.listen(kUdpSid));
    o.rx(sidr_req_mad(0x51));
    ASSERT_EQ(o.log.count(CmEventType::SidrRequest), 1u);
    const uint32_t h = o.log.events[0].ev.conn;
    EXPECT_EQ(o.cm.state(h), ConnState::SidrReqRcvd);
    o.rx(sidr_req_mad(0x51)); /* while deciding: dropped, counted */
    EXPECT_EQ(o.cm.counter(CmCtr::drop_sidr_req_dup), 1u);
    EXPECT_TRUE(o.out.sent.empty());
    ASSERT_TRUE(o.cm.sidr_accept(h, 0x99, kQkey, nullptr, 0, o.now));
    EXPECT_FALSE(o.cm.sidr_accept(h, 0x99, kQkey, nullptr, 0, o.now)); /* answered */
    ASSERT_EQ(o.out.sent.size(), 1u);
    o.rx(sidr_req_mad(0x51)); /* after: the same answer again */
    ASSERT_EQ(o.out.sent.size(), 2u);
    EXPECT_EQ(o.out.sent[0].bytes, o.out.sent[1].bytes);
    const CmMad rep = o.out.sent[1].decode();
    EXPECT_EQ(rep.hdr.attr_id, static_cast<uint16_t>(CmAttr::SidrRep));
    EXPECT_EQ(rep.hdr.tid, 0x77u); /* the request's transaction */
    EXPECT_EQ(rep.sidr_rep.request_id, 0x51u);
    EXPECT_EQ(rep.sidr_rep.qpn, 0x99u);
    EXPECT_EQ(rep.sidr_rep.qkey, kQkey);
    EXPECT_EQ(rep.sidr_rep.service_id, kUdpSid);
    EXPECT_EQ(o.log.count(CmEventType::SidrRequest), 1u);
    /* The same request ID from another GID is another request. */
    const MadAddr other = addr_v4(0x0A4D0009);
    o.rx(sidr_req_mad(0x51), &other);
    EXPECT_EQ(o.log.count(CmEventType::SidrRequest), 2u);
}

TEST(CmSidr, HostileRepliesDropped) {
    OneSidr o;
    SidrParams p;
    p.service_id = kUdpSid;
    p.peer = o.peer;
    const uint32_t id = o.cm.sidr_request(p, o.now);
    ASSERT_NE(id, 0u);
    CmMad rep{};
    rep.hdr.attr_id = static_cast<uint16_t>(CmAttr::SidrRep);
    rep.sidr_rep.request_id = id ^ 0x100; /* no such request */
    rep.sidr_rep.qpn = 7;
    o.rx(rep);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_sidr_rep_unknown), 1u);
    rep.sidr_rep.request_id = id;
    const MadAddr other = addr_v4(0x0A4D0009);
    o.rx(rep, &other); /* right ID, not from where the request went */
    EXPECT_EQ(o.cm.counter(CmCtr::drop_sidr_rep_source), 1u);
    EXPECT_TRUE(o.log.events.empty());
    EXPECT_EQ(o.cm.state(id), ConnState::SidrReqSent);
    uint8_t b[kMadLen];
    ASSERT_EQ(build_cm_mad(rep, b, sizeof b), kMadLen);
    b[kMadHdrLen + 4] = 9; /* bad status */
    o.cm.on_mad(o.peer, b, sizeof b, o.now);
    EXPECT_EQ(o.cm.counter(CmCtr::drop_bad_sidr_rep), 1u);
    EXPECT_TRUE(o.log.events.empty());
    o.rx(rep); /* the real one */
    EXPECT_EQ(o.log.count(CmEventType::SidrResolved), 1u);
    o.rx(rep); /* again: the request is gone */
    EXPECT_EQ(o.cm.counter(CmCtr::drop_sidr_rep_unknown), 2u);
    EXPECT_EQ(o.log.events.size(), 1u);
    /* Nothing is left of the request. */
    EXPECT_EQ(o.cm.live_conns(), 0u);
}

TEST(CmSidr, ApiRefusals) {
    OneSidr o;
    ASSERT_TRUE(o.cm.listen(kUdpSid));
    SidrParams p;
    p.peer = o.peer;
    uint8_t big[kSidrReqPrivLen + 1] = {};
    p.private_data = big;
    p.private_data_len = sizeof big;
    EXPECT_EQ(o.cm.sidr_request(p, o.now), 0u);
    o.rx(sidr_req_mad(0x61));
    const uint32_t h = o.log.events.at(0).ev.conn;
    EXPECT_FALSE(o.cm.sidr_reject(h, SidrStatus::Success, nullptr, 0, o.now));
    EXPECT_FALSE(o.cm.sidr_accept(h, 1, kQkey, big, kSidrRepPrivLen + 1, o.now));
    EXPECT_FALSE(o.cm.accept(h, AcceptParams{}, o.now)); /* not a connection */
    EXPECT_FALSE(o.cm.reject(h, nullptr, 0, o.now));
    EXPECT_FALSE(o.cm.sidr_accept(h ^ 0x100, 1, kQkey, nullptr, 0, o.now));
    EXPECT_EQ(o.cm.counter(CmCtr::api_refused), 6u);
    EXPECT_TRUE(o.out.sent.empty());
    EXPECT_TRUE(o.cm.sidr_reject(h, SidrStatus::NoQp, nullptr, 0, o.now));
    ASSERT_EQ(o.out.sent.size(), 1u);
    EXPECT_EQ(o.out.sent[0].decode().sidr_rep.status, 3);
}

/* ---- CmChannel: rdma_cm's UDP port space ---- */

struct ChQueue : droce::CmQp1Transport {
    std::deque<std::vector<uint8_t>> q;
    bool send_mad(const uint8_t *, const uint8_t *mad, size_t len) override {
        q.emplace_back(mad, mad + len);
        return true;
    }
};

struct ChSide {
    uint8_t gid[16] = {};
    ChQueue out;
    droce::CmChannel ch;
    ChSide(uint32_t ip, uint64_t guid) : ch(config(ip, guid), out) {
        gid[10] = gid[11] = 0xFF;
        for (int i = 0; i < 4; ++i)
            gid[12 + i] = static_cast<uint8_t>(ip >> (24 - 8 * i));
    }
    static droce::CmChannelConfig config(uint32_t ip, uint64_t guid) {
        droce::CmChannelConfig c;
        c.local_ipv4 = ip;
        c.ca_guid = guid;
        c.cm_response_timeout = 10;
        c.packet_life_time = 8;
        c.max_cm_retries = 3;
        return c;
    }
    void to(ChSide &peer, uint64_t now) {
        while (!out.q.empty()) {
            auto m = std::move(out.q.front());
            out.q.pop_front();
            peer.ch.on_mad(gid, m.data(), m.size(), now);
        }
    }
};

TEST(CmChannelSidr, UdaddyLikeResolution) {
    ChSide srv(0x0A540001, 0xB1), cli(0x0A540002, 0xA1);
    ASSERT_TRUE(srv.ch.listen_ud(7174, 4));
    EXPECT_TRUE(srv.ch.listen(7174)); /* the TCP port space is another one */
    droce::CmSidrParam p;
    const char hi[] = "udaddy";
    p.private_data = hi;
    p.private_data_len = sizeof hi;
    p.user_ctx = 8;
    const uint32_t id = cli.ch.resolve_ud(0x0A540001, 7174, p, 1000);
    ASSERT_NE(id, 0u);
    /* On the wire: the UDP service ID and rdma_cm's IP CM header, then the user's data. */
    ASSERT_EQ(cli.out.q.size(), 1u);
    CmMad m{};
    ASSERT_EQ(parse_cm_mad(cli.out.q[0].data(), kMadLen, m), MadError::Ok);
    EXPECT_EQ(m.hdr.attr_id, static_cast<uint16_t>(CmAttr::SidrReq));
    EXPECT_EQ(m.sidr_req.service_id, 0x0000000001111C06ull);
    IpCmHdr ih;
    ASSERT_EQ(parse_ip_cm_hdr(m.sidr_req.private_data, kSidrReqPrivLen, ih), IpCmError::Ok);
    EXPECT_EQ(ih.src_ipv4(), 0x0A540002u);
    EXPECT_EQ(ih.dst_ipv4(), 0x0A540001u);
    EXPECT_EQ(0, std::memcmp(m.sidr_req.private_data + kIpCmHdrLen, hi, sizeof hi));

    cli.to(srv, 1000);
    droce::CmEventInfo ev;
    ASSERT_TRUE(srv.ch.poll_event(ev));
    EXPECT_EQ(ev.kind, droce::CmEventKind::SidrRequest);
    EXPECT_EQ(ev.listen_port, 7174);
    EXPECT_EQ(ev.user_ctx, 4u);
    EXPECT_EQ(ev.peer_ip, 0x0A540002u);
    EXPECT_EQ(ev.peer_port, ih.src_port);
    EXPECT_EQ(ev.private_data_len, droce::kCmSidrReqPrivateData);
    EXPECT_EQ(0, std::memcmp(ev.private_data, hi, sizeof hi));
    const char ok[] = "ok";
    ASSERT_TRUE(srv.ch.sidr_accept(ev.id, 0x1234, droce::kRdmaUdpQkey, ok, sizeof ok, 1000));
    srv.to(cli, 1000);
    ASSERT_TRUE(cli.ch.poll_event(ev));
    EXPECT_EQ(ev.kind, droce::CmEventKind::SidrResolved);
    EXPECT_EQ(ev.id, id);
    EXPECT_EQ(ev.user_ctx, 8u);
    EXPECT_EQ(ev.qp.remote_qpn, 0x1234u);
    EXPECT_EQ(ev.qkey, 0x01234567u);
    EXPECT_EQ(ev.peer_ip, 0x0A540001u);
    EXPECT_EQ(ev.private_data_len, droce::kCmSidrRepPrivateData);
    EXPECT_EQ(0, std::memcmp(ev.private_data, ok, sizeof ok));
    EXPECT_FALSE(cli.ch.poll_event(ev));
    /* Rejected: status 2 */
    const uint32_t id2 = cli.ch.resolve_ud(0x0A540001, 7174, droce::CmSidrParam{}, 2000);
    cli.to(srv, 2000);
    ASSERT_TRUE(srv.ch.poll_event(ev));
    ASSERT_TRUE(srv.ch.sidr_reject(ev.id, nullptr, 0, 2000));
    srv.to(cli, 2000);
    ASSERT_TRUE(cli.ch.poll_event(ev));
    EXPECT_EQ(ev.kind, droce::CmEventKind::SidrRejected);
    EXPECT_EQ(ev.id, id2);
    EXPECT_EQ(ev.sidr_status, 2);
    /* Too much private data: refused before anything is sent. */
    uint8_t big[droce::kCmSidrReqPrivateData + 1] = {};
    p.private_data = big;
    p.private_data_len = sizeof big;
    EXPECT_EQ(cli.ch.resolve_ud(0x0A540001, 7174, p, 3000), 0u);
    EXPECT_TRUE(cli.out.q.empty());
}

} // namespace
