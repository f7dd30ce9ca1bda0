/* SPDX-License-Identifier: BSD-3-Clause */
/* A receive queue: a QP's own, or a shared receive queue (SRQ) that several QPs of one
 * worker take from. A ring of receive WQEs; no allocation after construction. */
#pragma once

#include <cstdint>
#include <vector>

#include "vocab_status.h"
#include "vocab_verbs.h"

namespace droce::qp {

struct RecvWqe {
    RecvWr wr;
    uint32_t length; /* sum of the SGE lengths */
};

class RecvQueue {
  public:
    RecvQueue(uint32_t max_wr, uint32_t max_sge);

    /** ibv_post_recv / ibv_post_srq_recv for one WR. */
    Status post(const RecvWr &wr);
    bool empty() const { return head_ == tail_; }
    uint32_t depth() const { return tail_ - head_; }
    const RecvWqe &front() const { return ring_[head_ & mask_]; }
    /** Takes the oldest WQE off the queue. */
    RecvWqe pop() { return ring_[head_++ & mask_]; }
    void clear() { head_ = tail_ = 0; }
    uint32_t max_wr() const { return max_wr_; }

  private:
    std::vector<RecvWqe> ring_;
    uint32_t mask_ = 0;
    uint32_t head_ = 0;
    uint32_t tail_ = 0;
    uint32_t max_wr_;
    uint32_t max_sge_;
};

} // namespace droce::qp
