/* SPDX-License-Identifier: BSD-3-Clause */
/* ICRC of a small RoCEv2 frame without narrow stores in front of the CRC's loads.
 * Masking the variant header fields byte by byte (in place or in a stack copy) and then
 * running the vector CRC over them made the CRC's 16-byte loads wait on those 1- and
 * 2-byte stores (failed store forwarding): 32 ns for a 64 B WRITE's ICRC against 10 ns
 * for the CRC alone. Here the masked headers are made in vector registers (load, OR
 * with a constant mask, one 16-byte store each) and the rest is copied, so every byte
 * the CRC reads was written by a store at least as wide as its load. Same value as
 * icrc_compute_reference. */
#pragma once

#include <cstddef>
#include <cstdint>

namespace droce::wire {

/* Largest len (IP header .. before the ICRC) icrc_compute_small takes. */
inline constexpr size_t kIcrcSmallMax = 1024;
/* icrc_compute_inplace hands frames up to this len to it: below, the copy costs less
 * than the stalls the in-place masking causes (bench_wire BM_IcrcInplace/64). */
inline constexpr size_t kIcrcSmallInplaceMax = 256;

/* l3: the IP header; len: bytes from there up to the ICRC, at least IP + UDP + BTH and
 * at most kIcrcSmallMax (the caller checks both). Reads only [l3, l3 + len). */
uint32_t icrc_compute_small(const uint8_t *l3, size_t len, bool ipv6);

} // namespace droce::wire
