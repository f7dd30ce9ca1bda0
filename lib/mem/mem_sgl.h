/* SPDX-License-Identifier: BSD-3-Clause */
/* Received bytes into a scatter list (rxe's copy_data, towards memory): one routine for
 * the three places that place a message into an application's SGEs — an RC SEND into
 * its receive WQE, an RC READ response or atomic result into the requester's SGEs, and
 * a UD datagram (GRH first) into its receive WQE. */
#pragma once

#include <cstdint>
#include <cstring>

#include "vocab_verbs.h"

#include "mem_mr.h"

namespace droce::mem {

/** A position in an SGL that bytes are written to, each put() continuing where the last
 * one stopped, so a packet's payload chunks cost one walk of the list, not one each.
 * Every SGE's lkey is checked for exactly the bytes it takes, when it takes them: the
 * application may have deregistered the region since it posted the WR (verbs: nothing is
 * written after the dereg), and an SGE the message does not reach is not looked at. */
class SglWriter {
  public:
    /** Starts at byte `off` of the message the SGL describes. */
    SglWriter(const MrTable &mrs, uint32_t pd, const Sge *sgl, int num_sge, uint32_t off)
        : mrs_(mrs), sgl_(sgl), num_sge_(num_sge), pd_(pd), off_(off) {
        while (i_ < num_sge_ && off_ >= sgl_[i_].length)
            off_ -= sgl_[i_++].length;
    }

    /** Copies len bytes from src. False when an lkey fails or the list ends first; the
     * bytes before that may have been placed (into memory that was still registered). */
    bool put(const uint8_t *src, uint32_t len) {
        while (len > 0) {
            if (i_ >= num_sge_) [[unlikely]]
                return false;
            const Sge &s = sgl_[i_];
            const uint32_t room = s.length - off_;
            const uint32_t take = room < len ? room : len;
            uint8_t *dst;
            if (take != 0) {
                if (mrs_.check(s.lkey, pd_, s.addr + off_, take, kAccessLocalWrite, &dst) !=
                    AccessResult::Ok) [[unlikely]]
                    return false;
                std::memcpy(dst, src, take);
            }
            src += take;
            len -= take;
            off_ += take;
            if (off_ == s.length) {
                ++i_;
                off_ = 0;
            }
        }
        return true;
    }

  private:
    const MrTable &mrs_;
    const Sge *sgl_;
    int num_sge_;
    uint32_t pd_;
    int i_ = 0;
    uint32_t off_; /* into sgl_[i_] */
};

} // namespace droce::mem
