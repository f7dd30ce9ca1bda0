/* SPDX-License-Identifier: BSD-3-Clause */
/* Fold multipliers of the carry-less-multiply CRC-32 kernels, computed at compile time
 * from the polynomial (no magic numbers to get wrong by hand).
 *
 * Reflected domain (zlib's bit order): a 32-bit value stands for a polynomial of degree
 * < 32 with bit 31 = x^0, and P = 0xEDB88320 is x^32 + x^26 + ... + 1 reflected.
 *
 * A 16-byte block X loaded little-endian: its low quadword L stands for L(x) * x^64 and
 * its high quadword H for H(x) (bit j of a quadword <-> x^(63-j)). Moving the block D
 * bits further down the message multiplies it by x^D mod P. A carry-less product of a
 * quadword with (K << 1), K = x^e mod P, lands x^32 short of that (the product of a
 * 64-bit and a 33-bit reflected value spans 96 bits, read as x^0..x^127 of the block),
 * so L takes K = x^(D+32) and H x^(D-32). The sum of the two products is then a 128-bit
 * value congruent to X * x^D, to be xored into the block D bits later.
 *
 * Everything here has internal linkage: this header is included by translation units
 * built with different -m flags (crc32_vpclmul*.cpp), and an inline function with
 * external linkage would be merged across them by the linker. */
#pragma once

#include <cstdint>

namespace droce::wire::crcmath {

inline constexpr uint32_t kPoly = 0xEDB88320u;

/* a * b mod P, bit by bit. */
static constexpr uint32_t multmodp(uint32_t a, uint32_t b) {
    uint32_t m = 1u << 31, p = 0;
    for (;;) {
        if (a & m) {
            p ^= b;
            if ((a & (m - 1)) == 0)
                break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
    }
    return p;
}

/* x^n mod P by square-and-multiply. */
static constexpr uint32_t xpow(uint64_t n) {
    uint32_t r = 1u << 31;  /* x^0 */
    uint32_t sq = 1u << 30; /* x^1, squared every step: x^(2^k) */
    while (n) {
        if (n & 1)
            r = multmodp(r, sq);
        sq = multmodp(sq, sq);
        n >>= 1;
    }
    return r;
}

struct FoldK {
    uint64_t lo, hi; /* multipliers of the low and high quadword of a 16-byte block */
};

/* Multipliers that move a 16-byte block d bits (d >= 32, a multiple of 128) down. */
static constexpr FoldK fold_k(uint64_t d) {
    return {uint64_t{xpow(d + 32)} << 1, uint64_t{xpow(d - 32)} << 1};
}

} // namespace droce::wire::crcmath
