/* SPDX-License-Identifier: BSD-3-Clause */
#include "engine_rss.h"

#include <rte_thash.h>

namespace droce::engine {

/* Any fixed key works as long as both ends use it; this is the widely used default
 * (Microsoft's RSS verification key), so the hash can be checked against published
 * vectors. */
const uint8_t kDroceRssKey[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                                  0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                                  0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                                  0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

uint32_t rss_hash_ipv4_udp(const uint8_t *key, uint32_t src_ip, uint32_t dst_ip, uint16_t sport,
                           uint16_t dport) {
    rte_ipv4_tuple t{};
    t.src_addr = src_ip;
    t.dst_addr = dst_ip;
    t.sport = sport;
    t.dport = dport;
    return rte_softrss(reinterpret_cast<uint32_t *>(&t), RTE_THASH_V4_L4_LEN, key);
}

uint16_t rss_pick_sport(const uint8_t *key, uint32_t src_ip, uint32_t dst_ip, uint32_t target,
                        uint32_t nq, uint32_t reta_size, uint16_t fallback) {
    if (nq <= 1 || reta_size == 0 || target >= nq)
        return fallback;
    /* Start from the fallback so that QPs keep spreading over source ports (ECMP). */
    for (uint32_t i = 0; i < 0x4000; ++i) {
        const uint16_t sport =
            static_cast<uint16_t>(0xC000 | ((static_cast<uint32_t>(fallback) + i) & 0x3FFF));
        if (rss_queue(rss_hash_ipv4_udp(key, src_ip, dst_ip, sport, 4791), reta_size, nq) == target)
            return sport;
    }
    return fallback;
}

} // namespace droce::engine
