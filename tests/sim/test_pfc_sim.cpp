/* SPDX-License-Identifier: BSD-3-Clause */
/* Issue 16's simulator targets (experiment e of bench/cc_sim, same configuration): N:1
 * incast of 64 KiB RDMA WRITEs through a 10 Gb/s bottleneck with a 2 MB buffer and PFC
 * per ingress port (XOFF 80 KB, XON 77.8 KB), plus a victim flow from flow 0's host to a
 * receiver off the bottleneck, sharing only flow 0's link.
 *
 * Asserted, at 2:1 and 8:1, every seed:
 *  - PFC only: nothing dropped, no QP error, and the victim collapses (below half of the
 *    link flow 0 leaves it) because pauses of its host's link stop it too;
 *  - PFC + DCQCN: at least 10x fewer pause frames than PFC only, at least 90% of PFC
 *    only's goodput, nothing dropped, and the victim back to at least 80% of its share;
 *  - DCQCN only (lossy): drops bounded (none with this buffer), no pause frame. */
#include <gtest/gtest.h>

#include <algorithm>

#include "cc_params.h"
#include "sim_incast.h"

using namespace droce;
using namespace droce::sim;

namespace {

constexpr Time kUs = 1000, kMs = 1000 * kUs;

struct LabRun {
    double goodput = 0; /* Gb/s out of the bottleneck, last 10 ms */
    double victim_share = 0;
    uint64_t pause_frames = 0;
    uint64_t drops = 0;
    bool qp_error = false;
};

LabRun run(size_t n, bool pfc, const cc::CcParams *cc, uint64_t seed) {
    IncastConfig c;
    c.duration_ns = 30 * kMs;
    c.bottleneck.rate_bps = 10'000'000'000;
    c.bottleneck.buffer_bytes = 2'000'000;
    c.bottleneck.ecn = cc != nullptr;
    c.bottleneck.kmin_bytes = 5'000;
    c.bottleneck.kmax_bytes = 200'000;
    c.bottleneck.pmax = 0.05;
    c.bottleneck.mark_at_dequeue = true;
    if (pfc) {
        c.bottleneck.pfc_xoff_bytes = 80'000;
        c.bottleneck.pfc_xon_bytes = 77'800;
    }
    c.cc = cc;
    c.seed = seed;
    c.flows.assign(n, FlowSpec{});
    for (auto &f : c.flows)
        f.start_ns = 100 * kUs;
    c.victim = true;
    c.victim_flow.start_ns = 100 * kUs;
    const IncastResult r = run_incast(c);
    const size_t bins = c.duration_ns / c.bin_ns;
    LabRun o;
    double f0 = 0, v = 0;
    for (size_t b = bins - 200; b < bins; ++b) {
        for (size_t k = 0; k < n; ++k)
            o.goodput += r.rate_gbps[k][b] / 200;
        f0 += r.sent_gbps[0][b] / 200;
        v += r.victim_gbps[b] / 200;
    }
    o.victim_share = v / std::max(1e-9, c.link_gbps - f0);
    o.pause_frames = r.pause_frames;
    o.drops = r.bq.dropped_tail + r.bq.dropped_red + r.bq.dropped_loss;
    o.qp_error = r.qp_error;
    return o;
}

class PfcLab : public ::testing::TestWithParam<size_t> {};

} // namespace

TEST_P(PfcLab, PfcOnlyIsLosslessButBlocksTheVictimAndDcqcnFixesBoth) {
    const size_t n = GetParam();
    const cc::CcParams cx; /* ConnectX defaults */
    const LabRun pfc = run(n, true, nullptr, 1);
    EXPECT_EQ(pfc.drops, 0u);
    EXPECT_FALSE(pfc.qp_error);
    EXPECT_GT(pfc.pause_frames, 100u);
    EXPECT_LT(pfc.victim_share, 0.5) << "head-of-line blocking of the victim";
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        SCOPED_TRACE(seed);
        const LabRun both = run(n, true, &cx, seed);
        EXPECT_EQ(both.drops, 0u);
        EXPECT_FALSE(both.qp_error);
        EXPECT_LE(both.pause_frames * 10, pfc.pause_frames);
        EXPECT_GE(both.goodput, 0.9 * pfc.goodput);
        EXPECT_GE(both.victim_share, 0.8) << "the victim recovers";
        const LabRun lossy = run(n, false, &cx, seed);
        EXPECT_EQ(lossy.pause_frames, 0u);
        EXPECT_EQ(lossy.drops, 0u) << "bounded: the 2 MB buffer holds DCQCN's queue";
        EXPECT_FALSE(lossy.qp_error);
    }
}

INSTANTIATE_TEST_SUITE_P(Incast, PfcLab, ::testing::Values(size_t{2}, size_t{8}));
