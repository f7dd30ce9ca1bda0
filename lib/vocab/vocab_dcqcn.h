/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * DCQCN parameters and profiles as the protocol core (lib/cc) takes them: the core's own
 * vocabulary, included by the public droce/dcqcn.h and installed with it. */
#pragma once

#include <cstdint>

namespace droce {

/** The IP ECN field of RoCE data a port sends (ConnectX with DCQCN: ECT(0)). */
enum class EcnMode : uint8_t { Off = 0, Ect0 = 1, Ect1 = 2 };

/** Every DCQCN parameter. Bad values are refused by open_device / set_dcqcn with a
 * message naming the field and its range. */
struct DcqcnParams {
    /** Reaction point: react to CNPs (off: the QP sends at line rate, CNPs are counted in
     * rp_cnp_ignored). */
    bool rp_enabled = true;
    /** Notification point: send CNPs for CE-marked packets (off: marks only counted). */
    bool np_enabled = true;
    /** (1 − g) in 1/1024 of the alpha update (0..1023; 1019: g ≈ 1/205). */
    uint32_t dce_tcp_g = 1019;
    /** Alpha update period (> 0): once per period alpha rises if a CNP arrived in it,
     * else decays. Default the paper's 55 µs (ConnectX documents 1 µs; see cc_params.h). */
    uint64_t dce_tcp_rtt_ns = 55'000;
    /** Alpha on a flow's first CNP, in 1/1024 (0..1024). */
    uint32_t initial_alpha_value = 1023;
    /** A cut is Rc·(1 − alpha·1024/2^rpg_gd); 11 = the paper's alpha/2 (1..15). */
    uint32_t rpg_gd = 11;
    /** A cut never leaves less than this percentage of the rate (1..100). */
    uint32_t rpg_min_dec_fac = 50;
    /** At most one rate cut per QP in this period; 0 = one per CNP (ConnectX: 4 µs). */
    uint64_t rate_reduce_monitor_period_ns = 4'000;
    /** Increase stage period of the timer (> 0). */
    uint64_t rpg_time_reset_ns = 300'000;
    /** Increase stage every this many bytes sent (> 0). */
    uint32_t rpg_byte_reset = 32767;
    /** Fast-recovery stages F (1..31). */
    uint32_t rpg_threshold = 5;
    /** Additive increase step (> 0). */
    uint64_t rpg_ai_rate_bps = 5'000'000;
    /** Hyper increase step (> 0). */
    uint64_t rpg_hai_rate_bps = 50'000'000;
    /** Lowest rate a cut reaches (> 0, at most the line rate). */
    uint64_t rpg_min_rate_bps = 1'000'000;
    /** Highest rate; 0 = the port's line rate. */
    uint64_t rpg_max_rate_bps = 0;
    /** On a CNP the target takes the current rate always (the paper) ... */
    bool clamp_tgt_rate = false;
    /** ... or only when a timer stage raised the rate since the last CNP (ConnectX). */
    bool clamp_tgt_rate_after_time_inc = true;
    /** Rate set on a flow's first CNP (then cut); 0 = its current rate. */
    uint64_t rate_to_set_on_first_cnp_bps = 0;
    /** At most one CNP per QP in this interval (0 = one per CE mark). */
    uint64_t min_time_between_cnps_ns = 4'000;
    /** DSCP of CNPs (0..63). */
    uint8_t cnp_dscp = 48;
    /** 802.1p priority of CNPs on a VLAN-tagged path (0..7). */
    uint8_t cnp_802p_prio = 6;
    /** ECN field of the data (and CNPs) the port sends. */
    EcnMode ecn_mode = EcnMode::Ect0;
};

/** Named DCQCN parameter sets for a device ([dcqcn] profile in droce.conf, --dcqcn-profile
 * in the tools): DeviceConfig::dcqcn_params = dcqcn_profile_params(profile). */
enum class DcqcnProfile : uint8_t {
    /** NVIDIA ConnectX's defaults (DcqcnParams{} as declared above): droce's default. */
    ConnectX = 0,
    /** Converges to the fair share far faster than ConnectX's defaults (simulator,
     * bench/README.md "A profile that converges"): 2:1 and 8:1 incast reach the link's
     * share (capacity / N) within 10% on 1 ms means within 7-11 ms on 20 seeds of 20, Jain
     * >= 0.99, the queue below Kmax from then on, no drop. Increases are timer-only and
     * additive in small, fine-grained steps (a stage every 2 µs, +0.3 Mb/s, no byte-counter
     * stages, one fast-recovery stage), every CNP lowers the target (clamp_tgt_rate), alpha
     * is updated every 1 µs (ConnectX's documented period) with a faster gain (g = 34/1024)
     * and a cut takes alpha/4 (rpg_gd 12): cuts are small and frequent, so a flow with more
     * CNPs (a faster one) loses more, the pull toward the share ConnectX's defaults lack, and
     * the flows do not fall far below the share after the start's overshoot. It asks more
     * of the switch: to hold the queue below Kmax at 8:1 the RED marking probability must
     * reach 100% at Kmax (Kmin 5 KB, Kmax 200 KB), not the paper's 1%. rpg_ai_rate below
     * 1 Mb/s is not expressible in ConnectX's units (Mb/s). */
    Fair = 1,
};

/** The parameters of a profile (ecn_mode, CNP priorities and the switches as default). */
inline DcqcnParams dcqcn_profile_params(DcqcnProfile profile) {
    DcqcnParams p;
    if (profile == DcqcnProfile::Fair) {
        p.dce_tcp_rtt_ns = 1'000;
        p.rpg_byte_reset = 10'000'000;
        p.clamp_tgt_rate = true;
        p.rpg_threshold = 1;
        p.rpg_time_reset_ns = 2'000;
        p.rpg_ai_rate_bps = 300'000;
        p.dce_tcp_g = 990;
        p.rpg_gd = 12;
    }
    return p;
}

/** "connectx" or "fair" (the names of the config key and the flag). */
inline const char *to_string(DcqcnProfile profile) {
    return profile == DcqcnProfile::Fair ? "fair" : "connectx";
}

} // namespace droce
