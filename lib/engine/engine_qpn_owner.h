/* SPDX-License-Identifier: BSD-3-Clause */
/* Which worker owns a QPN: qpn % workers, the rule QPN allocation follows. Every received
 * frame asks it twice (the prefetch pipeline, then the delivery), so it is computed
 * without a division: a 32-bit DIV takes tens of cycles, where Lemire's "faster
 * remainder by direct computation" (Lemire, Kaser, Kurz 2019) takes two multiplies by
 * constants fixed when the device opens. Exact for every 32-bit qpn and worker count. */
#pragma once

#include <cstdint>

namespace droce::engine {

class QpnOwner {
  public:
    explicit QpnOwner(uint32_t workers)
        : workers_(workers), m_(UINT64_MAX / (workers != 0 ? workers : 1) + 1) {}

    uint32_t operator()(uint32_t qpn) const {
        const uint64_t low = m_ * qpn; /* the fraction qpn / workers, scaled by 2^64 */
        return static_cast<uint32_t>((static_cast<U128>(low) * workers_) >> 64);
    }
    uint32_t workers() const { return workers_; }

  private:
    __extension__ typedef unsigned __int128 U128;
    uint32_t workers_;
    uint64_t m_; /* ceil(2^64 / workers); 0 (it wraps) for one worker, giving 0 */
};

} // namespace droce::engine
