/* SPDX-License-Identifier: BSD-3-Clause */
#include "net_ipv6.h"

#include <arpa/inet.h>

#include <cstring>

#include "wire_bytes.h"

namespace droce::net {

using wire::load_be16;
using wire::store_be16;

namespace {

constexpr uint8_t kNdSolicit = 135;
constexpr uint8_t kNdAdvert = 136;
constexpr uint8_t kEchoRequest = 128;
constexpr uint8_t kEchoReply = 129;
constexpr uint8_t kOptSourceLla = 1;
constexpr uint8_t kOptTargetLla = 2;
constexpr uint8_t kNdHopLimit = 255; /* RFC 4861: anything else did cross a router */
constexpr uint8_t kEchoHopLimit = 64;
constexpr uint8_t kAllNodes[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};

bool prefix_match(const uint8_t *a, const uint8_t *b, uint8_t bits) {
    const uint8_t full = bits / 8;
    if (std::memcmp(a, b, full) != 0)
        return false;
    const uint8_t rest = bits % 8;
    if (rest == 0)
        return true;
    const uint8_t mask = static_cast<uint8_t>(0xFF00 >> rest);
    return ((a[full] ^ b[full]) & mask) == 0;
}

uint32_t sum16(const uint8_t *p, size_t len, uint32_t acc) {
    for (; len > 1; p += 2, len -= 2)
        acc += load_be16(p);
    if (len)
        acc += uint32_t{p[0]} << 8;
    return acc;
}

/* Writes the IPv6 header of an ICMPv6 message of plen bytes. Traffic class and flow label
 * 0, as the Linux stack sends ND (the vectors' NS/NA). */
void write_ip6(uint8_t *ip, uint16_t plen, uint8_t hop, const uint8_t *src, const uint8_t *dst) {
    ip[0] = 0x60;
    ip[1] = ip[2] = ip[3] = 0;
    store_be16(ip + 4, plen);
    ip[6] = kIpProtoIcmpv6;
    ip[7] = hop;
    std::memmove(ip + 8, src, 16);
    std::memmove(ip + 24, dst, 16);
}

/* The link-layer address option of type `want` in ND options [p, p+n); *bad when an
 * option has length 0 or runs past the end (RFC 4861 7.1.1: drop the message). */
const uint8_t *find_lla(const uint8_t *p, size_t n, uint8_t want, bool *bad) {
    const uint8_t *found = nullptr;
    while (n > 0) {
        if (n < 2 || p[1] == 0 || size_t{p[1]} * 8 > n) {
            *bad = true;
            return nullptr;
        }
        const size_t ol = size_t{p[1]} * 8;
        if (p[0] == want && ol >= 8)
            found = p + 2;
        p += ol;
        n -= ol;
    }
    return found;
}

} // namespace

/* ---- Iface6 ---- */

int Iface6::find(const uint8_t a[16]) const {
    for (uint32_t i = 0; i < naddrs; ++i)
        if (std::memcmp(addrs[i].addr.data(), a, 16) == 0)
            return static_cast<int>(i);
    return -1;
}

bool Iface6::on_link(const uint8_t a[16]) const {
    if (ipv6_is_link_local(a))
        return true;
    for (uint32_t i = 1; i < naddrs; ++i)
        if (prefix_match(addrs[i].addr.data(), a, addrs[i].prefix_len))
            return true;
    return false;
}

bool Iface6::add(const Ip6 &a, uint8_t prefix_len, int32_t vlan) {
    if (naddrs >= kMaxIp6Addrs || find(a.data()) >= 0 || prefix_len > 128 || vlan > 4094)
        return false;
    addrs[naddrs].addr = a;
    addrs[naddrs].prefix_len = prefix_len;
    addrs[naddrs].vlan = vlan < 0 ? -1 : vlan;
    ++naddrs;
    return true;
}

bool Iface6::has_gateway() const { return !ipv6_is_unspecified(gateway.data()); }

bool Iface6::accepts_multicast_mac(const uint8_t dst[6]) const {
    if (dst[0] != 0x33 || dst[1] != 0x33)
        return false;
    static constexpr uint8_t kAllNodesMac[4] = {0, 0, 0, 1};
    if (std::memcmp(dst + 2, kAllNodesMac, 4) == 0)
        return true;
    if (dst[2] != 0xff)
        return false;
    for (uint32_t i = 0; i < naddrs; ++i)
        if (std::memcmp(dst + 3, addrs[i].addr.data() + 13, 3) == 0)
            return true;
    return false;
}

Iface6 make_iface6(const Mac &mac) {
    Iface6 f;
    f.mac = mac;
    const Gid ll = GidTable::link_local(mac);
    std::memcpy(f.addrs[0].addr.data(), ll.raw, 16);
    f.addrs[0].prefix_len = 64;
    f.naddrs = 1;
    return f;
}

/* ---- addresses ---- */

bool parse_ipv6(const std::string &s, Ip6 *addr) {
    return inet_pton(AF_INET6, s.c_str(), addr->data()) == 1;
}

Status parse_ipv6_cidr(const std::string &s, Ip6 *addr, uint8_t *prefix_len) {
    const size_t slash = s.find('/');
    if (slash == std::string::npos)
        return Status(EINVAL, "IPv6 address '" + s + "' needs a prefix length (e.g. /64)");
    if (!parse_ipv6(s.substr(0, slash), addr))
        return Status(EINVAL, "bad IPv6 address '" + s.substr(0, slash) + "'");
    const std::string p = s.substr(slash + 1);
    if (p.empty() || p.size() > 3 || p.find_first_not_of("0123456789") != std::string::npos ||
        std::stoul(p) > 128)
        return Status(EINVAL, "bad IPv6 prefix length '" + p + "' (0..128)");
    *prefix_len = static_cast<uint8_t>(std::stoul(p));
    if (ipv6_is_multicast(addr->data()) || ipv6_is_unspecified(addr->data()))
        return Status(EINVAL, "IPv6 address '" + s + "' is not a unicast address");
    return {};
}

std::string ipv6_str(const uint8_t a[16]) {
    char buf[INET6_ADDRSTRLEN];
    return inet_ntop(AF_INET6, a, buf, sizeof buf) ? buf : "?";
}

bool ipv6_is_link_local(const uint8_t a[16]) { return a[0] == 0xfe && (a[1] & 0xc0) == 0x80; }
bool ipv6_is_multicast(const uint8_t a[16]) { return a[0] == 0xff; }
bool ipv6_is_unspecified(const uint8_t a[16]) {
    static constexpr uint8_t kZero[16] = {};
    return std::memcmp(a, kZero, 16) == 0;
}

Ip6 solicited_node(const uint8_t a[16]) {
    Ip6 g{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, a[13], a[14], a[15]};
    return g;
}

Mac ipv6_multicast_mac(const uint8_t group[16]) {
    return Mac{0x33, 0x33, group[12], group[13], group[14], group[15]};
}

/* ---- neighbour cache ---- */

Neighbor6 *NeighTable6::find(const uint8_t ip[16]) {
    for (auto &n : slots_)
        if (n.state != NeighState::Free && std::memcmp(n.ip.data(), ip, 16) == 0)
            return &n;
    return nullptr;
}

Neighbor6 *NeighTable6::insert(const uint8_t ip[16]) {
    for (auto &n : slots_)
        if (n.state == NeighState::Free) {
            n = Neighbor6{};
            std::memcpy(n.ip.data(), ip, 16);
            n.state = NeighState::Incomplete;
            ++used_;
            return &n;
        }
    return nullptr;
}

const Neighbor6 *NeighTable6::lookup(const uint8_t ip[16]) const {
    return const_cast<NeighTable6 *>(this)->find(ip);
}

bool NeighTable6::update(const uint8_t ip[16], const Mac &mac, uint64_t now_ns, bool create) {
    Neighbor6 *n = find(ip);
    if (n == nullptr && (!create || (n = insert(ip)) == nullptr))
        return false;
    n->mac = mac;
    n->state = NeighState::Reachable;
    n->updated_ns = now_ns;
    n->probes = 0;
    return true;
}

ResolveStep NeighTable6::resolve(const uint8_t ip[16], uint64_t now_ns, uint64_t retry_ns,
                                 Mac *mac) {
    Neighbor6 *n = find(ip);
    if (n == nullptr && (n = insert(ip)) == nullptr)
        return ResolveStep::TableFull;
    if (n->state == NeighState::Reachable) {
        *mac = n->mac;
        return ResolveStep::Resolved;
    }
    if (n->probes == 0 || now_ns - n->probe_ns >= retry_ns) {
        n->probe_ns = now_ns;
        ++n->probes;
        return ResolveStep::SendProbe;
    }
    return ResolveStep::Wait;
}

Result<Ip6> next_hop6(const Iface6 &ifc, const uint8_t dst[16]) {
    Ip6 d;
    std::memcpy(d.data(), dst, 16);
    if (ipv6_is_multicast(dst) || ipv6_is_unspecified(dst))
        return Status(EINVAL, "IPv6 destination " + ipv6_str(dst) + " is not a unicast address");
    if (ifc.on_link(dst))
        return d;
    if (ifc.has_gateway())
        return ifc.gateway;
    return Status(ENETUNREACH, "IPv6 destination " + ipv6_str(dst) +
                                   " is off-link and no IPv6 gateway is configured");
}

uint32_t source_index(const Iface6 &ifc, const uint8_t dst[16]) {
    if (ipv6_is_link_local(dst) || ifc.naddrs < 2)
        return 0;
    for (uint32_t i = 1; i < ifc.naddrs; ++i)
        if (prefix_match(ifc.addrs[i].addr.data(), dst, ifc.addrs[i].prefix_len))
            return i;
    return 1;
}

const Ip6 &source_for(const Iface6 &ifc, const uint8_t dst[16]) {
    return ifc.addrs[source_index(ifc, dst)].addr;
}

/* ---- ICMPv6 ---- */

uint16_t icmp6_checksum(const uint8_t *ip6, const uint8_t *msg, size_t len) {
    uint32_t acc = sum16(ip6 + 8, 32, 0); /* source and destination */
    acc += static_cast<uint32_t>(len >> 16) + static_cast<uint32_t>(len & 0xFFFF);
    acc += kIpProtoIcmpv6;
    acc = sum16(msg, len, acc);
    while (acc >> 16)
        acc = (acc & 0xFFFF) + (acc >> 16);
    return static_cast<uint16_t>(~acc);
}

namespace {

/* An ICMPv6 message of a frame, once its IPv6 header, length and checksum hold. */
struct Icmp6Msg {
    uint8_t *ip = nullptr;  /* the IPv6 header */
    uint8_t *msg = nullptr; /* the ICMPv6 message */
    size_t mlen = 0;
    uint16_t vid = 0; /* the frame's VLAN (priority-tagged = untagged = 0) */
};

/* The frame's ICMPv6 message, or false with the drop counted. */
bool icmp6_message(uint8_t *frame, size_t len, size_t l2_len, Net6Counters &c, Icmp6Msg &m) {
    if (len < l2_len + kIpv6HdrLen + 4) {
        ++c.icmp6_drop_too_short;
        return false;
    }
    m.ip = frame + l2_len;
    /* Extension headers (hop-by-hop on MLD) are not walked: such frames are not ND. */
    if ((m.ip[0] >> 4) != 6 || m.ip[6] != kIpProtoIcmpv6) {
        ++c.icmp6_drop_bad_ip_header;
        return false;
    }
    m.mlen = load_be16(m.ip + 4);
    if (m.mlen < 4 || l2_len + kIpv6HdrLen + m.mlen > len) {
        ++c.icmp6_drop_too_short;
        return false;
    }
    m.msg = m.ip + kIpv6HdrLen;
    if (icmp6_checksum(m.ip, m.msg, m.mlen) != 0) {
        ++c.icmp6_drop_bad_checksum;
        return false;
    }
    m.vid = l2_len >= 18 ? load_be16(frame + 14) & 0xFFF : 0;
    return true;
}

/* Whether the destination address idx (ifc.find's, < 0: not ours) may answer a frame
 * of VLAN vid: each address answers on its own VLAN only. Counts the drop when not. */
bool ours_on_vlan(const Iface6 &ifc, int idx, uint16_t vid, Net6Counters &c) {
    if (idx < 0) {
        ++c.icmp6_drop_not_for_us;
        return false;
    }
    if (ifc.vid_of(idx) != vid) {
        ++c.icmp6_drop_wrong_vlan;
        return false;
    }
    return true;
}

void on_nd_advert(const Iface6 &ifc, const uint8_t *frame, const uint8_t target[16],
                  const uint8_t *lla, NeighTable6 &neigh, uint64_t now_ns, Net6Counters &c) {
    Mac mac;
    std::memcpy(mac.data(), lla ? lla : frame + 6, 6);
    if (ifc.find(target) >= 0)
        ++c.icmp6_drop_not_for_us; /* someone else claims our address */
    else if (neigh.update(target, mac, now_ns, false))
        ++c.nd_adverts_received;
    else
        ++c.nd_drop_unsolicited_advert;
}

/* The advertisement answering a solicitation, in place: to the solicitor (all-nodes for
 * DAD), from the target itself, Solicited (unless DAD) + Override, our MAC as the option. */
void write_nd_advert(const Iface6 &ifc, uint8_t *frame, const Icmp6Msg &m, const uint8_t target[16],
                     const uint8_t peer[16], bool dad) {
    if (dad) {
        const Mac am = ipv6_multicast_mac(kAllNodes);
        std::memcpy(frame, am.data(), 6);
    } else {
        std::memcpy(frame, frame + 6, 6);
    }
    std::memcpy(frame + 6, ifc.mac.data(), 6);
    write_ip6(m.ip, 32, kNdHopLimit, target, peer);
    uint8_t *msg = m.msg;
    msg[0] = kNdAdvert;
    msg[1] = 0;
    msg[2] = msg[3] = 0;
    msg[4] = dad ? 0x20 : 0x60;
    msg[5] = msg[6] = msg[7] = 0;
    std::memcpy(msg + 8, target, 16);
    msg[24] = kOptTargetLla;
    msg[25] = 1;
    std::memcpy(msg + 26, ifc.mac.data(), 6);
    store_be16(msg + 2, icmp6_checksum(m.ip, msg, 32));
}

/* A solicitation. From :: it is duplicate address detection: no source option allowed
 * and the answer goes to all-nodes (RFC 4861 7.1.1, 7.2.4). Returns the answer's length. */
size_t on_nd_solicit(const Iface6 &ifc, uint8_t *frame, size_t cap, size_t l2_len,
                     const Icmp6Msg &m, const uint8_t target[16], const uint8_t *lla,
                     NeighTable6 &neigh, uint64_t now_ns, Net6Counters &c) {
    const bool dad = ipv6_is_unspecified(m.ip + 8);
    if (dad && (lla != nullptr || m.ip[24] != 0xff)) {
        ++c.icmp6_drop_bad_nd;
        return 0;
    }
    if (!ours_on_vlan(ifc, ifc.find(target), m.vid, c))
        return 0;
    ++c.nd_solicits_received;
    const size_t out_len = l2_len + kIpv6HdrLen + 32;
    if (out_len > cap) {
        ++c.icmp6_drop_no_room;
        return 0;
    }
    uint8_t peer[16];
    std::memcpy(peer, dad ? kAllNodes : m.ip + 8, 16);
    if (!dad && lla != nullptr) {
        Mac mac;
        std::memcpy(mac.data(), lla, 6);
        if (!neigh.update(peer, mac, now_ns, true))
            ++c.neigh6_table_full;
    }
    write_nd_advert(ifc, frame, m, target, peer, dad);
    ++c.nd_adverts_sent;
    return out_len;
}

/* Neighbour Solicitation or Advertisement: hop limit 255, code 0, a unicast target and
 * well-formed options (RFC 4861 7.1). */
size_t on_nd(const Iface6 &ifc, uint8_t *frame, size_t cap, size_t l2_len, const Icmp6Msg &m,
             NeighTable6 &neigh, uint64_t now_ns, Net6Counters &c) {
    const uint8_t *msg = m.msg;
    if (m.ip[7] != kNdHopLimit || msg[1] != 0 || m.mlen < 24 || ipv6_is_multicast(msg + 8)) {
        ++c.icmp6_drop_bad_nd;
        return 0;
    }
    const bool solicit = msg[0] == kNdSolicit;
    bool bad = false;
    const uint8_t *lla =
        find_lla(msg + 24, m.mlen - 24, solicit ? kOptSourceLla : kOptTargetLla, &bad);
    if (bad) {
        ++c.icmp6_drop_bad_nd;
        return 0;
    }
    uint8_t target[16];
    std::memcpy(target, msg + 8, 16);
    if (!solicit) {
        on_nd_advert(ifc, frame, target, lla, neigh, now_ns, c);
        return 0;
    }
    return on_nd_solicit(ifc, frame, cap, l2_len, m, target, lla, neigh, now_ns, c);
}

/* An echo request to one of our addresses: the reply, in place. */
size_t on_echo_request(const Iface6 &ifc, uint8_t *frame, size_t l2_len, const Icmp6Msg &m,
                       Net6Counters &c) {
    uint8_t *ip = m.ip;
    if (!ours_on_vlan(ifc, ifc.find(ip + 24), m.vid, c))
        return 0;
    ++c.icmp6_echo_requests;
    uint8_t src[16];
    std::memcpy(src, ip + 8, 16);
    std::memcpy(ip + 8, ip + 24, 16);
    std::memcpy(ip + 24, src, 16);
    ip[7] = kEchoHopLimit;
    std::memcpy(frame, frame + 6, 6);
    std::memcpy(frame + 6, ifc.mac.data(), 6);
    m.msg[0] = kEchoReply;
    m.msg[2] = m.msg[3] = 0;
    store_be16(m.msg + 2, icmp6_checksum(ip, m.msg, m.mlen));
    ++c.icmp6_echo_replies;
    return l2_len + kIpv6HdrLen + m.mlen;
}

} // namespace

size_t handle_icmp6(const Iface6 &ifc, uint8_t *frame, size_t len, size_t cap, size_t l2_len,
                    NeighTable6 &neigh, uint64_t now_ns, Net6Counters &c) {
    Icmp6Msg m;
    if (!icmp6_message(frame, len, l2_len, c, m))
        return 0;
    switch (m.msg[0]) {
    case kNdSolicit:
    case kNdAdvert:
        return on_nd(ifc, frame, cap, l2_len, m, neigh, now_ns, c);
    case kEchoRequest:
        return on_echo_request(ifc, frame, l2_len, m, c);
    default:
        ++c.icmp6_drop_unhandled_type;
        return 0;
    }
}

size_t build_ns(const Iface6 &ifc, const uint8_t target[16], uint8_t *out, size_t cap) {
    const Ip6Prefix &src = ifc.addrs[source_index(ifc, target)];
    /* The source address's own VLAN (priority 0), else the interface's tag. */
    const uint16_t tci = src.vlan >= 0 ? static_cast<uint16_t>(src.vlan) : ifc.vlan_tci;
    const size_t l2 = tci ? 18 : 14;
    const size_t total = l2 + kIpv6HdrLen + 32;
    if (cap < total)
        return 0;
    const Ip6 group = solicited_node(target);
    const Mac dst = ipv6_multicast_mac(group.data());
    std::memcpy(out, dst.data(), 6);
    std::memcpy(out + 6, ifc.mac.data(), 6);
    if (tci) {
        store_be16(out + 12, kEtherTypeVlan);
        store_be16(out + 14, tci);
    }
    store_be16(out + l2 - 2, kEtherTypeIpv6);
    uint8_t *ip = out + l2;
    write_ip6(ip, 32, kNdHopLimit, src.addr.data(), group.data());
    uint8_t *msg = ip + kIpv6HdrLen;
    std::memset(msg, 0, 8);
    msg[0] = kNdSolicit;
    std::memcpy(msg + 8, target, 16);
    msg[24] = kOptSourceLla;
    msg[25] = 1;
    std::memcpy(msg + 26, ifc.mac.data(), 6);
    store_be16(msg + 2, icmp6_checksum(ip, msg, 32));
    return total;
}

size_t vlan_push(uint8_t *frame, size_t len, size_t cap, uint16_t tci) {
    if (len < 14 || cap < len + 4)
        return 0;
    std::memmove(frame + 16, frame + 12, len - 12);
    store_be16(frame + 12, kEtherTypeVlan);
    store_be16(frame + 14, tci);
    return len + 4;
}

} // namespace droce::net
