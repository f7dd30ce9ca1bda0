/* SPDX-License-Identifier: BSD-3-Clause */
/* CRC-32 (Ethernet) of short runs, 32 bytes up to a few hundred: the RoCE frames of
 * small messages and their ACKs (a 64 B WRITE's ICRC covers 128 bytes, an ACK's 52). */
#pragma once

#include <cstddef>
#include <cstdint>

namespace droce::wire {

/* Shortest length crc32_small takes (its head is two whole 16-byte blocks). */
inline constexpr size_t kCrcSmallMin = 32;

/* Both take lengths below this (where crc32_eth's wide kernels start). */
inline constexpr size_t kCrcSmallMax = 512;

/* zlib's crc32(0, p, len) for len >= kCrcSmallMin; the CPU must have PCLMULQDQ, SSSE3
 * and SSE4.1 (the caller checks). */
uint32_t crc32_small(const uint8_t *p, size_t len);

/* The RoCEv2 ICRC (wire_icrc.h) of the frame at l3 with len bytes from the IP header up
 * to the ICRC, kCrcSmallMin <= len + 8 < kCrcSmallMax, IPv4 or IPv6 (not RoCEv1): the
 * 0xFF prefix and the variant fields are applied in registers, so only [l3, l3 + len) is
 * read and nothing written, where
 * icrc_compute_inplace's byte stores made the CRC's 16-byte loads of the same lines wait
 * (store forwarding fails on a load that spans several smaller stores). The CPU needs
 * what crc32_small needs. */
uint32_t icrc_small(const uint8_t *l3, size_t len, bool ipv6);

/* Whether this CPU has what crc32_small and icrc_small need: read once at load time
 * (three feature tests on every frame's way in and out were a cost of their own).
 * False until the library's initialisers have run, which only sends a frame to the
 * general kernels. */
extern const bool kCrcSmallCpu;

} // namespace droce::wire
