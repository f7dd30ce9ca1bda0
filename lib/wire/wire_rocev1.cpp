/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_rocev1.h"

#include <cstring>

#include "wire_headers.h"

namespace droce::wire {

namespace {

constexpr size_t kMaskedLen = 8 + kGrhLen + kBthLen;

/* 8 x 0xFF, then GRH + BTH with the variant fields set to ones. */
void masked_prefix(const uint8_t *grh, uint8_t out[kMaskedLen]) {
    std::memset(out, 0xFF, 8);
    std::memcpy(out + 8, grh, kGrhLen + kBthLen);
    uint8_t *g = out + 8;
    g[0] |= 0x0F;              /* traffic class high nibble */
    g[1] = g[2] = g[3] = 0xFF; /* traffic class low nibble + flow label */
    g[7] = 0xFF;               /* hop limit */
    g[kGrhLen + 4] = 0xFF;     /* BTH FECN/BECN/resv */
}

} // namespace

uint32_t icrc_v1_compute_segments(const uint8_t *grh, size_t grh_len, const ByteSpan *segs,
                                  uint32_t nsegs) {
    if (grh_len < kGrhLen + kBthLen)
        return 0;
    uint8_t hdr[kMaskedLen];
    masked_prefix(grh, hdr);
    uint32_t crc = crc32_eth(hdr, sizeof(hdr));
    const size_t rest = grh_len - (kGrhLen + kBthLen);
    if (rest)
        crc = crc32_combine(crc, crc32_eth(grh + kGrhLen + kBthLen, rest), rest);
    for (uint32_t i = 0; i < nsegs; ++i)
        if (segs[i].len)
            crc = crc32_combine(crc, crc32_eth(segs[i].addr, segs[i].len), segs[i].len);
    return crc;
}

uint32_t icrc_v1_compute(const uint8_t *grh, size_t len) {
    return icrc_v1_compute_segments(grh, len, nullptr, 0);
}

uint32_t icrc_v1_compute_reference(const uint8_t *grh, size_t len) {
    if (len < kGrhLen + kBthLen)
        return 0;
    uint8_t hdr[kMaskedLen];
    masked_prefix(grh, hdr);
    uint32_t st = 0xFFFFFFFFu;
    auto update = [&st](const uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; ++i) {
            st ^= p[i];
            for (int k = 0; k < 8; ++k)
                st = (st & 1) ? (0xEDB88320u ^ (st >> 1)) : (st >> 1);
        }
    };
    update(hdr, sizeof(hdr));
    update(grh + kGrhLen + kBthLen, len - (kGrhLen + kBthLen));
    return ~st;
}

void write_grh(uint8_t tclass, uint32_t flow_label, uint16_t payload_len, uint8_t hop_limit,
               const uint8_t sgid[16], const uint8_t dgid[16], uint8_t *grh) {
    Ipv6Hdr h{};
    h.tclass = tclass;
    h.flow_label = flow_label & 0xFFFFF;
    h.payload_len = payload_len;
    h.next_hdr = kGrhNextHdrBth;
    h.hop_limit = hop_limit;
    std::memcpy(h.src, sgid, 16);
    std::memcpy(h.dst, dgid, 16);
    encode(h, grh);
}

} // namespace droce::wire
