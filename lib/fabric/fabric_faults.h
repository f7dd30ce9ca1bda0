/* SPDX-License-Identifier: BSD-3-Clause */
/* Wire faults beyond loss for droce-fabric (issue 15's soak): duplication, reordering and
 * corruption of frames, each with its own probability per frame, from a generator seeded by
 * the caller so a seed replays a run. Sans-I/O like the bottleneck: decide() says what to do
 * with a frame, the caller does it (copies a frame to duplicate, holds one back to reorder,
 * flips the bit corrupt() names); no allocation, no clock. Loss stays the bottleneck's
 * (BottleneckParams::loss), so a lost frame is counted once, where it was always counted. */
#pragma once

#include <cstdint>

namespace droce::fabric {

struct FaultParams {
    double dup = 0;     /* a second copy follows the frame. 0..1 */
    double reorder = 0; /* the frame leaves after the next one toward the same port. 0..1 */
    double corrupt = 0; /* one bit past the Ethernet header is flipped. 0..1 */
    bool any() const { return dup > 0 || reorder > 0 || corrupt > 0; }
};

/** nullptr when valid; else a message naming the field and its range (static storage). */
const char *validate(const FaultParams &p);

struct FaultAction {
    bool dup = false;  /* send a copy right after the frame */
    bool hold = false; /* hold the frame back until the next one toward its port has gone */
    int32_t flip = -1; /* byte offset to corrupt (>= 14), -1: none */
    uint8_t mask = 0;  /* the bit flipped there */
};

struct FaultCounters {
    uint64_t duplicated = 0;
    uint64_t reordered = 0; /* frames another frame overtook (counted by the caller) */
    uint64_t corrupted = 0;
    uint64_t dup_failed = 0; /* a copy asked for but not made (no mbuf): counted, not sent */
};

class FaultInjector {
  public:
    /** Validated parameters (validate() first). */
    FaultInjector(const FaultParams &p, uint64_t seed);
    /** The faults for a frame of `len` bytes in its first segment; `can_hold`: no frame
     * toward that port is held already (one at a time, as a swap of neighbours). Counts
     * duplicated and corrupted; reordering is counted by overtaken() once it happens. */
    FaultAction decide(uint32_t len, bool can_hold);
    /** Applies a decided corruption to the frame's first segment. */
    static void corrupt(uint8_t *frame, const FaultAction &a) {
        if (a.flip >= 0)
            frame[a.flip] ^= a.mask;
    }
    void overtaken() { ++c_.reordered; }
    void dup_failed() {
        --c_.duplicated;
        ++c_.dup_failed;
    }
    const FaultCounters &counters() const { return c_; }
    const FaultParams &params() const { return p_; }

  private:
    uint64_t next();
    double uniform(); /* [0, 1) */
    bool chance(double p) { return p > 0 && uniform() < p; }
    FaultParams p_;
    uint64_t rng_;
    FaultCounters c_;
};

} // namespace droce::fabric
