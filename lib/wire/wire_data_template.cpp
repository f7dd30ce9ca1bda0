/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_data_template.h"

#include <array>
#include <cstring>

#include "wire_bytes.h"
#include "wire_icrc.h"

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

namespace {
/* The extended headers' bytes after the BTH of each opcode a DataFrame may carry (RETH,
 * ImmDt), kNotTaken for the others: one load decides both. */
constexpr uint8_t kNotTaken = 0xFF;
constexpr std::array<uint8_t, 16> ext_lens() {
    std::array<uint8_t, 16> t{};
    t.fill(kNotTaken);
    t[kRcSendOnly] = 0;
    t[kRcSendOnlyImm] = 4;
    t[kRcWriteOnly] = kRethLen;
    t[kRcWriteOnlyImm] = kRethLen + 4;
    return t;
}
constexpr auto kExtLen = ext_lens();
/* The table takes exactly the opcodes takes() names. */
constexpr bool ext_lens_match_takes() {
    for (unsigned op = 0; op < 256; ++op)
        if ((op < kExtLen.size() && kExtLen[op] != kNotTaken) !=
            DataTemplate::takes(static_cast<uint8_t>(op)))
            return false;
    return true;
}
static_assert(ext_lens_match_takes());
} // namespace

size_t DataTemplate::build(const DataFrame &d, uint8_t *out, size_t cap) const {
    const uint32_t ext = d.opcode < kExtLen.size() ? kExtLen[d.opcode] : kNotTaken;
    if (!serves(d) || ext == kNotTaken) /* not takes(d.opcode) */
        return 0;
    const bool write = ext >= kRethLen;
    const bool imm = (ext & 4) != 0; /* SEND_ONLY_IMM, WRITE_ONLY_IMM */
    const uint32_t pad = pad_len(d.len);
    const uint32_t udp_len = kUdpLen + kBthLen + ext + d.len + pad + kIcrcLen;
    const size_t total = bth_off_ - kUdpLen + udp_len;
    if (total > cap || cap < kMaxHdr || udp_len + kIpv6Len > 0xFFFF)
        return 0;
    std::memcpy(out, hdr_, kMaxHdr);
    uint8_t *l3 = out + l3_off_;
    if (ipv6_) {
        store_be16(l3 + 4, static_cast<uint16_t>(udp_len));
    } else {
        const uint32_t len = kIpv4Len + udp_len;
        uint32_t sum = ip4_sum_ + len;
        sum = (sum & 0xFFFF) + (sum >> 16);
        sum = (sum & 0xFFFF) + (sum >> 16);
        store_be16(l3 + 2, static_cast<uint16_t>(len));
        store_be16(l3 + 10, static_cast<uint16_t>(~sum));
    }
    uint8_t *bth = out + bth_off_;
    store_be16(bth - kUdpLen + 4, static_cast<uint16_t>(udp_len));
    bth[0] = d.opcode;
    bth[1] = static_cast<uint8_t>((d.se ? 0x80 : 0) | pad << 4);
    store_be32(bth + 8, (d.ack_req ? 0x80000000u : 0) | (d.psn & kPsnMask));
    uint8_t *p = bth + kBthLen;
    if (write) {
        store_be64(p, d.reth.va);
        store_be32(p + 8, d.reth.rkey);
        store_be32(p + 12, d.reth.dma_len);
        p += kRethLen;
    }
    if (imm) {
        store_be32(p, d.imm);
        p += 4;
    }
    if (d.len != 0) { /* payload may be null then */
        detail::copy_payload(p, d.payload, d.len);
        p += d.len;
    }
    store_be32(p, 0); /* the pad (0-3 bytes) as one store: the ICRC overwrites the rest */
    p += pad;
    icrc_store(icrc_compute_inplace(l3, static_cast<size_t>(p - l3), ipv6_), p);
    ++hits_;
    return total;
}

} // namespace droce::wire
