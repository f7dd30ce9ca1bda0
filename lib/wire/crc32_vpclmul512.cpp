/* SPDX-License-Identifier: BSD-3-Clause */
/* 512-bit VPCLMULQDQ gather CRC. Built with -mavx512f -mvpclmulqdq -mpclmul
 * (lib/wire/meson.build): only called where the CPU has them. */
#include "crc32_gather.h"
#include "crc32_vpclmul.h"

namespace droce::wire::detail {
namespace {

/* 64-byte vectors: four 16-byte blocks, all moved by the same distance. */
struct V512 {
    using T = __m512i;
    static constexpr size_t W = 64;
    static T load(const uint8_t *p) { return _mm512_loadu_si512(p); }
    static T xor_(T a, T b) { return _mm512_xor_si512(a, b); }
    static T fold(T x, T k) {
        return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                                _mm512_clmulepi64_epi128(x, k, 0x11));
    }
    static T kvec(crcmath::FoldK k) {
        const auto lo = static_cast<long long>(k.lo), hi = static_cast<long long>(k.hi);
        return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
    }
    /* Block j of four moves (3 - j) * 128 bits onto the last. (Through memory: GCC 12's
     * extract intrinsics start from an "undefined" vector that -Werror=uninitialized
     * rejects.) */
    static __m128i reduce(T x) {
        alignas(64) uint8_t b[64];
        _mm512_store_si512(b, x);
        using gather::fold128, gather::kvec128, gather::ld128;
        return _mm_xor_si128(
            _mm_xor_si128(fold128(ld128(b), kvec128(crcmath::fold_k(384))),
                          fold128(ld128(b + 16), kvec128(crcmath::fold_k(256)))),
            _mm_xor_si128(fold128(ld128(b + 32), kvec128(crcmath::fold_k(128))), ld128(b + 48)));
    }
};

} // namespace

void crc32_fold_gather512(const ByteSpan *spans, size_t total, uint32_t state, uint8_t acc[16]) {
    gather::fold_gather<V512>(spans, total, state, acc);
}

} // namespace droce::wire::detail
