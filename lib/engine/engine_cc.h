/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's side of congestion control (engine_cc.cpp). */
#pragma once

#include <cstdint>

#include <droce/droce.h>

#include "rc_qp.h"

namespace droce::engine {

/* engine_cc.cpp: the public DCQCN types and lib/cc's. */
DcqcnState to_dcqcn_state(const rc::CcState &c);
/** Line rate of a port from rte_eth_link::link_speed (Mb/s; none/unknown: 100 Gb/s). */
uint64_t line_rate_from_link(uint32_t link_speed_mbps);

} // namespace droce::engine
