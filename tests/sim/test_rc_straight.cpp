/* SPDX-License-Identifier: BSD-3-Clause */
/* The straight paths against the generic paths they short-cut: the requester's
 * (Qp::send_straight, wire_data_template.h) against FrameSpecs, the responder's
 * (Qp::on_small_frame, wire::SmallFrame) against on_packet. The same seeded workload
 * (SENDs and WRITEs with and without immediate, inline, one and two SGEs, zero to
 * multi-packet lengths, lost frames and so retransmissions, a path change half-way;
 * for the responder also duplicated, reordered and corrupted frames, receives that run
 * out (RNR) and two-SGE receives), unpaced and paced by DCQCN, run with the straight
 * path and without must put the very same frames on the wire in the same order, and
 * leave the same memory, completions and counters. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "sim_fabric.h"

using namespace droce;
using namespace droce::sim;

namespace {

struct Trace {
    std::vector<std::vector<uint8_t>> frames;
    std::vector<uint8_t> mem_b;
    std::vector<Wc> recvs;
    uint64_t straight_a = 0, straight_b = 0, retransmitted = 0, paced_defers = 0;
    uint64_t resp_straight = 0, rnr_naks = 0, dup_requests = 0;
    rc::Counters counters_b;
};

/* The same frames, memory and receive completions. */
void expect_same_effects(const Trace &s, const Trace &g) {
    ASSERT_EQ(s.frames.size(), g.frames.size());
    for (size_t i = 0; i < s.frames.size(); ++i) {
        ASSERT_EQ(s.frames[i].size(), g.frames[i].size()) << "frame " << i;
        const auto d = std::mismatch(s.frames[i].begin(), s.frames[i].end(), g.frames[i].begin());
        ASSERT_TRUE(d.first == s.frames[i].end())
            << "frame " << i << " differs at byte " << (d.first - s.frames[i].begin());
    }
    EXPECT_EQ(s.mem_b, g.mem_b);
    ASSERT_EQ(s.recvs.size(), g.recvs.size());
    for (size_t i = 0; i < s.recvs.size(); ++i) {
        EXPECT_EQ(s.recvs[i].wr_id, g.recvs[i].wr_id);
        EXPECT_EQ(s.recvs[i].status, g.recvs[i].status);
        EXPECT_EQ(s.recvs[i].byte_len, g.recvs[i].byte_len);
        EXPECT_EQ(s.recvs[i].imm_data, g.recvs[i].imm_data);
        EXPECT_EQ(s.recvs[i].wc_flags, g.recvs[i].wc_flags);
    }
}

/* Both runs use the same buffers: a WRITE's RETH carries the remote address. */
std::vector<uint8_t> g_buf_a(1 << 20), g_buf_b(1 << 20);

struct Mode {
    bool tx = true;       /* Endpoint::straight */
    bool rx = true;       /* Endpoint::rx_straight */
    bool hostile = false; /* dup/reorder/corrupt faults, RNR, two-SGE receives */
};

Trace run(Mode mode, uint64_t seed, bool paced) {
    Faults f;
    f.loss = 0.02;
    if (mode.hostile) {
        f.dup = 0.02;
        f.reorder = 0.02;
        f.corrupt = 0.01;
    }
    Fabric fab(seed, f);
    Endpoint a(fab, 0x0A000001, 1), b(fab, 0x0A000002, 2);
    a.straight = b.straight = mode.tx;
    a.rx_straight = b.rx_straight = mode.rx;
    /* DCQCN capped under the line rate: the requester is paced from its first frame. */
    cc::CcParams capped;
    capped.rpg_max_rate_bps = 2'000'000'000;
    if (paced) {
        a.cc = &capped;
        a.line_rate_bps = 10'000'000'000;
    }
    SimCq scq_a, rcq_a, scq_b, rcq_b;
    QpCap cap;
    cap.max_send_wr = 64;
    cap.max_recv_wr = 256;
    cap.max_inline_data = 64;
    rc::Qp &qa = a.create_qp(0x11, &scq_a, &rcq_a, cap);
    rc::Qp &qb = b.create_qp(0x22, &scq_b, &rcq_b, cap);
    QpAttr attr;
    attr.qp_access_flags = kAccessLocalWrite | kAccessRemoteWrite;
    a.connect(qa, b, qb, 0x100, 0x200, attr);
    b.connect(qb, a, qa, 0x200, 0x100, attr);
    std::vector<uint8_t> &buf_a = g_buf_a, &buf_b = g_buf_b;
    std::fill(buf_b.begin(), buf_b.end(), 0);
    std::mt19937 rng(static_cast<uint32_t>(seed));
    for (auto &x : buf_a)
        x = static_cast<uint8_t>(rng());
    const uint32_t all = kAccessLocalWrite | kAccessRemoteWrite;
    const auto mr_a = a.mrs.reg(1, buf_a.data(), buf_a.size(), all).value();
    const auto mr_b = b.mrs.reg(1, buf_b.data(), buf_b.size(), all).value();
    Trace out;
    fab.on_send = [&](std::vector<uint8_t> &fr) { out.frames.push_back(fr); };
    /* Hostile: receives are posted a batch at a time, fewer than the batch's SENDs may
     * need at first (RNR NAKs, retried), every third with two SGEs. */
    uint32_t posted = 0;
    auto post_recvs = [&](uint32_t n) {
        for (uint32_t k = 0; k < n; ++k, ++posted) {
            RecvWr r;
            r.wr_id = posted;
            r.num_sge = 1;
            const uint64_t at = mr_b.addr + (512u << 10) + posted * 2048u;
            r.sg_list[0] = {at, 2048, mr_b.key};
            if (mode.hostile && posted % 3 == 0) {
                r.num_sge = 2;
                r.sg_list[0].length = 24;
                r.sg_list[1] = {at + 32, 2048 - 32, mr_b.key};
            }
            EXPECT_TRUE(qb.post_recv(r));
        }
    };
    post_recvs(mode.hostile ? 8 : 200);
    constexpr WrOpcode kOps[] = {WrOpcode::Send, WrOpcode::SendWithImm, WrOpcode::RdmaWrite,
                                 WrOpcode::RdmaWriteWithImm};
    size_t done = 0;
    for (int batch = 0; batch < 4; ++batch) {
        if (batch == 2) /* the same MAC again: a new path generation all the same */
            qa.set_next_hop_mac(b.mac);
        for (int i = 0; i < 40; ++i) {
            SendWr wr;
            wr.wr_id = static_cast<uint64_t>(batch * 100 + i);
            wr.opcode = kOps[rng() % 4];
            wr.send_flags = kSendSignaled | (rng() % 5 == 0 ? kSendSolicited : 0u);
            const uint32_t len = rng() % 3 == 0 ? static_cast<uint32_t>(rng() % 2048)
                                                : static_cast<uint32_t>(rng() % 128);
            const uint64_t src = mr_a.addr + (rng() % 1000) * 512;
            wr.num_sge = 1;
            wr.sg_list[0] = {src, len, mr_a.key};
            if (len > 8 && rng() % 4 == 0) { /* two SGEs */
                wr.num_sge = 2;
                wr.sg_list[0].length = len / 2;
                wr.sg_list[1] = {src + 4096 + len, len - len / 2, mr_a.key};
            } else if (len <= 64 && rng() % 3 == 0) {
                wr.send_flags |= kSendInline;
            }
            wr.imm_data = static_cast<uint32_t>(rng());
            wr.remote_addr = mr_b.addr + (rng() % 200) * 2048;
            wr.rkey = mr_b.key;
            EXPECT_TRUE(qa.post_send(wr)) << "wr " << wr.wr_id;
        }
        done += 40;
        if (mode.hostile) { /* the rest of the batch's receives, once RNR has been seen */
            fab.run_until([&] { return false; }, fab.now + 2'000'000);
            post_recvs(42);
        }
        EXPECT_TRUE(
            fab.run_until([&] { return scq_a.q.size() == done; }, fab.now + 5'000'000'000ull))
            << "batch " << batch << ", tx " << mode.tx << ", rx " << mode.rx;
    }
    out.mem_b = buf_b;
    Wc wc;
    while (rcq_b.pop(wc))
        out.recvs.push_back(wc);
    out.straight_a = a.tx_straight;
    out.straight_b = b.tx_straight;
    out.resp_straight = b.counters.resp_straight;
    out.rnr_naks = b.counters.rnr_nak_sent;
    out.dup_requests = b.counters.duplicate_request;
    out.counters_b = b.counters;
    out.counters_b.resp_straight = 0; /* the one counter the two runs may differ in */
    out.retransmitted = a.counters.retransmitted_packets;
    out.paced_defers = a.counters.paced_defers;
    return out;
}

/* Both runs of one seed, compared: the requester's straight path. */
void expect_same_runs(uint64_t seed, bool paced) {
    SCOPED_TRACE(testing::Message() << "seed " << seed << ", paced " << paced);
    const Trace s = run({true, false}, seed, paced);
    const Trace g = run({false, false}, seed, paced);
    if (paced) {
        EXPECT_GT(s.paced_defers, 0u) << "the pacer holds frames back";
    }
    EXPECT_GT(s.straight_a, 60u) << "most one-packet requests take the straight path";
    EXPECT_EQ(s.straight_b, 0u) << "the responder sends ACKs only";
    EXPECT_EQ(g.straight_a, 0u);
    EXPECT_GT(s.retransmitted, 0u) << "the loss exercises retransmission";
    expect_same_effects(s, g);
}

/* The responder's: with it and without, the same frames, memory, completions and
 * counters, and both the straight path and the generic path's answers exercised. */
void expect_same_responder(uint64_t seed, bool paced, bool hostile) {
    SCOPED_TRACE(testing::Message()
                 << "seed " << seed << ", paced " << paced << ", hostile " << hostile);
    const Trace s = run({true, true, hostile}, seed, paced);
    const Trace g = run({true, false, hostile}, seed, paced);
    EXPECT_GT(s.resp_straight, 40u) << "most one-packet requests take the straight path";
    EXPECT_EQ(g.resp_straight, 0u);
    EXPECT_GT(s.counters_b.out_of_sequence, 0u) << "a gap reaches the generic path";
    if (hostile) {
        EXPECT_GT(s.dup_requests, 0u) << "duplicates reach the generic path";
        EXPECT_GT(s.rnr_naks, 0u) << "a SEND with no receive reaches the generic path";
    }
    expect_same_effects(s, g);
    std::vector<std::pair<std::string, uint64_t>> cs, cg;
    s.counters_b.for_each([&](const char *n, uint64_t v) { cs.emplace_back(n, v); });
    g.counters_b.for_each([&](const char *n, uint64_t v) { cg.emplace_back(n, v); });
    EXPECT_EQ(cs, cg) << "the responder counted differently";
}

} // namespace

TEST(RcStraight, SameFramesAsTheFrameSpecPath) {
    for (uint64_t seed : {1u, 2u, 3u, 4u})
        expect_same_runs(seed, false);
}

TEST(RcStraight, SameFramesAsTheFrameSpecPathWhenPaced) {
    for (uint64_t seed : {1u, 2u, 3u, 4u})
        expect_same_runs(seed, true);
}

TEST(RcStraight, ResponderSameAsTheGenericPath) {
    for (uint64_t seed : {1u, 2u, 3u, 4u})
        expect_same_responder(seed, false, false);
}

TEST(RcStraight, ResponderSameAsTheGenericPathUnderFaults) {
    for (uint64_t seed : {5u, 6u, 7u, 8u})
        expect_same_responder(seed, seed % 2 == 0, true);
}
