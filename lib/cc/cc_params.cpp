/* SPDX-License-Identifier: BSD-3-Clause */
#include "cc_params.h"

namespace droce::cc {

const char *validate(const CcParams &p, uint64_t line_rate_bps) {
    if (p.dce_tcp_g > 1023)
        return "dce_tcp_g must be 0..1023 ((1 - g) in 1/1024)";
    if (p.dce_tcp_rtt_ns == 0)
        return "dce_tcp_rtt (alpha update period) must be > 0";
    if (p.initial_alpha_value > 1024)
        return "initial_alpha_value must be 0..1024";
    if (p.rpg_gd < 1 || p.rpg_gd > 15)
        return "rpg_gd must be 1..15";
    if (p.rpg_min_dec_fac < 1 || p.rpg_min_dec_fac > 100)
        return "rpg_min_dec_fac must be 1..100 (percent)";
    if (p.rpg_time_reset_ns == 0)
        return "rpg_time_reset must be > 0";
    if (p.rpg_byte_reset == 0)
        return "rpg_byte_reset must be > 0";
    if (p.rpg_threshold < 1 || p.rpg_threshold > 31)
        return "rpg_threshold must be 1..31";
    if (p.rpg_ai_rate_bps == 0)
        return "rpg_ai_rate must be > 0 (a cut flow could never recover)";
    if (p.rpg_hai_rate_bps == 0)
        return "rpg_hai_rate must be > 0";
    if (p.rpg_min_rate_bps == 0)
        return "rpg_min_rate must be > 0 (a flow at rate 0 never sends again)";
    if (p.rpg_max_rate_bps != 0 && p.rpg_max_rate_bps < p.rpg_min_rate_bps)
        return "rpg_max_rate must be 0 (line rate) or >= rpg_min_rate";
    if (p.rate_to_set_on_first_cnp_bps != 0 && p.rate_to_set_on_first_cnp_bps < p.rpg_min_rate_bps)
        return "rate_to_set_on_first_cnp must be 0 (current rate) or >= rpg_min_rate";
    if (p.cnp_dscp > 63)
        return "cnp_dscp must be 0..63";
    if (p.cnp_802p_prio > 7)
        return "cnp_802p_prio must be 0..7";
    if (p.ecn_mode != EcnMode::off && p.ecn_mode != EcnMode::ect0 && p.ecn_mode != EcnMode::ect1)
        return "ecn_mode must be off, ect0 or ect1";
    if (line_rate_bps != 0) {
        if (p.rpg_min_rate_bps > line_rate_bps)
            return "rpg_min_rate exceeds the port's line rate";
        if (p.rpg_max_rate_bps > line_rate_bps)
            return "rpg_max_rate exceeds the port's line rate";
    }
    return nullptr;
}

CcParams params_from(const DcqcnParams &d) {
    CcParams p;
    p.rp_enabled = d.rp_enabled;
    p.np_enabled = d.np_enabled;
    p.dce_tcp_g = d.dce_tcp_g;
    p.dce_tcp_rtt_ns = d.dce_tcp_rtt_ns;
    p.initial_alpha_value = d.initial_alpha_value;
    p.rpg_gd = d.rpg_gd;
    p.rpg_min_dec_fac = d.rpg_min_dec_fac;
    p.rate_reduce_monitor_period_ns = d.rate_reduce_monitor_period_ns;
    p.rpg_time_reset_ns = d.rpg_time_reset_ns;
    p.rpg_byte_reset = d.rpg_byte_reset;
    p.rpg_threshold = d.rpg_threshold;
    p.rpg_ai_rate_bps = d.rpg_ai_rate_bps;
    p.rpg_hai_rate_bps = d.rpg_hai_rate_bps;
    p.rpg_min_rate_bps = d.rpg_min_rate_bps;
    p.rpg_max_rate_bps = d.rpg_max_rate_bps;
    p.clamp_tgt_rate = d.clamp_tgt_rate;
    p.clamp_tgt_rate_after_time_inc = d.clamp_tgt_rate_after_time_inc;
    p.rate_to_set_on_first_cnp_bps = d.rate_to_set_on_first_cnp_bps;
    p.min_time_between_cnps_ns = d.min_time_between_cnps_ns;
    p.cnp_dscp = d.cnp_dscp;
    p.cnp_802p_prio = d.cnp_802p_prio;
    /* An out-of-range enum value stays out of range: validate() names it. */
    p.ecn_mode = static_cast<EcnMode>(static_cast<uint8_t>(d.ecn_mode));
    return p;
}

} // namespace droce::cc
