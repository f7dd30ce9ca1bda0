/* SPDX-License-Identifier: BSD-3-Clause */
/* Stopping and closing a port while the EAL's interrupt thread is held, where the PMD
 * needs that. */
#include <rte_alarm.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "drivers.h"

namespace droce::drivers {

namespace {

/* The interrupt thread, inside our alarm, waits here until the caller has stopped the
 * port: it cannot run a PMD callback meanwhile. */
struct Hold {
    std::atomic<int> state{0}; /* 0 alarm pending, 1 thread held, 2 released or abandoned */
};

void hold_thread(void *arg) {
    auto *h = static_cast<Hold *>(arg);
    int expected = 0;
    if (!h->state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel))
        return; /* the caller gave up waiting and stopped the port without us */
    /* Sleeping, not spinning: the thread usually shares its CPU with a busy poller (a
     * peer process, or this one's own worker). Bounded, should the caller never return. */
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (h->state.load(std::memory_order_acquire) != 2 &&
           std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
}

void run(uint16_t port, bool close, PortStopResult &r) {
    r.stop_rc = rte_eth_dev_stop(port);
    if (close)
        r.close_rc = rte_eth_dev_close(port);
}

} // namespace

PortStopResult stop_port(uint16_t port, bool close, bool hold_intr_thread) {
    PortStopResult r;
    if (!hold_intr_thread || rte_thread_is_intr()) {
        r.intr_thread_held = rte_thread_is_intr() != 0;
        run(port, close, r);
        return r;
    }
    /* The stop runs here, on the caller's thread and CPU, while the interrupt thread sits
     * in an alarm of ours: an alarm is the EAL's one way into that thread, and it runs
     * between the PMD's callbacks, never beside one. (Running the stop itself in the
     * alarm serialized it too, but moved the disconnect's work onto the interrupt thread's
     * CPU, where a peer process may be polling the same memif rings: that peer then got
     * preempted just as its own disconnect unmapped them, see drivers/README.md.) */
    Hold h;
    bool held = false;
    if (rte_eal_alarm_set(1, hold_thread, &h) == 0) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (h.state.load(std::memory_order_acquire) == 0 &&
               std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        /* Not taken in 5 s: abandoned (the callback, should it still run, returns at
         * once) and the port stopped unserialized, as before this existed, not hung. */
        int expected = 0;
        held = !h.state.compare_exchange_strong(expected, 2, std::memory_order_acq_rel);
    }
    r.intr_thread_held = held;
    run(port, close, r);
    h.state.store(2, std::memory_order_release);
    /* h lives on this stack: cancel waits for a running callback to return and takes
     * back one that has not started. */
    rte_eal_alarm_cancel(hold_thread, &h);
    return r;
}

} // namespace droce::drivers
