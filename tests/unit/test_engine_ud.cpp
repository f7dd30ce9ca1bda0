/* SPDX-License-Identifier: BSD-3-Clause */
/* UD QPs through the engine and the public API, in both threading modes (embedded, and
 * worker mode with one and two workers): datagrams both ways with the GRH in front of
 * the payload and the sender in the completion, the counted drops (wrong Q_Key, no
 * receive WQE), refusals (over the MTU, multicast address handle), and QP1 (the GSI hook
 * a CM layer uses): a MAD from one device's QP1 to the other's and back. Two devices
 * over a net_ring pair in one process. Its own binary: it needs three EAL lcores. */
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <droce/droce.h>

#include "engine.h"
#include "engine_gsi.h"
#include "engine_test_util.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Engine> make_engine(bool embedded, uint32_t workers) {
    EngineOptions o;
    o.embedded = embedded;
    o.workers = workers;
    o.idle_polls_before_sleep = 200;
    o.idle_sleep_us = 50;
    return droce::test::make_test_engine("test_engine_ud", o, "1024", "0@0,1@1,2@0");
}

using droce::test::counter_map;

constexpr uint32_t kQkey = 0x11111111;
constexpr uint32_t kBuf = 4096;

struct Side {
    Device *dev = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::vector<uint8_t> buf = std::vector<uint8_t>(16 * kBuf);
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<QueuePair> qp;
    std::unique_ptr<AddressHandle> ah; /* to the other side */
    Sge sge(uint32_t slot, uint32_t len) {
        return Sge{reinterpret_cast<uint64_t>(buf.data() + slot * kBuf), len, mr->lkey()};
    }
    uint8_t *at(uint32_t slot) { return buf.data() + slot * kBuf; }
};

class EngineUd : public ::testing::TestWithParam<std::pair<bool, uint32_t>> {
  protected:
    void SetUp() override {
        engine = make_engine(GetParam().first, GetParam().second);
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair(static_cast<uint16_t>(GetParam().second));
        ASSERT_TRUE(ports) << ports.status().message();
        DeviceConfig ca;
        ca.port = ports->first;
        ca.ipv4_cidr = "10.78.0.1/24";
        ca.mac = "02:00:00:00:02:01";
        ca.mtu = 1500;
        DeviceConfig cb = ca;
        cb.port = ports->second;
        cb.ipv4_cidr = "10.78.0.2/24";
        cb.mac = "02:00:00:00:02:02";
        auto da = engine->open_device(ca);
        auto db = engine->open_device(cb);
        ASSERT_TRUE(da && db);
        ASSERT_TRUE(engine->start());
        a.dev = *da;
        b.dev = *db;
        for (Side *s : {&a, &b}) {
            s->pd = std::move(*s->dev->alloc_pd());
            auto m = s->pd->reg_mr(s->buf.data(), s->buf.size(), kAccessLocalWrite);
            ASSERT_TRUE(m) << m.status().message();
            s->mr = std::move(*m);
            auto c = s->dev->create_cq(256, 0);
            ASSERT_TRUE(c);
            s->cq = std::move(*c);
            QpInitAttr ia;
            ia.qp_type = QpType::Ud;
            ia.send_cq = ia.recv_cq = s->cq.get();
            ia.cap.max_send_wr = ia.cap.max_recv_wr = 32;
            ia.cap.max_inline_data = 64;
            auto q = s->pd->create_qp(ia);
            ASSERT_TRUE(q) << q.status().message();
            s->qp = std::move(*q);
            QpAttr at;
            at.qp_state = QpState::Init;
            at.qkey = kQkey;
            ASSERT_TRUE(s->qp->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpQkey));
            at.qp_state = QpState::Rtr;
            ASSERT_TRUE(s->qp->modify(at, kQpState));
            at.qp_state = QpState::Rts;
            at.sq_psn = 0x123;
            ASSERT_TRUE(s->qp->modify(at, kQpState | kQpSqPsn));
        }
        for (auto [s, o] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
            AhAttr ah;
            ah.dgid = o->dev->gids().at(1).gid;
            ah.sgid_index = 1;
            ah.hop_limit = 7;
            ah.traffic_class = 0x68;
            auto r = s->pd->create_ah(ah);
            ASSERT_TRUE(r) << r.status().message();
            s->ah = std::move(*r);
        }
    }
    void TearDown() override {
        for (Side *s : {&a, &b}) {
            s->ah.reset();
            s->qp.reset();
            s->cq.reset();
            s->mr.reset();
            s->pd.reset();
        }
        engine.reset();
    }
    void drive() {
        if (engine->embedded())
            engine->poll();
        else
            std::this_thread::sleep_for(20us);
    }
    std::vector<Wc> wait(CompletionQueue &cq, size_t n, std::chrono::milliseconds limit = 5s) {
        std::vector<Wc> out;
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
            Wc wc[16];
            const int k = cq.poll(wc, 16);
            out.insert(out.end(), wc, wc + k);
            if (k == 0)
                drive();
        }
        return out;
    }
    /* Lets the engine run for a while (for "nothing arrives" checks). */
    void settle(std::chrono::milliseconds d = 50ms) {
        const auto end = std::chrono::steady_clock::now() + d;
        while (std::chrono::steady_clock::now() < end)
            drive();
    }
    Status send(Side &s, uint32_t slot, uint32_t len, uint32_t dqpn, uint32_t qkey, bool imm) {
        SendWr wr;
        wr.wr_id = 100 + slot;
        wr.opcode = imm ? WrOpcode::SendWithImm : WrOpcode::Send;
        wr.imm_data = 0xC0FFEE;
        wr.send_flags = kSendSignaled;
        wr.sg_list[0] = s.sge(slot, len);
        wr.num_sge = 1;
        wr.ah = s.ah.get();
        wr.remote_qpn = dqpn;
        wr.remote_qkey = qkey;
        return s.qp->post_send(wr);
    }
    Status recv(Side &s, uint32_t slot) {
        RecvWr wr;
        wr.wr_id = 200 + slot;
        wr.sg_list[0] = s.sge(slot, kBuf);
        wr.num_sge = 1;
        return s.qp->post_recv(wr);
    }
    std::unique_ptr<Engine> engine;
    Side a, b;
};

TEST_P(EngineUd, DatagramsBothWaysWithGrhAndSource) {
    ASSERT_TRUE(recv(b, 8));
    ASSERT_TRUE(recv(a, 8));
    for (uint32_t i = 0; i < 1024; ++i)
        a.at(0)[i] = static_cast<uint8_t>(i * 7);
    ASSERT_TRUE(send(a, 0, 1024, b.qp->qp_num(), kQkey, true));
    auto wa = wait(*a.cq, 1);
    ASSERT_EQ(wa.size(), 1u);
    EXPECT_EQ(wa[0].status, WcStatus::Success);
    EXPECT_EQ(wa[0].opcode, WcOpcode::Send);
    auto wb = wait(*b.cq, 1);
    ASSERT_EQ(wb.size(), 1u);
    EXPECT_EQ(wb[0].status, WcStatus::Success);
    EXPECT_EQ(wb[0].opcode, WcOpcode::Recv);
    EXPECT_EQ(wb[0].wr_id, 208u);
    EXPECT_EQ(wb[0].byte_len, 40u + 1024u);
    EXPECT_EQ(wb[0].src_qp, a.qp->qp_num());
    EXPECT_EQ(wb[0].qp_num, b.qp->qp_num());
    EXPECT_TRUE(wb[0].wc_flags & kWcGrh);
    ASSERT_TRUE(wb[0].wc_flags & kWcWithImm);
    EXPECT_EQ(wb[0].imm_data, 0xC0FFEEu);
    /* The GRH as verbs gives it for RoCEv2/IPv4: 20 zero bytes, then the IPv4 header
     * (the address handle's TOS and TTL, A's address as source). */
    const uint8_t *g = b.at(8);
    for (int i = 0; i < 20; ++i)
        EXPECT_EQ(g[i], 0) << i;
    EXPECT_EQ(g[20], 0x45);
    EXPECT_EQ(g[21], 0x68);
    EXPECT_EQ(g[28], 7);
    EXPECT_EQ(std::memcmp(g + 32, a.dev->gids().at(1).gid.raw + 12, 4), 0);
    EXPECT_EQ(std::memcmp(g + 40, a.at(0), 1024), 0);

    /* And back, without immediate. */
    ASSERT_TRUE(send(b, 1, 64, a.qp->qp_num(), kQkey, false));
    wa = wait(*a.cq, 1);
    ASSERT_EQ(wa.size(), 1u);
    EXPECT_EQ(wa[0].status, WcStatus::Success);
    EXPECT_EQ(wa[0].src_qp, b.qp->qp_num());
    EXPECT_EQ(wa[0].byte_len, 40u + 64u);
    EXPECT_FALSE(wa[0].wc_flags & kWcWithImm);
    EXPECT_EQ(wait(*b.cq, 1).size(), 1u); /* b's send completion */
}

/* kSendInline: verbs copies the payload at post, so the caller may overwrite and free
 * the buffer when post_send returns (ASan reports a later read), although the datagram
 * leaves later: on the next poll (embedded) or once the worker drained the ring. */
TEST_P(EngineUd, InlineDatagramIsCopiedAtPost) {
    constexpr uint32_t kN = 8, kLen = 64;
    auto pattern = [](uint32_t i, uint32_t j) { return static_cast<uint8_t>((i * 31 + j) % 127); };
    for (uint32_t i = 0; i < kN; ++i)
        ASSERT_TRUE(recv(b, 8 + i));
    for (uint32_t i = 0; i < kN; ++i) {
        auto p = std::make_unique<uint8_t[]>(kLen);
        for (uint32_t j = 0; j < kLen; ++j)
            p[j] = pattern(i, j);
        SendWr wr;
        wr.wr_id = i;
        wr.opcode = WrOpcode::Send;
        wr.send_flags = kSendSignaled | kSendInline;
        wr.sg_list[0] = {reinterpret_cast<uint64_t>(p.get()), 40, 0};
        wr.sg_list[1] = {reinterpret_cast<uint64_t>(p.get() + 40), kLen - 40, 0};
        wr.num_sge = 2;
        wr.ah = a.ah.get();
        wr.remote_qpn = b.qp->qp_num();
        wr.remote_qkey = kQkey;
        ASSERT_TRUE(a.qp->post_send(wr)) << i;
        std::memset(p.get(), 0xEE, kLen); /* the caller's again */
    }
    const auto wa = wait(*a.cq, kN);
    ASSERT_EQ(wa.size(), kN);
    for (const Wc &wc : wa)
        EXPECT_EQ(wc.status, WcStatus::Success) << wc_status_str(wc.status);
    const auto wb = wait(*b.cq, kN);
    ASSERT_EQ(wb.size(), kN);
    for (uint32_t i = 0; i < kN; ++i) {
        EXPECT_EQ(wb[i].status, WcStatus::Success);
        EXPECT_EQ(wb[i].byte_len, 40 + kLen);
        const uint32_t slot = static_cast<uint32_t>(wb[i].wr_id) - 200;
        for (uint32_t j = 0; j < kLen; ++j)
            ASSERT_EQ(b.at(slot)[40 + j], pattern(slot - 8, j))
                << "datagram " << i << " byte " << j;
    }
    SendWr big;
    big.send_flags = kSendInline;
    big.sg_list[0] = a.sge(0, kLen + 1);
    big.num_sge = 1;
    big.ah = a.ah.get();
    big.remote_qpn = b.qp->qp_num();
    EXPECT_FALSE(a.qp->post_send(big)) << "above max_inline_data";
}

TEST_P(EngineUd, DropsAreCountedAndRefusalsClear) {
    /* Wrong Q_Key: silently dropped, counted, the WQE stays for the next one. */
    ASSERT_TRUE(recv(b, 8));
    ASSERT_TRUE(send(a, 0, 32, b.qp->qp_num(), kQkey + 1, false));
    ASSERT_EQ(wait(*a.cq, 1).size(), 1u);
    settle();
    EXPECT_EQ(counter_map(*b.dev)["ud_rx_qkey_mismatch"], 1u);
    Wc wc[4];
    EXPECT_EQ(b.cq->poll(wc, 4), 0);
    /* Q_Key with bit 31: the sender's own QP Q_Key (here the same as b's). */
    ASSERT_TRUE(send(a, 0, 32, b.qp->qp_num(), 0x80000000u, false));
    ASSERT_EQ(wait(*a.cq, 1).size(), 1u);
    ASSERT_EQ(wait(*b.cq, 1).size(), 1u);
    /* No receive WQE: dropped and counted (UD has no RNR). */
    ASSERT_TRUE(send(a, 0, 32, b.qp->qp_num(), kQkey, false));
    ASSERT_EQ(wait(*a.cq, 1).size(), 1u);
    settle();
    EXPECT_EQ(counter_map(*b.dev)["ud_rx_no_wqe"], 1u);
    /* A QPN nobody has. */
    ASSERT_TRUE(send(a, 0, 32, 0x999, kQkey, false));
    ASSERT_EQ(wait(*a.cq, 1).size(), 1u);
    settle();
    EXPECT_GE(counter_map(*b.dev)["rx_drop_unknown_qpn"], 1u);
    /* Larger than the MTU (1500 Ethernet -> 1024 IB): refused at post. */
    Status s = send(a, 0, 2048, b.qp->qp_num(), kQkey, false);
    EXPECT_FALSE(s);
    EXPECT_EQ(s.code(), EMSGSIZE) << s.message();
    /* A multicast destination: refused when the address handle is made. */
    AhAttr mc;
    mc.dgid.raw[10] = mc.dgid.raw[11] = 0xFF;
    mc.dgid.raw[12] = 239;
    mc.dgid.raw[15] = 1;
    mc.sgid_index = 1;
    auto r = a.pd->create_ah(mc);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), EOPNOTSUPP) << r.status().message();
    /* Across transports, in the shared QPN space: a datagram for an RC QP is an RC
     * transport drop there (IBTA 9.6.1), counted. */
    QpInitAttr ria;
    ria.send_cq = ria.recv_cq = b.cq.get();
    auto rc = b.pd->create_qp(ria);
    ASSERT_TRUE(rc) << rc.status().message();
    QpAttr ra;
    ra.qp_state = QpState::Init;
    ASSERT_TRUE((*rc)->modify(ra, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags));
    const uint64_t td = counter_map(*b.dev)["rx_transport_drop"];
    ASSERT_TRUE(send(a, 0, 32, (*rc)->qp_num(), kQkey, false));
    ASSERT_EQ(wait(*a.cq, 1).size(), 1u);
    settle();
    EXPECT_EQ(counter_map(*b.dev)["rx_transport_drop"], td + 1);
    rc->reset();
    /* ... and an RC SEND for a UD QP is a UD bad-opcode drop there. */
    ria.send_cq = ria.recv_cq = a.cq.get();
    auto rca = a.pd->create_qp(ria);
    ASSERT_TRUE(rca) << rca.status().message();
    ASSERT_TRUE((*rca)->modify(ra, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags));
    ra.qp_state = QpState::Rtr;
    ra.dest_qp_num = b.qp->qp_num();
    ra.ah_attr.dgid = b.dev->gids().at(1).gid;
    ra.ah_attr.sgid_index = 1;
    ASSERT_TRUE((*rca)->modify(ra, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                       kQpMaxDestRdAtomic | kQpMinRnrTimer));
    ra.qp_state = QpState::Rts;
    ASSERT_TRUE((*rca)->modify(ra, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                       kQpMaxQpRdAtomic));
    const uint64_t bo = counter_map(*b.dev)["ud_rx_bad_opcode"];
    SendWr rw;
    rw.opcode = WrOpcode::Send;
    rw.sg_list[0] = a.sge(0, 16);
    rw.num_sge = 1;
    ASSERT_TRUE((*rca)->post_send(rw));
    settle();
    EXPECT_GE(counter_map(*b.dev)["ud_rx_bad_opcode"], bo + 1);
    rca->reset();
    /* RC verbs on a UD QP are refused. */
    SendWr w;
    w.opcode = WrOpcode::RdmaWrite;
    w.ah = a.ah.get();
    EXPECT_FALSE(a.qp->post_send(w));
}

/* The GSI hook: QP1 of each device, a MAD one way and the answer back, addressed from
 * what arrived (as a CM answers a REQ). */
TEST_P(EngineUd, Qp1CarriesMadsBetweenEngines) {
    engine::Runtime *rt = engine::debug_runtimes().back();
    engine::Dev *da = nullptr, *db = nullptr;
    for (const auto &d : rt->devices()) {
        if (d->name() == a.dev->name())
            da = d.get();
        if (d->name() == b.dev->name())
            db = d.get();
    }
    ASSERT_TRUE(da && db);
    auto ga = engine::Gsi::open(*rt, *da, 8);
    ASSERT_TRUE(ga) << ga.status().message();
    auto gb = engine::Gsi::open(*rt, *db, 8);
    ASSERT_TRUE(gb) << gb.status().message();
    EXPECT_EQ(engine::Gsi::open(*rt, *da, 8).status().code(), EBUSY);

    uint8_t mad[engine::kMadLen];
    for (uint32_t i = 0; i < sizeof mad; ++i)
        mad[i] = static_cast<uint8_t>(i ^ 0x5A);
    mad[0] = 1;    /* base version */
    mad[1] = 0x07; /* CM class */
    AhAttr to;
    to.dgid = b.dev->gids().at(1).gid;
    to.sgid_index = 1;
    ASSERT_TRUE((*ga)->send(to, 1, mad, sizeof mad));

    engine::MadIn in[4];
    int n = 0;
    for (auto end = std::chrono::steady_clock::now() + 5s;
         n == 0 && std::chrono::steady_clock::now() < end;) {
        n = (*gb)->poll(in, 4);
        if (n == 0)
            drive();
    }
    ASSERT_EQ(n, 1);
    EXPECT_EQ(in[0].len, engine::kMadLen);
    EXPECT_EQ(std::memcmp(in[0].data, mad, sizeof mad), 0);
    EXPECT_EQ(in[0].src_qp, 1u);
    EXPECT_EQ(std::memcmp(in[0].src_gid.raw, a.dev->gids().at(1).gid.raw, 16), 0);

    /* The answer goes where the MAD came from. */
    AhAttr back;
    back.dgid = in[0].src_gid;
    back.sgid_index = 1;
    mad[2] = 0x42;
    ASSERT_TRUE((*gb)->send(back, in[0].src_qp, mad, sizeof mad));
    n = 0;
    for (auto end = std::chrono::steady_clock::now() + 5s;
         n == 0 && std::chrono::steady_clock::now() < end;) {
        n = (*ga)->poll(in, 4);
        if (n == 0)
            drive();
    }
    ASSERT_EQ(n, 1);
    EXPECT_EQ(in[0].data[2], 0x42);

    /* QP1 takes only the GSI Q_Key: a datagram from an application QP with another is
     * dropped and counted. */
    const uint64_t before = counter_map(*b.dev)["ud_rx_qkey_mismatch"];
    ASSERT_TRUE(send(a, 0, 256, 1, kQkey, false));
    ASSERT_EQ(wait(*a.cq, 1).size(), 1u);
    settle();
    EXPECT_EQ(counter_map(*b.dev)["ud_rx_qkey_mismatch"], before + 1);
    EXPECT_EQ((*gb)->poll(in, 4), 0);
    EXPECT_EQ((*ga)->send_errors(), 0u);
    ga->reset();
    gb->reset();
}

INSTANTIATE_TEST_SUITE_P(Modes, EngineUd,
                         ::testing::Values(std::pair{true, 1u}, std::pair{false, 1u},
                                           std::pair{false, 2u}),
                         [](const auto &i) {
                             return std::string(i.param.first ? "Embedded" : "Worker") +
                                    std::to_string(i.param.second);
                         });

} // namespace
