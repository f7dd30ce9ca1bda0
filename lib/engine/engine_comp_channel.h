/* SPDX-License-Identifier: BSD-3-Clause */
/* A completion channel (ibv_comp_channel): CQs attached to it raise an event when a
 * completion arrives while they are armed (CqCtx::arm). The worker that produced the
 * completion queues the CQ's token in a multi-producer ring and counts it on an eventfd in
 * semaphore mode, so the descriptor the application polls is readable exactly while a
 * token waits, and one read takes one token. A CQ is queued at most once until next()
 * hands it out (CqCtx::queued), so the ring never holds more tokens than CQs attached
 * plus CQs detached with an event still queued (next() skips those: their token's
 * generation is gone). Producers take no lock; next() and attach/detach share a mutex
 * (the application's side). */
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct rte_ring;

namespace droce::engine {

struct CqCtx;

class CompChannel {
  public:
    /** CQs one channel serves (the ring's size). */
    static constexpr uint32_t kMaxCqs = 16384;

    /** nullptr with *why set when the eventfd or the ring cannot be made. */
    static std::unique_ptr<CompChannel> create(std::string *why);
    ~CompChannel();
    CompChannel(const CompChannel &) = delete;
    CompChannel &operator=(const CompChannel &) = delete;

    /** The descriptor to poll; its O_NONBLOCK (the application's fcntl) decides whether
     * next() waits. */
    int fd() const { return fd_; }
    /** Gives cq its token (control path); false when kMaxCqs are attached or pending. */
    bool attach(CqCtx &cq);
    /** Takes cq off the channel: an event it has queued is dropped. After this returns
     * no worker signals for cq (the caller runs it on cq's worker). */
    void detach(CqCtx &cq);
    /** CQs attached (ibv_destroy_comp_channel refuses while any are). */
    uint32_t attached() const;
    /** A worker: cq's event (its token) to the application. Any thread, no lock. */
    void signal(uint64_t token);
    /** The next CQ whose event fired, waiting for one unless the descriptor is
     * non-blocking. 0, or the errno of the read (EAGAIN: none waiting). */
    int next(CqCtx **out);

  private:
    CompChannel() = default;
    int fd_ = -1;
    rte_ring *ring_ = nullptr;
    mutable std::mutex mu_;
    std::vector<CqCtx *> slots_; /* by slot: the attached CQ, or nullptr */
    std::vector<uint32_t> gens_; /* by slot: bumped at detach, so old tokens miss */
    std::vector<uint32_t> free_; /* slots to reuse */
    uint32_t live_ = 0;
    uint32_t stale_ = 0; /* tokens in the ring of CQs already detached */
};

} // namespace droce::engine
