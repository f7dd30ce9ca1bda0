/* SPDX-License-Identifier: BSD-3-Clause */
/* CRC-32 folding over a gather list, one kernel body for two vector widths: included only
 * by crc32_vpclmul256.cpp (-mavx2 -mvpclmulqdq) and crc32_vpclmul512.cpp (-mavx512f
 * -mvpclmulqdq), each with its own vector policy. Everything has internal linkage (see
 * crc32_fold.h): the two instantiations must not be merged by the linker.
 *
 * The message M is the concatenation of the spans (any lengths, empty ones allowed). It is
 * folded as the stream S = zeros(lead) || M with |S| a multiple of 16: leading zero bytes
 * do not change a CRC whose initial state is 0, and a CRC with initial state s is the
 * init-0 CRC of M with s xored into its first four bytes (little-endian). The stream is
 * cut into 4W-byte chunks (W = vector bytes) regardless of where the spans end: a chunk
 * inside one span is read in place, one that straddles spans is gathered into a small
 * stack buffer first, so a frame in 2 KiB mbufs costs one kernel call, not one call and
 * one crc32_combine per segment (each with the fold's fixed cost). */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <immintrin.h>

#include "crc32_fold.h"
#include "wire_icrc.h"

namespace droce::wire::gather {
namespace {

/* Reads the message sequentially across its spans. */
struct Cursor {
    const ByteSpan *s;
    size_t off = 0;

    /* Copies the next n bytes to dst. */
    void copy(uint8_t *dst, size_t n) {
        while (n) {
            while (off == s->len) {
                ++s;
                off = 0;
            }
            const size_t avail = s->len - off, c = n < avail ? n : avail;
            std::memcpy(dst, s->addr + off, c);
            dst += c;
            off += c;
            n -= c;
        }
    }
    void skip_empty() {
        while (off == s->len) {
            ++s;
            off = 0;
        }
    }
    /* The next n bytes: in place when one span holds them, else gathered into stage. */
    const uint8_t *take(size_t n, uint8_t *stage) {
        skip_empty();
        if (s->len - off >= n) {
            const uint8_t *p = s->addr + off;
            off += n;
            return p;
        }
        copy(stage, n);
        return stage;
    }
};

inline __m128i fold128(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}
inline __m128i kvec128(crcmath::FoldK k) {
    return _mm_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo));
}
inline __m128i ld128(const uint8_t *p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
}

/* Folds S (state xored into M's first four bytes) down to one 16-byte block whose init-0
 * CRC is that of S, stored to acc. V: the vector policy (W bytes, load, fold, xor, kvec,
 * reduce to 16 bytes). total = |M| >= 4 * V::W. */
template <class V>
void fold_gather(const ByteSpan *spans, size_t total, uint32_t state, uint8_t acc_out[16]) {
    constexpr size_t W = V::W, kChunk = 4 * W;
    alignas(64) uint8_t stage[kChunk];
    Cursor cur{spans};
    const size_t lead = (16 - total % 16) % 16;
    size_t left = total + lead; /* bytes of S still to fold, a multiple of 16 */

    /* First chunk: the zeros in front, the initial state on the first four bytes. */
    std::memset(stage, 0, lead);
    cur.copy(stage + lead, kChunk - lead);
    for (size_t i = 0; i < 4; ++i)
        stage[lead + i] ^= static_cast<uint8_t>(state >> (8 * i));
    typename V::T x0 = V::load(stage), x1 = V::load(stage + W), x2 = V::load(stage + 2 * W),
                  x3 = V::load(stage + 3 * W);
    left -= kChunk;

    /* Four independent lanes: each fold waits only on its own lane's previous one. */
    const typename V::T kstep = V::kvec(crcmath::fold_k(8 * kChunk));
    /* The inner loop runs over whole chunks inside one span and calls nothing, so the
     * lanes stay in registers (a memcpy call in the loop body would make the compiler
     * keep them on the stack: every fold chain then waits on a store and a reload, 60%
     * slower at 4 KiB); a chunk that straddles spans is gathered outside it. */
    while (left >= kChunk) {
        cur.skip_empty();
        const size_t in_span = cur.s->len - cur.off;
        size_t run = (in_span < left ? in_span : left) / kChunk;
        const uint8_t *p = cur.s->addr + cur.off;
        if (run == 0) {
            p = cur.take(kChunk, stage);
            run = 1;
        } else {
            cur.off += run * kChunk;
        }
        left -= run * kChunk;
        for (; run; --run, p += kChunk) {
            x0 = V::xor_(V::fold(x0, kstep), V::load(p));
            x1 = V::xor_(V::fold(x1, kstep), V::load(p + W));
            x2 = V::xor_(V::fold(x2, kstep), V::load(p + 2 * W));
            x3 = V::xor_(V::fold(x3, kstep), V::load(p + 3 * W));
        }
    }
    /* Lanes into one: lane i is (3 - i) vectors ahead of the last. */
    const typename V::T k1 = V::kvec(crcmath::fold_k(8 * W));
    typename V::T x = V::xor_(V::xor_(V::fold(x0, V::kvec(crcmath::fold_k(8 * 3 * W))),
                                      V::fold(x1, V::kvec(crcmath::fold_k(8 * 2 * W)))),
                              V::xor_(V::fold(x2, k1), x3));
    while (left >= W) {
        x = V::xor_(V::fold(x, k1), V::load(cur.take(W, stage)));
        left -= W;
    }
    __m128i acc = V::reduce(x);
    const __m128i k16 = kvec128(crcmath::fold_k(128));
    while (left >= 16) {
        acc = _mm_xor_si128(fold128(acc, k16), ld128(cur.take(16, stage)));
        left -= 16;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i *>(acc_out), acc);
}

} // namespace
} // namespace droce::wire::gather
