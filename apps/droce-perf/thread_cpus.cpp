/* SPDX-License-Identifier: BSD-3-Clause */
#include "thread_cpus.h"

#include <pthread.h>
#include <rte_lcore.h>

#include <algorithm>

namespace droce::perf {
namespace {

std::vector<int> cpus_of(const cpu_set_t &set) {
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set))
            cpus.push_back(c);
    return cpus;
}

/* "0,5,6" */
std::string list(const std::vector<int> &cpus) {
    std::string s;
    for (int c : cpus) {
        if (!s.empty())
            s += ',';
        s += std::to_string(c);
    }
    return s;
}

} // namespace

ThreadCpus ThreadCpus::at_start() {
    ThreadCpus t;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0)
        t.allowed_ = cpus_of(set);
    return t;
}

std::vector<std::vector<int>> ThreadCpus::place(const std::vector<int> &allowed,
                                                const std::vector<int> &workers, uint32_t threads) {
    std::vector<int> free;
    for (int c : allowed)
        if (std::find(workers.begin(), workers.end(), c) == workers.end())
            free.push_back(c);
    std::vector<std::vector<int>> out(threads);
    for (uint32_t t = 0; t < threads; ++t) {
        if (free.size() >= threads)
            out[t] = {free[t]};
        else
            out[t] = free.empty() ? allowed : free;
    }
    return out;
}

void ThreadCpus::plan(uint32_t threads) {
    std::vector<int> workers;
    unsigned lcore;
    RTE_LCORE_FOREACH_WORKER(lcore) {
        for (int c : cpus_of(rte_lcore_cpuset(lcore)))
            workers.push_back(c);
    }
    per_thread_ = place(allowed_, workers, threads);
    if (per_thread_.empty() || per_thread_[0].empty()) {
        text_ = "where the system puts them (no CPU set known)";
        return;
    }
    const bool shared = per_thread_.size() > 1 && per_thread_[0] == per_thread_[1];
    if (shared) {
        text_ = "sharing CPUs " + list(per_thread_[0]) +
                " (fewer CPUs free of worker lcores than threads)";
        return;
    }
    std::vector<int> one;
    for (const auto &p : per_thread_)
        one.push_back(p[0]);
    text_ = "on CPUs " + list(one) + " (one each)";
}

void ThreadCpus::apply(uint32_t t) const {
    if (t >= per_thread_.size() || per_thread_[t].empty())
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : per_thread_[t])
        CPU_SET(c, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

} // namespace droce::perf
