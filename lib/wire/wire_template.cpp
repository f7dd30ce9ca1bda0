/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_template.h"

#include <cstddef>
#include <cstring>

#include "wire_bytes.h"
#include "wire_rocev1.h"

namespace droce::wire {

HeaderTemplate::Key HeaderTemplate::key_of(const FrameSpec &s) {
    Key k;
    std::memcpy(k.macs, s.eth.dst, 6);
    std::memcpy(k.macs + 6, s.eth.src, 6);
    k.vlan_tci = s.eth.has_vlan ? s.eth.vlan_tci : 0; /* not on the wire without a tag */
    k.has_vlan = s.eth.has_vlan;
    k.ipv6 = s.ipv6;
    k.rocev1 = s.rocev1;
    k.ttl = s.ttl;
    k.udp_sport = s.udp_sport;
    k.flow_label = s.ipv6 || s.rocev1 ? s.flow_label : 0; /* IPv4 has no flow label */
    std::memcpy(k.gids, s.src_gid, 16);
    std::memcpy(k.gids + 16, s.dst_gid, 16);
    return k;
}

bool HeaderTemplate::matches(const FrameSpec &s) const {
    /* Compared field by field straight from the spec: building a Key on the stack first
     * and memcmp'ing it made every wide load wait for the narrow stores just done (a
     * store-forwarding stall, 5% of the 64 B client in perf). */
    static_assert(offsetof(EthHdr, dst) == 0 && offsetof(EthHdr, src) == 6,
                  "MACs compared as one 12-byte run");
    static_assert(offsetof(FrameSpec, dst_gid) == offsetof(FrameSpec, src_gid) + 16,
                  "GIDs compared as one 32-byte run");
    const auto *macs = reinterpret_cast<const uint8_t *>(&s.eth);
    const auto *gids = reinterpret_cast<const uint8_t *>(&s) + offsetof(FrameSpec, src_gid);
    return valid_ && std::memcmp(macs, key_.macs, 12) == 0 &&
           std::memcmp(gids, key_.gids, 32) == 0 && s.eth.has_vlan == key_.has_vlan &&
           (!s.eth.has_vlan || s.eth.vlan_tci == key_.vlan_tci) && s.ipv6 == key_.ipv6 &&
           s.rocev1 == key_.rocev1 && s.ttl == key_.ttl && s.udp_sport == key_.udp_sport &&
           (!(s.ipv6 || s.rocev1) || s.flow_label == key_.flow_label);
}

void HeaderTemplate::rebuild(const FrameSpec &s) {
    /* The slow builder writes the fixed bytes, so the template cannot drift from it; the
     * lengths, id and checksum it writes are overwritten per frame. An ACK with no
     * payload is a valid spec for every path. */
    FrameSpec t{};
    t.eth = s.eth;
    t.ipv6 = s.ipv6;
    t.rocev1 = s.rocev1;
    std::memcpy(t.src_gid, s.src_gid, 16);
    std::memcpy(t.dst_gid, s.dst_gid, 16);
    t.tos = 0; /* written per frame (write()) */
    t.ttl = s.ttl;
    t.flow_label = s.flow_label;
    t.udp_sport = s.udp_sport;
    t.bth.opcode = kRcAcknowledge;
    uint8_t buf[kMaxL4 + 64];
    wire::build_headers(t, buf, sizeof(buf)); /* an ACK's headers always fit buf */
    l2_len_ = static_cast<uint8_t>(encoded_len(s.eth));
    rocev1_ = s.rocev1;
    l4_end_ = static_cast<uint8_t>(l2_len_ +
                                   (s.rocev1 ? kGrhLen : (s.ipv6 ? kIpv6Len : kIpv4Len) + kUdpLen));
    std::memcpy(hdr_, buf, l4_end_);
    ip4_sum_ = 0;
    if (!s.ipv6 && !s.rocev1) {
        const uint8_t *ip = hdr_ + l2_len_;
        for (size_t i = 0; i < kIpv4Len; i += 2)
            if (i != 2 && i != 4 && i != 10) /* total length, id, checksum */
                ip4_sum_ += load_be16(ip + i);
    }
    key_ = key_of(s);
    valid_ = true;
    ++rebuilds_;
}

size_t HeaderTemplate::check(const FrameSpec &s, const OpcodeInfo &op) const {
    if (!op.valid())
        return 0;
    const size_t h = l4_end_ + op.hdr_len;
    /* IP total length / payload length must fit 16 bits (as build_headers checks). */
    const size_t ip_part = h - l2_len_ + s.payload_len + pad_len(s.payload_len) + kIcrcLen;
    return ip_part <= 0xFFFF ? h : 0;
}

uint8_t *HeaderTemplate::write(const FrameSpec &s, const OpcodeInfo &op, uint32_t pad,
                               uint8_t *out) const {
    /* Constant-size copies for the four layouts (the compiler turns each into a few
     * vector moves). */
    switch (l4_end_) {
    case kEthLen + kIpv4Len + kUdpLen:
        std::memcpy(out, hdr_, kEthLen + kIpv4Len + kUdpLen);
        break;
    case kEthLen + kVlanLen + kIpv4Len + kUdpLen:
        std::memcpy(out, hdr_, kEthLen + kVlanLen + kIpv4Len + kUdpLen);
        break;
    case kEthLen + kIpv6Len + kUdpLen:
        std::memcpy(out, hdr_, kEthLen + kIpv6Len + kUdpLen);
        break;
    default:
        std::memcpy(out, hdr_, kMaxL4);
        break;
    }
    const uint32_t udp_len =
        static_cast<uint32_t>(kUdpLen + op.hdr_len + s.payload_len + pad + kIcrcLen);
    uint8_t *l3 = out + l2_len_;
    /* IPv6 / GRH: the traffic class spans the low nibble of byte 0 and the high nibble
     * of byte 1; the template holds 0 there. */
    const auto put_tclass = [&] {
        l3[0] = static_cast<uint8_t>(l3[0] | s.tos >> 4);
        l3[1] = static_cast<uint8_t>(l3[1] | s.tos << 4);
    };
    if (rocev1_) { /* GRH payload length: BTH .. ICRC; no UDP */
        put_tclass();
        store_be16(l3 + 4, static_cast<uint16_t>(udp_len - kUdpLen));
        return detail::write_transport_headers(s, op, pad, out + l4_end_);
    }
    uint8_t *udp = out + l4_end_ - kUdpLen;
    if (s.ipv6) {
        put_tclass();
        store_be16(l3 + 4, static_cast<uint16_t>(udp_len));
    } else {
        const uint32_t total = kIpv4Len + udp_len;
        l3[1] = s.tos;
        store_be16(l3 + 2, static_cast<uint16_t>(total));
        store_be16(l3 + 4, s.ip_id);
        /* Same integer sum as ipv4_checksum() over the whole header, so the same result
         * after folding (the TOS is the low byte of the first word). */
        uint32_t sum = ip4_sum_ + s.tos + total + s.ip_id;
        sum = (sum & 0xFFFF) + (sum >> 16);
        sum = (sum & 0xFFFF) + (sum >> 16);
        store_be16(l3 + 10, static_cast<uint16_t>(~sum));
    }
    store_be16(udp + 4, static_cast<uint16_t>(udp_len));
    return detail::write_transport_headers(s, op, pad, out + l4_end_);
}

size_t HeaderTemplate::build_headers(const FrameSpec &s, uint8_t *out, size_t cap) {
    if (!matches(s))
        rebuild(s);
    const OpcodeInfo &op = opcode_info(s.bth.opcode);
    const size_t h = check(s, op);
    if (h == 0 || h > cap)
        return 0;
    write(s, op, pad_len(s.payload_len), out);
    return h;
}

size_t HeaderTemplate::build_frame(const FrameSpec &s, uint8_t *out, size_t cap) {
    if (!matches(s))
        rebuild(s);
    const bool ack = AckTemplate::eligible(s);
    if (ack) {
        if (const size_t n = ack_.build(s, rebuilds_, out, cap); n != 0)
            return n;
    }
    const OpcodeInfo &op = opcode_info(s.bth.opcode);
    const size_t h = check(s, op);
    const uint32_t pad = pad_len(s.payload_len);
    if (h == 0 || h + s.payload_len + pad + kIcrcLen > cap)
        return 0;
    uint8_t *p = write(s, op, pad, out);
    const size_t tail = detail::finish_frame(s, out + l2_len_, p);
    if (tail == 0)
        return 0;
    if (ack) /* the next ACK of this QP is a copy of this one with 8 bytes patched */
        ack_.learn(s, rebuilds_, out, h + tail);
    return h + tail;
}

} // namespace droce::wire
