/* SPDX-License-Identifier: BSD-3-Clause */
/* rte_vect_{get,set}_max_simd_bitwidth() are experimental in DPDK 22.11 (see crc_init_once). */
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API
#endif
#include "wire_icrc.h"

#include <array>
#include <cstring>

#include <rte_net_crc.h>
/* DPDK 22.11's rte_vect.h lacks extern "C" guards. */
extern "C" {
#include <rte_vect.h>
}

#include "wire_headers.h"

namespace droce::wire {

namespace {

/* rte_net_crc_set_alg() is not thread-safe: pick the algorithm once, on first use (after
 * every constructor, DPDK's included). SSE4.2/PCLMULQDQ when the CPU has it; DPDK falls
 * back to the scalar tables otherwise. Works without rte_eal_init(), with one catch:
 * rte_net_crc only takes a SIMD path when rte_vect_get_max_simd_bitwidth() >= 128, and
 * before rte_eal_init() that value is 0 (EAL sets its default, 256, during init). So when
 * it is still 0 we set EAL's own default; rte_eal_init() later resets it anyway, and a
 * user's --force-max-simd-bitwidth (set by EAL init) is left alone. */
inline void crc_init_once() {
    static const bool done = [] {
        if (rte_vect_get_max_simd_bitwidth() == 0)
            rte_vect_set_max_simd_bitwidth(RTE_VECT_DEFAULT_SIMD_BITWIDTH);
        rte_net_crc_set_alg(RTE_NET_CRC_SSE42);
        return true;
    }();
    (void)done;
}

inline uint32_t crc32_eth(const uint8_t *p, size_t len) {
    crc_init_once();
    /* Same value as zlib crc32(0, p, len). */
    return rte_net_crc_calc(p, static_cast<uint32_t>(len), RTE_NET_CRC32_ETH);
}

/* Bitwise-table CRC-32 with a running state: slow path for frames longer than the
 * scratch buffer of icrc_compute(). */
constexpr std::array<uint32_t, 256> make_crc_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k)
            c = (c & 1) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
        t[i] = c;
    }
    return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

inline uint32_t crc_update(uint32_t state, const uint8_t *p, size_t len) {
    for (size_t i = 0; i < len; ++i)
        state = kCrcTable[(state ^ p[i]) & 0xFF] ^ (state >> 8);
    return state;
}

inline size_t ip_len(bool ipv6) { return ipv6 ? kIpv6Len : kIpv4Len; }

/* Sets the variant fields of IP/UDP/BTH (hdr starts at the IP header) to ones. */
inline void mask_variant(uint8_t *hdr, bool ipv6) {
    if (ipv6) {
        hdr[0] |= 0x0F;                  /* traffic class high nibble */
        hdr[1] = hdr[2] = hdr[3] = 0xFF; /* traffic class low nibble + flow label */
        hdr[7] = 0xFF;                   /* hop limit */
    } else {
        hdr[1] = 0xFF;            /* TOS */
        hdr[8] = 0xFF;            /* TTL */
        hdr[10] = hdr[11] = 0xFF; /* header checksum */
    }
    uint8_t *udp = hdr + ip_len(ipv6);
    udp[6] = udp[7] = 0xFF;  /* UDP checksum */
    udp[kUdpLen + 4] = 0xFF; /* BTH FECN/BECN/resv */
}

} // namespace

/* Slow path without scratch buffer: table CRC over the masked headers then the rest. */
uint32_t icrc_compute_reference(const uint8_t *l3, size_t len, bool ipv6) {
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    if (len < hlen)
        return 0;
    uint8_t hdr[kIpv6Len + kUdpLen + kBthLen];
    std::memcpy(hdr, l3, hlen);
    mask_variant(hdr, ipv6);
    static constexpr uint8_t kOnes[8] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
    uint32_t st = crc_update(0xFFFFFFFFu, kOnes, sizeof(kOnes));
    st = crc_update(st, hdr, hlen);
    st = crc_update(st, l3 + hlen, len - hlen);
    return ~st;
}

uint32_t icrc_compute_inplace(uint8_t *l3, size_t len, bool ipv6) {
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    if (len < hlen)
        return 0;
    uint8_t *udp = l3 + ip_len(ipv6);
    uint8_t saved_prefix[8];
    uint8_t saved_ip[12];
    std::memcpy(saved_prefix, l3 - 8, 8);
    std::memcpy(saved_ip, l3, 12); /* covers every variant IPv4 / IPv6 field */
    const uint8_t saved_udp_csum0 = udp[6], saved_udp_csum1 = udp[7];
    const uint8_t saved_bth4 = udp[kUdpLen + 4];

    std::memset(l3 - 8, 0xFF, 8);
    mask_variant(l3, ipv6);
    const uint32_t crc = crc32_eth(l3 - 8, len + 8);

    std::memcpy(l3 - 8, saved_prefix, 8);
    std::memcpy(l3, saved_ip, 12);
    udp[6] = saved_udp_csum0;
    udp[7] = saved_udp_csum1;
    udp[kUdpLen + 4] = saved_bth4;
    return crc;
}

uint32_t icrc_compute(const uint8_t *l3, size_t len, bool ipv6) {
    const size_t hlen = ip_len(ipv6) + kUdpLen + kBthLen;
    if (len < hlen)
        return 0;
    if (len > kIcrcMaxLen)
        return icrc_compute_reference(l3, len, ipv6);
    alignas(64) static thread_local uint8_t scratch[kIcrcMaxLen + 8];
    std::memcpy(scratch + 8, l3, len);
    return icrc_compute_inplace(scratch + 8, len, ipv6);
}

uint32_t icrc_load(const uint8_t *p) {
    return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
           (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

void icrc_store(uint32_t icrc, uint8_t *p) {
    p[0] = static_cast<uint8_t>(icrc);
    p[1] = static_cast<uint8_t>(icrc >> 8);
    p[2] = static_cast<uint8_t>(icrc >> 16);
    p[3] = static_cast<uint8_t>(icrc >> 24);
}

} // namespace droce::wire
