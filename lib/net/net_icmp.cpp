/* SPDX-License-Identifier: BSD-3-Clause */
#include <cstring>

#include "net.h"
#include "wire_bytes.h"

namespace droce::net {

using wire::load_be16;
using wire::load_be32;
using wire::store_be16;

namespace {

constexpr uint8_t kIcmpEchoReply = 0;
constexpr uint8_t kIcmpEchoRequest = 8;
constexpr size_t kIcmpHdrLen = 8;
constexpr uint8_t kReplyTtl = 64;

} // namespace

uint16_t inet_checksum(const uint8_t *p, size_t len) {
    uint32_t sum = 0;
    for (; len > 1; p += 2, len -= 2)
        sum += load_be16(p);
    if (len)
        sum += uint32_t{p[0]} << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

size_t handle_icmp(const Iface &ifc, uint8_t *frame, size_t len, size_t l2_len, NetCounters &c) {
    if (len < l2_len + 20) {
        ++c.icmp_drop_too_short;
        return 0;
    }
    uint8_t *ip = frame + l2_len;
    const size_t ihl = size_t{ip[0] & 0xfu} * 4;
    const size_t total = load_be16(ip + 2);
    if ((ip[0] >> 4) != 4 || ihl < 20 || total < ihl || inet_checksum(ip, ihl) != 0) {
        ++c.icmp_drop_bad_ip_header;
        return 0;
    }
    if (l2_len + total > len || total < ihl + kIcmpHdrLen) {
        ++c.icmp_drop_too_short;
        return 0;
    }
    if (load_be16(ip + 6) & 0x3fff) { /* MF or an offset: we do not reassemble */
        ++c.icmp_drop_fragment;
        return 0;
    }
    const uint32_t dst = load_be32(ip + 16);
    if (dst != ifc.ip) {
        ++c.icmp_drop_not_for_us;
        return 0;
    }
    uint8_t *icmp = ip + ihl;
    const size_t icmp_len = total - ihl;
    if (inet_checksum(icmp, icmp_len) != 0) {
        ++c.icmp_drop_bad_checksum;
        return 0;
    }
    if (icmp[0] != kIcmpEchoRequest || icmp[1] != 0) {
        ++c.icmp_drop_not_echo_request;
        return 0;
    }
    ++c.icmp_echo_requests;

    /* Turn the request around in place: MACs, IPs, TTL, type; identifier, sequence and
     * data stay as they are, as every IP stack does. */
    uint8_t tmp[6];
    std::memcpy(tmp, frame + 6, 6);
    std::memcpy(frame, tmp, 6);
    std::memcpy(frame + 6, ifc.mac.data(), 6);
    std::memcpy(ip + 16, ip + 12, 4);
    ip[12] = static_cast<uint8_t>(ifc.ip >> 24);
    ip[13] = static_cast<uint8_t>(ifc.ip >> 16);
    ip[14] = static_cast<uint8_t>(ifc.ip >> 8);
    ip[15] = static_cast<uint8_t>(ifc.ip);
    ip[8] = kReplyTtl;
    store_be16(ip + 10, 0);
    store_be16(ip + 10, inet_checksum(ip, ihl));
    icmp[0] = kIcmpEchoReply;
    store_be16(icmp + 2, 0);
    store_be16(icmp + 2, inet_checksum(icmp, icmp_len));
    ++c.icmp_echo_replies;
    /* Trailing Ethernet padding of the request is not part of the datagram. */
    size_t out = l2_len + total;
    if (out < kMinFrameLen && len >= kMinFrameLen) { /* keep the reply a legal frame */
        std::memset(frame + out, 0, kMinFrameLen - out);
        out = kMinFrameLen;
    }
    return out;
}

} // namespace droce::net
