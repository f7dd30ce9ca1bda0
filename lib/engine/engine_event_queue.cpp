/* SPDX-License-Identifier: BSD-3-Clause */
/* Asynchronous events: see engine_event_queue.h. The descriptor's count and the ring
 * are two steps apart: push() counts after it queues, so a count always has its event,
 * but pop() (no wait) takes an event before its count. pop() then takes the count when
 * one is there to take; a count it finds not yet written is left behind, and wait()
 * reads past such a count (it finds no event and reads again). */
#include "engine_event_queue.h"

#include <cerrno>
#include <new>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "engine.h"

namespace droce::engine {

EventQueue::EventQueue() {
    ring_ = ring_alloc("dev_ev", sizeof(EngineEvent), kCapacity, RING_F_EXACT_SZ);
    fd_ = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
    if (ring_ == nullptr || fd_ < 0) {
        ring_release(ring_);
        if (fd_ >= 0)
            close(fd_);
        throw std::bad_alloc();
    }
}

EventQueue::~EventQueue() {
    ring_release(ring_);
    close(fd_);
}

bool EventQueue::push(const EngineEvent &e) {
    if (rte_ring_mp_enqueue_elem(ring_, const_cast<EngineEvent *>(&e), sizeof e) != 0)
        return false;
    const uint64_t one = 1;
    if (write(fd_, &one, sizeof one) != sizeof one) {
        /* Only a count at 2^64 - 2 refuses: the ring holds 4096. */
    }
    return true;
}

bool EventQueue::pop(EngineEvent *e) {
    if (rte_ring_mc_dequeue_elem(ring_, e, sizeof *e) != 0)
        return false;
    pollfd p{fd_, POLLIN, 0};
    uint64_t n;
    if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0 && read(fd_, &n, sizeof n) < 0) {
        /* Another reader took it first: the counts stay within one of the events. */
    }
    return true;
}

int EventQueue::wait(EngineEvent *e) {
    for (;;) {
        uint64_t n;
        if (read(fd_, &n, sizeof n) != static_cast<ssize_t>(sizeof n))
            return errno != 0 ? errno : EIO;
        if (rte_ring_mc_dequeue_elem(ring_, e, sizeof *e) == 0)
            return 0;
    }
}

} // namespace droce::engine
