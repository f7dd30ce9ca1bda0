/* SPDX-License-Identifier: BSD-3-Clause */
/* The straight TX path of an RC QP's one-packet messages. A SEND_ONLY or WRITE_ONLY (with
 * or without immediate) differs from the previous one of its QP only in the lengths (IP,
 * UDP), the IPv4 checksum, the BTH's opcode, SE, pad count, AckReq and PSN, the RETH, the
 * immediate and the payload: everything else is fixed by the QP's path (MACs, VLAN, IP
 * version, GIDs, TTL, flow label, UDP source port), its P_Key and destination QP, and the
 * TOS. So the requester describes such a packet in a DataFrame (a few words, no
 * FrameSpec) and the template writes the frame from the headers it learnt: one copy, the
 * patches above, the payload, the pad and the ICRC.
 *
 * The output is always byte-for-byte what HeaderTemplate::build_frame writes for the
 * FrameSpec the requester would have built (tests/unit/test_wire_data_template.cpp
 * compares them): the template is learnt from that builder's output, and serves only
 * frames of the same path generation (the QP's Path and the BTH's P_Key and destination QP
 * together; a process-wide unique number the QP renews whenever any of them may change)
 * and TOS; anything else is the caller's to build from a FrameSpec, which relearns it.
 * RoCEv1 (another ICRC and a GRH) is never served from it. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire_packet.h"

namespace droce::wire {

/** One RC request packet of a one-packet message, as the straight path takes it. Fields
 * not here are those of the template's path: FECN, BECN and MigReq clear, header version
 * 0, IPv4 id 0. */
struct DataFrame {
    uint64_t path_gen; /* the QP's path generation (FrameSpec::path_gen) */
    uint8_t opcode;    /* kRcSendOnly, kRcSendOnlyImm, kRcWriteOnly or kRcWriteOnlyImm */
    uint8_t tos;       /* IPv4 TOS / IPv6 traffic class */
    bool se;           /* BTH solicited event */
    bool ack_req;      /* BTH AckReq */
    uint32_t psn;      /* BTH PSN */
    Reth reth;         /* WRITE only */
    uint32_t imm;      /* the *_IMM opcodes only */
    const uint8_t *payload;
    uint32_t len;    /* payload bytes */
    uint32_t mr_key; /* the region payload lies in (0: inline data), for zero-copy */
};

class DataTemplate {
  public:
    /* True for the opcodes a DataFrame may carry. */
    static constexpr bool takes(uint8_t opcode) {
        return opcode == kRcSendOnly || opcode == kRcSendOnlyImm || opcode == kRcWriteOnly ||
               opcode == kRcWriteOnlyImm;
    }
    /* True for the FrameSpecs the template may learn from: a DataFrame's opcode, a path
     * generation, RoCEv2, and the fields a DataFrame leaves at their defaults. */
    static bool eligible(const FrameSpec &s);
    /* L2 (VLAN included) + IPv6 + UDP + BTH, rounded up: the headers are copied as one
     * block of this size, so build() may write that much of out (cap allowing) even for a
     * shorter frame. */
    static constexpr size_t kMaxHdr = 80;
    /* Writes d's frame when the template holds its path generation and TOS; returns its
     * length, or 0 when the caller must build it from a FrameSpec (not learnt, another
     * generation or TOS, cap short of the frame or of kMaxHdr). */
    size_t build(const DataFrame &d, uint8_t *out, size_t cap) const;
    /* True when build() has the headers for d (it may still find cap short). */
    bool serves(const DataFrame &d) const {
        return d.path_gen == gen_ && gen_ != 0 && d.tos == tos_;
    }
    /* Takes the headers of frame (the builder's output for the eligible spec s, h bytes
     * of headers) as the template. */
    void learn(const FrameSpec &s, const uint8_t *frame, size_t h);
    /* Frames served from the template (tests and benchmarks). */
    uint64_t hits() const { return hits_; }

  private:
    uint64_t gen_ = 0;     /* 0: nothing learnt */
    uint32_t ip4_sum_ = 0; /* IPv4: unfolded sum of the header words but length and checksum */
    uint8_t tos_ = 0;
    uint8_t l3_off_ = 0;  /* L2 length */
    uint8_t bth_off_ = 0; /* L2 + IP + UDP */
    bool ipv6_ = false;
    mutable uint64_t hits_ = 0;
    alignas(16) uint8_t hdr_[kMaxHdr] = {};
};

} // namespace droce::wire

#include "wire_data_template_build.h" /* build(), inline */
