/* SPDX-License-Identifier: BSD-3-Clause */
/* Why not rte_net_crc below 512 bytes: DPDK 22.11's SSE4.2 kernel folds one 16-byte block
 * at a time, every fold waiting for the previous carry-less multiply, so a 128-byte frame
 * is a serial chain of eight (~30 ns, 18 % of the 64 B write_bw client's time). Here four
 * independent lanes fold 64 bytes per step, as in wire_icrc.cpp's crc32_fold4, but with
 * the fixed costs that made that kernel lose below 256 bytes taken out of memory:
 *  - the head (the init on the first four bytes, zeros in front so that the rest is whole
 *    16-byte blocks) is built in a register with one PSHUFB instead of byte stores to a
 *    stack buffer that a 16-byte load then had to read back (a store-forwarding stall);
 *  - the 128 -> 32 bit reduction and the final inversion run in registers too
 *    (reduce128), where they were a call to rte_net_crc on a stored 16-byte block.
 * Domain and multipliers: crc32_fold.h. */
#include "crc32_small.h"

#include <array>
#include <utility>

#include <immintrin.h>

#include "crc32_fold.h"
#include "crc32_reduce.h"
#include "wire_headers.h"

namespace droce::wire {

namespace {

using crcmath::fold_k;
using crcmath::FoldK;

constexpr FoldK kK128 = fold_k(128), kK256 = fold_k(256), kK384 = fold_k(384), kK512 = fold_k(512);

/* PSHUFB masks that move a block `lead` bytes up (zeros in front): the 16 bytes at
 * kShift + 16 - lead. */
alignas(16) constexpr uint8_t kShift[32] = {
    0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
    0,    1,    2,    3,    4,    5,    6,    7,    8,    9,    10,   11,   12,   13,   14,   15};
/* The init's ones on message bytes 0..3 as seen from a load at message byte o: the 16
 * bytes at kInit + o (for o < 4 some of them fall in the second head block). */
alignas(16) constexpr uint8_t kInit[32] = {0xFF, 0xFF, 0xFF, 0xFF};

/* The ICRC's ones, from the 8-byte prefix on: the prefix itself, then the variant fields
 * of IPv4 (TOS, TTL, checksum) or IPv6 (traffic class, flow label, hop limit), the UDP
 * checksum and BTH byte 4; zeros up to kCrcSmallMax + 16. */
struct IcrcMask {
    alignas(16) uint8_t b[kCrcSmallMax + 16];
};
constexpr IcrcMask make_mask(bool ipv6) {
    IcrcMask m{};
    for (size_t i = 0; i < 8; ++i)
        m.b[i] = 0xFF;
    uint8_t *ip = m.b + 8;
    if (ipv6) {
        ip[0] = 0x0F;
        ip[1] = ip[2] = ip[3] = ip[7] = 0xFF;
    } else {
        ip[1] = ip[8] = ip[10] = ip[11] = 0xFF;
    }
    uint8_t *udp = ip + (ipv6 ? kIpv6Len : kIpv4Len);
    udp[6] = udp[7] = 0xFF;
    udp[kUdpLen + 4] = 0xFF;
    return m;
}
constexpr IcrcMask kMask4 = make_mask(false), kMask6 = make_mask(true);
/* One past the mask's last one: blocks wholly past it are not ORed (masked kernels are
 * instantiated per address family). */
constexpr size_t mask_end(const IcrcMask &m) {
    size_t e = 0;
    for (size_t i = 0; i < sizeof m.b; ++i)
        if (m.b[i] != 0)
            e = i + 1;
    return e;
}
constexpr size_t kMaskEnd4 = mask_end(kMask4), kMaskEnd6 = mask_end(kMask6);
static_assert(kMaskEnd4 != 0 && kMaskEnd6 != 0, "0 names the plain kernels");

#define DROCE_SMALL_TARGET __attribute__((target("pclmul,ssse3,sse4.1")))

DROCE_SMALL_TARGET inline __m128i kv(const FoldK &k) {
    return _mm_set_epi64x(static_cast<long long>(k.hi), static_cast<long long>(k.lo));
}
DROCE_SMALL_TARGET inline __m128i fold(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}
DROCE_SMALL_TARGET inline __m128i ld(const uint8_t *p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
}

/* The 16-byte block at message offset o. Masked = true: the message is the ICRC's 8-byte
 * prefix (not read: the mask's ones) and then p[0..len-8); the block is ORed with the 16
 * bytes at mask + o (the ones over the variant header fields), so the frame is never
 * written, and nothing before p is read (a block reaching into the prefix is p's first
 * 16 bytes moved up, zeros in front). mask holds len + 16 readable bytes. */
template <bool Masked>
DROCE_SMALL_TARGET inline __m128i block(const uint8_t *p, const uint8_t *mask, size_t o) {
    if constexpr (Masked) {
        const __m128i v =
            o >= 8 ? ld(p + (o - 8)) : _mm_shuffle_epi8(ld(p), ld(kShift + 16 - (8 - o)));
        return _mm_or_si128(v, ld(mask + o));
    } else {
        return ld(p + o);
    }
}

/* The 16-byte block at message offset 16 * i - lead for i >= 2: at least 17, so past the
 * masked prefix. q and mq are the addresses of p and mask moved back by lead (and by the
 * prefix), as integers: the bases may lie before the frame (or, with the plain kernel's
 * null mask, be meaningless), only q + 16 * i and mq + 16 * i are ever used as pointers,
 * and each block is then one load at a constant offset from a base. */
template <size_t MaskEnd>
DROCE_SMALL_TARGET inline __m128i tail_block(uintptr_t q, uintptr_t mq, size_t i) {
    const auto at = [](uintptr_t a) { return reinterpret_cast<const uint8_t *>(a); };
    /* Block i starts at message offset 16 * i - lead, lead < 16: past the mask's ones when
     * 16 * i - 15 >= MaskEnd. i is a constant once the kernel's loops are unrolled. */
    if (MaskEnd != 0 && 16 * i < MaskEnd + 15)
        return _mm_or_si128(ld(at(q + 16 * i)), ld(at(mq + 16 * i)));
    return ld(at(q + 16 * i));
}

/* The CRC of a message of B 16-byte blocks once `lead` zeros are put in front (B * 16 ==
 * len + lead), unrolled for its B: the same folds as a loop would do, four independent
 * lanes of 64 bytes while at least four blocks are left, then one 16 bytes at a time,
 * with no counter, no bound test and no offset arithmetic per block. (blk is a macro: a
 * lambda calling the intrinsics lacks the target attribute and would not be inlined.) */
template <size_t MaskEnd, size_t B>
DROCE_SMALL_TARGET uint32_t crc32_blocks(const uint8_t *p, size_t lead, const uint8_t *mask) {
    static_assert(B >= 2);
    constexpr bool Masked = MaskEnd != 0;
    /* The init (~0) is the init-0 CRC of the message with its first four bytes inverted;
     * zeros in front do not change an init-0 CRC. The first two blocks may reach into
     * the prefix or in front of the message: block() builds them. */
    const __m128i inv = ld(kInit);
    const __m128i l0 =
        _mm_shuffle_epi8(_mm_xor_si128(block<Masked>(p, mask, 0), inv), ld(kShift + 16 - lead));
    const __m128i l1 = _mm_xor_si128(block<Masked>(p, mask, 16 - lead), ld(kInit + 16 - lead));
    const uintptr_t q = reinterpret_cast<uintptr_t>(p) - lead - (Masked ? 8 : 0);
    const uintptr_t mq = reinterpret_cast<uintptr_t>(mask) - lead;
#define blk(i) tail_block<MaskEnd>(q, mq, (i))
    const __m128i k1 = kv(kK128);
    __m128i acc;
    size_t i;
    if constexpr (B >= 4) {
        __m128i l[4] = {l0, l1, blk(2), blk(3)};
        const __m128i k4 = kv(kK512);
#pragma GCC unroll 8
        for (i = 4; i + 4 <= B; i += 4)
#pragma GCC unroll 4
            for (size_t j = 0; j < 4; ++j)
                l[j] = _mm_xor_si128(fold(l[j], k4), blk(i + j));
        acc = _mm_xor_si128(_mm_xor_si128(fold(l[0], kv(kK384)), fold(l[1], kv(kK256))),
                            _mm_xor_si128(fold(l[2], k1), l[3]));
    } else {
        acc = _mm_xor_si128(fold(l0, k1), l1);
        i = 2;
    }
#pragma GCC unroll 4
    for (; i < B; ++i)
        acc = _mm_xor_si128(fold(acc, k1), blk(i));
    return crcmath::reduce128(acc);
#undef blk
}

using BlocksFn = uint32_t (*)(const uint8_t *, size_t, const uint8_t *);
/* MaskEnd: the ICRC's kernels (one past the mask's last one); 0: the plain CRC's. */
template <size_t MaskEnd, size_t... I> constexpr auto blocks_table(std::index_sequence<I...>) {
    return std::array<BlocksFn, sizeof...(I)>{&crc32_blocks<MaskEnd, I + 2>...};
}
/* Index B - 2: every block count of a length below kCrcSmallMax. */
constexpr size_t kMaxBlocks = kCrcSmallMax / 16;
using Blocks = std::make_index_sequence<kMaxBlocks - 1>;
constexpr auto kBlocksMasked4 = blocks_table<kMaskEnd4>(Blocks{});
constexpr auto kBlocksMasked6 = blocks_table<kMaskEnd6>(Blocks{});
constexpr auto kBlocksPlain = blocks_table<0>(Blocks{});

inline uint32_t crc32_small_t(const std::array<BlocksFn, kMaxBlocks - 1> &table, const uint8_t *p,
                              size_t len, const uint8_t *mask) {
    const size_t lead = (16 - (len & 15)) & 15;
    return table[(len + lead) / 16 - 2](p, lead, mask);
}

} // namespace

const bool kCrcSmallCpu = [] {
    __builtin_cpu_init(); /* may run before libgcc's own initialiser */
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") &&
           __builtin_cpu_supports("ssse3");
}();

DROCE_SMALL_TARGET uint32_t crc32_small(const uint8_t *p, size_t len) {
    return crc32_small_t(kBlocksPlain, p, len, nullptr);
}

DROCE_SMALL_TARGET uint32_t icrc_small(const uint8_t *l3, size_t len, bool ipv6) {
    return ipv6 ? crc32_small_t(kBlocksMasked6, l3, len + 8, kMask6.b)
                : crc32_small_t(kBlocksMasked4, l3, len + 8, kMask4.b);
}

} // namespace droce::wire
