/* SPDX-License-Identifier: BSD-3-Clause */
/* Issue 10's targets in the simulator (10 Gb/s bottleneck, 2 µs links, the runs of
 * bench/cc_sim): with DCQCN on, N flows into one receiver converge to within 10% of their
 * fair share within 20 ms, Jain's index ≥ 0.95 at 2:1 and 8:1, the queue stays below Kmax
 * after convergence and nothing is dropped; with DCQCN off the queue stands above Kmax or
 * overflows. Each failure message names the seed. */
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>

#include "cc_params.h"
#include "sim_incast.h"

using namespace droce;
using namespace droce::sim;

namespace {

constexpr Time kUs = 1000, kMs = 1000 * kUs;

IncastConfig incast(size_t n, const cc::CcParams *cc, uint64_t seed) {
    IncastConfig c;
    c.duration_ns = 30 * kMs;
    c.bottleneck.rate_bps = 10'000'000'000;
    c.bottleneck.buffer_bytes = 240'000;
    c.bottleneck.kmin_bytes = 5'000;
    c.bottleneck.kmax_bytes = 200'000;
    /* ConnectX's byte counter (a stage per 32 KB) needs more marking than the paper's 1%
     * gives inside the ramp (tests/unit/test_cc.cpp shows it): 5% */
    c.bottleneck.pmax = 0.05;
    c.cc = cc;
    c.seed = seed;
    c.flows.assign(n, FlowSpec{});
    for (auto &f : c.flows)
        f.start_ns = 100 * kUs;
    return c;
}

void check_dcqcn_on(size_t n) {
    /* DCQCN inside rc::Qp (ECT marking, CE -> CNP, CNP -> rate cut, pacer) is on branch
     * ccqp, not merged here yet: without it these runs are the DCQCN-off runs. */
    GTEST_SKIP() << "DCQCN in rc::Qp not merged yet (branch ccqp): the targets cannot be met";
    cc::CcParams p;
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        SCOPED_TRACE(testing::Message() << n << ":1 seed " << seed);
        const IncastConfig c = incast(n, &p, seed);
        const IncastResult r = run_incast(c);
        std::vector<size_t> all(n);
        for (size_t k = 0; k < n; ++k)
            all[k] = k;
        const size_t bins = c.duration_ns / c.bin_ns;
        const Time t = convergence_time(r, all, 10, 2, bins, 0.10);
        const std::vector<double> m = mean_rates(r, bins - 200, bins, all);
        std::printf(
            "[cc_fabric] %zu:1 seed %llu: converged at %.2f ms, Jain %.4f, queue after "
            "%u B, max %llu B, drops %llu, marked %llu, CNPs %llu\n",
            n, static_cast<unsigned long long>(seed),
            t == std::numeric_limits<Time>::max() ? -1.0 : static_cast<double>(t) / 1e6, jain(m),
            max_depth_after(r, t), static_cast<unsigned long long>(r.bq.max_depth_bytes),
            static_cast<unsigned long long>(r.bq.dropped_tail + r.bq.dropped_red),
            static_cast<unsigned long long>(r.bq.marked), static_cast<unsigned long long>(r.cnps));
        EXPECT_GT(r.cnps, 0u) << "no CNP: DCQCN did not act";
        ASSERT_NE(t, std::numeric_limits<Time>::max()) << "never within 10% of the fair share";
        EXPECT_LE(t, 100 * kUs + 20 * kMs) << "converged after 20 ms";
        EXPECT_GE(jain(m), 0.95);
        EXPECT_LT(max_depth_after(r, t), c.bottleneck.kmax_bytes);
        EXPECT_EQ(r.bq.dropped_tail + r.bq.dropped_red + r.bq.dropped_loss, 0u);
        EXPECT_FALSE(r.qp_error);
    }
}

} // namespace

TEST(CcFabric, TwoToOneConvergesFairWithoutDropsWithDcqcn) { check_dcqcn_on(2); }

TEST(CcFabric, EightToOneConvergesFairWithoutDropsWithDcqcn) { check_dcqcn_on(8); }

/* The contrast the plots show: without DCQCN nothing holds the queue back but the RC
 * windows (128 packets a QP). At 2:1 they hold it above Kmax; at 8:1 it overflows. */
TEST(CcFabric, WithoutDcqcnTheQueueStandsAboveKmaxOrOverflows) {
    {
        const IncastConfig c = incast(2, nullptr, 1);
        const IncastResult r = run_incast(c);
        EXPECT_GE(max_depth_after(r, 10 * kMs), c.bottleneck.kmax_bytes);
        EXPECT_EQ(r.cnps, 0u);
        EXPECT_EQ(r.bq.marked, 0u) << "without DCQCN data leaves not-ECT: nothing to mark";
    }
    {
        const IncastConfig c = incast(8, nullptr, 1);
        const IncastResult r = run_incast(c);
        EXPECT_GT(r.bq.dropped_tail, 0u);
        EXPECT_GE(r.bq.max_depth_bytes + 1500, c.bottleneck.buffer_bytes);
    }
}
