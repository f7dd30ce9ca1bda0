/* SPDX-License-Identifier: BSD-3-Clause */
/* A shard's TX queue: frames built and not yet taken by the port, in the order they were
 * built (engine_tx.cpp).
 *
 * Why a queue of its own and not straight into rte_eth_tx_burst: frames are built one at
 * a time as QPs are served, and handed to the port in one burst per poll; what the port
 * refuses stays here, in order, for the next poll (backpressure: a full queue makes
 * transmit() say no, and the QP keeps its work, so no built frame is ever dropped).
 * Single-threaded: the owning worker's. */
#pragma once

#include <cstdint>

struct rte_mbuf;

namespace droce::engine {

/* A ring of Cap frames (a power of two): what the port leaves of a burst stays where it
 * is, and the next burst starts there. (An array whose leftovers moved to the front
 * cost a memmove of up to Cap pointers at every partial burst, which is exactly when
 * the port is behind.) One burst takes the oldest frames up to the array's end
 * (front()); a queue that wraps is offered in two runs. */
template <uint16_t Cap> class TxQueue {
    static_assert(Cap != 0 && (Cap & (Cap - 1)) == 0 && Cap <= 32768,
                  "a power of two: the 16-bit index wraps with a mask");
    static constexpr uint16_t kMask = Cap - 1;

  public:
    static constexpr uint16_t kCap = Cap;

    /* One load each: the poll loop asks empty() and full() far more often than it
     * pushes. */
    uint16_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    bool full() const { return n_ == Cap; }
    uint16_t room() const { return static_cast<uint16_t>(Cap - n_); }
    /* The most frames it ever held (tx_queue_depth_max). The queue only shrinks in
     * taken(), so its peaks are seen there, not at every push. */
    uint16_t high_water() const { return n_ > high_ ? n_ : high_; }

    /* m to the back, its room tested by the caller (before it built m). */
    void push(rte_mbuf *m) {
        q_[(head_ + n_) & kMask] = m;
        ++n_;
    }
    /* m to the back, or false (m still the caller's) when the queue is full. */
    bool try_push(rte_mbuf *m) {
        if (full())
            return false;
        push(m);
        return true;
    }

    /* The i-th oldest frame (i < size()). */
    rte_mbuf *at(uint16_t i) const { return q_[(head_ + i) & kMask]; }
    /* The oldest frames that lie one after another in the array, for the port's burst:
     * *n of them, all of them unless the queue wraps the array's end. */
    rte_mbuf **front(uint16_t *n) {
        const uint16_t h = head_ & kMask;
        const uint16_t to_end = static_cast<uint16_t>(Cap - h);
        *n = n_ < to_end ? n_ : to_end;
        return q_ + h;
    }
    /* The oldest `taken` frames (taken <= size()) are the port's now. */
    void taken(uint16_t taken) {
        if (n_ > high_)
            high_ = n_;
        n_ = static_cast<uint16_t>(n_ - taken);
        /* Drained: the next frames start at the array's start again, so a queue the port
         * keeps up with uses only its first lines, as the array it replaced did, instead
         * of walking all Cap slots one flush at a time. */
        head_ = n_ == 0 ? 0 : static_cast<uint16_t>(head_ + taken);
    }

  private:
    rte_mbuf *q_[Cap];
    uint16_t head_ = 0; /* the oldest frame is q_[head_ & kMask]; 0 whenever empty */
    uint16_t n_ = 0;    /* frames queued, from head_ on */
    uint16_t high_ = 0;
};

} // namespace droce::engine
