/* SPDX-License-Identifier: BSD-3-Clause */
/* Runtime::open_device: a DPDK port becomes a droce device, as a sequence of named steps
 * (check the configuration, pick the port, plan it, configure it, start it, build the
 * device, apply the device settings, say what was opened). A step that fails after the
 * port started stops it again (before the Dev exists) or lets the Dev's destructor do so. */
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include <rte_ethdev.h>

#include "engine.h"
#include "engine_log.h"
#include "engine_pfc_port.h"
#include "engine_rss.h"
#include "poll_gate.h"

namespace droce::engine {

namespace {

constexpr uint16_t kDescriptors = 1024;
/* Payloads below this are copied even with zero-copy on: measured with bench_zero_copy
 * (BM_WriteSize, single-packet WRITEs, zero-copy vs copy) on the development machine. */
constexpr uint32_t kZeroCopyMinBytesDefault = 1024;

std::string errstr(int e) { return rte_strerror(e < 0 ? -e : e); }

/** What open_device decided about a port before and while configuring it. */
struct PortPlan {
    uint16_t port = 0;
    std::string name;
    rte_eth_dev_info info{};
    drivers::Caps caps;
    rte_eth_conf conf{};
    uint32_t want_mtu = 0;     /* 0: the port's own */
    bool port_sets_mtu = true; /* false: the MTU is droce's own, the port's is left alone */
    uint32_t mtu = 0;          /* the Ethernet MTU droce uses */
    uint16_t nrxq = 1, ntxq = 1;
    uint16_t queue_stride = 1; /* worker w's queues are w * queue_stride */
    bool zc_ok = false;
    ZcReach reach = ZcReach::Copy;
    drivers::SteerReport steer;
    bool bond = false;
    const char *driver() const { return info.driver_name ? info.driver_name : "?"; }
};

/** The adapter's answer to what memory a port's TX can take (drivers::Reach). */
ZcReach zc_reach_of(drivers::Reach r) {
    switch (r) {
    case drivers::Reach::VirtAddr:
        return ZcReach::VirtAddr;
    case drivers::Reach::DpdkFd:
        return ZcReach::DpdkFd;
    case drivers::Reach::DmaMapped:
        return ZcReach::DmaMapped;
    case drivers::Reach::Copy:
        break;
    }
    return ZcReach::Copy;
}

/** The settings that need no port: QPN space, P_Keys, PFC, the IPv4 address. */
Status check_device_config(const DeviceConfig &cfg, const cc::CcParams &ccp, net::Iface *ifc) {
    if (cfg.max_qps <= kFirstQpn || cfg.max_qps > kMaxQpn)
        return Status(EINVAL, "open_device: max_qps must be " + std::to_string(kFirstQpn + 1) +
                                  ".." + std::to_string(kMaxQpn) + " (the 24-bit QPN space)");
    if (cfg.pkeys.empty() || cfg.pkeys.size() > 0x10000)
        return Status(EINVAL, "open_device: the P_Key table needs 1..65536 entries");
    if (const char *e = cc::validate(ccp))
        return Status(EINVAL, std::string("open_device: DCQCN parameter ") + e);
    if (cfg.pfc_priority > 7 || cfg.pfc_priority < -1)
        return Status(EINVAL, "open_device: pfc_priority must be 0..7 (or -1: none)");
    if (cfg.pfc_tx_xoff != 0 && cfg.pfc_priority < 0)
        return Status(EINVAL, "open_device: pfc_tx_xoff needs pfc_priority (the priority to "
                              "pause)");
    if (cfg.pfc_tx_xoff != 0 && cfg.pfc_tx_xon >= cfg.pfc_tx_xoff)
        return Status(EINVAL, "open_device: pfc_tx_xon must be below pfc_tx_xoff");
    if (cfg.queue_stride > DeviceConfig::kMaxQueueStride)
        return Status(EINVAL, "open_device: queue_stride must be 0.." +
                                  std::to_string(DeviceConfig::kMaxQueueStride) +
                                  " (0: the port's adapter's)");
    if (cfg.ipv4_cidr.empty())
        return Status(EINVAL, "open_device: ipv4_cidr is required (e.g. 10.77.0.100/24)");
    if (Status s = net::parse_ipv4_cidr(cfg.ipv4_cidr, &ifc->ip, &ifc->prefix_len); !s)
        return Status(EINVAL, "open_device: " + s.message());
    return {};
}

/** The first free port when none is named: a bonding port goes before its members
 * (which come first in port order and must not be opened themselves). */
uint16_t first_free_port(const std::vector<std::unique_ptr<Dev>> &open) {
    uint16_t port = RTE_MAX_ETHPORTS, p;
    RTE_ETH_FOREACH_DEV(p) {
        const bool taken =
            std::any_of(open.begin(), open.end(), [p](const auto &d) { return d->port_id() == p; });
        if (!taken && (port == RTE_MAX_ETHPORTS || is_bond_port(p))) {
            port = p;
            if (is_bond_port(p))
                break;
        }
    }
    return port;
}

/** DeviceConfig::port (a number, a name, or empty: the first free one), not yet open and
 * not a bond's member. */
Result<uint16_t> pick_port(const std::string &want, const std::vector<std::unique_ptr<Dev>> &open) {
    uint16_t port = RTE_MAX_ETHPORTS;
    if (want.empty()) {
        port = first_free_port(open);
        if (port == RTE_MAX_ETHPORTS)
            return Status(ENODEV, "open_device: no free DPDK port (give one with -a/--vdev)");
    } else if (want.find_first_not_of("0123456789") == std::string::npos) {
        port = static_cast<uint16_t>(std::stoul(want));
        if (!rte_eth_dev_is_valid_port(port))
            return Status(ENODEV, "open_device: no DPDK port " + want);
    } else if (rte_eth_dev_get_port_by_name(want.c_str(), &port) != 0) {
        return Status(ENODEV, "open_device: no DPDK port named '" + want + "'");
    }
    for (const auto &d : open)
        if (d->port_id() == port)
            return Status(EBUSY, "open_device: port " + std::to_string(port) + " already open");
    if (const int bond = bond_of_member(port); bond >= 0)
        return Status(EBUSY, "open_device: port " + std::to_string(port) +
                                 " is a member of bonding port " + std::to_string(bond) +
                                 " (open the bond)");
    return port;
}

/** The MTU to ask for, and whether the port or droce enforces it. */
Status plan_mtu(const DeviceConfig &cfg, uint32_t max_frame, PortPlan &p) {
    const drivers::Caps &caps = p.caps;
    /* --eth-mtu is an override: without it, a port whose PMD hides the kernel
     * interface's MTU (af_packet says 1500) uses the interface's, read once here. */
    p.want_mtu = cfg.mtu;
    if (p.want_mtu == 0 && caps.auto_mtu() != 0) {
        p.want_mtu = std::min<uint32_t>(caps.auto_mtu(), max_frame - RTE_ETHER_HDR_LEN - 4);
        p.port_sets_mtu = false;
        logger().info("{}: MTU {} from kernel interface {} (the PMD does not report it)", p.name,
                      p.want_mtu, caps.kernel_if);
    }
    if (cfg.mtu == 0)
        return {};
    if (cfg.mtu + RTE_ETHER_HDR_LEN + 4 > max_frame)
        return Status(EINVAL, p.name + ": MTU " + std::to_string(cfg.mtu) + " above " +
                                  std::to_string(max_frame - RTE_ETHER_HDR_LEN - 4) +
                                  " (mbuf data room)");
    const uint32_t port_max = caps.max_mtu != 0 ? caps.max_mtu : UINT16_MAX;
    if (caps.mtu_hidden) {
        p.port_sets_mtu = false; /* the PMD's MTU is not the interface's: droce's own */
    } else if (cfg.mtu > port_max) {
        /* Some virtual ports report a maximum they do not enforce (the adapters of those
         * known to hide it say mtu_hidden). The user asked for this MTU, so it becomes
         * droce's own; a frame the port truncates anyway is still refused by the parser
         * and counted (rx_drop_too_short / rx_drop_bad_udp_length). */
        logger().warn("{}: port reports max MTU {}; using {} as droce's own MTU without "
                      "setting the port's",
                      p.name, port_max, cfg.mtu);
        p.port_sets_mtu = false;
    } else {
        p.conf.rxmode.mtu = cfg.mtu;
    }
    return {};
}

/** The spacing of the workers' queues. Asked for (DeviceConfig::queue_stride): that one,
 * or why the port cannot have it. Else the adapter's (caps.queue_stride) where the port
 * has queues for nw workers that far apart, else as far apart as they fit (1:
 * neighbours). */
Result<uint16_t> plan_queue_stride(uint32_t nw, uint16_t asked, const PortPlan &p) {
    const drivers::Caps &caps = p.caps;
    const uint32_t maxq =
        std::max<uint16_t>(1, std::min(p.info.max_rx_queues, p.info.max_tx_queues));
    if (asked != 0) {
        if (nw <= 1 || asked == 1)
            return asked;
        /* RSS aims a flow at its worker's queue by index (rss_pick_sport). */
        if (caps.rss_udp)
            return Status(EINVAL, p.name + ": queue_stride " + std::to_string(asked) +
                                      ": the port spreads flows by RSS to queue = worker "
                                      "(only 1 or 0 there)");
        if (const uint32_t need = drivers::queues_for(nw, asked); need > maxq)
            return Status(EINVAL, p.name + ": queue_stride " + std::to_string(asked) + " needs " +
                                      std::to_string(need) + " queues for " + std::to_string(nw) +
                                      " workers; the port has " + std::to_string(maxq));
        return asked;
    }
    if (nw <= 1 || caps.queue_stride <= 1 || caps.rss_udp || maxq < nw)
        return uint16_t{1};
    return static_cast<uint16_t>(std::min<uint32_t>(caps.queue_stride, (maxq - 1) / (nw - 1)));
}

/** One RX and one TX queue per worker where the port has them (every queue_stride-th);
 * RSS over the RX queues; whether zero-copy TX can work with this layout. A port with
 * fewer RX queues is read by worker 0, which hands each packet to its QP's worker; with
 * fewer TX queues, the workers without one hand their frames to worker 0. */
Status plan_queues(uint32_t nw, uint16_t stride, bool zero_copy, PortPlan &p) {
    const drivers::Caps &caps = p.caps;
    const Result<uint16_t> planned = plan_queue_stride(nw, stride, p);
    if (!planned.is_ok())
        return planned.status();
    p.queue_stride = planned.value();
    const uint32_t spread = drivers::queues_for(nw, p.queue_stride);
    p.nrxq = static_cast<uint16_t>(
        std::min<uint32_t>(spread, std::max<uint16_t>(1, p.info.max_rx_queues)));
    p.ntxq = static_cast<uint16_t>(
        std::min<uint32_t>(spread, std::max<uint16_t>(1, p.info.max_tx_queues)));
    if (p.nrxq > 1 && caps.rss_udp) {
        /* Spread RoCE flows over the RX queues by IP/UDP: droce picks its QPs' UDP source
         * ports so that droce<->droce traffic lands on the owning worker. */
        p.conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        if (p.info.hash_key_size == sizeof(kDroceRssKey)) {
            p.conf.rx_adv_conf.rss_conf.rss_key = const_cast<uint8_t *>(kDroceRssKey);
            p.conf.rx_adv_conf.rss_conf.rss_key_len = sizeof(kDroceRssKey);
        }
        p.conf.rx_adv_conf.rss_conf.rss_hf =
            (RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP) &
            p.info.flow_type_rss_offloads;
    }
    /* Zero-copy attaches mbufs whose refcount only the attaching worker may touch: not
     * where another thread frees them (net_ring: the peer's RX; a TX queue shared
     * through worker 0). It needs a port that takes chained mbufs (one that says so, or
     * net_ring, which passes mbuf pointers through); then what memory it can take
     * depends on how its PMD reaches the data (zc_reach_of). */
    p.zc_ok = zero_copy && (caps.multi_seg_tx || caps.tx_passes_mbufs) &&
              (nw == 1 || (!caps.tx_passes_mbufs && p.ntxq == spread));
    p.reach = p.zc_ok ? zc_reach_of(caps.reach) : ZcReach::Copy;
    if (caps.multi_seg_tx)
        p.conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    return {};
}

/** Bifurcated steering: isolation must be asked before the port is configured. */
void plan_steering(const DeviceConfig &cfg, PortPlan &p) {
    const bool on = cfg.flow_steering == 1 || (cfg.flow_steering < 0 && p.caps.steer_default);
    if (on && !p.caps.can_steer) {
        p.steer.errors.push_back("flow steering asked, but the " + p.caps.adapter +
                                 " adapter does not steer");
    } else if (on && !drivers::steer_isolate(p.port, &p.steer)) {
        logger().warn("{}: rte_flow steering: {}; droce takes the whole port", p.name,
                      p.steer.errors.back());
    }
}

/** rte_eth_dev_configure and the queues (RX queue q takes worker q's mbufs). */
Status configure_queues(const PortPlan &p, const Runtime &rt) {
    if (int rc = rte_eth_dev_configure(p.port, p.nrxq, p.ntxq, &p.conf); rc != 0)
        return Status(EIO, p.name + ": rte_eth_dev_configure: " + errstr(rc));
    uint16_t nrxd = kDescriptors, ntxd = kDescriptors;
    rte_eth_dev_adjust_nb_rx_tx_desc(p.port, &nrxd, &ntxd);
    int socket = rte_eth_dev_socket_id(p.port);
    if (socket < 0)
        socket = static_cast<int>(rte_socket_id());
    for (uint16_t q = 0; q < p.nrxq; ++q)
        if (int rc = rte_eth_rx_queue_setup(p.port, q, nrxd, static_cast<unsigned>(socket), nullptr,
                                            rt.pool(q));
            rc != 0)
            return Status(EIO, p.name + ": rte_eth_rx_queue_setup(" + std::to_string(q) +
                                   "): " + errstr(rc));
    for (uint16_t q = 0; q < p.ntxq; ++q)
        if (int rc =
                rte_eth_tx_queue_setup(p.port, q, ntxd, static_cast<unsigned>(socket), nullptr);
            rc != 0)
            return Status(EIO, p.name + ": rte_eth_tx_queue_setup(" + std::to_string(q) +
                                   "): " + errstr(rc));
    return {};
}

/** The port's MTU before the start (a bond's is set after: it configures its members only
 * when it starts, and rte_eth_dev_set_mtu refuses before). */
Status configure_mtu(PortPlan &p) {
    if (p.want_mtu == 0) {
        uint16_t m = RTE_ETHER_MTU;
        rte_eth_dev_get_mtu(p.port, &m);
        p.mtu = m;
        return {};
    }
    const int rc = p.port_sets_mtu && !p.bond
                       ? rte_eth_dev_set_mtu(p.port, static_cast<uint16_t>(p.want_mtu))
                       : 0;
    if (rc == -ENOTSUP) {
        /* Virtual ports (net_ring) have no MTU of their own: ours is the limit. */
        logger().info("{}: port cannot set its MTU; using {} as droce's own", p.name, p.want_mtu);
    } else if (rc != 0) {
        return Status(EINVAL, p.name + ": rte_eth_dev_set_mtu(" + std::to_string(p.want_mtu) +
                                  "): " + errstr(rc));
    }
    p.mtu = p.want_mtu;
    return {};
}

/** The interface's MAC: the configured one, else the port's (*port_mac). */
Status pick_mac(const DeviceConfig &cfg, const PortPlan &p, net::Mac *port_mac, net::Iface *ifc) {
    rte_ether_addr a{};
    rte_eth_macaddr_get(p.port, &a);
    std::memcpy(port_mac->data(), a.addr_bytes, 6);
    if (cfg.mac.empty())
        ifc->mac = *port_mac;
    else if (!net::parse_mac(cfg.mac, &ifc->mac))
        return Status(EINVAL, "open_device: bad MAC '" + cfg.mac + "'");
    return {};
}

/** rte_eth_dev_start, joined to the poll gate first (a memif port's peer may connect, and
 * leave, from the start on). */
Status start_port(const PortPlan &p) {
    if (p.caps.control_on_intr_thread)
        drivers::poll_gate_add_port(p.port);
    if (int rc = rte_eth_dev_start(p.port); rc != 0) {
        drivers::poll_gate_remove_port(p.port);
        return Status(EIO, p.name + ": rte_eth_dev_start: " + errstr(rc) +
                               (p.caps.reconnect_by_restart
                                    ? " (a memif client connects when its port starts: is its "
                                      "server running, and is its socket= path right?)"
                                    : ""));
    }
    return {};
}

/** What needs a started port: a bond's MTU, the steering rules, promiscuous mode when our
 * MAC is not the port's (e.g. af_packet on a tap: filtered in software,
 * rx_drop_not_our_mac). */
Status after_start(const net::Iface &ifc, const net::Mac &port_mac, PortPlan &p) {
    if (p.bond && p.want_mtu && p.port_sets_mtu) {
        const int rc = rte_eth_dev_set_mtu(p.port, static_cast<uint16_t>(p.want_mtu));
        if (rc != 0 && rc != -ENOTSUP)
            return Status(EINVAL, p.name + ": rte_eth_dev_set_mtu(" + std::to_string(p.want_mtu) +
                                      ") on the bond's members: " + errstr(rc));
    }
    if (p.steer.mode == "isolating") {
        drivers::SteerSpec ss;
        ss.ipv4_be = rte_cpu_to_be_32(ifc.ip);
        ss.rx_queues = p.nrxq;
        ss.rss_key = p.conf.rx_adv_conf.rss_conf.rss_key;
        drivers::steer_install(p.port, ss, &p.steer);
        for (const std::string &r : p.steer.rules)
            logger().info("{}: rte_flow rule: {}", p.name, r);
        if (p.steer.mode != "isolated")
            logger().warn("{}: rte_flow steering failed ({}); droce takes the whole port", p.name,
                          p.steer.errors.empty() ? "?" : p.steer.errors.back());
    }
    if (ifc.mac != port_mac) {
        const int rc = rte_eth_promiscuous_enable(p.port);
        if (rc != 0 && rc != -ENOTSUP)
            logger().warn("{}: promiscuous mode: {}", p.name, errstr(rc));
    }
    return {};
}

/** The reaction point's maximum: the configured line rate, else the link's (a speed not
 * known yet, the link still coming up, is taken as 100 Gb/s: line_rate_from_link). */
Result<uint64_t> line_rate(const DeviceConfig &cfg, const cc::CcParams &ccp, const PortPlan &p) {
    rte_eth_link link{};
    rte_eth_link_get_nowait(p.port, &link);
    const uint64_t line =
        cfg.line_rate_bps != 0 ? cfg.line_rate_bps : line_rate_from_link(link.link_speed);
    if (const char *e = cc::validate(ccp, line))
        return Status(EINVAL, p.name + ": DCQCN parameter " + e + " (link " +
                                  std::to_string(line / 1'000'000) + " Mb/s)");
    return line;
}

/* Asks the PMD to make `prio` lossless (PFC) and returns what happened, said once at
 * start-up and shown by droce-info, naming the DPDK API that applied
 * (engine_pfc_port.cpp: the queue-based one where the PMD has it, else the port-wide
 * one). */
std::string pfc_enable(const PortPlan &p, int prio) {
    const std::string drv = p.driver();
    if (prio < 0) {
        logger().info("{}: PFC not requested; PFC frames the port hands up are honoured in "
                      "software",
                      p.name);
        return "not requested (received PFC honoured in software)";
    }
    const PfcPortResult r = pfc_port_enable(p.port, prio, p.nrxq, p.ntxq);
    std::string s;
    if (r.rc == 0) {
        s = "on for priority " + std::to_string(prio) + " via " + pfc_api_name(r.api) +
            (r.detail.empty() ? "" : " (" + r.detail + ")") + " (PMD " + drv + ")";
        logger().info("{}: PFC {}", p.name, s);
    } else if (r.api == PfcApi::None) {
        s = "not enabled: PMD " + drv + " " + r.detail + "; priority " + std::to_string(prio) +
            " is lossless only if the switch and NIC (kernel DCB) say so; received PFC "
            "honoured in software";
        logger().warn("{}: PFC {}", p.name, s);
    } else {
        s = "not enabled: " + std::string(pfc_api_name(r.api)) + "(priority " +
            std::to_string(prio) + ") failed: " + r.detail;
        logger().warn("{}: PFC {}", p.name, s);
    }
    return s;
}

/** PFC: the port's (pfc_enable) and droce's own sending of pause frames. */
void apply_pfc(const DeviceConfig &cfg, const PortPlan &p, Dev &dev) {
    std::string status = pfc_enable(p, cfg.pfc_priority);
    if (cfg.pfc_tx_xoff != 0) {
        /* -ENOTSUP: the PMD cannot count its RX ring; the burst's fill stands in */
        const bool count = rte_eth_rx_queue_count(p.port, 0) >= 0;
        const std::string tx =
            "; droce sends PFC for priority " + std::to_string(cfg.pfc_priority) + " at " +
            std::to_string(cfg.pfc_tx_xoff) + " frames in an RX queue, resumes at " +
            std::to_string(cfg.pfc_tx_xon) + " (" +
            (count ? "rte_eth_rx_queue_count" : "burst fill: the PMD has no rx_queue_count") + ")";
        logger().info("{}: PFC{}", p.name, tx);
        status += tx;
        dev.pfc().tx_xoff = cfg.pfc_tx_xoff;
        dev.pfc().tx_xon = cfg.pfc_tx_xon;
        dev.pfc().tx_count = count;
    }
    dev.pfc().prio = cfg.pfc_priority;
    dev.pfc().storm_ns = uint64_t{cfg.pfc_storm_ms} * 1'000'000;
    dev.pfc().status = std::move(status);
}

/** The RSS key the port really uses (a PMD may keep its own), for the QPs' UDP source
 * port choice. */
void apply_rss(const PortPlan &p, Dev &dev) {
    if (p.conf.rxmode.mq_mode != RTE_ETH_MQ_RX_RSS)
        return;
    uint8_t key[64] = {};
    rte_eth_rss_conf rc{};
    rc.rss_key = key;
    rc.rss_key_len = sizeof key;
    if (rte_eth_dev_rss_hash_conf_get(p.port, &rc) == 0 && rc.rss_key_len == 40 &&
        p.info.reta_size != 0) {
        dev.set_rss(key, p.info.reta_size);
        logger().info("{}: RSS over {} RX queues (redirection table {}): QPs pick their UDP "
                      "source port for the peer's owning worker",
                      p.name, p.nrxq, p.info.reta_size);
    } else {
        logger().warn("{}: RSS configured but its key could not be read; UDP source ports "
                      "are not steered (packets may land on other workers: rx_handoff)",
                      p.name);
    }
}

void log_opened(const DeviceConfig &cfg, const PortPlan &p, const net::Iface &ifc, uint32_t nw,
                bool zero_copy, const Dev &dev) {
    logger().info("{}: zero-copy TX: {} (driver {}{})", p.name, zc_reach_str(p.reach),
                  p.caps.driver,
                  !zero_copy ? ", off by option"
                  : !p.zc_ok ? ", no chained mbufs for this port and worker layout"
                             : "");
    logger().info("{}: port {} driver {} MAC {} IP {}/{} MTU {} (RoCE active MTU {}), {} RX / {} "
                  "TX queue(s) for {} worker(s) (queue stride {}), {} QPNs",
                  p.name, p.port, p.driver(), net::mac_str(ifc.mac), net::ipv4_str(ifc.ip),
                  ifc.prefix_len, p.mtu, dev.active_mtu(), p.nrxq, p.ntxq, nw, p.queue_stride,
                  cfg.max_qps);
    const net::Iface6 &f6 = dev.iface6();
    std::string v6;
    for (uint32_t i = 0; i < f6.naddrs; ++i) {
        if (i != 0)
            v6 += ' ';
        v6 += net::ipv6_str(f6.addrs[i].addr.data());
        v6 += '/';
        v6 += std::to_string(f6.addrs[i].prefix_len);
    }
    logger().info("{}: IPv6 {}{}{}", p.name, v6,
                  cfg.vlan ? ", VLAN " + std::to_string(cfg.vlan) : std::string(),
                  f6.has_gateway() ? ", gateway " + net::ipv6_str(f6.gateway.data())
                                   : std::string());
}

/** The Dev over a started port and its settings; the Dev's destructor stops the port if
 * a setting fails. */
Result<std::unique_ptr<Dev>> make_device(Runtime &rt, const DeviceConfig &cfg,
                                         const cc::CcParams &ccp, const net::Iface &ifc,
                                         uint64_t line, uint32_t zc_min_bytes, PortPlan &p) {
    std::unique_ptr<Dev> dev;
    try {
        dev = std::make_unique<Dev>(rt, p.port, p.name, ifc, p.mtu, cfg.arp_timeout_ms, cfg.max_qps,
                                    rt.workers(), p.nrxq, p.ntxq, p.queue_stride);
    } catch (const std::bad_alloc &) {
        drivers::stop_port(p.port, false, p.caps.control_on_intr_thread);
        return Status(ENOMEM, p.name + ": no memory for " + std::to_string(cfg.max_qps) +
                                  " QPNs over " + std::to_string(rt.workers()) + " worker(s)");
    }
    if (Status s = dev->set_l3(cfg); !s)
        return s;
    /* Neighbour solicitations go to solicited-node multicast groups. */
    if (const int rc = rte_eth_allmulticast_enable(p.port); rc != 0 && rc != -ENOTSUP)
        logger().warn("{}: all-multicast mode: {}", p.name, errstr(rc));
    dev->qp_defaults() = QpDefaults::from(cfg, ccp, line);
    dev->set_port_info(drivers::Caps(p.caps), std::move(p.steer)); /* p.caps: for the log */
    apply_pfc(cfg, p, *dev);
    dev->set_rtr_nonblocking(cfg.rtr_nonblocking);
    logger().info("{}: DCQCN {} (line rate {} Mb/s{}, data ECN {}, TX burst {})", p.name,
                  cfg.dcqcn ? "on" : "off", line / 1'000'000,
                  cfg.line_rate_bps != 0 ? " as configured" : "",
                  cfg.dcqcn ? static_cast<int>(cc::ecn_bits(ccp.ecn_mode)) : 0,
                  cfg.tx_burst_frames != 0 ? std::to_string(cfg.tx_burst_frames) + " frames"
                                           : std::string("unlimited"));
    apply_rss(p, *dev);
    dev->set_worker_rings(!rt.embedded());
    dev->zero_copy().configure(p.reach, zc_min_bytes          ? zc_min_bytes
                                        : p.caps.zc_min_bytes ? p.caps.zc_min_bytes
                                                              : kZeroCopyMinBytesDefault);
    if (!cfg.capture.empty())
        if (Status s = dev->capture_at_open(cfg.capture, cfg.capture_snaplen); !s)
            return s;
    return dev;
}

/** Configures and starts the planned port; stops it again if a step after the start
 * fails. */
Status bring_up_port(const Runtime &rt, const DeviceConfig &cfg, const cc::CcParams &ccp,
                     net::Iface *ifc, uint64_t *line, PortPlan &p) {
    if (Status s = configure_queues(p, rt); !s)
        return s;
    if (Status s = configure_mtu(p); !s)
        return s;
    net::Mac port_mac;
    if (Status s = pick_mac(cfg, p, &port_mac, ifc); !s)
        return s;
    if (Status s = start_port(p); !s)
        return s;
    Status s = after_start(*ifc, port_mac, p);
    if (s) {
        Result<uint64_t> r = line_rate(cfg, ccp, p);
        if (r.is_ok())
            *line = r.value();
        else
            s = r.status();
    }
    if (!s)
        drivers::stop_port(p.port, false, p.caps.control_on_intr_thread);
    return s;
}

} // namespace

Result<Dev *> Runtime::open_device(const DeviceConfig &cfg) {
    const cc::CcParams ccp = cc::params_from(cfg.dcqcn_params);
    net::Iface ifc;
    if (Status s = check_device_config(cfg, ccp, &ifc); !s)
        return s;
    if (worker_running())
        return Status(EBUSY, "open_device: open devices before start()");
    Result<uint16_t> port = pick_port(cfg.port, devs_);
    if (!port.is_ok())
        return port.status();
    PortPlan p;
    p.port = port.value();
    char pname[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(p.port, pname);
    p.name = pname;
    if (int rc = rte_eth_dev_info_get(p.port, &p.info); rc != 0)
        return Status(EIO, p.name + ": rte_eth_dev_info_get: " + errstr(rc));
    if (cfg.host_mempool != nullptr)
        return open_hosted(cfg, p.port, p.name, ifc, ccp); /* the host's port, as it is */
    if (pool_ == nullptr)
        return Status(EINVAL, p.name + ": the engine has no mbuf pool (EngineOptions::mbufs 0): "
                                       "hand the port over with DeviceConfig::host_mempool");
    /* What droce may rely on for this port: its PMD family's adapter (drivers/). */
    p.caps = drivers::probe(p.port, p.info);
    for (const std::string &l : p.caps.lines())
        logger().info("{}: adapter {}: {}", p.name, p.caps.adapter, l);
    p.bond = is_bond_port(p.port);
    if (Status s = plan_mtu(cfg, max_frame_, p); !s)
        return s;
    if (Status s = plan_queues(workers(), cfg.queue_stride, opts_.zero_copy, p); !s)
        return s;
    plan_steering(cfg, p);
    uint64_t line = 0;
    if (Status s = bring_up_port(*this, cfg, ccp, &ifc, &line, p); !s)
        return s;
    Result<std::unique_ptr<Dev>> dev =
        make_device(*this, cfg, ccp, ifc, line, opts_.zero_copy_min_bytes, p);
    if (!dev.is_ok())
        return dev.status();
    log_opened(cfg, p, ifc, workers(), opts_.zero_copy, *dev.value());
    dev.value()->watch_link();
    Dev *d = dev.value().get();
    std::lock_guard<std::mutex> lk(telemetry_mutex());
    devs_.push_back(std::move(dev.value()));
    return d;
}

} // namespace droce::engine
