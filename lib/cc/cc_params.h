/* SPDX-License-Identifier: BSD-3-Clause */
/* DCQCN parameters (Zhu et al., SIGCOMM 2015) with NVIDIA ConnectX names and defaults.
 *
 * One struct serves a device (defaults for its QPs) and a QP (an override copy): the RP and
 * NP keep their own copy, so a per-QP change never touches other QPs. Units are spelt in
 * the field names: times in ns, rates in bit/s (ConnectX exposes µs and Mb/s), sizes in
 * bytes. Call validate() before handing a struct to Rp/Np: they assume valid values. */
#pragma once

#include <cstdint>

#include "vocab_dcqcn.h"

namespace droce::cc {

/** How RoCE data leaves the port (IP ECN field). ConnectX with DCQCN: ECT(0). */
enum class EcnMode : uint8_t { off = 0, ect0 = 1, ect1 = 2 };

/** The two ECN bits of the IP header for a mode: Not-ECT 00, ECT(0) 10, ECT(1) 01. */
constexpr uint8_t ecn_bits(EcnMode m) {
    return m == EcnMode::ect0 ? 0x2 : m == EcnMode::ect1 ? 0x1 : 0x0;
}

struct CcParams {
    /* --- switches --- */
    bool rp_enabled = true; /* off: the QP sends at line rate, CNPs counted as ignored */
    bool np_enabled = true; /* off: CE marks counted, no CNP sent */

    /* --- reaction point: alpha (congestion estimate) --- */
    /* (1 - g) in 1/1024: alpha = (dce_tcp_g/1024)·alpha [+ (1 - dce_tcp_g/1024) on a CNP].
     * 1019 gives g = 5/1024 ≈ 1/205 (paper: 1/256). 0..1023. */
    uint32_t dce_tcp_g = 1019;
    /* Alpha update period: once per period, alpha = (1 − g)·alpha + g if a CNP arrived in
     * it, else (1 − g)·alpha (ConnectX's DcQcnDceAlphaUpdatePeriod). Default the paper's K,
     * 55 µs. ConnectX documents 1 µs: with its 32 KB byte counter that leaves alpha near
     * g·(CNP interval in µs)^-1 and cuts of 1-2% (bench/README.md, "alpha period"), so the
     * RC window, not DCQCN, bounds an incast. > 0. */
    uint64_t dce_tcp_rtt_ns = 55'000;
    /* Alpha set on the first CNP of a flow (out of 1024). 0..1024. */
    uint32_t initial_alpha_value = 1023;
    /* One cut is Rc·(1 − alpha·1024 / 2^rpg_gd): 11 gives the paper's Rc·(1 − alpha/2).
     * 1..15 (below 11 a full-alpha cut exceeds 50% and rpg_min_dec_fac is what bounds it). */
    uint32_t rpg_gd = 11;
    /* One cut never leaves less than this percentage of the current rate. 1..100. */
    uint32_t rpg_min_dec_fac = 50;
    /* At most one cut per this period (ConnectX rate_reduce_monitor_period, 4 µs): CNPs
     * inside it are folded into one cut at its end. 0 = every CNP cuts (the paper). */
    uint64_t rate_reduce_monitor_period_ns = 4'000;

    /* --- reaction point: increase --- */
    uint64_t rpg_time_reset_ns = 300'000; /* timer stage period T (paper 55 µs). > 0 */
    uint32_t rpg_byte_reset = 32767;      /* byte-counter stage every B bytes (paper 10 MB). > 0 */
    uint32_t rpg_threshold = 5;           /* F: fast-recovery stages. 1..31 */
    uint64_t rpg_ai_rate_bps = 5'000'000; /* additive increase step. > 0 */
    uint64_t rpg_hai_rate_bps = 50'000'000; /* hyper increase step (times i). > 0 */
    uint64_t rpg_min_rate_bps = 1'000'000;  /* floor of any cut. > 0 */
    uint64_t rpg_max_rate_bps = 0;          /* cap; 0 = the port's line rate */
    /* On a CNP, Rt = Rc always (the paper's rule) ... */
    bool clamp_tgt_rate = false;
    /* ... or only if the timer raised the rate since the last CNP (ConnectX default): a flow
     * cut again before any timer stage keeps its older, higher target and recovers to it. */
    bool clamp_tgt_rate_after_time_inc = true;
    /* Rate a flow starts from on its first CNP (then cut as any CNP). 0 = current (line). */
    uint64_t rate_to_set_on_first_cnp_bps = 0;

    /* --- notification point --- */
    uint64_t min_time_between_cnps_ns = 4'000; /* per QP (paper 50 µs). 0 = a CNP per CE */
    uint8_t cnp_dscp = 48;                     /* 0..63 */
    uint8_t cnp_802p_prio = 6;                 /* 0..7 */
    EcnMode ecn_mode = EcnMode::ect0;          /* marking of RoCE data sent */
};

/** nullptr when every field is possible; otherwise a message naming the field and its
 * allowed range (static storage). line_rate_bps (0 = unknown) also checks the rates
 * against the port. */
const char *validate(const CcParams &p, uint64_t line_rate_bps = 0);

/** The public DcqcnParams (droce/dcqcn.h) as lib/cc's: the same fields, kept apart so that
 * the public header does not depend on the library's internals. Used by the engine and by
 * the simulator, which does not link the engine. */
CcParams params_from(const DcqcnParams &d);

} // namespace droce::cc
