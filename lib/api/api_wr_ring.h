/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/api, internal: what RC and UD queue pairs share in worker mode. The application
 * thread never touches a QP there: a WR goes into the QP's SPSC ring and the QP's worker
 * learns of it through its doorbell (api.cpp, api_ud.cpp). */
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <droce/droce.h>

#include "engine.h"
#include "mem_inline.h"

namespace droce::api {

/* SPSC rings from the heap (not memzones: see engine::ring_alloc), n entries (at least 1). */
inline rte_ring *make_elem_ring(engine::Runtime &rt, const char *prefix, unsigned esize,
                                uint32_t n) {
    const std::string name = rt.unique_name(prefix);
    return engine::ring_alloc(name.c_str(), esize, n == 0 ? 1 : n,
                              RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
}

/* Where a worker-mode WR goes: the ring, the producer's count, the worker's count of
 * what has left it and the producer's last reading of that, and the doorbell (flag,
 * worker, value: a QPN or kDoorbellSrq | index). */
struct WrRing {
    rte_ring *ring;
    uint64_t &posted;
    const std::atomic<uint64_t> &retired;
    uint64_t &retired_seen;
    std::atomic<bool> &doorbell;
    uint32_t worker;
    uint32_t doorbell_value;
};

/* Room for one more WR: fewer than max_wr outstanding. The worker writes `retired` as
 * WRs complete, so its line moves to the worker's core after each; the last reading is
 * enough while it leaves room (retired only grows: an old reading can only be short of
 * room, never over), and only a full-looking queue reads the line again. */
inline bool ring_has_room(const WrRing &r, uint32_t max_wr) {
    if (r.posted - r.retired_seen < max_wr)
        return true;
    r.retired_seen = r.retired.load(std::memory_order_acquire);
    return r.posted - r.retired_seen < max_wr;
}

/* A WR into its ring: exactly max_wr outstanding, counting what the ring and the worker's
 * queue hold together. The worker learns of it through its doorbell ring, once per drain:
 * the flag is cleared (exchange) by the worker before it drains the rings. `what` names
 * the call and the queue for the error ("post_send: send queue"). */
template <class Wr>
Status enqueue_wr(engine::Dev &dev, const WrRing &r, uint32_t max_wr, const Wr &wr,
                  const char *what) {
    if (!ring_has_room(r, max_wr) ||
        rte_ring_sp_enqueue_elem(r.ring, const_cast<Wr *>(&wr), sizeof(Wr)) != 0)
        return Status(ENOMEM, std::string(what) + " full (" + std::to_string(max_wr) + " WRs)");
    ++r.posted;
    if (!r.doorbell.exchange(true, std::memory_order_acq_rel))
        dev.shard(r.worker).ring_doorbell(r.doorbell_value);
    return {};
}

/* Worker mode kSendInline. Verbs copies an inline payload when post_send runs (the
 * buffer is the caller's again when it returns), but the worker copies a WR's payload into
 * its WQE only when it drains the ring, later and on another core. So the payload is
 * copied here first, into a slot of the QP's own, and the WR travels with one SGE naming
 * the slot. One slot per WR the QP may have outstanding, taken in posting order: the WR
 * posted as number p uses slot p % max_wr, and the next WR with that slot (p + max_wr)
 * can only be posted once p retired (enqueue_wr's max_wr rule), which is after the
 * worker copied the slot (it drains before it retires). */
class InlineSlots {
  public:
    /* Slots of min(max_inline, kMaxInlineData) bytes for max_wr WRs (none when 0). */
    void init(uint32_t max_wr, uint32_t max_inline) {
        bytes_ = std::min(max_inline, kMaxInlineData);
        slots_ = max_wr == 0 ? 1 : max_wr;
        if (bytes_ != 0)
            buf_.assign(size_t{slots_} * bytes_, 0);
    }
    uint32_t bytes() const { return bytes_; }

    /* Into the ring: wr itself, or for an inline WR a copy of it whose payload sits in the
     * slot of WR number r.posted. */
    Status enqueue(engine::Dev &dev, const WrRing &r, uint32_t max_wr, const SendWr &wr) {
        if (!(wr.send_flags & kSendInline))
            return enqueue_wr(dev, r, max_wr, wr, "post_send: send queue");
        if (wr.opcode != WrOpcode::Send && wr.opcode != WrOpcode::SendWithImm &&
            wr.opcode != WrOpcode::SendWithInv && wr.opcode != WrOpcode::RdmaWrite &&
            wr.opcode != WrOpcode::RdmaWriteWithImm)
            return Status(EINVAL, "post_send: IBV_SEND_INLINE only with SEND and RDMA WRITE");
        uint64_t len = 0;
        for (int i = 0; i < wr.num_sge; ++i)
            len += wr.sg_list[i].length;
        if (len > bytes_)
            return Status(EINVAL, "post_send: inline data of " + std::to_string(len) +
                                      " bytes above max_inline_data " + std::to_string(bytes_));
        /* The room first: the slot of a WR that would not fit may still be read. */
        if (!ring_has_room(r, max_wr))
            return Status(ENOMEM,
                          "post_send: send queue full (" + std::to_string(max_wr) + " WRs)");
        uint8_t *slot = buf_.data() + (r.posted % slots_) * bytes_;
        SendWr staged = wr;
        const uint32_t off = mem::gather_inline(wr, slot);
        staged.sg_list[0] = {reinterpret_cast<uint64_t>(slot), off, 0};
        staged.num_sge = off != 0 ? 1 : 0;
        return enqueue_wr(dev, r, max_wr, staged, "post_send: send queue");
    }

  private:
    std::vector<uint8_t> buf_;
    uint32_t bytes_ = 0;
    uint32_t slots_ = 1;
};

/* A QP's send and receive rings. */
inline WrRing send_ring(engine::QpCtx &c, uint32_t qpn) {
    return {c.sq, c.sq_posted, c.sq_retired, c.sq_retired_seen, c.doorbell, c.worker, qpn};
}
inline WrRing recv_ring(engine::QpCtx &c, uint32_t qpn) {
    return {c.rq, c.rq_posted, c.rq_retired, c.rq_retired_seen, c.doorbell, c.worker, qpn};
}

/* The SGE count of a WR against kMaxSge and the QP's capability (`call`: "post_send"). */
inline Status check_num_sge(int num_sge, uint32_t max_sge, const char *call) {
    if (num_sge < 0 || num_sge > kMaxSge || static_cast<uint32_t>(num_sge) > max_sge)
        return Status(EINVAL,
                      std::string(call) + ": num_sge " + std::to_string(num_sge) + " out of range");
    return {};
}

} // namespace droce::api
