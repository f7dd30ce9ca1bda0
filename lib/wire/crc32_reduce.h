/* SPDX-License-Identifier: BSD-3-Clause */
/* The last step of every carry-less-multiply CRC-32 kernel here: a folded 16-byte block
 * to the 32-bit CRC. Internal linkage, as crc32_fold.h (translation units with different
 * -m flags include it). */
#pragma once

#include <cstdint>

#include <immintrin.h>

namespace droce::wire::crcmath {

/* The CRC of the 16-byte message acc (init-0 state, as the folds leave it) with the final
 * inversion: 128 -> 64 -> 32 bits in registers, the reduction rte_net_crc_calc(p, 16)
 * runs after it applies its init ~0 (which here would cancel against the init already
 * folded into acc). Inline, it spares a CRC a call through rte_net_crc's handler table
 * and a store and reload of the block: 11 ns of the 64 B write_bw client's frame
 * (crc32_small), ~15 ns of a 4 KiB frame's on each side (the fold kernels, bench/README
 * "Where 64 KiB goes on the AMD VM"). The multipliers are DPDK's kernel's for
 * CRC-32/Ethernet (rk5/rk6 for the 128 -> 64 fold; for Barrett, the 33-bit quotient
 * floor(x^64 / P) and P), so the result is the same bit for bit (test_wire_crc_small and
 * the wire_unit kernel tests check every length against the bitwise reference). */
__attribute__((target("pclmul,sse4.1"))) static inline uint32_t reduce128(__m128i acc) {
    const __m128i k56 = _mm_set_epi64x(0x163cd6124LL, 0xccaa009eLL);
    const __m128i k78 = _mm_set_epi64x(0x1db710641LL, 0x1f7011640LL);
    /* 128 -> 64: the low quadword moved 64 bits down onto the high one ... */
    __m128i t0 = _mm_xor_si128(_mm_clmulepi64_si128(acc, k56, 0x00), _mm_srli_si128(acc, 8));
    /* ... then its low 32 bits 32 further down. */
    const __m128i t1 = _mm_clmulepi64_si128(_mm_slli_si128(t0, 4), k56, 0x10);
    t0 = _mm_xor_si128(t1, t0);
    /* Barrett: 64 -> 32. */
    const __m128i lo3 = _mm_set_epi32(-1, -1, -1, 0), lo2 = _mm_set_epi32(0, 0, -1, -1);
    const __m128i a = _mm_and_si128(t0, lo3);
    __m128i b = _mm_xor_si128(_mm_clmulepi64_si128(a, k78, 0x00), a);
    b = _mm_and_si128(b, lo2);
    const __m128i c = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(b, k78, 0x10), b), a);
    return ~static_cast<uint32_t>(_mm_extract_epi32(c, 2));
}

} // namespace droce::wire::crcmath
