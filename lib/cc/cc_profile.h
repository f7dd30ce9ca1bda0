/* SPDX-License-Identifier: BSD-3-Clause */
/* Which named DCQCN profile (droce/dcqcn.h, DcqcnProfile) a parameter set is: what
 * droce-info shows for a device, so that an operator sees whether the device runs
 * ConnectX's defaults, the fair profile, or values changed by hand. */
#pragma once

#include "cc_params.h"

namespace droce::cc {

/** "connectx" or "fair" when every rate-machine parameter of p (the reaction and
 * notification points' timers, steps, gains and limits) equals that profile's, else
 * "custom". The fields a profile leaves as they are (rp_enabled, np_enabled, the CNPs'
 * DSCP and 802.1p priority, ecn_mode) are not compared. Static strings. */
const char *profile_name(const CcParams &p);

} // namespace droce::cc
