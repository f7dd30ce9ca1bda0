/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/api, internal: what RC and UD queue pairs share in worker mode. The application
 * thread never touches a QP there: a WR goes into the QP's SPSC ring and the QP's worker
 * learns of it through its doorbell (api.cpp, api_ud.cpp). */
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <droce/droce.h>

#include "engine.h"

namespace droce::api {

/* SPSC rings from the heap (not memzones: see engine::ring_alloc), n entries (at least 1). */
inline rte_ring *make_elem_ring(engine::Runtime &rt, const char *prefix, unsigned esize,
                                uint32_t n) {
    const std::string name = rt.unique_name(prefix);
    return engine::ring_alloc(name.c_str(), esize, n == 0 ? 1 : n,
                              RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
}

/* Where a worker-mode WR goes: the ring, the producer's count and the worker's count of
 * what has left it, and the doorbell (flag, worker, value: a QPN or kDoorbellSrq | index). */
struct WrRing {
    rte_ring *ring;
    uint64_t &posted;
    const std::atomic<uint64_t> &retired;
    std::atomic<bool> &doorbell;
    uint32_t worker;
    uint32_t doorbell_value;
};

/* A WR into its ring: exactly max_wr outstanding, counting what the ring and the worker's
 * queue hold together. The worker learns of it through its doorbell ring, once per drain:
 * the flag is cleared (exchange) by the worker before it drains the rings. `what` names
 * the call and the queue for the error ("post_send: send queue"). */
template <class Wr>
Status enqueue_wr(engine::Dev &dev, const WrRing &r, uint32_t max_wr, const Wr &wr,
                  const char *what) {
    if (r.posted - r.retired.load(std::memory_order_acquire) >= max_wr ||
        rte_ring_sp_enqueue_elem(r.ring, const_cast<Wr *>(&wr), sizeof(Wr)) != 0)
        return Status(ENOMEM, std::string(what) + " full (" + std::to_string(max_wr) + " WRs)");
    ++r.posted;
    if (!r.doorbell.exchange(true, std::memory_order_acq_rel))
        dev.shard(r.worker).ring_doorbell(r.doorbell_value);
    return {};
}

/* A QP's send and receive rings. */
inline WrRing send_ring(engine::QpCtx &c, uint32_t qpn) {
    return {c.sq, c.sq_posted, c.sq_retired, c.doorbell, c.worker, qpn};
}
inline WrRing recv_ring(engine::QpCtx &c, uint32_t qpn) {
    return {c.rq, c.rq_posted, c.rq_retired, c.doorbell, c.worker, qpn};
}

/* The SGE count of a WR against kMaxSge and the QP's capability (`call`: "post_send"). */
inline Status check_num_sge(int num_sge, uint32_t max_sge, const char *call) {
    if (num_sge < 0 || num_sge > kMaxSge || static_cast<uint32_t>(num_sge) > max_sge)
        return Status(EINVAL,
                      std::string(call) + ": num_sge " + std::to_string(num_sge) + " out of range");
    return {};
}

} // namespace droce::api
