/* SPDX-License-Identifier: BSD-3-Clause */
#include "peak.h"

#include <algorithm>

namespace droce::perf {

namespace {
/* The time of the i-th WR (from 0) of stamps in time order, asked for rising i: a walk,
 * not a table of one time per WR. */
class WrClock {
  public:
    explicit WrClock(const std::vector<CompletionStamp> &s) : s_(s), end_(s.front().wrs) {}
    double at(uint64_t i) {
        while (i >= end_ && k_ + 1 < s_.size())
            end_ += s_[++k_].wrs;
        return s_[k_].t;
    }

  private:
    const std::vector<CompletionStamp> &s_;
    size_t k_ = 0;
    uint64_t end_; /* WRs retired through s_[k_] */
};
} // namespace

double best_window_rate(const std::vector<CompletionStamp> &stamps, uint64_t wrs, uint64_t window) {
    if (stamps.empty() || window == 0)
        return 0;
    WrClock end(stamps), start(stamps);
    double best = 0;
    for (uint64_t i = window; i < wrs; i += window) {
        const double dt = (end.at(i) - start.at(i - window)) / 1e9;
        if (dt > 0)
            best = std::max(best, static_cast<double>(window) / dt);
    }
    return best;
}

} // namespace droce::perf
