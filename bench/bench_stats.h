/* SPDX-License-Identifier: BSD-3-Clause */
/* min / median / max of a benchmark's rounds, as every figure in bench/README.md is given. */
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace droce::bench {

struct Stats {
    double min = 0, med = 0, max = 0;
};

/* Median of an even count: the mean of the two middle values. Empty: all zero. */
inline Stats stats(std::vector<double> v) {
    Stats s;
    if (v.empty())
        return s;
    std::sort(v.begin(), v.end());
    s.min = v.front();
    s.max = v.back();
    const size_t n = v.size();
    s.med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return s;
}

} // namespace droce::bench
