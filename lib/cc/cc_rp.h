/* SPDX-License-Identifier: BSD-3-Clause */
/* DCQCN reaction point: the rate state machine of one QP (sender side).
 *
 * Events in (CNP arrival, bytes sent, time passing), decisions out (rate()). Nothing here
 * reads a clock, allocates or logs; `now` is ns and must not go backwards.
 *
 * A QP starts unlimited at the maximum rate (line rate), with no deadline: it costs nothing
 * until its first CNP. Then (ConnectX's model; the paper's is the special case of a CNP
 * at most every alpha period and rate_reduce_monitor_period 0):
 *  - cut, at a CNP, or at the end of the monitor period a CNP arrived in when the last cut
 *    was less than rate_reduce_monitor_period ago (so at most one cut per period): Rt = Rc
 *    (always if clamp_tgt_rate; else only if a timer stage raised the rate since the last
 *    cut and clamp_tgt_rate_after_time_inc); Rc = Rc·(1 − alpha·1024/2^gd), never below
 *    Rc·rpg_min_dec_fac % nor rpg_min_rate; the stage counters T, BC, the byte count and
 *    the increase timer restart. The first CNP of an unlimited flow first sets alpha =
 *    initial_alpha_value/1024 and Rc = Rt = rate_to_set_on_first_cnp (0: the current rate)
 *    and starts the alpha periods.
 *  - alpha, once per dce_tcp_rtt: alpha = (1 − g)·alpha + g if a CNP arrived in that
 *    period, else (1 − g)·alpha. Evaluated lazily (closed form over the periods passed) at
 *    each event, so alpha never needs a wake-up of its own: alpha() is its value at the
 *    last event.
 *  - increase stage, every rpg_time_reset (T += 1) or every rpg_byte_reset bytes sent
 *    (BC += 1): with F = rpg_threshold, after the increment
 *      max(T, BC) <= F      fast recovery   Rc = (Rt + Rc)/2
 *      min(T, BC) >  F      hyper increase  Rt += i·R_HAI, i = min(T, BC) − F; Rc = (Rt + Rc)/2
 *      otherwise            additive        Rt += R_AI;                        Rc = (Rt + Rc)/2
 *    Rt and Rc never exceed the maximum rate. When Rt has reached it and Rc is within
 *    rpg_min_rate of it (the halving never lands exactly) the QP is released: back to line
 *    rate, no deadline, and its next CNP is a first CNP again (ConnectX frees the limiter).
 * rp_enabled = false: rate() is the maximum, CNPs are counted as ignored. */
#pragma once

#include <cstdint>

#include "cc_params.h"

namespace droce::cc {

struct RpCounters {
    uint64_t rp_cnp_handled = 0;   /* CNPs acted on (each one cuts the rate) */
    uint64_t rp_cnp_ignored = 0;   /* CNPs for a QP with the RP disabled */
    uint64_t rp_first_cnp = 0;     /* CNPs that found the QP unlimited (limiter taken) */
    uint64_t rp_rate_cuts = 0;     /* cuts that lowered Rc (not already at the floor) */
    uint64_t rp_fast_recovery = 0; /* increase stages by kind */
    uint64_t rp_additive_increase = 0;
    uint64_t rp_hyper_increase = 0;
    uint64_t rp_timer_stages = 0; /* what triggered the stages */
    uint64_t rp_byte_stages = 0;
    uint64_t rp_alpha_decays = 0;    /* alpha periods without a CNP */
    uint64_t rp_alpha_increases = 0; /* alpha periods with one */
    uint64_t rp_cuts_deferred = 0;   /* CNPs inside the monitor period (cut at its end) */
    uint64_t rp_released = 0; /* returns to line rate */
};

enum class RpStage : uint8_t { line_rate, fast_recovery, additive, hyper };
const char *to_string(RpStage s);

class Rp {
  public:
    static constexpr uint64_t kNoDeadline = UINT64_MAX;

    /** p: validated parameters (copied); line_rate_bps > 0: the port's rate, the maximum
     * when p.rpg_max_rate_bps is 0. */
    Rp(const CcParams &p, uint64_t line_rate_bps);

    /** Change parameters at run time (per QP). Disabling releases the QP to line rate; a
     * lower maximum clamps Rc and Rt at once. */
    void set_params(const CcParams &p);

    void on_cnp(uint64_t now);
    /** Data bytes put on the wire for this QP (counted only while limited). */
    void on_bytes_sent(uint64_t bytes, uint64_t now);
    /** Run every alpha/increase period due by `now` (call when now >= next_deadline();
     * calling early is harmless). */
    void on_timer(uint64_t now);
    /** Earliest time on_timer() has work (an increase stage or a held cut), kNoDeadline
     * when unlimited. */
    uint64_t next_deadline() const {
        if (!limited_)
            return kNoDeadline;
        return cut_pending_ && next_cut_ok_ < inc_deadline_ ? next_cut_ok_ : inc_deadline_;
    }

    /** Current rate Rc, bit/s (the pacer's rate). */
    uint64_t rate() const { return static_cast<uint64_t>(rc_ + 0.5); }
    double rate_exact() const { return rc_; }
    double target_rate() const { return rt_; }
    double alpha() const { return alpha_; }
    bool limited() const { return limited_; }
    /** A CNP arrived inside the monitor period: a cut is due at its end. */
    bool cut_pending() const { return cut_pending_; }
    uint32_t timer_stage() const { return t_; }
    uint32_t byte_stage() const { return bc_; }
    /** The kind of the last increase stage (fast recovery right after a cut). */
    RpStage stage() const;
    uint64_t max_rate() const { return max_rate_; }
    const RpCounters &counters() const { return c_; }

  private:
    enum class Trigger : uint8_t { timer, bytes };
    void increase(Trigger why);
    void cut(uint64_t now);
    void advance_alpha(uint64_t now);
    void release();

    CcParams p_;
    uint64_t line_rate_;
    uint64_t max_rate_;
    double g_;       /* (1024 - dce_tcp_g) / 1024 */
    double rc_, rt_; /* bit/s */
    double alpha_ = 1.0;
    uint64_t bytes_ = 0; /* since the last byte stage */
    uint64_t alpha_period_start_ = 0; /* start of the alpha period in progress */
    uint64_t inc_deadline_ = kNoDeadline;
    uint64_t next_cut_ok_ = 0; /* no cut before (the monitor period of the last cut) */
    uint32_t t_ = 0, bc_ = 0;
    bool limited_ = false;
    bool alpha_cnp_ = false;   /* a CNP arrived in the alpha period in progress */
    bool cut_pending_ = false; /* a CNP arrived inside the monitor period */
    RpCounters c_;
};

} // namespace droce::cc
