/* SPDX-License-Identifier: BSD-3-Clause */
/* RSS steering: droce's Toeplitz hash against published verification vectors and an
 * independent bit-by-bit implementation, and the source-port picker landing packets on
 * the wanted queue. */
#include <cstdint>

#include <gtest/gtest.h>

#include "engine_rss.h"

using namespace droce::engine;

namespace {

/* Toeplitz, straight from its definition: for every set bit of the input (MSB first),
 * XOR in the 32 key bits starting at that bit position. */
uint32_t toeplitz_ref(const uint8_t *key, const uint8_t *in, size_t n) {
    uint32_t h = 0;
    for (size_t i = 0; i < n * 8; ++i)
        if (in[i / 8] & (0x80 >> (i % 8))) {
            uint32_t w = 0;
            for (size_t b = 0; b < 32; ++b)
                w = (w << 1) | ((key[(i + b) / 8] >> (7 - (i + b) % 8)) & 1);
            h ^= w;
        }
    return h;
}

uint32_t ref_ipv4_udp(uint32_t s, uint32_t d, uint16_t sp, uint16_t dp) {
    const uint8_t in[12] = {uint8_t(s >> 24), uint8_t(s >> 16), uint8_t(s >> 8),  uint8_t(s),
                            uint8_t(d >> 24), uint8_t(d >> 16), uint8_t(d >> 8),  uint8_t(d),
                            uint8_t(sp >> 8), uint8_t(sp),      uint8_t(dp >> 8), uint8_t(dp)};
    return toeplitz_ref(kDroceRssKey, in, sizeof in);
}

uint32_t ip(int a, int b, int c, int d) {
    return uint32_t(a) << 24 | uint32_t(b) << 16 | uint32_t(c) << 8 | uint32_t(d);
}

} // namespace

TEST(Rss, MicrosoftVerificationVectors) {
    /* "Verifying the RSS hash calculation", IPv4 with TCP/UDP ports, default key. */
    EXPECT_EQ(
        rss_hash_ipv4_udp(kDroceRssKey, ip(66, 9, 149, 187), ip(161, 142, 100, 80), 2794, 1766),
        0x51ccc178u);
    EXPECT_EQ(
        rss_hash_ipv4_udp(kDroceRssKey, ip(199, 92, 111, 2), ip(65, 69, 140, 83), 14230, 4739),
        0xc626b0eau);
    EXPECT_EQ(ref_ipv4_udp(ip(66, 9, 149, 187), ip(161, 142, 100, 80), 2794, 1766), 0x51ccc178u);
}

TEST(Rss, MatchesReferenceAndSteers) {
    const uint32_t a = ip(10, 77, 0, 1), b = ip(10, 77, 0, 2);
    for (uint32_t nq : {2u, 3u, 4u, 8u})
        for (uint32_t target = 0; target < nq; ++target) {
            const uint16_t sp = rss_pick_sport(kDroceRssKey, a, b, target, nq, 512, 0xC123);
            ASSERT_GE(sp, 0xC000);
            const uint32_t h = ref_ipv4_udp(a, b, sp, 4791);
            EXPECT_EQ(h, rss_hash_ipv4_udp(kDroceRssKey, a, b, sp, 4791));
            EXPECT_EQ(rss_queue(h, 512, nq), target) << "nq " << nq << " sport " << sp;
        }
    /* One queue, no table or an impossible target: the fallback. */
    EXPECT_EQ(rss_pick_sport(kDroceRssKey, a, b, 0, 1, 512, 0xC777), 0xC777);
    EXPECT_EQ(rss_pick_sport(kDroceRssKey, a, b, 0, 4, 0, 0xC777), 0xC777);
    EXPECT_EQ(rss_pick_sport(kDroceRssKey, a, b, 5, 4, 512, 0xC777), 0xC777);
}
