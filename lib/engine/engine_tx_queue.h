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
#include <cstring>

struct rte_mbuf;

namespace droce::engine {

template <uint16_t Cap> class TxQueue {
  public:
    static constexpr uint16_t kCap = Cap;

    uint16_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    bool full() const { return n_ == Cap; }
    uint16_t room() const { return static_cast<uint16_t>(Cap - n_); }
    /* The most frames it ever held (tx_queue_depth_max). */
    uint16_t high_water() const { return high_; }

    /* m to the back, its room tested by the caller (before it built m). */
    void push(rte_mbuf *m) {
        q_[n_++] = m;
        if (n_ > high_)
            high_ = n_;
    }
    /* m to the back, or false (m still the caller's) when the queue is full. */
    bool try_push(rte_mbuf *m) {
        if (full())
            return false;
        push(m);
        return true;
    }

    /* The queued frames, oldest first: size() of them, for the port's burst. */
    rte_mbuf **frames() { return q_; }
    rte_mbuf *const *frames() const { return q_; }
    /* The first `taken` frames are the port's now: the rest move to the front, in order. */
    void taken(uint16_t taken) {
        if (taken != 0 && taken < n_)
            std::memmove(q_, q_ + taken, (n_ - taken) * sizeof(q_[0]));
        n_ = static_cast<uint16_t>(n_ - taken);
    }

  private:
    rte_mbuf *q_[Cap];
    uint16_t n_ = 0;
    uint16_t high_ = 0;
};

} // namespace droce::engine
