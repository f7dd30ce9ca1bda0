/* SPDX-License-Identifier: BSD-3-Clause */
/* A random path in a FrameSpec for the header template tests: MACs, VLAN, IP version,
 * GIDs (IPv4-mapped for IPv4), TOS, TTL, flow label, UDP source port, and the BTH's P_Key
 * and destination QP. layout: bit 0 a VLAN tag, bit 1 IPv6. Everything else is zero. */
#pragma once

#include <random>

#include "wire_packet.h"

inline droce::wire::FrameSpec random_path_spec(std::mt19937 &rng, int layout) {
    using namespace droce::wire;
    FrameSpec s{};
    for (auto &b : s.eth.dst)
        b = static_cast<uint8_t>(rng());
    for (auto &b : s.eth.src)
        b = static_cast<uint8_t>(rng());
    s.eth.has_vlan = layout & 1;
    s.eth.vlan_tci = static_cast<uint16_t>(rng());
    s.ipv6 = layout & 2;
    for (int i = 0; i < 16; ++i) {
        s.src_gid[i] = static_cast<uint8_t>(rng());
        s.dst_gid[i] = static_cast<uint8_t>(rng());
    }
    if (!s.ipv6) {
        gid_from_ipv4(static_cast<uint32_t>(rng()), s.src_gid);
        gid_from_ipv4(static_cast<uint32_t>(rng()), s.dst_gid);
    }
    s.tos = static_cast<uint8_t>(rng());
    s.ttl = static_cast<uint8_t>(rng());
    s.flow_label = static_cast<uint32_t>(rng()) & 0xFFFFF;
    s.udp_sport = static_cast<uint16_t>(rng());
    s.bth.pkey = static_cast<uint16_t>(rng());
    s.bth.dest_qp = static_cast<uint32_t>(rng()) & kQpnMask;
    return s;
}
