/* SPDX-License-Identifier: BSD-3-Clause */
/* RoCEv1 (IBTA annex A16): Ethernet [802.1Q] / GRH (40 bytes, laid out as an IPv6 header,
 * next header 0x1B) / BTH / extended headers / payload / pad / ICRC. Not routable: the
 * GRH carries the GIDs, there is no IP or UDP. The ICRC is the RoCEv2 one without the
 * UDP header: CRC-32 over 8 bytes of 0xFF (the absent LRH), the GRH with traffic class,
 * flow label and hop limit set to ones, the BTH with byte 4 (FECN/BECN/resv) 0xFF and
 * everything after the BTH up to the ICRC.
 *
 * wire_packet builds and parses these frames (FrameSpec::rocev1, ParsedPacket::rocev1);
 * this file holds the pieces that differ from RoCEv2. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire_headers.h" /* kEtherTypeRoceV1 */
#include "wire_icrc.h"

namespace droce::wire {

inline constexpr size_t kGrhLen = 40;
/* GRH NxtHdr when a BTH follows (IBA 8.3.1: 0x1B, "IBA transport"). */
inline constexpr uint8_t kGrhNextHdrBth = 0x1B;

/* ICRC of a RoCEv1 packet: grh points at the GRH, len counts from there up to (not
 * including) the ICRC. 0 when len is shorter than GRH + BTH. */
uint32_t icrc_v1_compute(const uint8_t *grh, size_t len);
/* Gather-list form: [grh, grh+grh_len) contiguous and holding at least GRH + BTH, then
 * segs in order (as icrc_compute_segments). */
uint32_t icrc_v1_compute_segments(const uint8_t *grh, size_t grh_len, const ByteSpan *segs,
                                  uint32_t nsegs);
/* Reference (plain bitwise table CRC, no DPDK): for tests. */
uint32_t icrc_v1_compute_reference(const uint8_t *grh, size_t len);

/* Writes a GRH: version 6, traffic class, flow label, payload length (BTH..ICRC), next
 * header 0x1B, hop limit, source and destination GIDs. */
void write_grh(uint8_t tclass, uint32_t flow_label, uint16_t payload_len, uint8_t hop_limit,
               const uint8_t sgid[16], const uint8_t dgid[16], uint8_t *grh);

} // namespace droce::wire
