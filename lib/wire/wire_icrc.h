/* SPDX-License-Identifier: BSD-3-Clause */
/* RoCEv2 invariant CRC (ICRC): CRC-32 (Ethernet) over 8 bytes of 0xFF, the IP header
 * with its variant fields masked to ones (IPv4 TOS/TTL/checksum; IPv6 traffic class,
 * flow label, hop limit), the UDP header with checksum 0xFFFF, the BTH with byte 4
 * (FECN/BECN/resv) 0xFF, and everything after the BTH up to the ICRC. Computed with
 * DPDK's rte_net_crc (CRC32 ETH). Stored on the wire least-significant byte first. */
#pragma once

#include <cstddef>
#include <cstdint>

namespace droce::wire {

/* l3 points at the IP header; len counts from there up to (not including) the ICRC.
 * const variant: copies into a bounded scratch buffer (len <= kIcrcMaxLen), for
 * tools and tests. */
inline constexpr size_t kIcrcMaxLen = 16384;
uint32_t icrc_compute(const uint8_t *l3, size_t len, bool ipv6);

/* Fast path: masks the variant fields in place and uses the 8 bytes *before* l3 (the
 * tail of the Ethernet header, always present in a frame) as the 0xFF prefix, so the
 * CRC runs in one pass over contiguous memory. Everything touched is restored. */
uint32_t icrc_compute_inplace(uint8_t *l3, size_t len, bool ipv6);

/* Reference implementation (plain table CRC, no DPDK, no length limit): for tests and
 * for frames longer than kIcrcMaxLen, which icrc_compute() hands to it. */
uint32_t icrc_compute_reference(const uint8_t *l3, size_t len, bool ipv6);

/* Reads the stored ICRC (LSB first) at p. */
uint32_t icrc_load(const uint8_t *p);
void icrc_store(uint32_t icrc, uint8_t *p);

} // namespace droce::wire
