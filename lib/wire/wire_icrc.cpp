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

/* ---- CRC-32 combination (zlib's crc32_combine, reflected domain: x^0 is bit 31) ---- */
constexpr uint32_t kPoly = 0xEDB88320u;

/* a * b mod P. */
constexpr uint32_t multmodp(uint32_t a, uint32_t b) {
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

inline uint32_t x8n(uint64_t n) {
    if (n < 128)
        return kPow.lo[n];
    if (n < 128 * 128)
        return multmodp(kPow.hi[n >> 7], kPow.lo[n & 127]);
    return x2nmodp(n, 3);
}

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

/* len >= kFoldMin. */
__attribute__((target("pclmul,sse4.1"))) uint32_t crc32_fold4(const uint8_t *p, size_t len) {
    const size_t r = len & 15;
    /* The first two blocks, zero-filled in front to align the rest, init applied. */
    alignas(16) uint8_t head[32] = {};
    const size_t lead = r ? 16 - r : 0;
    std::memcpy(head + lead, p, 32 - lead);
    for (size_t i = 0; i < 4; ++i)
        head[lead + i] ^= 0xFF;
    const uint8_t *q = p + (32 - lead); /* 16-byte blocks from here to the end */
    size_t left = len - (32 - lead);
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
    /* acc has the message's init-0 CRC; rte_net_crc applies init ~0 and the final
     * inversion, so undo the init on its first four bytes. */
    alignas(16) uint8_t last[16];
    _mm_store_si128(reinterpret_cast<__m128i *>(last), acc);
    for (size_t i = 0; i < 4; ++i)
        last[i] ^= 0xFF;
    return rte_net_crc_calc(last, 16, RTE_NET_CRC32_ETH);
}

bool have_pclmul() {
    static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    return yes;
}

} // namespace

uint32_t crc32_eth(const uint8_t *p, size_t len) {
    crc_init_once();
    if (len >= kFoldMin && have_pclmul())
        return crc32_fold4(p, len);
    /* Same value as zlib crc32(0, p, len). */
    return rte_net_crc_calc(p, static_cast<uint32_t>(len), RTE_NET_CRC32_ETH);
}

uint32_t crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
    if (len_b == 0)
        return crc_a;
    return multmodp(x8n(len_b), crc_a) ^ crc_b;
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

uint32_t icrc_compute_inplace(uint8_t *l3, size_t len, bool ipv6) {
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    if (len < hlen)
        return 0;
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

uint32_t icrc_compute(const uint8_t *l3, size_t len, bool ipv6) {
    /* Small frames: one copy to the stack and one CRC pass beat two CRC calls plus a
     * combine (bench_engine WireToCompletion/64). Larger ones: masked headers on the
     * stack, the rest CRC'd where it lies, joined by crc32_combine. */
    constexpr size_t kCopyMax = 1024;
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    if (len >= hlen && len <= kCopyMax) {
        uint8_t buf[8 + kCopyMax];
        std::memset(buf, 0xFF, 8);
        std::memcpy(buf + 8, l3, len);
        mask_variant(buf + 8, ipv6);
        return crc32_eth(buf, 8 + len);
    }
    return icrc_compute_segments(l3, len, nullptr, 0, ipv6);
}

uint32_t icrc_load(const uint8_t *p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
           (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

void icrc_store(uint32_t icrc, uint8_t *p) {
    p[0] = static_cast<uint8_t>(icrc);
    p[1] = static_cast<uint8_t>(icrc >> 8);
    p[2] = static_cast<uint8_t>(icrc >> 16);
    p[3] = static_cast<uint8_t>(icrc >> 24);
}

} // namespace droce::wire
