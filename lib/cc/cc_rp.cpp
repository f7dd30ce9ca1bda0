/* SPDX-License-Identifier: BSD-3-Clause */
#include "cc_rp.h"

#include <algorithm>
#include <cmath>

namespace droce::cc {

namespace {
/* The increase loop that finds a huge gap (a QP idle for seconds) stops after this many
 * periods and restarts the period from `now`: Rc is within 2^-1024 of Rt by then and the
 * caller's cost stays bounded. */
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
    if (!limited_) {
        ++c_.rp_first_cnp;
        limited_ = true;
        alpha_ = static_cast<double>(p_.initial_alpha_value) / 1024.0;
        /* The initial value is alpha for this CNP's period: it does not count again. */
        alpha_period_start_ = now;
        alpha_cnp_ = false;
        if (p_.rate_to_set_on_first_cnp_bps != 0)
            rc_ = std::min(static_cast<double>(p_.rate_to_set_on_first_cnp_bps),
                           static_cast<double>(max_rate_));
        rt_ = rc_;
        t_ = 0; /* no clamp below: Rt is Rc already */
        cut(now);
        return;
    }
    advance_alpha(now);
    alpha_cnp_ = true;
    if (now >= next_cut_ok_) {
        cut(now);
    } else {
        ++c_.rp_cuts_deferred;
        cut_pending_ = true;
    }
}

void Rp::cut(uint64_t now) {
    if (p_.clamp_tgt_rate || (p_.clamp_tgt_rate_after_time_inc && t_ > 0))
        rt_ = rc_;
    /* alpha·1024 / 2^gd: gd = 11 is the paper's alpha/2. */
    const double frac = std::min(1.0, alpha_ * 1024.0 / static_cast<double>(1u << p_.rpg_gd));
    const double floor_dec = rc_ * static_cast<double>(p_.rpg_min_dec_fac) / 100.0;
    const double before = rc_;
    rc_ = std::max({rc_ * (1.0 - frac), floor_dec, static_cast<double>(p_.rpg_min_rate_bps)});
    rc_ = std::min(rc_, before); /* the floor never raises a flow already below it */
    if (rc_ < before)
        ++c_.rp_rate_cuts;
    t_ = bc_ = 0;
    bytes_ = 0;
    inc_deadline_ = now + p_.rpg_time_reset_ns;
    next_cut_ok_ = now + p_.rate_reduce_monitor_period_ns;
    cut_pending_ = false;
}

void Rp::advance_alpha(uint64_t now) {
    if (now < alpha_period_start_ + p_.dce_tcp_rtt_ns)
        return;
    uint64_t n = (now - alpha_period_start_) / p_.dce_tcp_rtt_ns;
    alpha_period_start_ += n * p_.dce_tcp_rtt_ns;
    if (alpha_cnp_) {
        /* The period that ended with a CNP in it; the others had none. */
        alpha_ = (1.0 - g_) * alpha_ + g_;
        alpha_cnp_ = false;
        ++c_.rp_alpha_increases;
        --n;
    }
    if (n != 0) {
        /* Closed form: an idle QP costs one pow(), whatever the gap. */
        alpha_ *= std::pow(1.0 - g_, static_cast<double>(n));
        c_.rp_alpha_decays += n;
    }
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
    if (!limited_)
        return;
    /* Events in time order: timer stages due before a held cut run first, the cut restarts
     * the timer, and the stages due after it follow. */
    unsigned n = 0;
    for (;;) {
        const bool cut_due = cut_pending_ && next_cut_ok_ <= now;
        if (cut_due && next_cut_ok_ <= inc_deadline_) {
            advance_alpha(next_cut_ok_); /* the cut uses alpha as it was then */
            cut(next_cut_ok_);
            continue;
        }
        if (!limited_ || inc_deadline_ > now)
            break;
        inc_deadline_ += p_.rpg_time_reset_ns;
        ++c_.rp_timer_stages;
        increase(Trigger::timer);
        if (++n == kMaxCatchUp && inc_deadline_ <= now)
            inc_deadline_ = now + p_.rpg_time_reset_ns;
    }
    if (limited_)
        advance_alpha(now);
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
    inc_deadline_ = kNoDeadline;
    cut_pending_ = alpha_cnp_ = false;
    next_cut_ok_ = 0;
}

} // namespace droce::cc
