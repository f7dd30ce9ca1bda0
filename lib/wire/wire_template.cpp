/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_template.h"

#include <cstddef>
#include <cstring>

#include <immintrin.h>

#include "wire_bytes.h"
#include "wire_rocev1.h"

namespace droce::wire {

namespace {
/* The byte ranges of a FrameSpec that key a template (wire_template.h), all within its
 * first kKeyBytes bytes. */
template <class T> void mark(uint8_t *mask, size_t off, const T &) {
    std::memset(mask + off, 0xFF, sizeof(T));
}
} // namespace

bool HeaderTemplate::matches(const FrameSpec &s) const {
    static_assert(offsetof(FrameSpec, udp_sport) + sizeof(FrameSpec::udp_sport) <= kKeyBytes &&
                      offsetof(FrameSpec, flow_label) + sizeof(FrameSpec::flow_label) <=
                          kKeyBytes &&
                      sizeof(FrameSpec) >= kKeyBytes,
                  "the keyed fields lie in the first kKeyBytes of a FrameSpec");
    const auto *b = reinterpret_cast<const uint8_t *>(&s);
    const auto ld = [](const uint8_t *p) {
        return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
    };
    __m128i d = _mm_setzero_si128();
    for (size_t i = 0; i < kKeyBytes; i += 16)
        d = _mm_or_si128(d,
                         _mm_and_si128(_mm_xor_si128(ld(b + i), ld(key_ + i)), ld(key_mask_ + i)));
    return valid_ && s.rocev1 == key_rocev1_ &&
           _mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) == 0xFFFF;
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
    std::memcpy(key_, &s, kKeyBytes);
    std::memset(key_mask_, 0, kKeyBytes);
    mark(key_mask_, offsetof(FrameSpec, eth) + offsetof(EthHdr, dst), s.eth.dst);
    mark(key_mask_, offsetof(FrameSpec, eth) + offsetof(EthHdr, src), s.eth.src);
    mark(key_mask_, offsetof(FrameSpec, eth) + offsetof(EthHdr, has_vlan), s.eth.has_vlan);
    if (s.eth.has_vlan) /* not on the wire without a tag */
        mark(key_mask_, offsetof(FrameSpec, eth) + offsetof(EthHdr, vlan_tci), s.eth.vlan_tci);
    mark(key_mask_, offsetof(FrameSpec, ipv6), s.ipv6);
    mark(key_mask_, offsetof(FrameSpec, src_gid), s.src_gid);
    mark(key_mask_, offsetof(FrameSpec, dst_gid), s.dst_gid);
    mark(key_mask_, offsetof(FrameSpec, ttl), s.ttl);
    if (s.ipv6 || s.rocev1) /* IPv4 has no flow label */
        mark(key_mask_, offsetof(FrameSpec, flow_label), s.flow_label);
    mark(key_mask_, offsetof(FrameSpec, udp_sport), s.udp_sport);
    key_rocev1_ = s.rocev1;
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
    else if (s.path_gen != 0 && DataTemplate::eligible(s)) [[unlikely]]
        data_.learn(s, out, h); /* the QP's next one-packet requests take the straight path */
    return h + tail;
}

} // namespace droce::wire
