/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_icrc_small.h"

#include <emmintrin.h>

#include <cstring>

#include "wire_headers.h"
#include "wire_icrc.h"

namespace droce::wire {

namespace {

/* OR masks over the ICRC's input from its start: 8 bytes of 0xFF (the prefix), then the
 * IP header, UDP header and BTH with their variant fields set to ones (IPv4: TOS, TTL,
 * header checksum; IPv6: traffic class, flow label, hop limit; UDP checksum; BTH byte 4).
 * Four 16-byte blocks cover the IPv6 layout (prefix + 60 bytes of headers), three the
 * IPv4 one (prefix + 40). */
struct Masks {
    alignas(16) uint8_t b[64];
};
constexpr Masks make_masks(bool ipv6) {
    Masks m{};
    for (int i = 0; i < 8; ++i)
        m.b[i] = 0xFF;
    uint8_t *h = m.b + 8;
    const size_t ip = ipv6 ? kIpv6Len : kIpv4Len;
    if (ipv6) {
        h[0] = 0x0F;
        h[1] = h[2] = h[3] = 0xFF;
        h[7] = 0xFF;
    } else {
        h[1] = 0xFF;
        h[8] = 0xFF;
        h[10] = h[11] = 0xFF;
    }
    h[ip + 6] = h[ip + 7] = 0xFF;
    h[ip + kUdpLen + 4] = 0xFF;
    return m;
}
constexpr Masks kMask4 = make_masks(false), kMask6 = make_masks(true);

} // namespace

uint32_t icrc_compute_small(const uint8_t *l3, size_t len, bool ipv6) {
    alignas(16) uint8_t buf[8 + kIcrcSmallMax + 16];
    const Masks &m = ipv6 ? kMask6 : kMask4;
    const auto mask = [&](size_t i) {
        return _mm_load_si128(reinterpret_cast<const __m128i *>(m.b + 16 * i));
    };
    /* Block 0: the 0xFF prefix in the low half, IP bytes 0..7 in the high half. */
    const __m128i head = _mm_slli_si128(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(l3)), 8);
    _mm_store_si128(reinterpret_cast<__m128i *>(buf), _mm_or_si128(head, mask(0)));
    /* Blocks 1.. : input bytes 16i .. 16i+15 are l3[16i - 8 ..]. len >= the headers, so
     * every block loaded here lies inside [l3, l3 + len). */
    const size_t nblk = ipv6 ? 4 : 3;
    for (size_t i = 1; i < nblk; ++i) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(l3 + 16 * i - 8));
        _mm_store_si128(reinterpret_cast<__m128i *>(buf + 16 * i), _mm_or_si128(v, mask(i)));
    }
    const size_t done = 16 * nblk - 8; /* bytes of l3 in buf so far */
    std::memcpy(buf + 16 * nblk, l3 + done, len - done);
    return crc32_eth(buf, 8 + len);
}

} // namespace droce::wire
