/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * DCQCN congestion control (Zhu et al., SIGCOMM 2015) as droce runs it: ECN-capable data,
 * CNPs for CE-marked packets (notification point), and a per-QP rate machine with a pacer
 * (reaction point). Names and defaults are NVIDIA ConnectX's; units are in the field
 * names (ConnectX's own are µs and Mb/s). DeviceConfig::dcqcn sets a device's defaults;
 * QueuePair::set_dcqcn changes one QP. */
#pragma once

#include <cstdint>

#include "vocab_dcqcn.h"

namespace droce {

/** One QP's DCQCN state (QueuePair::query_dcqcn; droce-info -q shows the same). */
struct DcqcnState {
    /** The QP runs DCQCN (device default or set_dcqcn; false after disable_dcqcn). */
    bool enabled = false;
    bool rp_enabled = false;
    bool np_enabled = false;
    /** A CNP limits the QP (its pacer holds it at rate_bps); false = line rate. */
    bool limited = false;
    /** Current rate Rc, bit/s (the maximum when not limited). */
    uint64_t rate_bps = 0;
    /** Target rate Rt, bit/s. */
    uint64_t target_bps = 0;
    /** Congestion estimate alpha, 0..1. */
    double alpha = 0;
    /** "line_rate", "fast_recovery", "additive" or "hyper". */
    const char *stage = "line_rate";
    /** The maximum: the port's line rate or rpg_max_rate_bps. */
    uint64_t max_rate_bps = 0;
    /** Rate the QP's pacer holds it to; 0 = unpaced (line rate). */
    uint64_t pacer_rate_bps = 0;
};

} // namespace droce
