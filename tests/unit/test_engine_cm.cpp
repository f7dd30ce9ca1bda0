/* SPDX-License-Identifier: BSD-3-Clause */
/* droce::CmDevice (include/droce/cm_device.h): two droce devices over a net_ring pair
 * connect through the CM on their QP1s, rping's way (listen, connect with private data,
 * accept with private data naming a buffer), then use the RC QPs the CM brought to RTS:
 * a SEND one way and an RDMA WRITE into the buffer the accept named, then disconnect.
 * In both threading modes. Its own binary: it needs EAL lcores of its own. */
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <droce/cm_device.h>
#include <droce/droce.h>

#include "engine_test_util.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Engine> make_engine(bool embedded) {
    EngineOptions o;
    o.embedded = embedded;
    o.workers = 1;
    o.idle_polls_before_sleep = 200;
    o.idle_sleep_us = 50;
    return droce::test::make_test_engine("test_engine_cm", o, "1024", "0@0,1@1");
}

constexpr uint32_t kBuf = 4096;
constexpr uint16_t kPort = 7174;

struct Side {
    Device *dev = nullptr;
    std::unique_ptr<CmDevice> cm;
    std::unique_ptr<ProtectionDomain> pd;
    std::vector<uint8_t> buf = std::vector<uint8_t>(4 * kBuf);
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<QueuePair> qp;
    std::vector<CmEventInfo> events;
    std::vector<Wc> wcs;
    Sge sge(uint32_t slot, uint32_t len) {
        return Sge{reinterpret_cast<uint64_t>(buf.data() + slot * kBuf), len, mr->lkey()};
    }
    uint8_t *at(uint32_t slot) { return buf.data() + slot * kBuf; }
    std::map<std::string, uint64_t> cm_counters() const {
        std::map<std::string, uint64_t> m;
        const char *n;
        uint64_t v;
        for (size_t i = 0; cm->counter(i, n, v); ++i)
            m[n] = v;
        return m;
    }
};

/* What the passive side tells the active one in its accept (rping's buffer advert). */
struct BufAdvert {
    uint64_t addr;
    uint32_t rkey;
    uint32_t len;
};

class EngineCm : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override {
        engine = make_engine(GetParam());
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports) << ports.status().message();
        DeviceConfig ca;
        ca.port = ports->first;
        ca.ipv4_cidr = "10.79.0.1/24";
        ca.ipv6_cidrs = {"fd79::1/64"};
        ca.mac = "02:00:00:00:03:01";
        ca.mtu = 1500;
        DeviceConfig cb = ca;
        cb.port = ports->second;
        cb.ipv4_cidr = "10.79.0.2/24";
        cb.ipv6_cidrs = {"fd79::2/64"};
        cb.mac = "02:00:00:00:03:02";
        auto da = engine->open_device(ca);
        auto db = engine->open_device(cb);
        ASSERT_TRUE(da && db);
        ASSERT_TRUE(engine->start());
        a.dev = *da;
        b.dev = *db;
        for (Side *s : {&a, &b}) {
            /* A keeps the default (no remote right); B, the passive side, is written. */
            CmDeviceOptions cmo;
            if (s == &b)
                cmo.access_flags = kAccessLocalWrite | kAccessRemoteWrite;
            auto cm = CmDevice::open(*engine, *s->dev, cmo);
            ASSERT_TRUE(cm) << cm.status().message();
            s->cm = std::move(*cm);
            s->pd = std::move(*s->dev->alloc_pd());
            s->mr = std::move(
                *s->pd->reg_mr(s->buf.data(), s->buf.size(),
                               kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead));
            s->cq = std::move(*s->dev->create_cq(64));
            QpInitAttr qa;
            qa.send_cq = qa.recv_cq = s->cq.get();
            qa.sq_sig_all = true;
            s->qp = std::move(*s->pd->create_qp(qa));
        }
    }
    void TearDown() override {
        for (Side *s : {&a, &b}) {
            s->qp.reset();
            s->cm.reset();
            s->cq.reset();
            s->mr.reset();
            s->pd.reset();
        }
        engine.reset();
    }

    /* One turn of everything the application drives: the engine (embedded mode), both
     * CMs, their events and completions. */
    void drive() {
        if (engine->embedded())
            engine->poll();
        else
            std::this_thread::sleep_for(50us);
        for (Side *s : {&a, &b}) {
            s->cm->poll();
            CmEventInfo ev;
            while (s->cm->channel().poll_event(ev))
                s->events.push_back(ev);
            Wc wc[8];
            const int n = s->cq->poll(wc, 8);
            for (int i = 0; i < n; ++i)
                s->wcs.push_back(wc[i]);
        }
    }
    template <typename F> bool until(F done, std::chrono::milliseconds limit = 5000ms) {
        for (auto end = std::chrono::steady_clock::now() + limit;
             std::chrono::steady_clock::now() < end;) {
            drive();
            if (done())
                return true;
        }
        return false;
    }
    static const CmEventInfo *find(const Side &s, CmEventKind k) {
        for (const auto &e : s.events)
            if (e.kind == k)
                return &e;
        return nullptr;
    }

    std::unique_ptr<Engine> engine;
    Side a, b; /* a: active (client), b: passive (server) */
};

TEST_P(EngineCm, ConnectSendWriteDisconnect) {
    ASSERT_TRUE(b.cm->channel().listen(kPort));
    /* The server's receive for the client's first SEND, posted before it accepts. */
    RecvWr rw;
    rw.sg_list[0] = b.sge(0, kBuf);
    rw.num_sge = 1;
    rw.wr_id = 7;

    CmConnectParam cp;
    cp.rq_psn = 0x123456;
    const char hello[] = "rping?";
    cp.private_data = hello;
    cp.private_data_len = sizeof hello;
    const uint32_t cid = a.cm->connect(0x0A4F0002, kPort, *a.qp, cp);
    ASSERT_NE(cid, 0u);

    ASSERT_TRUE(until([&] { return find(b, CmEventKind::ConnectRequest) != nullptr; }));
    const CmEventInfo req = *find(b, CmEventKind::ConnectRequest);
    EXPECT_EQ(req.listen_port, kPort);
    EXPECT_EQ(req.peer_ip, 0x0A4F0001u);
    EXPECT_STREQ(reinterpret_cast<const char *>(req.private_data), "rping?");
    EXPECT_EQ(req.qp.remote_qpn, a.qp->qp_num());
    ASSERT_TRUE(b.qp->post_recv(rw));
    BufAdvert adv{reinterpret_cast<uint64_t>(b.at(1)), b.mr->rkey(), kBuf};
    CmAcceptParam ap;
    ap.rq_psn = 0x654321;
    ap.private_data = &adv;
    ap.private_data_len = sizeof adv;
    ASSERT_TRUE(b.cm->accept(req.id, *b.qp, ap));
    QpAttr qa;
    ASSERT_TRUE(b.qp->query(qa));
    EXPECT_EQ(qa.cur_qp_state, QpState::Rts); /* before the REP left */

    ASSERT_TRUE(until(
        [&] { return find(a, CmEventKind::Established) && find(b, CmEventKind::Established); }));
    const CmEventInfo est = *find(a, CmEventKind::Established);
    EXPECT_EQ(est.id, cid);
    ASSERT_GE(est.private_data_len, sizeof adv);
    BufAdvert got;
    std::memcpy(&got, est.private_data, sizeof got);
    EXPECT_EQ(got.addr, adv.addr);
    EXPECT_EQ(got.rkey, adv.rkey);
    ASSERT_TRUE(a.qp->query(qa));
    EXPECT_EQ(qa.cur_qp_state, QpState::Rts);
    EXPECT_EQ(qa.dest_qp_num, b.qp->qp_num());
    EXPECT_EQ(qa.sq_psn, 0x654321u); /* what the passive side expects (its accept)... */
    EXPECT_EQ(qa.rq_psn, 0x123456u); /* ...and what it sends first (our connect) */
    /* Least privilege: the CM's default grants no remote right; B's options grant WRITE. */
    EXPECT_EQ(qa.qp_access_flags, kAccessLocalWrite);
    QpAttr qb;
    ASSERT_TRUE(b.qp->query(qb));
    EXPECT_EQ(qb.qp_access_flags, kAccessLocalWrite | kAccessRemoteWrite);

    /* SEND: the client's greeting into the receive the server posted. */
    std::strcpy(reinterpret_cast<char *>(a.at(0)), "ping over the CM's QP");
    SendWr sw;
    sw.wr_id = 1;
    sw.opcode = WrOpcode::Send;
    sw.sg_list[0] = a.sge(0, 22);
    sw.num_sge = 1;
    ASSERT_TRUE(a.qp->post_send(sw));
    ASSERT_TRUE(until([&] { return !a.wcs.empty() && !b.wcs.empty(); }));
    EXPECT_EQ(a.wcs[0].status, WcStatus::Success);
    EXPECT_EQ(b.wcs[0].status, WcStatus::Success);
    EXPECT_EQ(b.wcs[0].wr_id, 7u);
    EXPECT_EQ(b.wcs[0].byte_len, 22u);
    EXPECT_STREQ(reinterpret_cast<const char *>(b.at(0)), "ping over the CM's QP");

    /* RDMA WRITE into the buffer the accept's private data named. */
    for (uint32_t i = 0; i < kBuf; ++i)
        a.at(2)[i] = static_cast<uint8_t>(i * 7 + 1);
    SendWr ww;
    ww.wr_id = 2;
    ww.opcode = WrOpcode::RdmaWrite;
    ww.sg_list[0] = a.sge(2, kBuf);
    ww.num_sge = 1;
    ww.remote_addr = got.addr;
    ww.rkey = got.rkey;
    ASSERT_TRUE(a.qp->post_send(ww));
    ASSERT_TRUE(until([&] { return a.wcs.size() == 2; }));
    EXPECT_EQ(a.wcs[1].status, WcStatus::Success);
    EXPECT_EQ(std::memcmp(a.at(2), b.at(1), kBuf), 0);

    ASSERT_TRUE(a.cm->disconnect(cid));
    ASSERT_TRUE(until(
        [&] { return find(a, CmEventKind::Disconnected) && find(b, CmEventKind::Disconnected); }));
    auto ca = a.cm_counters(), cb = b.cm_counters();
    EXPECT_EQ(ca["cm_qp_ready"], 1u);
    EXPECT_EQ(cb["cm_qp_ready"], 1u);
    EXPECT_EQ(ca["cm_qp_modify_failed"] + cb["cm_qp_modify_failed"], 0u);
    EXPECT_GE(ca["cm_mads_out"], 3u); /* REQ, RTU, DREQ */
    EXPECT_GE(cb["cm_mads_in"], 3u);
}

/* A REQ to a port nobody listens on: rejected, the client's QP untouched. */
TEST_P(EngineCm, ConnectToClosedPortIsRejected) {
    CmConnectParam cp;
    const uint32_t cid = a.cm->connect(0x0A4F0002, 9999, *a.qp, cp);
    ASSERT_NE(cid, 0u);
    ASSERT_TRUE(until([&] { return find(a, CmEventKind::Rejected) != nullptr; }));
    QpAttr qa;
    ASSERT_TRUE(a.qp->query(qa));
    EXPECT_EQ(qa.cur_qp_state, QpState::Reset);
}

/* READ resources beyond what an RC QP here serves (a Linux rxe peer's REP names its
 * device's 128 as its initiator depth): both QPs still reach RTS, capped at 16. */
TEST_P(EngineCm, ReadResourcesAboveTheQpLimitAreCapped) {
    ASSERT_TRUE(b.cm->channel().listen(kPort));
    CmConnectParam cp;
    cp.responder_resources = cp.initiator_depth = 128;
    const uint32_t cid = a.cm->connect(0x0A4F0002, kPort, *a.qp, cp);
    ASSERT_NE(cid, 0u);
    ASSERT_TRUE(until([&] { return find(b, CmEventKind::ConnectRequest) != nullptr; }));
    CmAcceptParam ap;
    ap.responder_resources = ap.initiator_depth = 128;
    ASSERT_TRUE(b.cm->accept(find(b, CmEventKind::ConnectRequest)->id, *b.qp, ap));
    ASSERT_TRUE(until(
        [&] { return find(a, CmEventKind::Established) && find(b, CmEventKind::Established); }));
    for (Side *s : {&a, &b}) {
        QpAttr qa;
        ASSERT_TRUE(s->qp->query(qa));
        EXPECT_EQ(qa.cur_qp_state, QpState::Rts);
        EXPECT_EQ(qa.max_rd_atomic, 16);
        EXPECT_EQ(qa.max_dest_rd_atomic, 16);
        EXPECT_EQ(s->cm_counters()["cm_qp_modify_failed"], 0u);
    }
}

/* The same over the IPv6 GIDs: the REQ's IP CM header says IPv6, QP1's MADs and the RC
 * QPs' paths go over IPv6 (Neighbour Discovery, not ARP), a SEND crosses. */
TEST_P(EngineCm, ConnectOverIpv6) {
    const uint8_t a6[16] = {0xfd, 0x79, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    const uint8_t b6[16] = {0xfd, 0x79, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    ASSERT_TRUE(b.cm->channel().listen(kPort));
    RecvWr rw;
    rw.sg_list[0] = b.sge(0, kBuf);
    rw.num_sge = 1;
    CmConnectParam cp;
    const uint32_t cid = a.cm->connect6(b6, kPort, *a.qp, cp);
    ASSERT_NE(cid, 0u);
    ASSERT_TRUE(until([&] { return find(b, CmEventKind::ConnectRequest) != nullptr; }));
    const CmEventInfo req = *find(b, CmEventKind::ConnectRequest);
    EXPECT_TRUE(req.ipv6);
    EXPECT_EQ(std::memcmp(req.peer_gid, a6, 16), 0);
    ASSERT_TRUE(b.qp->post_recv(rw));
    ASSERT_TRUE(b.cm->accept(req.id, *b.qp, CmAcceptParam{}));
    ASSERT_TRUE(until(
        [&] { return find(a, CmEventKind::Established) && find(b, CmEventKind::Established); }));
    EXPECT_TRUE(find(a, CmEventKind::Established)->ipv6);
    for (Side *s : {&a, &b}) {
        QpAttr qa;
        ASSERT_TRUE(s->qp->query(qa));
        EXPECT_EQ(qa.cur_qp_state, QpState::Rts);
        EXPECT_EQ(std::memcmp(qa.ah_attr.dgid.raw, s == &a ? b6 : a6, 16), 0);
        const auto gids = s->dev->gids();
        ASSERT_LT(qa.ah_attr.sgid_index, gids.size());
        EXPECT_EQ(std::memcmp(gids[qa.ah_attr.sgid_index].gid.raw, s == &a ? a6 : b6, 16), 0);
    }
    std::strcpy(reinterpret_cast<char *>(a.at(0)), "ping over IPv6");
    SendWr sw;
    sw.opcode = WrOpcode::Send;
    sw.sg_list[0] = a.sge(0, 15);
    sw.num_sge = 1;
    ASSERT_TRUE(a.qp->post_send(sw));
    ASSERT_TRUE(until([&] { return !a.wcs.empty() && !b.wcs.empty(); }));
    EXPECT_EQ(b.wcs[0].status, WcStatus::Success);
    EXPECT_STREQ(reinterpret_cast<const char *>(b.at(0)), "ping over IPv6");
    ASSERT_TRUE(b.cm->disconnect(req.id));
    ASSERT_TRUE(until(
        [&] { return find(a, CmEventKind::Disconnected) && find(b, CmEventKind::Disconnected); }));
    EXPECT_EQ(a.cm_counters()["cm_mad_send_failed"] + b.cm_counters()["cm_mad_send_failed"], 0u);
}

/* One datagram to QP1 longer than a MAD (up to the port's MTU: a valid UD datagram,
 * but it does not fit the GSI's 296-byte receive slot) from an application UD QP that
 * gave itself the GSI Q_Key: dropped and counted (ud_rx_too_long); QP1 stays up and the
 * CM exchange that follows connects. Before, the length error took QP1 to ERR and the
 * device's CM (rping, the NVMe-oF target) was deaf until restart. */
TEST_P(EngineCm, OversizedDatagramToQp1LeavesTheCmWorking) {
    QpInitAttr ia;
    ia.qp_type = QpType::Ud;
    ia.send_cq = ia.recv_cq = a.cq.get();
    auto ud = a.pd->create_qp(ia);
    ASSERT_TRUE(ud) << ud.status().message();
    QpAttr at;
    at.qp_state = QpState::Init;
    at.qkey = 0x80010000; /* the GSI's: QP1 drops any other */
    ASSERT_TRUE((*ud)->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpQkey));
    at.qp_state = QpState::Rtr;
    ASSERT_TRUE((*ud)->modify(at, kQpState));
    at.qp_state = QpState::Rts;
    ASSERT_TRUE((*ud)->modify(at, kQpState | kQpSqPsn));
    AhAttr to;
    to.dgid = b.dev->gids().at(1).gid;
    to.sgid_index = 1;
    auto ah = a.pd->create_ah(to);
    ASSERT_TRUE(ah) << ah.status().message();
    const uint64_t too_long0 = droce::test::counter_map(*b.dev)["ud_rx_too_long"];
    SendWr big;
    big.opcode = WrOpcode::Send;
    big.sg_list[0] = a.sge(0, 1000);
    big.num_sge = 1;
    big.ah = ah->get();
    big.remote_qpn = 1;
    big.remote_qkey = 0x80000000u; /* "the QP's own Q_Key" */
    ASSERT_TRUE((*ud)->post_send(big));
    ASSERT_TRUE(until([&] {
        return droce::test::counter_map(*b.dev)["ud_rx_too_long"] == too_long0 + 1;
    })) << "the oversized datagram was not counted";

    ASSERT_TRUE(b.cm->channel().listen(kPort));
    const uint32_t cid = a.cm->connect(0x0A4F0002, kPort, *a.qp, CmConnectParam{});
    ASSERT_NE(cid, 0u);
    ASSERT_TRUE(until([&] { return find(b, CmEventKind::ConnectRequest) != nullptr; }))
        << "B's QP1 no longer receives";
    ASSERT_TRUE(b.cm->accept(find(b, CmEventKind::ConnectRequest)->id, *b.qp, CmAcceptParam{}));
    ASSERT_TRUE(until(
        [&] { return find(a, CmEventKind::Established) && find(b, CmEventKind::Established); }));
    EXPECT_EQ(droce::test::counter_map(*b.dev)["ud_rx_too_long"], too_long0 + 1);
    ud->reset();
    ah->reset();
}

INSTANTIATE_TEST_SUITE_P(Modes, EngineCm, ::testing::Values(true, false),
                         [](const auto &i) { return i.param ? "embedded" : "worker"; });

} // namespace
