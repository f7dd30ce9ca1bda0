/* SPDX-License-Identifier: BSD-3-Clause */
/* An intrusive FIFO of QPs: the shard's ready list, its held-ACK list and one parked list
 * per PFC priority (engine_sched.cpp, engine_ack_hold.cpp, engine_pfc_rx.cpp).
 *
 * Why intrusive: a QP moves between these lists after packets and posts, and a list of
 * its own nodes would allocate or look the QP up. The links live in the QP (ready_prev,
 * ready_next) and a QP is on one list at a time, so every move is O(1) and an idle QP is
 * on none. T: anything with `T *ready_prev, *ready_next` (QpCtx; a plain struct in
 * tests/unit/test_engine_parts.cpp). Single-threaded: the owning worker's. */
#pragma once

#include <cstdint>

namespace droce::engine {

template <class T> class QpList {
  public:
    bool empty() const { return head_ == nullptr; }
    uint32_t size() const { return n_; }
    T *front() const { return head_; }

    /* q (on no list) to the back. */
    void push_back(T &q) {
        q.ready_next = nullptr;
        q.ready_prev = tail_;
        if (tail_)
            tail_->ready_next = &q;
        else
            head_ = &q;
        tail_ = &q;
        ++n_;
    }

    /* The first QP, taken off (its links cleared), or nullptr. */
    T *pop_front() {
        T *q = head_;
        if (q == nullptr)
            return nullptr;
        head_ = q->ready_next;
        if (head_)
            head_->ready_prev = nullptr;
        else
            tail_ = nullptr;
        q->ready_next = q->ready_prev = nullptr;
        --n_;
        return q;
    }

    /* q, which is on this list, taken off wherever it is. */
    void unlink(T &q) {
        if (q.ready_prev)
            q.ready_prev->ready_next = q.ready_next;
        else
            head_ = q.ready_next;
        if (q.ready_next)
            q.ready_next->ready_prev = q.ready_prev;
        else
            tail_ = q.ready_prev;
        q.ready_next = q.ready_prev = nullptr;
        --n_;
    }

    /* Every QP of `ahead` in front of this list's, in their order; `ahead` ends empty. */
    void splice_front(QpList &ahead) {
        if (ahead.empty())
            return;
        ahead.tail_->ready_next = head_;
        if (head_)
            head_->ready_prev = ahead.tail_;
        else
            tail_ = ahead.tail_;
        head_ = ahead.head_;
        n_ += ahead.n_;
        ahead.head_ = ahead.tail_ = nullptr;
        ahead.n_ = 0;
    }

    /* f(T &) for each QP, front to back; f must not move QPs between lists. */
    template <class F> void for_each(F &&f) const {
        for (T *q = head_; q != nullptr; q = q->ready_next)
            f(*q);
    }

  private:
    T *head_ = nullptr;
    T *tail_ = nullptr;
    uint32_t n_ = 0;
};

} // namespace droce::engine
