/* SPDX-License-Identifier: BSD-3-Clause */
#include "qp_recv_queue.h"

#include <string>

namespace droce::qp {

RecvQueue::RecvQueue(uint32_t max_wr, uint32_t max_sge)
    : max_wr_(max_wr ? max_wr : 1), max_sge_(max_sge) {
    uint32_t n = 1;
    while (n < max_wr_)
        n <<= 1;
    ring_.resize(n);
    mask_ = n - 1;
}

Status RecvQueue::post(const RecvWr &wr) {
    if (tail_ - head_ >= max_wr_)
        return Status(ENOMEM,
                      "post_recv: receive queue full (" + std::to_string(max_wr_) + " WRs)");
    if (wr.num_sge < 0 || wr.num_sge > static_cast<int>(max_sge_) || wr.num_sge > kMaxSge)
        return Status(EINVAL, "post_recv: num_sge " + std::to_string(wr.num_sge) + " out of range");
    uint64_t len = 0;
    for (int i = 0; i < wr.num_sge; ++i)
        len += wr.sg_list[i].length;
    RecvWqe &r = ring_[tail_ & mask_];
    r.wr = wr;
    r.length = len > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(len);
    ++tail_;
    return {};
}

} // namespace droce::qp
