/* SPDX-License-Identifier: BSD-3-Clause */
/* A shared receive queue as the engine keeps it (engine_srq.cpp). */
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "qp_recv_queue.h"

struct rte_ring;

namespace droce::engine {

/* A shared receive queue; worker mode feeds it through an SPSC ring like a QP's RQ. */
struct SrqCtx {
    std::unique_ptr<qp::RecvQueue> q;
    rte_ring *ring = nullptr; /* worker mode: RecvWr, application -> worker */
    uint32_t refs = 0;        /* QPs using it */
    uint32_t worker = 0;
    uint32_t index = 0; /* in its shard's table (doorbell value) */
    uint32_t max_wr = 0;
    uint64_t drained = 0; /* worker: WRs taken off the ring */
    /* Application side of worker mode: WRs admitted, and the worker's count of WRs that
     * left the SRQ (consumed by a SEND or flushed): posted - retired <= max_wr exactly. */
    alignas(64) std::atomic<bool> doorbell{false};
    alignas(64) std::atomic<uint64_t> retired{0};
    alignas(64) uint64_t posted = 0;
    uint64_t retired_seen = 0; /* application only: the last `retired` it read */
    ~SrqCtx();
};

} // namespace droce::engine
