/* SPDX-License-Identifier: BSD-3-Clause */
#include "cc_profile.h"

#include <initializer_list>

namespace droce::cc {

namespace {

/* The fields a profile sets; a new one added to CcParams and to a profile belongs here. */
bool same_rate_machine(const CcParams &a, const CcParams &b) {
    return a.dce_tcp_g == b.dce_tcp_g && a.dce_tcp_rtt_ns == b.dce_tcp_rtt_ns &&
           a.initial_alpha_value == b.initial_alpha_value && a.rpg_gd == b.rpg_gd &&
           a.rpg_min_dec_fac == b.rpg_min_dec_fac &&
           a.rate_reduce_monitor_period_ns == b.rate_reduce_monitor_period_ns &&
           a.rpg_time_reset_ns == b.rpg_time_reset_ns && a.rpg_byte_reset == b.rpg_byte_reset &&
           a.rpg_threshold == b.rpg_threshold && a.rpg_ai_rate_bps == b.rpg_ai_rate_bps &&
           a.rpg_hai_rate_bps == b.rpg_hai_rate_bps && a.rpg_min_rate_bps == b.rpg_min_rate_bps &&
           a.rpg_max_rate_bps == b.rpg_max_rate_bps && a.clamp_tgt_rate == b.clamp_tgt_rate &&
           a.clamp_tgt_rate_after_time_inc == b.clamp_tgt_rate_after_time_inc &&
           a.rate_to_set_on_first_cnp_bps == b.rate_to_set_on_first_cnp_bps &&
           a.min_time_between_cnps_ns == b.min_time_between_cnps_ns;
}

} // namespace

const char *profile_name(const CcParams &p) {
    for (DcqcnProfile prof : {DcqcnProfile::ConnectX, DcqcnProfile::Fair})
        if (same_rate_machine(p, params_from(dcqcn_profile_params(prof))))
            return to_string(prof);
    return "custom";
}

} // namespace droce::cc
