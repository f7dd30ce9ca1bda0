/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Which memory is DPDK's own (its heap and memzones, not rte_extmem_register'ed regions):
 * what zero-copy TX can attach on a port whose backend reaches only the EAL's memory
 * (virtio_user's vhost-user memory table), and what droce::alloc_buf hands out. */
#pragma once

#include <cstdint>

namespace droce::engine {

/** True when every byte of [addr, addr + len) lies in DPDK's own memory segments (not
 * external ones) and, with need_fd, every segment has an fd: the memory a virtio_user
 * port shares with its vhost-user backend. Control path only (walks the memseg lists). */
bool dpdk_own_memory(const void *addr, uint64_t len, bool need_fd);

} // namespace droce::engine
