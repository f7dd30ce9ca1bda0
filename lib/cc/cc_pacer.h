/* SPDX-License-Identifier: BSD-3-Clause */
/* Token-bucket pacer of one QP: releases bytes at `rate` bit/s with bursts of at most
 * `burst` bytes.
 *
 * Credit is kept as an integer in nanobits (bits × 10^9): a ns of elapsed time at R bit/s
 * adds exactly R nanobits, so no rounding is lost per packet and the long-run rate is
 * exact. The credit may go negative (consume() of a packet larger than the credit: the
 * next one waits for the debt), so a burst smaller than the MTU still works.
 * Rate 0 means unpaced (line rate): every call is a compare. Sans-I/O, no allocation.
 *
 * Burst sizing: the bucket must hold one packet plus what the rate earns while the caller
 * is late (timer granularity, next_send_time() rounding up to the ns): credit beyond the
 * burst is lost, so a burst of exactly one packet runs slow (about 0.1% at 10 Gb/s with
 * 1 KB packets and 1 ns lateness, far more with a 1 µs timer tick). Use at least
 * max(2 × MTU, MTU + rate × tick). */
#pragma once

#include <cstdint>

namespace droce::cc {

class Pacer {
  public:
    /** rate_bps 0 = unpaced. burst_bytes: bucket depth; the bucket starts full. */
    Pacer(uint64_t rate_bps, uint32_t burst_bytes, uint64_t now = 0);

    /** New rate from `now` on (credit earned so far at the old rate is kept). */
    void set_rate(uint64_t rate_bps, uint64_t now);
    uint64_t rate() const { return rate_; }
    /** New bucket depth (follows the rate: see the sizing note above); credit above it is
     * dropped, a debt is kept. */
    void set_burst(uint32_t burst_bytes) {
        burst_ = burst_bytes;
        cap_ = need(burst_bytes);
        if (credit_ > cap_)
            credit_ = cap_;
    }
    uint32_t burst() const { return burst_; }

    bool can_send(uint32_t bytes, uint64_t now) {
        if (rate_ == 0)
            return true;
        refill(now);
        return credit_ >= need(bytes);
    }
    /** Take `bytes` (normally after can_send() said yes). */
    void consume(uint32_t bytes, uint64_t now) {
        if (rate_ == 0)
            return;
        refill(now);
        credit_ -= need(bytes);
    }
    /** Earliest time at which can_send(bytes) is true (now if already). */
    uint64_t next_send_time(uint32_t bytes, uint64_t now);

  private:
    /* bytes <= 1 GiB: 2^30 · 8·10^9 < 2^63. */
    static int64_t need(uint32_t bytes) { return static_cast<int64_t>(bytes) * 8'000'000'000; }
    void refill(uint64_t now);

    uint64_t rate_;
    uint32_t burst_;
    int64_t cap_;    /* burst in nanobits */
    int64_t credit_; /* nanobits */
    uint64_t last_;  /* ns of the last refill */
};

} // namespace droce::cc
