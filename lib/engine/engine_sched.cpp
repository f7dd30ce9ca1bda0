/* SPDX-License-Identifier: BSD-3-Clause */
/* A shard's QP scheduler: the ready list of QPs with work to send, and schedule(), which
 * puts a QP on it, parks it behind a PFC pause or arms its timer. */
#include "engine_dev.h"

namespace droce::engine {

void Shard::ready_push(QpCtx &q) {
    q.in_ready = true;
    ready_.push_back(q);
}

QpCtx *Shard::ready_pop() {
    QpCtx *q = ready_.pop_front();
    if (q != nullptr)
        q->in_ready = false;
    return q;
}

void Shard::unschedule(QpCtx &q) {
    if (rx_sched_ == &q)
        rx_sched_ = nullptr; /* (only inside an RX batch; every batch ends with it null) */
    timers_.cancel(q.timer);
    if (q.pacer_holding) {
        q.pacer_holding = false;
        --pacer_holding_;
    }
    if (q.parked_prio != kNoPrio) {
        parked_[q.parked_prio].unlink(q);
        q.parked_prio = kNoPrio;
        return;
    }
    ready_remove(q);
}

void Shard::ready_remove(QpCtx &q) {
    if (!q.in_ready)
        return;
    if (q.ack_held) {
        held_.unlink(q);
        q.in_ready = q.ack_held = false;
        return;
    }
    ready_.unlink(q);
    q.in_ready = false;
}

void Shard::schedule(QpCtx &q) {
    q.visit([&](auto &t) { schedule_t(q, t); });
}

template <qp::TransportQp T> void Shard::schedule_t(QpCtx &q, T &t) {
    /* paused_prio is set only while its priority is paused (a pause ends in poll(), never
     * between a transmit and this): the QP's line is not read when nothing is paused. */
    if (paused_mask_ != 0 && q.tx.paused_prio != kNoPrio) [[unlikely]] {
        /* transmit() refused this QP's frame: its priority is paused. Park it instead of
         * serving it again and again until the pause ends (no spinning). */
        const uint8_t p = q.tx.paused_prio;
        q.tx.paused_prio = kNoPrio;
        if (q.parked_prio == kNoPrio && (paused_mask_ & (1u << p)) && t.has_tx_work())
            park(q, p);
    }
    /* neigh_held last: its line is read only when there is work, which transmit reads
     * (only an RC QP waits for its next hop: a UD address handle is resolved). */
    if (!q.in_ready && q.parked_prio == kNoPrio && t.has_tx_work() && !q.tx.neigh_held())
        ready_push(q);
    /* Lazy timers: the retransmission deadline moves later on every ACK while more is
     * outstanding, so a timer armed earlier than the QP's deadline is left alone (when it
     * fires, on_timer finds nothing due and this re-arms it); only an earlier deadline
     * re-arms. A deadline that went away (everything acknowledged) is cancelled at once:
     * O(1), where a timer left to fire would cascade through the wheel's levels first.
     * UD has neither a pacer nor deadlines: its instantiation keeps none of this. */
    if (t.pacer_holding() != q.pacer_holding) {
        q.pacer_holding = !q.pacer_holding;
        if (q.pacer_holding)
            ++pacer_holding_;
        else
            --pacer_holding_;
    }
    const qp::Time d = t.next_deadline();
    if (d == 0)
        timers_.cancel(q.timer);
    else if (!q.timer.armed() || d < q.timer.deadline)
        timers_.arm(q.timer, d);
    if (dev_.worker_rings_)
        publish_retired(q);
}

} // namespace droce::engine
