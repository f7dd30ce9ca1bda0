/* SPDX-License-Identifier: BSD-3-Clause */
/* The public DCQCN types (droce/dcqcn.h) and lib/cc's: the same fields, kept apart so
 * that the public header does not depend on the library's internals. */
#include "engine.h"

namespace droce::engine {

cc::CcParams to_cc_params(const DcqcnParams &d) {
    cc::CcParams p;
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
    p.ecn_mode = static_cast<cc::EcnMode>(static_cast<uint8_t>(d.ecn_mode));
    return p;
}

DcqcnState to_dcqcn_state(const rc::CcState &c) {
    DcqcnState s;
    s.enabled = c.enabled;
    s.rp_enabled = c.rp_enabled;
    s.np_enabled = c.np_enabled;
    s.limited = c.limited;
    s.rate_bps = c.rate_bps;
    s.target_bps = c.target_bps;
    s.alpha = c.alpha;
    s.stage = cc::to_string(c.stage);
    s.max_rate_bps = c.max_rate_bps;
    s.pacer_rate_bps = c.pacer_rate_bps;
    return s;
}

uint64_t line_rate_from_link(uint32_t link_speed_mbps) {
    /* RTE_ETH_SPEED_NUM_NONE (0) and _UNKNOWN (UINT32_MAX): virtual ports (net_ring,
     * memif, vhost) report no speed; 100 Gb/s is then the RP's maximum. */
    if (link_speed_mbps == 0 || link_speed_mbps == UINT32_MAX)
        return rc::kDefaultLineRateBps;
    return static_cast<uint64_t>(link_speed_mbps) * 1'000'000;
}

} // namespace droce::engine
