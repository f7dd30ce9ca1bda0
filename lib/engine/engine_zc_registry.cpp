/* SPDX-License-Identifier: BSD-3-Clause */
/* The zero-copy registry (engine_zc_registry.h): a region per registered MR that frames
 * may attach, made known to DPDK's memory map (and DMA-mapped where the port needs it),
 * and the deregistered regions kept until the port gives their mbufs back. */
/* rte_dev_dma_map() is experimental in DPDK 22.11. */
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API
#endif
#include <algorithm>

#include <unistd.h>

#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_memory.h>

#include "engine_dpdk_mem.h"
#include "engine_log.h"
#include "engine_zc_registry.h"

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

void ZcRegistry::configure(ZcReach reach, uint32_t min_bytes) {
    on_ = reach != ZcReach::Copy;
    reach_ = reach;
    min_ = min_bytes;
    from_ = on_ ? std::max<uint32_t>(min_bytes, 1) : UINT32_MAX;
}

void ZcRegistry::add(const mem::MemoryRegion &mr, const void *addr, uint64_t length, uint16_t port,
                     const std::string &dev) {
    const uint32_t slot = mr.key >> 8;
    if (regions_.size() <= slot)
        regions_.resize(slot + 1);
    auto z = std::make_unique<ZcRegion>();
    z->key = mr.key;
    for (auto &si : z->shinfo) {
        si.free_cb = zc_free_cb;
        si.fcb_opaque = z.get();
        rte_mbuf_ext_refcnt_set(&si, 0);
    }
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (reach_ == ZcReach::DpdkFd) {
        /* Already DPDK's memory (nothing to register), or out of the backend's reach. */
        z->usable = dpdk_own_memory(addr, length, true);
        if (!z->usable)
            logger().debug("{}: MR 0x{:x}: not DPDK memory shared with the vhost-user "
                           "backend; copied on TX",
                           dev, mr.key);
        regions_[slot] = std::move(z);
        return;
    }
    if (dpdk_own_memory(addr, length, false)) {
        /* DPDK's own memory (droce::alloc_buf): already in its memory map, and mapped for
         * DMA by the EAL; rte_extmem_register would refuse it (EEXIST). */
        z->usable = reach_ == ZcReach::VirtAddr ||
                    (reach_ == ZcReach::DmaMapped && rte_eal_iova_mode() == RTE_IOVA_VA);
        regions_[slot] = std::move(z);
        return;
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
        ++ctr_.extmem_register_failed;
        logger().info("{}: MR 0x{:x}: rte_extmem_register: {}", dev, mr.key,
                      rte_strerror(rte_errno));
    }
    if (reach_ == ZcReach::DmaMapped && z->extmem) {
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(port, &info) == 0 && info.device != nullptr &&
            rte_eal_iova_mode() == RTE_IOVA_VA &&
            rte_dev_dma_map(info.device, z->ext_addr, lo, z->ext_len) == 0) {
            z->dma = true;
        } else {
            ++ctr_.dma_map_failed;
            logger().info("{}: MR 0x{:x}: no DMA mapping (IOVA as VA needed); copied on TX", dev,
                          mr.key);
        }
    }
    z->usable = reach_ == ZcReach::VirtAddr || z->dma;
    regions_[slot] = std::move(z);
}

uint32_t ZcRegistry::retire(uint32_t key) {
    const uint32_t slot = key >> 8;
    if (slot >= regions_.size() || !regions_[slot] || regions_[slot]->key != key)
        return 0;
    std::unique_ptr<ZcRegion> z = std::move(regions_[slot]);
    const uint32_t n = z->outstanding();
    if (n == 0)
        return 0;
    /* virtio_user frees sent mbufs only when a later burst finds its ring nearly full, so
     * the last frames of a run stay attached after the backend read them (their WRs
     * completed: the peer received them). The memory is DPDK's own and stays mapped; only
     * the shared info (kept in retired_) is touched when they are freed: no wait.
     * Elsewhere a PMD may still read the memory: wait. */
    ctr_.dereg_inflight_refs += n;
    retired_.push_back(std::move(z));
    return reach_ != ZcReach::DpdkFd ? n : 0;
}

bool ZcRegistry::reap(uint32_t key, bool give_up) {
    bool gone = true;
    for (size_t i = 0; i < retired_.size();) {
        ZcRegion *z = retired_[i].get();
        if (z->outstanding() == 0) {
            retired_[i] = std::move(retired_.back());
            retired_.pop_back();
            continue;
        }
        if (z->key == key) {
            gone = false;
            if (give_up) {
                ++ctr_.dereg_timeout;
                z->key = 0; /* stays retired until its mbufs are back */
            }
        }
        ++i;
    }
    return gone;
}

uint64_t ZcRegistry::outstanding() const {
    uint64_t n = 0;
    for (const auto &z : regions_)
        if (z)
            n += z->outstanding();
    for (const auto &z : retired_)
        n += z->outstanding();
    return n;
}

} // namespace droce::engine
