/* SPDX-License-Identifier: BSD-3-Clause */
/* Running a control-path step while the EAL's interrupt thread is held, so that no PMD
 * callback and no alarm (the engine's link watch, memif's control channel) runs beside it. */
#include <rte_alarm.h>
#include <rte_interrupts.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "drivers.h"
#include "poll_gate.h"

namespace droce::drivers {

namespace {

/* The interrupt thread, inside our alarm, waits here until the caller's step is done: it
 * cannot run anything else meanwhile. */
struct Hold {
    std::atomic<int> state{0}; /* 0 alarm pending, 1 thread held, 2 released or abandoned */
};

void hold_thread(void *arg) {
    auto *h = static_cast<Hold *>(arg);
    int expected = 0;
    if (!h->state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel))
        return; /* the caller gave up waiting and ran its step without us */
    /* Sleeping, not spinning: the thread usually shares its CPU with a busy poller (a
     * peer process, or this one's own worker). Bounded, should the caller never return. */
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (h->state.load(std::memory_order_acquire) != 2 &&
           std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
}

} // namespace

bool with_intr_thread_held(const std::function<void()> &step) {
    if (rte_thread_is_intr()) {
        step();
        return true;
    }
    /* The step runs here, on the caller's thread and CPU, while the interrupt thread sits
     * in an alarm of ours: an alarm is the EAL's one way into that thread, and it runs
     * between the PMD's callbacks, never beside one. (Running the step itself in the
     * alarm would serialize it too, but moves its work onto the interrupt thread's CPU;
     * for a memif stop that is where a peer process may be polling the same rings, see
     * drivers/README.md.) */
    /* A poller of a gated port waits here for the interrupt thread, which the poll gate
     * lets go only once every poller is between bursts: this one is, from now on. */
    PollOffline offline;
    Hold h;
    bool held = false;
    if (rte_eal_alarm_set(1, hold_thread, &h) == 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (h.state.load(std::memory_order_acquire) == 0 &&
               std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        /* Not taken in 5 s: abandoned (the callback, should it still run, returns at
         * once) and the step run unserialized, not hung. */
        int expected = 0;
        held = !h.state.compare_exchange_strong(expected, 2, std::memory_order_acq_rel);
    }
    step();
    h.state.store(2, std::memory_order_release);
    /* h lives on this stack: cancel waits for a running callback to return and takes
     * back one that has not started. */
    rte_eal_alarm_cancel(hold_thread, &h);
    return held;
}

} // namespace droce::drivers
