/* SPDX-License-Identifier: BSD-3-Clause */
#include "cm_counters.h"

namespace droce::cm {

const char *cm_ctr_name(CmCtr c) {
    static constexpr const char *kNames[] = {
#define X(n) #n,
        DROCE_CM_COUNTERS(X)
#undef X
    };
    static_assert(sizeof kNames / sizeof kNames[0] == kCmCtrCount);
    const auto i = static_cast<size_t>(c);
    return i < kCmCtrCount ? kNames[i] : "?";
}

} // namespace droce::cm
