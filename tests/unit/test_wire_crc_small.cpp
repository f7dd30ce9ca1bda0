/* SPDX-License-Identifier: BSD-3-Clause */
/* The short-run ICRC (crc32_small.h): masked in registers, never written. */
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "crc32_small.h"
#include "wire_icrc.h"

using namespace droce::wire;

namespace {
bool have_small() { return crc_kernel_available(CrcKernel::Small); }
} // namespace

/* Every length the small path takes, IPv4 and IPv6, at start offsets that put the IP
 * header at each residue mod 16 (the head's shift), random bytes everywhere (variant
 * fields and the 8-byte prefix included), against the reference; the frame unchanged,
 * and icrc_compute / icrc_compute_inplace (which route here) agree. */
TEST(WireCrcSmall, IcrcEveryLengthOffsetAndFamily) {
    if (!have_small())
        GTEST_SKIP() << "no PCLMULQDQ/SSSE3";
    std::mt19937 rng(7);
    std::vector<uint8_t> buf(kCrcSmallMax + 64);
    for (auto &c : buf)
        c = static_cast<uint8_t>(rng());
    int checked = 0;
    for (bool v6 : {false, true}) {
        const size_t hlen = (v6 ? 40u : 20u) + 8 + 12;
        for (size_t len = hlen; len + 8 < kCrcSmallMax; ++len) {
            for (size_t off : {8u, 9u, 12u, 19u, 23u}) {
                uint8_t *l3 = buf.data() + off;
                const std::vector<uint8_t> before = buf;
                const uint32_t ref = icrc_compute_reference(l3, len, v6);
                ASSERT_EQ(icrc_small(l3, len, v6), ref) << "v6 " << v6 << " len " << len;
                ASSERT_EQ(icrc_compute(l3, len, v6), ref) << len;
                ASSERT_EQ(icrc_compute_inplace(l3, len, v6), ref) << len;
                ASSERT_EQ(buf, before) << "the frame must not change";
                ++checked;
            }
        }
    }
    EXPECT_GT(checked, 4000);
}

/* The plain kernel (no mask) over every length it takes and a few alignments, against
 * the DPDK kernel (itself checked against a bitwise CRC in test_wire_packet.cpp). */
TEST(WireCrcSmall, PlainKernelMatchesDpdk) {
    if (!have_small())
        GTEST_SKIP() << "no PCLMULQDQ/SSSE3";
    std::mt19937 rng(8);
    std::vector<uint8_t> buf(kCrcSmallMax + 64);
    for (auto &c : buf)
        c = static_cast<uint8_t>(rng());
    for (size_t len = kCrcSmallMin; len < kCrcSmallMax; ++len)
        for (size_t off : {0u, 3u, 16u, 29u})
            ASSERT_EQ(crc32_small(buf.data() + off, len),
                      crc32_eth_kernel(buf.data() + off, len, CrcKernel::Dpdk))
                << "len " << len << " off " << off;
}
