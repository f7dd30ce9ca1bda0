/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory regions: reg_mr / dereg_mr with every worker parked (the MR table and the
 * zero-copy regions are read by all of them), each MR with its zero-copy region where the
 * port attaches payloads (engine_zc_registry.cpp), and the reaping of regions whose mbufs
 * the port still held at deregistration. */
#include <rte_ethdev.h>

#include "engine_dev.h"

namespace droce::engine {

Result<mem::MemoryRegion> Dev::reg_mr(uint32_t pd, const void *addr, uint64_t length,
                                      uint32_t access) {
    Result<mem::MemoryRegion> r = mrs_.reg(pd, addr, length, access);
    if (r && zc_.on())
        zc_.add(*r, addr, length, port_, name_);
    return r;
}

Status Dev::dereg_mr(uint32_t key, uint32_t *outstanding) {
    *outstanding = 0;
    Status s = mrs_.dereg(key);
    if (s)
        *outstanding = zc_.retire(key);
    return s;
}

bool Dev::zc_reap(uint32_t key, bool give_up) {
    /* Ask the PMD to free what it has sent (no-op, -ENOTSUP, on net_ring). */
    for (uint16_t q = 0; q < ntxq_; ++q)
        rte_eth_tx_done_cleanup(port_, q, 0);
    return zc_.reap(key, give_up);
}

} // namespace droce::engine
