/* SPDX-License-Identifier: BSD-3-Clause */
#pragma once
/** Where --threads' posting threads run.
 *
 * rte_eal_init pins the thread that calls it to the main lcore's CPU, and every thread
 * started afterwards inherits that: left alone, all posting threads would share one CPU
 * and a run with more threads would measure that CPU, not the engine. A storage data plane
 * gives each poller a core of its own; so does this: thread t runs alone on the t-th CPU
 * of those the process was allowed before rte_eal_init that no worker lcore occupies (the
 * main lcore's CPU first: the main thread only waits while the threads run). With fewer
 * such CPUs than threads, the threads share the free ones (each may run on any of them);
 * with none, the process's whole set, workers' CPUs included. */
#include <sched.h>

#include <cstdint>
#include <string>
#include <vector>

namespace droce::perf {

class ThreadCpus {
  public:
    /** The CPUs the process may use: read this before rte_eal_init. */
    static ThreadCpus at_start();
    /** Places `threads` threads, after rte_eal_init (the worker lcores' CPUs are known). */
    void plan(uint32_t threads);
    /** Pins the calling thread to thread t's CPU or CPUs (as planned). */
    void apply(uint32_t t) const;
    /** E.g. "on CPUs 0,5,6 (one each)" or "sharing CPUs 0,5 (fewer CPUs free of worker
     * lcores than threads)": for the run's banner. Empty before plan. */
    const std::string &describe() const { return text_; }

    /** The placement rule, without the EAL (unit-testable): `allowed` the CPUs at start,
     * `workers` those of the worker lcores; one entry per thread, each the CPUs it may run
     * on. */
    static std::vector<std::vector<int>> place(const std::vector<int> &allowed,
                                               const std::vector<int> &workers, uint32_t threads);

  private:
    std::vector<int> allowed_;
    std::vector<std::vector<int>> per_thread_;
    std::string text_;
};

} // namespace droce::perf
