/* SPDX-License-Identifier: BSD-3-Clause */
/* 256-bit VPCLMULQDQ gather CRC (AVX2 encoding, no AVX-512). Built with -mavx2
 * -mvpclmulqdq -mpclmul (lib/wire/meson.build): only called where the CPU has them. */
#include "crc32_gather.h"
#include "crc32_vpclmul.h"

namespace droce::wire::detail {
namespace {

/* 32-byte vectors: two 16-byte blocks, both moved by the same distance, so one
 * multiplier pair broadcast to both 128-bit halves serves them. */
struct V256 {
    using T = __m256i;
    static constexpr size_t W = 32;
    static T load(const uint8_t *p) { return _mm256_loadu_si256(reinterpret_cast<const T *>(p)); }
    static T xor_(T a, T b) { return _mm256_xor_si256(a, b); }
    static T fold(T x, T k) {
        return _mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
                                _mm256_clmulepi64_epi128(x, k, 0x11));
    }
    static T kvec(crcmath::FoldK k) {
        return _mm256_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo),
                                 static_cast<long long>(k.hi), static_cast<long long>(k.lo));
    }
    /* The low (earlier) block moves 128 bits onto the high one. */
    static __m128i reduce(T x) {
        return _mm_xor_si128(
            gather::fold128(_mm256_castsi256_si128(x), gather::kvec128(crcmath::fold_k(128))),
            _mm256_extracti128_si256(x, 1));
    }
};

} // namespace

void crc32_fold_gather256(const ByteSpan *spans, size_t total, uint32_t state, uint8_t acc[16]) {
    gather::fold_gather<V256>(spans, total, state, acc);
}

} // namespace droce::wire::detail
