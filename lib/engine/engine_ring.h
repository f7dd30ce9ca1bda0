/* SPDX-License-Identifier: BSD-3-Clause */
/* Rings for the application <-> worker queues (engine_ring.cpp). */
#pragma once

struct rte_ring;

namespace droce::engine {

/** SPSC rings for the WR and completion queues come from the process heap (one
 * allocation each, cache-aligned, rte_ring_init), not from memzones: memzones are a
 * small fixed table (RTE_MAX_MEMZONE) and would cap a process at a few hundred QPs. */
rte_ring *ring_alloc(const char *name, unsigned esize, unsigned count, unsigned flags);
void ring_release(rte_ring *r);

} // namespace droce::engine
