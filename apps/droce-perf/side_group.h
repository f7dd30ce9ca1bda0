/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The QPs of one process side (server or client) as --threads parts: one Side per
 * application thread, each with its own buffer, PD, MR, CQ and QPs, so that a thread
 * steps its part and shares nothing it writes with the others on the hot path (droce's
 * rule: a QP and its CQs are used from one thread; one Side with per-thread state would
 * still share its counters' cache lines). Thread t's part is a contiguous block of the
 * -q QPs: QPs first_qp(t) .. first_qp(t + 1) - 1 (q / T each, the first q % T parts one
 * more), on worker t % workers. The peer sees q QP records in that order (each with its
 * part's rkey and address), so it may run another number of threads. With one thread
 * the group is one Side as before --threads (QP i on worker i % workers). */
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "side.h"

namespace droce::perf {

class SideGroup {
  public:
    /** The first of part t's QPs among q QPs split over `threads` parts. */
    static uint32_t first_qp(uint32_t q, uint32_t threads, uint32_t t) {
        return t * (q / threads) + std::min(t, q % threads);
    }

    /** Builds `threads` parts of cfg.num_qps QPs on dev; false (the part said why) on
     * failure. */
    bool setup(const SideConfig &cfg, uint32_t threads, Device &dev, uint32_t workers) {
        const uint32_t q = cfg.num_qps;
        for (uint32_t t = 0; t < threads; ++t) {
            SideConfig c = cfg;
            c.num_qps = first_qp(q, threads, t + 1) - first_qp(q, threads, t);
            parts_.push_back(std::make_unique<Side>(c));
            Side &s = *parts_.back();
            if (t != 0)
                s.share_clock(*parts_.front());
            const bool ok = threads == 1 ? s.setup(dev, workers) : s.setup(dev, 1, t % workers);
            if (!ok)
                return false;
        }
        return true;
    }

    uint32_t size() const { return static_cast<uint32_t>(parts_.size()); }
    Side &part(uint32_t t) const { return *parts_[t]; }
    Side &front() const { return *parts_.front(); }

    /** Every QP's record, in QP order (what the peer receives). */
    std::vector<Dest> locals() const {
        std::vector<Dest> v;
        for (const auto &p : parts_)
            v.insert(v.end(), p->locals().begin(), p->locals().end());
        return v;
    }

    /** Each part's QPs to RTR/RTS towards its block of remote (one Dest per QP). */
    bool connect(const std::vector<Dest> &remote, Mtu mtu) {
        size_t first = 0, total = 0;
        for (const auto &p : parts_)
            total += p->num_qps();
        if (remote.size() != total) {
            std::fprintf(stderr, "%zu remote QPs for %zu local ones\n", remote.size(), total);
            return false;
        }
        for (const auto &p : parts_) {
            const size_t n = p->num_qps();
            if (!p->connect(std::vector<Dest>(remote.begin() + static_cast<long>(first),
                                              remote.begin() + static_cast<long>(first + n)),
                            mtu))
                return false;
            first += n;
        }
        return true;
    }

    std::vector<const Side *> views() const {
        std::vector<const Side *> v;
        for (const auto &p : parts_)
            v.push_back(p.get());
        return v;
    }

    /** Every part finished its run. */
    bool done() const {
        for (const auto &p : parts_)
            if (!p->done())
                return false;
        return true;
    }

    /** Completions of all parts in the last run. */
    uint64_t completed() const {
        uint64_t n = 0;
        for (const auto &p : parts_)
            n += p->completed();
        return n;
    }

  private:
    std::vector<std::unique_ptr<Side>> parts_;
};

} // namespace droce::perf
