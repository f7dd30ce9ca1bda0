/* SPDX-License-Identifier: BSD-3-Clause */
/* The route resolver shared by RC paths and UD address handles (engine_route.h). */
#include "engine_route.h"

#include <cstring>

namespace droce::engine {

namespace {

Status route_error(const char *what, const Status &s) {
    return Status(s.code(), std::string(what) + ": " + s.message());
}

/* The next hop by the interface's routes (v4) or the IPv6 interface's (v6). */
Status find_next_hop(const Dev &dev, const Gid &dgid, const char *what, Hop &hop) {
    if (hop.v4) {
        Result<uint32_t> nh = net::next_hop(dev.iface(), net::GidTable::to_ipv4(dgid));
        if (!nh)
            return route_error(what, nh.status());
        hop.nh4 = *nh;
        hop.nh_str = net::ipv4_str(hop.nh4);
    } else {
        Result<net::Ip6> nh = net::next_hop6(dev.iface6(), dgid.raw);
        if (!nh)
            return route_error(what, nh.status());
        hop.nh6 = *nh;
        hop.nh_str = net::ipv6_str(hop.nh6.data());
    }
    return {};
}

/* ARP / ND: the worker sends and retries the request (every 200 ms); this waits. */
Status find_mac(Runtime &rt, Dev &dev, const char *what, bool may_defer, Hop &hop) {
    const uint64_t t0 = rt.now_ns();
    const uint64_t limit = uint64_t{dev.arp_timeout_ms()} * 1'000'000;
    const std::string proto = std::string(what) + (hop.v4 ? ": ARP" : ": ND");
    for (;;) {
        net::ResolveStep st{};
        rt.exec([&] {
            st = hop.v4 ? dev.resolve(hop.nh4, rt.now_ns(), &hop.mac)
                        : dev.resolve6(hop.nh6.data(), rt.now_ns(), &hop.mac);
        });
        if (st == net::ResolveStep::Resolved)
            return {};
        if (st == net::ResolveStep::TableFull)
            return Status(ENOSPC, proto + ": neighbour table of " + dev.name() + " is full");
        if (may_defer) {
            hop.pending = true;
            return {};
        }
        if (rt.now_ns() - t0 >= limit)
            return Status(ETIMEDOUT, proto + ": no reply from " + hop.nh_str + " within " +
                                         std::to_string(dev.arp_timeout_ms()) + " ms");
        rt.wait_a_bit();
    }
}

/* dgid is one of dev's GIDs: the frames go from the device to itself (as rxe and
 * ConnectX loop them), on the source GID's VLAN, which must be the destination's. */
Status own_gid_hop(const Dev &dev, uint8_t sgid_index, int own, const char *what, Hop &hop) {
    const uint16_t svid = dev.gids().vlan(sgid_index);
    const uint16_t dvid = dev.gids().vlan(static_cast<uint32_t>(own));
    if (svid != dvid)
        return Status(EINVAL, std::string(what) + ": the destination GID is " + dev.name() +
                                  "'s own (index " + std::to_string(own) + ", VLAN " +
                                  std::to_string(dvid) + ") but sgid_index " +
                                  std::to_string(sgid_index) + " is on VLAN " +
                                  std::to_string(svid) + ": loopback stays on one VLAN");
    hop.loopback = true;
    hop.mac = dev.iface().mac;
    hop.nh_str = "loopback";
    return {};
}

} // namespace

Result<const Gid *> source_gid(const Dev &dev, uint8_t sgid_index, const char *what) {
    const Gid *g = dev.gids().at(sgid_index);
    if (g == nullptr)
        return Status(EINVAL, std::string(what) + ": sgid_index " + std::to_string(sgid_index) +
                                  " is not in the GID table of " + dev.name() + " (" +
                                  std::to_string(dev.gids().size()) + " entries)");
    return g;
}

Result<Hop> resolve_hop(Runtime &rt, Dev &dev, uint8_t sgid_index, const Gid &dgid,
                        const char *what, bool may_defer) {
    Result<const Gid *> sgid = source_gid(dev, sgid_index, what);
    if (!sgid)
        return sgid.status();
    Hop hop;
    hop.sgid = *sgid;
    hop.v4 = net::GidTable::is_ipv4_mapped(dgid);
    if (hop.v4 != net::GidTable::is_ipv4_mapped(*hop.sgid))
        return Status(EINVAL, std::string(what) + ": sgid_index " + std::to_string(sgid_index) +
                                  (hop.v4 ? " is an IPv6 GID but the dgid is IPv4 (use index 1)"
                                          : " is an IPv4 GID but the dgid is IPv6"));
    if (const int own = dev.gids().find(dgid.raw); own >= 0) {
        if (Status s = own_gid_hop(dev, sgid_index, own, what, hop); !s)
            return s;
        return hop;
    }
    if (Status s = find_next_hop(dev, dgid, what, hop); !s)
        return s;
    if (Status s = find_mac(rt, dev, what, may_defer, hop); !s)
        return s;
    return hop;
}

wire::EthHdr hop_eth(const Dev &dev, const Hop &hop, uint8_t sgid_index, uint8_t sl) {
    wire::EthHdr eth{};
    std::memcpy(eth.dst, hop.mac.data(), 6);
    std::memcpy(eth.src, dev.iface().mac.data(), 6);
    const uint16_t vid = dev.gids().vlan(sgid_index);
    eth.has_vlan = vid != 0;
    eth.vlan_tci = static_cast<uint16_t>(((sl & 7u) << 13) | vid);
    eth.ethertype = hop.v4 ? wire::kEtherTypeIpv4 : wire::kEtherTypeIpv6;
    return eth;
}

} // namespace droce::engine
