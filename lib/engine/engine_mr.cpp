/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory regions and the zero-copy registry: reg_mr / dereg_mr with every worker parked
 * (the MR table and the regions are read by all of them), the regions whose mbufs the
 * port may still hold, and their reaping. */
/* rte_dev_dma_map() is experimental in DPDK 22.11. */
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API
#endif
#include <algorithm>
#include <cstring>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_memory.h>

#include "engine.h"
#include "engine_dpdk_mem.h"
#include "engine_log.h"

namespace droce::engine {

namespace {

/* Runs when the last attached mbuf of a region is freed (refcnt 1 -> 0). */
void zc_free_cb(void *, void *opaque) { ++static_cast<ZcRegion *>(opaque)->idle_events; }

} // namespace

uint32_t ZcRegion::outstanding() const {
    uint32_t n = 0;
    for (const auto &si : shinfo)
        n += rte_mbuf_ext_refcnt_read(&si);
    return n;
}

ZcRegion::~ZcRegion() {
    /* Only destroyed with no mbuf out (or at device close, the port stopped). The DMA
     * mapping goes with the registration. */
    if (extmem && rte_extmem_unregister(ext_addr, ext_len) != 0)
        logger().debug("rte_extmem_unregister: {}", rte_strerror(rte_errno));
}

const char *zc_reach_str(ZcReach r) {
    switch (r) {
    case ZcReach::Copy:
        return "copy";
    case ZcReach::VirtAddr:
        return "any registered memory";
    case ZcReach::DpdkFd:
        return "DPDK memory shared with the backend only";
    case ZcReach::DmaMapped:
        return "DMA-mapped regions only";
    }
    return "?";
}

void Dev::set_zero_copy(ZcReach reach, uint32_t min_bytes) {
    zc_on_ = reach != ZcReach::Copy;
    zc_reach_ = reach;
    zc_min_ = min_bytes;
    zc_from_ = zc_on_ ? std::max<uint32_t>(min_bytes, 1) : UINT32_MAX;
}

Result<mem::MemoryRegion> Dev::reg_mr(uint32_t pd, const void *addr, uint64_t length,
                                      uint32_t access) {
    Result<mem::MemoryRegion> r = mrs_.reg(pd, addr, length, access);
    if (!r || !zc_on_)
        return r;
    const uint32_t slot = r->key >> 8;
    if (zc_.size() <= slot)
        zc_.resize(slot + 1);
    auto z = std::make_unique<ZcRegion>();
    z->key = r->key;
    for (auto &si : z->shinfo) {
        si.free_cb = zc_free_cb;
        si.fcb_opaque = z.get();
        rte_mbuf_ext_refcnt_set(&si, 0);
    }
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (zc_reach_ == ZcReach::DpdkFd) {
        /* Already DPDK's memory (nothing to register), or out of the backend's reach. */
        z->usable = dpdk_own_memory(addr, length, true);
        if (!z->usable)
            logger().debug("{}: MR 0x{:x}: not DPDK memory shared with the vhost-user "
                           "backend; copied on TX",
                           name_, r->key);
        zc_[slot] = std::move(z);
        return r;
    }
    if (dpdk_own_memory(addr, length, false)) {
        /* DPDK's own memory (droce::alloc_buf): already in its memory map, and mapped for
         * DMA by the EAL; rte_extmem_register would refuse it (EEXIST). */
        z->usable = zc_reach_ == ZcReach::VirtAddr ||
                    (zc_reach_ == ZcReach::DmaMapped && rte_eal_iova_mode() == RTE_IOVA_VA);
        zc_[slot] = std::move(z);
        return r;
    }
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t lo = a & ~(page - 1), hi = (a + length + page - 1) & ~(page - 1);
    z->ext_addr = reinterpret_cast<uint8_t *>(lo);
    z->ext_len = hi - lo;
    /* Known to DPDK's memory map (rte_mem_virt2memseg, PMDs that look buffers up). Fails
     * with EEXIST when another region shares a page: harmless for ports that take
     * virtual addresses, fatal for zero-copy on a DMA port. */
    if (rte_extmem_register(z->ext_addr, z->ext_len, nullptr, 0, page) == 0) {
        z->extmem = true;
    } else {
        ++shards_[0]->ec.mr_extmem_register_failed;
        logger().info("{}: MR 0x{:x}: rte_extmem_register: {}", name_, r->key,
                      rte_strerror(rte_errno));
    }
    if (zc_reach_ == ZcReach::DmaMapped && z->extmem) {
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(port_, &info) == 0 && info.device != nullptr &&
            rte_eal_iova_mode() == RTE_IOVA_VA &&
            rte_dev_dma_map(info.device, z->ext_addr, lo, z->ext_len) == 0) {
            z->dma = true;
        } else {
            ++shards_[0]->ec.mr_dma_map_failed;
            logger().info("{}: MR 0x{:x}: no DMA mapping (IOVA as VA needed); copied on TX", name_,
                          r->key);
        }
    }
    z->usable = zc_reach_ == ZcReach::VirtAddr || z->dma;
    zc_[slot] = std::move(z);
    return r;
}

Status Dev::dereg_mr(uint32_t key, uint32_t *outstanding) {
    *outstanding = 0;
    Status s = mrs_.dereg(key);
    if (!s)
        return s;
    const uint32_t slot = key >> 8;
    if (slot < zc_.size() && zc_[slot] && zc_[slot]->key == key) {
        std::unique_ptr<ZcRegion> z = std::move(zc_[slot]);
        const uint32_t n = z->outstanding();
        if (n != 0) {
            /* virtio_user frees sent mbufs only when a later burst finds its ring nearly
             * full, so the last frames of a run stay attached after the backend read them
             * (their WRs completed: the peer received them). The memory is DPDK's own and
             * stays mapped; only the shared info (kept in zc_retired_) is touched when they
             * are freed: no wait. Elsewhere a PMD may still read the memory: wait. */
            if (zc_reach_ != ZcReach::DpdkFd)
                *outstanding = n;
            shards_[0]->ec.mr_dereg_inflight_refs += n;
            zc_retired_.push_back(std::move(z));
        }
    }
    return s;
}

bool Dev::zc_reap(uint32_t key, bool give_up) {
    /* Ask the PMD to free what it has sent (no-op, -ENOTSUP, on net_ring). */
    for (uint16_t q = 0; q < ntxq_; ++q)
        rte_eth_tx_done_cleanup(port_, q, 0);
    bool gone = true;
    for (size_t i = 0; i < zc_retired_.size();) {
        ZcRegion *z = zc_retired_[i].get();
        if (z->outstanding() == 0) {
            zc_retired_[i] = std::move(zc_retired_.back());
            zc_retired_.pop_back();
            continue;
        }
        if (z->key == key) {
            gone = false;
            if (give_up) {
                ++shards_[0]->ec.mr_dereg_timeout;
                z->key = 0; /* stays in zc_retired_ until its mbufs are back */
            }
        }
        ++i;
    }
    return gone;
}

} // namespace droce::engine
