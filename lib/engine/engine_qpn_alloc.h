/* SPDX-License-Identifier: BSD-3-Clause */
/* A shard's QPNs: the numbers of its residue class (qpn % workers == its index, so the
 * owner of a QPN is known from the number alone, QpnOwner), never-used numbers first, then
 * freed ones once their quarantine is over.
 *
 * Why the quarantine: a peer may still send to a QPN that was just destroyed (frames in
 * flight, retransmissions until its retry count runs out). A new QP given that number at
 * once would take them as its own; after kQpnQuarantineNs such frames find no QP and are
 * counted as rx_drop_unknown_qpn. Control path only (create and destroy, on the shard's
 * worker): the deque allocates. */
#pragma once

#include <cstdint>
#include <deque>
#include <utility>

namespace droce::engine {

class QpnAllocator {
  public:
    /* Shard `index` of `workers`: QPNs first..max-1 of its class, freed ones after
     * quarantine_ns. */
    QpnAllocator(uint32_t index, uint32_t workers, uint32_t first, uint32_t max,
                 uint64_t quarantine_ns)
        : next_fresh_(first + (index + workers - first % workers) % workers), workers_(workers),
          max_(max), quarantine_ns_(quarantine_ns) {}

    /* A QPN, or 0 when every number of the class is in use or still in quarantine. */
    uint32_t alloc(uint64_t now) {
        if (next_fresh_ < max_) {
            const uint32_t q = next_fresh_;
            next_fresh_ += workers_;
            return q;
        }
        if (!freed_.empty() && now - freed_.front().second >= quarantine_ns_) {
            const uint32_t q = freed_.front().first;
            freed_.pop_front();
            return q;
        }
        return 0;
    }

    /* qpn (one alloc gave) back, usable again quarantine_ns after now. */
    void free(uint32_t qpn, uint64_t now) { freed_.emplace_back(qpn, now); }

  private:
    uint32_t next_fresh_; /* the lowest never-used QPN of the class */
    uint32_t workers_;
    uint32_t max_;
    uint64_t quarantine_ns_;
    std::deque<std::pair<uint32_t, uint64_t>> freed_; /* (qpn, freed at), oldest first */
};

} // namespace droce::engine
