/* SPDX-License-Identifier: BSD-3-Clause */
/* QpnOwner (engine_qpn_owner.h): qpn % workers without a division, for every worker
 * count a device can have and QPNs across the whole 32-bit range (the 24-bit QPNs the
 * wire carries, and anything above them a bad frame could produce). */
#include <cstdint>
#include <random>

#include <gtest/gtest.h>

#include "engine_qpn_owner.h"

namespace {

TEST(QpnOwner, EqualsTheRemainderForEveryWorkerCount) {
    std::mt19937 rng(32);
    const uint32_t edges[] = {0u,         1u,          2u,          0xFFFFFEu,   0xFFFFFFu,
                              0x1000000u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
    for (uint32_t w = 1; w <= 256; ++w) {
        const droce::engine::QpnOwner owner(w);
        ASSERT_EQ(owner.workers(), w);
        for (uint32_t q : edges)
            ASSERT_EQ(owner(q), q % w) << "qpn " << q << ", " << w << " workers";
        for (uint32_t q = 0; q < 4096; ++q)
            ASSERT_EQ(owner(q), q % w) << "qpn " << q << ", " << w << " workers";
        for (int i = 0; i < 20000; ++i) {
            const uint32_t q = static_cast<uint32_t>(rng());
            ASSERT_EQ(owner(q), q % w) << "qpn " << q << ", " << w << " workers";
        }
    }
}

} // namespace
