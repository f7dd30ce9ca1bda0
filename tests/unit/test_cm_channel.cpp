/* SPDX-License-Identifier: BSD-3-Clause */
/* droce::CmChannel (include/droce/cm.h): two channels through an in-memory QP1 transport,
 * rping's way: listen on 7174, connect with private data, accept, the QP hook called with
 * matching parameters before the peer may send, events polled, disconnect, timewait. */
#include <gtest/gtest.h>

#include <droce/cm.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "cm_mad.h"

using namespace droce;

namespace {

struct Queue : CmQp1Transport {
    std::deque<std::vector<uint8_t>> q;
    bool send_mad(const uint8_t *, const uint8_t *mad, size_t len) override {
        q.emplace_back(mad, mad + len);
        return true;
    }
};

struct Hook : CmQpHook {
    std::vector<CmQpParams> calls;
    void ready_qp(uint32_t, const CmQpParams &qp) override { calls.push_back(qp); }
};

struct Side {
    uint32_t ip;
    uint8_t gid[16] = {};
    Queue out;
    Hook hook;
    CmChannel ch;
    /* ip6: also an IPv6 address, the GID its MADs then come from (an IPv6 session). */
    Side(uint32_t ip_, uint64_t guid, const uint8_t *ip6 = nullptr, uint32_t max_conns = 4)
        : ip(ip_), ch(config(ip_, guid, ip6, max_conns), out, &hook) {
        gid[10] = gid[11] = 0xFF;
        for (int i = 0; i < 4; ++i)
            gid[12 + i] = static_cast<uint8_t>(ip >> (24 - 8 * i));
        if (ip6)
            std::memcpy(gid, ip6, 16);
    }
    static CmChannelConfig config(uint32_t ip, uint64_t guid, const uint8_t *ip6,
                                  uint32_t max_conns) {
        CmChannelConfig c;
        c.local_ipv4 = ip;
        if (ip6)
            std::memcpy(c.local_ipv6, ip6, 16);
        c.ca_guid = guid;
        c.max_conns = max_conns;
        c.cm_response_timeout = 10;
        c.packet_life_time = 8;
        c.max_cm_retries = 3;
        return c;
    }
    std::vector<CmEventInfo> events() {
        std::vector<CmEventInfo> v;
        CmEventInfo e;
        while (ch.poll_event(e))
            v.push_back(e);
        return v;
    }
};

void pump(Side &a, Side &b, uint64_t now) {
    while (!a.out.q.empty() || !b.out.q.empty()) {
        for (Side *s : {&a, &b}) {
            Side &d = s == &a ? b : a;
            while (!s->out.q.empty()) {
                auto m = std::move(s->out.q.front());
                s->out.q.pop_front();
                d.ch.on_mad(s->gid, m.data(), m.size(), now);
            }
        }
    }
}

TEST(CmChannel, RpingLikeSession) {
    Side srv(0x0A4D0002, 0xB0), cli(0x0A4D0003, 0xA0);
    uint64_t now = 1000;
    ASSERT_TRUE(srv.ch.listen(7174, 9));
    EXPECT_FALSE(srv.ch.listen(7174));
    CmConnectParam cp;
    cp.qpn = 0x18;
    cp.rq_psn = 0xf12f97;
    const char hello[] = "hello";
    cp.private_data = hello;
    cp.private_data_len = sizeof hello;
    const uint32_t cid = cli.ch.connect(0x0A4D0002, 7174, cp, now);
    ASSERT_NE(cid, 0u);
    /* On the wire: rdma_cm's TCP service ID for port 7174 and its IP CM header. */
    ASSERT_EQ(cli.out.q.size(), 1u);
    cm::CmMad req{};
    ASSERT_EQ(cm::parse_cm_mad(cli.out.q[0].data(), cli.out.q[0].size(), req), cm::MadError::Ok);
    EXPECT_EQ(req.req.service_id, 0x0000000001061C06ull);
    cm::IpCmHdr ih;
    ASSERT_EQ(cm::parse_ip_cm_hdr(req.req.private_data, cm::kReqPrivLen, ih), cm::IpCmError::Ok);
    EXPECT_EQ(ih.src_ipv4(), 0x0A4D0003u);
    EXPECT_EQ(ih.dst_ipv4(), 0x0A4D0002u);
    EXPECT_EQ(0, std::memcmp(req.req.private_data + cm::kIpCmHdrLen, hello, sizeof hello));

    pump(cli, srv, now);
    auto ev = srv.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, CmEventKind::ConnectRequest);
    EXPECT_EQ(ev[0].listen_port, 7174);
    EXPECT_EQ(ev[0].peer_ip, 0x0A4D0003u);
    EXPECT_EQ(ev[0].peer_port, ih.src_port);
    EXPECT_EQ(ev[0].user_ctx, 9u);
    EXPECT_STREQ(reinterpret_cast<const char *>(ev[0].private_data), "hello");
    EXPECT_EQ(ev[0].private_data_len, 56);
    EXPECT_EQ(ev[0].qp.remote_qpn, 0x18u);
    CmAcceptParam ap;
    ap.qpn = 0x19;
    ap.rq_psn = 0x61eef5;
    ASSERT_TRUE(srv.ch.accept(ev[0].id, ap, now));
    ASSERT_EQ(srv.hook.calls.size(), 1u); /* before the REP left */
    pump(cli, srv, now);
    ASSERT_EQ(cli.hook.calls.size(), 1u);
    const CmQpParams &a = cli.hook.calls[0], &b = srv.hook.calls[0];
    EXPECT_EQ(a.local_qpn, b.remote_qpn);
    EXPECT_EQ(b.local_qpn, a.remote_qpn);
    EXPECT_EQ(a.sq_psn, b.rq_psn);
    EXPECT_EQ(b.sq_psn, a.rq_psn);
    EXPECT_EQ(a.sq_psn, 0x61eef5u);
    EXPECT_EQ(b.sq_psn, 0xf12f97u);
    EXPECT_EQ(cli.events().at(0).kind, CmEventKind::Established);
    EXPECT_EQ(srv.events().at(0).kind, CmEventKind::Established);

    ASSERT_TRUE(cli.ch.disconnect(cid, now));
    pump(cli, srv, now);
    EXPECT_EQ(cli.events().at(0).kind, CmEventKind::Disconnected);
    EXPECT_EQ(srv.events().at(0).kind, CmEventKind::Disconnected);
    while (std::min(cli.ch.next_deadline(), srv.ch.next_deadline()) != UINT64_MAX) {
        now = std::min(cli.ch.next_deadline(), srv.ch.next_deadline());
        cli.ch.on_time(now);
        srv.ch.on_time(now);
    }
    EXPECT_EQ(cli.events().at(0).kind, CmEventKind::TimewaitExit);
    EXPECT_EQ(srv.events().at(0).kind, CmEventKind::TimewaitExit);
}

TEST(CmChannel, RejectAndNoListener) {
    Side srv(0x0A4D0002, 0xB0), cli(0x0A4D0003, 0xA0);
    ASSERT_TRUE(srv.ch.listen(7471));
    CmConnectParam cp;
    cli.ch.connect(0x0A4D0002, 7000, cp, 1); /* nobody on 7000 */
    pump(cli, srv, 1);
    auto e = cli.events();
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].kind, CmEventKind::Rejected);
    EXPECT_EQ(e[0].reason, 8); /* invalid service ID */
    cli.ch.connect(0x0A4D0002, 7471, cp, 1);
    pump(cli, srv, 1);
    auto s = srv.events();
    ASSERT_EQ(s.size(), 1u);
    const char no[] = "busy";
    ASSERT_TRUE(srv.ch.reject(s[0].id, no, sizeof no, 1));
    pump(cli, srv, 1);
    e = cli.events();
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].reason, 28); /* consumer defined */
    EXPECT_STREQ(reinterpret_cast<const char *>(e[0].private_data), "busy");
    /* Too much private data: refused before anything is sent. */
    uint8_t big[57] = {};
    cp.private_data = big;
    cp.private_data_len = sizeof big;
    EXPECT_EQ(cli.ch.connect(0x0A4D0002, 7471, cp, 1), 0u);
    EXPECT_TRUE(cli.out.q.empty());
}

/* More events between two polls than CmChannelConfig::max_events (256): every one is
 * delivered, none dropped (a lost Disconnected would leak its connection in the
 * application, e.g. an NVMe-oF queue). The queue grows on the control path; the
 * growth is counted. */
TEST(CmChannel, MoreEventsThanMaxEventsInOnePollAllDelivered) {
    constexpr uint32_t kConns = 300, kRound = 50; /* a round stays under the REQ limits */
    Side srv(0x0A4D0002, 0xB0, nullptr, 512), cli(0x0A4D0003, 0xA0, nullptr, 512);
    ASSERT_TRUE(srv.ch.listen(7174));
    CmConnectParam cp;
    CmAcceptParam ap;
    for (uint32_t i = 0; i < kConns; i += kRound) {
        for (uint32_t k = i; k < i + kRound; ++k) {
            cp.qpn = 0x100 + k;
            cp.user_ctx = k;
            ASSERT_NE(cli.ch.connect(0x0A4D0002, 7174, cp, 1), 0u) << k;
        }
        pump(cli, srv, 1);
        for (const auto &e : srv.events()) {
            if (e.kind != CmEventKind::ConnectRequest)
                continue; /* the previous round's Established */
            ap.qpn = e.qp.remote_qpn + 0x1000;
            ASSERT_TRUE(srv.ch.accept(e.id, ap, 1));
        }
        pump(cli, srv, 1); /* the client's Established events are not polled */
    }
    const auto ev = cli.events();
    ASSERT_EQ(ev.size(), kConns);
    for (uint32_t i = 0; i < kConns; ++i) {
        EXPECT_EQ(ev[i].kind, CmEventKind::Established);
        EXPECT_EQ(ev[i].user_ctx, i) << "in order";
    }
    const char *name = nullptr;
    uint64_t v = 0, grown = ~0ull;
    for (size_t i = 0; cli.ch.counter(i, name, v); ++i)
        if (std::string(name) == "ch_event_queue_grown")
            grown = v;
    EXPECT_EQ(grown, 1u) << "256 -> 512";
}

TEST(CmChannel, NotRdmaCmHeaderRejected) {
    /* A REQ for a listened port whose private data is not rdma_cm's IP header. */
    Side srv(0x0A4D0002, 0xB0), cli(0x0A4D0003, 0xA0);
    ASSERT_TRUE(srv.ch.listen(7174));
    cm::CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(cm::CmAttr::Req);
    m.req.local_comm_id = 5;
    m.req.service_id = cm::ip_service_id(cm::kRdmaPsTcp, 7174);
    m.req.private_data[0] = 0x77; /* bad CMA version */
    std::memcpy(m.req.primary.local_gid, cli.gid, 16);
    uint8_t b[cm::kMadLen];
    ASSERT_EQ(cm::build_cm_mad(m, b, sizeof b), cm::kMadLen);
    srv.ch.on_mad(cli.gid, b, sizeof b, 1);
    EXPECT_TRUE(srv.events().empty());
    ASSERT_EQ(srv.out.q.size(), 1u);
    cm::CmMad r{};
    ASSERT_EQ(cm::parse_cm_mad(srv.out.q[0].data(), cm::kMadLen, r), cm::MadError::Ok);
    EXPECT_EQ(r.rej.reason, 28);
    const char *name = nullptr;
    uint64_t v = 0;
    bool found = false;
    for (size_t i = 0; srv.ch.counter(i, name, v); ++i)
        if (std::string(name) == "ch_bad_ip_cm_hdr") {
            EXPECT_EQ(v, 1u);
            found = true;
        }
    EXPECT_TRUE(found);
}

/* rdma_cm over IPv6: the REQ's IP CM header says version 6 with both 16-byte addresses,
 * its path names the IPv6 GIDs, and the passive side reports the peer's IPv6 address. */
TEST(CmChannel, Ipv6Session) {
    const uint8_t srv6[16] = {0xfd, 0x77, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    const uint8_t cli6[16] = {0xfd, 0x77, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3};
    Side srv(0x0A4D0002, 0xB0, srv6), cli(0x0A4D0003, 0xA0, cli6);
    uint64_t now = 1000;
    ASSERT_TRUE(srv.ch.listen(7174));
    CmConnectParam cp;
    cp.qpn = 0x18;
    const char hello[] = "hello6";
    cp.private_data = hello;
    cp.private_data_len = sizeof hello;
    /* An IPv4-mapped address is connect()'s, not connect6()'s. */
    uint8_t mapped[16] = {};
    mapped[10] = mapped[11] = 0xFF;
    EXPECT_EQ(cli.ch.connect6(mapped, 7174, cp, now), 0u);
    const uint32_t cid = cli.ch.connect6(srv6, 7174, cp, now);
    ASSERT_NE(cid, 0u);
    ASSERT_EQ(cli.out.q.size(), 1u);
    cm::CmMad req{};
    ASSERT_EQ(cm::parse_cm_mad(cli.out.q[0].data(), cli.out.q[0].size(), req), cm::MadError::Ok);
    EXPECT_EQ(req.req.private_data[1], 0x60); /* IP version 6 in bits 7:4 */
    cm::IpCmHdr ih;
    ASSERT_EQ(cm::parse_ip_cm_hdr(req.req.private_data, cm::kReqPrivLen, ih), cm::IpCmError::Ok);
    EXPECT_EQ(ih.ip_version, 6);
    EXPECT_EQ(0, std::memcmp(ih.src_addr, cli6, 16));
    EXPECT_EQ(0, std::memcmp(ih.dst_addr, srv6, 16));
    EXPECT_EQ(0, std::memcmp(req.req.primary.local_gid, cli6, 16));
    EXPECT_EQ(0, std::memcmp(req.req.primary.remote_gid, srv6, 16));

    pump(cli, srv, now);
    auto ev = srv.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, CmEventKind::ConnectRequest);
    EXPECT_TRUE(ev[0].ipv6);
    EXPECT_EQ(ev[0].peer_ip, 0u);
    EXPECT_EQ(0, std::memcmp(ev[0].peer_gid, cli6, 16));
    EXPECT_EQ(ev[0].peer_port, ih.src_port);
    EXPECT_STREQ(reinterpret_cast<const char *>(ev[0].private_data), "hello6");
    CmAcceptParam ap;
    ap.qpn = 0x19;
    ASSERT_TRUE(srv.ch.accept(ev[0].id, ap, now));
    pump(cli, srv, now);
    ASSERT_EQ(cli.hook.calls.size(), 1u);
    ASSERT_EQ(srv.hook.calls.size(), 1u);
    /* Each side's QP is told both IPv6 GIDs. */
    EXPECT_EQ(0, std::memcmp(cli.hook.calls[0].local_gid, cli6, 16));
    EXPECT_EQ(0, std::memcmp(cli.hook.calls[0].remote_gid, srv6, 16));
    EXPECT_EQ(0, std::memcmp(srv.hook.calls[0].local_gid, srv6, 16));
    EXPECT_EQ(0, std::memcmp(srv.hook.calls[0].remote_gid, cli6, 16));
    auto ce = cli.events();
    ASSERT_EQ(ce.size(), 1u);
    EXPECT_EQ(ce[0].kind, CmEventKind::Established);
    EXPECT_TRUE(ce[0].ipv6);
    EXPECT_EQ(0, std::memcmp(ce[0].peer_gid, srv6, 16));
    EXPECT_EQ(srv.events().at(0).kind, CmEventKind::Established);

    /* Without an IPv6 address of its own a channel does not connect6. */
    Side v4only(0x0A4D0004, 0xC0);
    EXPECT_EQ(v4only.ch.connect6(srv6, 7174, cp, now), 0u);
}

} // namespace
