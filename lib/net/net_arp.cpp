/* SPDX-License-Identifier: BSD-3-Clause */
#include <cstring>

#include "net.h"
#include "wire_bytes.h"

namespace droce::net {

using wire::load_be16;
using wire::load_be32;
using wire::store_be16;
using wire::store_be32;

namespace {

constexpr uint16_t kArpHrdEther = 1;
constexpr uint16_t kArpOpRequest = 1;
constexpr uint16_t kArpOpReply = 2;
constexpr size_t kArpLen = 28;

void write_arp_body(uint8_t *a, uint16_t op, const Mac &sha, uint32_t spa, const Mac &tha,
                    uint32_t tpa) {
    store_be16(a + 0, kArpHrdEther);
    store_be16(a + 2, kEtherTypeIpv4);
    a[4] = 6;
    a[5] = 4;
    store_be16(a + 6, op);
    std::memcpy(a + 8, sha.data(), 6);
    store_be32(a + 14, spa);
    std::memcpy(a + 18, tha.data(), 6);
    store_be32(a + 24, tpa);
}

} // namespace

bool parse_arp(const uint8_t *frame, size_t len, size_t l2_len, ArpPacket *out) {
    if (len < l2_len + kArpLen)
        return false;
    const uint8_t *a = frame + l2_len;
    if (load_be16(a) != kArpHrdEther || load_be16(a + 2) != kEtherTypeIpv4 || a[4] != 6 ||
        a[5] != 4)
        return false;
    out->op = load_be16(a + 6);
    std::memcpy(out->sha.data(), a + 8, 6);
    out->spa = load_be32(a + 14);
    std::memcpy(out->tha.data(), a + 18, 6);
    out->tpa = load_be32(a + 24);
    return true;
}

ArpVerdict handle_arp(const Iface &ifc, uint8_t *frame, size_t len, size_t l2_len,
                      NeighTable &neigh, uint64_t now_ns, NetCounters &c) {
    if (len < l2_len + kArpLen) {
        ++c.arp_drop_too_short;
        return ArpVerdict::Dropped;
    }
    ArpPacket p;
    if (!parse_arp(frame, len, l2_len, &p) || (p.op != kArpOpRequest && p.op != kArpOpReply)) {
        ++c.arp_drop_malformed;
        return ArpVerdict::Dropped;
    }
    if (p.spa == ifc.ip && p.sha != ifc.mac) {
        ++c.arp_drop_address_conflict;
        return ArpVerdict::Dropped;
    }
    if (p.tpa != ifc.ip) {
        /* RFC 826 merge: refresh a neighbour we already know (also covers gratuitous
         * ARP after a MAC change), but do not learn strangers from others' traffic. */
        if (p.spa != 0)
            neigh.update(p.spa, p.sha, now_ns, false);
        ++c.arp_drop_not_for_us;
        return ArpVerdict::Dropped;
    }
    /* For us: the sender will talk to us next, so learn it (saves a round trip). */
    if (p.spa != 0 && !neigh.update(p.spa, p.sha, now_ns, true))
        ++c.neigh_table_full;
    if (p.op == kArpOpReply) {
        ++c.arp_replies_received;
        return ArpVerdict::Learned;
    }
    ++c.arp_requests_received;
    /* Rewrite in place: the reply is the request with addresses turned around. */
    std::memcpy(frame, p.sha.data(), 6);
    std::memcpy(frame + 6, ifc.mac.data(), 6);
    write_arp_body(frame + l2_len, kArpOpReply, ifc.mac, ifc.ip, p.sha, p.spa);
    ++c.arp_replies_sent;
    return ArpVerdict::Reply;
}

size_t build_arp_request(const Iface &ifc, uint32_t target_ip, uint8_t *out, size_t cap) {
    if (cap < kMinFrameLen)
        return 0;
    std::memset(out, 0, kMinFrameLen);
    std::memcpy(out, kBroadcastMac.data(), 6);
    std::memcpy(out + 6, ifc.mac.data(), 6);
    store_be16(out + 12, kEtherTypeArp);
    write_arp_body(out + 14, kArpOpRequest, ifc.mac, ifc.ip, Mac{}, target_ip);
    return kMinFrameLen;
}

} // namespace droce::net
