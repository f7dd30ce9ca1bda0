/* SPDX-License-Identifier: BSD-3-Clause */
/* Stopping and closing a port, on the EAL's interrupt thread where the PMD needs it. */
#include <rte_alarm.h>
#include <rte_ethdev.h>
#include <rte_interrupts.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "drivers.h"

namespace droce::drivers {

namespace {

struct StopJob {
    uint16_t port;
    bool close;
    PortStopResult result;
    std::atomic<bool> done{false};
};

void run(StopJob &j) {
    j.result.stop_rc = rte_eth_dev_stop(j.port);
    if (j.close)
        j.result.close_rc = rte_eth_dev_close(j.port);
}

void run_alarm(void *arg) {
    auto *j = static_cast<StopJob *>(arg);
    run(*j);
    j->done.store(true, std::memory_order_release);
}

} // namespace

PortStopResult stop_port(uint16_t port, bool close, bool on_intr_thread) {
    StopJob j{port, close, {}};
    if (!on_intr_thread || rte_thread_is_intr()) {
        j.result.on_intr_thread = rte_thread_is_intr() != 0;
        run(j);
        return j.result;
    }
    /* An alarm is the EAL's one way to run code on its interrupt thread: the callback
     * runs between the PMD's own interrupt callbacks, never beside one. */
    if (rte_eal_alarm_set(1, run_alarm, &j) != 0) {
        j.result.on_intr_thread = false;
        run(j);
        return j.result;
    }
    /* Teardown time, not the data path: poll the flag, sleeping. The thread's other
     * callbacks are short (a control message, a link check); if it does not get to ours
     * within the bound, the alarm is taken back and the stop runs here after all. */
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!j.done.load(std::memory_order_acquire)) {
        if (std::chrono::steady_clock::now() > deadline) {
            /* Returns once a running callback has finished; > 0: it had not started. */
            if (rte_eal_alarm_cancel(run_alarm, &j) > 0) {
                j.result.on_intr_thread = false;
                run(j);
                return j.result;
            }
            break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    while (!j.done.load(std::memory_order_acquire))
        std::this_thread::yield();
    return j.result;
}

} // namespace droce::drivers
