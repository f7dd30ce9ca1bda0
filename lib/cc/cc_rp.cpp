/* SPDX-License-Identifier: BSD-3-Clause */
#include "cc_rp.h"

#include <algorithm>

namespace droce::cc {

namespace {
/* A deadline loop that finds a huge gap (a QP idle for seconds) stops after this many
 * periods and restarts the period from `now`: the state has long converged by then (alpha
 * (1 - 5/1024)^1024 < 1%, Rc within 2^-64 of Rt) and the caller's cost stays bounded. */
constexpr unsigned kMaxCatchUp = 1024;
} // namespace

const char *to_string(RpStage s) {
    switch (s) {
    case RpStage::line_rate:
        return "line_rate";
    case RpStage::fast_recovery:
        return "fast_recovery";
    case RpStage::additive:
        return "additive";
    case RpStage::hyper:
        return "hyper";
    }
    return "?";
}

Rp::Rp(const CcParams &p, uint64_t line_rate_bps) : line_rate_(line_rate_bps) {
    set_params(p);
    rc_ = rt_ = static_cast<double>(max_rate_);
}

void Rp::set_params(const CcParams &p) {
    p_ = p;
    max_rate_ = p.rpg_max_rate_bps != 0 ? std::min(p.rpg_max_rate_bps, line_rate_) : line_rate_;
    g_ = static_cast<double>(1024 - p.dce_tcp_g) / 1024.0;
    if (!p.rp_enabled) {
        if (limited_)
            release();
        rc_ = rt_ = static_cast<double>(max_rate_);
        return;
    }
    const double mx = static_cast<double>(max_rate_);
    if (!limited_) {
        /* An unlimited QP runs at the maximum, whichever way it moved. */
        rc_ = rt_ = mx;
        return;
    }
    rc_ = std::min(rc_, mx);
    rt_ = std::min(rt_, mx);
}

RpStage Rp::stage() const {
    if (!limited_)
        return RpStage::line_rate;
    const uint32_t f = p_.rpg_threshold;
    if (std::max(t_, bc_) <= f)
        return RpStage::fast_recovery;
    if (std::min(t_, bc_) > f)
        return RpStage::hyper;
    return RpStage::additive;
}

void Rp::on_cnp(uint64_t now) {
    if (!p_.rp_enabled) {
        ++c_.rp_cnp_ignored;
        return;
    }
    ++c_.rp_cnp_handled;
    const double mx = static_cast<double>(max_rate_);
    const double mn = static_cast<double>(p_.rpg_min_rate_bps);
    if (!limited_) {
        ++c_.rp_first_cnp;
        limited_ = true;
        alpha_ = static_cast<double>(p_.initial_alpha_value) / 1024.0;
        if (p_.rate_to_set_on_first_cnp_bps != 0)
            rc_ = std::min(static_cast<double>(p_.rate_to_set_on_first_cnp_bps), mx);
        rt_ = rc_;
    } else if (p_.clamp_tgt_rate || (p_.clamp_tgt_rate_after_time_inc && t_ > 0)) {
        rt_ = rc_;
    }
    /* alpha·1024 / 2^gd: gd = 11 is the paper's alpha/2. */
    const double frac = std::min(1.0, alpha_ * 1024.0 / static_cast<double>(1u << p_.rpg_gd));
    const double floor_dec = rc_ * static_cast<double>(p_.rpg_min_dec_fac) / 100.0;
    const double before = rc_;
    rc_ = std::max({rc_ * (1.0 - frac), floor_dec, mn});
    rc_ = std::min(rc_, before); /* the floor never raises a flow already below it */
    if (rc_ < before)
        ++c_.rp_rate_cuts;
    alpha_ = (1.0 - g_) * alpha_ + g_;
    t_ = bc_ = 0;
    bytes_ = 0;
    alpha_deadline_ = now + p_.dce_tcp_rtt_ns;
    inc_deadline_ = now + p_.rpg_time_reset_ns;
}

void Rp::on_bytes_sent(uint64_t bytes, uint64_t now) {
    (void)now;
    if (!limited_)
        return;
    bytes_ += bytes;
    /* A large burst may cover several stages; each is its own increase. */
    while (limited_ && bytes_ >= p_.rpg_byte_reset) {
        bytes_ -= p_.rpg_byte_reset;
        ++c_.rp_byte_stages;
        increase(Trigger::bytes);
    }
}

void Rp::on_timer(uint64_t now) {
    unsigned n = 0;
    while (limited_ && alpha_deadline_ <= now) {
        alpha_ *= (1.0 - g_);
        ++c_.rp_alpha_decays;
        alpha_deadline_ += p_.dce_tcp_rtt_ns;
        if (++n == kMaxCatchUp)
            alpha_deadline_ = now + p_.dce_tcp_rtt_ns;
    }
    n = 0;
    while (limited_ && inc_deadline_ <= now) {
        inc_deadline_ += p_.rpg_time_reset_ns;
        ++c_.rp_timer_stages;
        increase(Trigger::timer);
        if (++n == kMaxCatchUp)
            inc_deadline_ = now + p_.rpg_time_reset_ns;
    }
}

void Rp::increase(Trigger why) {
    if (why == Trigger::timer)
        ++t_;
    else
        ++bc_;
    const uint32_t f = p_.rpg_threshold;
    const double mx = static_cast<double>(max_rate_);
    if (std::max(t_, bc_) <= f) {
        ++c_.rp_fast_recovery;
    } else if (std::min(t_, bc_) > f) {
        ++c_.rp_hyper_increase;
        rt_ +=
            static_cast<double>(std::min(t_, bc_) - f) * static_cast<double>(p_.rpg_hai_rate_bps);
    } else {
        ++c_.rp_additive_increase;
        rt_ += static_cast<double>(p_.rpg_ai_rate_bps);
    }
    rt_ = std::min(rt_, mx);
    rc_ = std::min((rt_ + rc_) / 2.0, mx);
    if (rt_ >= mx && mx - rc_ <= static_cast<double>(p_.rpg_min_rate_bps))
        release();
}

void Rp::release() {
    ++c_.rp_released;
    limited_ = false;
    rc_ = rt_ = static_cast<double>(max_rate_);
    t_ = bc_ = 0;
    bytes_ = 0;
    alpha_deadline_ = inc_deadline_ = kNoDeadline;
}

} // namespace droce::cc
