/* SPDX-License-Identifier: BSD-3-Clause */
#include "cc_pacer.h"

namespace droce::cc {

Pacer::Pacer(uint64_t rate_bps, uint32_t burst_bytes, uint64_t now)
    : rate_(rate_bps), burst_(burst_bytes), cap_(need(burst_bytes)), credit_(cap_), last_(now) {}

void Pacer::refill(uint64_t now) {
    if (now <= last_)
        return;
    const uint64_t dt = now - last_;
    last_ = now;
    /* Bound dt before multiplying: past the time to fill the bucket from its deepest debt,
     * the bucket is simply full (and dt·rate cannot overflow). */
    const uint64_t room = static_cast<uint64_t>(cap_ - credit_);
    if (dt >= room / rate_ + 1) {
        credit_ = cap_;
        return;
    }
    credit_ += static_cast<int64_t>(dt * rate_);
    if (credit_ > cap_)
        credit_ = cap_;
}

void Pacer::set_rate(uint64_t rate_bps, uint64_t now) {
    if (rate_ != 0)
        refill(now);
    else
        credit_ = cap_; /* leaving line rate: start with one burst */
    last_ = now;
    rate_ = rate_bps;
}

uint64_t Pacer::next_send_time(uint32_t bytes, uint64_t now) {
    if (rate_ == 0)
        return now;
    refill(now);
    const int64_t missing = need(bytes) - credit_;
    if (missing <= 0)
        return now;
    return now + (static_cast<uint64_t>(missing) + rate_ - 1) / rate_;
}

} // namespace droce::cc
