/* SPDX-License-Identifier: BSD-3-Clause */
/* What a transport QP, RC (lib/rc) or UD (lib/ud), needs from whoever drives it. The
 * engine implements these over DPDK ports and rings; the simulator over a virtual fabric.
 * The transport itself never reads a clock or touches a port: time comes in as an
 * argument, packets go out here. lib/qp is the small base both QP types share (this, the
 * receive queue, the P_Key rule), so that neither includes the other. */
#pragma once

#include <cstdint>

#include "vocab_verbs.h"

#include "wire_data_template.h"
#include "wire_packet.h"

namespace droce::qp {

/** Nanoseconds of the driver's clock (TSC-derived in the engine, virtual in tests). */
using Time = uint64_t;

/** Where a QP's packets go. transmit() builds the frame from the spec (headers, payload
 * copy or zero-copy attach, ICRC) and queues it; false means no room now (no mbuf, TX
 * queue full): the caller keeps the work and tries again on a later progress(). */
/*
 * Zero-copy and completion semantics (decided: no hold on the completion). With
 * zero-copy the frame points into the application's region until the PMD (over
 * net_ring: the peer's RX) frees it, which can be after the ACK that completes the WR:
 * a go-back-N retransmission of PSN p may still sit in a TX queue when the ACK for the
 * original p arrives. Verbs semantics still hold without delaying the completion:
 *  - the ACK covering p means the responder executed p exactly once; the late copy
 *    carries a PSN behind the responder's ePSN, so it is a duplicate: SEND/WRITE
 *    duplicates are only re-ACKed (responder_duplicate, C9-105), never written again;
 *    READ responses and atomics are replayed from the responder's saved state, and the
 *    requester drops a response for nothing outstanding (rx_ghost_response);
 *  - no frame may read the application's memory after the completion: a late copy
 *    attached zero-copy would carry the refilled bytes under the old ICRC (seen as
 *    rx_drop_bad_icrc in a fault-free soak). So every retransmission (requester) and
 *    every re-served READ response (responder) is copied at transmit time; only first
 *    transmissions are attached, and the TX queue (and a net_ring) is FIFO, so the
 *    port or peer has read them before the ACK that completes their WR can exist;
 *  - what must not happen is the memory going away under a queued frame: MR
 *    deregistration waits until no frame points into the region any more (engine
 *    Dev::dereg_mr + zc_reap, bounded, counted as mr_dereg_timeout if it gives up).
 * Holding completions until the extbuf refcount drops would instead tie completion
 * latency to the PMD's lazy TX-descriptor reclaim (tx_free_thresh) on real NICs.
 */
class TxPort {
  public:
    /** What became of a DataFrame offered to transmit_data(). */
    enum class Straight : uint8_t {
        Sent,     /* queued, as transmit() true */
        Blocked,  /* no room now, as transmit() false */
        Unserved, /* the port cannot take it as a DataFrame: build a FrameSpec and transmit() */
    };
    virtual ~TxPort() = default;
    virtual bool transmit(const wire::FrameSpec &frame) = 0;
    /** The straight path of a one-packet RC request (wire_data_template.h): the same frame
     * transmit() would send for the FrameSpec the QP builds otherwise, from a few words.
     * A port without one says Unserved, and so does one that has not learnt the QP's
     * headers yet (the FrameSpec transmit() that follows teaches it). */
    virtual Straight transmit_data(const wire::DataFrame &) { return Straight::Unserved; }
};

/** A completion queue as the transport sees it. push() false = CQ overflow: the QP
 * counts it (cq_overflow), raises CqErr and QpFatal and goes to ERR (verbs: a CQ overrun
 * is a CQ error and the QPs that could not complete into it are in error). */
class CqSink {
  public:
    virtual ~CqSink() = default;
    virtual bool push(const Wc &wc) = 0;
};

/** An asynchronous event (ibv_async_event): what happened and to which QP / CQ. */
struct AsyncEvent {
    AsyncEventType type;
    uint32_t qp_num;  /* the QP that raised it (also for CqErr: the QP that found it full) */
    const CqSink *cq; /* CqErr: the CQ that overran; nullptr otherwise */
};

/** Where a QP's asynchronous events go (QpConfig::events; nullptr = nowhere). Called
 * from inside on_packet()/progress()/on_timer()/modify()/post_*() with the QP already
 * in its new state; the handler must not call back into the QP. The QP raises CqErr
 * once per CQ until it is reset (the owner of the CQ may see it from several QPs). */
class AsyncEventSink {
  public:
    virtual ~AsyncEventSink() = default;
    virtual void on_async_event(const AsyncEvent &ev) = 0;
};

/** IBTA 10.9.3 P_Key match: same partition (low 15 bits, never 0) and at least one of
 * the two a full member (bit 15). */
inline bool pkey_match(uint16_t a, uint16_t b) {
    return (a & 0x7FFF) != 0 && (a & 0x7FFF) == (b & 0x7FFF) && ((a | b) & 0x8000) != 0;
}

} // namespace droce::qp
