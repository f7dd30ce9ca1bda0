/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine at scale: several workers (shared nothing, handoff between them), exact
 * work-queue depths in worker mode, TX backpressure (no built frame is ever dropped),
 * the QPN space and its quarantine, thousands of QPs, and the mailbox of detached
 * commands. Its own binary: it needs three EAL lcores (two workers + the main one). */
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <droce/droce.h>

#include "engine.h"
#include "engine_test_util.h"
#include "net.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

/* Three lcores on whatever CPUs there are (--lcores maps lcore ids onto CPUs): lcore 0
 * is the test's own thread, 1 and 2 the workers. Idle workers doze so that three
 * threads share two cores without starving the test. */
std::unique_ptr<Engine> make_engine(bool embedded, uint32_t workers) {
    EngineOptions o;
    o.embedded = embedded;
    o.workers = workers;
    o.idle_polls_before_sleep = 200;
    o.idle_sleep_us = 50;
    o.mbufs = 8191;
    o.log_level = "warn";
    return droce::test::make_test_engine("test_engine_scale", o, "1024", "0@0,1@1,2@0");
}

using droce::test::counter_map;

constexpr uint32_t kRights =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

Status to_init(QueuePair &qp) {
    QpAttr a;
    a.qp_state = QpState::Init;
    a.qp_access_flags = kRights;
    return qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags);
}

Status to_rtr(QueuePair &qp, const Gid &dgid, uint32_t dqpn, uint32_t rq_psn) {
    QpAttr a;
    a.qp_state = QpState::Rtr;
    a.path_mtu = Mtu::Mtu1024;
    a.dest_qp_num = dqpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.ah_attr.dgid = dgid;
    a.ah_attr.sgid_index = 1;
    return qp.modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic |
                            kQpMinRnrTimer);
}

Status to_rts(QueuePair &qp, uint32_t sq_psn) {
    QpAttr a;
    a.qp_state = QpState::Rts;
    a.sq_psn = sq_psn;
    a.timeout = 18; /* ~1 s: a retransmission in these tests means a lost frame */
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    return qp.modify(a, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                            kQpMaxQpRdAtomic);
}

/* A device with a PD and a registered buffer; QPs are made by the tests. */
struct Node {
    Device *dev = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::vector<uint8_t> buf;
    std::unique_ptr<MemoryRegion> mr;
    void init(Device *d, size_t bytes) {
        dev = d;
        pd = std::move(*d->alloc_pd());
        buf.assign(bytes, 0);
        auto m = pd->reg_mr(buf.data(), buf.size(), kRights);
        ASSERT_TRUE(m) << m.status().message();
        mr = std::move(*m);
    }
    Sge sge(size_t off, uint32_t len) const {
        return Sge{reinterpret_cast<uint64_t>(buf.data() + off), len, mr->lkey()};
    }
    uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data() + off); }
};

/* A QP with its own CQ (which decides its worker). */
struct Conn {
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<QueuePair> qp;
    void init(Node &n, int worker, uint32_t depth = 64) {
        auto c = n.dev->create_cq(4 * depth, worker);
        ASSERT_TRUE(c) << c.status().message();
        cq = std::move(*c);
        QpInitAttr a;
        a.send_cq = cq.get();
        a.recv_cq = cq.get();
        a.cap.max_send_wr = depth;
        a.cap.max_recv_wr = depth;
        auto q = n.pd->create_qp(a);
        ASSERT_TRUE(q) << q.status().message();
        qp = std::move(*q);
    }
    void reset() {
        qp.reset();
        cq.reset();
    }
};

void connect(Node &na, Conn &a, Node &nb, Conn &b) {
    ASSERT_TRUE(to_init(*a.qp));
    ASSERT_TRUE(to_init(*b.qp));
    Status s = to_rtr(*a.qp, nb.dev->gids().at(1).gid, b.qp->qp_num(), 0x200);
    ASSERT_TRUE(s) << s.message();
    s = to_rtr(*b.qp, na.dev->gids().at(1).gid, a.qp->qp_num(), 0x100);
    ASSERT_TRUE(s) << s.message();
    ASSERT_TRUE(to_rts(*a.qp, 0x100));
    ASSERT_TRUE(to_rts(*b.qp, 0x200));
}

/* Two devices on a ring pair with `queues` queues per port. */
struct Pair {
    std::unique_ptr<Engine> engine;
    Node a, b;
    bool open(bool embedded, uint32_t workers, uint16_t queues, uint32_t max_qps = 65536) {
        engine = make_engine(embedded, workers);
        if (!engine)
            return false;
        auto ports = engine->create_ring_pair(queues);
        EXPECT_TRUE(ports) << ports.status().message();
        if (!ports)
            return false;
        DeviceConfig ca;
        ca.port = ports->first;
        ca.ipv4_cidr = "10.77.0.1/24";
        ca.mac = "02:00:00:00:01:01";
        ca.mtu = 1500;
        ca.max_qps = max_qps;
        DeviceConfig cb = ca;
        cb.port = ports->second;
        cb.ipv4_cidr = "10.77.0.2/24";
        cb.mac = "02:00:00:00:01:02";
        auto da = engine->open_device(ca);
        auto db = engine->open_device(cb);
        EXPECT_TRUE(da && db);
        if (!da || !db)
            return false;
        EXPECT_TRUE(engine->start());
        a.init(*da, 4 << 20);
        b.init(*db, 4 << 20);
        return true;
    }
    /* Polls until n completions (driving the engine in embedded mode). */
    std::vector<Wc> wait(CompletionQueue &cq, int n, std::chrono::milliseconds limit = 10s) {
        std::vector<Wc> out;
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (static_cast<int>(out.size()) < n && std::chrono::steady_clock::now() < deadline) {
            Wc wc[32];
            const int k = cq.poll(wc, 32);
            out.insert(out.end(), wc, wc + k);
            if (k == 0) {
                if (engine->embedded())
                    engine->poll();
                else
                    std::this_thread::sleep_for(20us);
            }
        }
        return out;
    }
    void close() {
        a.mr.reset();
        b.mr.reset();
        a.pd.reset();
        b.pd.reset();
        engine.reset();
    }
};

/* WRITE then READ back on one connection, data checked; `tag` keeps connections apart. */
void write_read(Pair &p, Conn &ca, size_t off, uint32_t len, uint8_t tag) {
    for (uint32_t i = 0; i < len; ++i)
        p.a.buf[off + i] = static_cast<uint8_t>(i * 13 + tag);
    SendWr w;
    w.wr_id = tag;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.num_sge = 1;
    w.sg_list[0] = p.a.sge(off, len);
    w.remote_addr = p.b.addr(off);
    w.rkey = p.b.mr->rkey();
    ASSERT_TRUE(ca.qp->post_send(w));
    w.wr_id = 0x100u + tag;
    w.opcode = WrOpcode::RdmaRead;
    w.sg_list[0] = p.a.sge(off + (1 << 20), len);
    ASSERT_TRUE(ca.qp->post_send(w));
    auto wc = p.wait(*ca.cq, 2);
    ASSERT_EQ(wc.size(), 2u);
    for (const Wc &c : wc)
        EXPECT_EQ(c.status, WcStatus::Success) << wc_status_str(c.status);
    EXPECT_EQ(0, std::memcmp(p.a.buf.data() + off, p.b.buf.data() + off, len));
    EXPECT_EQ(0, std::memcmp(p.a.buf.data() + off, p.a.buf.data() + off + (1 << 20), len));
}

/* A 64 B RDMA WRITE from the start of A's buffer to the start of B's. */
SendWr write_64(Pair &p) {
    SendWr w;
    w.opcode = WrOpcode::RdmaWrite;
    w.num_sge = 1;
    w.sg_list[0] = p.a.sge(0, 64);
    w.remote_addr = p.b.addr(0);
    w.rkey = p.b.mr->rkey();
    return w;
}

/* n signaled copies of w on a's QP, at most `window` outstanding, each completion polled
 * as it comes (a polled completion frees its slot at once: a post never finds the queue
 * full); every one must succeed. */
void post_windowed(Pair &p, Conn &a, SendWr w, int n, int window) {
    w.send_flags = kSendSignaled;
    int outstanding = 0, done = 0;
    for (int i = 0; i < n;) {
        while (outstanding < window && i < n) {
            w.wr_id = static_cast<uint64_t>(i++);
            Status s = a.qp->post_send(w);
            ASSERT_TRUE(s) << "post " << i << " with " << outstanding
                           << " outstanding: " << s.message();
            ++outstanding;
        }
        Wc wc[16];
        const int k = a.cq->poll(wc, 16);
        for (int j = 0; j < k; ++j)
            ASSERT_EQ(wc[j].status, WcStatus::Success);
        outstanding -= k;
        done += k;
    }
    done += static_cast<int>(p.wait(*a.cq, outstanding).size());
    EXPECT_EQ(done, n);
}

} // namespace

/* Two workers, each port with two queues: QPs on both workers carry traffic, and since
 * queue i of one side feeds queue i of the other, droce<->droce packets land on their
 * owner directly (no handoff). */
TEST(EngineWorkers, TwoWorkersTwoQueues) {
    Pair p;
    ASSERT_TRUE(p.open(false, 2, 2));
    ASSERT_EQ(p.engine->workers(), 2u);
    Conn a[4], b[4];
    for (int i = 0; i < 4; ++i) {
        ASSERT_NO_FATAL_FAILURE(a[i].init(p.a, i % 2));
        ASSERT_NO_FATAL_FAILURE(b[i].init(p.b, i % 2));
        EXPECT_EQ(a[i].qp->qp_num() % 2, static_cast<uint32_t>(i % 2)) << "QPN of its worker";
        ASSERT_NO_FATAL_FAILURE(connect(p.a, a[i], p.b, b[i]));
    }
    for (int round = 0; round < 3; ++round)
        for (int i = 0; i < 4; ++i)
            ASSERT_NO_FATAL_FAILURE(
                write_read(p, a[i], static_cast<size_t>(i) * 100000, 70000, uint8_t(i + round)));
    const auto ca = counter_map(*p.a.dev), cb = counter_map(*p.b.dev);
    EXPECT_EQ(ca.at("workers"), 2u);
    EXPECT_EQ(ca.at("qps"), 4u);
    EXPECT_EQ(ca.at("rx_handoff") + cb.at("rx_handoff"), 0u) << "landed on the owner";
    EXPECT_EQ(ca.at("rx_foreign_pool") + cb.at("rx_foreign_pool"), 0u)
        << "every frame freed by the worker whose pool built it";
    EXPECT_EQ(ca.at("retransmitted_packets") + cb.at("retransmitted_packets"), 0u);
    /* A CQ of one worker with a QP of another is refused. */
    auto c0 = p.a.dev->create_cq(16, 0);
    auto c1 = p.a.dev->create_cq(16, 1);
    ASSERT_TRUE(c0 && c1);
    QpInitAttr bad;
    bad.send_cq = c0->get();
    bad.recv_cq = c1->get();
    auto q = p.a.pd->create_qp(bad);
    ASSERT_FALSE(q);
    EXPECT_NE(q.status().message().find("same worker"), std::string::npos) << q.status().message();
    EXPECT_FALSE(p.a.dev->create_cq(16, 2)) << "worker out of range";
    c0->reset();
    c1->reset();
    for (int i = 0; i < 4; ++i) {
        a[i].reset();
        b[i].reset();
    }
    p.close();
}

/* Two workers on ports with one queue: worker 0 reads the port and hands packets for
 * worker 1's QPs over; worker 1 hands its frames to worker 0 for the single TX queue. */
TEST(EngineWorkers, TwoWorkersOneQueueHandOff) {
    Pair p;
    ASSERT_TRUE(p.open(false, 2, 1));
    Conn a[2], b[2];
    for (int i = 0; i < 2; ++i) {
        ASSERT_NO_FATAL_FAILURE(a[i].init(p.a, i));
        ASSERT_NO_FATAL_FAILURE(b[i].init(p.b, i));
        ASSERT_NO_FATAL_FAILURE(connect(p.a, a[i], p.b, b[i]));
    }
    for (int round = 0; round < 3; ++round)
        for (int i = 0; i < 2; ++i)
            ASSERT_NO_FATAL_FAILURE(write_read(p, a[i], static_cast<size_t>(i) * 200000, 150000,
                                               uint8_t(7 * i + round)));
    const auto ca = counter_map(*p.a.dev), cb = counter_map(*p.b.dev);
    EXPECT_GT(ca.at("rx_handoff"), 0u);
    EXPECT_GT(cb.at("rx_handoff"), 0u);
    EXPECT_GT(ca.at("tx_handoff"), 0u);
    EXPECT_GT(cb.at("tx_handoff"), 0u);
    EXPECT_EQ(ca.at("rx_drop_handoff_full") + cb.at("rx_drop_handoff_full"), 0u);
    EXPECT_EQ(ca.at("retransmitted_packets") + cb.at("retransmitted_packets"), 0u);
    for (int i = 0; i < 2; ++i) {
        a[i].reset();
        b[i].reset();
    }
    p.close();
}

/* Peers on different workers (A's QP on worker 0, B's on worker 1): B's worker 0 reads
 * A's frames and hands them to worker 1, which frees mbufs of worker 0's pool; the
 * answers cross the other way. The sharing counter sees both. */
TEST(EngineWorkers, PeersOnOtherWorkersShowInTheSharingCounter) {
    Pair p;
    ASSERT_TRUE(p.open(false, 2, 2));
    Conn a, b;
    ASSERT_NO_FATAL_FAILURE(a.init(p.a, 0));
    ASSERT_NO_FATAL_FAILURE(b.init(p.b, 1));
    ASSERT_NO_FATAL_FAILURE(connect(p.a, a, p.b, b));
    for (int round = 0; round < 3; ++round)
        ASSERT_NO_FATAL_FAILURE(write_read(p, a, 0, 256, uint8_t(round)));
    const auto ca = counter_map(*p.a.dev), cb = counter_map(*p.b.dev);
    EXPECT_GT(cb.at("rx_handoff"), 0u);
    EXPECT_GT(cb.at("rx_foreign_pool"), 0u) << "B's worker 1 freed worker 0's mbufs";
    EXPECT_GT(ca.at("rx_foreign_pool"), 0u) << "A's worker 0 got worker 1's answers";
    a.reset();
    b.reset();
    p.close();
}

/* Worker mode admits exactly max_send_wr / max_recv_wr outstanding WRs: not the ring's
 * worth plus the worker's queue's worth (which overflowed CQs sized by the verbs rule). */
TEST(EngineWorkers, WorkerModeQueueDepthIsExact) {
    Pair p;
    ASSERT_TRUE(p.open(false, 1, 1));
    Conn a, b;
    ASSERT_NO_FATAL_FAILURE(a.init(p.a, 0, 4));
    ASSERT_NO_FATAL_FAILURE(b.init(p.b, 0, 4));
    /* Connected to a QPN nobody has: nothing is ever acknowledged. */
    ASSERT_TRUE(to_init(*a.qp));
    ASSERT_TRUE(to_rtr(*a.qp, p.b.dev->gids().at(1).gid, 0x7777, 0));
    ASSERT_TRUE(to_rts(*a.qp, 0));
    SendWr w = write_64(p);
    int accepted = 0;
    for (int i = 0; i < 16; ++i) {
        w.wr_id = static_cast<uint64_t>(i);
        if (a.qp->post_send(w))
            ++accepted;
        std::this_thread::sleep_for(2ms); /* let the worker drain the ring */
    }
    EXPECT_EQ(accepted, 4) << "send queue depth";
    RecvWr r;
    r.num_sge = 1;
    r.sg_list[0] = p.a.sge(4096, 64);
    accepted = 0;
    for (int i = 0; i < 16; ++i) {
        if (a.qp->post_recv(r))
            ++accepted;
        std::this_thread::sleep_for(2ms);
    }
    EXPECT_EQ(accepted, 4) << "receive queue depth";
    a.reset();

    /* A polled completion frees its slot at once: post, poll one, post again never
     * fails on a full queue. */
    ASSERT_NO_FATAL_FAILURE(a.init(p.a, 0, 4));
    ASSERT_NO_FATAL_FAILURE(connect(p.a, a, p.b, b));
    ASSERT_NO_FATAL_FAILURE(post_windowed(p, a, w, 2000, 4));
    a.reset();
    b.reset();
    p.close();
}

/* Worker mode: after a doorbell the worker watches the QP's rings itself (RingWatch), so
 * a steady poster rings it about once, not once per WR; a QP idle long enough is let go
 * (its flag cleared), and its next post rings again and completes. */
TEST(EngineWorkers, SteadyPosterRingsTheDoorbellOnce) {
    Pair p;
    ASSERT_TRUE(p.open(false, 1, 1));
    Conn a, b;
    ASSERT_NO_FATAL_FAILURE(a.init(p.a, 0, 4));
    ASSERT_NO_FATAL_FAILURE(b.init(p.b, 0, 4));
    ASSERT_NO_FATAL_FAILURE(connect(p.a, a, p.b, b));
    SendWr w = write_64(p);
    w.send_flags = kSendSignaled;
    auto doorbells = [&] { return counter_map(*p.a.dev).at("doorbells"); };
    const uint64_t before = doorbells();
    constexpr int kWrs = 4000;
    ASSERT_NO_FATAL_FAILURE(post_windowed(p, a, w, kWrs, 4));
    /* Unwatched, nearly every post finds the flag cleared by the last drain. A sanitizer
     * build or a preempted poster may let the watch lapse now and then: far fewer still. */
    EXPECT_LT(doorbells() - before, uint64_t{kWrs / 20});

    /* Idle: the watch lets the QP go; the next post rings again and completes. */
    const auto idle_until = std::chrono::steady_clock::now() + 5s;
    while (counter_map(*p.a.dev).at("ring_watch_released") == 0 &&
           std::chrono::steady_clock::now() < idle_until)
        std::this_thread::sleep_for(10ms);
    ASSERT_GT(counter_map(*p.a.dev).at("ring_watch_released"), 0u);
    const uint64_t rung = doorbells();
    ASSERT_TRUE(a.qp->post_send(w));
    ASSERT_EQ(p.wait(*a.cq, 1).size(), 1u);
    EXPECT_EQ(doorbells(), rung + 1);
    a.reset();
    b.reset();
    p.close();
}

/* A port that refuses frames (the peer's ring is full because the peer is not polling)
 * makes the engine keep them queued, in order: every WR completes without a single
 * retransmission, and the refusals are counted. */
TEST(EngineWorkers, TxBackpressureLosesNothing) {
    Pair p;
    ASSERT_TRUE(p.open(false, 1, 1));
    constexpr int kQps = 12, kMsgs = 8;
    Conn a[kQps], b[kQps];
    for (int i = 0; i < kQps; ++i) {
        ASSERT_NO_FATAL_FAILURE(a[i].init(p.a, 0));
        ASSERT_NO_FATAL_FAILURE(b[i].init(p.b, 0));
        ASSERT_NO_FATAL_FAILURE(connect(p.a, a[i], p.b, b[i]));
    }
    /* 12 QPs x 128 packets of window = 1536 frames > the pair's 1024-frame ring. */
    for (int i = 0; i < kQps; ++i)
        for (int m = 0; m < kMsgs; ++m) {
            SendWr w;
            w.wr_id = static_cast<uint64_t>(m);
            w.opcode = WrOpcode::RdmaWrite;
            w.send_flags = kSendSignaled;
            w.num_sge = 1;
            w.sg_list[0] = p.a.sge(static_cast<size_t>(i) * 300000, 65536);
            w.remote_addr = p.b.addr(static_cast<size_t>(i) * 300000);
            w.rkey = p.b.mr->rkey();
            ASSERT_TRUE(a[i].qp->post_send(w));
        }
    for (int i = 0; i < kQps; ++i) {
        auto wc = p.wait(*a[i].cq, kMsgs, 30s);
        ASSERT_EQ(wc.size(), static_cast<size_t>(kMsgs)) << "QP " << i;
        for (const Wc &c : wc)
            EXPECT_EQ(c.status, WcStatus::Success);
    }
    const auto ca = counter_map(*p.a.dev);
    EXPECT_GT(ca.at("tx_burst_refused"), 0u) << "the port must have refused frames";
    EXPECT_EQ(ca.at("retransmitted_packets"), 0u) << "a refused frame was lost";
    EXPECT_EQ(ca.at("local_ack_timeout_err"), 0u);
    EXPECT_GT(ca.at("tx_queue_depth_max"), 0u);
    for (int i = 0; i < kQps; ++i) {
        a[i].reset();
        b[i].reset();
    }
    p.close();
}

/* QPNs: thousands of QPs in worker mode (two heap rings each, no memzones), unique
 * numbers, and a freed QPN is not handed out again within the quarantine. */
TEST(EngineWorkers, ThousandsOfQpsAndQuarantine) {
    Pair p;
    ASSERT_TRUE(p.open(false, 2, 2, /*max_qps=*/8192));
    auto cq0 = p.a.dev->create_cq(16, 0);
    auto cq1 = p.a.dev->create_cq(16, 1);
    ASSERT_TRUE(cq0 && cq1);
    std::vector<std::unique_ptr<QueuePair>> qps;
    std::set<uint32_t> qpns;
    constexpr int kN = 5000; /* the old engine stopped at 1,007 (memzones near 850) */
    for (int i = 0; i < kN; ++i) {
        QpInitAttr a;
        a.send_cq = a.recv_cq = (i % 2 ? cq1 : cq0)->get();
        a.cap.max_send_wr = 2;
        a.cap.max_recv_wr = 2;
        auto q = p.a.pd->create_qp(a);
        ASSERT_TRUE(q) << "QP " << i << ": " << q.status().message();
        qpns.insert((*q)->qp_num());
        qps.push_back(std::move(*q));
    }
    EXPECT_EQ(qpns.size(), static_cast<size_t>(kN));
    EXPECT_GE(*qpns.begin(), 0x11u);
    EXPECT_LT(*qpns.rbegin(), 8192u);
    EXPECT_EQ(counter_map(*p.a.dev).at("qps"), static_cast<uint64_t>(kN));
    qps.clear();
    EXPECT_EQ(counter_map(*p.a.dev).at("qps"), 0u);
    cq0->reset();
    cq1->reset();
    p.close();

    /* A QPN space of 2 (0x11, 0x12) on one worker. */
    ASSERT_TRUE(p.open(true, 1, 1, 0x13));
    auto cq = p.a.dev->create_cq(16);
    ASSERT_TRUE(cq);
    QpInitAttr a;
    a.send_cq = a.recv_cq = cq->get();
    auto q1 = p.a.pd->create_qp(a), q2 = p.a.pd->create_qp(a);
    ASSERT_TRUE(q1 && q2);
    auto q3 = p.a.pd->create_qp(a);
    ASSERT_FALSE(q3);
    EXPECT_EQ(q3.status().code(), ENOSPC);
    const uint32_t freed = (*q1)->qp_num();
    q1->reset();
    q3 = p.a.pd->create_qp(a);
    ASSERT_FALSE(q3) << "a freed QPN was reused at once";
    EXPECT_NE(q3.status().message().find("1 s"), std::string::npos) << q3.status().message();
    std::this_thread::sleep_for(1100ms);
    q3 = p.a.pd->create_qp(a);
    ASSERT_TRUE(q3) << q3.status().message();
    EXPECT_EQ((*q3)->qp_num(), freed);
    q2->reset();
    q3->reset();
    cq->reset();
    p.close();
    /* A QPN space outside 24 bits is refused. */
    auto e = make_engine(true, 1);
    ASSERT_TRUE(e);
    auto ports = e->create_ring_pair();
    ASSERT_TRUE(ports);
    DeviceConfig c;
    c.port = ports->first;
    c.ipv4_cidr = "10.77.0.1/24";
    c.max_qps = (1u << 24) + 1;
    auto d = e->open_device(c);
    ASSERT_FALSE(d);
    EXPECT_NE(d.status().message().find("24-bit"), std::string::npos) << d.status().message();
}

/* exec_detached (the telemetry thread's way to the worker) frees every command: droce-info
 * polling a long-running process must not grow it. */
TEST(EngineWorkers, DetachedCommandsAreFreed) {
    const uint64_t before = engine::Runtime::detached_live();
    Pair p;
    ASSERT_TRUE(p.open(false, 2, 2));
    auto *rt_dev = p.a.dev; /* any device: counters go through the same path */
    (void)rt_dev;
    /* The public API has no detached call; reach the runtime the way telemetry does. */
    engine::Runtime *rt = nullptr;
    for (engine::Runtime *r : engine::debug_runtimes())
        rt = r;
    ASSERT_NE(rt, nullptr);
    std::atomic<int> ran{0};
    for (int i = 0; i < 200; ++i)
        ASSERT_TRUE(rt->exec_detached(
            static_cast<uint32_t>(i % 2), [&ran] { ++ran; }, 2000));
    EXPECT_EQ(ran.load(), 200);
    EXPECT_EQ(engine::Runtime::detached_live(), before) << "detached commands leaked";
    p.close();
}

/* A CQ overrun is reported, never silent: CqErr (once, naming the CQ) and QpFatal as
 * asynchronous events, the QP in ERR, the counter moved (both threading modes). */
class EngineAsync : public ::testing::TestWithParam<bool> {};

TEST_P(EngineAsync, CqOverrunRaisesEventsAndErrorsTheQp) {
    Pair p;
    ASSERT_TRUE(p.open(GetParam(), 1, 1));
    auto small = p.a.dev->create_cq(4, 0);
    ASSERT_TRUE(small);
    QpInitAttr qa;
    qa.send_cq = qa.recv_cq = small->get();
    qa.cap.max_send_wr = 8;
    qa.cap.max_recv_wr = 8;
    Conn a, b;
    auto q = p.a.pd->create_qp(qa);
    ASSERT_TRUE(q) << q.status().message();
    a.qp = std::move(*q);
    ASSERT_NO_FATAL_FAILURE(b.init(p.b, 0));
    ASSERT_NO_FATAL_FAILURE(connect(p.a, a, p.b, b));
    AsyncEvent ev;
    while (p.a.dev->get_async_event(ev)) /* CommEst etc. from the set-up */
        ;
    for (int i = 0; i < 8; ++i) {
        SendWr w;
        w.wr_id = static_cast<uint64_t>(i);
        w.opcode = WrOpcode::RdmaWrite;
        w.send_flags = kSendSignaled;
        w.num_sge = 1;
        w.sg_list[0] = p.a.sge(0, 64);
        w.remote_addr = p.b.addr(0);
        w.rkey = p.b.mr->rkey();
        ASSERT_TRUE(a.qp->post_send(w));
    }
    /* Nobody polls the CQ: completions 5..8 have no room. */
    std::vector<AsyncEvent> got;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (got.size() < 2 && std::chrono::steady_clock::now() < deadline) {
        if (p.engine->embedded())
            p.engine->poll();
        else
            std::this_thread::sleep_for(1ms);
        while (p.a.dev->get_async_event(ev))
            got.push_back(ev);
    }
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].type, AsyncEventType::CqErr);
    EXPECT_EQ(got[0].cq, small->get());
    EXPECT_EQ(got[1].type, AsyncEventType::QpFatal);
    EXPECT_EQ(got[1].qp_num, a.qp->qp_num());
    QpAttr at;
    ASSERT_TRUE(a.qp->query(at));
    EXPECT_EQ(at.qp_state, QpState::Err);
    const auto c = counter_map(*p.a.dev);
    EXPECT_GT(c.at("cq_overflow"), 0u);
    EXPECT_GE(c.at("async_events"), 2u);
    EXPECT_EQ(c.at("async_event_dropped"), 0u);
    EXPECT_FALSE(p.a.dev->get_async_event(ev)) << "CqErr is reported once";
    a.qp.reset();
    small->reset();
    b.reset();
    p.close();
}

INSTANTIATE_TEST_SUITE_P(Modes, EngineAsync, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool> &i) {
                             return i.param ? "Embedded" : "Worker";
                         });
