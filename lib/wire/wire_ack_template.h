/* SPDX-License-Identifier: BSD-3-Clause */
/* A QP's plain ACK, prebuilt. Of an RC ACK frame only the last 8 bytes the ICRC covers
 * change from one ACK to the next (BTH byte 8 with AckReq, the PSN, the AETH's syndrome
 * and MSN): everything before them is fixed by the path, the TOS, the IP id and the
 * BTH's first 8 bytes. The template keeps one whole frame as the generic builder wrote it
 * and the CRC of its fixed part (the 0xFF prefix and the masked headers up to BTH byte
 * 8), so the next ACK is a copy, 7 patched bytes and a CRC over 8 bytes instead of the
 * header encoders and a CRC pass over the whole frame. In write_lat ping-pong an ACK
 * leaves per message in each direction, on the latency path.
 *
 * The output is always byte-for-byte what HeaderTemplate::build_frame would write: the
 * template is learnt from that builder's output and used only while every field it baked
 * in is unchanged (the header template's generation, TOS, IP id and BTH bytes 0..7);
 * anything else falls back to the builder, which then relearns it. RoCEv1 (another
 * ICRC) is never served from it. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire_packet.h"

namespace droce::wire {

class AckTemplate {
  public:
    /* True for the frames the template may serve: an RC ACK without payload over
     * RoCEv2. */
    static bool eligible(const FrameSpec &s);
    /* Writes s's frame when the template holds it (generation: the header template's
     * rebuild count, which moves whenever its L2..L4 bytes may have); returns its length,
     * or 0 when the caller must build it (not learnt, a baked field differs, cap short). */
    size_t build(const FrameSpec &s, uint64_t generation, uint8_t *out, size_t cap) const;
    /* Takes frame[0..len), the builder's output for the eligible spec s, as the template. */
    void learn(const FrameSpec &s, uint64_t generation, const uint8_t *frame, size_t len);
    /* ACKs served from the template (tests and benchmarks). */
    uint64_t hits() const { return hits_; }

  private:
    static constexpr size_t kMaxLen =
        kEthLen + kVlanLen + kIpv6Len + kUdpLen + kBthLen + kAethLen + kIcrcLen;
    /* Offset of BTH byte 8 (AckReq, PSN) from the frame's start; the AETH follows the
     * BTH, and the ICRC the AETH. */
    uint8_t var_off_ = 0;
    uint8_t len_ = 0; /* 0: nothing learnt */
    uint8_t tos_ = 0;
    uint16_t ip_id_ = 0;
    uint64_t generation_ = 0;
    uint8_t bth_head_[8] = {}; /* BTH bytes 0..7 as the spec's fields encode them */
    uint32_t crc_fixed_ = 0;   /* CRC-32 of the 0xFF prefix and the masked fixed bytes */
    mutable uint64_t hits_ = 0;
    uint8_t frame_[kMaxLen] = {};
};

} // namespace droce::wire
