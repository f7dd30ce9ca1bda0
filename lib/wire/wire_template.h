/* SPDX-License-Identifier: BSD-3-Clause */
/* Per-flow header template for the TX path. A QP's frames share their Ethernet, IP and
 * UDP headers except for the lengths (and the IPv4 id and checksum), so the template
 * keeps those bytes prebuilt and each frame only copies them and patches the variable
 * fields; the IPv4 checksum is the precomputed sum of the fixed words plus the two
 * variable ones. The BTH and extended headers are written per frame as by
 * build_headers (they change with every packet anyway).
 *
 * The template remembers every spec field it baked in (MACs, VLAN, IP version, GIDs,
 * TTL, flow label, UDP source port) and rebuilds itself when a spec differs in any of
 * them, so a path change can never leave with stale bytes: the output is always
 * byte-for-byte what build_headers / build_frame would write for that spec. The TOS /
 * traffic class is not baked in but written per frame (with the IPv4 checksum): a QP's
 * data frames (ECT(0)) and its ACKs and CNPs (not-ECT, another DSCP) alternate on one
 * template, and in ping-pong a baked TOS rebuilt it for every frame. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire_ack_template.h"
#include "wire_data_template.h"
#include "wire_packet.h"

namespace droce::wire {

class HeaderTemplate {
  public:
    /* Same bytes in out and same return value as wire::build_headers(s, out, cap). */
    size_t build_headers(const FrameSpec &s, uint8_t *out, size_t cap);
    /* Same bytes in out and same return value as wire::build_frame(s, out, cap). */
    size_t build_frame(const FrameSpec &s, uint8_t *out, size_t cap);

    /* True when the template holds s's L2..L4 fields (false before the first build). */
    bool matches(const FrameSpec &s) const;
    /* How many times the prebuilt headers were (re)computed: once per path in steady
     * state; a growing count means the spec keeps changing under the template. */
    uint64_t rebuilds() const { return rebuilds_; }
    /* The prebuilt plain ACK build_frame serves ACKs from (wire_ack_template.h). */
    const AckTemplate &ack_template() const { return ack_; }
    /* A one-packet RC request from the headers learnt of an earlier build_frame of the
     * same path generation and TOS (wire_data_template.h): its length, or 0 when the
     * caller must build it from a FrameSpec. */
    size_t build_data(const DataFrame &d, uint8_t *out, size_t cap) const {
        return data_.build(d, out, cap);
    }
    bool serves(const DataFrame &d) const { return data_.serves(d); }
    const DataTemplate &data_template() const { return data_; }

  private:
    /* Everything of a FrameSpec the prebuilt bytes depend on (MACs, VLAN, IP version,
     * GIDs, TTL, flow label, UDP source port) lies in its first kKeyBytes bytes: the
     * template keeps those bytes as they were at the rebuild and a mask of the ones that
     * count, and matches() compares the spec's under the mask, 16 bytes at a time. The
     * mask leaves out what is not on the wire for the baked path (the VLAN TCI without a
     * tag, the flow label of IPv4), the builder's ethertype, the per-frame fields (TOS,
     * IP ID) and padding; a change of has_vlan or ipv6 is a change of a masked-in byte. */
    static constexpr size_t kKeyBytes = 64;
    void rebuild(const FrameSpec &s);
    /* Writes headers for s (template current, op valid, room checked); returns the
     * payload start. */
    uint8_t *write(const FrameSpec &s, const OpcodeInfo &op, uint32_t pad, uint8_t *out) const;
    /* Checks shared by both builders: opcode known, IP length field large enough.
     * Returns headers_len(s) or 0. */
    size_t check(const FrameSpec &s, const OpcodeInfo &op) const;

    static constexpr size_t kMaxL4 = kEthLen + kVlanLen + kIpv6Len + kUdpLen;

    alignas(16) uint8_t key_[kKeyBytes] = {};
    alignas(16) uint8_t key_mask_[kKeyBytes] = {};
    bool key_rocev1_ = false; /* FrameSpec::rocev1 lies past kKeyBytes */
    bool valid_ = false;
    uint8_t l2_len_ = 0; /* 14 or 18 */
    uint8_t l4_end_ = 0; /* L2 + IP + UDP header bytes (RoCEv1: L2 + GRH) */
    bool rocev1_ = false;
    uint32_t ip4_sum_ = 0; /* IPv4: unfolded sum of the 16-bit words other than total
                              length, id and checksum, with TOS 0 */
    uint64_t rebuilds_ = 0;
    uint8_t hdr_[kMaxL4] = {};
    AckTemplate ack_;
    DataTemplate data_;
};

} // namespace droce::wire
