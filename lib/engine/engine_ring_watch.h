/* SPDX-License-Identifier: BSD-3-Clause */
/* Worker mode: the QPs whose WR rings a worker polls without being told.
 *
 * A post rings the QP's doorbell only when it finds the QP's flag clear (api_wr_ring.h):
 * an exchange on the flag, and the QPN into the worker's MP doorbell ring. When the
 * worker clears the flag at every drain, a steady poster pays both on every WR, and the
 * flag's line crosses between the two cores each time. So after a doorbell the worker
 * keeps the flag set and watches the QP's rings itself, each poll, until they stay empty
 * for kIdlePolls polls in a row; then it clears the flag and drains once more (a WR
 * posted before the clear is taken then; one posted after it rings the doorbell again).
 * Set, the flag is written only by the poster: its exchange stays in the poster's cache.
 *
 * Entries are QPNs, not QP pointers: the worker looks each up at every poll, as it does
 * a doorbell's, so a QP destroyed meanwhile is dropped. At most kMaxRingWatch QPs are
 * watched; a doorbell beyond that is served as before (flag cleared, rings drained). */
#pragma once

#include <array>
#include <cstdint>

namespace droce::engine {

class RingWatch {
  public:
    static constexpr uint32_t kCapacity = 64;
    static constexpr uint32_t kIdlePolls = 256;

    /* Watches qpn (its flag stays set); false when full (the caller clears the flag). */
    bool add(uint32_t qpn) {
        if (n_ == kCapacity)
            return false;
        e_[n_++] = {qpn, 0};
        return true;
    }
    uint32_t size() const { return n_; }
    bool empty() const { return n_ == 0; }

    /* What poll() asks of each watched QPN. */
    enum class Seen {
        Gone,  /* no such QP on this worker any more: forget it */
        Empty, /* its rings were empty */
        Busy,  /* it had WRs */
    };
    /* One poll over the watched QPNs. seen(qpn) drains the QP's rings and says what it
     * found; release(qpn) clears the flag of a QP idle for kIdlePolls polls and drains it
     * once more. Both entries that go are removed in place (the last takes the slot). */
    template <class Seen_, class Release> void poll(Seen_ &&seen, Release &&release) {
        for (uint32_t i = 0; i < n_;) {
            Entry &e = e_[i];
            const Seen s = seen(e.qpn);
            if (s == Seen::Busy) {
                e.idle = 0;
            } else if (s == Seen::Gone || ++e.idle >= kIdlePolls) {
                if (s != Seen::Gone)
                    release(e.qpn);
                e = e_[--n_];
                continue;
            }
            ++i;
        }
    }

  private:
    struct Entry {
        uint32_t qpn;
        uint32_t idle; /* polls in a row with empty rings */
    };
    std::array<Entry, kCapacity> e_{};
    uint32_t n_ = 0;
};

} // namespace droce::engine
