/* SPDX-License-Identifier: BSD-3-Clause */
/* Loopback (issue 31, item 5): two RC QPs of ONE device, connected to each other through
 * the device's own GID, as on rxe and ConnectX. Their frames go from the sender's TX to
 * the RX ring of the shard that owns the destination QP (Shard::transmit_loopback), never
 * to the port: the device at the other end of the net_ring pair receives nothing, and
 * tx_loopback_packets counts them. SEND/RECV, WRITE, READ, an atomic and 2000 messages in
 * order, in embedded and worker mode, with the QPs on one worker or on two. Also what is
 * refused: loopback across VLANs, and UD address handles to our own GID (not yet). Its
 * own binary: it needs worker lcores. */
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <droce/droce.h>

using namespace droce;
using namespace std::chrono_literals;

namespace {

constexpr uint32_t kRights =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr size_t kBuf = 64 * 1024;
constexpr uint32_t kSlot = 64; /* bytes per message of the in-order run */

std::unique_ptr<Engine> make_engine(bool embedded, uint32_t workers) {
    static const char *args[] = {"test_engine_loopback",
                                 "--no-huge",
                                 "-m",
                                 "1024",
                                 "--no-pci",
                                 "--no-shconf",
                                 "--lcores",
                                 "0@0,1@1,2@1",
                                 "--log-level",
                                 "*:warning",
                                 "--",
                                 nullptr};
    EngineOptions o;
    o.embedded = embedded;
    o.workers = workers;
    o.idle_polls_before_sleep = 200;
    o.idle_sleep_us = 50;
    o.log_level = "warn";
    int consumed = 0;
    auto e = Engine::create(11, const_cast<char **>(args), &consumed, o);
    EXPECT_TRUE(e) << e.status().message();
    return e ? std::move(*e) : nullptr;
}

struct End {
    std::vector<uint8_t> buf = std::vector<uint8_t>(kBuf);
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<CompletionQueue> scq, rcq;
    std::unique_ptr<QueuePair> qp;
};

/* (embedded, workers) */
class Loopback : public ::testing::TestWithParam<std::tuple<bool, uint32_t>> {
  protected:
    void SetUp() override {
        const auto [embedded, workers] = GetParam();
        engine = make_engine(embedded, workers);
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair(static_cast<uint16_t>(workers));
        ASSERT_TRUE(ports) << ports.status().message();
        DeviceConfig ca;
        ca.port = ports->first;
        ca.ipv4_cidr = "10.81.0.1/24";
        ca.mac = "02:00:00:00:81:01";
        ca.mtu = 1500;
        /* GID 2 on VLAN 200, GID 3 untagged: loopback between them is refused. */
        ca.ipv6_cidrs = {"fd77:81::1/64@200", "fd77:82::1/64"};
        DeviceConfig cb = ca;
        cb.port = ports->second;
        cb.ipv4_cidr = "10.81.0.2/24";
        cb.mac = "02:00:00:00:81:02";
        cb.ipv6_cidrs = {};
        auto da = engine->open_device(ca);
        auto db = engine->open_device(cb);
        ASSERT_TRUE(da) << da.status().message();
        ASSERT_TRUE(db) << db.status().message();
        ASSERT_TRUE(engine->start());
        dev = *da;
        peer = *db;
        auto pd_r = dev->alloc_pd();
        ASSERT_TRUE(pd_r);
        pd = std::move(*pd_r);
        for (End *e : {&x, &y}) {
            auto m = pd->reg_mr(e->buf.data(), e->buf.size(), kRights);
            ASSERT_TRUE(m) << m.status().message();
            e->mr = std::move(*m);
            /* Two workers: one QP on each, so the frames cross between shards. */
            const int w = workers > 1 ? (e == &x ? 0 : 1) : 0;
            auto sc = dev->create_cq(4096, w);
            auto rc = dev->create_cq(4096, w);
            ASSERT_TRUE(sc && rc);
            e->scq = std::move(*sc);
            e->rcq = std::move(*rc);
            QpInitAttr ia;
            ia.send_cq = e->scq.get();
            ia.recv_cq = e->rcq.get();
            ia.cap.max_send_wr = ia.cap.max_recv_wr = 256;
            auto q = pd->create_qp(ia);
            ASSERT_TRUE(q) << q.status().message();
            e->qp = std::move(*q);
        }
        if (workers > 1) {
            ASSERT_NE(x.qp->qp_num() % workers, y.qp->qp_num() % workers);
        }
        base_peer_rcv = counter(*peer, "port_rcv_packets");
        base_xmit = counter(*dev, "port_xmit_packets");
    }
    void TearDown() override {
        for (End *e : {&x, &y}) {
            e->qp.reset();
            e->scq.reset();
            e->rcq.reset();
            e->mr.reset();
        }
        pd.reset();
        engine.reset();
    }

    /* x <-> y through GID sgid (dgid: the same one unless given). */
    Status connect(uint8_t sgid, int dgid = -1) {
        for (auto [s, o] : {std::pair{&x, &y}, std::pair{&y, &x}}) {
            QpAttr at;
            at.qp_state = QpState::Init;
            at.qp_access_flags = kRights;
            if (Status st = s->qp->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags);
                !st)
                return st;
            at.qp_state = QpState::Rtr;
            at.path_mtu = Mtu::Mtu1024;
            at.dest_qp_num = o->qp->qp_num();
            at.rq_psn = 0x100;
            at.max_dest_rd_atomic = 4;
            at.min_rnr_timer = 1;
            at.ah_attr.dgid = dev->gids().at(dgid < 0 ? sgid : static_cast<uint8_t>(dgid)).gid;
            at.ah_attr.sgid_index = sgid;
            if (Status st = s->qp->modify(at, kQpState | kQpAv | kQpPathMtu | kQpDestQpn |
                                                  kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer);
                !st)
                return st;
            at.qp_state = QpState::Rts;
            at.sq_psn = 0x100;
            at.timeout = 14;
            at.retry_cnt = 7;
            at.rnr_retry = 7;
            at.max_rd_atomic = 4;
            if (Status st = s->qp->modify(at, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt |
                                                  kQpRnrRetry | kQpMaxQpRdAtomic);
                !st)
                return st;
        }
        return {};
    }
    void drive() {
        if (engine->embedded())
            engine->poll();
        else
            std::this_thread::sleep_for(20us);
    }
    std::vector<Wc> wait(CompletionQueue &cq, size_t n, std::chrono::milliseconds limit = 10s) {
        std::vector<Wc> out;
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
            Wc wc[64];
            const int k = cq.poll(wc, 64);
            out.insert(out.end(), wc, wc + k);
            if (k == 0)
                drive();
        }
        return out;
    }
    static uint64_t counter(const Device &d, const std::string &name) {
        for (const auto &[k, v] : d.counters())
            if (k == name)
                return v;
        ADD_FAILURE() << "no counter " << name;
        return 0;
    }
    Sge sge(End &e, size_t off, uint32_t len) {
        return Sge{reinterpret_cast<uint64_t>(e.buf.data() + off), len, e.mr->lkey()};
    }
    Status post_recv(End &e, uint64_t id, size_t off, uint32_t len) {
        RecvWr r;
        r.wr_id = id;
        r.sg_list[0] = sge(e, off, len);
        r.num_sge = 1;
        return e.qp->post_recv(r);
    }
    Status post_send(End &e, WrOpcode op, uint64_t id, size_t off, uint32_t len, End *remote,
                     size_t roff) {
        SendWr w;
        w.wr_id = id;
        w.opcode = op;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = sge(e, off, len);
        w.num_sge = 1;
        if (remote) {
            w.remote_addr = reinterpret_cast<uint64_t>(remote->buf.data() + roff);
            w.rkey = remote->mr->rkey();
        }
        return e.qp->post_send(w);
    }
    /* Nothing of the traffic left through the port: the peer got nothing, the port sent
     * nothing, and every looped frame was received. */
    void expect_nothing_on_the_wire() {
        EXPECT_EQ(counter(*peer, "port_rcv_packets"), base_peer_rcv);
        EXPECT_EQ(counter(*dev, "port_xmit_packets"), base_xmit);
        const uint64_t looped = counter(*dev, "tx_loopback_packets");
        EXPECT_GT(looped, 0u);
        EXPECT_EQ(counter(*dev, "rx_loopback_packets"), looped);
        EXPECT_EQ(counter(*dev, "tx_loopback_dropped"), 0u);
    }

    std::unique_ptr<Engine> engine;
    Device *dev = nullptr, *peer = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    End x, y;
    uint64_t base_peer_rcv = 0, base_xmit = 0;
};

TEST_P(Loopback, SendWriteReadAtomicBetweenTwoQpsOfOneDevice) {
    ASSERT_TRUE(connect(1)); /* the IPv4 GID, to itself */
    /* SEND / RECV with its data. */
    for (size_t i = 0; i < 3000; ++i)
        x.buf[i] = static_cast<uint8_t>(i * 7 + 1);
    ASSERT_TRUE(post_recv(y, 7, 0, 4096));
    ASSERT_TRUE(post_send(x, WrOpcode::Send, 1, 0, 3000, nullptr, 0));
    auto rw = wait(*y.rcq, 1);
    ASSERT_EQ(rw.size(), 1u);
    EXPECT_EQ(rw[0].status, WcStatus::Success);
    EXPECT_EQ(rw[0].wr_id, 7u);
    EXPECT_EQ(rw[0].byte_len, 3000u);
    EXPECT_EQ(rw[0].src_qp, x.qp->qp_num());
    EXPECT_EQ(std::memcmp(y.buf.data(), x.buf.data(), 3000), 0);
    auto sw = wait(*x.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, WcStatus::Success);

    /* RDMA WRITE of 8 KiB (8 packets at MTU 1024) into y. */
    for (size_t i = 0; i < 8192; ++i)
        x.buf[8192 + i] = static_cast<uint8_t>(i ^ 0x5a);
    ASSERT_TRUE(post_send(x, WrOpcode::RdmaWrite, 2, 8192, 8192, &y, 16384));
    sw = wait(*x.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, WcStatus::Success);
    EXPECT_EQ(std::memcmp(y.buf.data() + 16384, x.buf.data() + 8192, 8192), 0);

    /* RDMA READ of 5000 bytes of y's into x (READ responses loop back too). */
    for (size_t i = 0; i < 5000; ++i)
        y.buf[32768 + i] = static_cast<uint8_t>(i * 13);
    ASSERT_TRUE(post_send(x, WrOpcode::RdmaRead, 3, 40000, 5000, &y, 32768));
    sw = wait(*x.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, WcStatus::Success);
    EXPECT_EQ(std::memcmp(x.buf.data() + 40000, y.buf.data() + 32768, 5000), 0);

    /* Fetch-and-add on y's word, from x. */
    uint64_t word = 1000;
    std::memcpy(y.buf.data() + 60000, &word, 8);
    SendWr a;
    a.wr_id = 4;
    a.opcode = WrOpcode::AtomicFetchAndAdd;
    a.send_flags = kSendSignaled;
    a.sg_list[0] = sge(x, 50000, 8);
    a.num_sge = 1;
    a.remote_addr = reinterpret_cast<uint64_t>(y.buf.data() + 60000);
    a.rkey = y.mr->rkey();
    a.compare_add = 23;
    ASSERT_TRUE(x.qp->post_send(a));
    sw = wait(*x.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, WcStatus::Success);
    uint64_t old = 0;
    std::memcpy(&old, x.buf.data() + 50000, 8);
    EXPECT_EQ(old, 1000u);
    std::memcpy(&word, y.buf.data() + 60000, 8);
    EXPECT_EQ(word, 1023u);

    /* And the other way round: y writes into x. */
    std::memset(y.buf.data(), 0xA5, 512);
    ASSERT_TRUE(post_send(y, WrOpcode::RdmaWrite, 5, 0, 512, &x, 30000));
    sw = wait(*y.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, WcStatus::Success);
    EXPECT_EQ(std::memcmp(x.buf.data() + 30000, y.buf.data(), 512), 0);
    expect_nothing_on_the_wire();
}

TEST_P(Loopback, TwoThousandMessagesInOrder) {
    ASSERT_TRUE(connect(1));
    constexpr uint32_t kTotal = 2000, kWindow = 128, kSlots = kBuf / kSlot;
    uint32_t posted_r = 0, posted_s = 0, got = 0, done = 0;
    for (; posted_r < kWindow; ++posted_r)
        ASSERT_TRUE(post_recv(y, posted_r, (posted_r % kSlots) * kSlot, kSlot));
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while ((got < kTotal || done < kTotal) && std::chrono::steady_clock::now() < deadline) {
        /* Sends while both the receive window and the send queue have room. */
        while (posted_s < posted_r && posted_s - done < 200 && posted_s < kTotal) {
            const size_t off = (posted_s % kSlots) * kSlot;
            std::memcpy(x.buf.data() + off, &posted_s, 4);
            std::memset(x.buf.data() + off + 4, static_cast<int>(posted_s & 0xff), kSlot - 4);
            ASSERT_TRUE(post_send(x, WrOpcode::Send, posted_s, off, kSlot, nullptr, 0));
            ++posted_s;
        }
        Wc wc[64];
        int k = y.rcq->poll(wc, 64);
        for (int i = 0; i < k; ++i) {
            ASSERT_EQ(wc[i].status, WcStatus::Success);
            ASSERT_EQ(wc[i].wr_id, got) << "receives out of order";
            uint32_t seq = 0;
            std::memcpy(&seq, y.buf.data() + (got % kSlots) * kSlot, 4);
            ASSERT_EQ(seq, got) << "payload of another message";
            ASSERT_EQ(y.buf[(got % kSlots) * kSlot + kSlot - 1], static_cast<uint8_t>(got & 0xff));
            ++got;
            if (posted_r < kTotal) {
                ASSERT_TRUE(post_recv(y, posted_r, (posted_r % kSlots) * kSlot, kSlot));
                ++posted_r;
            }
        }
        const int ks = x.scq->poll(wc, 64);
        for (int i = 0; i < ks; ++i) {
            ASSERT_EQ(wc[i].status, WcStatus::Success);
            ASSERT_EQ(wc[i].wr_id, done) << "send completions out of order";
            ++done;
        }
        if (k == 0 && ks == 0)
            drive();
    }
    EXPECT_EQ(got, kTotal);
    EXPECT_EQ(done, kTotal);
    expect_nothing_on_the_wire();
    /* At least one frame per message each way (the SENDs, and their ACKs). */
    EXPECT_GE(counter(*dev, "tx_loopback_packets"), kTotal);
}

TEST_P(Loopback, IpV6GidAndWhatIsRefused) {
    /* GID 3 (fd77:82::1, untagged) to itself works as the IPv4 one does. */
    ASSERT_TRUE(connect(3));
    std::memset(x.buf.data(), 0x3c, 256);
    ASSERT_TRUE(post_send(x, WrOpcode::RdmaWrite, 1, 0, 256, &y, 1024));
    auto sw = wait(*x.scq, 1);
    ASSERT_EQ(sw.size(), 1u);
    EXPECT_EQ(sw[0].status, WcStatus::Success);
    EXPECT_EQ(std::memcmp(y.buf.data() + 1024, x.buf.data(), 256), 0);
    expect_nothing_on_the_wire();

    /* A fresh QP to GID 2 (VLAN 200) from GID 3 (untagged): refused, naming both VLANs. */
    QpInitAttr ia;
    ia.send_cq = x.scq.get();
    ia.recv_cq = x.rcq.get();
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
    auto q = pd->create_qp(ia);
    ASSERT_TRUE(q);
    QpAttr at;
    at.qp_state = QpState::Init;
    at.qp_access_flags = kRights;
    ASSERT_TRUE((*q)->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags));
    at.qp_state = QpState::Rtr;
    at.path_mtu = Mtu::Mtu1024;
    at.dest_qp_num = y.qp->qp_num();
    at.ah_attr.dgid = dev->gids().at(2).gid;
    at.ah_attr.sgid_index = 3;
    const Status s = (*q)->modify(at, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                          kQpMaxDestRdAtomic | kQpMinRnrTimer);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.code(), EINVAL);
    EXPECT_NE(s.message().find("VLAN 200"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("VLAN 0"), std::string::npos) << s.message();
    (*q).reset();

    /* UD address handles to our own GID: not supported yet, and said so. */
    AhAttr ah;
    ah.dgid = dev->gids().at(1).gid;
    ah.sgid_index = 1;
    auto h = pd->create_ah(ah);
    ASSERT_FALSE(h);
    EXPECT_EQ(h.status().code(), EOPNOTSUPP);
    EXPECT_NE(h.status().message().find("loopback"), std::string::npos) << h.status().message();
}

std::string mode_name(const ::testing::TestParamInfo<std::tuple<bool, uint32_t>> &i) {
    return std::string(std::get<0>(i.param) ? "Embedded" : "Worker") +
           std::to_string(std::get<1>(i.param)) + "w";
}

INSTANTIATE_TEST_SUITE_P(Modes, Loopback,
                         ::testing::Values(std::tuple{true, 1u}, std::tuple{false, 1u},
                                           std::tuple{true, 2u}, std::tuple{false, 2u}),
                         mode_name);

} // namespace
