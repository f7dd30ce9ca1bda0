/* SPDX-License-Identifier: BSD-3-Clause */
/* Engine end to end in one process: two devices on a net_ring pair, embedded and worker
 * mode, every RC operation; plus raw-port tests of the RX classifier (ARP, ICMP echo,
 * drop counters). The EAL is initialised once (by the first engine) and reused. */
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "engine_test_util.h"
#include "net.h"
#include "wire_packet.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

/* --no-huge/-m: no hugepages on CI; --no-shconf: no shared config file, so parallel
 * DPDK processes of other builds on the machine do not collide; lcores 0-1: lcore 1 is the
 * worker in worker mode. */
bool g_zero_copy = true; /* EngineCopyOnly flips it for its SetUp */

std::unique_ptr<Engine> make_engine(bool embedded) {
    EngineOptions o;
    o.embedded = embedded;
    /* Be gentle with the 2 shared cores (and CI's VM): sleep after 200 idle polls. */
    o.idle_polls_before_sleep = 200;
    o.idle_sleep_us = 50;
    o.mbufs = 4095;
    o.zero_copy = g_zero_copy;
    o.log_level = "warn";
    return droce::test::make_test_engine("test_engine", o, "512", "0-1");
}

using droce::test::counter_map;

/* One side of a connection. Members in destruction-safe order (QP before CQs/MR/PD). */
struct Side {
    Device *dev = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<CompletionQueue> scq, rcq;
    std::vector<uint8_t> buf;
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<QueuePair> qp;

    void init(Device *d, size_t bytes) {
        dev = d;
        pd = std::move(*d->alloc_pd());
        scq = std::move(*d->create_cq(256));
        rcq = std::move(*d->create_cq(256));
        buf.assign(bytes, 0);
        auto m = pd->reg_mr(buf.data(), buf.size(),
                            kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                                kAccessRemoteAtomic);
        ASSERT_TRUE(m) << m.status().message();
        mr = std::move(*m);
        QpInitAttr a;
        a.send_cq = scq.get();
        a.recv_cq = rcq.get();
        auto q = pd->create_qp(a);
        ASSERT_TRUE(q) << q.status().message();
        qp = std::move(*q);
    }
    /* Children before parents, as verbs requires. */
    void reset() {
        qp.reset();
        mr.reset();
        scq.reset();
        rcq.reset();
        pd.reset();
    }
    uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data() + off); }
    Sge sge(size_t off, uint32_t len) const { return Sge{addr(off), len, mr->lkey()}; }
};

Status to_init(QueuePair &qp) {
    QpAttr a;
    a.qp_state = QpState::Init;
    a.qp_access_flags =
        kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    return qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags);
}

Status to_rtr(QueuePair &qp, const Gid &dgid, uint32_t dqpn, uint32_t rq_psn,
              Mtu mtu = Mtu::Mtu1024, uint8_t sgid_index = 1) {
    QpAttr a;
    a.qp_state = QpState::Rtr;
    a.path_mtu = mtu;
    a.dest_qp_num = dqpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.ah_attr.dgid = dgid;
    a.ah_attr.sgid_index = sgid_index;
    return qp.modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic |
                            kQpMinRnrTimer);
}

Status to_rts(QueuePair &qp, uint32_t sq_psn) {
    QpAttr a;
    a.qp_state = QpState::Rts;
    a.sq_psn = sq_psn;
    a.timeout = 18; /* ~1 s: the shared 2-core machine must not cause spurious retries */
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    return qp.modify(a, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                            kQpMaxQpRdAtomic);
}

class EngineE2E : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override {
        engine = make_engine(GetParam());
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports) << ports.status().message();
        DeviceConfig ca;
        ca.port = ports->first;
        ca.ipv4_cidr = "10.77.0.1/24";
        ca.mac = "02:00:00:00:01:01";
        ca.mtu = 1500;
        DeviceConfig cb = ca;
        cb.port = ports->second;
        cb.ipv4_cidr = "10.77.0.2/24";
        cb.mac = "02:00:00:00:01:02";
        auto da = engine->open_device(ca);
        ASSERT_TRUE(da) << da.status().message();
        auto db = engine->open_device(cb);
        ASSERT_TRUE(db) << db.status().message();
        ASSERT_TRUE(engine->start());
        a.init(*da, 1 << 20);
        b.init(*db, 1 << 20);
    }
    void TearDown() override {
        a.reset();
        b.reset();
        engine.reset();
    }

    void connect() {
        ASSERT_TRUE(to_init(*a.qp));
        ASSERT_TRUE(to_init(*b.qp));
        const Gid ga = a.dev->gids().at(1).gid, gb = b.dev->gids().at(1).gid;
        Status s = to_rtr(*a.qp, gb, b.qp->qp_num(), 0x200);
        ASSERT_TRUE(s) << s.message();
        s = to_rtr(*b.qp, ga, a.qp->qp_num(), 0x100);
        ASSERT_TRUE(s) << s.message();
        ASSERT_TRUE(to_rts(*a.qp, 0x100));
        ASSERT_TRUE(to_rts(*b.qp, 0x200));
    }

    /* Polls cq until n completions arrived (driving the engine in embedded mode). */
    std::vector<Wc> wait(CompletionQueue &cq, int n) {
        std::vector<Wc> out;
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (static_cast<int>(out.size()) < n && std::chrono::steady_clock::now() < deadline) {
            Wc wc[16];
            const int k = cq.poll(wc, 16);
            out.insert(out.end(), wc, wc + k);
            if (k == 0) {
                if (engine->embedded())
                    engine->poll();
                else
                    std::this_thread::sleep_for(20us);
            }
        }
        EXPECT_EQ(static_cast<int>(out.size()), n) << "timed out waiting for completions";
        return out;
    }

    void send_recv(uint32_t len, bool with_imm) {
        for (uint32_t i = 0; i < len; ++i)
            a.buf[i] = static_cast<uint8_t>(i * 7 + len);
        std::memset(b.buf.data() + 0x80000, 0, len);
        RecvWr r;
        r.wr_id = 0xB0 + len;
        r.sg_list[0] = b.sge(0x80000, len);
        r.num_sge = 1;
        ASSERT_TRUE(b.qp->post_recv(r));
        SendWr w;
        w.wr_id = 0xA0 + len;
        w.opcode = with_imm ? WrOpcode::SendWithImm : WrOpcode::Send;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = a.sge(0, len);
        w.num_sge = 1;
        w.imm_data = 0xC0FFEE;
        ASSERT_TRUE(a.qp->post_send(w));
        auto sc = wait(*a.scq, 1);
        auto rc = wait(*b.rcq, 1);
        ASSERT_EQ(sc.size(), 1u);
        ASSERT_EQ(rc.size(), 1u);
        EXPECT_EQ(sc[0].status, WcStatus::Success) << wc_status_str(sc[0].status);
        EXPECT_EQ(sc[0].wr_id, 0xA0 + len);
        EXPECT_EQ(sc[0].opcode, WcOpcode::Send);
        EXPECT_EQ(rc[0].status, WcStatus::Success) << wc_status_str(rc[0].status);
        EXPECT_EQ(rc[0].wr_id, 0xB0 + len);
        EXPECT_EQ(rc[0].opcode, WcOpcode::Recv);
        EXPECT_EQ(rc[0].byte_len, len);
        EXPECT_EQ(rc[0].qp_num, b.qp->qp_num());
        EXPECT_EQ(rc[0].src_qp, a.qp->qp_num());
        if (with_imm) {
            EXPECT_TRUE(rc[0].wc_flags & kWcWithImm);
            EXPECT_EQ(rc[0].imm_data, 0xC0FFEEu);
        } else {
            EXPECT_FALSE(rc[0].wc_flags & kWcWithImm);
        }
        EXPECT_EQ(0, std::memcmp(a.buf.data(), b.buf.data() + 0x80000, len));
    }

    void expect_no_drops(const Device &d) {
        const auto c = counter_map(d);
        EXPECT_GT(c.at("port_rcv_packets"), 0u);
        EXPECT_GT(c.at("port_xmit_packets"), 0u);
        for (const auto &[k, v] : c) {
            const bool is_drop =
                k.rfind("rx_drop_", 0) == 0 || k.find("discard") != std::string::npos ||
                k.rfind("tx_no_", 0) == 0 || k == "tx_frame_too_big" ||
                k.rfind("arp_drop", 0) == 0 || k.rfind("icmp_drop", 0) == 0 ||
                k == "out_of_sequence" || k == "duplicate_request" || k == "packet_seq_err" ||
                k == "local_ack_timeout_err" || k == "rnr_nak_sent" ||
                k == "retransmitted_packets" || k.find("error") != std::string::npos ||
                k == "cq_overflow" || k == "sq_wr_rejected" || k == "rq_wr_rejected";
            if (is_drop) {
                EXPECT_EQ(v, 0u) << d.name() << " " << k;
            }
        }
    }

    std::unique_ptr<Engine> engine;
    Side a, b;
};

TEST_P(EngineE2E, AllOperations) {
    ASSERT_NO_FATAL_FAILURE(connect());
    EXPECT_EQ(a.dev->active_mtu(), 1024u);

    /* SEND / RECV: one packet, four, and 64 segments of 1024 bytes. */
    for (uint32_t len : {1u, 4096u, 65536u})
        ASSERT_NO_FATAL_FAILURE(send_recv(len, false)) << len;
    ASSERT_NO_FATAL_FAILURE(send_recv(3000, true));

    /* RDMA WRITE 10000 bytes into B at offset 0x10000. */
    for (uint32_t i = 0; i < 10000; ++i)
        a.buf[0x1000 + i] = static_cast<uint8_t>(i ^ 0x5a);
    SendWr w;
    w.wr_id = 1;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = a.sge(0x1000, 10000);
    w.num_sge = 1;
    w.remote_addr = b.addr(0x10000);
    w.rkey = b.mr->rkey();
    ASSERT_TRUE(a.qp->post_send(w));
    auto sc = wait(*a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::Success);
    EXPECT_EQ(sc[0].opcode, WcOpcode::RdmaWrite);
    EXPECT_EQ(0, std::memcmp(a.buf.data() + 0x1000, b.buf.data() + 0x10000, 10000));

    /* WRITE_WITH_IMM consumes a receive on B. */
    RecvWr r;
    r.wr_id = 77;
    r.num_sge = 0;
    ASSERT_TRUE(b.qp->post_recv(r));
    w.wr_id = 2;
    w.opcode = WrOpcode::RdmaWriteWithImm;
    w.sg_list[0] = a.sge(0x1000, 2048);
    w.remote_addr = b.addr(0x20000);
    w.imm_data = 0x12345678;
    ASSERT_TRUE(a.qp->post_send(w));
    sc = wait(*a.scq, 1);
    auto rc = wait(*b.rcq, 1);
    ASSERT_EQ(sc.size(), 1u);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::Success);
    EXPECT_EQ(rc[0].status, WcStatus::Success);
    EXPECT_EQ(rc[0].opcode, WcOpcode::RecvRdmaWithImm);
    EXPECT_EQ(rc[0].wr_id, 77u);
    EXPECT_EQ(rc[0].imm_data, 0x12345678u);
    EXPECT_TRUE(rc[0].wc_flags & kWcWithImm);
    EXPECT_EQ(rc[0].byte_len, 2048u);
    EXPECT_EQ(0, std::memcmp(a.buf.data() + 0x1000, b.buf.data() + 0x20000, 2048));

    /* READ 20000 bytes from B (multi-packet response). */
    for (uint32_t i = 0; i < 20000; ++i)
        b.buf[0x30000 + i] = static_cast<uint8_t>(i * 13);
    w = SendWr{};
    w.wr_id = 3;
    w.opcode = WrOpcode::RdmaRead;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = a.sge(0x40000, 20000);
    w.num_sge = 1;
    w.remote_addr = b.addr(0x30000);
    w.rkey = b.mr->rkey();
    ASSERT_TRUE(a.qp->post_send(w));
    sc = wait(*a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::Success) << wc_status_str(sc[0].status);
    EXPECT_EQ(sc[0].opcode, WcOpcode::RdmaRead);
    EXPECT_EQ(sc[0].byte_len, 20000u);
    EXPECT_EQ(0, std::memcmp(a.buf.data() + 0x40000, b.buf.data() + 0x30000, 20000));

    /* FETCH_ADD then CMP_SWAP on one 8-byte word of B. */
    uint64_t v = 1000;
    std::memcpy(b.buf.data() + 0x50000, &v, 8);
    w = SendWr{};
    w.wr_id = 4;
    w.opcode = WrOpcode::AtomicFetchAndAdd;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = a.sge(0x60000, 8);
    w.num_sge = 1;
    w.remote_addr = b.addr(0x50000);
    w.rkey = b.mr->rkey();
    w.compare_add = 42;
    ASSERT_TRUE(a.qp->post_send(w));
    sc = wait(*a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::Success) << wc_status_str(sc[0].status);
    EXPECT_EQ(sc[0].opcode, WcOpcode::FetchAdd);
    std::memcpy(&v, a.buf.data() + 0x60000, 8);
    EXPECT_EQ(v, 1000u) << "original value returned";
    std::memcpy(&v, b.buf.data() + 0x50000, 8);
    EXPECT_EQ(v, 1042u);

    w.wr_id = 5;
    w.opcode = WrOpcode::AtomicCmpAndSwp;
    w.sg_list[0] = a.sge(0x60008, 8);
    w.compare_add = 1042;
    w.swap = 0xDEADBEEFCAFEull;
    ASSERT_TRUE(a.qp->post_send(w));
    sc = wait(*a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::Success);
    EXPECT_EQ(sc[0].opcode, WcOpcode::CompSwap);
    std::memcpy(&v, a.buf.data() + 0x60008, 8);
    EXPECT_EQ(v, 1042u);
    std::memcpy(&v, b.buf.data() + 0x50000, 8);
    EXPECT_EQ(v, 0xDEADBEEFCAFEull);

    /* And the other direction, B -> A, to exercise both QPs as requesters. */
    std::swap(a, b);
    ASSERT_NO_FATAL_FAILURE(send_recv(5000, false));
    std::swap(a, b);

    expect_no_drops(*a.dev);
    expect_no_drops(*b.dev);
    const auto ca = counter_map(*a.dev);
    EXPECT_GE(ca.at("arp_requests_sent"), 1u);
    const auto cb = counter_map(*b.dev);
    EXPECT_EQ(ca.at("rx_send_requests") + cb.at("rx_send_requests"), 5u) << "SEND messages";
    /* Segmentation at MTU 1024: 1 + 4 + 64 + 3 SEND packets, 10 + 2 WRITE packets and a
     * READ request and two atomics reached B. */
    EXPECT_GE(cb.at("port_rcv_packets"), 1u + 4u + 64u + 3u + 10u + 2u + 3u);

    /* Every mbuf is back in the pool once the traffic has stopped (net_ring ports hold
     * none of their own). */
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    uint64_t in_use = 0;
    do {
        if (engine->embedded())
            engine->poll();
        else
            std::this_thread::sleep_for(1ms);
        in_use = counter_map(*a.dev).at("mbufs_in_use");
    } while (in_use != 0 && std::chrono::steady_clock::now() < deadline);
    EXPECT_EQ(in_use, 0u) << "mbufs leaked";
}

TEST_P(EngineE2E, SharedReceiveQueue) {
    /* b's QP takes receives from an SRQ (through the worker's ring in worker mode). */
    auto srq = b.pd->create_srq(SrqInitAttr{});
    ASSERT_TRUE(srq) << srq.status().message();
    b.qp.reset();
    QpInitAttr qa;
    qa.send_cq = b.scq.get();
    qa.recv_cq = b.rcq.get();
    qa.srq = srq->get();
    auto q = b.pd->create_qp(qa);
    ASSERT_TRUE(q) << q.status().message();
    b.qp = std::move(*q);
    ASSERT_NO_FATAL_FAILURE(connect());
    RecvWr r;
    r.num_sge = 1;
    r.sg_list[0] = b.sge(0, 100);
    EXPECT_FALSE(b.qp->post_recv(r)) << "post_recv on an SRQ QP must fail";
    for (int i = 0; i < 3; ++i) {
        r.wr_id = 0x500 + i;
        r.sg_list[0] = b.sge(0x10000 * (i + 1), 8192);
        ASSERT_TRUE((*srq)->post_recv(r));
    }
    for (int i = 0; i < 3; ++i) {
        for (uint32_t k = 0; k < 5000; ++k)
            a.buf[i * 8192 + k] = static_cast<uint8_t>(k + i);
        SendWr w;
        w.wr_id = i;
        w.opcode = WrOpcode::Send;
        w.send_flags = kSendSignaled;
        w.num_sge = 1;
        w.sg_list[0] = a.sge(i * 8192, 5000);
        ASSERT_TRUE(a.qp->post_send(w));
    }
    auto rc = wait(*b.rcq, 3);
    ASSERT_EQ(rc.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(rc[i].status, WcStatus::Success);
        EXPECT_EQ(rc[i].wr_id, 0x500u + i);
        EXPECT_EQ(rc[i].byte_len, 5000u);
        EXPECT_EQ(0, std::memcmp(a.buf.data() + i * 8192, b.buf.data() + 0x10000 * (i + 1), 5000));
    }
    wait(*a.scq, 3);
    b.qp.reset(); /* QPs before their SRQ */
    srq->reset();
}

TEST_P(EngineE2E, ControlPathErrors) {
    QpInitAttr bad;
    auto q = a.pd->create_qp(bad);
    ASSERT_FALSE(q);
    EXPECT_EQ(q.status().code(), EINVAL);

    ASSERT_TRUE(to_init(*a.qp));
    const Gid gb = b.dev->gids().at(1).gid;
    Status s = to_rtr(*a.qp, gb, b.qp->qp_num(), 0, Mtu::Mtu2048);
    EXPECT_EQ(s.code(), EINVAL);
    EXPECT_NE(s.message().find("exceeds the active MTU 1024"), std::string::npos) << s.message();
    s = to_rtr(*a.qp, gb, b.qp->qp_num(), 0, Mtu::Mtu1024, 7);
    EXPECT_EQ(s.code(), EINVAL);
    EXPECT_NE(s.message().find("sgid_index 7"), std::string::npos) << s.message();
    s = to_rtr(*a.qp, gb, b.qp->qp_num(), 0, Mtu::Mtu1024, 0);
    EXPECT_EQ(s.code(), EINVAL) << "IPv6 link-local sgid with an IPv4 dgid";
    Gid off = gb;
    off.raw[13] = 78; /* 10.78.0.2 */
    s = to_rtr(*a.qp, off, b.qp->qp_num(), 0);
    EXPECT_EQ(s.code(), ENETUNREACH);
    EXPECT_NE(s.message().find("no gateway is configured"), std::string::npos) << s.message();

    SendWr w;
    w.num_sge = 0;
    s = a.qp->post_send(w);
    EXPECT_EQ(s.code(), EINVAL) << "post_send before RTS";

    QpAttr qa;
    ASSERT_TRUE(a.qp->query(qa));
    EXPECT_EQ(qa.qp_state, QpState::Init);
}

/* ---- zero-copy data path ---- */

/* Polls (embedded) or sleeps (worker) until the device's mbufs are all back. */
uint64_t settle_mbufs(Engine &e, const Device &d) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    uint64_t in_use = 0;
    do {
        if (e.embedded())
            e.poll();
        else
            std::this_thread::sleep_for(1ms);
        in_use = counter_map(d).at("mbufs_in_use");
    } while (in_use != 0 && std::chrono::steady_clock::now() < deadline);
    return in_use;
}

/* A 64 KiB WRITE (64 packets at MTU 1024): zero-copy on TX, chained frames on RX, one
 * copy into the target, every mbuf back. AllOperations covers every opcode with zero-copy
 * on (1024-byte packets reach the default threshold). */
TEST_P(EngineE2E, ZeroCopyWriteCountsAndMbufs) {
    ASSERT_NO_FATAL_FAILURE(connect());
    const auto a0 = counter_map(*a.dev), b0 = counter_map(*b.dev);
    for (uint32_t i = 0; i < 65536; ++i)
        a.buf[0x1000 + i] = static_cast<uint8_t>(i * 31 + 7);
    SendWr w;
    w.wr_id = 9;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = a.sge(0x1000, 40000); /* two SGEs: gather list across a boundary */
    w.sg_list[1] = a.sge(0x1000 + 40000, 65536 - 40000);
    w.num_sge = 2;
    w.remote_addr = b.addr(0x20000);
    w.rkey = b.mr->rkey();
    ASSERT_TRUE(a.qp->post_send(w));
    auto sc = wait(*a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::Success) << wc_status_str(sc[0].status);
    EXPECT_EQ(0, std::memcmp(a.buf.data() + 0x1000, b.buf.data() + 0x20000, 65536));
    const auto a1 = counter_map(*a.dev), b1 = counter_map(*b.dev);
    EXPECT_EQ(a1.at("tx_bytes_zero_copy") - a0.at("tx_bytes_zero_copy"), 65536u);
    EXPECT_EQ(a1.at("tx_bytes_copied") - a0.at("tx_bytes_copied"), 0u);
    EXPECT_EQ(b1.at("rx_bytes_copied") - b0.at("rx_bytes_copied"), 65536u) << "one RX copy";
    EXPECT_EQ(b1.at("rx_multiseg_packets") - b0.at("rx_multiseg_packets"), 64u);
    expect_no_drops(*a.dev);
    expect_no_drops(*b.dev);
    EXPECT_EQ(settle_mbufs(*engine, *a.dev), 0u) << "mbufs leaked";
    EXPECT_EQ(counter_map(*a.dev).at("zc_mbufs_outstanding"), 0u);
}

/* Deregistering the source MR while zero-copy frames into it are still in the ring: the
 * key dies at once, dereg returns only once no frame points into the region any more,
 * the WRITE still completes and every mbuf comes back. */
TEST_P(EngineE2E, ZeroCopyDeregWithPacketsInFlight) {
    ASSERT_NO_FATAL_FAILURE(connect());
    SendWr w;
    w.wr_id = 11;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = a.sge(0, 512 * 1024);
    w.num_sge = 1;
    w.remote_addr = b.addr(0);
    w.rkey = b.mr->rkey();
    ASSERT_TRUE(a.qp->post_send(w));
    if (engine->embedded()) {
        /* One iteration: A sends a batch of 64, B takes 32 of them; 32 stay in the ring. */
        engine->poll();
        EXPECT_GT(counter_map(*a.dev).at("zc_mbufs_outstanding"), 0u);
    } else {
        std::this_thread::sleep_for(200us);
    }
    a.mr.reset();
    auto c = counter_map(*a.dev);
    EXPECT_EQ(c.at("zc_mbufs_outstanding"), 0u) << "dereg returned with frames still out";
    EXPECT_EQ(c.at("mr_dereg_timeout"), 0u);
    if (engine->embedded()) {
        EXPECT_GT(c.at("mr_dereg_inflight_refs"), 0u) << "the case was not exercised";
    }
    /* The packets still to go would read the region after its dereg: the WR fails with a
     * local protection error instead (in worker mode it may have finished before). */
    auto sc = wait(*a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    if (engine->embedded()) {
        EXPECT_EQ(sc[0].status, WcStatus::LocProtErr) << wc_status_str(sc[0].status);
    } else {
        EXPECT_TRUE(sc[0].status == WcStatus::Success || sc[0].status == WcStatus::LocProtErr)
            << wc_status_str(sc[0].status);
    }
    EXPECT_EQ(settle_mbufs(*engine, *a.dev), 0u) << "mbufs leaked";
}

/* As above, but the application also frees the buffer once dereg returned (verbs says
 * the device no longer touches it then). The 1 MiB WRITE is still sending: none of its
 * later packets, and no retransmission, may read the freed memory (ASan reports it; the
 * bytes written over it before the free must not reach B). */
TEST_P(EngineE2E, DeregAndFreeSourceWhileWriteInFlight) {
    ASSERT_NO_FATAL_FAILURE(connect());
    constexpr uint32_t kLen = 1 << 20;
    auto src = std::make_unique<uint8_t[]>(kLen);
    for (uint32_t i = 0; i < kLen; ++i)
        src[i] = static_cast<uint8_t>(i % 127); /* never 0xEE */
    auto m = a.pd->reg_mr(src.get(), kLen, kAccessLocalWrite);
    ASSERT_TRUE(m) << m.status().message();
    std::unique_ptr<MemoryRegion> mr = std::move(*m);
    SendWr w;
    w.wr_id = 12;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = {reinterpret_cast<uint64_t>(src.get()), kLen, mr->lkey()};
    w.num_sge = 1;
    w.remote_addr = b.addr(0);
    w.rkey = b.mr->rkey();
    ASSERT_TRUE(a.qp->post_send(w));
    if (engine->embedded())
        engine->poll(); /* the first window only: 1024 packets to go */
    else
        std::this_thread::sleep_for(100us);
    mr.reset();
    std::memset(src.get(), 0xEE, kLen);
    src.reset();
    auto sc = wait(*a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    if (engine->embedded()) {
        EXPECT_EQ(sc[0].status, WcStatus::LocProtErr) << wc_status_str(sc[0].status);
        EXPECT_EQ(counter_map(*a.dev).at("req_local_prot_error"), 1u);
    } else {
        EXPECT_TRUE(sc[0].status == WcStatus::Success || sc[0].status == WcStatus::LocProtErr)
            << wc_status_str(sc[0].status);
    }
    /* Whatever B got came from the buffer before its dereg. */
    EXPECT_EQ(std::count(b.buf.begin(), b.buf.end(), uint8_t{0xEE}), 0)
        << "bytes read after the dereg reached the peer";
    EXPECT_EQ(settle_mbufs(*engine, *a.dev), 0u) << "mbufs leaked";
}

/* kSendInline in both modes: verbs copies the payload when post_send returns, so the
 * caller may overwrite and free the buffer at once (ASan reports a later read). In worker
 * mode the WR reaches the worker later through the ring: what it sends must still be
 * what was posted. SENDs and WRITEs, the payload in two SGEs with no lkey. */
TEST_P(EngineE2E, InlineSendAndWriteAreCopiedAtPost) {
    QpInitAttr ia;
    ia.cap.max_inline_data = 64;
    ia.send_cq = a.scq.get();
    ia.recv_cq = a.rcq.get();
    auto qa = a.pd->create_qp(ia);
    ASSERT_TRUE(qa) << qa.status().message();
    ia.send_cq = b.scq.get();
    ia.recv_cq = b.rcq.get();
    auto qb = b.pd->create_qp(ia);
    ASSERT_TRUE(qb) << qb.status().message();
    QueuePair &x = **qa, &y = **qb;
    ASSERT_TRUE(to_init(x));
    ASSERT_TRUE(to_init(y));
    ASSERT_TRUE(to_rtr(x, b.dev->gids().at(1).gid, y.qp_num(), 0x300));
    ASSERT_TRUE(to_rtr(y, a.dev->gids().at(1).gid, x.qp_num(), 0x400));
    ASSERT_TRUE(to_rts(x, 0x400));
    ASSERT_TRUE(to_rts(y, 0x300));
    constexpr uint32_t kN = 32, kLen = 64;
    auto pattern = [](uint32_t i, uint32_t j) { return static_cast<uint8_t>((i * 29 + j) % 127); };
    for (uint32_t i = 0; i < kN / 2; ++i) {
        RecvWr r;
        r.wr_id = i;
        r.sg_list[0] = b.sge(0x1000 + i * kLen, kLen);
        r.num_sge = 1;
        ASSERT_TRUE(y.post_recv(r));
    }
    std::memset(b.buf.data(), 0, 0x8000);
    for (uint32_t i = 0; i < kN; ++i) {
        auto p = std::make_unique<uint8_t[]>(kLen);
        for (uint32_t j = 0; j < kLen; ++j)
            p[j] = pattern(i, j);
        SendWr w;
        w.wr_id = i;
        w.opcode = (i & 1) ? WrOpcode::RdmaWrite : WrOpcode::Send;
        w.send_flags = kSendSignaled | kSendInline;
        w.sg_list[0] = {reinterpret_cast<uint64_t>(p.get()), 24, 0};
        w.sg_list[1] = {reinterpret_cast<uint64_t>(p.get() + 24), kLen - 24, 0};
        w.num_sge = 2;
        w.remote_addr = b.addr(0x4000 + i * kLen);
        w.rkey = b.mr->rkey();
        ASSERT_TRUE(x.post_send(w)) << i;
        std::memset(p.get(), 0xEE, kLen); /* the caller's again */
    }
    const auto sc = wait(*a.scq, kN);
    for (const Wc &wc : sc)
        EXPECT_EQ(wc.status, WcStatus::Success) << wc.wr_id << " " << wc_status_str(wc.status);
    const auto rc = wait(*b.rcq, kN / 2);
    ASSERT_EQ(rc.size(), kN / 2);
    for (uint32_t k = 0; k < kN / 2; ++k) {
        EXPECT_EQ(rc[k].status, WcStatus::Success);
        EXPECT_EQ(rc[k].byte_len, kLen);
        const uint32_t i = 2 * k; /* the k-th SEND */
        for (uint32_t j = 0; j < kLen; ++j)
            ASSERT_EQ(b.buf[0x1000 + k * kLen + j], pattern(i, j)) << "SEND " << i << " byte " << j;
    }
    for (uint32_t i = 1; i < kN; i += 2)
        for (uint32_t j = 0; j < kLen; ++j)
            ASSERT_EQ(b.buf[0x4000 + i * kLen + j], pattern(i, j))
                << "WRITE " << i << " byte " << j;
    EXPECT_FALSE(x.post_send([&] {
        SendWr big;
        big.opcode = WrOpcode::Send;
        big.send_flags = kSendInline;
        big.sg_list[0] = a.sge(0, kLen + 1);
        big.num_sge = 1;
        return big;
    }()))
        << "above max_inline_data";
}

INSTANTIATE_TEST_SUITE_P(Modes, EngineE2E, ::testing::Values(true, false),
                         [](const auto &i) { return i.param ? "Embedded" : "Worker"; });

/* One-packet WRITEs after the first leave by the straight path (a DataFrame from the
 * QP's template: tx_straight), each its own bytes in the right place; a multi-packet one
 * does not. */
TEST_P(EngineE2E, SmallWritesTakeTheStraightPath) {
    ASSERT_NO_FATAL_FAILURE(connect());
    /* One signaled WRITE of len bytes from A at off to B at remote_off, completed. */
    const auto write = [&](uint64_t id, uint64_t off, uint32_t len, uint64_t remote_off) {
        SendWr w;
        w.wr_id = id;
        w.opcode = WrOpcode::RdmaWrite;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = a.sge(off, len);
        w.num_sge = 1;
        w.remote_addr = b.addr(remote_off);
        w.rkey = b.mr->rkey();
        ASSERT_TRUE(a.qp->post_send(w));
        auto sc = wait(*a.scq, 1);
        ASSERT_EQ(sc.size(), 1u);
        EXPECT_EQ(sc[0].status, WcStatus::Success) << wc_status_str(sc[0].status);
    };
    const auto a0 = counter_map(*a.dev);
    const uint64_t resp0 = counter_map(*b.dev).at("resp_straight");
    for (uint32_t i = 0; i < 20 * 64; ++i)
        a.buf[0x3000 + i] = static_cast<uint8_t>(i * 13 + 1);
    for (uint32_t i = 0; i < 20; ++i)
        ASSERT_NO_FATAL_FAILURE(write(i, 0x3000 + i * 64, 64, 0x30000 + i * 128));
    for (uint32_t i = 0; i < 20; ++i)
        EXPECT_EQ(0, std::memcmp(a.buf.data() + 0x3000 + i * 64, b.buf.data() + 0x30000 + i * 128,
                                 64))
            << "write " << i;
    const auto a1 = counter_map(*a.dev);
    EXPECT_EQ(a1.at("tx_straight") - a0.at("tx_straight"), 19u) << "the first one teaches it";
    /* Every one executed by the responder's straight path, from the fast parse's view. */
    const uint64_t resp1 = counter_map(*b.dev).at("resp_straight");
    EXPECT_EQ(resp1 - resp0, 20u);
    ASSERT_NO_FATAL_FAILURE(write(99, 0, 4096, 0x40000)); /* four packets: not straight */
    EXPECT_EQ(counter_map(*a.dev).at("tx_straight"), a1.at("tx_straight"));
    /* The zero-copy threshold (the device's default, 1024 bytes, one packet at this path
     * MTU): a payload below it is copied by the straight path, one at it is attached by
     * transmit() instead. */
    const auto z0 = counter_map(*a.dev);
    ASSERT_NO_FATAL_FAILURE(write(97, 0x2000, 1023, 0x50000));
    const auto z1 = counter_map(*a.dev);
    EXPECT_EQ(z1.at("tx_straight") - z0.at("tx_straight"), 1u);
    EXPECT_EQ(z1.at("tx_bytes_zero_copy"), z0.at("tx_bytes_zero_copy"));
    ASSERT_NO_FATAL_FAILURE(write(98, 0x2000, 1024, 0x50000));
    const auto z2 = counter_map(*a.dev);
    EXPECT_EQ(z2.at("tx_straight"), z1.at("tx_straight"));
    EXPECT_EQ(z2.at("tx_bytes_zero_copy") - z1.at("tx_bytes_zero_copy"), 1024u);
    EXPECT_EQ(0, std::memcmp(a.buf.data() + 0x2000, b.buf.data() + 0x50000, 1024));
    const uint64_t resp2 = counter_map(*b.dev).at("resp_straight");
    /* One-packet SENDs, with immediate and without, straight out and fast in (untagged
     * IPv4): each lands in its receive with its immediate. */
    const uint64_t fast0 = counter_map(*b.dev).at("rx_fast_path");
    for (bool imm : {false, true})
        for (uint32_t len : {0u, 3u, 64u})
            ASSERT_NO_FATAL_FAILURE(send_recv(len, imm));
    EXPECT_GE(counter_map(*b.dev).at("rx_fast_path") - fast0, 6u);
    EXPECT_EQ(counter_map(*b.dev).at("resp_straight") - resp2, 6u) << "the SENDs too";
}

/* The same pair with zero-copy off: everything copied, nothing chained. */
class EngineCopyOnly : public EngineE2E {
  protected:
    void SetUp() override {
        g_zero_copy = false;
        EngineE2E::SetUp();
        g_zero_copy = true;
    }
};

TEST_P(EngineCopyOnly, WriteIsCopied) {
    ASSERT_NO_FATAL_FAILURE(connect());
    for (uint32_t i = 0; i < 65536; ++i)
        a.buf[i] = static_cast<uint8_t>(i * 5);
    SendWr w;
    w.wr_id = 1;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = a.sge(0, 65536);
    w.num_sge = 1;
    w.remote_addr = b.addr(0x10000);
    w.rkey = b.mr->rkey();
    ASSERT_TRUE(a.qp->post_send(w));
    auto sc = wait(*a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::Success);
    EXPECT_EQ(0, std::memcmp(a.buf.data(), b.buf.data() + 0x10000, 65536));
    const auto ca = counter_map(*a.dev), cb = counter_map(*b.dev);
    EXPECT_EQ(ca.at("tx_bytes_zero_copy"), 0u);
    EXPECT_EQ(ca.at("tx_bytes_copied"), 65536u);
    EXPECT_EQ(cb.at("rx_multiseg_packets"), 0u);
    EXPECT_EQ(cb.at("rx_bytes_copied"), 65536u);
    EXPECT_EQ(settle_mbufs(*engine, *a.dev), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, EngineCopyOnly, ::testing::Values(true, false),
                         [](const auto &i) { return i.param ? "Embedded" : "Worker"; });

/* DCQCN through the API, in both threading modes: per-QP parameters (a bad one refused
 * with its name), the state read back, and a QP capped by rpg_max_rate paced through the
 * worker's timer wheel: 1 MB at 200 Mb/s takes ~45 ms of wall time. */
TEST_P(EngineE2E, DcqcnPerQpParamsStateAndPacing) {
    ASSERT_NO_FATAL_FAILURE(connect());
    DcqcnState st;
    ASSERT_TRUE(a.qp->query_dcqcn(st));
    EXPECT_TRUE(st.enabled) << "devices run DCQCN by default";
    EXPECT_FALSE(st.limited);
    EXPECT_STREQ(st.stage, "line_rate");
    EXPECT_GT(st.max_rate_bps, 0u);
    EXPECT_EQ(st.rate_bps, st.max_rate_bps);
    EXPECT_EQ(st.pacer_rate_bps, 0u);

    DcqcnParams bad;
    bad.cnp_dscp = 64;
    Status s = a.qp->set_dcqcn(bad);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("cnp_dscp must be 0..63"), std::string::npos) << s.message();

    /* 1 MB WRITEs: 1024 frames of 1106 bytes on the wire (with Ethernet's 24). */
    const double wire_bits = 1024.0 * (1024 + 58 + 24) * 8;
    for (const uint64_t rate : {uint64_t{200'000'000}, uint64_t{2'000'000'000}}) {
        DcqcnParams capped;
        capped.rpg_max_rate_bps = rate;
        s = a.qp->set_dcqcn(capped);
        ASSERT_TRUE(s) << s.message();
        ASSERT_TRUE(a.qp->query_dcqcn(st));
        EXPECT_EQ(st.rate_bps, rate);
        EXPECT_EQ(st.pacer_rate_bps, rate);

        SendWr w;
        w.wr_id = rate;
        w.opcode = WrOpcode::RdmaWrite;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = a.sge(0, 1 << 20);
        w.num_sge = 1;
        w.remote_addr = b.addr(0);
        w.rkey = b.mr->rkey();
        const auto t0 = std::chrono::steady_clock::now();
        ASSERT_TRUE(a.qp->post_send(w));
        auto sc = wait(*a.scq, 1);
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        ASSERT_EQ(sc.size(), 1u);
        EXPECT_EQ(sc[0].status, WcStatus::Success);
        const double expect_ms = wire_bits / static_cast<double>(rate) * 1e3;
        std::printf("paced 1 MB at %.1f Gb/s: %.2f ms (ideal %.2f ms, %+.2f%%)\n",
                    static_cast<double>(rate) * 1e-9, ms, expect_ms, (expect_ms / ms - 1) * 100);
        /* Never faster than the rate (less one bucket); slower only if the shared machine
         * takes the core away. */
        EXPECT_GT(ms, expect_ms * 0.95);
        EXPECT_LT(ms, 5000.0);
    }
    EXPECT_GT(counter_map(*a.dev).at("paced_defers"), 100u);

    ASSERT_TRUE(a.qp->disable_dcqcn());
    ASSERT_TRUE(a.qp->query_dcqcn(st));
    EXPECT_FALSE(st.enabled);
    EXPECT_EQ(st.pacer_rate_bps, 0u);
}

TEST(EngineDcqcn, BadDeviceParametersAreRefusedWithTheFieldNamed) {
    auto engine = make_engine(true);
    ASSERT_TRUE(engine);
    auto ports = engine->create_ring_pair();
    ASSERT_TRUE(ports);
    DeviceConfig c;
    c.port = ports->first;
    c.ipv4_cidr = "10.77.0.1/24";
    c.dcqcn_params.rpg_threshold = 0;
    auto d = engine->open_device(c);
    ASSERT_FALSE(d);
    EXPECT_EQ(d.status().message(), "open_device: DCQCN parameter rpg_threshold must be 1..31");
    c.dcqcn_params = {};
    c.dcqcn_params.rpg_min_rate_bps = 1'000'000'000'000; /* 1 Tb/s: above any link */
    d = engine->open_device(c);
    ASSERT_FALSE(d);
    EXPECT_NE(d.status().message().find("rpg_min_rate exceeds the port's line rate"),
              std::string::npos)
        << d.status().message();
    c.dcqcn_params = {};
    c.dcqcn_params.ecn_mode = static_cast<EcnMode>(7);
    d = engine->open_device(c);
    ASSERT_FALSE(d);
    EXPECT_NE(d.status().message().find("ecn_mode"), std::string::npos) << d.status().message();
    /* A device without DCQCN: its QPs have none. */
    c.dcqcn_params = {};
    c.dcqcn = false;
    d = engine->open_device(c);
    ASSERT_TRUE(d) << d.status().message();
    Side s;
    ASSERT_NO_FATAL_FAILURE(s.init(*d, 4096));
    DcqcnState st;
    ASSERT_TRUE(s.qp->query_dcqcn(st));
    EXPECT_FALSE(st.enabled);
    ASSERT_TRUE(s.qp->set_dcqcn(DcqcnParams{})) << "a QP may still get DCQCN of its own";
    ASSERT_TRUE(s.qp->query_dcqcn(st));
    EXPECT_TRUE(st.enabled);
    s.reset();
}

TEST(EngineArp, TimeoutMessageWhenPeerDoesNotExist) {
    auto engine = make_engine(true);
    ASSERT_TRUE(engine);
    auto ports = engine->create_ring_pair();
    ASSERT_TRUE(ports);
    DeviceConfig c;
    c.port = ports->first;
    c.ipv4_cidr = "10.77.0.1/24";
    c.mac = "02:00:00:00:01:01";
    c.arp_timeout_ms = 500;
    auto d = engine->open_device(c);
    ASSERT_TRUE(d) << d.status().message();
    Side s;
    ASSERT_NO_FATAL_FAILURE(s.init(*d, 4096));
    ASSERT_TRUE(to_init(*s.qp));
    const Gid nobody = net::GidTable::ipv4_mapped(0x0A4D0063); /* 10.77.0.99 */
    const auto t0 = std::chrono::steady_clock::now();
    Status st = to_rtr(*s.qp, nobody, 0x11, 0);
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_EQ(st.code(), ETIMEDOUT);
    EXPECT_EQ(st.message(), "modify QP: ARP: no reply from 10.77.0.99 within 500 ms");
    EXPECT_GE(ms, 500);
    EXPECT_LT(ms, 5000); /* generous: the machine is shared */
    /* Requests at 0, 200 and 400 ms; a descheduled process may miss the last one. */
    EXPECT_GE(counter_map(**d).at("arp_requests_sent"), 2u);
    QpAttr qa;
    ASSERT_TRUE(s.qp->query(qa));
    EXPECT_EQ(qa.qp_state, QpState::Init) << "a failed modify changes nothing";
    s.reset();
}

/* Raw frames through the ring: port B is driven by the test itself. */
class RawPort : public ::testing::Test {
  protected:
    void SetUp() override {
        engine = make_engine(true);
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports);
        DeviceConfig c;
        c.port = ports->first;
        c.ipv4_cidr = "10.77.0.1/24";
        c.mac = "02:00:00:00:01:01";
        auto d = engine->open_device(c);
        ASSERT_TRUE(d) << d.status().message();
        dev = *d;
        ASSERT_EQ(rte_eth_dev_get_port_by_name(ports->second.c_str(), &peer), 0);
        static int seq = 0;
        const std::string pn = "test_raw_pool" + std::to_string(seq++);
        pool = rte_pktmbuf_pool_create(pn.c_str(), 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                       SOCKET_ID_ANY);
        ASSERT_NE(pool, nullptr);
        rte_eth_conf conf{};
        ASSERT_EQ(rte_eth_dev_configure(peer, 1, 1, &conf), 0);
        ASSERT_EQ(rte_eth_rx_queue_setup(peer, 0, 256, SOCKET_ID_ANY, nullptr, pool), 0);
        ASSERT_EQ(rte_eth_tx_queue_setup(peer, 0, 256, SOCKET_ID_ANY, nullptr), 0);
        ASSERT_EQ(rte_eth_dev_start(peer), 0);
    }
    void TearDown() override {
        rte_eth_dev_stop(peer);
        rte_eth_dev_close(peer);
        engine.reset();
        rte_mempool_free(pool);
    }
    void send(const std::vector<uint8_t> &f) {
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        ASSERT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
        ASSERT_EQ(rte_eth_tx_burst(peer, 0, &m, 1), 1);
        engine->poll(); /* RX + reply TX in one iteration */
    }
    std::vector<std::vector<uint8_t>> receive() {
        std::vector<std::vector<uint8_t>> out;
        rte_mbuf *m[8];
        const uint16_t n = rte_eth_rx_burst(peer, 0, m, 8);
        for (uint16_t i = 0; i < n; ++i) {
            const auto *p = rte_pktmbuf_mtod(m[i], const uint8_t *);
            out.emplace_back(p, p + rte_pktmbuf_pkt_len(m[i]));
            rte_pktmbuf_free(m[i]);
        }
        return out;
    }

    std::unique_ptr<Engine> engine;
    Device *dev = nullptr;
    uint16_t peer = 0;
    rte_mempool *pool = nullptr;
};

const uint8_t kDevMac[6] = {0x02, 0, 0, 0, 0x01, 0x01};
const uint8_t kPeerMac[6] = {0x02, 0, 0, 0, 0x01, 0x09};

std::vector<uint8_t> eth(const uint8_t *dst, uint16_t type) {
    std::vector<uint8_t> f(14);
    std::memcpy(f.data(), dst, 6);
    std::memcpy(f.data() + 6, kPeerMac, 6);
    f[12] = static_cast<uint8_t>(type >> 8);
    f[13] = static_cast<uint8_t>(type);
    return f;
}

TEST_F(RawPort, ArpAndIcmpEcho) {
    /* who-has 10.77.0.1 tell 10.77.0.9 */
    auto f = eth(net::kBroadcastMac.data(), 0x0806);
    const uint8_t arp[] = {0,  1,  8, 0, 6, 4, 0, 1, 0x02, 0, 0,  0,  0x01, 0x09,
                           10, 77, 0, 9, 0, 0, 0, 0, 0,    0, 10, 77, 0,    1};
    f.insert(f.end(), arp, arp + sizeof(arp));
    f.resize(60, 0);
    ASSERT_NO_FATAL_FAILURE(send(f));
    auto got = receive();
    ASSERT_EQ(got.size(), 1u);
    ASSERT_GE(got[0].size(), 42u);
    EXPECT_EQ(0, std::memcmp(got[0].data(), kPeerMac, 6));
    EXPECT_EQ(0, std::memcmp(got[0].data() + 6, kDevMac, 6));
    EXPECT_EQ(got[0][21], 2) << "ARP reply";
    EXPECT_EQ(0, std::memcmp(got[0].data() + 22, kDevMac, 6));

    /* ping 10.77.0.1 with 56 data bytes */
    f = eth(kDevMac, 0x0800);
    std::vector<uint8_t> ip = {0x45, 0, 0,  84, 0x12, 0x34, 0x40, 0,  64, 1,
                               0,    0, 10, 77, 0,    9,    10,   77, 0,  1};
    const uint16_t ipc = net::inet_checksum(ip.data(), 20);
    ip[10] = static_cast<uint8_t>(ipc >> 8);
    ip[11] = static_cast<uint8_t>(ipc);
    std::vector<uint8_t> icmp = {8, 0, 0, 0, 0xbe, 0xef, 0, 1};
    for (int i = 0; i < 56; ++i)
        icmp.push_back(static_cast<uint8_t>(i));
    const uint16_t ic = net::inet_checksum(icmp.data(), icmp.size());
    icmp[2] = static_cast<uint8_t>(ic >> 8);
    icmp[3] = static_cast<uint8_t>(ic);
    f.insert(f.end(), ip.begin(), ip.end());
    f.insert(f.end(), icmp.begin(), icmp.end());
    ASSERT_NO_FATAL_FAILURE(send(f));
    got = receive();
    ASSERT_EQ(got.size(), 1u);
    const auto &r = got[0];
    ASSERT_EQ(r.size(), f.size());
    EXPECT_EQ(0, std::memcmp(r.data(), kPeerMac, 6));
    EXPECT_EQ(0, std::memcmp(r.data() + 6, kDevMac, 6));
    EXPECT_EQ(net::inet_checksum(r.data() + 14, 20), 0) << "IP checksum";
    EXPECT_EQ(r[14 + 12], 10);
    EXPECT_EQ(r[14 + 15], 1) << "from 10.77.0.1";
    EXPECT_EQ(r[14 + 19], 9) << "to 10.77.0.9";
    EXPECT_EQ(r[34], 0) << "echo reply";
    EXPECT_EQ(net::inet_checksum(r.data() + 34, 64), 0) << "ICMP checksum";
    EXPECT_EQ(0, std::memcmp(r.data() + 38, f.data() + 38, 60)) << "id, seq, data echoed";

    const auto c = counter_map(*dev);
    EXPECT_EQ(c.at("arp_replies_sent"), 1u);
    EXPECT_EQ(c.at("icmp_echo_replies"), 1u);
    EXPECT_EQ(c.at("port_rcv_packets"), 2u);
    EXPECT_EQ(c.at("port_xmit_packets"), 2u);
}

TEST_F(RawPort, DropsAreCountedByReason) {
    /* Not our MAC. */
    const uint8_t other[6] = {0x02, 0, 0, 0, 0x07, 0x07};
    auto f = eth(other, 0x0800);
    f.resize(60, 0);
    ASSERT_NO_FATAL_FAILURE(send(f));
    /* Unknown ethertype (LLDP). */
    f = eth(kDevMac, 0x88cc);
    f.resize(60, 0);
    ASSERT_NO_FATAL_FAILURE(send(f));
    /* A valid RoCEv2 SEND_ONLY to a QPN nobody has, then the same with a bad ICRC. */
    wire::FrameSpec s{};
    std::memcpy(s.eth.dst, kDevMac, 6);
    std::memcpy(s.eth.src, kPeerMac, 6);
    wire::gid_from_ipv4(0x0A4D0009, s.src_gid);
    wire::gid_from_ipv4(0x0A4D0001, s.dst_gid);
    s.ttl = 64;
    s.udp_sport = 0xC000;
    s.bth.opcode = 0x04;
    s.bth.pkey = 0xFFFF;
    s.bth.dest_qp = 0x3FF;
    const uint8_t payload[16] = {1, 2, 3};
    const wire::FrameSpec::Seg seg{payload, sizeof(payload)};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = sizeof(payload);
    std::vector<uint8_t> roce(256);
    roce.resize(wire::build_frame(s, roce.data(), roce.size()));
    ASSERT_GT(roce.size(), 0u);
    ASSERT_NO_FATAL_FAILURE(send(roce));
    roce[roce.size() - 1] ^= 0xff;
    ASSERT_NO_FATAL_FAILURE(send(roce));
    /* For another IP on our MAC. */
    roce[roce.size() - 1] ^= 0xff;
    wire::gid_from_ipv4(0x0A4D0005, s.dst_gid);
    roce.resize(256);
    roce.resize(wire::build_frame(s, roce.data(), roce.size()));
    ASSERT_NO_FATAL_FAILURE(send(roce));

    EXPECT_TRUE(receive().empty());
    const auto c = counter_map(*dev);
    EXPECT_EQ(c.at("port_rcv_packets"), 5u);
    EXPECT_EQ(c.at("rx_drop_not_our_mac"), 1u);
    EXPECT_EQ(c.at("rx_drop_unknown_ethertype"), 1u);
    EXPECT_EQ(c.at("rx_drop_unknown_qpn"), 1u);
    EXPECT_EQ(c.at("rx_drop_bad_icrc"), 1u);
    EXPECT_EQ(c.at("rx_drop_not_our_ip"), 1u);
}

/* Built-in capture through the API (both modes): one capture at a time, every frame of a
 * transfer copied (sent and received), every copy written once stopped, and the file a
 * pcapng whose Enhanced Packet Blocks hold both directions. */
TEST_P(EngineE2E, CaptureCopiesEveryFrameBothWays) {
    ASSERT_NO_FATAL_FAILURE(connect());
    char path[] = "/tmp/droce-capture-test-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    EXPECT_EQ(a.dev->start_capture("/nonexistent-dir/x.pcapng").code(), ENOENT);
    EXPECT_EQ(a.dev->stop_capture().code(), ENOENT);
    ASSERT_TRUE(a.dev->start_capture(path, 0));
    EXPECT_EQ(a.dev->start_capture(path, 0).code(), EBUSY);
    const auto a0 = counter_map(*a.dev);
    SendWr w;
    w.wr_id = 1;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = a.sge(0, 65536);
    w.num_sge = 1;
    w.remote_addr = b.addr(0x20000);
    w.rkey = b.mr->rkey();
    ASSERT_TRUE(a.qp->post_send(w));
    auto sc = wait(*a.scq, 1);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, WcStatus::Success) << wc_status_str(sc[0].status);
    ASSERT_TRUE(a.dev->stop_capture());
    const auto a1 = counter_map(*a.dev);
    const uint64_t tx = a1.at("port_xmit_packets") - a0.at("port_xmit_packets");
    const uint64_t rx = a1.at("port_rcv_packets") - a0.at("port_rcv_packets");
    EXPECT_GE(tx, 64u);
    EXPECT_GE(rx, 1u);
    EXPECT_EQ(a1.at("capture_packets") - a0.at("capture_packets"), tx + rx);
    EXPECT_EQ(a1.at("capture_written"), a1.at("capture_packets")) << "stop writes everything";
    EXPECT_EQ(a1.at("capture_drop_ring_full") + a1.at("capture_drop_no_mbuf"), 0u);
    EXPECT_EQ(a1.at("capture_active"), 0u);

    /* The blocks: a Section Header first, then per packet an Enhanced Packet Block
     * (type 6) whose flags option (code 2) says inbound (1) or outbound (2). */
    FILE *f = std::fopen(path, "rb");
    ASSERT_NE(f, nullptr);
    std::vector<uint8_t> file;
    uint8_t chunk[65536];
    for (size_t k; (k = std::fread(chunk, 1, sizeof chunk, f)) > 0;)
        file.insert(file.end(), chunk, chunk + k);
    std::fclose(f);
    unlink(path);
    auto u32 = [&](size_t o) {
        uint32_t v;
        std::memcpy(&v, file.data() + o, 4);
        return v;
    };
    ASSERT_GE(file.size(), 12u);
    EXPECT_EQ(u32(0), 0x0A0D0D0Au);
    uint64_t in = 0, out = 0, epbs = 0;
    for (size_t o = 0; o + 12 <= file.size();) {
        const uint32_t type = u32(o), len = u32(o + 4);
        ASSERT_TRUE(len >= 12 && len % 4 == 0 && o + len <= file.size()) << "block at " << o;
        ASSERT_EQ(u32(o + len - 4), len) << "trailing length of the block at " << o;
        if (type == 6) {
            ++epbs;
            const uint32_t cap = u32(o + 20);
            size_t opt = o + 28 + ((cap + 3) & ~3u);
            uint32_t dir = 0;
            while (opt + 4 <= o + len - 4) {
                uint16_t code, olen;
                std::memcpy(&code, file.data() + opt, 2);
                std::memcpy(&olen, file.data() + opt + 2, 2);
                if (code == 0)
                    break;
                if (code == 2 && olen == 4)
                    dir = u32(opt + 4) & 3;
                opt += 4 + ((olen + 3u) & ~3u);
            }
            in += dir == 1;
            out += dir == 2;
        }
        o += len;
    }
    EXPECT_EQ(epbs, a1.at("capture_packets"));
    EXPECT_EQ(in, rx);
    EXPECT_EQ(out, tx);
    EXPECT_EQ(settle_mbufs(*engine, *a.dev), 0u) << "mbufs leaked";
}

} // namespace

namespace {

/* A RoCEv2 request from the raw peer (10.77.0.9, MAC ..:09) to the device's QP. */
std::vector<uint8_t> peer_request(uint8_t opcode, uint32_t qpn, uint32_t psn, uint16_t pkey,
                                  const wire::Reth &reth, uint32_t payload_len) {
    wire::FrameSpec s{};
    std::memcpy(s.eth.dst, kDevMac, 6);
    std::memcpy(s.eth.src, kPeerMac, 6);
    wire::gid_from_ipv4(0x0A4D0009, s.src_gid);
    wire::gid_from_ipv4(0x0A4D0001, s.dst_gid);
    s.ttl = 64;
    s.udp_sport = 0xC123;
    s.bth.opcode = opcode;
    s.bth.pkey = pkey;
    s.bth.dest_qp = qpn;
    s.bth.psn = psn;
    s.bth.ack_req = true;
    s.reth = reth;
    std::vector<uint8_t> payload(payload_len);
    for (uint32_t i = 0; i < payload_len; ++i)
        payload[i] = static_cast<uint8_t>(0xC3 ^ i);
    const wire::FrameSpec::Seg seg{payload.data(), payload_len};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = payload_len;
    std::vector<uint8_t> f(wire::frame_len(s));
    f.resize(wire::build_frame(s, f.data(), f.size()));
    return f;
}

} // namespace

/* Forged traffic at live QPs of the engine (the raw port plays a hostile peer): the
 * answers on the wire, the drop counters, memory untouched, and which QPs survive. */
TEST_F(RawPort, HostilePeer) {
    /* The peer makes itself known (ARP), so the QPs can go to RTR without waiting. */
    auto arp = eth(net::kBroadcastMac.data(), 0x0806);
    const uint8_t who_has[] = {0,  1,  8, 0, 6, 4, 0, 1, 0x02, 0, 0,  0,  0x01, 0x09,
                               10, 77, 0, 9, 0, 0, 0, 0, 0,    0, 10, 77, 0,    1};
    arp.insert(arp.end(), who_has, who_has + sizeof(who_has));
    arp.resize(60, 0);
    ASSERT_NO_FATAL_FAILURE(send(arp));
    receive();
    /* Three QPs, each in its own PD with its own 64 KiB region. */
    Side v[3];
    const Gid peer_gid = net::GidTable::ipv4_mapped(0x0A4D0009);
    for (int i = 0; i < 3; ++i) {
        ASSERT_NO_FATAL_FAILURE(v[i].init(dev, 64 << 10));
        for (size_t j = 0; j < v[i].buf.size(); ++j)
            v[i].buf[j] = static_cast<uint8_t>(j * 13 + i);
        ASSERT_TRUE(to_init(*v[i].qp));
        Status s = to_rtr(*v[i].qp, peer_gid, 0x50 + i, 0x300);
        ASSERT_TRUE(s) << s.message();
        ASSERT_TRUE(to_rts(*v[i].qp, 0x900));
    }
    const std::vector<uint8_t> orig0 = v[0].buf, orig1 = v[1].buf, orig2 = v[2].buf;
    const auto answers = [&] {
        for (int i = 0; i < 4; ++i)
            engine->poll();
        std::vector<wire::ParsedPacket> out;
        for (auto &f : receive()) {
            wire::ParsedPacket p;
            EXPECT_EQ(wire::parse_frame(f.data(), f.size(), p, true), wire::ParseResult::Ok);
            out.push_back(p);
        }
        return out;
    };
    const auto state = [](Side &s) {
        QpAttr a;
        EXPECT_TRUE(s.qp->query(a));
        return a.qp_state;
    };
    const uint32_t q0 = v[0].qp->qp_num(), q1 = v[1].qp->qp_num(), q2 = v[2].qp->qp_num();
    const wire::Reth ok0{v[0].addr(256), v[0].mr->rkey(), 64};

    /* Silent drops: another partition, bad ICRC, a UD opcode; and a CNP, which the QP's
     * DCQCN reaction point takes (the device default) and nothing answers. */
    ASSERT_NO_FATAL_FAILURE(send(peer_request(wire::kRcWriteOnly, q0, 0x300, 0x8123, ok0, 64)));
    auto bad = peer_request(wire::kRcWriteOnly, q0, 0x300, 0xFFFF, ok0, 64);
    bad[bad.size() - 5] ^= 0x01;
    ASSERT_NO_FATAL_FAILURE(send(bad));
    ASSERT_NO_FATAL_FAILURE(send(peer_request(wire::kCnp, q0, 0x300, 0xFFFF, {}, 0)));
    ASSERT_NO_FATAL_FAILURE(send(peer_request(wire::kUdSendOnly, q0, 0x300, 0xFFFF, {}, 16)));
    EXPECT_TRUE(answers().empty());
    auto c = counter_map(*dev);
    EXPECT_EQ(c.at("rx_pkey_violation"), 1u);
    EXPECT_EQ(c.at("rx_drop_bad_icrc"), 1u);
    EXPECT_EQ(c.at("rp_cnp_handled"), 1u);
    EXPECT_EQ(c.at("rp_cnp_ignored"), 0u);
    EXPECT_EQ(c.at("rx_transport_drop"), 1u);
    EXPECT_EQ(v[0].buf, orig0);

    /* PSN ahead: one sequence NAK naming the expected PSN; the QP lives. */
    ASSERT_NO_FATAL_FAILURE(send(peer_request(wire::kRcWriteOnly, q0, 0x305, 0xFFFF, ok0, 64)));
    auto got = answers();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].bth.opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[0].aeth.syndrome, wire::kAethNakPsnSeqErr);
    EXPECT_EQ(got[0].bth.psn, 0x300u);
    EXPECT_EQ(got[0].bth.dest_qp, 0x50u);
    EXPECT_EQ(v[0].buf, orig0);

    /* A legitimate WRITE goes through on the same QP after all that. */
    ASSERT_NO_FATAL_FAILURE(send(peer_request(wire::kRcWriteOnly, q0, 0x300, 0xFFFF, ok0, 64)));
    got = answers();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].aeth.syndrome, 0x1F) << "ACK";
    EXPECT_EQ(got[0].bth.psn, 0x300u);
    for (uint32_t i = 0; i < 64; ++i)
        ASSERT_EQ(v[0].buf[256 + i], static_cast<uint8_t>(0xC3 ^ i));

    /* A WRITE whose payload runs past its RETH length: invalid request, nothing of it
     * written, the QP in ERR. */
    const std::vector<uint8_t> before = v[0].buf;
    ASSERT_NO_FATAL_FAILURE(send(peer_request(wire::kRcWriteOnly, q0, 0x301, 0xFFFF,
                                              {v[0].addr(1024), v[0].mr->rkey(), 100}, 200)));
    got = answers();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].aeth.syndrome, wire::kAethNakInvalidRequest);
    EXPECT_EQ(got[0].bth.psn, 0x301u);
    EXPECT_EQ(v[0].buf, before);
    EXPECT_EQ(state(v[0]), QpState::Err);

    /* Another PD's rkey at QP 1: remote access error, QP 1 in ERR, no memory touched. */
    ASSERT_NO_FATAL_FAILURE(send(peer_request(wire::kRcWriteOnly, q1, 0x300, 0xFFFF,
                                              {v[2].addr(0), v[2].mr->rkey(), 64}, 64)));
    got = answers();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].aeth.syndrome, wire::kAethNakRemoteAccessErr);
    EXPECT_EQ(got[0].bth.dest_qp, 0x51u);
    EXPECT_EQ(v[1].buf, orig1);
    EXPECT_EQ(v[2].buf, orig2);
    EXPECT_EQ(state(v[1]), QpState::Err);

    /* A READ beyond the region at QP 2: remote access error and no READ response. */
    ASSERT_NO_FATAL_FAILURE(send(peer_request(wire::kRcReadRequest, q2, 0x300, 0xFFFF,
                                              {v[2].addr(60 << 10), v[2].mr->rkey(), 8192}, 0)));
    got = answers();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].bth.opcode, wire::kRcAcknowledge);
    EXPECT_EQ(got[0].aeth.syndrome, wire::kAethNakRemoteAccessErr);
    c = counter_map(*dev);
    EXPECT_EQ(c.at("resp_remote_access_error"), 2u);
    EXPECT_EQ(c.at("resp_invalid_request"), 1u);
    EXPECT_EQ(c.at("out_of_sequence"), 1u);
    for (auto &s : v)
        s.reset();
}

/* ---- Least privilege in the tools (issue 15): droce-perf's and droce-pingpong's own
 * set-up code (perf::Side, PingpongEndpoint) builds a server's QP and MR on the engine;
 * the raw port then plays a hostile client that forges every RDMA op at it. An op the
 * test does not use must be refused by the QP (NAK invalid request 0x61, QP to ERR,
 * memory untouched); with the QP opened up on purpose, the MR must refuse it as well
 * (NAK remote access error 0x62). ---- */
#include "endpoint.h" /* apps/droce-pingpong */
#include "rights.h"   /* apps/droce-perf */
#include "side.h"     /* apps/droce-perf */

namespace {

/* perftest's rights per test (perftest_resources.c: setup_mr_flags for the MR,
 * ctx_modify_qp_to_init for the QP), for the side its peer targets. */
TEST(PerfRights, TableMatchesPerftestForTheTargetAndGrantsClientsNothing) {
    using perf::Kind;
    using perf::Verb;
    constexpr uint32_t LW = kAccessLocalWrite, RW = kAccessRemoteWrite, RR = kAccessRemoteRead,
                       RA = kAccessRemoteAtomic;
    struct Row {
        Verb verb;
        Kind kind;
        bool client;
        uint32_t mr, qp;
    };
    const Row rows[] = {
        /* servers: perftest's one right per verb */
        {Verb::Write, Kind::Bw, false, LW | RW, RW},
        {Verb::Write, Kind::Lat, false, LW | RW, RW},
        {Verb::Read, Kind::Bw, false, LW | RR, RR},
        {Verb::Read, Kind::Lat, false, LW | RR, RR},
        {Verb::Atomic, Kind::Bw, false, LW | RA, RA},
        {Verb::Atomic, Kind::Lat, false, LW | RA, RA},
        /* SEND: nothing remote (perftest also sets REMOTE_WRITE on the QP, which its MR
         * without REMOTE_WRITE makes moot; droce leaves it out) */
        {Verb::Send, Kind::Bw, false, LW, 0},
        {Verb::Send, Kind::Lat, false, LW, 0},
        /* write_lat: the server WRITEs into the client too */
        {Verb::Write, Kind::Lat, true, LW | RW, RW},
        /* other clients: their buffers are written only by themselves */
        {Verb::Write, Kind::Bw, true, LW, 0},
        {Verb::Read, Kind::Bw, true, LW, 0},
        {Verb::Read, Kind::Lat, true, LW, 0},
        {Verb::Atomic, Kind::Bw, true, LW, 0},
        {Verb::Atomic, Kind::Lat, true, LW, 0},
        {Verb::Send, Kind::Bw, true, LW, 0},
        {Verb::Send, Kind::Lat, true, LW, 0},
    };
    for (const Row &r : rows) {
        SCOPED_TRACE(std::string(perf::verb_name(r.verb)) +
                     (r.kind == Kind::Bw ? "_bw " : "_lat ") + (r.client ? "client" : "server"));
        const perf::Rights got = perf::rights_for(r.verb, r.kind, r.client);
        EXPECT_EQ(got.mr, r.mr);
        EXPECT_EQ(got.qp, r.qp);
    }
}

enum class Op { Write, Read, FetchAdd };
const char *op_name(Op o) {
    return o == Op::Write ? "WRITE" : o == Op::Read ? "READ" : "FETCH_ADD";
}

/* A server QP as a tool built it: where its MR is and what the peer was told. */
struct Target {
    QueuePair *qp;
    uint32_t qpn;
    uint32_t rkey;
    uint64_t va; /* 8-aligned, inside the MR, 64 bytes to spare */
    uint8_t *mr_addr;
    size_t mr_len;
};

constexpr uint32_t kPeerQpn = 0x50, kServerEpsn = 0x300;

class ToolRights : public RawPort {
  protected:
    void learn_peer() {
        auto arp = eth(net::kBroadcastMac.data(), 0x0806);
        const uint8_t who_has[] = {0,  1,  8, 0, 6, 4, 0, 1, 0x02, 0, 0,  0,  0x01, 0x09,
                                   10, 77, 0, 9, 0, 0, 0, 0, 0,    0, 10, 77, 0,    1};
        arp.insert(arp.end(), who_has, who_has + sizeof(who_has));
        arp.resize(60, 0);
        ASSERT_NO_FATAL_FAILURE(send(arp));
        receive();
    }
    static Gid peer_gid() { return net::GidTable::ipv4_mapped(0x0A4D0009); }

    std::vector<uint8_t> forge(const Target &t, Op op) {
        if (op == Op::Write)
            return peer_request(wire::kRcWriteOnly, t.qpn, kServerEpsn, 0xFFFF, {t.va, t.rkey, 64},
                                64);
        if (op == Op::Read)
            return peer_request(wire::kRcReadRequest, t.qpn, kServerEpsn, 0xFFFF,
                                {t.va, t.rkey, 64}, 0);
        wire::FrameSpec s{};
        std::memcpy(s.eth.dst, kDevMac, 6);
        std::memcpy(s.eth.src, kPeerMac, 6);
        wire::gid_from_ipv4(0x0A4D0009, s.src_gid);
        wire::gid_from_ipv4(0x0A4D0001, s.dst_gid);
        s.ttl = 64;
        s.udp_sport = 0xC123;
        s.bth.opcode = wire::kRcFetchAdd;
        s.bth.pkey = 0xFFFF;
        s.bth.dest_qp = t.qpn;
        s.bth.psn = kServerEpsn;
        s.bth.ack_req = true;
        s.atomic = {t.va, t.rkey, 0x0101010101010101ull, 0};
        std::vector<uint8_t> f(wire::frame_len(s));
        f.resize(wire::build_frame(s, f.data(), f.size()));
        return f;
    }

    /* Forges op at t. want_nak 0: the op must be served (and do exactly what it says);
     * else exactly one NAK with that syndrome, no byte of the MR changed, the QP in ERR. */
    void probe(const Target &t, Op op, uint8_t want_nak) {
        SCOPED_TRACE(op_name(op));
        const std::vector<uint8_t> before(t.mr_addr, t.mr_addr + t.mr_len);
        ASSERT_NO_FATAL_FAILURE(send(forge(t, op)));
        for (int i = 0; i < 4; ++i)
            engine->poll();
        const auto frames = receive();
        ASSERT_EQ(frames.size(), 1u) << "one answer";
        wire::ParsedPacket p;
        ASSERT_EQ(wire::parse_frame(frames[0].data(), frames[0].size(), p, true),
                  wire::ParseResult::Ok);
        EXPECT_EQ(p.bth.dest_qp, kPeerQpn);
        EXPECT_EQ(p.bth.psn, kServerEpsn);
        const size_t off = t.va - reinterpret_cast<uint64_t>(t.mr_addr);
        QpAttr a;
        ASSERT_TRUE(t.qp->query(a));
        if (want_nak != 0) {
            EXPECT_EQ(p.bth.opcode, wire::kRcAcknowledge) << "a NAK, never data";
            EXPECT_EQ(p.aeth.syndrome, want_nak) << std::hex << int(p.aeth.syndrome);
            EXPECT_TRUE(std::equal(before.begin(), before.end(), t.mr_addr))
                << "the server's memory changed";
            EXPECT_EQ(a.qp_state, QpState::Err);
            return;
        }
        EXPECT_EQ(a.qp_state, QpState::Rts);
        switch (op) {
        case Op::Write:
            EXPECT_EQ(p.bth.opcode, wire::kRcAcknowledge);
            EXPECT_EQ(p.aeth.syndrome, 0x1F);
            EXPECT_EQ(p.ecn, 0) << "ACKs leave not-ECT";
            for (uint32_t i = 0; i < 64; ++i)
                ASSERT_EQ(t.mr_addr[off + i], static_cast<uint8_t>(0xC3 ^ i));
            break;
        case Op::Read: {
            ASSERT_EQ(p.bth.opcode, wire::kRcReadResponseOnly);
            EXPECT_EQ(p.ecn, 2) << "data (a READ response) leaves ECT(0): DCQCN default";
            std::vector<uint8_t> got;
            wire::for_each_payload_chunk(
                p, [&](const uint8_t *s, uint32_t n) { got.insert(got.end(), s, s + n); });
            EXPECT_EQ(got, std::vector<uint8_t>(t.mr_addr + off, t.mr_addr + off + 64));
            break;
        }
        case Op::FetchAdd: {
            ASSERT_EQ(p.bth.opcode, wire::kRcAtomicAcknowledge);
            EXPECT_EQ(p.ecn, 2) << "atomic responses are data: ECT(0)";
            uint64_t old, now;
            std::memcpy(&old, before.data() + off, 8);
            std::memcpy(&now, t.mr_addr + off, 8);
            EXPECT_EQ(p.atomic_ack.orig, old);
            EXPECT_EQ(now, old + 0x0101010101010101ull);
            break;
        }
        }
    }
};

/* A droce-perf server of `verb` (bw), connected to the raw peer. */
std::unique_ptr<perf::Side> perf_server(Device &dev, perf::Verb verb, Target &t) {
    perf::SideConfig c;
    c.verb = verb;
    c.kind = perf::Kind::Bw;
    c.client = false;
    c.max_size = 4096;
    c.tx_depth = 16;
    c.rx_depth = 16;
    c.prefix = "perf server: ";
    auto s = std::make_unique<perf::Side>(c);
    if (!s->setup(dev, 1))
        return nullptr;
    perf::Dest peer;
    peer.qpn = kPeerQpn;
    peer.psn = kServerEpsn;
    peer.gid = net::GidTable::ipv4_mapped(0x0A4D0009);
    if (!s->connect({peer}, Mtu::Mtu1024))
        return nullptr;
    /* The MR's own rkey even for SEND tests, whose exchange advertises none: a forger
     * may have it from elsewhere. */
    MemoryRegion &mr = s->mr();
    t = {&s->qp(0),
         s->local().qpn,
         mr.rkey(),
         reinterpret_cast<uint64_t>(mr.addr()) + 4096 + 128,
         static_cast<uint8_t *>(mr.addr()),
         mr.length()};
    for (size_t i = 0; i < t.mr_len; ++i)
        t.mr_addr[i] = static_cast<uint8_t>(i * 7 + 1);
    return s;
}

void open_qp_fully(const Target &t) {
    QpAttr a;
    a.qp_state = QpState::Rts;
    a.qp_access_flags =
        kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    ASSERT_TRUE(t.qp->modify(a, kQpState | kQpAccessFlags));
}

TEST_F(ToolRights, PerfServersRefuseEveryOpButTheirTests) {
    ASSERT_NO_FATAL_FAILURE(learn_peer());
    const struct {
        perf::Verb verb;
        const char *mode;
        Op allowed; /* send_bw: none */
        bool any;
    } modes[] = {{perf::Verb::Write, "write_bw", Op::Write, true},
                 {perf::Verb::Read, "read_bw", Op::Read, true},
                 {perf::Verb::Atomic, "atomic_bw", Op::FetchAdd, true},
                 {perf::Verb::Send, "send_bw", Op::Write, false}};
    uint64_t refused = 0;
    for (const auto &m : modes) {
        SCOPED_TRACE(m.mode);
        for (Op op : {Op::Write, Op::Read, Op::FetchAdd}) {
            const bool ok = m.any && op == m.allowed;
            /* The QP as the tool set it: the test's op served, any other refused by the
             * QP's access flags. */
            Target t{};
            auto s = perf_server(*dev, m.verb, t);
            ASSERT_TRUE(s);
            QpAttr a;
            ASSERT_TRUE(t.qp->query(a));
            EXPECT_EQ(a.qp_access_flags, perf::rights_for(m.verb, perf::Kind::Bw, false).qp);
            ASSERT_NO_FATAL_FAILURE(probe(t, op, ok ? 0 : wire::kAethNakInvalidRequest));
            refused += ok ? 0 : 1;
            s.reset();
            if (ok)
                continue;
            /* The QP opened up on purpose: the MR must still refuse. */
            SCOPED_TRACE("QP opened to every right: the MR's own rights decide");
            s = perf_server(*dev, m.verb, t);
            ASSERT_TRUE(s);
            ASSERT_NO_FATAL_FAILURE(open_qp_fully(t));
            ASSERT_NO_FATAL_FAILURE(probe(t, op, wire::kAethNakRemoteAccessErr));
            s.reset();
        }
    }
    const auto c = counter_map(*dev);
    EXPECT_EQ(c.at("resp_op_not_allowed"), refused);
    EXPECT_EQ(c.at("resp_remote_access_error"), refused);
}

/* droce-pingpong is SEND/RECV only, as ibv_rc_pingpong: no remote right anywhere. */
TEST_F(ToolRights, PingpongGrantsNoRemoteRight) {
    ASSERT_NO_FATAL_FAILURE(learn_peer());
    for (Op op : {Op::Write, Op::Read, Op::FetchAdd}) {
        for (bool opened : {false, true}) {
            SCOPED_TRACE(opened ? "QP opened on purpose: the MR decides" : "as the tool set it");
            pingpong::EndpointConfig c;
            c.size = 4096;
            c.rx_depth = 16;
            c.prefix = "pingpong: ";
            pingpong::PingpongEndpoint e(c);
            ASSERT_TRUE(e.setup(*dev, 0x900));
            pingpong::Dest peer;
            peer.qpn = kPeerQpn;
            peer.psn = kServerEpsn;
            peer.gid = peer_gid();
            ASSERT_TRUE(e.connect(peer));
            const auto &r = e.resources();
            QpAttr a;
            ASSERT_TRUE(r.qp->query(a));
            EXPECT_EQ(a.qp_access_flags, 0u);
            const Target t{r.qp.get(),
                           e.local().qpn,
                           r.mr->rkey(),
                           reinterpret_cast<uint64_t>(r.mr->addr()) + 128,
                           static_cast<uint8_t *>(r.mr->addr()),
                           r.mr->length()};
            if (opened) {
                ASSERT_NO_FATAL_FAILURE(open_qp_fully(t));
            }
            ASSERT_NO_FATAL_FAILURE(probe(
                t, op, opened ? wire::kAethNakRemoteAccessErr : wire::kAethNakInvalidRequest));
        }
    }
}

} // namespace
