/* SPDX-License-Identifier: BSD-3-Clause */
/* A QP as the engine keeps it: its transport, queues, scheduling state and ports. */
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

#include "engine_cq.h"
#include "engine_qp_tx.h"
#include "engine_srq.h"
#include "rc_qp.h"
#include "sched_timer_wheel.h"
#include "ud_qp.h"

struct rte_ring;

namespace droce::engine {

struct QpCtx;

/** A QP's timer: the wheel's node and the way back to its QP. */
struct QpTimer : sched::TimerNode {
    QpCtx *qp = nullptr; /* nullptr: a PauseTimer */
};
/** A shard's per-priority PFC timers ride the same wheel: the end of a received pause
 * and the storm watchdog. qp == nullptr tells them apart in the expiry callback. */
struct PauseTimer : QpTimer {
    uint8_t prio = 0;
    bool storm = false;
};

/** A CQ as one QP's transport completes into it (rc/ud QpConfig::send_cq, recv_cq). In
 * worker mode the completion first publishes what the QP retired, so that the
 * application, which may post again as soon as it sees the completion, finds the room:
 * the port holds the QP it serves, so no completion looks its QP up by number. */
struct QpCqPort final : qp::CqSink {
    CqCtx *cq = nullptr;
    QpCtx *publish = nullptr; /* worker mode: the QP whose retired counts go first */
    Shard *shard = nullptr;   /* ... on its shard */
    bool push(const Wc &wc) override;
};

/** A QP as the engine keeps it. */
struct QpCtx {
    /* The transport: exactly one is set. Control calls that exist for one type only
     * (modify with a path, DCQCN, the GSI's sends) use these; the data path reaches
     * either through visit(). */
    std::unique_ptr<rc::Qp> qp; /* RC; nullptr for a UD QP */
    std::unique_ptr<ud::Qp> ud; /* UD (engine_ud.cpp); nullptr for an RC QP */
    SrqCtx *srq = nullptr;
    rte_ring *sq = nullptr; /* worker mode: SendWr, application -> worker */
    rte_ring *rq = nullptr; /* worker mode: RecvWr */
    CqCtx *scq = nullptr;
    CqCtx *rcq = nullptr;
    uint32_t max_send_wr = 0;
    uint32_t max_recv_wr = 0;
    uint32_t worker = 0;

    /* ---- the owning worker's scheduling state ---- */
    /* Next to the pointers above, ahead of the template: schedule() runs after every
     * packet and post, and with many QPs each line it needs is a miss. */
    QpTimer timer;               /* armed at qp->next_deadline() */
    QpCtx *ready_prev = nullptr; /* ready list: QPs with TX work, served round-robin */
    QpCtx *ready_next = nullptr;
    bool in_ready = false;
    /* ACK hold (Shard::serve_ready): on the held list (ready links, in_ready kept set), and
     * held once already, so served at its next turn. */
    bool ack_held = false;
    bool ack_waited = false;
    bool pacer_holding = false; /* counted in Shard::pacer_holding_ */
    /* kNoPrio, or the PFC priority whose pause holds this QP's next frame: parked on
     * Shard::parked_ (ready links reused) until that priority resumes. */
    uint8_t parked_prio = kNoPrio;
    uint64_t sq_drained = 0; /* WRs taken off the rings */
    uint64_t rq_drained = 0;
    QpTx tx;            /* rc::QpConfig::port */
    QpCqPort send_port; /* QpConfig::send_cq: scq */
    QpCqPort recv_port; /* QpConfig::recv_cq: rcq */

    /* ---- shared with the application (worker mode) ---- */
    /* Set by the application when it posts and the QP is not already waiting to be
     * drained; the QPN then goes into the worker's doorbell ring. */
    alignas(64) std::atomic<bool> doorbell{false};
    /* WRs that left the QP (completed, in error or flushed), published by the worker so
     * that the application admits exactly max_send_wr / max_recv_wr outstanding. */
    alignas(64) std::atomic<uint64_t> sq_retired{0};
    std::atomic<uint64_t> rq_retired{0};
    /* Application only: what it posted, and the last retired counts it read (a post
     * reads the worker's line only when these leave no room). */
    alignas(64) uint64_t sq_posted = 0;
    uint64_t rq_posted = 0;
    uint64_t sq_retired_seen = 0;
    uint64_t rq_retired_seen = 0;
    ~QpCtx();

    /** Calls f with the QP's transport, rc::Qp& or ud::Qp& (both qp::TransportQp): the
     * one place the engine tells RC and UD apart. Receive, transmit, timers, scheduling
     * and the WR rings are each written once, generic over the transport, and the RC
     * instantiation keeps its calls inline (one test of `ud` per event, as before). */
    template <class F> decltype(auto) visit(F &&f) {
        if (ud) [[unlikely]]
            return f(*ud);
        return f(*qp);
    }
    template <class F> decltype(auto) visit(F &&f) const {
        if (ud) [[unlikely]]
            return f(std::as_const(*ud));
        return f(std::as_const(*qp));
    }
};

} // namespace droce::engine
