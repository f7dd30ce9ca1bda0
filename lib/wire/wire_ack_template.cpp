/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_ack_template.h"

#include <cstring>

#include "crc32_slice8.h"
#include "wire_icrc.h"
#include "wire_opcode.h"

namespace droce::wire {

namespace {

/* BTH bytes 0..7 of the spec (what Bth encode writes there; an ACK has no pad). */
void bth_head(const Bth &b, uint8_t *p) {
    Bth h = b;
    h.pad_cnt = 0;
    uint8_t full[kBthLen];
    encode(h, full);
    std::memcpy(p, full, 8);
}

} // namespace

bool AckTemplate::eligible(const FrameSpec &s) {
    return s.bth.opcode == kRcAcknowledge && s.payload_len == 0 && !s.rocev1;
}

size_t AckTemplate::build(const FrameSpec &s, uint64_t generation, uint8_t *out, size_t cap) const {
    if (len_ == 0 || !eligible(s) || generation != generation_ || len_ > cap || s.tos != tos_ ||
        s.ip_id != ip_id_)
        return 0;
    /* BTH bytes 0..7 compared field by field (no encode on the hit path). */
    const Bth &b = s.bth;
    const uint8_t flags =
        static_cast<uint8_t>((b.se ? 0x80 : 0) | (b.mig ? 0x40 : 0) | (b.tver & 0xF));
    if (flags != bth_head_[1] || b.pkey != ((bth_head_[2] << 8) | bth_head_[3]) ||
        static_cast<uint8_t>((b.fecn ? 0x80 : 0) | (b.becn ? 0x40 : 0)) != bth_head_[4] ||
        (b.dest_qp & kQpnMask) !=
            ((uint32_t{bth_head_[5]} << 16) | (uint32_t{bth_head_[6]} << 8) | bth_head_[7]))
        return 0;
    std::memcpy(out, frame_, len_);
    uint8_t *v = out + var_off_;
    const uint32_t psn = b.psn & kPsnMask;
    v[0] = b.ack_req ? 0x80 : 0;
    v[1] = static_cast<uint8_t>(psn >> 16);
    v[2] = static_cast<uint8_t>(psn >> 8);
    v[3] = static_cast<uint8_t>(psn);
    v[4] = s.aeth.syndrome;
    v[5] = static_cast<uint8_t>(s.aeth.msn >> 16);
    v[6] = static_cast<uint8_t>(s.aeth.msn >> 8);
    v[7] = static_cast<uint8_t>(s.aeth.msn);
    icrc_store(slice8::crc32_continue8(crc_fixed_, v), v + 8);
    ++hits_;
    return len_;
}

void AckTemplate::learn(const FrameSpec &s, uint64_t generation, const uint8_t *frame, size_t len) {
    len_ = 0;
    const size_t l2 = encoded_len(s.eth);
    const size_t ip = s.ipv6 ? kIpv6Len : kIpv4Len;
    const size_t var = l2 + ip + kUdpLen + 8;
    if (!eligible(s) || len != var + 8 + kIcrcLen || len > kMaxLen)
        return;
    /* The fixed part as the ICRC sees it: 0xFF prefix, variant fields masked (the same
     * fields icrc_compute masks: IP TOS/TTL/checksum or traffic class/flow label/hop
     * limit, UDP checksum, BTH byte 4). */
    uint8_t buf[8 + kIpv6Len + kUdpLen + 8];
    std::memset(buf, 0xFF, 8);
    std::memcpy(buf + 8, frame + l2, var - l2);
    uint8_t *h = buf + 8;
    if (s.ipv6) {
        h[0] |= 0x0F;
        h[1] = h[2] = h[3] = 0xFF;
        h[7] = 0xFF;
    } else {
        h[1] = 0xFF;
        h[8] = 0xFF;
        h[10] = h[11] = 0xFF;
    }
    h[ip + 6] = h[ip + 7] = 0xFF;
    h[ip + kUdpLen + 4] = 0xFF;
    crc_fixed_ = crc32_eth(buf, 8 + var - l2);
    std::memcpy(frame_, frame, len);
    var_off_ = static_cast<uint8_t>(var);
    tos_ = s.tos;
    ip_id_ = s.ip_id;
    generation_ = generation;
    bth_head(s.bth, bth_head_);
    len_ = static_cast<uint8_t>(len);
}

} // namespace droce::wire
