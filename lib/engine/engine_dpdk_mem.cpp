/* SPDX-License-Identifier: BSD-3-Clause */
/* DPDK's own memory, told apart from application and external memory (see the header). */
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API
#endif
#include "engine_dpdk_mem.h"

#include <rte_memory.h>

namespace droce::engine {

bool dpdk_own_memory(const void *addr, uint64_t len, bool need_fd) {
    if (addr == nullptr || len == 0)
        return false;
    uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    const uintptr_t end = a + len;
    if (end < a)
        return false;
    /* A range may span segments (rte_malloc joins adjacent pages): check each. */
    while (a < end) {
        const void *p = reinterpret_cast<const void *>(a);
        rte_memseg_list *msl = rte_mem_virt2memseg_list(p);
        if (msl == nullptr || msl->external)
            return false;
        const rte_memseg *ms = rte_mem_virt2memseg(p, msl);
        if (ms == nullptr || ms->addr == nullptr || ms->len == 0)
            return false;
        if (need_fd && rte_memseg_get_fd(ms) < 0)
            return false;
        a = reinterpret_cast<uintptr_t>(ms->addr) + ms->len;
    }
    return true;
}

} // namespace droce::engine
