/* SPDX-License-Identifier: BSD-3-Clause */
/* droce::alloc_buf / free_buf (buffer.h): memory that zero-copy TX can attach on every
 * port, from DPDK's heap on the port's socket. */
#include <cstdlib>
#include <cstring>
#include <string>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include <droce/droce.h>

#include "engine_dpdk_mem.h"
#include "engine_log.h"

namespace droce {

namespace {

constexpr size_t kBufAlign = 4096;

/* rte_zmalloc_socket, keeping only memory a vhost-user backend can map (fd-backed):
 * DPDK's heap also spans memory without fds (--in-memory without memfd, anonymous
 * --no-huge memory on old kernels), which would be copied on virtio_user anyway. */
void *dpdk_alloc(size_t length, int socket) {
    void *p = rte_zmalloc_socket("droce_buf", length, kBufAlign, socket);
    if (p != nullptr && !engine::dpdk_own_memory(p, length, true)) {
        rte_free(p);
        p = nullptr;
    }
    return p;
}

} // namespace

Result<void *> alloc_buf(const Device &dev, size_t length, uint32_t flags) {
    if (length == 0)
        return Status(EINVAL, "alloc_buf: length 0");
    int socket = rte_eth_dev_socket_id(dev.port_id());
    void *p = dpdk_alloc(length, socket < 0 ? SOCKET_ID_ANY : socket);
    if (p == nullptr && socket >= 0)
        p = dpdk_alloc(length, SOCKET_ID_ANY); /* the port's socket has none: any other */
    if (p != nullptr)
        return p;
    const std::string why = "no fd-backed DPDK memory for " + std::to_string(length) +
                            " bytes (heap exhausted: raise -m or add hugepages; or memory "
                            "without fds: --in-memory/--no-huge without memfd)";
    if (flags & kBufZeroCopyOnly)
        return Status(ENOMEM, "alloc_buf: " + why);
    const size_t rounded = (length + kBufAlign - 1) / kBufAlign * kBufAlign;
    p = std::aligned_alloc(kBufAlign, rounded);
    if (p == nullptr)
        return Status(ENOMEM, "alloc_buf: out of memory for " + std::to_string(length) + " bytes");
    std::memset(p, 0, rounded);
    logger().warn("{}: alloc_buf: {}; ordinary memory instead: zero-copy TX copies it "
                  "on ports that reach only DPDK's memory (virtio_user)",
                  dev.name(), why);
    return p;
}

void free_buf(void *addr) {
    if (addr == nullptr)
        return;
    if (engine::dpdk_own_memory(addr, 1, false))
        rte_free(addr);
    else
        std::free(addr); /* alloc_buf's fallback */
}

bool buf_zero_copy(const void *addr, size_t length) {
    return engine::dpdk_own_memory(addr, length, true);
}

} // namespace droce
