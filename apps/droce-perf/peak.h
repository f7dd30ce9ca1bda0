/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The bw tests' peak: the best rate over windows of consecutive completions, from one
 * timestamp per completion read (a signaled WR's CQE retires its whole -Q batch, and
 * perftest too takes one clock read per CQE), not one per WR. */
#pragma once

#include <cstdint>
#include <vector>

namespace droce::perf {

/** A completion read: when (ns, any origin) and how many WRs it retired. */
struct CompletionStamp {
    double t;
    uint64_t wrs;
};

/** The best rate, in WRs per second, over the windows [i - window, i) of the WRs the
 * stamps retire (in time order, together `wrs` WRs), i = window, 2 window, ... < wrs;
 * WR i's time is its stamp's. 0 when no window has a positive duration. */
double best_window_rate(const std::vector<CompletionStamp> &stamps, uint64_t wrs, uint64_t window);

} // namespace droce::perf
