/* SPDX-License-Identifier: BSD-3-Clause */
/* ACK hold: a QP whose only TX work is a plain ACK (the requests of this poll's RX burst
 * acknowledged) is held back for one poll instead of sending that ACK in a burst of its
 * own. The application runs between two polls (embedded mode) or posts through the
 * doorbells drained at the top of the next one (worker mode): a reply it posts meanwhile
 * then leaves in the same rte_eth_tx_burst as the ACK, which in ping-pong halves the
 * bursts on the link. An ACK waits for at most one poll: a held QP is served first in the
 * next serve_ready, whatever it has then, and is never held twice in a row. NAKs, READ
 * responses and data never wait (Qp::ack_only_tx_work).
 *
 * Embedded mode with one worker goes one step further: the post that answers a held ACK (a
 * post to the held QP itself) sends at once what the next poll would have sent first, so the
 * reply does not wait for the application's loop to come back into the engine. The frames
 * and their order are those of that next poll; only the hand-off is shorter. */
#include "engine_runtime.h"
#include "poll_gate.h"

namespace droce::engine {

bool Shard::ack_hold(QpCtx &q) {
    if (q.ack_waited || !q.visit([](const auto &t) { return t.ack_only_tx_work(); }))
        return false;
    /* in_ready stays set: schedule() (a post meanwhile) must not queue it twice. */
    q.in_ready = true;
    q.ack_held = q.ack_waited = true;
    held_.push_back(q);
    ++ec.tx_ack_held;
    return true;
}

void Shard::ack_release() {
    /* Ahead of the QPs that became ready since: they were held for their turn. */
    held_.for_each([](QpCtx &q) { q.ack_held = false; });
    ready_.splice_front(held_);
}

void Shard::answer_held(uint64_t now) {
    ++ec.tx_ack_answered;
    serve_ready(now);
    flush_tx();
}

/* The application saw the completion of the request an ACK acknowledges and may destroy
 * the QP at once (ibv_rc_pingpong's last message): the ACK must not go with the QP, or the
 * peer retransmits that request to a QP that is gone until its retries run out. */
void Shard::send_ack_before_destroy(QpCtx &q, uint64_t now) {
    if (!q.visit([](const auto &t) { return t.ack_only_tx_work(); }))
        return;
    ready_remove(q);
    budget_ = kTxQuantum;
    q.visit([&](auto &t) { t.progress(now); });
    budget_ = UINT32_MAX;
    flush_tx();
}

void Dev::answer_held(QpCtx &q) {
    Shard &s = *shards_[q.worker];
    /* Only a post to the held QP: any other post waits for the next poll as before, so
     * a stream of posts still leaves in bursts (after the first, nothing is held). One
     * worker only: with several, a worker's poll runs under its lock (control calls from
     * other threads), and TX outside it could meet one of those on the same queue. */
    if (rt_.workers() == 1) {
        drivers::PollSection gate; /* the posting thread bursts: as a poll does */
        s.answer_held(rt_.now_ns());
    }
}

} // namespace droce::engine
