/* SPDX-License-Identifier: BSD-3-Clause */
/* The CM's counters on the telemetry socket (/droce/cm,<dev>).
 *
 * The CM (lib/cm behind droce::CmDevice) runs on the application's control thread and
 * keeps plain counters there; telemetry callbacks run on DPDK's telemetry thread. The
 * CM thread copies its counters into a CmStatsBoard every few milliseconds (in
 * CmDevice::poll); the board is a seqlock: the writer never waits or locks, a reader
 * retries until it copied a snapshot no publish overlapped. A process that stops polling
 * its CM still answers, with the snapshot's age (age_ms) saying how stale it is. */
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace droce::engine {

class Runtime;

class CmStatsBoard {
  public:
    /** names: one per counter, in the order publish() gets values; the pointers must
     * outlive the board (string literals / static tables). */
    explicit CmStatsBoard(std::vector<const char *> names);
    CmStatsBoard(const CmStatsBoard &) = delete;
    CmStatsBoard &operator=(const CmStatsBoard &) = delete;

    /** The CM thread only: v holds size() values. No lock, no allocation. */
    void publish(const uint64_t *v, uint64_t now_ns);
    /** Any thread: a consistent copy of the last publish (out resized to size()) and its
     * time. False when nothing was published yet, or when publishes kept overlapping
     * the copy (a writer stopped halfway: never, short of a killed thread). */
    bool read(std::vector<uint64_t> &out, uint64_t &at_ns, uint64_t &publishes) const;

    size_t size() const { return names_.size(); }
    const char *name(size_t i) const { return names_[i]; }

  private:
    const std::vector<const char *> names_;
    std::unique_ptr<std::atomic<uint64_t>[]> vals_;
    std::atomic<uint64_t> at_ns_{0};
    /* Odd while a publish is under way; publishes = seq / 2. */
    std::atomic<uint64_t> seq_{0};
};

/** Makes board the answer of /droce/cm,<dev> (registering the command on first use);
 * rt's clock is the one publish() times are on. */
void cm_stats_attach(const Runtime &rt, const std::string &dev, CmStatsBoard *board);
/** Before board goes away: after this returns, no telemetry callback reads it. */
void cm_stats_detach(CmStatsBoard *board);

} // namespace droce::engine
