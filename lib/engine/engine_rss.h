/* SPDX-License-Identifier: BSD-3-Clause */
/* RSS steering of droce's own flows. A RoCEv2 packet's destination UDP port is fixed
 * (4791), so the only field a sender controls is its source port: droce picks, per QP,
 * a source port whose Toeplitz hash (with the RSS key both droce ends configure) sends
 * the packet to the receive queue of the worker that owns the destination QP. */
#pragma once

#include <cstdint>

namespace droce::engine {

/** droce's RSS key (40 bytes, the length every RSS NIC takes); both ends set it. */
extern const uint8_t kDroceRssKey[40];

/** Toeplitz hash of an IPv4/UDP 4-tuple (host byte order), as the receiving NIC
 * computes it with `key`. */
uint32_t rss_hash_ipv4_udp(const uint8_t *key, uint32_t src_ip, uint32_t dst_ip, uint16_t sport,
                           uint16_t dport);

/** The receive queue a NIC with a default redirection table (entry i = queue i % nq,
 * reta_size entries) picks for that hash. */
inline uint32_t rss_queue(uint32_t hash, uint32_t reta_size, uint32_t nq) {
    return (hash % reta_size) % nq;
}

/** A source port in [0xC000, 0xFFFF] (rxe's range) whose packets from src_ip to dst_ip
 * land on queue `target` of a peer with nq queues; `fallback` when none does. */
uint16_t rss_pick_sport(const uint8_t *key, uint32_t src_ip, uint32_t dst_ip, uint32_t target,
                        uint32_t nq, uint32_t reta_size, uint16_t fallback);

} // namespace droce::engine
