/* SPDX-License-Identifier: BSD-3-Clause */
/* CmStatsBoard and /droce/cm (engine_cm_stats.h). */
#include "engine_cm_stats.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>

#include <rte_telemetry.h>

#include "engine.h"

namespace droce::engine {

CmStatsBoard::CmStatsBoard(std::vector<const char *> names)
    : names_(std::move(names)), vals_(new std::atomic<uint64_t>[names_.size()]) {
    for (size_t i = 0; i < names_.size(); ++i)
        vals_[i].store(0, std::memory_order_relaxed);
}

void CmStatsBoard::publish(const uint64_t *v, uint64_t now_ns) {
    /* A seqlock's writer: odd sequence, the values, even sequence. The values are
     * relaxed atomics so that a reader racing a publish is no data race, only a copy it
     * throws away. */
    const uint64_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (size_t i = 0; i < names_.size(); ++i)
        vals_[i].store(v[i], std::memory_order_relaxed);
    at_ns_.store(now_ns, std::memory_order_relaxed);
    seq_.store(s + 2, std::memory_order_release);
}

bool CmStatsBoard::read(std::vector<uint64_t> &out, uint64_t &at_ns, uint64_t &publishes) const {
    out.resize(names_.size());
    /* A publish is ~100 stores: a reader that meets one retries, yielding to let it end. */
    for (int tries = 0; tries < 10000; ++tries) {
        const uint64_t s1 = seq_.load(std::memory_order_acquire);
        if (s1 == 0)
            return false;
        if (s1 & 1) {
            std::this_thread::yield();
            continue;
        }
        for (size_t i = 0; i < names_.size(); ++i)
            out[i] = vals_[i].load(std::memory_order_relaxed);
        at_ns = at_ns_.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (seq_.load(std::memory_order_relaxed) == s1) {
            publishes = s1 / 2;
            return true;
        }
    }
    return false;
}

namespace {

struct Entry {
    const Runtime *rt;
    std::string dev;
    CmStatsBoard *board;
};
/* Under telemetry_mutex(), as the engine's own registry: a callback in progress holds
 * it, so detach waits for the callback to be done with the board. */
std::vector<Entry> g_boards;
bool g_cm_registered = false;

int cmd_cm(const char *, const char *params, rte_tel_data *d) {
    std::lock_guard<std::mutex> lk(telemetry_mutex());
    const std::string dev = params ? params : "";
    auto it = std::find_if(g_boards.begin(), g_boards.end(),
                           [&](const Entry &e) { return e.dev == dev; });
    rte_tel_data_start_dict(d);
    if (it == g_boards.end()) {
        const std::string msg = "no CM open on droce device '" + dev + "'";
        rte_tel_data_add_dict_string(d, "error", msg.c_str());
        return 0;
    }
    std::vector<uint64_t> v;
    uint64_t at = 0, publishes = 0;
    if (!it->board->read(v, at, publishes)) {
        rte_tel_data_add_dict_string(d, "error",
                                     "the CM has not published its counters yet (its "
                                     "control thread has not called CmDevice::poll())");
        return 0;
    }
    const uint64_t now = it->rt->now_ns();
    rte_tel_data_add_dict_u64(d, "age_ms", now > at ? (now - at) / 1'000'000 : 0);
    rte_tel_data_add_dict_u64(d, "publishes", publishes);
    for (size_t i = 0; i < v.size(); ++i)
        rte_tel_data_add_dict_u64(d, it->board->name(i), v[i]);
    return 0;
}

} // namespace

void cm_stats_attach(const Runtime &rt, const std::string &dev, CmStatsBoard *board) {
    std::lock_guard<std::mutex> lk(telemetry_mutex());
    if (!g_cm_registered) {
        rte_telemetry_register_cmd("/droce/cm", cmd_cm,
                                   "RDMA-CM counters (snapshot of the CM's control thread, "
                                   "age_ms old). Parameters: device");
        g_cm_registered = true;
    }
    g_boards.push_back(Entry{&rt, dev, board});
}

void cm_stats_detach(CmStatsBoard *board) {
    std::lock_guard<std::mutex> lk(telemetry_mutex());
    g_boards.erase(std::remove_if(g_boards.begin(), g_boards.end(),
                                  [board](const Entry &e) { return e.board == board; }),
                   g_boards.end());
}

} // namespace droce::engine
