/* SPDX-License-Identifier: BSD-3-Clause */
/* DCQCN notification point of one QP (receiver side): decides whether a CE-marked RoCE
 * packet for this QP yields a CNP. At most one CNP per min_time_between_cnps per QP, so a
 * burst of marked packets costs the sender one cut per interval, not one per packet.
 * Sans-I/O: `now` in ns, never going backwards. */
#pragma once

#include <cstdint>

#include "cc_params.h"

namespace droce::cc {

struct NpCounters {
    uint64_t np_ecn_marked_roce_packets = 0; /* CE-marked RoCE packets received */
    uint64_t np_cnp_sent = 0;                /* CNPs the caller must send */
    uint64_t np_cnp_coalesced = 0;           /* CE marks inside the interval: no CNP */
    uint64_t np_cnp_disabled = 0;            /* CE marks while the NP is off: no CNP */
};

class Np {
  public:
    explicit Np(const CcParams &p) { set_params(p); }
    void set_params(const CcParams &p) {
        enabled_ = p.np_enabled;
        min_gap_ = p.min_time_between_cnps_ns;
    }

    /** A CE-marked packet for this QP arrived at `now`: true = send one CNP now (the caller
     * builds it: opcode 0x81, BECN, DestQP = the sender's QP, cnp_dscp / cnp_802p_prio). */
    bool on_ce_marked(uint64_t now) {
        ++c_.np_ecn_marked_roce_packets;
        if (!enabled_) {
            ++c_.np_cnp_disabled;
            return false;
        }
        if (sent_any_ && now - last_cnp_ < min_gap_) {
            ++c_.np_cnp_coalesced;
            return false;
        }
        sent_any_ = true;
        last_cnp_ = now;
        ++c_.np_cnp_sent;
        return true;
    }

    const NpCounters &counters() const { return c_; }

  private:
    uint64_t last_cnp_ = 0;
    uint64_t min_gap_ = 0;
    bool sent_any_ = false;
    bool enabled_ = true;
    NpCounters c_;
};

} // namespace droce::cc
