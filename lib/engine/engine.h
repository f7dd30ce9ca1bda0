/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/engine: the DPDK binding of the sans-I/O core. EAL and mempool bring-up, one
 * Dev per port (RX classify -> lib/net or lib/wire + rc::Qp, TX batching), the worker
 * loop and the command mailbox through which control operations reach the worker.
 *
 * Threading contract (shared nothing): a device is split into one Shard per worker.
 * Everything a shard holds (its QPs and their rc::Qp state, SRQs, timers, ready list,
 * TX queue, counters) is touched by exactly one thread — its worker lcore when workers
 * run, otherwise the thread calling Runtime::poll_once()/exec_on(). QPN n belongs to
 * worker n % workers. State every worker reads (MR table, zero-copy regions) changes
 * only with every worker parked (Runtime::exec_all). The application side touches only
 * the SPSC rings (SQ/RQ per QP in worker mode, one per CQ), the doorbell flags and
 * rings, and the retired counters the worker publishes. */
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <droce/droce.h>
#include <rte_cycles.h>
#include <rte_mbuf_core.h>
#include <rte_spinlock.h>

#include "drivers.h"
#include "engine_capture.h"
#include "engine_event_queue.h"
#include "engine_frame_free.h"
#include "engine_limits.h"
#include "engine_pfc_port.h"
#include "engine_qp_defaults.h"
#include "engine_qp_list.h"
#include "engine_qpn_alloc.h"
#include "engine_qpn_owner.h"
#include "engine_tx_queue.h"
#include "engine_tx_stash.h"
#include "engine_zc_registry.h"
#include "mem_mr.h"
#include "net.h"
#include "net_classify.h"
#include "net_ipv6.h"
#include "net_pfc.h"
#include "rc_qp.h"
#include "sched_timer_wheel.h"
#include "ud_qp.h"
#include "wire_packet.h"
#include "wire_template.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace droce::engine {

/* Engine-level counters (mlx5 names where mlx5 has one). Parse drops are kept apart,
 * indexed by wire::ParseResult, and named rx_drop_<parse_result_name>. */
#define DROCE_ENGINE_COUNTERS(X)                                                                   \
    X(port_rcv_packets)                                                                            \
    X(port_rcv_bytes)                                                                              \
    X(port_xmit_packets)                                                                           \
    X(port_xmit_bytes)                                                                             \
    X(tx_burst_refused)     /* rte_eth_tx_burst took fewer frames than offered (kept queued) */    \
    X(tx_queue_full)        /* transmit() refused: the shard's TX queue is full (QP retries) */    \
    X(tx_no_mbuf)           /* transmit() refused: pool empty */                                   \
    X(tx_handoff)           /* frames given to the shard that owns the single TX queue */          \
    X(tx_handoff_full)      /* ... refused by that ring: kept queued, retried */                   \
    X(tx_ack_held)          /* ACKs held one poll to leave with the next post */                   \
    X(tx_ack_answered)      /* ... sent by the post that answered them, not at the next poll */    \
    X(rx_handoff)           /* packets for a QP of another worker, passed to it over a ring */     \
    X(rx_drop_handoff_full) /* ... and dropped: that worker's ring was full */                     \
    X(rx_foreign_pool)      /* received frames another worker's pool built (zero-copy aside) */    \
    X(doorbells)            /* QPs and SRQs woken by the application (worker mode) */              \
    X(timer_expirations)    /* QP timers fired (retransmission, RNR) */                            \
    X(async_events)         /* asynchronous events queued for the application */                   \
    X(async_event_dropped)  /* ... and dropped: the application does not read them */              \
    X(tx_frame_too_big)     /* frame larger than an mbuf (MTU misconfiguration) */                 \
    X(tx_drop_reply_batch_full) /* ARP/ICMP reply dropped: batch full */                           \
    X(tx_bytes_zero_copy)       /* payload bytes attached as external buffers (not copied) */      \
    X(tx_bytes_copied)          /* payload bytes copied into the frame */                          \
    X(tx_straight)              /* one-packet requests built by the straight path (DataFrame) */   \
    X(rx_multiseg_packets)      /* chained RoCE frames accepted (headers in the first segment) */  \
    X(rx_rocev1_packets)        /* RoCEv1 frames (0x8915) accepted for one of our v1 GIDs */       \
    X(rx_fast_path)     /* small ACK, SEND / WRITE ONLY frames taken by the RX fast path */        \
    X(rx_drop_multiseg) /* chained frame not handled: headers not in the first segment, */         \
                        /* too many segments, or chained ARP/ICMP */                               \
    X(rx_drop_not_our_mac)                                                                         \
    X(rx_drop_unknown_ethertype)                                                                   \
    X(rx_drop_not_our_ip)    /* RoCE packet for another IPv4/IPv6 address */                       \
    X(rx_drop_vlan_mismatch) /* on a VLAN none of our GIDs is on, or not that of its GID */        \
    X(rx_drop_unknown_qpn)                                                                         \
    X(sq_wr_rejected) /* WR refused by the QP on the worker: error completion */                   \
    X(rq_wr_rejected)                                                                              \
    X(rtr_neigh_wait)      /* QPs that went to RTR before their next hop's MAC was known */        \
    X(rtr_neigh_resolved)  /* ... and whose frames were released when it answered */               \
    X(rtr_neigh_timeout)   /* ... and that went to ERR: no answer within arp_timeout_ms */         \
    X(tx_loopback_packets) /* frames of QPs connected to a QP of this device: to its RX */         \
    X(tx_loopback_bytes)   /* ... their bytes (never on the port: not in port_xmit_*) */           \
    X(tx_loopback_dropped) /* ... dropped: the receiving shard's ring was full */                  \
    X(rx_loopback_packets) /* looped frames received (not in port_rcv_*) */

struct EngineCounters {
#define DROCE_ENGINE_FIELD(n) uint64_t n = 0;
    DROCE_ENGINE_COUNTERS(DROCE_ENGINE_FIELD)
#undef DROCE_ENGINE_FIELD
    uint64_t rx_drop_parse[static_cast<size_t>(wire::ParseResult::Count_)] = {};
};

/** SPSC rings for the WR and completion queues come from the process heap (one
 * allocation each, cache-aligned, rte_ring_init), not from memzones: memzones are a
 * small fixed table (RTE_MAX_MEMZONE) and would cap a process at a few hundred QPs. */
rte_ring *ring_alloc(const char *name, unsigned esize, unsigned count, unsigned flags);
void ring_release(rte_ring *r);

class Dev;
class CompChannel;

/** A CQ. Worker mode: completions go from the worker to the application through an SPSC
 * ring. Embedded mode: the shard that pushes and the application that polls are the same
 * thread, so a plain array replaces the ring (engine_cq.cpp). */
struct CqCtx final {
    rte_ring *ring = nullptr;
    /* Embedded: slots[head & mask .. tail & mask), free-running counters, at most depth
     * entries (the cqe asked for; the array is the next power of two). */
    Wc *slots = nullptr;
    uint32_t mask = 0;
    uint32_t depth = 0;
    uint32_t head = 0;
    uint32_t tail = 0;
    void *user = nullptr; /* the API's CompletionQueue (named by CqErr events) */
    bool overrun = false; /* CqErr raised (once per CQ) */
    uint32_t refs = 0;    /* QPs using it; touched on the worker only */
    uint32_t worker = 0;  /* the worker that produces into it (its QPs' worker) */
    /* Completion events (engine_comp_channel.h): set while attached to a channel. */
    CompChannel *channel = nullptr;
    uint64_t channel_token = 0;
    /* The application arms (kArm*), the producer disarms when the event fires; queued:
     * the token waits in the channel (cleared when the channel hands it out). */
    alignas(64) std::atomic<uint8_t> armed{0};
    std::atomic<bool> queued{false};
    static constexpr uint8_t kArmNone = 0, kArmNext = 1, kArmSolicited = 2;
    /** Embedded mode: the array instead of a ring, room for exactly depth entries
     * (1..2^20). False when out of memory. */
    bool init_local(uint32_t depth);
    bool local() const { return slots != nullptr; }
    /** Adds wc; false when the CQ is full (the caller's QP handles the overrun). QPs
     * complete through their QpCqPort, which calls this. */
    bool push(const Wc &wc);
    int poll(Wc *wc, int max);
    /** ibv_req_notify_cq: the next completion (or, solicited_only, the next solicited or
     * unsuccessful one) added from now on raises the channel's event. The application's
     * thread; no effect without a channel. */
    void arm(bool solicited_only);
    ~CqCtx();

  private:
    void notify(const Wc &wc);
};

/* A shared receive queue; worker mode feeds it through an SPSC ring like a QP's RQ. */
struct SrqCtx {
    std::unique_ptr<qp::RecvQueue> q;
    rte_ring *ring = nullptr; /* worker mode: RecvWr, application -> worker */
    uint32_t refs = 0;        /* QPs using it */
    uint32_t worker = 0;
    uint32_t index = 0; /* in its shard's table (doorbell value) */
    uint32_t max_wr = 0;
    uint64_t drained = 0; /* worker: WRs taken off the ring */
    /* Application side of worker mode: WRs admitted, and the worker's count of WRs that
     * left the SRQ (consumed by a SEND or flushed): posted - retired <= max_wr exactly. */
    alignas(64) std::atomic<bool> doorbell{false};
    alignas(64) std::atomic<uint64_t> retired{0};
    alignas(64) uint64_t posted = 0;
    ~SrqCtx();
};

struct QpCtx;
class Shard;
inline constexpr uint8_t kNoPrio = 0xFF;

/** What became of a frame offered to a shard's TX (Shard::transmit, QpTx::send). Anything
 * but Sent and Dropped leaves the frame's work with the QP, which the caller acts on. */
enum class TxStatus : uint8_t {
    Sent,      /* in the TX queue */
    Dropped,   /* can never be sent (larger than an mbuf): counted; the transport recovers */
    Quantum,   /* the QP's packets for this turn are used up: the next ready QP's turn */
    Paused,    /* the frame's PFC priority is paused (TxResult::prio): park the QP */
    QueueFull, /* the TX queue is full (backpressure): served again once the port took some */
    NoMbuf,    /* the TX pool is empty */
    NoRoute,   /* the next hop's MAC is not known yet (QpTx::kNeighHeld) */
};
struct TxResult {
    TxStatus status;
    uint8_t prio = kNoPrio; /* Paused: the priority to park the sender on (none: a CNP) */
    /** The transport may forget the frame (sent, or dropped for good). */
    bool taken() const { return status <= TxStatus::Dropped; }
};

/** A QP's way out: its shard's TX path with the QP's own header template, so that the
 * Ethernet/IP/UDP headers are prebuilt once per path instead of once per frame. */
struct QpTx final : qp::TxPort {
    Shard *shard = nullptr;
    /* Why this QP's frames do not go to the shard's TX queue as usual: 0, or kNeighHeld
     * and/or kLoopback. One byte, so that send() tests both with one branch.
     * kNeighHeld: non-blocking RTR (engine_neigh_wait.cpp), the next hop's MAC is not
     * known yet, so nothing leaves; the QP keeps its work and is not scheduled until it is.
     * kLoopback: connected to a QP of this very device (the destination GID is ours):
     * every frame goes to the RX ring of loop_to, the shard owning the destination QP,
     * never to the port (Shard::transmit_loopback). */
    static constexpr uint8_t kNeighHeld = 1, kLoopback = 2;
    uint8_t detour = 0;
    bool neigh_held() const { return (detour & kNeighHeld) != 0; }
    void set_neigh_held(bool on) {
        detour = static_cast<uint8_t>(on ? detour | kNeighHeld : detour & ~kNeighHeld);
    }
    /* kNoPrio, or the paused priority that refused this QP's last frame: Shard::schedule
     * parks the QP on it instead of serving it again and again until the pause ends. */
    uint8_t paused_prio = kNoPrio;
    Shard *loop_to = nullptr; /* kLoopback: the shard of the destination QP */
    wire::HeaderTemplate tmpl;
    /** The frame to the shard's TX, or why not (NoRoute while neigh_held()). */
    TxResult send(const wire::FrameSpec &frame);
    bool transmit(const wire::FrameSpec &frame) override; /* send(), acted on */
    /* The straight path (Shard::send_straight); Unserved wherever send() would not take
     * the frame to the shard's TX queue or a loopback ring as usual. */
    Straight transmit_data(const wire::DataFrame &d) override;
};
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

/* PFC state counters of a shard (Shard::counters names them as mlx5's ethtool -S). The
 * per-priority pause state (duration, transitions, storms) is counted by shard 0 only:
 * every shard holds the same pause (the frame is forwarded to all), so a sum over shards
 * would multiply it. */
struct PfcCounters {
    uint64_t rx_pause[net::kPfcPriorities] = {};      /* rx_prioN_pause: frames with bit N */
    uint64_t rx_pause_ns[net::kPfcPriorities] = {};   /* rx_prioN_pause_duration (us) */
    uint64_t rx_transition[net::kPfcPriorities] = {}; /* rx_prioN_pause_transition */
    uint64_t tx_pause[net::kPfcPriorities] = {};      /* droce sends no pause (yet) */
    uint64_t tx_pause_ns[net::kPfcPriorities] = {};
    uint64_t rx_result[static_cast<size_t>(net::PfcResult::Count_)] = {};
    uint64_t tx_held = 0;    /* frames refused because their priority was paused */
    uint64_t qps_parked = 0; /* QPs parked until their priority resumed */
    uint64_t storms = 0;     /* pauses longer than the watchdog */
    uint64_t tx_nombuf = 0;  /* a pause droce meant to send found no mbuf or TX slot */
    uint64_t other_prio = 0; /* pauses of a priority that is not the lossless one */
};

/** A QP as the engine keeps it. */
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
    /* Application only. */
    alignas(64) uint64_t sq_posted = 0;
    uint64_t rq_posted = 0;
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

/* engine_cc.cpp: the public DCQCN types and lib/cc's. */
DcqcnState to_dcqcn_state(const rc::CcState &c);
/** Line rate of a port from rte_eth_link::link_speed (Mb/s; none/unknown: 100 Gb/s). */
uint64_t line_rate_from_link(uint32_t link_speed_mbps);

class Runtime;
class Dev;
struct LinkWatch;

/** One worker's share of a device: its RX and TX queue of the port, the QPs, CQs and
 * SRQs it owns, its timers, ready list, TX queue and counters. Only that worker (or,
 * in embedded mode, the application's poll thread) touches a Shard, except the MP
 * rings (doorbells, handoffs) through which others reach it. */
/* Cache-line aligned (size and start): the shards of a device are allocated one after
 * another, and a line holding the end of one and the start of the next would be written
 * by two workers. */
class alignas(64) Shard final : public qp::TxPort, public qp::AsyncEventSink {
  public:
    Shard(Dev &dev, uint32_t index, uint32_t workers, uint32_t max_qps);
    ~Shard() override;
    Shard(const Shard &) = delete;
    Shard &operator=(const Shard &) = delete;

    uint32_t index() const { return index_; }
    /* The port queues this worker polls and sends on (UINT16_MAX: none, worker 0 serves). */
    uint16_t rx_queue() const { return rxq_; }
    uint16_t tx_queue() const { return txq_; }
    /** One iteration: doorbells, handoffs, RX, timers, ready QPs, TX. Returns packets
     * handled (received + sent); *work gets everything done, for idle detection. */
    uint32_t poll(uint64_t now, uint32_t *work);
    bool transmit(const wire::FrameSpec &frame) override;
    /** A frame with the sender's header template (QpTx) into the TX queue, or why not. */
    TxResult transmit(const wire::FrameSpec &frame, wire::HeaderTemplate &tmpl);
    /** The same frame for a QP of this device (QpTx::loopback): built as for the port,
     * then handed to the RX ring of `to` (the destination QP's shard, maybe this one),
     * which receives it at its next poll. Never sent recursively from inside a TX. */
    TxResult transmit_loopback(const wire::FrameSpec &frame, wire::HeaderTemplate &tmpl, Shard &to);
    /* A DataFrame (wire_data_template.h) from a QP's template into the TX queue, or to
     * `to`'s RX ring: Unserved where transmit() would do more than copy one frame (a
     * paused priority, zero-copy) or the template has not learnt the QP's headers (the
     * mbuf taken for it then goes back: once per path). */
    qp::TxPort::Straight send_straight(const wire::DataFrame &d, const wire::HeaderTemplate &tmpl);
    qp::TxPort::Straight send_straight_loopback(const wire::DataFrame &d,
                                                const wire::HeaderTemplate &tmpl, Shard &to);
    /** Makes q's frames loop to the shard of dest_qpn (on: true) or go to the port again.
     * On q's worker; a single-worker shard starts polling its RX ring from then on. */
    void set_loopback(QpCtx &q, bool on, uint32_t dest_qpn);
    /** A QP's asynchronous event: to the device's event ring (no allocation, no lock). */
    void on_async_event(const qp::AsyncEvent &ev) override;
    /** RX of one frame (the engine owns m afterwards). Exposed for benchmarks. */
    void rx_one(rte_mbuf *m, uint64_t now);
    /** rx_one; Cap: a frame accepted for a QP is also copied to the capture. found: the
     * QpCtx the prefetch pipeline found for m (prefetch_ctx), or nullptr. */
    template <bool Cap> void rx_one_t(rte_mbuf *m, uint64_t now, QpCtx *found = nullptr);
    /* rx_one_t for a frame its fast path does not take: classified, then to its handler. */
    template <bool Cap> void rx_classified(rte_mbuf *m, uint64_t now);
    /** rx_one_t's tail: a frame parsed (P: a ParsedPacket, or the fast parse's
     * SmallFrame), for our address, to its QP. */
    template <bool Cap, class P>
    void rx_deliver(rte_mbuf *m, const P &pkt, uint32_t len, uint64_t now, QpCtx *found = nullptr);
    /** The live QP of this shard pkt is for, or nullptr when the frame went elsewhere
     * (freed and counted, or handed to its owner). */
    template <class P> QpCtx *rx_find_qp(rte_mbuf *m, const P &pkt, uint32_t len);
    /** Offers the TX queue to the port; frames it refuses stay queued, in order. */
    uint32_t flush_tx();
    /** Embedded mode, the application just posted to a QP whose ACK is held: what the
     * next poll would send first (the ready QPs, held ACKs ahead) leaves now instead. */
    void answer_held(uint64_t now);
    /** Before q goes (Dev::destroy_qp): its ACK, held or queued, leaves now
     * (engine_ack_hold.cpp). */
    void send_ack_before_destroy(QpCtx &q, uint64_t now);
    /** After anything touched a QP (packet, posted WR, timer, modify): ready list,
     * timer and the retired counts the application side reads. */
    void schedule(QpCtx &q);
    /** The application rang a doorbell for the QPN (worker mode; MP, any thread). */
    void ring_doorbell(uint32_t value);
    /** Drops the QP from the ready list and the timer wheel (before it is destroyed). */
    void unschedule(QpCtx &q);
    /** Worker mode: the retired counts of q's queues (and its SRQ's), for the
     * application's admission check. */
    void publish_retired(QpCtx &q);
    void publish_srq(SrqCtx &s);

    size_t num_qps() const { return nqps_; }
    size_t ready_qps() const { return ready_.size(); }
    /** QPs whose data waits for their pacer's timer: the worker must not sleep then
     * (an idle sleep of tens of µs would overshoot the departure and cost rate). */
    uint32_t pacer_holding() const { return pacer_holding_; }
    size_t armed_timers() const { return timers_.size(); }
    uint32_t tx_queue_depth() const { return tx_.size(); }
    /** This shard's counters (its worker's view). */
    std::vector<std::pair<std::string, uint64_t>> counters() const;

    /** A received PFC frame's pauses (the port's, every shard applies them). */
    void on_pfc(const net::PfcFrame &f, uint64_t now);
    uint8_t paused_mask() const { return paused_mask_; }
    const PfcCounters &pfc_counters() const { return pfc_; }

    std::vector<std::unique_ptr<SrqCtx>> srqs; /* by SrqCtx::index */
    EngineCounters ec;
    net::NetCounters nc;
    rc::Counters rcc;
    ud::Counters udc; /* this shard's UD QPs (named ud_*) */
    uint32_t nqps_ = 0;

  private:
    friend class Dev;
    /* m to the TX queue, false (m still the caller's) when it is full. */
    bool queue_tx(rte_mbuf *m) { return tx_.try_push(m); }
    void ready_push(QpCtx &q);
    QpCtx *ready_pop();
    uint32_t drain_doorbells();
    uint32_t drain_handoff(uint64_t now);
    uint32_t serve_ready(uint64_t now);
    uint32_t drain_rings(QpCtx &q);
    uint32_t drain_srq(SrqCtx &s);
    /* schedule() and drain_rings() for q's transport t (QpCtx::visit). */
    template <qp::TransportQp T> void schedule_t(QpCtx &q, T &t);
    template <qp::TransportQp T> uint32_t drain_rings_t(QpCtx &q, T &t);
    void ud_counters(std::vector<std::pair<std::string, uint64_t>> &v) const;
    /* 1: built (*out), 0: no mbuf, -1: not eligible (copy it instead). */
    int transmit_zc(const wire::FrameSpec &frame, wire::HeaderTemplate &tmpl, rte_mbuf **out);
    /* An mbuf for a copied frame (from the stash where the peer reads TX in place). */
    rte_mbuf *alloc_tx(); /* engine_tx.cpp, inline there */
    /* m to `to`'s RX ring (loopback), counted; false: the ring was full, m is freed. */
    bool loop_to(rte_mbuf *m, Shard &to);
    /* send_straight*'s frame in an mbuf, or nullptr and why (Blocked: no mbuf, Unserved:
     * the template has not learnt the QP's headers). */
    rte_mbuf *straight_frame(const wire::DataFrame &d, const wire::HeaderTemplate &tmpl,
                             qp::TxPort::Straight *why); /* engine_tx.cpp, inline there */
    /* A frame into an mbuf (zero-copy only if zc), for transmit*: the mbuf, or nullptr
     * with *why (NoMbuf, Dropped). */
    rte_mbuf *build_tx(const wire::FrameSpec &frame, wire::HeaderTemplate &tmpl, bool zc,
                       TxStatus *why);
    /* RX after the fast path (engine_rx.cpp): by net::classify_frame's verdict. */
    template <bool Cap> void rx_roce(rte_mbuf *m, uint16_t vid, uint64_t now);
    void rx_arp(rte_mbuf *m, uint32_t l2, uint64_t now);
    void rx_icmp(rte_mbuf *m, uint32_t l2);
    void count_rx_drop(net::FrameDrop why);
    wire::ParseResult parse_chain(rte_mbuf *m, wire::ParsedPacket &pp, wire::ByteSpan *spans);
    void handoff(uint32_t owner, rte_mbuf *m);
    void rx_burst(rte_mbuf **rx, uint16_t n, uint64_t now);
    template <bool Cap> void rx_handoff(void **objs, unsigned k, uint64_t now);
    /* Capture (engine_capture.cpp): the capture-on variants of the RX burst and the
     * copies on RX (after classification) and TX (before rte_eth_tx_burst). */
    void rx_burst_captured(rte_mbuf **rx, uint16_t n, uint64_t now);
    void capture_rx(const rte_mbuf *m);
    void capture_rx_flush();
    void capture_tx();
    QpCtx *prefetch_ctx(rte_mbuf *m, const QpCtx *prev) const;
    /* Every cache line of m's first kRxPrefetchBytes. */
    static void prefetch_frame(const rte_mbuf *m);
    void rx_mac_control(rte_mbuf *m, uint64_t now, bool forwarded);
    /* ICMPv6 (ND, echo) on worker 0, where the IPv6 neighbour cache lives (engine_l3.cpp). */
    void rx_icmp6(rte_mbuf *m, uint8_t *p, uint32_t len, size_t l2, uint64_t now);
    uint8_t frame_prio(const wire::FrameSpec &f) const;
    void ready_remove(QpCtx &q);
    bool ack_hold(QpCtx &q);
    void ack_release();
    void park(QpCtx &q, uint8_t prio);
    void resume(uint8_t prio, uint64_t now);
    void on_pause_timer(PauseTimer &t, uint64_t now);
    /* PFC sent when this shard's RX queue fills (engine_pfc_tx.cpp) */
    void pfc_tx_check(uint16_t nrx, uint64_t now);
    uint32_t parked_qps() const;
    bool pfc_tx_send(uint16_t quanta);

    Dev &dev_;
    uint32_t index_;
    uint16_t rxq_;                  /* the port's RX queue this shard polls; UINT16_MAX: none */
    uint16_t txq_;                  /* its TX queue; UINT16_MAX: through shard 0's tx_in_ ring */
    rte_ring *doorbells_ = nullptr; /* MP/SC: QPNs and SRQ indices with posted WRs */
    rte_ring *rx_in_ = nullptr;     /* MP/SC: mbufs for this shard's QPs from others */
    rte_ring *tx_in_ = nullptr;     /* shard 0 of a port with fewer TX queues: frames */
    /* Other shards may hand frames in (more than one worker, or tx_in_): else poll()
     * skips the two ring checks, a fixed cost of every poll. */
    bool handoffs_ = true;
    sched::TimerWheel timers_;
    wire::HeaderTemplate tmpl_; /* for transmit() without a QP's own (QpTx) */
    QpList<QpCtx> ready_;       /* QPs with TX work, served round-robin (engine_sched.cpp) */
    /* QPs whose only TX work was an ACK, held for one poll (engine_ack_hold.cpp). */
    QpList<QpCtx> held_;
    uint32_t pacer_holding_ = 0;
    uint32_t budget_ = UINT32_MAX; /* packets the QP being served may still emit */
    rte_mempool *pool_;            /* this worker's mbufs (Runtime::pool(index)) */
    /* ---- PFC: received pauses (engine_dev.cpp, "PFC") ---- */
    uint8_t paused_mask_ = 0;     /* bit n: priority n is paused */
    uint8_t storm_mask_ = 0;      /* bit n: priority n's pauses are ignored (storm, see on_pfc) */
    wire::AckIcrcCache ack_icrc_; /* RX fast path: ICRC of the last ACK's fixed part */
    QpList<QpCtx> parked_[net::kPfcPriorities]; /* QPs held by a paused priority */
    uint64_t paused_since_[net::kPfcPriorities] = {};
    PauseTimer pause_end_[net::kPfcPriorities];
    PauseTimer pause_storm_[net::kPfcPriorities];
    PfcCounters pfc_;
    bool pfc_tx_paused_ = false;  /* our XOFF stands */
    uint64_t pfc_tx_sent_at_ = 0; /* last XOFF, for the refresh */
    uint64_t pfc_tx_since_ = 0;   /* start of the pause time not yet counted */
    TxQueue<kTxQueueCap> tx_;     /* built frames the port has not taken (engine_tx_queue.h) */
    /* Received frames the transport is done with, freed together at the end of the burst. */
    FrameFreeBatch<kRxBurst> rx_done_;
    /* The QP the last delivered frame went to, not yet scheduled: a burst's run of frames
     * for one QP (one QP's WRITEs arrive back to back) is scheduled once, when the run
     * ends, not after every frame. Nothing between two deliveries reads what schedule()
     * writes (the ready list, the timer), and every RX batch ends in finish_rx(). */
    QpCtx *rx_sched_ = nullptr;
    void schedule_after_rx(QpCtx &q) {
        if (rx_sched_ == &q)
            return;
        if (rx_sched_ != nullptr)
            schedule(*rx_sched_);
        rx_sched_ = &q;
    }
    /* The end of an RX batch: the frames go back to their pool, the last run's QP is
     * scheduled. */
    void finish_rx() {
        rx_done_.flush();
        if (rx_sched_ != nullptr) {
            QpCtx &q = *rx_sched_;
            rx_sched_ = nullptr;
            schedule(q);
        }
    }
    TxStash tx_stash_; /* transmit()'s copied frames (engine_tx_stash.h) */
    QpnAllocator qpns_; /* this shard's residue class (qpn % workers == index) */
    /* ---- capture (engine_capture.cpp): set on this shard's worker only ---- */
    Capture *cap_ = nullptr;   /* nullptr: capture off (one branch per burst) */
    uint64_t cap_tx_mark_ = 0; /* see capture_tx() */
    uint16_t ncap_rx_ = 0;
    rte_mbuf *cap_rx_[kRxBurst];

  public:
    /* Last: IPv6 host counters are off the data path (kept out of its cache lines). */
    net::Net6Counters nc6;
};

/* Inline: the path of every frame a QP sends (QpTx::transmit, engine_tx.cpp). */
inline TxResult QpTx::send(const wire::FrameSpec &frame) {
    if (detour != 0) [[unlikely]] {
        if (neigh_held())
            return {TxStatus::NoRoute}; /* no MAC to send to yet: the QP keeps the frame's work */
        return shard->transmit_loopback(frame, tmpl, *loop_to);
    }
    return shard->transmit(frame, tmpl);
}

inline qp::TxPort::Straight QpTx::transmit_data(const wire::DataFrame &d) {
    if (detour != 0) [[unlikely]] {
        if (neigh_held())
            return Straight::Unserved; /* transmit() says why nothing leaves */
        return shard->send_straight_loopback(d, tmpl, *loop_to);
    }
    return shard->send_straight(d, tmpl);
}

/** One DPDK port as a RoCEv2 device, split into one Shard per worker. */
class Dev final {
  public:
    /* queue_stride: worker w's queues are w * queue_stride (drivers::Caps::queue_stride). */
    Dev(Runtime &rt, uint16_t port, std::string name, const net::Iface &ifc, uint32_t eth_mtu,
        uint32_t arp_timeout_ms, uint32_t max_qps, uint32_t workers, uint16_t nrxq, uint16_t ntxq,
        uint16_t queue_stride = 1);
    ~Dev();
    Dev(const Dev &) = delete;
    Dev &operator=(const Dev &) = delete;

    /* ---- identity (immutable after open: any thread) ---- */
    const std::string &name() const { return name_; }
    uint16_t port_id() const { return port_; }
    const net::Iface &iface() const { return ifc_; }
    const net::GidTable &gids() const { return gids_; }
    uint32_t eth_mtu() const { return eth_mtu_; }
    uint32_t active_mtu() const; /* bytes */
    uint32_t arp_timeout_ms() const { return arp_timeout_ms_; }
    uint32_t max_qps() const { return max_qps_; }
    uint32_t workers() const { return static_cast<uint32_t>(shards_.size()); }
    uint16_t rx_queues() const { return nrxq_; }
    uint16_t tx_queues() const { return ntxq_; }
    /** What new QPs take from the configuration (engine_qp_defaults.h): set once at
     * open, before any QP exists. */
    QpDefaults &qp_defaults() { return qpd_; }
    const QpDefaults &qp_defaults() const { return qpd_; }
    uint64_t line_rate_bps() const { return qpd_.line_rate_bps; }
    /** PFC as configured at open (engine_pfc_port.h); set before any worker polls. */
    PfcSettings &pfc() { return pfc_; }
    const PfcSettings &pfc() const { return pfc_; }
    /** The port's adapter and capabilities, and what its steering set up (droce-info). */
    void set_port_info(drivers::Caps caps, drivers::SteerReport steer) {
        caps_ = std::move(caps);
        steer_ = std::move(steer);
    }
    const drivers::Caps &caps() const { return caps_; }
    const drivers::SteerReport &steering() const { return steer_; }
    Shard &shard(uint32_t w) { return *shards_[w]; }
    const Shard &shard(uint32_t w) const { return *shards_[w]; }
    /** The worker that owns a QPN. */
    uint32_t owner(uint32_t qpn) const { return owner_(qpn); }

    /* ---- control: on the owning worker (Runtime::exec_on) unless said otherwise ---- */
    /** On the worker of scq (== rcq's, == srq's). */
    Result<uint32_t> create_qp(uint32_t pd, const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq,
                               rte_ring *sq, rte_ring *rq, QpCtx **out, SrqCtx *srq = nullptr);
    /** A UD QP (engine_ud.cpp), on the worker of scq (== rcq's). fixed_qpn 1 binds it to
     * QP1, the GSI QP a CM layer uses (see engine_gsi.h); 0 allocates a QPN as for RC.
     * In worker mode sq carries SendWr with the UD fields (ah, remote_qpn, remote_qkey). */
    Result<uint32_t> create_ud_qp(uint32_t pd, const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq,
                                  rte_ring *sq, rte_ring *rq, QpCtx **out, uint32_t fixed_qpn = 0);
    SrqCtx *create_srq(uint32_t worker, uint32_t max_wr, uint32_t max_sge, rte_ring *ring);
    /** False (and nothing done) while QPs still use it. */
    bool destroy_srq(SrqCtx *s);
    /** Frees the QPN (after quarantine); the QP's rings are freed with it. */
    void destroy_qp(uint32_t qpn);
    /** On the owning worker only (or with every worker parked). */
    QpCtx *qp(uint32_t qpn) { return qpn < max_qps_ ? qps_[qpn].get() : nullptr; }
    /** Neighbour resolution step (worker 0: ARP lives there); sends the request itself
     * when one is due. */
    net::ResolveStep resolve(uint32_t ip, uint64_t now, net::Mac *mac);
    /** The same for IPv6 (neighbour solicitation). engine_l3.cpp. */
    net::ResolveStep resolve6(const uint8_t ip[16], uint64_t now, net::Mac *mac);
    /** IPv6 addresses, gateways, VLAN and the forced traffic class / hop limit of cfg
     * (set once at open, before any QP exists): rebuilds the GID table. */
    Status set_l3(const DeviceConfig &cfg);
    const net::Iface6 &iface6() const { return ifc6_; }
    uint16_t vlan() const { return vlan_; }
    /** vid is the VLAN of one of our GIDs besides the port's (an IPv6 address's "@VID"). */
    bool gid_vlan(uint16_t vid) const {
        for (uint32_t i = 0; i < ngid_vlans_; ++i)
            if (gid_vlans_[i] == vid)
                return true;
        return false;
    }
    int force_tclass() const { return force_tclass_; }
    int force_hop_limit() const { return force_hop_limit_; }
    /* MR table and zero-copy regions are read by every worker: change them only with
     * every worker parked (Runtime::exec_all). */
    mem::MrTable &mrs() { return mrs_; }
    const mem::MrTable &mrs() const { return mrs_; }
    /** MR registration with the zero-copy hook (extmem + DMA map where the port needs it). */
    Result<mem::MemoryRegion> reg_mr(uint32_t pd, const void *addr, uint64_t length,
                                     uint32_t access);
    /** Key invalid at once; *outstanding = zero-copy mbufs of the region still out (the
     * region's memory must not go away before they are back: see zc_reap). */
    Status dereg_mr(uint32_t key, uint32_t *outstanding);
    /** Releases deregistered regions whose mbufs are all back; true when the one of key
     * (if any) is gone. give_up: keep it alive for good and count a timeout. */
    bool zc_reap(uint32_t key, bool give_up = false);
    /** Zero-copy: the port's reach and threshold (configure at open), the regions. */
    ZcRegistry &zero_copy() { return zc_; }
    const ZcRegistry &zero_copy() const { return zc_; }
    /** Every counter, all shards summed (every worker parked, or inline). */
    std::vector<std::pair<std::string, uint64_t>> counters() const;
    /** Port-level counters and gauges (any thread). */
    std::vector<std::pair<std::string, uint64_t>> port_counters() const;
    /** Sums per-shard snapshots (Shard::counters) and adds the port-level ones. */
    std::vector<std::pair<std::string, uint64_t>>
    merge_counters(const std::vector<std::vector<std::pair<std::string, uint64_t>>> &shards) const;
    /** RSS on: the port spreads IPv4/UDP over its RX queues with `key` (40 bytes) and a
     * redirection table of reta_size entries. */
    void set_rss(const uint8_t *key, uint32_t reta_size);
    bool rss() const { return rss_; }
    /** The UDP source port for a QP's packets to dst_ip: with RSS, one that lands them on
     * the peer's queue for dest_qpn's worker (assuming the peer is a droce with as many
     * workers, its RSS key and a default redirection table); else `fallback`. */
    uint16_t udp_sport_for(uint32_t dst_ip, uint32_t dest_qpn, uint16_t fallback) const;
    /** Schedules q on its worker (after a control call or an embedded-mode post). */
    void touch(QpCtx &q) { shards_[q.worker]->schedule(q); }
    /** An embedded-mode post: touch(q), and when q's ACK is held the reply and that ACK
     * leave now (answer_held, engine_ack_hold.cpp). Inline: every other post pays only
     * the test of a flag on the line schedule() just wrote. */
    void posted(QpCtx &q) {
        /* A post adds send work and changes nothing else schedule() reads (deadlines,
         * pacer, parking): a QP already queued for TX stays as it is. perftest-style
         * loops post a burst of WRs at a time, and all but the first skip the call
         * (3 ns a message of the 64 B write_bw client). */
        if (q.in_ready && !q.ack_held && !worker_rings_)
            return;
        shards_[q.worker]->schedule(q);
        if (q.ack_held) [[unlikely]]
            answer_held(q);
    }
    void answer_held(QpCtx &q);
    /** The oldest pending asynchronous event (any thread). */
    bool next_event(EngineEvent *ev) { return events_.pop(ev); }
    /** The same, waiting unless event_fd() is non-blocking: 0 or an errno. */
    int wait_event(EngineEvent *ev) { return events_.wait(ev); }
    /** Readable while asynchronous events wait (ibv_context::async_fd). */
    int event_fd() const { return events_.fd(); }
    /** Per live QP of worker w: its QPN and a one-line state summary. On worker w. */
    std::vector<std::pair<uint32_t, std::string>> qp_summaries(uint32_t w) const;
    size_t num_qps() const;
    void retire_cq(std::unique_ptr<CqCtx> cq) { retired_cqs_.push_back(std::move(cq)); }
    /** Runs a function on worker w (Runtime::exec_on, or exec_detached from the
     * telemetry thread); false when the worker did not take it. */
    using RunOn = std::function<bool(uint32_t, std::function<void()>)>;
    /** Capture of the device's traffic to a pcapng file (engine_capture.cpp); snaplen 0
     * = whole frames. Any thread; each worker starts/stops copying through run_on. */
    Status capture_start(const std::string &path, uint32_t snaplen, const RunOn &run_on);
    /** DeviceConfig::capture at open_device, before any worker polls the device (the
     * shards are set inline); "open_device: why" on failure. */
    Status capture_at_open(const std::string &path, uint32_t snaplen);
    Status capture_stop(const RunOn &run_on);
    /** The file being written, or "" (any thread). */
    std::string capture_path() const;
    /** capture_* counters (any thread). */
    void capture_counters(std::vector<std::pair<std::string, uint64_t>> &v) const;
    /* ---- a port the host hands over (engine_hosted.cpp) ---- */
    /** The host configured and started the port: droce polls rxq/txq only, allocates its
     * frames from pool, and never reconfigures, stops or closes the port. Before any QP. */
    void set_hosted(uint16_t rxq, uint16_t txq, rte_mempool *pool);
    bool hosted() const { return hosted_; }

    /* ---- non-blocking RTR (engine_neigh_wait.cpp): on worker 0, for its QPs ---- */
    /** The QP went to RTR while its next hop was unresolved (ip: IPv4 host order, or
     * ip6): its frames are held until the neighbour answers, then its path gets the MAC;
     * no answer by deadline_ns puts it in ERR (QpFatal event). Replaces a former wait. */
    void neigh_hold(uint32_t qpn, bool v4, uint32_t ip, const uint8_t ip6[16],
                    uint64_t deadline_ns);
    /** Forgets qpn's wait (a new path was given, or the QP is destroyed). */
    void neigh_unhold(uint32_t qpn);
    /** Worker 0, once per poll while QPs wait: resolves, releases or fails them. */
    void neigh_step(uint64_t now);
    bool neigh_waiting() const { return !neigh_wait_.empty(); }
    /** DeviceConfig::rtr_nonblocking. */
    bool rtr_nonblocking() const { return rtr_nonblocking_; }
    void set_rtr_nonblocking(bool on) { rtr_nonblocking_ = on; }

    /** Ports started, rings drained (worker-mode rings of QPs). */
    void set_worker_rings(bool on) { worker_rings_ = on; }
    bool worker_rings() const { return worker_rings_; }

    /* ---- link state (engine_link.cpp): control path, on the EAL alarm thread ---- */
    /** Starts the periodic link check: PortErr/PortActive events; on a bonding port, the
     * active member followed (failover counted, gratuitous ARP). Once, after open. */
    void watch_link();
    /** Stops it (before the port is stopped). */
    void unwatch_link();
    /** Queues an asynchronous event for the application (any thread). */
    bool push_event(const EngineEvent &e);
    /** On worker 0: a gratuitous ARP for our address (after a failover). */
    void send_garp();
    /** On worker 0, asked by the link watch (Caps::reconnect_by_restart): stops and starts
     * the port while the EAL's interrupt thread is held, so that it connects again. A start
     * that fails leaves the port stopped and unpolled until a later try succeeds. */
    void restart_port();
    /** link_* counters (any thread). */
    void link_counters(std::vector<std::pair<std::string, uint64_t>> &v) const;

    /* ---- data path (single-worker convenience: shard 0, for benchmarks/embedded) ---- */
    uint32_t poll(uint64_t now, uint32_t *work) { return shards_[0]->poll(now, work); }
    void rx_one(rte_mbuf *m, uint64_t now) { shards_[0]->rx_one(m, now); }
    uint32_t flush_tx() { return shards_[0]->flush_tx(); }

  private:
    friend class Shard;
    /* The end of create_qp and create_ud_qp: the rings, CQs and worker into the built
     * QpCtx, CQ references taken, and the QPN's table slot filled. Returns qpn. */
    uint32_t install_qp(std::unique_ptr<QpCtx> ctx, uint32_t qpn, uint32_t w,
                        const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq, rte_ring *sq, rte_ring *rq,
                        QpCtx **out);
    void send_arp_request(uint32_t ip);
    void send_ns(const uint8_t ip[16]);

    Runtime &rt_;
    uint16_t port_;
    std::string name_;
    net::Iface ifc_;
    net::GidTable gids_;
    net::NeighTable neigh_; /* worker 0 */
    uint32_t eth_mtu_;
    uint32_t arp_timeout_ms_;
    uint32_t max_qps_;
    uint16_t nrxq_, ntxq_;
    uint16_t queue_stride_;
    rte_mempool *tx_pool_; /* frames we build: the engine's pool, or the host's */
    bool worker_rings_ = false;
    /* Worker 0: restart_port's start failed; the port is not polled (a stopped port's burst
     * functions are ethdev's dummies, which complain). */
    bool port_stopped_ = false;
    LinkWatch *link_ = nullptr; /* engine_link.cpp */
    uint16_t vlan_ = 0;         /* VID; 0 = untagged (read per frame: in the padding here) */

    mem::MrTable mrs_;
    QpDefaults qpd_;
    PfcSettings pfc_;
    drivers::Caps caps_;
    drivers::SteerReport steer_;
    /* Indexed by QPN; entry n belongs to worker n % workers and only it touches it. */
    std::vector<std::unique_ptr<QpCtx>> qps_;
    std::vector<std::unique_ptr<Shard>> shards_;
    QpnOwner owner_; /* qpn % workers */
    std::vector<std::unique_ptr<CqCtx>> retired_cqs_;
    EventQueue events_; /* workers and the link watch -> the application's threads */
    bool rss_ = false;
    uint8_t rss_key_[40] = {};
    uint32_t reta_size_ = 0;

    ZcRegistry zc_; /* zero-copy regions by MR slot (engine_zc_registry.h) */
    /* IP policy (engine_l3.cpp), last: only IPv6 frames and the control path read it. */
    net::Iface6 ifc6_;        /* link-local + configured IPv6 addresses */
    net::NeighTable6 neigh6_; /* worker 0 */
    int force_tclass_ = -1;
    int force_hop_limit_ = -1;
    /* The GIDs' VLANs other than vlan_ (per-address "@VID"): frames on them pass the
     * port's VLAN filter and are then matched against their GID's VLAN. */
    uint16_t gid_vlans_[net::kMaxIp6Addrs] = {};
    uint32_t ngid_vlans_ = 0;

    bool hosted_ = false;
    bool rtr_nonblocking_ = false;
    struct NeighWait {
        uint32_t qpn;
        bool v4;
        uint32_t ip;
        uint8_t ip6[16];
        uint64_t deadline;
    };
    std::vector<NeighWait> neigh_wait_; /* worker 0 */

    /* Capture: declared last, so the first member destroyed (its file is closed before
     * the counters and the lock go). */
    mutable std::mutex capture_mu_;
    CaptureCounters capture_ctr_;
    std::shared_ptr<Capture> capture_;
};

/** EAL, mbuf pool, devices, workers. */
class Runtime {
  public:
    static Result<std::unique_ptr<Runtime>> create(int argc, char **argv, int *consumed,
                                                   const EngineOptions &opts);
    ~Runtime();

    Result<Dev *> open_device(const DeviceConfig &cfg);
    /** Two net_ring ports back to back (A's TX queue i is B's RX queue i and vice versa),
     * with queues for `queues` workers: more where the ring PMD wants its workers' queues
     * spaced apart (drivers::Caps::queue_stride). */
    Result<std::pair<std::string, std::string>> create_ring_pair(uint16_t queues = 1);
    Status start();
    void stop();
    /** Embedded mode: one iteration over every device. Returns packets handled; *work
     * (optional) gets all work done including commands and WRs. */
    int poll_once(uint32_t *work = nullptr);
    /** Embedded mode: one iteration of worker w (its mailbox, then its shard of every
     * device). With several embedded workers, under that worker's lock. */
    int poll_worker(uint32_t w, uint32_t *work = nullptr);
    bool embedded() const { return opts_.embedded; }
    uint32_t workers() const { return static_cast<uint32_t>(workers_.size()); }
    bool worker_running() const { return running_.load(std::memory_order_acquire); }
    /** Runs fn on worker w (where that worker's protocol state lives) and waits; inline
     * when no worker runs. Control plane only. */
    void exec_on(uint32_t w, const std::function<void()> &fn);
    /** exec_on(0, fn). */
    void exec(const std::function<void()> &fn) { exec_on(0, fn); }
    /** Runs fn on the calling thread with every worker parked at a safe point: for state
     * every worker reads (MR table, zero-copy regions) and for whole-device snapshots. */
    void exec_all(const std::function<void()> &fn);
    /** TSC-derived nanoseconds: one TSC read, one multiply and a shift (no division, no
     * system call). Inline: every poll and every control wait reads it. */
    uint64_t now_ns() const {
        __extension__ typedef unsigned __int128 u128_t;
        return static_cast<uint64_t>((static_cast<u128_t>(rte_get_tsc_cycles()) * ns_mult_) >>
                                     kNsShift);
    }
    rte_mempool *pool() const { return pool_; }
    /** Worker w's own pool: the frames it builds and its RX queues' mbufs, so that an mbuf
     * stays on one core (pool() is worker 0's; hosted devices use the host's). */
    rte_mempool *pool(uint32_t w) const { return w < pools_.size() ? pools_[w] : pool_; }
    /** mbufs out of every pool of the engine (in rings, queues, PMDs). */
    uint64_t mbufs_in_use() const;
    /** Small mbufs for zero-copy frames: headers, external-buffer attachments, ICRC. */
    rte_mempool *zc_pool() const { return zc_pool_; }
    const std::vector<std::unique_ptr<Dev>> &devices() const { return devs_; }
    /** Lets a waiting control call move things along: one poll when nobody else polls,
     * a short sleep otherwise. */
    void wait_a_bit();
    /** Unique DPDK object names (rings, pools). */
    std::string unique_name(const char *prefix);
    /** Runs fn on worker w from a thread that is neither a worker nor the application's
     * poll thread (the telemetry thread): queued to that worker's mailbox, drained by the
     * worker or, in embedded mode, by the application's next Engine::poll(). Returns
     * false when nobody drained it within timeout_ms; fn may still run later, so it must
     * own (or share) everything it touches. */
    bool exec_detached(uint32_t w, std::function<void()> fn, uint32_t timeout_ms);
    /** Commands allocated by exec_detached and not yet freed (a leak shows here). */
    static uint64_t detached_live();

  private:
    Runtime() = default;
    /* open_device on a port the host configured and started (engine_hosted.cpp). */
    Result<Dev *> open_hosted(const DeviceConfig &cfg, uint16_t port, const std::string &name,
                              const net::Iface &ifc, const cc::CcParams &ccp);
    static int worker_main(void *arg);
    uint32_t drain_commands(uint32_t w);
    Status create_worker_pools(uint32_t nw);

    struct Command {
        const std::function<void()> *fn = nullptr;
        std::atomic<bool> done{false};
        /* exec_detached: the command owns its function and is freed by whichever of
         * the waiter and the drainer lets go last. */
        bool detached = false;
        std::function<void()> owned;
        std::atomic<int> refs{0};
        /* exec_all: the worker parks until released. */
        bool park = false;
        std::atomic<bool> parked{false};
        std::atomic<bool> release{false};
    };
    /* Aligned: workers are allocated one after another, and each poll takes its own
     * lock; two locks in one line made every iteration of each worker write the line the
     * other one writes. */
    struct alignas(64) Worker {
        Runtime *rt = nullptr;
        uint32_t index = 0;
        unsigned lcore = 0;
        rte_ring *mailbox = nullptr;
        /* Embedded mode with several workers: held by whoever runs this worker's state
         * (its poll thread for one iteration, or a control call). */
        rte_spinlock_t lock = RTE_SPINLOCK_INITIALIZER;
    };
    bool embedded_multi() const { return opts_.embedded && workers_.size() > 1; }

    EngineOptions opts_;
    rte_mempool *pool_ = nullptr;
    std::vector<rte_mempool *> pools_; /* by worker; pools_[0] == pool_ */
    rte_mempool *zc_pool_ = nullptr;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<std::unique_ptr<Dev>> devs_;
    std::vector<rte_ring *> pair_rings_;
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_{false};
    uint64_t tsc_hz_ = 0;
    /* now_ns = cycles x ns_mult_ >> kNsShift (a 128-bit product): 10^9 x 2^kNsShift / hz,
     * computed once. With 2^48, the rounding of the factor costs under 10^-13 relative
     * (well under 1 ns a day at GHz rates) and cycles x factor stays within 128 bits for
     * years of uptime. */
    static constexpr unsigned kNsShift = 48;
    uint64_t ns_mult_ = 0;
    uint32_t max_frame_ = 0;
};

/** engine_link.cpp: a net_bonding port; the bonding port port is a member of (-1: none,
 * or its bond is not configured yet: a vdev bond adds its members when configured). */
bool is_bond_port(uint16_t port);
int bond_of_member(uint16_t port);

/** rte_telemetry commands (/droce/devices, /droce/info, /droce/counters, /droce/qps):
 * registered once per process, answered for every live Runtime's devices. */
void telemetry_attach(Runtime *rt);
void telemetry_detach(Runtime *rt);
/** Every live Runtime of the process (tests reach internals through it). */
std::vector<Runtime *> debug_runtimes();
/** Serialises Runtime::devices() changes against the telemetry thread reading them. */
std::mutex &telemetry_mutex();

} // namespace droce::engine
