/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/net, IPv6 half: our IPv6 addresses (the link-local one from the MAC plus the
 * configured ones), Neighbour Discovery (RFC 4861: solicitations for our addresses
 * answered, our own solicitations built, advertisements learned), ICMPv6 echo, the
 * IPv6 neighbour cache and next-hop choice, and the 802.1Q tag helpers the engine uses
 * for frames lib/net builds. Pure functions over bytes like the IPv4 half (net.h): no
 * DPDK, no clock, no allocation after construction. */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "vocab_status.h"

#include "net.h"

namespace droce::net {

using Ip6 = std::array<uint8_t, 16>;

inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint8_t kIpProtoIcmpv6 = 58;
inline constexpr size_t kIpv6HdrLen = 40;
/* Our addresses: the link-local one plus up to 7 configured (GIDs 0 and 2..). */
inline constexpr uint32_t kMaxIp6Addrs = 8;
/* An NS or NA with one link-layer address option: 24 + 8 bytes of ICMPv6. */
inline constexpr size_t kNdFrameLen = 14 + kIpv6HdrLen + 32;

struct Ip6Prefix {
    Ip6 addr{};
    uint8_t prefix_len = 0;
    /* The address's own 802.1Q VID (a VLAN per GID, as a Linux VLAN netdev's address);
     * -1 = the interface's (Iface6::vlan_tci). */
    int32_t vlan = -1;
};

/** Our IPv6 side of the link. addrs[0] is always fe80::EUI-64(mac)/64. */
struct Iface6 {
    Mac mac{};
    Ip6Prefix addrs[kMaxIp6Addrs];
    uint32_t naddrs = 0;
    Ip6 gateway{}; /* :: = none: off-link peers are then an error */
    /* 802.1Q tag for the frames lib/net builds (NS), 0 = untagged. Replies keep the tag of
     * the frame they answer. */
    uint16_t vlan_tci = 0;

    /** Index in addrs of a, or -1. */
    int find(const uint8_t a[16]) const;
    /** a is link-local or inside one of our prefixes. */
    bool on_link(const uint8_t a[16]) const;
    /** Adds a configured address (vlan: its own VID, -1 = vlan_tci's); false when full
     * or already there. */
    bool add(const Ip6 &a, uint8_t prefix_len, int32_t vlan = -1);
    /** The VID of addrs[idx]: ND and echo for it are answered on that VLAN only. */
    uint16_t vid_of(int idx) const {
        return static_cast<uint16_t>(addrs[idx].vlan >= 0 ? addrs[idx].vlan : vlan_tci & 0xFFF);
    }
    bool has_gateway() const;
    /** dst MAC a frame to us may carry besides our unicast MAC: all-nodes (33:33:0:0:0:1)
     * or the solicited-node group of one of our addresses (33:33:ff:xx:xx:xx). */
    bool accepts_multicast_mac(const uint8_t dst[6]) const;
};

/** An Iface6 with the link-local address of mac. */
Iface6 make_iface6(const Mac &mac);

/* ---- addresses ---- */
/** "fd77:20::2/64" -> addr, prefix (0..128). A bare address is an error (say the prefix). */
Status parse_ipv6_cidr(const std::string &s, Ip6 *addr, uint8_t *prefix_len);
/** "fd77:20::1" -> addr. */
bool parse_ipv6(const std::string &s, Ip6 *addr);
std::string ipv6_str(const uint8_t a[16]);
bool ipv6_is_link_local(const uint8_t a[16]); /* fe80::/10 */
bool ipv6_is_multicast(const uint8_t a[16]);  /* ff00::/8 */
bool ipv6_is_unspecified(const uint8_t a[16]);
/** ff02::1:ffXX:XXXX, the group an NS for a goes to. */
Ip6 solicited_node(const uint8_t a[16]);
/** 33:33 + the low 32 bits of a multicast group (RFC 2464). */
Mac ipv6_multicast_mac(const uint8_t group[16]);

/* ---- neighbour cache ---- */
struct Neighbor6 {
    Ip6 ip{};
    Mac mac{};
    NeighState state = NeighState::Free;
    uint64_t updated_ns = 0;
    uint64_t probe_ns = 0;
    uint32_t probes = 0;
};

/** IPv6 -> MAC. Only the control path and ND frames touch it (the data path carries the
 * MAC in the QP's path), so a fixed array searched linearly is enough. */
class NeighTable6 {
  public:
    explicit NeighTable6(uint32_t capacity = 256) : slots_(capacity) {}
    const Neighbor6 *lookup(const uint8_t ip[16]) const;
    /** Records ip -> mac as reachable; with create=false only an entry that exists
     * (e.g. one we are resolving) is updated. false when full / unknown. */
    bool update(const uint8_t ip[16], const Mac &mac, uint64_t now_ns, bool create);
    /** Like NeighTable::resolve. */
    ResolveStep resolve(const uint8_t ip[16], uint64_t now_ns, uint64_t retry_ns, Mac *mac);
    uint32_t size() const { return used_; }
    template <class F> void for_each(F &&f) const {
        for (const auto &n : slots_)
            if (n.state != NeighState::Free)
                f(n);
    }

  private:
    Neighbor6 *find(const uint8_t ip[16]);
    Neighbor6 *insert(const uint8_t ip[16]);
    std::vector<Neighbor6> slots_;
    uint32_t used_ = 0;
};

/** Next hop toward dst: dst itself when on-link (link-local or in one of our prefixes),
 * else the gateway; an error naming dst when there is none. */
Result<Ip6> next_hop6(const Iface6 &ifc, const uint8_t dst[16]);
/** The source address for packets to dst: link-local for a link-local dst, else the
 * first configured address whose prefix holds dst, else the first configured one. */
const Ip6 &source_for(const Iface6 &ifc, const uint8_t dst[16]);
/** Its index in ifc.addrs. */
uint32_t source_index(const Iface6 &ifc, const uint8_t dst[16]);

/* ---- ND and ICMPv6 ---- */
#define DROCE_NET6_COUNTERS(X)                                                                     \
    X(nd_solicits_received) /* NS for one of our addresses */                                      \
    X(nd_adverts_sent)                                                                             \
    X(nd_adverts_received) /* NA that resolved or refreshed a neighbour */                         \
    X(nd_solicits_sent)                                                                            \
    X(icmp6_echo_requests)                                                                         \
    X(icmp6_echo_replies)                                                                          \
    X(icmp6_drop_too_short)                                                                        \
    X(icmp6_drop_bad_ip_header) /* version, length, extension headers */                           \
    X(icmp6_drop_bad_checksum)                                                                     \
    X(icmp6_drop_not_for_us)      /* NS target / echo destination not ours */                      \
    X(icmp6_drop_wrong_vlan)      /* NS / echo for an address of ours on another VLAN */           \
    X(icmp6_drop_bad_nd)          /* hop limit != 255, code != 0, bad option (RFC 4861 7.1) */     \
    X(icmp6_drop_unhandled_type)  /* router, MLD, errors: not handled */                           \
    X(icmp6_drop_no_room)         /* reply longer than the buffer */                               \
    X(nd_drop_unsolicited_advert) /* NA for a neighbour we are not resolving */                    \
    X(neigh6_table_full)

struct Net6Counters {
#define DROCE_NET6_FIELD(n) uint64_t n = 0;
    DROCE_NET6_COUNTERS(DROCE_NET6_FIELD)
#undef DROCE_NET6_FIELD
    template <class F> void for_each(F &&f) const {
#define DROCE_NET6_VISIT(n) f(#n, n);
        DROCE_NET6_COUNTERS(DROCE_NET6_VISIT)
#undef DROCE_NET6_VISIT
    }
};

/** Handles a received IPv6 frame whose next header is ICMPv6 (Ethernet header of l2_len
 * bytes, 14 or 18; cap = bytes writable at frame). An NS for one of our addresses or an
 * echo request to one becomes the reply in place (VLAN tag kept) and its length is
 * returned; otherwise 0 (an NA learned, or the reason counted). */
size_t handle_icmp6(const Iface6 &ifc, uint8_t *frame, size_t len, size_t cap, size_t l2_len,
                    NeighTable6 &neigh, uint64_t now_ns, Net6Counters &c);

/** Builds a neighbour solicitation for target to its solicited-node group, from
 * source_for(target), with our MAC as source link-layer option, tagged with that source
 * address's VLAN (ifc.vlan_tci when it has none of its own) when set. Returns the length, 0 when
 * cap is too small. */
size_t build_ns(const Iface6 &ifc, const uint8_t target[16], uint8_t *out, size_t cap);

/** ICMPv6 checksum (the value to store) over the pseudo-header of ip6 (an IPv6 header
 * whose payload length is set) and len bytes of ICMPv6 message at msg (its checksum
 * field taken as is: zero it first to compute, keep it to verify: 0 = valid). */
uint16_t icmp6_checksum(const uint8_t *ip6, const uint8_t *msg, size_t len);

/* ---- 802.1Q ---- */
/** Inserts a tag (TPID 0x8100, tci) after the MACs of an untagged frame of len bytes;
 * returns the new length, 0 when cap < len + 4. */
size_t vlan_push(uint8_t *frame, size_t len, size_t cap, uint16_t tci);

} // namespace droce::net
