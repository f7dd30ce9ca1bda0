/* SPDX-License-Identifier: BSD-3-Clause */
/* What a shard counts of PFC (engine_pfc_rx.cpp, engine_pfc_tx.cpp). */
#pragma once

#include <cstddef>
#include <cstdint>

#include "net_pfc.h"

namespace droce::engine {

/* PFC state counters of a shard (Shard::counters names them as mlx5's ethtool -S). The
 * per-priority pause state (duration, transitions, storms) is counted by shard 0 only:
 * every shard holds the same pause (the frame is forwarded to all), so a sum over shards
 * would multiply it. */
struct PfcCounters {
    uint64_t rx_pause[net::kPfcPriorities] = {};      /* rx_prioN_pause: frames with bit N */
    uint64_t rx_pause_ns[net::kPfcPriorities] = {};   /* rx_prioN_pause_duration (us) */
    uint64_t rx_transition[net::kPfcPriorities] = {}; /* rx_prioN_pause_transition */
    uint64_t tx_pause[net::kPfcPriorities] = {};      /* droce sends no pause (yet) */
    uint64_t tx_pause_ns[net::kPfcPriorities] = {};
    uint64_t rx_result[static_cast<size_t>(net::PfcResult::Count_)] = {};
    uint64_t tx_held = 0;    /* frames refused because their priority was paused */
    uint64_t qps_parked = 0; /* QPs parked until their priority resumed */
    uint64_t storms = 0;     /* pauses longer than the watchdog */
    uint64_t tx_nombuf = 0;  /* a pause droce meant to send found no mbuf or TX slot */
    uint64_t other_prio = 0; /* pauses of a priority that is not the lossless one */
};

} // namespace droce::engine
