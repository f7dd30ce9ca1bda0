/* SPDX-License-Identifier: BSD-3-Clause */
/* The public DCQCN state (droce/dcqcn.h) from lib/rc's; the parameters' conversion is
 * lib/cc's params_from. */
#include "engine_cc.h"

namespace droce::engine {

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
