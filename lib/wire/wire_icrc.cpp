/* SPDX-License-Identifier: BSD-3-Clause */
/* rte_vect_{get,set}_max_simd_bitwidth() are experimental in DPDK 22.11 (see crc_init_once). */
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API
#endif
#include "wire_icrc.h"

#include <array>
#include <cstring>

#include <immintrin.h>
#include <rte_net_crc.h>
/* DPDK 22.11's rte_vect.h lacks extern "C" guards. */
extern "C" {
#include <rte_vect.h>
}

#include "crc32_fold.h"
#include "crc32_reduce.h"
#include "crc32_small.h"
#include "crc32_vpclmul.h"
#include "wire_headers.h"

namespace droce::wire {

namespace {

/* rte_net_crc_set_alg() is not thread-safe: pick the algorithm once, on first use (after
 * every constructor, DPDK's included). SSE4.2/PCLMULQDQ when the CPU has it; DPDK falls
 * back to the scalar tables otherwise. Works without rte_eal_init(), with one catch:
 * rte_net_crc only takes a SIMD path when rte_vect_get_max_simd_bitwidth() >= 128, and
 * before rte_eal_init() that value is 0 (EAL sets its default, 256, during init). So when
 * it is still 0 we set EAL's own default; rte_eal_init() later resets it anyway, and a
 * user's --force-max-simd-bitwidth (set by EAL init) is left alone. */
inline void crc_init_once() {
    static const bool done = [] {
        if (rte_vect_get_max_simd_bitwidth() == 0)
            rte_vect_set_max_simd_bitwidth(RTE_VECT_DEFAULT_SIMD_BITWIDTH);
        rte_net_crc_set_alg(RTE_NET_CRC_SSE42);
        return true;
    }();
    (void)done;
}

/* ---- CRC-32 combination (zlib's crc32_combine, reflected domain: x^0 is bit 31) ----
 * The polynomial arithmetic is crc32_fold.h's, shared with the folding kernels. */
using crcmath::multmodp;

/* x^(2^k) mod P, k = 0..31. */
constexpr std::array<uint32_t, 32> make_x2n() {
    std::array<uint32_t, 32> t{};
    uint32_t p = 1u << 30; /* x^1 */
    t[0] = p;
    for (int n = 1; n < 32; ++n)
        t[n] = p = multmodp(p, p);
    return t;
}
constexpr std::array<uint32_t, 32> kX2n = make_x2n();

/* x^(n * 2^k) mod P. */
constexpr uint32_t x2nmodp(uint64_t n, unsigned k) {
    uint32_t p = 1u << 31; /* x^0 */
    while (n) {
        if (n & 1)
            p = multmodp(kX2n[k & 31], p);
        n >>= 1;
        ++k;
    }
    return p;
}

/* x^(8n) for n = lo + 128*hi, lo, hi < 128: two small tables, one extra multiply. */
struct PowTables {
    std::array<uint32_t, 128> lo{};
    std::array<uint32_t, 128> hi{};
};
constexpr PowTables make_pow_tables() {
    PowTables t{};
    for (uint32_t i = 0; i < 128; ++i) {
        t.lo[i] = x2nmodp(i, 3);
        t.hi[i] = x2nmodp(uint64_t{i} * 128, 3);
    }
    return t;
}
constexpr PowTables kPow = make_pow_tables();

/* Bitwise-table CRC-32 with a running state: slow path for frames longer than the
 * scratch buffer of icrc_compute(). */
constexpr std::array<uint32_t, 256> make_crc_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k)
            c = (c & 1) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
        t[i] = c;
    }
    return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

inline uint32_t crc_update(uint32_t state, const uint8_t *p, size_t len) {
    for (size_t i = 0; i < len; ++i)
        state = kCrcTable[(state ^ p[i]) & 0xFF] ^ (state >> 8);
    return state;
}

inline size_t ip_len(bool ipv6) { return ipv6 ? kIpv6Len : kIpv4Len; }

/* Sets the variant fields of IP/UDP/BTH (hdr starts at the IP header) to ones. */
inline void mask_variant(uint8_t *hdr, bool ipv6) {
    if (ipv6) {
        hdr[0] |= 0x0F;                  /* traffic class high nibble */
        hdr[1] = hdr[2] = hdr[3] = 0xFF; /* traffic class low nibble + flow label */
        hdr[7] = 0xFF;                   /* hop limit */
    } else {
        hdr[1] = 0xFF;            /* TOS */
        hdr[8] = 0xFF;            /* TTL */
        hdr[10] = hdr[11] = 0xFF; /* header checksum */
    }
    uint8_t *udp = hdr + ip_len(ipv6);
    udp[6] = udp[7] = 0xFF;  /* UDP checksum */
    udp[kUdpLen + 4] = 0xFF; /* BTH FECN/BECN/resv */
}

/* ---- CRC-32 by four-way PCLMULQDQ folding ----
 * DPDK 22.11's SSE4.2 rte_net_crc folds one 16-byte block at a time, each fold waiting
 * for the previous carry-less multiply; a 128-byte RoCE frame is then a serial chain of
 * eight. Here four independent lanes fold 64 bytes per step, are merged at the end and
 * the last 16 bytes go through rte_net_crc (which also applies the final inversion).
 *
 * Reflected domain, a 16-byte block X loaded little-endian: its low quadword L stands
 * for L(x)*x^64 and its high quadword H for H(x) (bit j of a quadword <-> x^(63-j)).
 * Moving the block D bits further down the message multiplies it by x^D mod P; a
 * carry-less product of a quadword with (K << 1), K = x^e mod P in zlib's bit order
 * (bit 31 = x^0), lands x^32 short of that, so L takes K = x^(D+32) and H x^(D-32).
 * The CRC with init ~0 is the init-0 CRC of the message with its first four bytes
 * inverted; leading zero bytes do not change an init-0 CRC, which is how a length that
 * is not a multiple of 16 is aligned (zeros in front of the first block). */
struct FoldK {
    uint64_t lo, hi; /* multipliers of the low and high quadword */
};
constexpr FoldK fold_k(uint64_t d) {
    return {uint64_t{x2nmodp(d + 32, 0)} << 1, uint64_t{x2nmodp(d - 32, 0)} << 1};
}
constexpr FoldK kFold128 = fold_k(128), kFold256 = fold_k(256), kFold384 = fold_k(384),
                kFold512 = fold_k(512);

__attribute__((target("pclmul,sse4.1"))) inline __m128i fold(__m128i x, __m128i k) {
    /* k = {lo multiplier, hi multiplier} */
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}
__attribute__((target("pclmul,sse4.1"))) inline __m128i kvec(const FoldK &k) {
    return _mm_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo));
}
inline __m128i load(const uint8_t *p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
}

/* Below this, the fixed cost here (head buffer, the final 16 bytes through rte_net_crc)
 * loses to rte_net_crc's single chain (bench_wire BM_IcrcInplace/64: 30 -> 41 ns with 64;
 * 1024: 153 -> 75 ns, 4096: 542 -> 205 ns). */
constexpr size_t kFoldMin = 256;

/* The leading zeros that make the message a whole number of 16-byte blocks. */
inline size_t fold_lead(size_t len) { return (16 - (len & 15)) & 15; }

/* Optional mask of a fold kernel (icrc_compute_contig): message bytes [0, 68) are read as
 * (byte | mask), with the mask placed 16 bytes in so that the stream position j (the
 * message behind `lead` zeros) takes b[16 - lead + j]; zeros around it, 128 bytes of
 * stream covered. */
struct MaskPad {
    alignas(16) uint8_t b[16 + 128];
};
inline __m128i mask16(const MaskPad *m, size_t lead, size_t j) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(m->b + 16 - lead + j));
}

/* The first two 16-byte blocks of p (len >= 32), zero-filled in front so that every later
 * block is a whole one, masked (when m is given) and with the init (~0) applied to the
 * first four message bytes. Returns how many bytes of p they hold. */
inline size_t fold_head(const uint8_t *p, size_t len, uint8_t head[32],
                        const MaskPad *m = nullptr) {
    const size_t lead = fold_lead(len);
    std::memset(head, 0, 32);
    std::memcpy(head + lead, p, 32 - lead);
    if (m != nullptr)
        for (size_t j = 0; j < 32; j += 16)
            _mm_storeu_si128(reinterpret_cast<__m128i *>(head + j),
                             _mm_or_si128(load(head + j), mask16(m, lead, j)));
    for (size_t i = 0; i < 4; ++i)
        head[lead + i] ^= 0xFF;
    return 32 - lead;
}

/* acc holds the message's init-0 CRC state. */
__attribute__((target("pclmul,sse4.1"))) inline uint32_t fold_finish(__m128i acc) {
    return crcmath::reduce128(acc);
}

/* len >= kFoldMin. */
__attribute__((target("pclmul,sse4.1"))) uint32_t crc32_fold4(const uint8_t *p, size_t len) {
    alignas(16) uint8_t head[32];
    const size_t h = fold_head(p, len, head);
    const uint8_t *q = p + h; /* 16-byte blocks from here to the end */
    size_t left = len - h;
    __m128i l0 = _mm_load_si128(reinterpret_cast<const __m128i *>(head));
    __m128i l1 = _mm_load_si128(reinterpret_cast<const __m128i *>(head + 16));
    __m128i acc;
    if (left >= 32) {
        __m128i l2 = load(q), l3 = load(q + 16);
        q += 32;
        left -= 32;
        const __m128i k4 = kvec(kFold512);
        while (left >= 64) {
            l0 = _mm_xor_si128(fold(l0, k4), load(q));
            l1 = _mm_xor_si128(fold(l1, k4), load(q + 16));
            l2 = _mm_xor_si128(fold(l2, k4), load(q + 32));
            l3 = _mm_xor_si128(fold(l3, k4), load(q + 48));
            q += 64;
            left -= 64;
        }
        acc = _mm_xor_si128(_mm_xor_si128(fold(l0, kvec(kFold384)), fold(l1, kvec(kFold256))),
                            _mm_xor_si128(fold(l2, kvec(kFold128)), l3));
    } else {
        acc = _mm_xor_si128(fold(l0, kvec(kFold128)), l1);
    }
    const __m128i k1 = kvec(kFold128);
    while (left >= 16) {
        acc = _mm_xor_si128(fold(acc, k1), load(q));
        q += 16;
        left -= 16;
    }
    return fold_finish(acc);
}

/* ---- The same with 256-bit VPCLMULQDQ (AVX2 encoding: no AVX-512 needed) ----
 * Four lanes of 32 bytes fold 128 bytes per step, twice the 128-bit kernel's work per
 * carry-less multiply instruction; both 16-byte halves of a lane move by the same 1024
 * bits, so one broadcast multiplier serves both. At the end the lanes fold into one
 * 32-byte value, its low (earlier) half into its high half, and the 16-byte tail loop of
 * the 128-bit kernel finishes.
 *
 * Copy = true also stores every byte read to dst (same offsets as p): the copy rides in
 * the load -> fold chain, whose limit is the multiplier's throughput, not the stores. */
constexpr FoldK kFold768 = fold_k(768), kFold1024 = fold_k(1024);

__attribute__((target("avx2,vpclmulqdq,pclmul"))) inline __m256i fold256(__m256i x, __m256i k) {
    return _mm256_xor_si256(_mm256_clmulepi64_epi128(x, k, 0x00),
                            _mm256_clmulepi64_epi128(x, k, 0x11));
}
__attribute__((target("avx2,vpclmulqdq,pclmul"))) inline __m256i kvec256(const FoldK &k) {
    return _mm256_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo),
                             static_cast<long long>(k.hi), static_cast<long long>(k.lo));
}

/* 32 bytes at p + o, also stored at dst + o when copying. */
template <bool Copy>
__attribute__((target("avx2,vpclmulqdq,pclmul"))) inline __m256i ld256(const uint8_t *p,
                                                                       uint8_t *dst, size_t o) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + o));
    if constexpr (Copy)
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + o), v);
    else
        (void)dst;
    return v;
}

/* len >= kFold256Min: the head (32 bytes) plus three more lanes (96) and one whole step. */
constexpr size_t kFold256Min = 256;

template <bool Copy>
__attribute__((target("avx2,vpclmulqdq,pclmul,sse4.1"))) uint32_t
crc32_fold256(const uint8_t *p, size_t len, uint8_t *dst, const MaskPad *m = nullptr) {
    alignas(32) uint8_t head[32];
    size_t o = fold_head(p, len, head, m); /* offset of the next whole 16-byte block */
    if constexpr (Copy)
        std::memcpy(dst, p, o);
    __m256i y0 = _mm256_load_si256(reinterpret_cast<const __m256i *>(head));
    __m256i y1 = ld256<Copy>(p, dst, o), y2 = ld256<Copy>(p, dst, o + 32),
            y3 = ld256<Copy>(p, dst, o + 64);
    if (m != nullptr) { /* stream bytes 32..96 (the mask ends before 16 + 68) */
        const uint8_t *mb = m->b + 16 - fold_lead(len);
        y1 = _mm256_or_si256(y1, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(mb + 32)));
        y2 = _mm256_or_si256(y2, _mm256_loadu_si256(reinterpret_cast<const __m256i *>(mb + 64)));
    }
    o += 96;
    const __m256i k4 = kvec256(kFold1024);
    while (len - o >= 128) {
        y0 = _mm256_xor_si256(fold256(y0, k4), ld256<Copy>(p, dst, o));
        y1 = _mm256_xor_si256(fold256(y1, k4), ld256<Copy>(p, dst, o + 32));
        y2 = _mm256_xor_si256(fold256(y2, k4), ld256<Copy>(p, dst, o + 64));
        y3 = _mm256_xor_si256(fold256(y3, k4), ld256<Copy>(p, dst, o + 96));
        o += 128;
    }
    __m256i y = _mm256_xor_si256(
        _mm256_xor_si256(fold256(y0, kvec256(kFold768)), fold256(y1, kvec256(kFold512))),
        _mm256_xor_si256(fold256(y2, kvec256(kFold256)), y3));
    while (len - o >= 32) {
        y = _mm256_xor_si256(fold256(y, kvec256(kFold256)), ld256<Copy>(p, dst, o));
        o += 32;
    }
    __m128i acc = _mm_xor_si128(fold(_mm256_castsi256_si128(y), kvec(kFold128)),
                                _mm256_extracti128_si256(y, 1));
    if (len - o >= 16) {
        const __m128i v = load(p + o);
        if constexpr (Copy)
            _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + o), v);
        acc = _mm_xor_si128(fold(acc, kvec(kFold128)), v);
    }
    return fold_finish(acc);
}

/* ---- 512-bit VPCLMULQDQ (AVX-512), where the CPU has it ----
 * Four lanes of 64 bytes fold 256 bytes per step (2048 bits); at the end the lanes fold
 * into one 64-byte value, its four blocks into one, and the 16-byte loop finishes. */
constexpr FoldK kFold1536 = fold_k(1536), kFold2048 = fold_k(2048);
constexpr size_t kFold512Min = 1024;

__attribute__((target("avx512f,vpclmulqdq,pclmul"))) inline __m512i fold512(__m512i x, __m512i k) {
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00),
                            _mm512_clmulepi64_epi128(x, k, 0x11));
}
__attribute__((target("avx512f,vpclmulqdq,pclmul"))) inline __m512i kvec512(const FoldK &k) {
    const auto lo = static_cast<long long>(k.lo), hi = static_cast<long long>(k.hi);
    return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}
__attribute__((target("avx512f,vpclmulqdq,pclmul"))) inline __m512i ld512(const uint8_t *p) {
    return _mm512_loadu_si512(p);
}

/* Software prefetch distance of the 512-bit loop (bench_wire BM_ParseWrite4K/4096, the
 * frame in L3: 165 -> 152-156 ns; in L1/L2 no change). */
constexpr size_t kFold512Prefetch = 1024;

/* len >= kFold512Min. */
__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.1"))) uint32_t
crc32_fold512(const uint8_t *p, size_t len, const MaskPad *m = nullptr) {
    alignas(32) uint8_t head[32];
    size_t o = fold_head(p, len, head, m);
    /* (GCC 12's cast/extract/broadcast intrinsics start from an "undefined" vector that
     * -Werror=uninitialized rejects: whole vectors through memory instead.) */
    alignas(64) uint8_t blk[64];
    std::memcpy(blk, head, 32);
    std::memcpy(blk + 32, p + o, 32);
    const uint8_t *mb = m != nullptr ? m->b + 16 - fold_lead(len) : nullptr;
    if (mb != nullptr) /* stream bytes 32..64 */
        for (size_t j = 32; j < 64; j += 16)
            _mm_store_si128(reinterpret_cast<__m128i *>(blk + j),
                            _mm_or_si128(load(blk + j), load(mb + j)));
    __m512i z0 = _mm512_load_si512(blk);
    __m512i z1 = ld512(p + o + 32), z2 = ld512(p + o + 96), z3 = ld512(p + o + 160);
    if (mb != nullptr) /* stream bytes 64..128 */
        z1 = _mm512_or_si512(z1, ld512(mb + 64));
    o += 224;
    const __m512i k4 = kvec512(kFold2048);
    while (len - o >= 256) {
        /* 1 KiB ahead: a frame another core wrote (virtio_user RX, shared memory) comes
         * from its cache or L3 and the loop waited on its loads; within the buffer only. */
        if (len - o >= kFold512Prefetch + 256)
            for (size_t j = 0; j < 256; j += 64)
                _mm_prefetch(reinterpret_cast<const char *>(p + o + kFold512Prefetch + j),
                             _MM_HINT_T0);
        z0 = _mm512_xor_si512(fold512(z0, k4), ld512(p + o));
        z1 = _mm512_xor_si512(fold512(z1, k4), ld512(p + o + 64));
        z2 = _mm512_xor_si512(fold512(z2, k4), ld512(p + o + 128));
        z3 = _mm512_xor_si512(fold512(z3, k4), ld512(p + o + 192));
        o += 256;
    }
    __m512i z = _mm512_xor_si512(
        _mm512_xor_si512(fold512(z0, kvec512(kFold1536)), fold512(z1, kvec512(kFold1024))),
        _mm512_xor_si512(fold512(z2, kvec512(kFold512)), z3));
    while (len - o >= 64) {
        z = _mm512_xor_si512(fold512(z, kvec512(kFold512)), ld512(p + o));
        o += 64;
    }
    _mm512_store_si512(blk, z);
    __m128i acc = _mm_xor_si128(
        _mm_xor_si128(fold(load(blk), kvec(kFold384)), fold(load(blk + 16), kvec(kFold256))),
        _mm_xor_si128(fold(load(blk + 32), kvec(kFold128)), load(blk + 48)));
    const __m128i k1 = kvec(kFold128);
    while (len - o >= 16) {
        acc = _mm_xor_si128(fold(acc, k1), load(p + o));
        o += 16;
    }
    return fold_finish(acc);
}

bool have_vpclmul512() {
    static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") &&
                            __builtin_cpu_supports("avx512f") &&
                            __builtin_cpu_supports("vpclmulqdq");
    return yes;
}

bool have_pclmul() {
    static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    return yes;
}
bool have_vpclmul256() {
    static const bool yes =
        have_pclmul() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("vpclmulqdq");
    return yes;
}

} // namespace

/* Below this, crc32_eth keeps rte_net_crc: the folds' fixed cost (head, the lanes' merge,
 * the final 16 bytes through rte_net_crc) is ~24 ns (bench_wire BM_Crc32Kernel: 256 B
 * DPDK 16 ns, 128-bit fold 32, 256-bit 32; 512 B 35 / 40 / 35; 1 KiB 94 / 55 / 42;
 * 4 KiB 513 / 189 / 107). */
constexpr size_t kAutoFoldMin = 512;
/* 512-bit from 2 KiB (1 KiB: 41 ns vs the 256-bit kernel's 39; 4 KiB: 58 vs 89). */
constexpr size_t kAuto512Min = 2048;
uint32_t crc32_eth_kernel(const uint8_t *p, size_t len, CrcKernel k) {
    crc_init_once();
    /* Short runs (small messages' frames, ACKs): rte_net_crc's serial chain costs ~2x. */
    if ((k == CrcKernel::Auto || k == CrcKernel::Small) && len < kAutoFoldMin &&
        len >= kCrcSmallMin && kCrcSmallCpu)
        return crc32_small(p, len);
    if (k == CrcKernel::Auto)
        k = len < kAutoFoldMin                        ? CrcKernel::Dpdk
            : len >= kAuto512Min && have_vpclmul512() ? CrcKernel::Fold512
            : have_vpclmul256()                       ? CrcKernel::Fold256
            : have_pclmul()                           ? CrcKernel::Fold128
                                                      : CrcKernel::Dpdk;
    if (k == CrcKernel::Fold512 && len >= kFold512Min && have_vpclmul512())
        return crc32_fold512(p, len);
    if ((k == CrcKernel::Fold256 || k == CrcKernel::Fold512) && len >= kFold256Min &&
        have_vpclmul256())
        return crc32_fold256<false>(p, len, nullptr);
    if (k != CrcKernel::Dpdk && len >= kFoldMin && have_pclmul())
        return crc32_fold4(p, len);
    /* Same value as zlib crc32(0, p, len). */
    return rte_net_crc_calc(p, static_cast<uint32_t>(len), RTE_NET_CRC32_ETH);
}

bool crc_kernel_available(CrcKernel k) {
    switch (k) {
    case CrcKernel::Fold512:
        return have_vpclmul512();
    case CrcKernel::Fold256:
        return have_vpclmul256();
    case CrcKernel::Fold128:
        return have_pclmul();
    case CrcKernel::Small:
        return kCrcSmallCpu;
    default:
        return true;
    }
}

uint32_t crc32_eth(const uint8_t *p, size_t len) {
    return crc32_eth_kernel(p, len, CrcKernel::Auto);
}

uint32_t crc32_eth_copy(uint8_t *dst, const uint8_t *src, size_t len) {
    crc_init_once();
    if (len >= kFold256Min && have_vpclmul256())
        return crc32_fold256<true>(src, len, dst);
    std::memcpy(dst, src, len);
    return crc32_eth(dst, len);
}

namespace {
/* a * b mod P with one carry-less multiply: the 63-bit product of two reflected 32-bit
 * values, shifted up one, is the reflected 64-bit product; its high half is already
 * reduced (x^0..x^31) and its low half stands for L(x) * x^32, which is what the
 * byte-table CRC register makes of L after four zero bytes. */
__attribute__((target("pclmul,sse4.1"))) uint32_t multmodp_clmul(uint32_t a, uint32_t b) {
    const __m128i prod = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(a)),
                                              _mm_cvtsi32_si128(static_cast<int>(b)), 0x00);
    const uint64_t v = static_cast<uint64_t>(_mm_cvtsi128_si64(prod)) << 1;
    uint32_t lo = static_cast<uint32_t>(v);
    for (int i = 0; i < 4; ++i)
        lo = kCrcTable[lo & 0xFF] ^ (lo >> 8);
    return static_cast<uint32_t>(v >> 32) ^ lo;
}

inline uint32_t mulmod(uint32_t a, uint32_t b) {
    return have_pclmul() ? multmodp_clmul(a, b) : multmodp(a, b);
}
} // namespace

uint32_t crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
    if (len_b == 0)
        return crc_a;
    /* x^(8 len_b): tables for < 2^14 bytes (one product), square-and-multiply beyond. */
    uint32_t x;
    if (len_b < 128)
        x = kPow.lo[len_b];
    else if (len_b < 128 * 128)
        x = mulmod(kPow.hi[len_b >> 7], kPow.lo[len_b & 127]);
    else
        x = x2nmodp(len_b, 3);
    return mulmod(x, crc_a) ^ crc_b;
}

namespace {
/* A folded 16-byte block (crc32_fold_gather*) to the final CRC, as fold_finish. */
__attribute__((target("pclmul,sse4.1"))) uint32_t finish_block(const uint8_t acc[16]) {
    return crcmath::reduce128(_mm_loadu_si128(reinterpret_cast<const __m128i *>(acc)));
}
} // namespace

uint32_t crc32_eth_gather_kernel(uint32_t crc, const ByteSpan *segs, uint32_t nsegs, CrcKernel k) {
    crc_init_once();
    size_t total = 0;
    for (uint32_t i = 0; i < nsegs; ++i)
        total += segs[i].len;
    if (k == CrcKernel::Auto)
        k = total < kAutoFoldMin                        ? CrcKernel::Dpdk
            : total >= kAuto512Min && have_vpclmul512() ? CrcKernel::Fold512
                                                        : CrcKernel::Fold256;
    uint8_t acc[16];
    if (k == CrcKernel::Fold512 && total >= detail::kGather512Min && have_vpclmul512()) {
        detail::crc32_fold_gather512(segs, total, ~crc, acc);
        return finish_block(acc);
    }
    if ((k == CrcKernel::Fold256 || k == CrcKernel::Fold512) && total >= detail::kGather256Min &&
        have_vpclmul256()) {
        detail::crc32_fold_gather256(segs, total, ~crc, acc);
        return finish_block(acc);
    }
    for (uint32_t i = 0; i < nsegs; ++i)
        if (segs[i].len)
            crc = crc32_combine(crc, crc32_eth(segs[i].addr, segs[i].len), segs[i].len);
    return crc;
}

uint32_t crc32_eth_gather(uint32_t crc, const ByteSpan *segs, uint32_t nsegs) {
    return crc32_eth_gather_kernel(crc, segs, nsegs, CrcKernel::Auto);
}

uint32_t icrc_compute_segments(const uint8_t *l3, size_t l3_len, const ByteSpan *segs,
                               uint32_t nsegs, bool ipv6) {
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    if (l3_len < hlen)
        return 0;
    uint8_t hdr[8 + kIpv6Len + kUdpLen + kBthLen];
    std::memset(hdr, 0xFF, 8);
    std::memcpy(hdr + 8, l3, hlen);
    mask_variant(hdr + 8, ipv6);
    /* One gather pass over masked headers, the rest of l3 and the segments where the
     * vector fold runs: bench_wire BM_IcrcSegments4K (a 4 KiB payload in 2 KiB mbufs)
     * paid the fold's fixed cost and a combine per segment. */
    constexpr uint32_t kMaxGather = 40;
    if (nsegs + 2 <= kMaxGather && have_vpclmul256()) {
        size_t total = 8 + l3_len;
        ByteSpan g[kMaxGather];
        g[0] = {hdr, static_cast<uint32_t>(8 + hlen)};
        g[1] = {l3 + hlen, static_cast<uint32_t>(l3_len - hlen)};
        for (uint32_t i = 0; i < nsegs; ++i) {
            g[2 + i] = segs[i];
            total += segs[i].len;
        }
        if (total >= kAutoFoldMin)
            return crc32_eth_gather(0, g, nsegs + 2);
    }
    uint32_t crc = crc32_eth(hdr, 8 + hlen);
    if (l3_len > hlen)
        crc = crc32_combine(crc, crc32_eth(l3 + hlen, l3_len - hlen), l3_len - hlen);
    for (uint32_t i = 0; i < nsegs; ++i)
        if (segs[i].len)
            crc = crc32_combine(crc, crc32_eth(segs[i].addr, segs[i].len), segs[i].len);
    return crc;
}

/* Slow path without scratch buffer: table CRC over the masked headers then the rest. */
uint32_t icrc_compute_reference(const uint8_t *l3, size_t len, bool ipv6) {
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    if (len < hlen)
        return 0;
    uint8_t hdr[kIpv6Len + kUdpLen + kBthLen];
    std::memcpy(hdr, l3, hlen);
    mask_variant(hdr, ipv6);
    static constexpr uint8_t kOnes[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    uint32_t st = crc_update(0xFFFFFFFFu, kOnes, sizeof(kOnes));
    st = crc_update(st, hdr, hlen);
    st = crc_update(st, l3 + hlen, len - hlen);
    return ~st;
}

uint32_t detail::icrc_compute_inplace_any(uint8_t *l3, size_t len, bool ipv6) {
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    if (len < hlen)
        return 0;
    /* Small frames on a CPU with PCLMUL never get here (icrc_compute_inplace takes them
     * to icrc_small): mask in place, one pass, restore. */
    uint8_t *udp = l3 + ip_len(ipv6);
    uint8_t saved_prefix[8];
    uint8_t saved_ip[12];
    std::memcpy(saved_prefix, l3 - 8, 8);
    std::memcpy(saved_ip, l3, 12); /* covers every variant IPv4 / IPv6 field */
    const uint8_t saved_udp_csum0 = udp[6], saved_udp_csum1 = udp[7];
    const uint8_t saved_bth4 = udp[kUdpLen + 4];

    std::memset(l3 - 8, 0xFF, 8);
    mask_variant(l3, ipv6);
    const uint32_t crc = crc32_eth(l3 - 8, len + 8);

    std::memcpy(l3 - 8, saved_prefix, 8);
    std::memcpy(l3, saved_ip, 12);
    udp[6] = saved_udp_csum0;
    udp[7] = saved_udp_csum1;
    udp[kUdpLen + 4] = saved_bth4;
    return crc;
}

namespace {
/* Every ICRC mask sets bits to one, so a masked frame is raw | M with M the masks applied
 * to zeros: built from mask_variant itself, the one definition every path uses. */
MaskPad make_mask_pad(bool ipv6) {
    MaskPad m{};
    std::memset(m.b + 16, 0xFF, 8);
    mask_variant(m.b + 16 + 8, ipv6);
    return m;
}
const MaskPad kMaskV4 = make_mask_pad(false), kMaskV6 = make_mask_pad(true);
} // namespace

uint32_t detail::icrc_compute_contig_any(const uint8_t *l3, size_t len, bool ipv6) {
    crc_init_once();
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    const size_t n = 8 + len;
    const MaskPad *const m = ipv6 ? &kMaskV6 : &kMaskV4;
    if (len >= hlen) {
        /* The kernels crc32_eth would pick for n bytes, masks applied as they load. */
        if (n >= kAuto512Min && have_vpclmul512())
            return crc32_fold512(l3 - 8, n, m);
        if (n >= kAutoFoldMin && have_vpclmul256())
            return crc32_fold256<false>(l3 - 8, n, nullptr, m);
    }
    return icrc_compute(l3, len, ipv6);
}

uint32_t icrc_compute(const uint8_t *l3, size_t len, bool ipv6) {
    /* Short frames: read in place with the masks applied in registers (crc32_small.h).
     * Up to 1 KiB: one copy to the stack and one CRC pass beat two CRC calls plus a
     * combine (bench_engine WireToCompletion/64). Larger ones: masked headers on the
     * stack, the rest CRC'd where it lies, joined by crc32_combine. */
    constexpr size_t kCopyMax = 1024;
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    if (detail::icrc_small_takes(len, ipv6)) { /* no copy */
        crc_init_once();
        return icrc_small(l3, len, ipv6);
    }
    if (len >= hlen && len <= kCopyMax) {
        uint8_t buf[8 + kCopyMax];
        std::memset(buf, 0xFF, 8);
        std::memcpy(buf + 8, l3, len);
        mask_variant(buf + 8, ipv6);
        return crc32_eth(buf, 8 + len);
    }
    return icrc_compute_segments(l3, len, nullptr, 0, ipv6);
}


} // namespace droce::wire
