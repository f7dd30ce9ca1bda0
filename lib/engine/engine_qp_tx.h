/* SPDX-License-Identifier: BSD-3-Clause */
/* A QP's way out to its shard's TX, and what became of a frame offered there. The
 * inline bodies of QpTx::send and transmit_data are in engine_shard.h (they call Shard). */
#pragma once

#include <cstdint>

#include "qp_env.h"
#include "wire_template.h"

namespace droce::engine {

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

} // namespace droce::engine
