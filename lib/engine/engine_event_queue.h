/* SPDX-License-Identifier: BSD-3-Clause */
/* A device's asynchronous events (ibv_get_async_event) on their way to the application:
 * a multi-producer ring (workers, the link watch) and an eventfd in semaphore mode that
 * counts what was queued, so that the application can poll a descriptor (ibv_context's
 * async_fd) and wait. Events are rare: the eventfd's write is no cost on the data path. */
#pragma once

#include <cstdint>

#include <droce/verbs.h>

struct rte_ring;

namespace droce::engine {

struct EngineEvent {
    AsyncEventType type;
    uint32_t qp_num;
    void *cq_user;
};

class EventQueue {
  public:
    static constexpr uint32_t kCapacity = 4096;
    /** Throws std::bad_alloc when the ring or the eventfd cannot be made. */
    EventQueue();
    ~EventQueue();
    EventQueue(const EventQueue &) = delete;
    EventQueue &operator=(const EventQueue &) = delete;

    /** Any thread; false when full (the caller counts the drop). */
    bool push(const EngineEvent &e);
    /** The oldest event without waiting (any thread). */
    bool pop(EngineEvent *e);
    /** The oldest event, waiting for one unless fd() is non-blocking: 0 or the read's
     * errno (EAGAIN: none). */
    int wait(EngineEvent *e);
    /** Readable while events wait. */
    int fd() const { return fd_; }

  private:
    rte_ring *ring_ = nullptr;
    int fd_ = -1;
};

} // namespace droce::engine
