/* SPDX-License-Identifier: BSD-3-Clause */
/* A device on a port the host configured and started itself (DeviceConfig::host_mempool):
 * the way a storage data plane that owns its NIC (SPDK starts the EAL and its ports)
 * embeds droce. droce reads what the port is (MAC, MTU, link) and otherwise leaves it
 * alone: no configure, queue setup, start, stop, close, MTU, promiscuous or multicast
 * mode, flow rule or PFC setting. It polls the one RX queue and fills the one TX queue it
 * was given, and builds its frames from the host's mempool. */
#include <algorithm>
#include <cstring>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "engine.h"
#include "engine_log.h"

namespace droce::engine {

void Dev::set_hosted(uint16_t rxq, uint16_t txq, rte_mempool *pool) {
    hosted_ = true;
    tx_pool_ = pool;
    shards_[0]->pool_ = pool;
    shards_[0]->rxq_ = rxq;
    shards_[0]->txq_ = txq;
}

Result<Dev *> Runtime::open_hosted(const DeviceConfig &cfg, uint16_t port, const std::string &name,
                                   const net::Iface &ifc_in, const cc::CcParams &ccp) {
    if (workers() != 1)
        return Status(EINVAL, name +
                                  ": a host's port gives droce one RX and one TX queue: "
                                  "one worker only (the engine has " +
                                  std::to_string(workers()) + ")");
    rte_eth_dev_info info{};
    if (int rc = rte_eth_dev_info_get(port, &info); rc != 0)
        return Status(EIO, name + ": rte_eth_dev_info_get: " + rte_strerror(-rc));
    if (cfg.host_rx_queue >= info.nb_rx_queues || cfg.host_tx_queue >= info.nb_tx_queues)
        return Status(EINVAL, name + ": host_rx_queue " + std::to_string(cfg.host_rx_queue) +
                                  " / host_tx_queue " + std::to_string(cfg.host_tx_queue) +
                                  " not configured on the port (" +
                                  std::to_string(info.nb_rx_queues) + " RX / " +
                                  std::to_string(info.nb_tx_queues) + " TX queues)");
    /* A frame we build must fit one of the host's mbufs. */
    auto *pool = static_cast<rte_mempool *>(cfg.host_mempool);
    const uint32_t room = rte_pktmbuf_data_room_size(pool);
    if (room <= RTE_PKTMBUF_HEADROOM + RTE_ETHER_HDR_LEN + 4 + 256)
        return Status(EINVAL, name + ": host_mempool's mbufs hold " + std::to_string(room) +
                                  " bytes: too small for a RoCE frame");
    const uint32_t room_mtu = room - RTE_PKTMBUF_HEADROOM - RTE_ETHER_HDR_LEN - 4;
    uint32_t mtu = cfg.mtu;
    if (mtu == 0) {
        uint16_t m = RTE_ETHER_MTU;
        rte_eth_dev_get_mtu(port, &m);
        mtu = std::min<uint32_t>(m, room_mtu);
    } else if (mtu > room_mtu) {
        return Status(EINVAL, name + ": MTU " + std::to_string(mtu) + " above what the host's " +
                                  "mbufs hold (" + std::to_string(room_mtu) + ")");
    }
    net::Iface ifc = ifc_in;
    rte_ether_addr port_mac{};
    rte_eth_macaddr_get(port, &port_mac);
    net::Mac pm;
    std::memcpy(pm.data(), port_mac.addr_bytes, 6);
    if (cfg.mac.empty())
        ifc.mac = pm;
    else if (!net::parse_mac(cfg.mac, &ifc.mac))
        return Status(EINVAL, "open_device: bad MAC '" + cfg.mac + "'");
    if (ifc.mac != pm && rte_eth_promiscuous_get(port) != 1)
        logger().warn("{}: MAC {} is not the port's ({}): the host must put the port in "
                      "promiscuous mode (droce leaves the port's modes alone)",
                      name, net::mac_str(ifc.mac), net::mac_str(pm));
    rte_eth_link link{};
    rte_eth_link_get_nowait(port, &link);
    const uint64_t line =
        cfg.line_rate_bps != 0 ? cfg.line_rate_bps : line_rate_from_link(link.link_speed);
    if (const char *e = cc::validate(ccp, line))
        return Status(EINVAL, name + ": DCQCN parameter " + e);

    std::unique_ptr<Dev> dev;
    try {
        dev = std::make_unique<Dev>(*this, port, name, ifc, mtu, cfg.arp_timeout_ms, cfg.max_qps, 1,
                                    1, 1);
    } catch (const std::bad_alloc &) {
        return Status(ENOMEM, name + ": no memory for " + std::to_string(cfg.max_qps) + " QPNs");
    }
    dev->set_hosted(cfg.host_rx_queue, cfg.host_tx_queue, pool);
    if (Status s = dev->set_l3(cfg); !s)
        return s;
    dev->qp_defaults() = QpDefaults::from(cfg, ccp, line);
    drivers::SteerReport steer;
    steer.mode = "off";
    dev->set_port_info(drivers::probe(port, info), std::move(steer));
    /* PFC frames the port hands up are still honoured in software; the port's own
     * setting is the host's. */
    dev->pfc().prio = cfg.pfc_priority;
    dev->pfc().storm_ns = uint64_t{cfg.pfc_storm_ms} * 1'000'000;
    dev->pfc().status =
        cfg.pfc_priority < 0 ? "not requested" : "the host's port: not set by droce";
    dev->set_rtr_nonblocking(cfg.rtr_nonblocking);
    dev->set_worker_rings(!opts_.embedded);
    /* Zero-copy attaches droce's own small mbufs to frames that the host's queue and pool
     * would then free: copy only. */
    dev->zero_copy().configure(ZcReach::Copy, 0);
    if (!cfg.capture.empty())
        if (Status s = dev->capture_at_open(cfg.capture, cfg.capture_snaplen); !s)
            return s;
    dev->watch_link(); /* reads the link state only: PortErr / PortActive events */
    logger().info("{}: the host's port {} (RX queue {}, TX queue {}, mempool {}), MAC {} IP "
                  "{}/{} MTU {}",
                  name, port, cfg.host_rx_queue, cfg.host_tx_queue, pool->name,
                  net::mac_str(ifc.mac), net::ipv4_str(ifc.ip), ifc.prefix_len, mtu);
    Dev *d = dev.get();
    std::lock_guard<std::mutex> lk(telemetry_mutex());
    devs_.push_back(std::move(dev));
    return d;
}

} // namespace droce::engine
