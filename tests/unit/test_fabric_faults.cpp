/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/fabric's fault injector (droce-fabric --dup / --reorder / --corrupt): validation,
 * rates near the probabilities asked for, a seed that replays, corruption only past the
 * Ethernet header, one frame held at a time. */
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "fabric_faults.h"

using namespace droce::fabric;

TEST(FabricFaults, ValidateRefusesBadProbabilities) {
    EXPECT_EQ(validate(FaultParams{}), nullptr);
    EXPECT_EQ(validate(FaultParams{1, 1, 1}), nullptr);
    EXPECT_NE(validate(FaultParams{-0.1, 0, 0}), nullptr);
    EXPECT_NE(validate(FaultParams{0, 1.5, 0}), nullptr);
    EXPECT_NE(validate(FaultParams{0, 0, __builtin_nan("")}), nullptr);
}

TEST(FabricFaults, NoneAskedNoneInjected) {
    FaultInjector f(FaultParams{}, 7);
    for (int i = 0; i < 100000; ++i) {
        const FaultAction a = f.decide(1000, true);
        ASSERT_FALSE(a.dup || a.hold || a.flip >= 0);
    }
    EXPECT_EQ(f.counters().duplicated + f.counters().corrupted, 0u);
}

TEST(FabricFaults, RatesFollowTheProbabilities) {
    FaultInjector f(FaultParams{0.01, 0.02, 0.005}, 1);
    const int n = 1'000'000;
    int holds = 0;
    for (int i = 0; i < n; ++i)
        holds += f.decide(1500, true).hold;
    /* binomial: 5 standard deviations either side */
    auto near = [&](uint64_t got, double p) {
        const double m = n * p, sd = std::sqrt(n * p * (1 - p));
        return std::abs(static_cast<double>(got) - m) < 5 * sd;
    };
    EXPECT_TRUE(near(f.counters().duplicated, 0.01)) << f.counters().duplicated;
    EXPECT_TRUE(near(static_cast<uint64_t>(holds), 0.02)) << holds;
    EXPECT_TRUE(near(f.counters().corrupted, 0.005)) << f.counters().corrupted;
}

TEST(FabricFaults, ASeedReplaysAndAnotherDiffers) {
    const FaultParams p{0.1, 0.1, 0.1};
    FaultInjector a(p, 42), b(p, 42), c(p, 43);
    bool differs = false;
    for (int i = 0; i < 10000; ++i) {
        const FaultAction x = a.decide(200, true), y = b.decide(200, true), z = c.decide(200, true);
        ASSERT_EQ(x.dup, y.dup);
        ASSERT_EQ(x.hold, y.hold);
        ASSERT_EQ(x.flip, y.flip);
        ASSERT_EQ(x.mask, y.mask);
        differs |= x.dup != z.dup || x.hold != z.hold || x.flip != z.flip;
    }
    EXPECT_TRUE(differs);
}

TEST(FabricFaults, CorruptionFlipsOneBitPastTheEthernetHeader) {
    FaultInjector f(FaultParams{0, 0, 1}, 3);
    std::vector<uint8_t> hit(64, 0);
    for (int i = 0; i < 20000; ++i) {
        std::vector<uint8_t> frame(64, 0xA5), orig = frame;
        const FaultAction a = f.decide(64, true);
        ASSERT_GE(a.flip, 14);
        ASSERT_LT(a.flip, 64);
        FaultInjector::corrupt(frame.data(), a);
        int bits = 0;
        for (size_t k = 0; k < frame.size(); ++k)
            bits += __builtin_popcount(frame[k] ^ orig[k]);
        ASSERT_EQ(bits, 1);
        hit[static_cast<size_t>(a.flip)] = 1;
    }
    /* every byte past the header gets its turn */
    for (size_t k = 14; k < 64; ++k)
        EXPECT_EQ(hit[k], 1) << k;
    /* a frame of the header alone (or less) is never corrupted */
    const FaultAction a = f.decide(14, true);
    EXPECT_EQ(a.flip, -1);
}

TEST(FabricFaults, HoldsOneFrameAtATimeAndCountsOvertakes) {
    FaultInjector f(FaultParams{0, 1, 0}, 5);
    EXPECT_TRUE(f.decide(100, true).hold);
    EXPECT_FALSE(f.decide(100, false).hold); /* one held already */
    f.overtaken();
    EXPECT_EQ(f.counters().reordered, 1u);
}

TEST(FabricFaults, DupFailedMovesTheCount) {
    FaultInjector f(FaultParams{1, 0, 0}, 9);
    EXPECT_TRUE(f.decide(100, true).dup);
    f.dup_failed();
    EXPECT_EQ(f.counters().duplicated, 0u);
    EXPECT_EQ(f.counters().dup_failed, 1u);
}
