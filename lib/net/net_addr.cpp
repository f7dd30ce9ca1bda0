/* SPDX-License-Identifier: BSD-3-Clause */
#include <cstdio>
#include <cstring>

#include "net.h"
#include "wire_bytes.h"

namespace droce::net {

Status parse_ipv4_cidr(const std::string &s, uint32_t *ip, uint8_t *prefix_len) {
    unsigned a, b, c, d, p = 32;
    char tail = 0;
    const int n = std::sscanf(s.c_str(), "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &p, &tail);
    if ((n != 4 && n != 5) || a > 255 || b > 255 || c > 255 || d > 255 || p > 32)
        return Status(EINVAL, "bad IPv4 address '" + s + "' (want a.b.c.d/len)");
    if (n == 4 && s.find('/') != std::string::npos)
        return Status(EINVAL, "bad IPv4 address '" + s + "' (want a.b.c.d/len)");
    *ip = (a << 24) | (b << 16) | (c << 8) | d;
    *prefix_len = static_cast<uint8_t>(p);
    return {};
}

bool parse_mac(const std::string &s, Mac *mac) {
    unsigned v[6];
    char tail = 0;
    if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                    &tail) != 6)
        return false;
    for (int i = 0; i < 6; ++i) {
        if (v[i] > 255)
            return false;
        (*mac)[i] = static_cast<uint8_t>(v[i]);
    }
    return true;
}

std::string mac_str(const Mac &m) {
    char buf[18];
    std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                  m[5]);
    return buf;
}

std::string ipv4_str(uint32_t ip) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff,
                  ip & 0xff);
    return buf;
}

Result<uint32_t> next_hop(const Iface &ifc, uint32_t dst) {
    if (dst == ifc.ip)
        return Status(EINVAL, "destination " + ipv4_str(dst) +
                                  " is our own address (not routed: a loopback path is a GID of "
                                  "ours, engine_route.cpp)");
    if (ifc.on_link(dst))
        return dst;
    if (ifc.gateway != 0)
        return ifc.gateway; /* the gateway's MAC, the peer's IP: routed */
    return Status(ENETUNREACH, "destination " + ipv4_str(dst) + " is not on " +
                                   ipv4_str(ifc.ip & ifc.netmask()) + "/" +
                                   std::to_string(ifc.prefix_len) +
                                   " and no gateway is configured");
}

/* ---- GID table ---- */

GidTable::GidTable(const Mac &mac, const std::vector<uint32_t> &ipv4s,
                   const std::vector<Gid> &ipv6s, bool rocev1, uint16_t port_vlan,
                   const std::vector<uint16_t> &ipv6_vlans) {
    gids_.push_back(link_local(mac));
    for (uint32_t ip : ipv4s)
        gids_.push_back(ipv4_mapped(ip));
    vlans_.assign(gids_.size(), port_vlan);
    /* After the IPv4 one, as rxe lists a port's addresses (the vectors' IPv6 GID is 2). */
    for (size_t i = 0; i < ipv6s.size(); ++i) {
        gids_.push_back(ipv6s[i]);
        vlans_.push_back(i < ipv6_vlans.size() ? ipv6_vlans[i] : port_vlan);
    }
    if (rocev1) {
        /* Linux interleaves v1 and v2 per address; appending keeps the v2 indexes that
         * tools and peers (rxe, perftest's -x 1 default) rely on. */
        const size_t n = gids_.size();
        v1_from_ = static_cast<uint32_t>(n);
        for (size_t i = 0; i < n; ++i) {
            gids_.push_back(gids_[i]);
            vlans_.push_back(vlans_[i]);
        }
    }
}

int GidTable::find_v1(const uint8_t gid[16]) const {
    for (size_t i = v1_from_; i < gids_.size(); ++i)
        if (std::memcmp(gids_[i].raw, gid, 16) == 0)
            return static_cast<int>(i);
    return -1;
}

Gid GidTable::link_local(const Mac &mac) {
    /* Modified EUI-64 (RFC 4291 appendix A): flip the universal/local bit, put ff:fe in
     * the middle — the GID the kernel gives a RoCE port at index 0. */
    Gid g{};
    g.raw[0] = 0xfe;
    g.raw[1] = 0x80;
    g.raw[8] = mac[0] ^ 0x02;
    g.raw[9] = mac[1];
    g.raw[10] = mac[2];
    g.raw[11] = 0xff;
    g.raw[12] = 0xfe;
    g.raw[13] = mac[3];
    g.raw[14] = mac[4];
    g.raw[15] = mac[5];
    return g;
}

Gid GidTable::ipv4_mapped(uint32_t ip) {
    Gid g{};
    g.raw[10] = g.raw[11] = 0xff;
    g.raw[12] = static_cast<uint8_t>(ip >> 24);
    g.raw[13] = static_cast<uint8_t>(ip >> 16);
    g.raw[14] = static_cast<uint8_t>(ip >> 8);
    g.raw[15] = static_cast<uint8_t>(ip);
    return g;
}

bool GidTable::is_ipv4_mapped(const Gid &g) {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::memcmp(g.raw, kPrefix, 12) == 0;
}

uint32_t GidTable::to_ipv4(const Gid &g) { return wire::load_be32(g.raw + 12); }

int GidTable::find(const uint8_t gid[16]) const {
    for (size_t i = 0; i < gids_.size(); ++i)
        if (std::memcmp(gids_[i].raw, gid, 16) == 0)
            return static_cast<int>(i);
    return -1;
}

std::vector<GidEntry> GidTable::entries() const {
    std::vector<GidEntry> v;
    for (size_t i = 0; i < gids_.size(); ++i)
        v.push_back(GidEntry{gids_[i], is_v1(static_cast<uint32_t>(i)) ? "IB/RoCE v1" : "RoCE v2",
                             vlans_[i]});
    return v;
}

/* ---- neighbour table ---- */

NeighTable::NeighTable(uint32_t capacity) {
    uint32_t n = 16;
    while (n < capacity * 2) /* keep the load factor <= 1/2 so probes stay short */
        n <<= 1;
    slots_.resize(n);
    mask_ = n - 1;
}

namespace {
inline uint32_t hash_ip(uint32_t ip) { return (ip * 0x9E3779B1u) >> 7; }
} // namespace

Neighbor *NeighTable::find_slot(uint32_t ip, bool for_insert) {
    /* Linear probing without deletion tombstones: remove() re-inserts the run after the
     * hole, so a Free slot always ends a probe sequence. */
    uint32_t i = hash_ip(ip) & mask_;
    for (uint32_t k = 0; k <= mask_; ++k, i = (i + 1) & mask_) {
        Neighbor &n = slots_[i];
        if (n.state == NeighState::Free)
            return for_insert ? &n : nullptr;
        if (n.ip == ip)
            return &n;
    }
    return nullptr;
}

const Neighbor *NeighTable::lookup(uint32_t ip) const {
    return const_cast<NeighTable *>(this)->find_slot(ip, false);
}

bool NeighTable::update(uint32_t ip, const Mac &mac, uint64_t now_ns, bool create) {
    Neighbor *n = find_slot(ip, false);
    if (n == nullptr) {
        if (!create || used_ * 2 >= slots_.size())
            return false;
        n = find_slot(ip, true);
        *n = Neighbor{};
        n->ip = ip;
        ++used_;
    }
    n->mac = mac;
    n->state = NeighState::Reachable;
    n->updated_ns = now_ns;
    n->probes = 0;
    return true;
}

ResolveStep NeighTable::resolve(uint32_t ip, uint64_t now_ns, uint64_t retry_ns, Mac *mac) {
    Neighbor *n = find_slot(ip, false);
    if (n == nullptr) {
        if (used_ * 2 >= slots_.size())
            return ResolveStep::TableFull;
        n = find_slot(ip, true);
        *n = Neighbor{};
        n->ip = ip;
        n->state = NeighState::Incomplete;
        ++used_;
    }
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

void NeighTable::remove(uint32_t ip) {
    Neighbor *n = find_slot(ip, false);
    if (n == nullptr)
        return;
    n->state = NeighState::Free;
    --used_;
    /* Re-insert the rest of the probe run so lookups never stop early at the hole. */
    uint32_t i = (static_cast<uint32_t>(n - slots_.data()) + 1) & mask_;
    while (slots_[i].state != NeighState::Free) {
        Neighbor moved = slots_[i];
        slots_[i].state = NeighState::Free;
        *find_slot(moved.ip, true) = moved;
        i = (i + 1) & mask_;
    }
}

} // namespace droce::net
