/* SPDX-License-Identifier: BSD-3-Clause */
/* The raw peer's RDMA WRITE ONLY frame (raw_peer.h's peer_send carries it): 64 bytes
 * into the device's buffer, at slot psn mod 16, so repeated PSNs land on the same bytes. */
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "wire_packet.h"

namespace droce::test {

/** Addresses of one raw-peer path: MACs, IPv4 addresses (host order), UDP source port. */
struct PeerFrameAddr {
    const uint8_t *dev_mac;
    const uint8_t *peer_mac;
    uint32_t peer_ip;
    uint32_t dev_ip;
    uint16_t udp_sport;
};

inline std::vector<uint8_t> peer_write_frame(const PeerFrameAddr &a, uint32_t dest_qpn,
                                             uint32_t psn, bool ack_req, uint64_t buf_va,
                                             uint32_t rkey) {
    static const uint8_t payload[64] = {1, 2, 3};
    const wire::FrameSpec::Seg seg{payload, sizeof payload};
    wire::FrameSpec s{};
    std::memcpy(s.eth.dst, a.dev_mac, 6);
    std::memcpy(s.eth.src, a.peer_mac, 6);
    wire::gid_from_ipv4(a.peer_ip, s.src_gid);
    wire::gid_from_ipv4(a.dev_ip, s.dst_gid);
    s.ttl = 64;
    s.udp_sport = a.udp_sport;
    s.bth.opcode = wire::kRcWriteOnly;
    s.bth.pkey = 0xFFFF;
    s.bth.dest_qp = dest_qpn;
    s.bth.psn = psn;
    s.bth.ack_req = ack_req;
    s.reth = {buf_va + 64 * (psn & 15), rkey, 64};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = sizeof payload;
    std::vector<uint8_t> f(wire::frame_len(s));
    f.resize(wire::build_frame(s, f.data(), f.size()));
    return f;
}

} // namespace droce::test
