/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-perf's clock: the TSC scaled to nanoseconds by one multiply and a shift, so the
 * measurement loop (a timestamp per posted WR and per completion, deadline checks per
 * iteration) never enters the kernel or the vDSO. A std::chrono clock, so durations and
 * time points read as before. init() after the EAL is up (it knows the TSC rate); before
 * it, now() falls back to steady_clock (nothing is timed then). */
#pragma once

#include <chrono>
#include <cstdint>

#include <rte_cycles.h>

namespace droce::perf {

struct TscClock {
    using rep = int64_t;
    using period = std::nano;
    using duration = std::chrono::nanoseconds;
    using time_point = std::chrono::time_point<TscClock>;
    static constexpr bool is_steady = true;

    static constexpr unsigned kShift = 48;
    /* 10^9 x 2^kShift / TSC Hz; the 128-bit product keeps ns resolution for years. */
    static inline uint64_t mult = 0;

    static void init() {
        const uint64_t hz = rte_get_tsc_hz();
        if (hz >= 1'000'000)
            mult = static_cast<uint64_t>(
                ((static_cast<u128>(1'000'000'000ull) << kShift) + hz / 2) / hz);
    }
    static time_point now() noexcept {
        if (mult == 0) [[unlikely]]
            return time_point(std::chrono::duration_cast<duration>(
                std::chrono::steady_clock::now().time_since_epoch()));
        return time_point(
            duration(static_cast<rep>((static_cast<u128>(rte_rdtsc()) * mult) >> kShift)));
    }

  private:
    __extension__ typedef unsigned __int128 u128;
};

} // namespace droce::perf
