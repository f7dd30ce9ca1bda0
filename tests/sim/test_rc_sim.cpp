/* SPDX-License-Identifier: BSD-3-Clause */
/* RC transport tests on the deterministic simulator: two endpoints running lib/rc over
 * real frames. Each failure message carries the seed; the same seed replays it. */
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <numeric>
#include <string>
#include <sys/mman.h>

#include "sim_fabric.h"

using namespace droce;
using namespace droce::sim;

namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;

struct Pair {
    explicit Pair(uint64_t seed, Faults f = {}, QpAttr attr = {}, Mtu mtu = Mtu::Mtu1024,
                  uint32_t psn_a = 0x100, uint32_t psn_b = 0x200, QpCap cap = {})
        : fab(seed, f), a(fab, kIpA, 1), b(fab, kIpB, 2), seed(seed) {
        qa = &a.create_qp(0x11, &scq_a, &rcq_a, cap);
        qb = &b.create_qp(0x22, &scq_b, &rcq_b, cap);
        /* The pair's tests use every op both ways: both QPs ask for every right. */
        const uint32_t all =
            kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
        attr.qp_access_flags = all;
        a.connect(*qa, b, *qb, psn_a, psn_b, attr, mtu);
        b.connect(*qb, a, *qa, psn_b, psn_a, attr, mtu);
        buf_a.assign(8 << 20, 0);
        buf_b.assign(4 << 20, 0);
        mr_a = a.mrs.reg(1, buf_a.data(), buf_a.size(), all).value();
        mr_b = b.mrs.reg(1, buf_b.data(), buf_b.size(), all).value();
    }
    bool run(const std::function<bool()> &done, Time limit_ns = 10'000'000'000ull) {
        return fab.run_until(done, fab.now + limit_ns);
    }
    Fabric fab;
    Endpoint a, b;
    SimCq scq_a, rcq_a, scq_b, rcq_b;
    rc::Qp *qa, *qb;
    std::vector<uint8_t> buf_a, buf_b;
    mem::MemoryRegion mr_a{}, mr_b{};
    uint64_t seed;
};

SendWr make_wr(WrOpcode op, uint64_t id, const mem::MemoryRegion &mr, uint64_t off, uint32_t len,
               bool signaled = true) {
    SendWr wr;
    wr.wr_id = id;
    wr.opcode = op;
    wr.send_flags = signaled ? uint32_t{kSendSignaled} : 0u;
    wr.num_sge = 1;
    wr.sg_list[0] = {mr.addr + off, len, mr.key};
    return wr;
}

RecvWr make_recv(uint64_t id, const mem::MemoryRegion &mr, uint64_t off, uint32_t len) {
    RecvWr wr;
    wr.wr_id = id;
    wr.num_sge = 1;
    wr.sg_list[0] = {mr.addr + off, len, mr.key};
    return wr;
}

void fill(std::vector<uint8_t> &v, size_t off, size_t len, uint8_t seed) {
    for (size_t i = 0; i < len; ++i)
        v[off + i] = static_cast<uint8_t>(seed + i * 7);
}

} // namespace

/* A frame the endpoint cannot build takes no slot of its per-step budget, as the
 * engine's quantum is taken only by a frame that goes out. */
TEST(SimEndpoint, RefusedBuildTakesNoSlot) {
    Fabric fab(1);
    Endpoint a(fab, kIpA, 1), b(fab, kIpB, 2);
    a.tx_budget = 1;
    wire::FrameSpec good{};
    std::memcpy(good.eth.src, a.mac, 6);
    std::memcpy(good.eth.dst, b.mac, 6);
    wire::gid_from_ipv4(kIpA, good.src_gid);
    wire::gid_from_ipv4(kIpB, good.dst_gid);
    good.ttl = 64;
    good.bth.opcode = wire::kRcSendOnly;
    good.bth.dest_qp = 0x22;
    wire::FrameSpec bad = good;
    bad.payload_len = 70000; /* past IPv4's total length: build_frame refuses it */
    EXPECT_FALSE(a.transmit(bad));
    EXPECT_EQ(a.tx_used, 0u);
    EXPECT_TRUE(a.transmit(good));
    EXPECT_EQ(a.tx_used, 1u);
    EXPECT_FALSE(a.transmit(good)); /* the budget of one is taken now */
    EXPECT_EQ(fab.frames_sent, 1u);
}

TEST(RcModify, RejectsInvalidTransitionsAndAttributes) {
    Fabric fab(1);
    Endpoint e(fab, kIpA, 1);
    SimCq cq;
    rc::Qp &qp = e.create_qp(0x11, &cq, &cq);
    QpAttr a;
    a.qp_state = QpState::Rtr;
    Status s = qp.modify(a, kQpState);
    EXPECT_FALSE(s);
    EXPECT_NE(s.message().find("RESET -> RTR"), std::string::npos) << s.message();
    a.qp_state = QpState::Init;
    s = qp.modify(a, kQpState | kQpPkeyIndex | kQpPort);
    EXPECT_FALSE(s);
    EXPECT_NE(s.message().find("ACCESS_FLAGS"), std::string::npos) << s.message();
    s = qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags | kQpSqPsn);
    EXPECT_FALSE(s) << "SQ_PSN is not allowed RESET->INIT";
    EXPECT_TRUE(qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags));
    EXPECT_EQ(qp.state(), QpState::Init);
    a.qp_state = QpState::Rtr;
    a.path_mtu = static_cast<Mtu>(9);
    rc::Path path;
    s = qp.modify(a,
                  kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic |
                      kQpMinRnrTimer,
                  &path);
    EXPECT_FALSE(s);
    EXPECT_EQ(qp.state(), QpState::Init) << "a refused modify changes nothing";
    SendWr wr;
    EXPECT_FALSE(qp.post_send(wr)) << "post_send before RTS must fail";
    a.qp_state = QpState::Err;
    EXPECT_TRUE(qp.modify(a, kQpState));
    a.qp_state = QpState::Rts;
    EXPECT_FALSE(qp.modify(a, kQpState)) << "ERR -> RTS is invalid";
}

TEST(RcSim, SendRecvSizesAcrossMtu) {
    for (uint32_t len : {0u, 1u, 1023u, 1024u, 1025u, 4096u, 65536u}) {
        Pair p(1);
        fill(p.buf_a, 0, len, 3);
        ASSERT_TRUE(p.qb->post_recv(make_recv(7, p.mr_b, 100, 70000)));
        ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 9, p.mr_a, 0, len)));
        ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 1 && p.rcq_b.q.size() == 1; }))
            << "len " << len;
        Wc s, r;
        p.scq_a.pop(s);
        p.rcq_b.pop(r);
        EXPECT_EQ(s.status, WcStatus::Success);
        EXPECT_EQ(s.wr_id, 9u);
        EXPECT_EQ(s.opcode, WcOpcode::Send);
        EXPECT_EQ(r.status, WcStatus::Success);
        EXPECT_EQ(r.wr_id, 7u);
        EXPECT_EQ(r.byte_len, len);
        EXPECT_EQ(r.src_qp, 0x11u);
        EXPECT_EQ(0, std::memcmp(p.buf_a.data(), p.buf_b.data() + 100, len)) << "len " << len;
        EXPECT_EQ(p.a.counters.retransmitted_packets, 0u);
        EXPECT_EQ(p.b.counters.out_of_sequence, 0u);
    }
}

TEST(RcSim, SendWithImmAndScatterGather) {
    Pair p(2);
    fill(p.buf_a, 0, 3000, 1);
    RecvWr r;
    r.wr_id = 1;
    r.num_sge = 3;
    r.sg_list[0] = {p.mr_b.addr + 0, 1000, p.mr_b.key};
    r.sg_list[1] = {p.mr_b.addr + 5000, 1000, p.mr_b.key};
    r.sg_list[2] = {p.mr_b.addr + 9000, 1000, p.mr_b.key};
    ASSERT_TRUE(p.qb->post_recv(r));
    SendWr w = make_wr(WrOpcode::SendWithImm, 2, p.mr_a, 0, 1500);
    w.num_sge = 2;
    w.sg_list[1] = {p.mr_a.addr + 1500, 1500, p.mr_a.key};
    w.imm_data = 0xdeadbeef;
    ASSERT_TRUE(p.qa->post_send(w));
    ASSERT_TRUE(p.run([&] { return p.rcq_b.q.size() == 1; }));
    Wc wc;
    p.rcq_b.pop(wc);
    EXPECT_EQ(wc.byte_len, 3000u);
    EXPECT_TRUE(wc.wc_flags & kWcWithImm);
    EXPECT_EQ(wc.imm_data, 0xdeadbeefu);
    EXPECT_EQ(0, std::memcmp(p.buf_a.data(), p.buf_b.data(), 1000));
    EXPECT_EQ(0, std::memcmp(p.buf_a.data() + 1000, p.buf_b.data() + 5000, 1000));
    EXPECT_EQ(0, std::memcmp(p.buf_a.data() + 2000, p.buf_b.data() + 9000, 1000));
}

TEST(RcSim, WriteReadAtomics) {
    Pair p(3);
    fill(p.buf_a, 0, 10000, 5);
    SendWr w = make_wr(WrOpcode::RdmaWrite, 1, p.mr_a, 0, 10000);
    w.remote_addr = p.mr_b.addr + 64;
    w.rkey = p.mr_b.key;
    ASSERT_TRUE(p.qa->post_send(w));
    fill(p.buf_b, 200000, 7000, 9);
    SendWr rd = make_wr(WrOpcode::RdmaRead, 2, p.mr_a, 100000, 7000);
    rd.remote_addr = p.mr_b.addr + 200000;
    rd.rkey = p.mr_b.key;
    ASSERT_TRUE(p.qa->post_send(rd));
    uint64_t v = 40;
    std::memcpy(p.buf_b.data() + 300000, &v, 8);
    SendWr fa = make_wr(WrOpcode::AtomicFetchAndAdd, 3, p.mr_a, 300000, 8);
    fa.remote_addr = p.mr_b.addr + 300000;
    fa.rkey = p.mr_b.key;
    fa.compare_add = 2;
    ASSERT_TRUE(p.qa->post_send(fa));
    SendWr cs = make_wr(WrOpcode::AtomicCmpAndSwp, 4, p.mr_a, 300008, 8);
    cs.remote_addr = p.mr_b.addr + 300000;
    cs.rkey = p.mr_b.key;
    cs.compare_add = 42;
    cs.swap = 1000;
    ASSERT_TRUE(p.qa->post_send(cs));
    ASSERT_TRUE(p.qb->post_recv(make_recv(5, p.mr_b, 400000, 16)));
    SendWr wi = make_wr(WrOpcode::RdmaWriteWithImm, 5, p.mr_a, 0, 16);
    wi.remote_addr = p.mr_b.addr + 500000;
    wi.rkey = p.mr_b.key;
    wi.imm_data = 77;
    ASSERT_TRUE(p.qa->post_send(wi));
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 5 && p.rcq_b.q.size() == 1; }));
    for (uint64_t id = 1; id <= 5; ++id) {
        Wc wc;
        p.scq_a.pop(wc);
        EXPECT_EQ(wc.wr_id, id) << "completions in order";
        EXPECT_EQ(wc.status, WcStatus::Success) << wc_status_str(wc.status);
    }
    EXPECT_EQ(0, std::memcmp(p.buf_a.data(), p.buf_b.data() + 64, 10000));
    EXPECT_EQ(0, std::memcmp(p.buf_a.data() + 100000, p.buf_b.data() + 200000, 7000));
    uint64_t orig_fa, orig_cs, now;
    std::memcpy(&orig_fa, p.buf_a.data() + 300000, 8);
    std::memcpy(&orig_cs, p.buf_a.data() + 300008, 8);
    std::memcpy(&now, p.buf_b.data() + 300000, 8);
    EXPECT_EQ(orig_fa, 40u);
    EXPECT_EQ(orig_cs, 42u);
    EXPECT_EQ(now, 1000u);
    Wc r;
    p.rcq_b.pop(r);
    EXPECT_EQ(r.opcode, WcOpcode::RecvRdmaWithImm);
    EXPECT_EQ(r.imm_data, 77u);
    EXPECT_EQ(r.byte_len, 16u);
}

TEST(RcSim, RemoteAccessErrorWritesNothing) {
    Pair p(4);
    fill(p.buf_a, 0, 4096, 1);
    std::vector<uint8_t> before = p.buf_b;
    SendWr w = make_wr(WrOpcode::RdmaWrite, 1, p.mr_a, 0, 4096);
    w.remote_addr = p.mr_b.addr + 64;
    w.rkey = p.mr_b.key ^ 0x01; /* wrong generation */
    ASSERT_TRUE(p.qa->post_send(w));
    ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 2, p.mr_a, 0, 10)));
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 2; }));
    Wc wc;
    p.scq_a.pop(wc);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    p.scq_a.pop(wc);
    EXPECT_EQ(wc.status, WcStatus::WrFlushErr);
    EXPECT_EQ(p.qa->state(), QpState::Err);
    EXPECT_EQ(p.qb->state(), QpState::Err);
    EXPECT_EQ(p.b.counters.resp_remote_access_error, 1u);
    EXPECT_EQ(p.a.counters.req_remote_access_errors, 1u);
    EXPECT_TRUE(p.buf_b == before) << "no byte may move on a refused access";
}

TEST(RcSim, RnrNakThenRecover) {
    QpAttr attr;
    attr.min_rnr_timer = 1; /* 10 us */
    Pair p(5, {}, attr);
    ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 1, p.mr_a, 0, 100)));
    p.run([] { return false; }, 30'000); /* let it be RNR-NAKed a few times */
    EXPECT_GT(p.b.counters.rnr_nak_sent, 0u);
    EXPECT_GT(p.a.counters.rnr_nak_retry_err, 0u);
    ASSERT_TRUE(p.qb->post_recv(make_recv(1, p.mr_b, 0, 100)));
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 1; }));
    Wc wc;
    p.scq_a.pop(wc);
    EXPECT_EQ(wc.status, WcStatus::Success);
}

TEST(RcSim, RnrRetryExhausted) {
    QpAttr attr;
    attr.min_rnr_timer = 1;
    attr.rnr_retry = 2;
    Pair p(6, {}, attr);
    ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 1, p.mr_a, 0, 100)));
    ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 2, p.mr_a, 0, 100, false)));
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 2; }));
    Wc wc;
    p.scq_a.pop(wc);
    EXPECT_EQ(wc.status, WcStatus::RnrRetryExcErr);
    p.scq_a.pop(wc);
    EXPECT_EQ(wc.status, WcStatus::WrFlushErr) << "unsignaled WRs flush too";
    EXPECT_EQ(p.a.counters.rnr_nak_retry_err, 3u) << "rnr_retry=2: three NAKs, then fail";
}

TEST(RcSim, RetryExhaustedOnBlackout) {
    Faults f;
    f.blackout_from = 0;
    f.blackout_to = ~0ull;
    QpAttr attr;
    attr.timeout = 10; /* 4 ms */
    attr.retry_cnt = 3;
    Pair p(7, f, attr);
    ASSERT_TRUE(p.qb->post_recv(make_recv(1, p.mr_b, 0, 100)));
    ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 1, p.mr_a, 0, 100)));
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 1; }));
    Wc wc;
    p.scq_a.pop(wc);
    EXPECT_EQ(wc.status, WcStatus::RetryExcErr);
    EXPECT_EQ(p.a.counters.local_ack_timeout_err, 4u);
    /* 4 expiries of 4.19 ms each */
    EXPECT_GE(p.fab.now, 4 * rc::ack_timeout_ns(10));
}

TEST(RcSim, PsnWrapAround) {
    Pair p(8, {}, {}, Mtu::Mtu1024, 0xFFFFF0, 0xFFFFFA);
    fill(p.buf_a, 0, 100 * 1024, 2);
    ASSERT_TRUE(p.qb->post_recv(make_recv(1, p.mr_b, 0, 200 * 1024)));
    ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 1, p.mr_a, 0, 100 * 1024)));
    SendWr w = make_wr(WrOpcode::RdmaWrite, 2, p.mr_b, 0, 30 * 1024);
    w.sg_list[0] = {p.mr_b.addr + 1000000, 30 * 1024, p.mr_b.key};
    w.remote_addr = p.mr_a.addr + 1000000;
    w.rkey = p.mr_a.key;
    fill(p.buf_b, 1000000, 30 * 1024, 4);
    ASSERT_TRUE(p.qb->post_send(w));
    ASSERT_TRUE(p.run([&] { return p.rcq_b.q.size() == 1 && p.scq_b.q.size() == 1; }));
    EXPECT_EQ(0, std::memcmp(p.buf_a.data(), p.buf_b.data(), 100 * 1024));
    EXPECT_EQ(0, std::memcmp(p.buf_a.data() + 1000000, p.buf_b.data() + 1000000, 30 * 1024));
}

/* Random operations under a fault profile: every WR completes exactly once, in order,
 * successfully, and memory matches a shadow copy. A compact form of the property tests
 * the simulator will grow into. */
struct Profile {
    const char *name;
    Faults f;
};

void PrintTo(const Profile &p, std::ostream *os) { *os << p.name; }

class RcSimFaults : public ::testing::TestWithParam<Profile> {};

TEST_P(RcSimFaults, RandomOpsExactlyOnceInOrder) {
    const Profile &prof = GetParam();
    for (uint64_t seed : {11ull, 12ull}) {
        QpAttr attr;
        attr.timeout = 8; /* ~1 ms */
        attr.retry_cnt = 7;
        attr.min_rnr_timer = 1;
        Pair p(seed, prof.f, attr, Mtu::Mtu1024, 0xFFFF00, 0x7FFFF0);
        std::mt19937_64 rng(seed * 977);
        std::vector<uint8_t> shadow_b = p.buf_b;
        const int n = 300;
        std::vector<uint64_t> expect_recv;
        std::vector<uint64_t> sig_ids;
        for (int i = 0; i < n; ++i) {
            const int kind = static_cast<int>(rng() % 4);
            const uint32_t len = static_cast<uint32_t>(rng() % 9000);
            /* a source of its own: the WR reads it when it is sent, not when posted */
            const uint64_t src = static_cast<uint64_t>(i) * 9000;
            fill(p.buf_a, src, len, static_cast<uint8_t>(i));
            const bool sig = (rng() % 3) != 0;
            SendWr w;
            if (kind == 0) {
                w = make_wr(WrOpcode::Send, i, p.mr_a, src, len, sig);
                const uint64_t dst = 2'000'000 + (i % 64) * 10000;
                ASSERT_TRUE(p.qb->post_recv(make_recv(i, p.mr_b, dst, 10000)));
                std::memcpy(shadow_b.data() + dst, p.buf_a.data() + src, len);
                expect_recv.push_back(i);
            } else if (kind == 1 || kind == 2) {
                w = make_wr(WrOpcode::RdmaWrite, i, p.mr_a, src, len, sig);
                const uint64_t dst = (rng() % 100) * 10000;
                w.remote_addr = p.mr_b.addr + dst;
                w.rkey = p.mr_b.key;
                std::memcpy(shadow_b.data() + dst, p.buf_a.data() + src, len);
            } else {
                const uint64_t from = 3'000'000 + (rng() % 50) * 10000;
                w = make_wr(WrOpcode::RdmaRead, i, p.mr_a, 7'000'000, len, sig);
                w.remote_addr = p.mr_b.addr + from;
                w.rkey = p.mr_b.key;
            }
            if (sig)
                sig_ids.push_back(i);
            ASSERT_TRUE(p.qa->post_send(w)) << "seed " << seed;
            /* keep the queue from overflowing: run until there is room */
            if (p.qa->send_queue_depth() >= 100) {
                ASSERT_TRUE(p.run([&] { return p.qa->send_queue_depth() < 50; }))
                    << prof.name << " seed " << seed << " stalled";
            }
            if (kind == 3) {
                /* READ: the data must come back as the shadow says at this point */
                ASSERT_TRUE(p.run([&] { return p.qa->send_queue_depth() == 0; }))
                    << prof.name << " seed " << seed;
                EXPECT_EQ(0, std::memcmp(p.buf_a.data() + 7'000'000,
                                         shadow_b.data() + (w.remote_addr - p.mr_b.addr), len))
                    << prof.name << " seed " << seed << " READ " << i;
            }
        }
        ASSERT_TRUE(p.run([&] {
            return p.qa->send_queue_depth() == 0 && p.rcq_b.q.size() == expect_recv.size();
        })) << prof.name
            << " seed " << seed << ": hung";
        ASSERT_EQ(p.scq_a.q.size(), sig_ids.size()) << prof.name << " seed " << seed;
        for (uint64_t id : sig_ids) {
            Wc wc;
            p.scq_a.pop(wc);
            ASSERT_EQ(wc.wr_id, id) << prof.name << " seed " << seed;
            ASSERT_EQ(wc.status, WcStatus::Success)
                << prof.name << " seed " << seed << " " << wc_status_str(wc.status);
        }
        for (uint64_t id : expect_recv) {
            Wc wc;
            p.rcq_b.pop(wc);
            ASSERT_EQ(wc.wr_id, id) << prof.name << " seed " << seed;
            ASSERT_EQ(wc.status, WcStatus::Success) << prof.name << " seed " << seed;
        }
        EXPECT_TRUE(p.buf_b == shadow_b) << prof.name << " seed " << seed << ": memory differs";
        EXPECT_EQ(p.qa->state(), QpState::Rts);
        EXPECT_EQ(p.qb->state(), QpState::Rts);
        /* the profile must actually have hit the run */
        if (prof.f.loss > 0) {
            EXPECT_GT(p.fab.frames_lost, 0u);
            EXPECT_GT(p.a.counters.retransmitted_packets, 0u);
        }
        if (prof.f.dup > 0) {
            EXPECT_GT(p.fab.frames_duplicated, 0u);
            EXPECT_GT(p.b.counters.duplicate_request + p.a.counters.rx_ghost_response, 0u);
        }
        if (prof.f.corrupt > 0) {
            EXPECT_GT(p.a.rx_drop_bad + p.b.rx_drop_bad, 0u);
        }
    }
}

static Faults mk(double loss, double dup, double reorder, double corrupt) {
    Faults f;
    f.loss = loss;
    f.dup = dup;
    f.reorder = reorder;
    f.corrupt = corrupt;
    return f;
}

INSTANTIATE_TEST_SUITE_P(
    Profiles, RcSimFaults,
    ::testing::Values(Profile{"clean", mk(0, 0, 0, 0)}, Profile{"loss1", mk(0.01, 0, 0, 0)},
                      Profile{"loss10", mk(0.10, 0, 0, 0)}, Profile{"reorder2", mk(0, 0, 0.02, 0)},
                      Profile{"dup2", mk(0, 0.02, 0, 0)}, Profile{"corrupt05", mk(0, 0, 0, 0.005)},
                      Profile{"all", mk(0.01, 0.02, 0.02, 0.005)}),
    [](const auto &info) { return std::string(info.param.name); });

TEST(RcSim, SharedReceiveQueueAcrossQps) {
    /* Two QPs on B share one SRQ; multi-packet SENDs on both interleave on the wire and
     * each message must land whole in the receive it took at its FIRST packet. */
    Fabric fab(21);
    Endpoint a(fab, kIpA, 1), b(fab, kIpB, 2);
    SimCq scq_a, rcq_a, scq_b, rcq_b;
    qp::RecvQueue srq(64, kMaxSge);
    /* one packet in flight per QP: the two QPs' packets alternate on the wire */
    rc::QpTuning one;
    one.max_inflight_pkts = 1;
    one.ackreq_every = 1;
    rc::Qp &a1 = a.create_qp(0x11, &scq_a, &rcq_a, {}, one);
    rc::Qp &a2 = a.create_qp(0x12, &scq_a, &rcq_a, {}, one);
    rc::Qp &b1 = b.create_qp(0x21, &scq_b, &rcq_b, {}, {}, &srq);
    rc::Qp &b2 = b.create_qp(0x22, &scq_b, &rcq_b, {}, {}, &srq);
    a.connect(a1, b, b1, 1, 2);
    b.connect(b1, a, a1, 2, 1);
    a.connect(a2, b, b2, 3, 4);
    b.connect(b2, a, a2, 4, 3);
    std::vector<uint8_t> src(1 << 20), dst(1 << 20, 0);
    fill(src, 0, src.size(), 9);
    auto mra = a.mrs.reg(1, src.data(), src.size(), kAccessLocalWrite).value();
    auto mrb = b.mrs.reg(1, dst.data(), dst.size(), kAccessLocalWrite).value();
    EXPECT_FALSE(b1.post_recv(make_recv(0, mrb, 0, 10))) << "post_recv on an SRQ QP must fail";
    for (int i = 0; i < 8; ++i)
        ASSERT_TRUE(srq.post(make_recv(100 + i, mrb, i * 65536, 65536)));
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(a1.post_send(make_wr(WrOpcode::Send, i, mra, i * 20000, 20000)));
        ASSERT_TRUE(a2.post_send(make_wr(WrOpcode::Send, 10 + i, mra, 500000 + i * 30000, 30000)));
    }
    ASSERT_TRUE(fab.run_until([&] { return rcq_b.q.size() == 8; }, 1'000'000'000));
    int from1 = 0, from2 = 0;
    for (const Wc &wc : rcq_b.q) {
        ASSERT_EQ(wc.status, WcStatus::Success);
        const size_t slot = wc.wr_id - 100;
        if (wc.qp_num == 0x21) {
            ASSERT_EQ(wc.byte_len, 20000u);
            EXPECT_EQ(0, std::memcmp(dst.data() + slot * 65536, src.data() + from1 * 20000, 20000));
            ++from1;
        } else {
            ASSERT_EQ(wc.byte_len, 30000u);
            EXPECT_EQ(0, std::memcmp(dst.data() + slot * 65536, src.data() + 500000 + from2 * 30000,
                                     30000));
            ++from2;
        }
    }
    EXPECT_EQ(from1, 4);
    EXPECT_EQ(from2, 4);
    EXPECT_EQ(srq.depth(), 0u);
}

/* A multi-packet SEND takes its receive off the SRQ at its FIRST packet. When the QP is
 * reset before the message ends, that receive belongs to the SRQ still: it goes back
 * there (another QP on the SRQ then receives into it), it does not vanish with no
 * completion. Moved to ERR instead, it completes WR_FLUSH_ERR on the QP's CQ. */
TEST(RcSim, SrqReceiveOfAPartialSendSurvivesResetAndError) {
    for (const QpState to : {QpState::Reset, QpState::Err}) {
        SCOPED_TRACE(qp_state_str(to));
        Fabric fab(25);
        Endpoint a(fab, kIpA, 1), b(fab, kIpB, 2);
        SimCq scq_a, rcq_a, scq_b, rcq_b;
        qp::RecvQueue srq(4, kMaxSge);
        rc::QpTuning one; /* one packet in flight: B sees the FIRST alone */
        one.max_inflight_pkts = 1;
        one.ackreq_every = 1;
        rc::Qp &a1 = a.create_qp(0x11, &scq_a, &rcq_a, {}, one);
        rc::Qp &a2 = a.create_qp(0x12, &scq_a, &rcq_a);
        rc::Qp &b1 = b.create_qp(0x21, &scq_b, &rcq_b, {}, {}, &srq);
        rc::Qp &b2 = b.create_qp(0x22, &scq_b, &rcq_b, {}, {}, &srq);
        a.connect(a1, b, b1, 1, 2);
        b.connect(b1, a, a1, 2, 1);
        a.connect(a2, b, b2, 3, 4);
        b.connect(b2, a, a2, 4, 3);
        std::vector<uint8_t> src(8192), dst(8192, 0);
        fill(src, 0, src.size(), 5);
        auto mra = a.mrs.reg(1, src.data(), src.size(), kAccessLocalWrite).value();
        auto mrb = b.mrs.reg(1, dst.data(), dst.size(), kAccessLocalWrite).value();
        ASSERT_TRUE(srq.post(make_recv(100, mrb, 0, 8192)));
        ASSERT_TRUE(a1.post_send(make_wr(WrOpcode::Send, 1, mra, 0, 3000))); /* 3 packets */
        ASSERT_TRUE(fab.run_until([&] { return srq.depth() == 0; }, 1'000'000'000));
        QpAttr at;
        at.qp_state = to;
        ASSERT_TRUE(b1.modify(at, kQpState));
        if (to == QpState::Reset) {
            EXPECT_EQ(srq.depth(), 1u) << "the receive went back to the SRQ";
            EXPECT_TRUE(rcq_b.q.empty()) << "RESET completes nothing";
            /* B2 receives into it. */
            ASSERT_TRUE(a2.post_send(make_wr(WrOpcode::Send, 2, mra, 4000, 100)));
            ASSERT_TRUE(fab.run_until([&] { return !rcq_b.q.empty(); }, 1'000'000'000));
            const Wc wc = rcq_b.q.front();
            EXPECT_EQ(wc.status, WcStatus::Success);
            EXPECT_EQ(wc.wr_id, 100u);
            EXPECT_EQ(wc.qp_num, 0x22u);
            EXPECT_EQ(wc.byte_len, 100u);
            EXPECT_EQ(0, std::memcmp(dst.data(), src.data() + 4000, 100));
        } else {
            ASSERT_EQ(rcq_b.q.size(), 1u) << "the receive completes flushed";
            EXPECT_EQ(rcq_b.q.front().status, WcStatus::WrFlushErr);
            EXPECT_EQ(rcq_b.q.front().wr_id, 100u);
            EXPECT_EQ(srq.depth(), 0u);
        }
    }
}

TEST(RcSim, InlineDataIsCopiedAtPost) {
    QpCap cap;
    cap.max_inline_data = 64;
    Pair q(23, {}, {}, Mtu::Mtu1024, 0x100, 0x200, cap);
    fill(q.buf_a, 0, 64, 1);
    std::vector<uint8_t> expect(q.buf_a.begin(), q.buf_a.begin() + 64);
    ASSERT_TRUE(q.qb->post_recv(make_recv(1, q.mr_b, 0, 100)));
    SendWr w = make_wr(WrOpcode::Send, 1, q.mr_a, 0, 64);
    w.send_flags |= kSendInline;
    w.sg_list[0].lkey = 0xdead; /* ignored for inline */
    ASSERT_TRUE(q.qa->post_send(w));
    std::memset(q.buf_a.data(), 0, 64); /* reusable at once */
    SendWr big = make_wr(WrOpcode::Send, 2, q.mr_a, 0, 65);
    big.send_flags |= kSendInline;
    EXPECT_FALSE(q.qa->post_send(big)) << "above max_inline_data";
    ASSERT_TRUE(q.run([&] { return q.rcq_b.q.size() == 1; }));
    EXPECT_EQ(q.rcq_b.q.front().status, WcStatus::Success);
    EXPECT_EQ(0, std::memcmp(q.buf_b.data(), expect.data(), 64));
}

/* Every refusal of post_send (rc::Qp::check_post_send's reasons): its errno, its message,
 * and nothing queued for it; the WRs it took all complete. */
TEST(RcSim, PostSendRefusalsQueueNothing) {
    QpCap cap;
    cap.max_send_wr = 4;
    cap.max_inline_data = 64;
    Pair q(29, {}, {}, Mtu::Mtu1024, 0x100, 0x200, cap);
    const auto write_wr = [&](uint64_t id) {
        SendWr w = make_wr(WrOpcode::RdmaWrite, id, q.mr_a, 0, 64);
        w.remote_addr = q.mr_b.addr;
        w.rkey = q.mr_b.key;
        return w;
    };
    const auto refused = [&](const SendWr &w, int code, const std::string &what) {
        const Status s = q.qa->post_send(w);
        EXPECT_FALSE(s) << what;
        EXPECT_EQ(s.code(), code) << what << ": " << s.message();
        EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
    };
    SendWr w = write_wr(100);
    w.num_sge = kMaxSge + 1;
    refused(w, EINVAL, "num_sge 5 out of range");
    w = write_wr(101);
    w.opcode = WrOpcode::AtomicFetchAndAdd;
    refused(w, EINVAL, "atomics take exactly one 8-byte SGE");
    w.sg_list[0].length = 8;
    w.remote_addr += 4;
    refused(w, EINVAL, "atomic remote_addr must be 8-byte aligned");
    w = write_wr(102);
    w.opcode = static_cast<WrOpcode>(200);
    refused(w, EINVAL, "unsupported opcode 200");
    w = write_wr(103);
    w.opcode = WrOpcode::RdmaRead;
    w.send_flags |= kSendInline;
    refused(w, EINVAL, "IBV_SEND_INLINE only with SEND and RDMA WRITE");
    w = write_wr(104);
    w.sg_list[0].length = 65;
    w.send_flags |= kSendInline;
    refused(w, EINVAL, "inline data of 65 bytes above max_inline_data 64");
    w = write_wr(105);
    w.sg_list[0].length = 0x80000001u;
    refused(w, EINVAL, "message longer than 2 GiB");
    for (uint64_t id = 1; id <= 4; ++id)
        ASSERT_TRUE(q.qa->post_send(write_wr(id)));
    refused(write_wr(5), ENOMEM, "send queue full (4 WRs)");
    ASSERT_TRUE(q.run([&] { return q.scq_a.q.size() == 4; }));
    q.fab.run_until([] { return false; }, q.fab.now + 1'000'000);
    ASSERT_EQ(q.scq_a.q.size(), 4u) << "a refused WR left a completion";
    for (uint64_t id = 1; id <= 4; ++id) {
        EXPECT_EQ(q.scq_a.q[id - 1].wr_id, id);
        EXPECT_EQ(q.scq_a.q[id - 1].status, WcStatus::Success);
    }
}

/* SEND with Invalidate received: droce has no key a peer may invalidate, so it must not
 * complete the receive as an invalidation (kWcWithInv) that did not happen. Refused as
 * IBTA refuses an R_Key it cannot invalidate: B's receive completes with REM_INV_REQ_ERR,
 * A's WR with the NAK's REM_INV_REQ_ERR, and B's QP goes to ERR. One- and two-packet. */
TEST(RcSim, SendWithInvalidateIsRefused) {
    for (const uint32_t len : {64u, 1500u}) {
        SCOPED_TRACE("length " + std::to_string(len));
        Pair q(25);
        fill(q.buf_a, 0, len, 4);
        ASSERT_TRUE(q.qb->post_recv(make_recv(1, q.mr_b, 0, 4096)));
        SendWr w = make_wr(WrOpcode::SendWithInv, 2, q.mr_a, 0, len);
        w.invalidate_rkey = q.mr_b.key;
        ASSERT_TRUE(q.qa->post_send(w));
        ASSERT_TRUE(q.run([&] { return q.rcq_b.q.size() == 1 && q.scq_a.q.size() == 1; }));
        const Wc r = q.rcq_b.q.front();
        EXPECT_EQ(r.status, WcStatus::RemInvReqErr) << wc_status_str(r.status);
        EXPECT_EQ(r.wc_flags & kWcWithInv, 0u) << "no invalidation is claimed";
        EXPECT_EQ(q.scq_a.q.front().status, WcStatus::RemInvReqErr)
            << wc_status_str(q.scq_a.q.front().status);
        EXPECT_EQ(q.b.counters.resp_invalidate_refused, 1u);
        EXPECT_EQ(q.a.counters.req_remote_invalid_request, 1u);
        EXPECT_EQ(q.qb->state(), QpState::Err);
    }
}

TEST(RcSim, FenceWaitsForEarlierReads) {
    /* A fenced WRITE may not start before the READ ahead of it completed: with the READ's
     * response delayed, the WRITE's packets must not be on the wire before it. */
    Faults f;
    f.delay_ns = 50'000;
    Pair p(24, f);
    fill(p.buf_b, 0, 4096, 3);
    SendWr rd = make_wr(WrOpcode::RdmaRead, 1, p.mr_a, 0, 4096);
    rd.remote_addr = p.mr_b.addr;
    rd.rkey = p.mr_b.key;
    SendWr wr = make_wr(WrOpcode::RdmaWrite, 2, p.mr_a, 100000, 100);
    wr.send_flags |= kSendFence;
    wr.remote_addr = p.mr_b.addr + 200000;
    wr.rkey = p.mr_b.key;
    ASSERT_TRUE(p.qa->post_send(rd));
    ASSERT_TRUE(p.qa->post_send(wr));
    Time read_done = 0, write_seen = 0;
    p.fab.on_send = [&](std::vector<uint8_t> &fr) {
        wire::ParsedPacket pp;
        if (wire::parse_frame(fr.data(), fr.size(), pp, false) != wire::ParseResult::Ok)
            return;
        if (pp.bth.opcode == wire::kRcWriteOnly && write_seen == 0)
            write_seen = p.fab.now;
        if (pp.bth.opcode == wire::kRcReadResponseLast && read_done == 0)
            read_done = p.fab.now + f.delay_ns;
    };
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 2; }));
    ASSERT_GT(write_seen, 0u);
    EXPECT_GE(write_seen, read_done) << "fenced WRITE left before the READ completed";
}

/* PSNs are 24 bits: a requester must keep fewer than 2^23 PSNs outstanding or its own
 * comparisons invert (npsn - una read as negative: no retransmit timer, the in-flight
 * gate shut). A READ request takes one PSN per response packet, so at path MTU 256 a
 * READ of 2^31 bytes alone spans 2^23: it is refused at post with a clear error; one
 * packet shorter is the longest that fits, and it is retried when its request is lost.
 * Behind a WRITE's 4 unacknowledged packets that READ would reach past 2^23: it waits
 * for them. The regions are address space reserved without memory (no response is
 * ever let through, so nothing is touched). */
TEST(RcSim, ReadSpanningHalfThePsnSpaceAtMtu256) {
    constexpr uint64_t kBig = 1ull << 31;
    void *la = mmap(nullptr, kBig, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *rb = mmap(nullptr, kBig, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(la, MAP_FAILED);
    ASSERT_NE(rb, MAP_FAILED);
    QpAttr at;
    at.max_rd_atomic = at.max_dest_rd_atomic = 2;
    auto read_wr = [](const mem::MemoryRegion &l, const mem::MemoryRegion &r, uint64_t off,
                      uint32_t len, uint64_t id) {
        SendWr wr = make_wr(WrOpcode::RdmaRead, id, l, off, len);
        wr.remote_addr = r.addr + off;
        wr.rkey = r.key;
        return wr;
    };
    {
        Faults f;
        f.loss = 1.0; /* the first READ request is lost */
        Pair p(31, f, at, Mtu::Mtu256);
        const auto ml = p.a.mrs.reg(1, la, kBig, kAccessLocalWrite).value();
        const auto mr = p.b.mrs.reg(1, rb, kBig, kAccessRemoteRead).value();
        const Status s = p.qa->post_send(read_wr(ml, mr, 0, 0x80000000u, 1));
        EXPECT_FALSE(s);
        EXPECT_NE(s.message().find("PSN"), std::string::npos) << s.message();
        ASSERT_TRUE(p.qa->post_send(read_wr(ml, mr, 0, 0x80000000u - 256, 2)));
        uint32_t requests = 0;
        p.fab.on_send = [&](std::vector<uint8_t> &fr) {
            wire::ParsedPacket pp;
            if (wire::parse_frame(fr.data(), fr.size(), pp, false) == wire::ParseResult::Ok &&
                pp.bth.opcode == wire::kRcReadRequest)
                ++requests;
        };
        p.b.tx_budget = 0;
        p.run([&] { return requests == 1; }, 1'000'000);
        ASSERT_EQ(requests, 1u);
        EXPECT_NE(p.qa->next_deadline(), 0u) << "a retransmit timer is armed";
        p.run([&] { return requests == 2; }, 1'000'000'000);
        EXPECT_EQ(requests, 2u) << "the lost READ request is sent again";
        EXPECT_EQ(p.qa->state(), QpState::Rts);
    }
    {
        Pair p(32, {}, at, Mtu::Mtu256);
        const auto ml = p.a.mrs.reg(1, la, kBig, kAccessLocalWrite).value();
        const auto mr = p.b.mrs.reg(1, rb, kBig, kAccessRemoteRead).value();
        SendWr w = make_wr(WrOpcode::RdmaWrite, 1, p.mr_a, 0, 1024); /* 4 packets */
        w.remote_addr = p.mr_b.addr;
        w.rkey = p.mr_b.key;
        ASSERT_TRUE(p.qa->post_send(w));
        ASSERT_TRUE(p.qa->post_send(read_wr(ml, mr, 0, 0x80000000u - 256, 2)));
        uint32_t writes = 0, reads = 0;
        p.fab.on_send = [&](std::vector<uint8_t> &fr) {
            wire::ParsedPacket pp;
            if (wire::parse_frame(fr.data(), fr.size(), pp, false) != wire::ParseResult::Ok)
                return;
            writes += pp.bth.opcode == wire::kRcWriteLast;
            reads += pp.bth.opcode == wire::kRcReadRequest;
        };
        p.b.tx_budget = 0; /* the WRITE is not acknowledged */
        p.run([&] { return writes >= 2; }, 1'000'000'000);
        EXPECT_GE(writes, 2u) << "the WRITE is retried";
        EXPECT_EQ(reads, 0u) << "the READ left with the WRITE outstanding: 2^23 + 3 PSNs";
        EXPECT_NE(p.qa->next_deadline(), 0u);
        EXPECT_EQ(p.qa->check_invariants(), "");
    }
    munmap(la, kBig);
    munmap(rb, kBig);
}

TEST(RcSim, PeerQpDestroyedMidStream) {
    QpAttr attr;
    attr.timeout = 10;
    attr.retry_cnt = 2;
    Pair p(25, {}, attr);
    for (int i = 0; i < 4; ++i)
        ASSERT_TRUE(p.qb->post_recv(make_recv(i, p.mr_b, i * 70000, 70000)));
    ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 1, p.mr_a, 0, 65536)));
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 1; }));
    p.b.destroy_qp(0x22); /* the responder goes away */
    ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 2, p.mr_a, 0, 65536)));
    ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, 3, p.mr_a, 0, 10)));
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 3; }));
    Wc wc;
    p.scq_a.pop(wc);
    EXPECT_EQ(wc.status, WcStatus::Success);
    p.scq_a.pop(wc);
    EXPECT_EQ(wc.status, WcStatus::RetryExcErr);
    p.scq_a.pop(wc);
    EXPECT_EQ(wc.status, WcStatus::WrFlushErr);
    EXPECT_EQ(p.qa->state(), QpState::Err);
    EXPECT_EQ(p.a.counters.local_ack_timeout_err, 3u);
}

TEST(RcSim, ErrorFlushesReceivesAndSends) {
    Pair p(26);
    ASSERT_TRUE(p.qb->post_recv(make_recv(1, p.mr_b, 0, 10)));
    ASSERT_TRUE(p.qb->post_recv(make_recv(2, p.mr_b, 0, 10)));
    QpAttr a;
    a.qp_state = QpState::Err;
    ASSERT_TRUE(p.qb->modify(a, kQpState));
    ASSERT_EQ(p.rcq_b.q.size(), 2u);
    EXPECT_EQ(p.rcq_b.q[0].wr_id, 1u);
    EXPECT_EQ(p.rcq_b.q[0].status, WcStatus::WrFlushErr);
    EXPECT_EQ(p.rcq_b.q[1].wr_id, 2u);
    /* posting in ERR completes at once with a flush */
    ASSERT_TRUE(p.qb->post_recv(make_recv(3, p.mr_b, 0, 10)));
    EXPECT_EQ(p.rcq_b.q.size(), 3u);
}

/* A receiver slower than one window per retransmission timeout (rxe under emulation):
 * each go-back-N round queues another window of duplicates ahead of the new packets, so
 * the ACKs for new data arrive later and later. The duplicate ACKs the responder sends
 * for them show it is alive and working through the backlog; they must keep the QP from
 * exhausting its retries. */
TEST(RcSim, SlowReceiverBacklogDoesNotExhaustRetries) {
    Faults f;
    f.delay_ns = 100'000;
    QpAttr attr;
    attr.timeout = 14; /* 67 ms */
    attr.retry_cnt = 7;
    attr.min_rnr_timer = 12;
    QpCap cap;
    cap.max_send_wr = 128;
    cap.max_recv_wr = 128;
    Pair p(31, f, attr, Mtu::Mtu4096, 0x100, 0x200, cap);
    p.b.rx_pps = 1000; /* a 128-packet window takes 128 ms, twice the 67 ms timeout */
    for (int i = 0; i < 60; ++i)
        ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, i, p.mr_a, 0, 65536)));
    p.run([] { return false; }, 20'000'000); /* RNR NAKs: the receives come 20 ms late */
    for (int i = 0; i < 60; ++i)
        ASSERT_TRUE(p.qb->post_recv(make_recv(i, p.mr_b, (i % 8) * 65536, 65536)));
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == 60 || p.qa->state() == QpState::Err; },
                      600'000'000'000ull));
    EXPECT_EQ(p.qa->state(), QpState::Rts)
        << p.qa->debug_string() << " timeouts " << p.a.counters.local_ack_timeout_err
        << " duplicates at B " << p.b.counters.duplicate_request;
    EXPECT_EQ(p.rcq_b.q.size(), 60u);
    std::printf("slow receiver: timeouts %llu, duplicates at B %llu, virtual %.3f s\n",
                static_cast<unsigned long long>(p.a.counters.local_ack_timeout_err),
                static_cast<unsigned long long>(p.b.counters.duplicate_request), p.fab.now / 1e9);
}

/* The shape of an interop failure against rxe under emulation: a burst of 64 KiB SENDs
 * at path MTU 4096 meets a receiver that has not posted its receives yet (RNR NAK), then
 * a slow, lossy, reordering path. Every message must complete, for many seeds. */
TEST(RcSim, RnrAtStartThenLossyBurstsOfLargeSends) {
    for (uint64_t seed = 100; seed < 106; ++seed) {
        Faults f;
        f.loss = 0.05;
        f.reorder = 0.05;
        f.dup = 0.02;
        f.delay_ns = 200'000;
        f.reorder_delay_ns = 3'000'000;
        f.link_gbps = 0.5;
        QpAttr attr;
        attr.timeout = 14;
        attr.retry_cnt = 7;
        attr.rnr_retry = 7;
        attr.min_rnr_timer = 12;
        QpCap cap;
        cap.max_send_wr = 128;
        cap.max_recv_wr = 512;
        Pair p(seed, f, attr, Mtu::Mtu4096, 0xfff83f, 0x50fb65, cap);
        p.fab.check_invariants = true;
        fill(p.buf_a, 0, 65536, 1);
        for (int i = 0; i < 100; ++i)
            ASSERT_TRUE(p.qa->post_send(make_wr(WrOpcode::Send, i, p.mr_a, 0, 65536)));
        p.run([] { return false; }, 2'000'000); /* 2 ms of RNR before receives exist */
        for (int i = 0; i < 100; ++i)
            ASSERT_TRUE(p.qb->post_recv(make_recv(i, p.mr_b, (i % 8) * 65536, 65536)));
        const bool ok =
            p.run([&] { return p.scq_a.q.size() == 100 || p.qa->state() == QpState::Err; },
                  600'000'000'000ull);
        ASSERT_TRUE(ok) << "seed " << seed << " hung: " << p.qa->debug_string();
        ASSERT_EQ(p.fab.violation, "") << "seed " << seed;
        ASSERT_EQ(p.qa->state(), QpState::Rts)
            << "seed " << seed << ": " << p.qa->debug_string() << " timeouts "
            << p.a.counters.local_ack_timeout_err;
        ASSERT_EQ(p.rcq_b.q.size(), 100u) << "seed " << seed;
    }
}

namespace {
/* The ACK-family frames (ACK/NAK, opcode Acknowledge) one endpoint's QP sends. */
struct AckLog {
    struct Entry {
        uint8_t syndrome;
        uint32_t psn;
    };
    void tap(Pair &p, uint32_t from_qp_dest) {
        p.fab.on_send = [this, from_qp_dest](std::vector<uint8_t> &fr) {
            wire::ParsedPacket pp;
            if (wire::parse_frame(fr.data(), fr.size(), pp, false) != wire::ParseResult::Ok)
                return;
            if (pp.bth.dest_qp == from_qp_dest && pp.bth.opcode == wire::kRcAcknowledge)
                acks.push_back({pp.aeth.syndrome, pp.bth.psn});
            if (pp.bth.dest_qp != from_qp_dest && on_request)
                on_request(fr, pp);
        };
    }
    std::vector<Entry> acks;
    std::function<void(std::vector<uint8_t> &, const wire::ParsedPacket &)> on_request;
};
} // namespace

TEST(RcSim, BurstOfWritesIsAcknowledgedByCoalescedAcks) {
    /* 64 single-packet WRITEs (each the last packet of its message, so each asks for an
     * ACK) reach the responder in one delivery burst: the ACKs owed for them coalesce
     * into one for the newest PSN (IBTA: an ACK acknowledges every earlier request),
     * instead of one per message, and every WR still completes. */
    Pair p(41);
    AckLog log;
    log.tap(p, 0x11);
    constexpr int kN = 64;
    fill(p.buf_a, 0, kN * 64, 5);
    for (int i = 0; i < kN; ++i) {
        SendWr wr = make_wr(WrOpcode::RdmaWrite, i, p.mr_a, i * 64, 64);
        wr.remote_addr = p.mr_b.addr + i * 64;
        wr.rkey = p.mr_b.key;
        ASSERT_TRUE(p.qa->post_send(wr));
    }
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == kN; }));
    for (int i = 0; i < kN; ++i) {
        Wc wc;
        ASSERT_TRUE(p.scq_a.pop(wc));
        EXPECT_EQ(wc.status, WcStatus::Success);
        EXPECT_EQ(wc.wr_id, static_cast<uint64_t>(i)) << "completions in order";
    }
    EXPECT_EQ(std::memcmp(p.buf_a.data(), p.buf_b.data(), kN * 64), 0);
    ASSERT_GE(log.acks.size(), 1u);
    EXPECT_LE(log.acks.size() * 4, static_cast<size_t>(kN))
        << log.acks.size() << " ACKs for " << kN << " messages: not coalesced";
    EXPECT_EQ(log.acks.back().psn, (0x100u + kN - 1) & wire::kPsnMask)
        << "the last ACK covers the newest PSN";
    for (const auto &a : log.acks)
        EXPECT_EQ(a.syndrome >> 5, 0) << "only ACKs on a clean path";
}

TEST(RcSim, CoalescedAckLeavesBeforeTheSequenceNak) {
    /* A gap in a burst: the ACK owed for the requests before it must precede the PSN
     * sequence error NAK (sent at once, not coalesced), as when each ACK left at once. */
    Pair p(42);
    AckLog log;
    log.tap(p, 0x11);
    bool dropped = false;
    log.on_request = [&](std::vector<uint8_t> &fr, const wire::ParsedPacket &pp) {
        if (!dropped && pp.bth.psn == 0x100 + 5) {
            dropped = true;
            fr[fr.size() - 1] ^= 1; /* bad ICRC: the responder never sees it */
        }
    };
    constexpr int kN = 16;
    for (int i = 0; i < kN; ++i) {
        SendWr wr = make_wr(WrOpcode::RdmaWrite, i, p.mr_a, i * 64, 64);
        wr.remote_addr = p.mr_b.addr + i * 64;
        wr.rkey = p.mr_b.key;
        ASSERT_TRUE(p.qa->post_send(wr));
    }
    ASSERT_TRUE(p.run([&] { return p.scq_a.q.size() == kN; }));
    ASSERT_TRUE(dropped);
    ASSERT_GE(log.acks.size(), 2u);
    EXPECT_EQ(log.acks[0].syndrome >> 5, 0);
    EXPECT_EQ(log.acks[0].psn, 0x100u + 4) << "ACK of the requests before the gap";
    EXPECT_EQ(log.acks[1].syndrome, wire::kAethNakPsnSeqErr);
    EXPECT_EQ(log.acks[1].psn, 0x100u + 5) << "then the NAK of the missing PSN";
    Wc wc;
    while (p.scq_a.pop(wc))
        EXPECT_EQ(wc.status, WcStatus::Success);
}
