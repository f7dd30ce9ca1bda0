/* SPDX-License-Identifier: BSD-3-Clause */
/* PFC on the port through the PMD: the queue-based DPDK API where the PMD reports
 * traffic classes for it, else rte_eth_dev_priority_flow_ctrl_set (engine_pfc_port.cpp). */
#pragma once

#include <cstdint>
#include <string>

namespace droce::engine {

inline constexpr uint64_t kPfcStormNsDefault = 100'000'000; /* 100 ms */

/** PFC as configured at open (Dev::pfc()): set before any worker polls the device, then
 * only read (by every shard, and by droce-info). */
struct PfcSettings {
    int prio = -1;                          /* the lossless priority; -1: none asked */
    uint64_t storm_ns = kPfcStormNsDefault; /* pause-storm watchdog (0: off) */
    std::string status = "not requested";   /* what the PMD said, for droce-info */
    /* PFC droce sends (DeviceConfig::pfc_tx_xoff): thresholds in frames of an RX queue
     * (0: droce sends no pause); tx_count: the PMD implements rte_eth_rx_queue_count,
     * else the burst's fill is the level. */
    uint32_t tx_xoff = 0, tx_xon = 0;
    bool tx_count = false;
};

enum class PfcApi : uint8_t {
    None,  /* the PMD implements neither */
    Port,  /* rte_eth_dev_priority_flow_ctrl_set */
    Queue, /* rte_eth_dev_priority_flow_ctrl_queue_configure */
};

struct PfcPortResult {
    PfcApi api = PfcApi::None; /* the API that applies (tried) */
    int rc = 0;                /* 0: PFC is on for the priority */
    std::string detail;        /* why not, or what was configured */
};

/** Makes `prio` lossless on the port's nrxq RX and ntxq TX queues (after start). */
PfcPortResult pfc_port_enable(uint16_t port, int prio, uint16_t nrxq, uint16_t ntxq);
const char *pfc_api_name(PfcApi a);

} // namespace droce::engine
