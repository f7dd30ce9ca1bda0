/* SPDX-License-Identifier: BSD-3-Clause */
/* DataTemplate::build, inline: the one-packet TX path calls it once per message, from
 * the engine's straight path, which it is compiled into. */
#pragma once

#include <array>
#include <cstring>

#include "wire_bytes.h"
#include "wire_data_template.h"
#include "wire_icrc.h"

namespace droce::wire {

namespace data_template_detail {
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
} // namespace data_template_detail

inline size_t DataTemplate::build(const DataFrame &d, uint8_t *out, size_t cap) const {
    using namespace data_template_detail;
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
