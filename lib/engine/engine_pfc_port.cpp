/* SPDX-License-Identifier: BSD-3-Clause */
/* PFC on the port through the PMD (issue 16): DPDK has two APIs. The queue-based one
 * (rte_eth_dev_priority_flow_ctrl_queue_configure, where
 * rte_eth_dev_priority_flow_ctrl_queue_info_get reports tc_max > 0: cnxk in 22.11) maps
 * a traffic class to the TX queue a received pause stops and to the RX queue whose fill
 * sends one; the port-wide one (rte_eth_dev_priority_flow_ctrl_set: ixgbe, txgbe, hns3,
 * axgbe) takes water marks. droce asks the queue-based one first, for every queue, and
 * says which applied. Both are experimental in DPDK 22.11: the define is kept to this
 * file. */
#define ALLOW_EXPERIMENTAL_API 1

#include <rte_ethdev.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "engine_pfc_port.h"

namespace droce::engine {

namespace {
std::string err(int rc) { return std::strerror(rc < 0 ? -rc : rc); }
bool not_implemented(int rc) { return rc == -ENOTSUP || rc == -ENOSYS || rc == -EOPNOTSUPP; }
} // namespace

PfcPortResult pfc_port_enable(uint16_t port, int prio, uint16_t nrxq, uint16_t ntxq) {
    PfcPortResult r;
    rte_eth_pfc_queue_info qi{};
    const int qrc = rte_eth_dev_priority_flow_ctrl_queue_info_get(port, &qi);
    if (qrc == 0 && qi.tc_max > 0) {
        r.api = PfcApi::Queue;
        if (prio >= qi.tc_max) {
            r.rc = -EINVAL;
            r.detail = "priority " + std::to_string(prio) + " is beyond the PMD's tc_max " +
                       std::to_string(qi.tc_max);
            return r;
        }
        /* One call pairs one RX queue with one TX queue: cover them all. */
        const uint16_t n = std::max(nrxq, ntxq);
        for (uint16_t i = 0; i < n; ++i) {
            rte_eth_pfc_queue_conf c{};
            c.mode = qi.mode_capa != RTE_ETH_FC_NONE ? qi.mode_capa : RTE_ETH_FC_FULL;
            c.rx_pause.tx_qid = std::min<uint16_t>(i, static_cast<uint16_t>(ntxq - 1));
            c.rx_pause.tc = static_cast<uint8_t>(prio);
            c.tx_pause.rx_qid = std::min<uint16_t>(i, static_cast<uint16_t>(nrxq - 1));
            c.tx_pause.tc = static_cast<uint8_t>(prio);
            c.tx_pause.pause_time = 0xFFFF;
            if (const int rc = rte_eth_dev_priority_flow_ctrl_queue_configure(port, &c); rc != 0) {
                r.rc = rc;
                r.detail = "queue " + std::to_string(i) + ": " + err(rc);
                return r;
            }
        }
        r.detail = std::to_string(n) + " queue pair(s), tc_max " + std::to_string(qi.tc_max);
        return r;
    }
    r.api = PfcApi::Port;
    rte_eth_pfc_conf pc{};
    rte_eth_fc_conf fc{};
    /* Water marks are the PMD's own link flow-control ones: their unit and valid range
     * are device specific (KB below the RX buffer size on ixgbe, zero on hns3). */
    if (rte_eth_dev_flow_ctrl_get(port, &fc) == 0) {
        pc.fc.high_water = fc.high_water;
        pc.fc.low_water = fc.low_water;
        pc.fc.send_xon = fc.send_xon;
    }
    pc.fc.mode = RTE_ETH_FC_FULL;
    pc.fc.pause_time = 0xFFFF;
    pc.priority = static_cast<uint8_t>(prio);
    r.rc = rte_eth_dev_priority_flow_ctrl_set(port, &pc);
    if (not_implemented(r.rc)) {
        r.api = PfcApi::None;
        r.detail = "implements neither rte_eth_dev_priority_flow_ctrl_set nor the queue-based "
                   "rte_eth_dev_priority_flow_ctrl_queue_configure (tc_max 0)";
    } else if (r.rc != 0) {
        r.detail = err(r.rc);
    }
    return r;
}

const char *pfc_api_name(PfcApi a) {
    switch (a) {
    case PfcApi::Queue:
        return "rte_eth_dev_priority_flow_ctrl_queue_configure";
    case PfcApi::Port:
        return "rte_eth_dev_priority_flow_ctrl_set";
    case PfcApi::None:
        break;
    }
    return "none";
}

} // namespace droce::engine
