/* SPDX-License-Identifier: BSD-3-Clause */
/* The device's IP and L2 policy: IPv6 addresses and GIDs, gateways, VLAN, forced traffic
 * class / hop limit (Dev::set_l3), IPv6 neighbour resolution (Dev::resolve6, send_ns)
 * and ICMPv6 on RX (Shard::rx_icmp6). None of it is on the RoCE data path: a QP's path
 * carries the resolved MAC, tag and header fields in its template. */
#include <cstring>

#include <rte_mbuf.h>
#include <spdlog/spdlog.h>

#include "engine_dev.h"

namespace droce::engine {

Status Dev::set_l3(const DeviceConfig &cfg) {
    if (cfg.vlan > 4094)
        return Status(EINVAL, "open_device: VLAN " + std::to_string(cfg.vlan) +
                                  " out of range (1..4094, 0 = untagged)");
    net::Iface6 f = net::make_iface6(ifc_.mac);
    std::vector<Gid> gids6;
    std::vector<uint16_t> vlans6;
    ngid_vlans_ = 0;
    for (const std::string &spec : cfg.ipv6_cidrs) {
        /* "ADDR/P@VID": the address on its own VLAN. */
        const size_t at = spec.find('@');
        const std::string c = spec.substr(0, at);
        int32_t vid = -1;
        if (at != std::string::npos) {
            const std::string v = spec.substr(at + 1);
            if (v.empty() || v.size() > 4 ||
                v.find_first_not_of("0123456789") != std::string::npos || std::stoul(v) > 4094)
                return Status(EINVAL, "open_device: bad VLAN '" + v + "' of IPv6 address " + c +
                                          " (@0..4094, 0 = untagged)");
            vid = static_cast<int32_t>(std::stoul(v));
        }
        net::Ip6 a;
        uint8_t len = 0;
        if (Status s = net::parse_ipv6_cidr(c, &a, &len); !s)
            return Status(EINVAL, "open_device: " + s.message());
        if (net::ipv6_is_link_local(a.data()))
            return Status(EINVAL, "open_device: " + c +
                                      " is link-local; GID 0 is the port's link-local address");
        if (!f.add(a, len, vid))
            return Status(EINVAL, "open_device: IPv6 address " + c + " repeated, or more than " +
                                      std::to_string(net::kMaxIp6Addrs - 1));
        Gid g{};
        std::memcpy(g.raw, a.data(), 16);
        gids6.push_back(g);
        const uint16_t v = vid >= 0 ? static_cast<uint16_t>(vid) : cfg.vlan;
        vlans6.push_back(v);
        bool known = v == cfg.vlan;
        for (uint32_t i = 0; i < ngid_vlans_; ++i)
            known = known || gid_vlans_[i] == v;
        if (!known)
            gid_vlans_[ngid_vlans_++] = v;
    }
    if (!cfg.gateway6.empty()) {
        if (!net::parse_ipv6(cfg.gateway6, &f.gateway) || net::ipv6_is_multicast(f.gateway.data()))
            return Status(EINVAL, "open_device: bad IPv6 gateway '" + cfg.gateway6 + "'");
        if (!f.on_link(f.gateway.data()))
            return Status(EINVAL, "open_device: IPv6 gateway " + cfg.gateway6 +
                                      " is not on any of our IPv6 prefixes");
    }
    uint32_t gw4 = 0;
    if (!cfg.gateway.empty()) {
        uint8_t unused = 0;
        if (!net::parse_ipv4_cidr(cfg.gateway + "/32", &gw4, &unused) || gw4 == 0)
            return Status(EINVAL, "open_device: bad IPv4 gateway '" + cfg.gateway + "'");
        if (!ifc_.on_link(gw4) || gw4 == ifc_.ip)
            return Status(EINVAL, "open_device: IPv4 gateway " + cfg.gateway + " is not on " +
                                      net::ipv4_str(ifc_.ip & ifc_.netmask()) + "/" +
                                      std::to_string(ifc_.prefix_len));
    }
    if (cfg.force_tclass < -1 || cfg.force_tclass > 255)
        return Status(EINVAL, "open_device: force_tclass " + std::to_string(cfg.force_tclass) +
                                  " out of range (0..255, -1 = off)");
    if (cfg.force_hop_limit < -1 || cfg.force_hop_limit == 0 || cfg.force_hop_limit > 255)
        return Status(EINVAL, "open_device: force_hop_limit " +
                                  std::to_string(cfg.force_hop_limit) +
                                  " out of range (1..255, -1 = off)");
    /* NS/ARP we originate go on the port's VLAN with priority 0 (an NS from an address
     * with its own VLAN on that one). */
    f.vlan_tci = cfg.vlan;
    ifc6_ = f;
    ifc_.gateway = gw4;
    gids_ = net::GidTable(ifc_.mac, {ifc_.ip}, gids6, cfg.rocev1_gids, cfg.vlan, vlans6);
    vlan_ = cfg.vlan;
    force_tclass_ = cfg.force_tclass;
    force_hop_limit_ = cfg.force_hop_limit;
    return {};
}

net::ResolveStep Dev::resolve6(const uint8_t ip[16], uint64_t now, net::Mac *mac) {
    const net::ResolveStep s = neigh6_.resolve(ip, now, kArpRetryNs, mac);
    if (s == net::ResolveStep::SendProbe) {
        send_ns(ip);
        return net::ResolveStep::Wait;
    }
    if (s == net::ResolveStep::TableFull)
        ++shards_[0]->nc6.neigh6_table_full;
    return s;
}

void Dev::send_ns(const uint8_t ip[16]) {
    Shard &sh = *shards_[0];
    rte_mbuf *m = rte_pktmbuf_alloc(tx_pool_);
    if (m == nullptr) {
        ++sh.ec.tx_no_mbuf;
        return; /* the next retry tries again */
    }
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    const size_t n = net::build_ns(ifc6_, ip, p, rte_pktmbuf_tailroom(m));
    m->data_len = static_cast<uint16_t>(n);
    m->pkt_len = static_cast<uint32_t>(n);
    if (n == 0 || !sh.queue_tx(m)) {
        ++sh.ec.tx_drop_reply_batch_full;
        rte_pktmbuf_free(m);
        return;
    }
    ++sh.nc6.nd_solicits_sent;
}

void Shard::rx_icmp6(rte_mbuf *m, uint8_t *p, uint32_t len, size_t l2, uint64_t now) {
    if (index_ != 0) {
        /* The IPv6 neighbour cache lives on worker 0. */
        --ec.port_rcv_packets;
        ec.port_rcv_bytes -= len;
        handoff(0, m);
        return;
    }
    const size_t cap = static_cast<size_t>(m->buf_len) - m->data_off;
    const size_t n = net::handle_icmp6(dev_.ifc6_, p, len, cap, l2, dev_.neigh6_, now, nc6);
    if (n != 0) {
        m->data_len = static_cast<uint16_t>(n);
        m->pkt_len = static_cast<uint32_t>(n);
        if (queue_tx(m))
            return;
        ++ec.tx_drop_reply_batch_full;
    }
    rte_pktmbuf_free(m);
}

} // namespace droce::engine
