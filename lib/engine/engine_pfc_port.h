/* SPDX-License-Identifier: BSD-3-Clause */
/* PFC on the port through the PMD: the queue-based DPDK API where the PMD reports
 * traffic classes for it, else rte_eth_dev_priority_flow_ctrl_set (engine_pfc_port.cpp). */
#pragma once

#include <cstdint>
#include <string>

namespace droce::engine {

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
