/* SPDX-License-Identifier: BSD-3-Clause */
/* A completion queue as the engine keeps it (engine_cq.cpp). */
#pragma once

#include <atomic>
#include <cstdint>

#include <droce/droce.h>

struct rte_ring;

namespace droce::engine {

class CompChannel;

/** A CQ. Worker mode: completions go from the worker to the application through an SPSC
 * ring. Embedded mode: the shard that pushes and the application that polls are the same
 * thread, so a plain array replaces the ring (engine_cq.cpp). */
struct CqCtx final {
    rte_ring *ring = nullptr;
    /* Embedded: slots[head & mask .. tail & mask), free-running counters, at most depth
     * entries (the cqe asked for; the array is the next power of two). */
    Wc *slots = nullptr;
    uint32_t mask = 0;
    uint32_t depth = 0;
    uint32_t head = 0;
    uint32_t tail = 0;
    void *user = nullptr; /* the API's CompletionQueue (named by CqErr events) */
    bool overrun = false; /* CqErr raised (once per CQ) */
    uint32_t refs = 0;    /* QPs using it; touched on the worker only */
    uint32_t worker = 0;  /* the worker that produces into it (its QPs' worker) */
    /* Completion events (engine_comp_channel.h): set while attached to a channel. */
    CompChannel *channel = nullptr;
    uint64_t channel_token = 0;
    /* The application arms (kArm*), the producer disarms when the event fires; queued:
     * the token waits in the channel (cleared when the channel hands it out). */
    alignas(64) std::atomic<uint8_t> armed{0};
    std::atomic<bool> queued{false};
    static constexpr uint8_t kArmNone = 0, kArmNext = 1, kArmSolicited = 2;
    /** Embedded mode: the array instead of a ring, room for exactly depth entries
     * (1..2^20). False when out of memory. */
    bool init_local(uint32_t depth);
    bool local() const { return slots != nullptr; }
    /** Adds wc; false when the CQ is full (the caller's QP handles the overrun). QPs
     * complete through their QpCqPort, which calls this. */
    bool push(const Wc &wc);
    int poll(Wc *wc, int max);
    /** ibv_req_notify_cq: the next completion (or, solicited_only, the next solicited or
     * unsuccessful one) added from now on raises the channel's event. The application's
     * thread; no effect without a channel. */
    void arm(bool solicited_only);
    ~CqCtx();

  private:
    void notify(const Wc &wc);
};

} // namespace droce::engine
