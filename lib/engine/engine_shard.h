/* SPDX-License-Identifier: BSD-3-Clause */
/* One worker's share of a device (engine_poll.cpp, engine_rx.cpp, engine_tx.cpp,
 * engine_sched.cpp, engine_ack_hold.cpp, engine_pfc_rx.cpp, engine_pfc_tx.cpp). */
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine_capture.h"
#include "engine_counters.h"
#include "engine_frame_free.h"
#include "engine_limits.h"
#include "engine_pfc_counters.h"
#include "engine_qp_ctx.h"
#include "engine_qp_list.h"
#include "engine_qpn_alloc.h"
#include "engine_ring_watch.h"
#include "engine_tx_queue.h"
#include "engine_tx_stash.h"
#include "net.h"
#include "net_classify.h"
#include "net_ipv6.h"
#include "net_pfc.h"
#include "sched_timer_wheel.h"
#include "wire_packet.h"
#include "wire_template.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace droce::engine {

class Dev;

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
    uint32_t flush_wrapped(); /* flush_tx's second run, past the TX ring's end */
    /* One run of the TX queue to the port, or to shard 0 (tx_in_): how many it took. */
    uint16_t tx_burst(rte_mbuf **frames, uint16_t n);
    uint16_t tx_to_shard0(rte_mbuf **frames, uint16_t n);
    void ready_push(QpCtx &q);
    QpCtx *ready_pop();
    uint32_t drain_doorbells();
    /* The watched QPs' rings (RingWatch): WRs posted without a doorbell. */
    uint32_t poll_ring_watch();
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
    RingWatch ring_watch_;          /* QPs drained without a doorbell for now */
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
    TxStash tx_stash_;  /* transmit()'s copied frames (engine_tx_stash.h) */
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

} // namespace droce::engine
