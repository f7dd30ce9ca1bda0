/* SPDX-License-Identifier: BSD-3-Clause */
/* The calls a driver makes on a transport QP, RC (rc::Qp) or UD (ud::Qp), written down as
 * a concept: both QP types provide them (UD the timer, pacing and ACK ones as the
 * constants it has: no deadline, never paced, no ACKs), so the engine's receive, transmit,
 * scheduling and WR-ring code is written once over `TransportQp auto &` and instantiated
 * for each. A compile-time interface rather than virtual functions: the RC calls stay
 * inline on the per-packet path, and the engine tells the two apart once per event
 * (QpCtx::visit), as it did before there was a shared interface. */
#pragma once

#include <concepts>
#include <cstdint>

#include "vocab_status.h"
#include "vocab_verbs.h"

#include "qp_env.h"
#include "wire_packet.h"

namespace droce::qp {

template <class Q>
concept TransportQp = requires(Q &q, const Q &cq, const wire::ParsedPacket &p,
                               const wire::SmallFrame &f, Time now, const RecvWr &rwr) {
    /* driver */
    q.on_packet(p, now);
    { q.on_small_frame(f, now) } -> std::same_as<bool>; /* false: give on_packet the packet */
    q.progress(now);
    q.on_timer(now);
    { cq.has_tx_work() } -> std::same_as<bool>;
    { cq.ack_only_tx_work() } -> std::same_as<bool>; /* a plain ACK and nothing else */
    { cq.next_deadline() } -> std::same_as<Time>;    /* 0 = no timer */
    { cq.pacer_holding() } -> std::same_as<bool>;
    cq.prefetch();
    /* verbs and queues */
    { q.post_recv(rwr) } -> std::same_as<Status>;
    { cq.qpn() } -> std::same_as<uint32_t>;
    { cq.state() } -> std::same_as<QpState>;
    { cq.send_queue_depth() } -> std::same_as<uint32_t>;
    { cq.recv_queue_depth() } -> std::same_as<uint32_t>;
};

} // namespace droce::qp
