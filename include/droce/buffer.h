/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Buffers that zero-copy TX can attach on every port (included by droce.h).
 *
 * For payloads of at least the port's zero-copy threshold, droce attaches the registered
 * memory to the frame instead of copying it, where the port's PMD can reach that memory.
 * Most ports reach any memory of the process (net_vhost, net_memif, af_packet, net_ring);
 * a virtio_user port does not: its vhost-user backend maps only the EAL's own fd-backed
 * memory (hugepages, or the memfd of --no-huge), so a malloc'ed buffer is copied on every
 * send there. PCI NICs reach DPDK's memory without registering it for DMA. alloc_buf
 * hands out that memory; register it with ProtectionDomain::reg_mr as any other.
 *
 *     auto b = droce::alloc_buf(*dev, 1 << 20);   // ibv: posix_memalign + ibv_reg_mr
 *     auto mr = pd->reg_mr(*b, 1 << 20, droce::kAccessLocalWrite);
 *     ...
 *     mr->reset();                                 // deregister first (ibv_dereg_mr)
 *     droce::free_buf(*b);
 *
 * EAL memory: with hugepages the heap grows as needed (virtio_user needs
 * --single-file-segments: its memory table holds at most 8 regions); with --no-huge it is
 * the one memfd the EAL makes at start-up, so -m must leave room for the buffers (the
 * EAL's own pools come first). --in-memory without memfd support gives memory without fds:
 * nothing a virtio_user backend can map. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "status.h"

namespace droce {

class Device;

/** alloc_buf flags. */
enum BufFlags : uint32_t {
    /** Fail (ENOMEM) rather than fall back to ordinary memory when DPDK has no fd-backed
     * memory left for the request. */
    kBufZeroCopyOnly = 1u << 0,
};

/** Allocates `length` zeroed bytes, 4096-aligned, that zero-copy TX can attach on every
 * port: DPDK's fd-backed memory on the port's NUMA socket (or any socket when that one
 * has none). When the EAL has none to give (heap exhausted, --no-huge -m too small, no
 * fds) it falls back to ordinary memory and logs that payloads from it are copied on
 * ports that reach only DPDK's memory (virtio_user); with kBufZeroCopyOnly it fails with
 * ENOMEM instead. EINVAL for length 0. Free with free_buf after deregistering its MRs. */
Result<void *> alloc_buf(const Device &dev, size_t length, uint32_t flags = 0);

/** Frees what alloc_buf returned (nullptr: nothing). The MRs on it must be destroyed
 * first: MemoryRegion's destructor waits for the frames still attached to it. */
void free_buf(void *addr);

/** True when [addr, addr + length) is memory zero-copy TX can attach on every port (what
 * alloc_buf returns unless it fell back). */
bool buf_zero_copy(const void *addr, size_t length);

} // namespace droce
