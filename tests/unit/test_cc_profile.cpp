/* SPDX-License-Identifier: BSD-3-Clause */
/* cc::profile_name: the DCQCN profile droce-info shows for a device (telemetry
 * /droce/info, "dcqcn_profile"). */
#include <gtest/gtest.h>

#include <string>

#include <droce/dcqcn.h>

#include "cc_params.h"
#include "cc_profile.h"

using namespace droce;

TEST(CcProfile, NamesEachProfileAndCustom) {
    EXPECT_STREQ(cc::profile_name(cc::params_from(DcqcnParams{})), "connectx");
    EXPECT_STREQ(cc::profile_name(cc::CcParams{}), "connectx");
    const cc::CcParams fair = cc::params_from(dcqcn_profile_params(DcqcnProfile::Fair));
    EXPECT_STREQ(cc::profile_name(fair), "fair");
    /* One rate-machine key changed after the profile: neither profile any more */
    cc::CcParams p = fair;
    p.rpg_ai_rate_bps += 1;
    EXPECT_STREQ(cc::profile_name(p), "custom");
    p = fair;
    p.dce_tcp_g = cc::CcParams{}.dce_tcp_g;
    EXPECT_STREQ(cc::profile_name(p), "custom");
    p = cc::CcParams{};
    p.min_time_between_cnps_ns = 0;
    EXPECT_STREQ(cc::profile_name(p), "custom");
}

TEST(CcProfile, FieldsAProfileDoesNotSetAreNotCompared) {
    cc::CcParams p = cc::params_from(dcqcn_profile_params(DcqcnProfile::Fair));
    p.ecn_mode = cc::EcnMode::ect1;
    p.cnp_dscp = 26;
    p.cnp_802p_prio = 3;
    p.np_enabled = false;
    EXPECT_STREQ(cc::profile_name(p), "fair");
}
