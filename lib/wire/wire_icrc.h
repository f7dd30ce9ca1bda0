/* SPDX-License-Identifier: BSD-3-Clause */
/* RoCEv2 invariant CRC (ICRC): CRC-32 (Ethernet) over 8 bytes of 0xFF, the IP header
 * with its variant fields masked to ones (IPv4 TOS/TTL/checksum; IPv6 traffic class,
 * flow label, hop limit), the UDP header with checksum 0xFFFF, the BTH with byte 4
 * (FECN/BECN/resv) 0xFF, and everything after the BTH up to the ICRC. Computed with
 * DPDK's rte_net_crc (CRC32 ETH). Stored on the wire least-significant byte first. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "crc32_small.h"
#include "wire_headers.h"

namespace droce::wire {

/* l3 points at the IP header; len counts from there up to (not including) the ICRC.
 * const variant: the masked headers are copied to the stack, the rest is read in place
 * (icrc_compute_segments with no segments); any length. kIcrcMaxLen is kept for
 * callers that size buffers with it. */
inline constexpr size_t kIcrcMaxLen = 16384;
uint32_t icrc_compute(const uint8_t *l3, size_t len, bool ipv6);

/* Fast path: masks the variant fields in place and uses the 8 bytes *before* l3 (the
 * tail of the Ethernet header, always present in a frame) as the 0xFF prefix, so the
 * CRC runs in one pass over contiguous memory. Everything touched is restored. */
inline uint32_t icrc_compute_inplace(uint8_t *l3, size_t len, bool ipv6);

/* Read-only ICRC of a contiguous frame, for RX: one pass of the fastest fold kernel over
 * [l3 - 8, l3 + len) where it lies (the 8 bytes before l3, the Ethernet header's tail,
 * must be readable), the 0xFF prefix and the variant-field masks ORed into the first
 * vectors as they are loaded. Nothing is written to the frame (a shared or zero-copy
 * buffer stays untouched) and nothing copied but the first 32 bytes. Where no 256/512-bit
 * fold kernel runs (short frames, older CPUs) it is icrc_compute(). */
inline uint32_t icrc_compute_contig(const uint8_t *l3, size_t len, bool ipv6);

/* Reference implementation (plain table CRC, no DPDK, no length limit): for tests and
 * for frames longer than kIcrcMaxLen, which icrc_compute() hands to it. */
uint32_t icrc_compute_reference(const uint8_t *l3, size_t len, bool ipv6);

/* A run of contiguous bytes (payload segments, mbuf data). */
struct ByteSpan {
    const uint8_t *addr;
    uint32_t len;
};

/* Gather-list ICRC without copying the payload: l3 points at the IP header and
 * [l3, l3+l3_len) is contiguous and holds at least IP+UDP+BTH (it may hold more, e.g.
 * the extended headers); the CRC then runs on over segs[0..nsegs) in order (payload,
 * pad). The masked headers go through a small stack buffer; every other byte is read
 * once by rte_net_crc and the partial CRCs are joined with crc32_combine(). Returns 0
 * when l3_len is shorter than the headers, like the other variants. */
uint32_t icrc_compute_segments(const uint8_t *l3, size_t l3_len, const ByteSpan *segs,
                               uint32_t nsegs, bool ipv6);

/* CRC-32 (Ethernet/zlib) of p[0..len): rte_net_crc below 512 bytes, carry-less multiply
 * folding from there (512-bit VPCLMULQDQ with AVX-512 from 2 KiB, 256-bit with AVX2, else
 * 128-bit PCLMULQDQ; whichever the CPU has). */
uint32_t crc32_eth(const uint8_t *p, size_t len);

/* Copies src[0..len) to dst (no overlap) and returns crc32_eth(src, len), reading src
 * once where the 256-bit kernel runs (the stores ride in the fold loop); elsewhere
 * memcpy then crc32_eth. */
uint32_t crc32_eth_copy(uint8_t *dst, const uint8_t *src, size_t len);

/* crc32_eth with a chosen kernel, for tests and benchmarks: Auto is crc32_eth's own
 * choice; a kernel the CPU lacks (crc_kernel_available) or a length below its minimum
 * falls back to the next slower one. */
/* Small: four-lane 128-bit fold with the head and the last block built in registers
 * (crc32_small.h), which crc32_eth takes from 32 bytes up to where the others start. */
enum class CrcKernel : uint8_t { Auto, Dpdk, Fold128, Fold256, Fold512, Small };
uint32_t crc32_eth_kernel(const uint8_t *p, size_t len, CrcKernel k);
bool crc_kernel_available(CrcKernel k);
/* zlib's crc32(crc, ...) over the concatenation of segs[0..nsegs) (empty ones allowed):
 * one folding pass across the segment boundaries (a 16-byte block that straddles two is
 * gathered on the stack), so a frame in several mbufs costs one kernel call. crc = 0
 * starts a new CRC; passing an earlier result continues it. Kernel: the 512-bit or
 * 256-bit VPCLMULQDQ fold from 512 bytes when the CPU has it, else one crc32_eth per
 * segment joined by crc32_combine. */
uint32_t crc32_eth_gather(uint32_t crc, const ByteSpan *segs, uint32_t nsegs);
/* The same with a chosen kernel (Fold256, Fold512; anything else or a CPU without it:
 * per-segment crc32_eth + crc32_combine), for tests and benchmarks. */
uint32_t crc32_eth_gather_kernel(uint32_t crc, const ByteSpan *segs, uint32_t nsegs, CrcKernel k);

/* zlib's crc32_combine: the CRC of A||B from crc(A), crc(B) and len(B), by multiplying
 * crc(A) with x^(8*len(B)) mod P (table of x^(8n) for n < 2^14, square-and-multiply
 * beyond). */
uint32_t crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

namespace detail {
/* True when icrc_small takes the frame (every frame of a small message and every ACK):
 * the headers it masks are there, the 8-byte prefix and len make less than
 * kCrcSmallMax, and the CPU has what it needs. Inline, so that the per-packet callers
 * reach icrc_small with no call in between: the out-of-line dispatch (its one-time
 * initialisation, the checks for the wide kernels) runs only for frames it leaves. */
inline bool icrc_small_takes(size_t len, bool ipv6) {
    const size_t hlen = (ipv6 ? kIpv6Len : kIpv4Len) + kUdpLen + kBthLen;
    return len >= hlen && len + 8 < kCrcSmallMax && kCrcSmallCpu;
}
uint32_t icrc_compute_inplace_any(uint8_t *l3, size_t len, bool ipv6);
uint32_t icrc_compute_contig_any(const uint8_t *l3, size_t len, bool ipv6);
} // namespace detail

inline uint32_t icrc_compute_inplace(uint8_t *l3, size_t len, bool ipv6) {
    return detail::icrc_small_takes(len, ipv6) ? icrc_small(l3, len, ipv6)
                                               : detail::icrc_compute_inplace_any(l3, len, ipv6);
}
inline uint32_t icrc_compute_contig(const uint8_t *l3, size_t len, bool ipv6) {
    return detail::icrc_small_takes(len, ipv6) ? icrc_small(l3, len, ipv6)
                                               : detail::icrc_compute_contig_any(l3, len, ipv6);
}

/* The stored ICRC (LSB first) at p. Inline: a frame's last step on both paths, where a
 * call was most of its cost. */
inline uint32_t icrc_load(const uint8_t *p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
           (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
inline void icrc_store(uint32_t icrc, uint8_t *p) {
    p[0] = static_cast<uint8_t>(icrc);
    p[1] = static_cast<uint8_t>(icrc >> 8);
    p[2] = static_cast<uint8_t>(icrc >> 16);
    p[3] = static_cast<uint8_t>(icrc >> 24);
}

} // namespace droce::wire
