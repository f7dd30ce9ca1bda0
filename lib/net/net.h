/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/net: the bits of an IP host a RoCEv2 NIC needs next to the transport — ARP,
 * ICMP echo, the GID table, the neighbour table and next-hop choice. Pure functions over
 * byte buffers: no DPDK, no clock, no allocation after construction. The engine hands
 * frames in (possibly rewriting them in place into replies) and sends what comes out.
 * Every refused frame has a named reason that becomes a counter. */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "vocab_verbs.h"
#include "vocab_status.h"

namespace droce::net {

using Mac = std::array<uint8_t, 6>;

inline constexpr Mac kBroadcastMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint8_t kIpProtoIcmp = 1;
inline constexpr uint8_t kIpProtoUdp = 17;
/* Ethernet frames shorter than this (without FCS) are runts on a real wire. */
inline constexpr size_t kMinFrameLen = 60;
inline constexpr size_t kArpFrameLen = 42; /* 14 Ethernet + 28 ARP, before padding */

/** Our side of a link: address, prefix, MAC. IPv4 addresses are host order. */
struct Iface {
    Mac mac{};
    /* prefix_len next to the MAC so that the gateway keeps the struct at 16 bytes (it sits
     * inside the engine's Dev, whose layout the data path is tuned to). */
    uint8_t prefix_len = 0;
    uint32_t ip = 0;
    uint32_t gateway = 0; /* 0 = none: off-subnet peers are an error */
    uint32_t netmask() const { return prefix_len == 0 ? 0 : ~0u << (32 - prefix_len); }
    bool on_link(uint32_t addr) const { return ((addr ^ ip) & netmask()) == 0; }
};

/* Counters of lib/net, named as they appear in Device::counters(). */
#define DROCE_NET_COUNTERS(X)                                                                      \
    X(arp_requests_received) /* requests for our IP */                                             \
    X(arp_replies_sent)                                                                            \
    X(arp_replies_received) /* replies addressed to our IP (neighbour learned) */                  \
    X(arp_requests_sent)    /* our own resolution probes */                                        \
    X(arp_drop_too_short)                                                                          \
    X(arp_drop_malformed)        /* not Ethernet/IPv4 ARP, or an unknown op */                     \
    X(arp_drop_not_for_us)       /* target IP is not ours (seen, ignored) */                       \
    X(arp_drop_address_conflict) /* someone else claims our IP */                                  \
    X(icmp_echo_requests)                                                                          \
    X(icmp_echo_replies) /* replies we sent */                                                     \
    X(icmp_drop_too_short)                                                                         \
    X(icmp_drop_bad_ip_header) /* version/IHL/length/checksum */                                   \
    X(icmp_drop_fragment)                                                                          \
    X(icmp_drop_not_for_us)                                                                        \
    X(icmp_drop_bad_checksum)                                                                      \
    X(icmp_drop_not_echo_request) /* other ICMP types: not handled */                              \
    X(neigh_table_full)

struct NetCounters {
#define DROCE_NET_FIELD(n) uint64_t n = 0;
    DROCE_NET_COUNTERS(DROCE_NET_FIELD)
#undef DROCE_NET_FIELD
    template <class F> void for_each(F &&f) const {
#define DROCE_NET_VISIT(n) f(#n, n);
        DROCE_NET_COUNTERS(DROCE_NET_VISIT)
#undef DROCE_NET_VISIT
    }
};

/* ---- addresses ---- */
/** "10.77.0.100/24" -> ip, prefix. */
Status parse_ipv4_cidr(const std::string &s, uint32_t *ip, uint8_t *prefix_len);
/** "02:00:00:00:01:00" -> mac. */
bool parse_mac(const std::string &s, Mac *mac);
std::string mac_str(const Mac &m);
std::string ipv4_str(uint32_t ip);

/* ---- neighbour table ---- */
enum class NeighState : uint8_t { Free, Incomplete, Reachable };

struct Neighbor {
    uint32_t ip = 0;
    Mac mac{};
    NeighState state = NeighState::Free;
    uint64_t updated_ns = 0; /* when the MAC was last confirmed */
    uint64_t probe_ns = 0;   /* when we last sent a request for it */
    uint32_t probes = 0;
};

/** What resolve() wants the caller to do next. */
enum class ResolveStep : uint8_t {
    Resolved,  /* *mac is valid */
    SendProbe, /* send an ARP request now (the table noted the time) */
    Wait,      /* a request is out; ask again later */
    TableFull, /* no room for another neighbour */
};

/** IPv4 -> MAC, fixed capacity, open addressing. Entries are not aged out yet: a
 * MAC change is picked up from the peer's next ARP packet (RFC 826 merge). */
class NeighTable {
  public:
    explicit NeighTable(uint32_t capacity = 256);
    const Neighbor *lookup(uint32_t ip) const;
    /** Records ip -> mac as reachable. With create=false only an existing entry is
     * refreshed (RFC 826: learn from packets not aimed at us only when already known).
     * Returns false when the table is full (or create=false and ip is unknown). */
    bool update(uint32_t ip, const Mac &mac, uint64_t now_ns, bool create);
    /** Drives resolution of ip: Resolved, or asks for a probe at most every
     * retry_ns. */
    ResolveStep resolve(uint32_t ip, uint64_t now_ns, uint64_t retry_ns, Mac *mac);
    void remove(uint32_t ip);
    uint32_t size() const { return used_; }
    template <class F> void for_each(F &&f) const {
        for (const auto &n : slots_)
            if (n.state != NeighState::Free)
                f(n);
    }

  private:
    Neighbor *find_slot(uint32_t ip, bool for_insert);
    std::vector<Neighbor> slots_;
    uint32_t mask_;
    uint32_t used_ = 0;
};

/** Next hop toward dst: the peer itself when on-link, else the gateway; an off-link
 * destination without a gateway is an error that says so. */
Result<uint32_t> next_hop(const Iface &ifc, uint32_t dst);

/* ---- ARP ---- */
struct ArpPacket {
    uint16_t op; /* 1 request, 2 reply */
    Mac sha;
    uint32_t spa;
    Mac tha;
    uint32_t tpa;
};

/** What handle_arp() did with a frame. */
enum class ArpVerdict : uint8_t {
    Reply,   /* a request for our IP: the frame was rewritten into the reply */
    Learned, /* a reply (or request) that taught us a neighbour; nothing to send */
    Dropped, /* counted in NetCounters under its reason */
};

/** Parses the ARP body at frame+l2_len. false = too short or not Ethernet/IPv4 ARP. */
bool parse_arp(const uint8_t *frame, size_t len, size_t l2_len, ArpPacket *out);
/** Handles a received ARP frame (Ethernet header of l2_len bytes, 14 or 18). On Reply
 * the frame has been turned into the reply in place (same length; VLAN tag kept). */
ArpVerdict handle_arp(const Iface &ifc, uint8_t *frame, size_t len, size_t l2_len,
                      NeighTable &neigh, uint64_t now_ns, NetCounters &c);
/** Builds a broadcast who-has request for target_ip into out (padded to 60 bytes).
 * Returns the length or 0 when cap is too small. */
size_t build_arp_request(const Iface &ifc, uint32_t target_ip, uint8_t *out, size_t cap);

/* ---- ICMP ---- */
/** Handles an IPv4 ICMP frame. When it is an echo request to our IP, rewrites it in
 * place into the echo reply and returns the reply's length (trailing Ethernet padding
 * dropped); otherwise returns 0 with the reason counted. */
size_t handle_icmp(const Iface &ifc, uint8_t *frame, size_t len, size_t l2_len, NetCounters &c);
/** RFC 1071 Internet checksum of len bytes (the value to store, i.e. complemented). */
uint16_t inet_checksum(const uint8_t *p, size_t len);

/* ---- GID table ---- */
/** Index 0: fe80::EUI-64(MAC); then one IPv4-mapped GID per IP, then the IPv6 ones.
 * All "RoCE v2". */
class GidTable {
  public:
    GidTable() = default;
    /** rocev1: after the RoCE v2 entries, one RoCEv1 entry per v2 entry (same order), so
     * the v2 indexes are the same with or without. Each entry carries a VLAN (0 =
     * untagged): ipv6_vlans[i] for ipv6s[i] when given, else port_vlan; a RoCEv1 entry
     * the VLAN of its v2 twin. */
    GidTable(const Mac &mac, const std::vector<uint32_t> &ipv4s, const std::vector<Gid> &ipv6s = {},
             bool rocev1 = false, uint16_t port_vlan = 0,
             const std::vector<uint16_t> &ipv6_vlans = {});
    uint32_t size() const { return static_cast<uint32_t>(gids_.size()); }
    /** Entry idx is RoCEv1 (false when out of range). */
    bool is_v1(uint32_t idx) const { return idx < gids_.size() && idx >= v1_from_; }
    /** gid is in the table as a RoCEv1 entry. */
    bool has_v1(const uint8_t gid[16]) const { return find_v1(gid) >= 0; }
    /** Index of gid's RoCEv1 entry, or -1. */
    int find_v1(const uint8_t gid[16]) const;
    /** VID of entry idx (0 = untagged; 0 when out of range). */
    uint16_t vlan(uint32_t idx) const { return idx < vlans_.size() ? vlans_[idx] : 0; }
    /** nullptr when idx is out of range. */
    const Gid *at(uint32_t idx) const { return idx < gids_.size() ? &gids_[idx] : nullptr; }
    /** Index of gid, or -1. */
    int find(const uint8_t gid[16]) const;
    std::vector<GidEntry> entries() const;
    static Gid link_local(const Mac &mac);
    static Gid ipv4_mapped(uint32_t ip);
    static bool is_ipv4_mapped(const Gid &g);
    static uint32_t to_ipv4(const Gid &g);

  private:
    std::vector<Gid> gids_;
    std::vector<uint16_t> vlans_;   /* per entry, as gids_ */
    uint32_t v1_from_ = UINT32_MAX; /* first RoCEv1 index; none when >= size() */
};

} // namespace droce::net
