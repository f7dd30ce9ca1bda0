/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_data_template.h"

#include <cstring>

#include "wire_bytes.h"

namespace droce::wire {

bool DataTemplate::eligible(const FrameSpec &s) {
    const Bth &b = s.bth;
    return s.path_gen != 0 && !s.rocev1 && takes(b.opcode) && s.ip_id == 0 && !b.fecn && !b.becn &&
           !b.mig && b.tver == 0;
}

void DataTemplate::learn(const FrameSpec &s, const uint8_t *frame, size_t h) {
    if (gen_ == s.path_gen && tos_ == s.tos && gen_ != 0)
        return; /* holds these headers already (a retransmission, a paced frame) */
    gen_ = 0;
    const size_t l2 = encoded_len(s.eth);
    const size_t bth = l2 + (s.ipv6 ? kIpv6Len : kIpv4Len) + kUdpLen;
    if (!eligible(s) || bth + kBthLen > kMaxHdr || h < bth + kBthLen)
        return;
    std::memcpy(hdr_, frame, bth + kBthLen);
    std::memset(hdr_ + bth + kBthLen, 0, kMaxHdr - bth - kBthLen);
    ip4_sum_ = 0;
    if (!s.ipv6) {
        const uint8_t *ip = hdr_ + l2;
        for (size_t i = 0; i < kIpv4Len; i += 2)
            if (i != 2 && i != 10) /* total length, checksum */
                ip4_sum_ += load_be16(ip + i);
    }
    l3_off_ = static_cast<uint8_t>(l2);
    bth_off_ = static_cast<uint8_t>(bth);
    ipv6_ = s.ipv6;
    tos_ = s.tos;
    gen_ = s.path_gen;
}

} // namespace droce::wire
