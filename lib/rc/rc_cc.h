/* SPDX-License-Identifier: BSD-3-Clause */
/* DCQCN inside an RC QP: the per-QP notification point, reaction point and pacer of
 * lib/cc, and what the QP shows of them. The glue (ECN marking of data, CNPs out and in,
 * pacing of data packets, counters) is in rc_cc.cpp as Qp members. Sans-I/O like the
 * rest of lib/rc. */
#pragma once

#include <cstdint>

#include "cc_np.h"
#include "cc_pacer.h"
#include "cc_params.h"
#include "cc_rp.h"

namespace droce::rc {

/** Line rate assumed when the owner does not know the port's (QpConfig::line_rate_bps 0):
 * the RP needs a maximum, and a too-high guess only means the first cut starts high. */
inline constexpr uint64_t kDefaultLineRateBps = 100'000'000'000;

/** Bytes a frame occupies on an Ethernet link beyond its bytes from MAC header to ICRC:
 * FCS 4 + preamble/SFD 8 + inter-frame gap 12. The pacer counts them, so a QP paced at
 * the line rate fills the link exactly (the simulator's links count the same). */
inline constexpr uint32_t kEthWireOverhead = 24;

/** Parameters of a QP that is only held to the line rate (QpConfig::tx_burst_frames)
 * with DCQCN off: no reaction, no notification, data not-ECT. */
inline const cc::CcParams kShapeOnlyCc = [] {
    cc::CcParams p;
    p.rp_enabled = false;
    p.np_enabled = false;
    p.ecn_mode = cc::EcnMode::off;
    return p;
}();

/** A QP's DCQCN state as the API, telemetry and droce-info show it. */
struct CcState {
    bool enabled = false;    /* the QP has DCQCN (QpConfig::cc or set_cc_params) */
    bool rp_enabled = false; /* reacts to CNPs */
    bool np_enabled = false; /* sends CNPs */
    bool limited = false;    /* the RP holds the QP below line rate */
    uint64_t rate_bps = 0;   /* current rate Rc (the maximum when not limited) */
    uint64_t target_bps = 0; /* target rate Rt */
    double alpha = 0;
    cc::RpStage stage = cc::RpStage::line_rate;
    uint64_t pacer_rate_bps = 0; /* 0 = unpaced */
    uint64_t max_rate_bps = 0;   /* line rate or rpg_max_rate */
};

/** The DCQCN pieces of one QP (allocated when the QP gets DCQCN, never per packet). */
struct QpCc {
    QpCc(const cc::CcParams &p, uint64_t line_rate)
        : params(p), line_rate_bps(line_rate), np(p), rp(p, line_rate), pacer(0, 0) {}

    cc::CcParams params;
    uint64_t line_rate_bps;
    cc::Np np;
    cc::Rp rp;
    cc::Pacer pacer;
    /* Rp counts already added to the device's Counters (rc_cc.cpp adds the deltas after
     * each Rp event, so the per-packet path never copies counters). */
    uint64_t seen_handled = 0, seen_ignored = 0, seen_cuts = 0, seen_increases = 0;
};

} // namespace droce::rc
