/* SPDX-License-Identifier: BSD-3-Clause */
/* The zero-copy registry of a device: which registered regions a frame may attach as
 * external buffers instead of copying them, per MR slot, and the deregistered regions
 * whose mbufs the port still holds (engine_zc_registry.cpp).
 *
 * Changed only with every worker parked (MR registration, deregistration, reaping: the
 * regions are read by all of them); the TX path only reads from() and region(). */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rte_mbuf_core.h>

#include "engine_limits.h"
#include "mem_mr.h"

namespace droce::engine {

/** What memory a port's TX can take as an attached (zero-copy) buffer: decided per port
 * from how its PMD reaches frame data, since rte_dev_dma_map succeeding proves nothing
 * for virtual devices (vdev's dma_map and virtio_user's over vhost-user do nothing). */
enum class ZcReach : uint8_t {
    Copy,      /* nothing: every payload is copied into the frame */
    VirtAddr,  /* any registered region: the PMD copies from virtual addresses in this
                * process (net_af_packet, net_vhost, net_memif in copy mode) or hands the
                * mbuf to this process (net_ring) */
    DpdkFd,    /* DPDK's own memory backed by an fd only: what the EAL shares with a
                * vhost-user backend through its memory table (net_virtio_user); an
                * application buffer (malloc, rte_extmem_register) is not shared */
    DmaMapped, /* regions rte_dev_dma_map accepted, with IOVA as VA (PCI NICs) */
};
const char *zc_reach_str(ZcReach r);

/** Zero-copy state of one registered region. shinfo[w].refcnt counts the mbufs that
 * worker w attached to the region and that are not freed yet; the free callback runs
 * when one drops to zero. Each worker has its own shared-info: DPDK's
 * rte_mbuf_ext_refcnt_update takes a non-atomic fast path, so one counter must only
 * ever be touched by one thread (zero-copy is therefore off where another thread frees
 * the frames: net_ring with several workers, or a TX queue shared through a handoff).
 * A region outlives its MR while mbufs are out. */
struct ZcRegion {
    rte_mbuf_ext_shared_info shinfo[kMaxWorkers]{};
    uint32_t key = 0;
    uint8_t *ext_addr = nullptr; /* page-aligned envelope given to rte_extmem_register */
    size_t ext_len = 0;
    bool extmem = false;
    bool dma = false;
    bool usable = false; /* zero-copy allowed for this region on this port */
    uint64_t idle_events = 0;
    uint32_t outstanding() const;
    ~ZcRegion();
};

/** What registration and deregistration met (counted as mr_* by the device). */
struct ZcCounters {
    uint64_t extmem_register_failed = 0; /* rte_extmem_register refused a region (a note) */
    uint64_t dma_map_failed = 0;         /* rte_dev_dma_map refused one: copied on TX */
    uint64_t dereg_inflight_refs = 0;    /* mbufs still out when their MR was deregistered */
    uint64_t dereg_timeout = 0;          /* ... and still out when dereg gave up waiting */
};

class ZcRegistry {
  public:
    /* The port's reach (Copy: zero-copy off) and the shortest payload worth attaching. */
    void configure(ZcReach reach, uint32_t min_bytes);
    bool on() const { return on_; }
    ZcReach reach() const { return reach_; }
    uint32_t min_bytes() const { return min_; }
    /* The shortest payload attached (min_bytes, at least 1), UINT32_MAX when off: the one
     * compare both transmit paths make. */
    uint32_t from() const { return from_; }
    /* The region of MR slot `slot` (key >> 8), or nullptr. */
    ZcRegion *region(uint32_t slot) const {
        return slot < regions_.size() ? regions_[slot].get() : nullptr;
    }

    /* A region for the MR just registered over [addr, addr + length) (on() only): known
     * to DPDK's memory map, and DMA-mapped for port where the reach needs it. `dev`: the
     * device's name for the log. */
    void add(const mem::MemoryRegion &mr, const void *addr, uint64_t length, uint16_t port,
             const std::string &dev);
    /* The MR of key was deregistered: its region leaves the table; kept (retired) while
     * mbufs are out. Returns the mbufs a caller must wait for (0 where the memory stays
     * mapped whatever the port does: DpdkFd). */
    uint32_t retire(uint32_t key);
    /* Releases retired regions whose mbufs are all back; true when key's (if any) is gone.
     * give_up: key's region stays for good (counted dereg_timeout). */
    bool reap(uint32_t key, bool give_up);
    /* Mbufs attached to any region, live or retired. */
    uint64_t outstanding() const;
    const ZcCounters &counters() const { return ctr_; }

  private:
    bool on_ = false;
    ZcReach reach_ = ZcReach::Copy;
    uint32_t from_ = UINT32_MAX;
    uint32_t min_ = 0;
    std::vector<std::unique_ptr<ZcRegion>> regions_; /* by MR slot */
    std::vector<std::unique_ptr<ZcRegion>> retired_; /* deregistered, mbufs still out */
    ZcCounters ctr_;
};

} // namespace droce::engine
