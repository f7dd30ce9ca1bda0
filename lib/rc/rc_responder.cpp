/* SPDX-License-Identifier: BSD-3-Clause */
/* Responder: checks each request's PSN (one NAK per gap, duplicates re-ACKed or
 * re-served), its opcode sequence and length, the remote key before any byte moves,
 * then places SEND payload into the posted receive and WRITE payload into the target
 * region, executes atomics once (replayed from a cache when duplicated), answers READs,
 * and ACKs on AckReq or every ack_every packets — coalesced: one ACK for the newest
 * PSN when the QP is next served for TX (NAKs and READ responses are not held back). */
#include <algorithm>
#include <cstring>

#include "rc_qp.h"

namespace droce::rc {

namespace {
constexpr uint8_t kAckSyndrome = 0x1F; /* ACK, credits not limited (rxe sends the same) */
constexpr uint8_t kRnrNak = 0x20;
/* The RETH's DMA length field has 32 bits but a message has at most 2^31 bytes (IBTA's
 * maximum message size, verbs max_msg_sz; rxe's check_length): a longer READ is an
 * invalid request. */
constexpr uint32_t kMaxReadBytes = 1u << 31;

/* Responses of a READ of len bytes (a zero-length READ still has one): at most 2^23 at
 * MTU 256 for a capped length, computed in 64 bits as (len + m - 1) wraps in 32. */
uint32_t read_npkts(uint32_t len, uint32_t m) {
    return len == 0 ? 1u : static_cast<uint32_t>((uint64_t{len} + m - 1) / m);
}
} // namespace

bool Qp::read_responses_pending() const {
    if (!rd_maybe_pending_)
        return false;
    for (const auto &r : rd_res_)
        if (r.valid && r.sent_pkts < r.npkts)
            return true;
    rd_maybe_pending_ = false;
    return false;
}

bool Qp::overlaps_pending_read(uint64_t va, uint64_t len) const {
    if (!rd_maybe_pending_)
        return false;
    for (const auto &r : rd_res_)
        if (r.valid && !r.is_atomic && r.sent_pkts < r.npkts && len > 0 && va < r.va + r.length &&
            r.va < va + len)
            return true;
    return false;
}

/* Sends queued READ/atomic responses oldest PSN first; false when TX is full. */
bool Qp::flush_read_responses() {
    if (!rd_maybe_pending_)
        return true;
    if (pace_until_ > now_)
        return false; /* held by the pacer until on_timer() */
    for (;;) {
        ReadResource *next = nullptr;
        for (auto &r : rd_res_)
            if (r.valid && r.sent_pkts < r.npkts && (!next || wire::psn_diff(r.psn, next->psn) < 0))
                next = &r;
        if (!next)
            return true;
        if (!send_read_responses(*next))
            return false;
    }
}

bool Qp::transmit_ack(uint8_t syndrome, uint32_t psn) {
    if (read_responses_pending()) {
        /* Responses leave in PSN order: an ACK for a later request must not overtake
         * READ responses still queued. Keep the newest; progress() sends it after. */
        ack_owed_ = true;
        ack_owed_syndrome_ = syndrome;
        ack_owed_psn_ = psn;
        return false;
    }
    wire::FrameSpec f;
    base_frame(f, wire::kRcAcknowledge, psn);
    f.aeth.syndrome = syndrome;
    f.aeth.msn = msn_ & 0xFFFFFF;
    if (cfg_.port->transmit(f)) {
        ack_owed_ = false;
        return true;
    }
    /* Keep only the newest: a later ACK covers an earlier one. */
    ++cfg_.counters->tx_blocked;
    ack_owed_ = true;
    ack_owed_syndrome_ = syndrome;
    ack_owed_psn_ = psn;
    return false;
}

bool Qp::send_ack(uint8_t syndrome, uint32_t psn) {
    /* Sent now (NAKs, and ACKs that must precede other responses), after a coalesced
     * ACK still owed for an earlier PSN: the wire order stays what it was when every
     * ACK left at once. An owed ACK for a later PSN (one held behind READ responses)
     * is dropped: this packet's PSN comes first, and e.g. a NAK of a READ that could
     * not be served must not be preceded by an ACK claiming it. */
    if (ack_owed_ && wire::psn_diff(ack_owed_psn_, psn) < 0)
        transmit_ack(ack_owed_syndrome_, ack_owed_psn_); /* TX full: superseded below */
    return transmit_ack(syndrome, psn);
}

void Qp::owe_ack(uint32_t psn) {
    /* Coalescing (IBTA 9.7.5.1.1: an ACK acknowledges every earlier request): the ACK
     * leaves when the QP is next served for TX, after the whole RX burst, so a burst
     * of requests costs one ACK for its last PSN. A NAK still owed for a later PSN
     * (its TX was full) already acknowledges this one and is kept. */
    if (ack_owed_ && ack_owed_syndrome_ != kAckSyndrome && wire::psn_diff(psn, ack_owed_psn_) < 0)
        return;
    ack_owed_ = true;
    ack_owed_syndrome_ = kAckSyndrome;
    ack_owed_psn_ = psn;
}

bool Qp::ack_only_tx_work() const {
    /* Not a NAK (those go at once), not in ERR, nothing the requester could send (data
     * goes now, and the ACK with it), and no READ response queued (ordered with it). */
    return ack_owed_ && ack_owed_syndrome_ == kAckSyndrome && !busy_dropped_ && pace_until_ == 0 &&
           (state_ == QpState::Rtr || state_ == QpState::Rts || state_ == QpState::Sqd) &&
           !read_responses_pending() && !requester_can_send();
}

void Qp::flush_owed_ack() {
    if (ack_owed_)
        transmit_ack(ack_owed_syndrome_, ack_owed_psn_);
}

void Qp::nak_and_error(uint8_t syndrome, uint32_t psn, bool raise_ev) {
    /* The QP dies: READ responses still queued will never go (progress() sends nothing
     * in ERR but this NAK), so they must not hold it back either. */
    for (auto &r : rd_res_)
        r.valid = false;
    send_ack(syndrome, psn);
    /* No WQE carries a responder's request error, so verbs reports it as an affiliated
     * event (IBTA 11.6.3: invalid request / local access violation WQ error). */
    enter_error(raise_ev, syndrome == wire::kAethNakRemoteAccessErr ? AsyncEventType::QpAccessErr
                                                                    : AsyncEventType::QpReqErr);
}

Qp::ReadResource *Qp::alloc_read_resource() {
    const uint32_t n = std::max<uint32_t>(1, attr_.max_dest_rd_atomic);
    ReadResource *r = &rd_res_[rd_res_next_ % n];
    rd_res_next_ = (rd_res_next_ + 1) % n;
    rd_maybe_pending_ = true; /* the caller fills it with responses to send */
    return r;
}

bool Qp::copy_to_recv(const RecvWqe &r, uint32_t off, const uint8_t *src, uint32_t len) {
    if (static_cast<uint64_t>(off) + len > r.length)
        return false;
    for (int i = 0; i < r.wr.num_sge && len > 0; ++i) {
        const Sge &s = r.wr.sg_list[i];
        if (off >= s.length) {
            off -= s.length;
            continue;
        }
        const uint32_t take = std::min(s.length - off, len);
        uint8_t *dst;
        if (cfg_.mrs->check(s.lkey, cfg_.pd, s.addr + off, take, kAccessLocalWrite, &dst) !=
            mem::AccessResult::Ok)
            return false;
        std::memcpy(dst, src, take);
        src += take;
        len -= take;
        off = 0;
    }
    return len == 0;
}

bool Qp::send_read_responses(ReadResource &r) {
    const uint32_t m = mtu();
    while (r.sent_pkts < r.npkts) {
        const uint32_t i = r.sent_pkts;
        wire::FrameSpec f;
        wire::FrameSpec::Seg seg;
        if (r.is_atomic) {
            base_frame(f, wire::kRcAtomicAcknowledge, r.psn);
            f.aeth = {kAckSyndrome, msn_ & 0xFFFFFF};
            f.atomic_ack.orig = r.atomic_orig;
        } else {
            const uint32_t off = i * m;
            const uint32_t chunk = std::min(m, r.length - off);
            const uint8_t op = r.npkts == 1       ? wire::kRcReadResponseOnly
                               : i == 0           ? wire::kRcReadResponseFirst
                               : i == r.npkts - 1 ? wire::kRcReadResponseLast
                                                  : wire::kRcReadResponseMiddle;
            base_frame(f, op, wire::psn_add(r.psn, i));
            f.aeth = {kAckSyndrome, msn_ & 0xFFFFFF};
            if (chunk > 0) {
                /* Re-check per packet: the region may have been deregistered while this
                 * response waited for TX room; then stop rather than read freed memory. */
                uint8_t *src;
                if (cfg_.mrs->check(r.rkey, cfg_.pd, r.va + off, chunk, kAccessRemoteRead, &src) !=
                    mem::AccessResult::Ok) {
                    /* NAK the first response that cannot be served (an earlier PSN would
                     * be ignored by a requester that has the packets before it). */
                    ++cfg_.counters->resp_remote_access_error;
                    nak_and_error(wire::kAethNakRemoteAccessErr, wire::psn_add(r.psn, i));
                    return false;
                }
                /* A re-served READ (r.replayed) is copied, never attached zero-copy:
                 * the requester completed its READ from the first responses, and the
                 * application may rewrite this memory while the replay is still queued
                 * (over net_ring: before the peer's RX reads it); a frame must never
                 * carry bytes its ICRC was not computed over. Replays are rare. */
                seg = {src, chunk, r.replayed ? 0u : r.rkey};
                f.segs = &seg;
                f.nsegs = 1;
                f.payload_len = chunk;
            }
        }
        f.tos = data_tos();
        uint32_t wire_bytes = 0;
        if (paced_) {
            wire_bytes = pace_bytes(f);
            if (!cc_pace_admit(wire_bytes, now_))
                return false;
        }
        if (!cfg_.port->transmit(f)) {
            ++cfg_.counters->tx_blocked;
            return false;
        }
        if (wire_bytes != 0)
            cc_sent(wire_bytes, now_);
        ++r.sent_pkts;
    }
    return true;
}

void Qp::responder_progress() {
    if (!flush_read_responses())
        return;
    if (busy_dropped_) {
        /* Restart the requester at the first request we had to drop (after any owed
         * ACK of the requests before it: send_ack keeps that order). */
        if (send_ack(wire::kAethNakPsnSeqErr, epsn_)) {
            busy_dropped_ = false;
            nak_sent_ = true;
        }
        return;
    }
    flush_owed_ack();
}

/* While READ responses wait for TX room they read memory when sent, so a later request
 * may not change what they will read, nor take the resource slot they still use. */
bool Qp::conflicts_with_pending_read(const wire::ParsedPacket &p) const {
    const wire::OpcodeInfo &op = *p.op;
    if (op.is(wire::kOpRead) || op.is(wire::kOpAtomic)) {
        const uint32_t n = std::max<uint32_t>(1, attr_.max_dest_rd_atomic);
        const ReadResource &slot = rd_res_[rd_res_next_ % n];
        if (slot.valid && slot.sent_pkts < slot.npkts)
            return true;
        return op.is(wire::kOpAtomic) && overlaps_pending_read(p.atomic.va, 8);
    }
    if (op.is(wire::kOpWrite) && op.is(wire::kOpFirst))
        return overlaps_pending_read(p.reth.va, p.reth.dma_len);
    if (op.is(wire::kOpSend) && op.is(wire::kOpFirst) && !rcv_->empty()) {
        const RecvWqe &r = rcv_->front();
        for (int i = 0; i < r.wr.num_sge; ++i)
            if (overlaps_pending_read(r.wr.sg_list[i].addr, r.wr.sg_list[i].length))
                return true;
    }
    return false;
}

bool Qp::answer_allowed(bool *done, Time *at, Time now, uint64_t interval) const {
    uint64_t gap = interval;
    const Time own_timeout = ack_timeout_ns(attr_.timeout);
    if (own_timeout != 0)
        gap = std::min<uint64_t>(gap, own_timeout / 4);
    /* A clock that went backwards (a driver reset) must not silence the QP. */
    if (*done && gap != 0 && now >= *at && now - *at < gap)
        return false;
    *done = true;
    *at = now;
    return true;
}

void Qp::responder_duplicate(const wire::ParsedPacket &p, Time now) {
    ++cfg_.counters->duplicate_request;
    const uint32_t psn = p.bth.psn;
    if (p.op->is(wire::kOpSend) || p.op->is(wire::kOpWrite)) {
        /* The ACK was lost: say again how far we are (C9-105); coalesced with the
         * other duplicates of this burst, and at most once per interval: the re-ACK
         * that leaves answers every duplicate until ePSN - 1. */
        if (!dup_answer_allowed(&dup_acked_, &dup_ack_at_, now)) {
            ++cfg_.counters->duplicate_ack_suppressed;
            return;
        }
        owe_ack(wire::psn_add(epsn_, wire::kPsnMask));
        return;
    }
    for (auto &r : rd_res_) {
        if (!r.valid)
            continue;
        if (p.op->is(wire::kOpAtomic) && r.is_atomic && r.psn == psn) {
            if (!dup_answer_allowed(&r.replayed, &r.replayed_at, now)) {
                ++cfg_.counters->duplicate_ack_suppressed;
                return;
            }
            flush_owed_ack();
            r.sent_pkts = 0; /* replay the saved result; never execute twice */
            rd_maybe_pending_ = true;
            flush_read_responses();
            return;
        }
        if (p.op->is(wire::kOpRead) && !r.is_atomic && wire::psn_diff(psn, r.psn) >= 0 &&
            wire::psn_diff(psn, wire::psn_add(r.psn, r.npkts - 1)) <= 0) {
            /* Serve the retried READ as asked (it may start part-way), checked anew. */
            const uint32_t m = mtu();
            if (p.reth.dma_len > kMaxReadBytes) {
                ++cfg_.counters->resp_invalid_request;
                return;
            }
            uint8_t *host;
            if (p.reth.dma_len > 0 &&
                (!(attr_.qp_access_flags & kAccessRemoteRead) ||
                 cfg_.mrs->check(p.reth.rkey, cfg_.pd, p.reth.va, p.reth.dma_len, kAccessRemoteRead,
                                 &host) != mem::AccessResult::Ok)) {
                ++cfg_.counters->resp_remote_access_error;
                return;
            }
            /* Re-served at most once per interval, as atomics are replayed: a forged
             * old READ must not make us send up to 2 GiB per frame towards the peer. A
             * genuine retry comes after the peer's timeout, far beyond the interval. */
            if (!dup_answer_allowed(&r.replayed, &r.replayed_at, now)) {
                ++cfg_.counters->duplicate_read_suppressed;
                return;
            }
            flush_owed_ack();
            r.psn = psn;
            r.va = p.reth.va;
            r.rkey = p.reth.rkey;
            r.length = p.reth.dma_len;
            r.npkts = read_npkts(r.length, m);
            r.sent_pkts = 0;
            rd_maybe_pending_ = true;
            flush_read_responses();
            return;
        }
    }
    /* Too old to have a resource: nothing sensible to answer. */
}

void Qp::responder_on_packet(const wire::ParsedPacket &p, Time now) {
    const uint32_t psn = p.bth.psn;
    const int32_t d = wire::psn_diff(psn, epsn_);
    if (d > 0) {
        ++cfg_.counters->out_of_sequence;
        if (!nak_sent_) {
            /* One NAK per sequence error (what IBTA asks), and at most one per interval:
             * a legitimate packet clears nak_sent_, so forged ahead-PSN frames between
             * legitimate ones would otherwise each send the real peer back N. A run of
             * ahead packets (a real gap in a stream) gets the short interval, a lone one
             * the long (QpTuning::seq_nak_after_run). Left unset when suppressed: a
             * genuine gap is NAKed by a later ahead packet, or covered by the
             * requester's own timeout. */
            /* A run is consecutive PSNs (a READ request takes one per response), as
             * the packets behind a real gap are; a repeated or random forged PSN is
             * not one. */
            ahead_run_ = (ahead_run_ != 0 && psn == ahead_next_psn_ && ahead_run_ < UINT32_MAX)
                             ? ahead_run_ + 1
                             : 1;
            const uint32_t m = mtu();
            ahead_next_psn_ = wire::psn_add(
                psn, p.op->is(wire::kOpRead) && p.reth.dma_len > m
                         ? static_cast<uint32_t>((uint64_t{p.reth.dma_len} + m - 1) / m)
                         : 1u);
            const uint64_t interval = ahead_run_ >= cfg_.tuning.seq_nak_after_run
                                          ? cfg_.tuning.dup_ack_interval_ns
                                          : cfg_.tuning.seq_nak_interval_ns;
            if (!answer_allowed(&seq_naked_, &seq_nak_at_, now, interval)) {
                ++cfg_.counters->nak_seq_suppressed;
                return;
            }
            nak_sent_ = true;
            send_ack(wire::kAethNakPsnSeqErr, epsn_);
        }
        return;
    }
    if (d < 0) {
        responder_duplicate(p, now);
        return;
    }
    if (read_responses_pending() && conflicts_with_pending_read(p)) {
        ++cfg_.counters->resp_busy_drop;
        busy_dropped_ = true;
        return;
    }
    nak_sent_ = false;
    ahead_run_ = 0;

    const wire::OpcodeInfo &op = *p.op;
    const bool first = op.is(wire::kOpFirst);
    const bool last = op.is(wire::kOpLast);
    const uint32_t m = mtu();

    /* Opcode sequence: a message in progress continues, anything else starts one. */
    const bool seq_ok = in_send_    ? (op.is(wire::kOpSend) && !first)
                        : in_write_ ? (op.is(wire::kOpWrite) && !first)
                                    : first;
    if (!seq_ok || p.op->transport != wire::Transport::Rc) {
        ++cfg_.counters->resp_invalid_request;
        nak_and_error(wire::kAethNakInvalidRequest, psn);
        return;
    }
    /* The QP's own rights come before resources, lengths and keys (rxe's check_op_valid,
     * verbs' class C error): an op this QP never allowed is an invalid request (0x61) on
     * every packet of it, even zero-length or with no receive posted; a missing right of
     * the MR is found later with the rkey (remote access error, 0x62). */
    const uint32_t need = op.is(wire::kOpWrite)    ? uint32_t{kAccessRemoteWrite}
                          : op.is(wire::kOpRead)   ? uint32_t{kAccessRemoteRead}
                          : op.is(wire::kOpAtomic) ? uint32_t{kAccessRemoteAtomic}
                                                   : 0u;
    if ((attr_.qp_access_flags & need) != need) {
        ++cfg_.counters->resp_op_not_allowed;
        nak_and_error(wire::kAethNakInvalidRequest, psn);
        return;
    }
    if (op.is(wire::kOpPayload) && (p.payload_len > m || (!last && p.payload_len != m))) {
        ++cfg_.counters->resp_invalid_request;
        nak_and_error(wire::kAethNakInvalidRequest, psn);
        return;
    }
    /* Resources first, before anything is written, so an RNR retry finds us unchanged. */
    const bool consumes_recv = op.is(wire::kOpSend) ? first : (op.is(wire::kOpImm) && last);
    if (consumes_recv && (!op.is(wire::kOpSend) || !in_send_) && rcv_->empty()) {
        ++cfg_.counters->rnr_nak_sent;
        send_ack(static_cast<uint8_t>(kRnrNak | (attr_.min_rnr_timer & 0x1F)), psn);
        return;
    }

    if (op.is(wire::kOpSend)) {
        if (first) {
            /* The receive leaves the queue now: with an SRQ, other QPs must not take it
             * while the rest of this message is on its way. */
            ++cfg_.counters->rx_send_requests;
            cur_recv_ = rcv_->pop();
            recv_off_ = 0;
            in_send_ = true;
        }
        const RecvWqe &r = cur_recv_;
        bool fits = true;
        uint32_t at = recv_off_;
        wire::for_each_payload_chunk(p, [&](const uint8_t *src, uint32_t n) {
            fits = fits && copy_to_recv(r, at, src, n);
            at += n;
        });
        if (fits)
            cfg_.counters->rx_bytes_copied += p.payload_len;
        if (!fits) {
            ++cfg_.counters->resp_local_length_error;
            in_send_ = false;
            complete_recv(r, WcStatus::LocLenErr, WcOpcode::Recv, recv_off_, 0, 0);
            /* the LOC_LEN_ERR completion reports it: no event */
            nak_and_error(wire::kAethNakInvalidRequest, psn, false);
            return;
        }
        recv_off_ += p.payload_len;
        if (last && op.is(wire::kOpInv)) [[unlikely]] {
            /* SEND with Invalidate: droce has no key a peer may invalidate (no memory
             * windows, no fast-registration MRs; a plain MR's rkey is not invalidatable),
             * so the request is one this responder cannot execute. It is refused as IBTA
             * refuses an R_Key it cannot invalidate (rxe: RESPST_ERR_INVALIDATE_RKEY), never
             * completed as an invalidation that did not happen: the peer's WR fails with
             * NAK Invalid Request, the receive completes with RemInvReqErr, QP to ERR. */
            ++cfg_.counters->resp_invalidate_refused;
            in_send_ = false;
            complete_recv(r, WcStatus::RemInvReqErr, WcOpcode::Recv, recv_off_, 0, 0);
            nak_and_error(wire::kAethNakInvalidRequest, psn, false);
            return;
        }
        if (last) {
            uint32_t flags = 0, extra = 0;
            if (op.is(wire::kOpImm)) {
                flags = kWcWithImm;
                extra = p.imm;
            }
            in_send_ = false;
            complete_recv(r, WcStatus::Success, WcOpcode::Recv, recv_off_, flags, extra);
            msn_ = (msn_ + 1) & 0xFFFFFF;
        }
    } else if (op.is(wire::kOpWrite)) {
        if (first) {
            ++cfg_.counters->rx_write_requests;
            write_len_ = write_left_ = p.reth.dma_len;
            write_va_ = p.reth.va;
            write_rkey_ = p.reth.rkey;
            uint8_t *host;
            if (p.reth.dma_len > 0 &&
                cfg_.mrs->check(p.reth.rkey, cfg_.pd, p.reth.va, p.reth.dma_len, kAccessRemoteWrite,
                                &host) != mem::AccessResult::Ok) {
                ++cfg_.counters->resp_remote_access_error;
                nak_and_error(wire::kAethNakRemoteAccessErr, psn);
                return;
            }
            in_write_ = !last;
        }
        if (p.payload_len > write_left_ || (last && p.payload_len != write_left_)) {
            /* The packets do not add up to the RETH length. */
            ++cfg_.counters->resp_invalid_request;
            nak_and_error(wire::kAethNakInvalidRequest, psn);
            return;
        }
        if (p.payload_len) {
            /* Per packet, not once per message: the region may have been deregistered
             * since the FIRST packet (the key then fails, as its generation moved on).
             * Verbs: remote access fails from the dereg on. One O(1) lookup. */
            uint8_t *dst;
            if (cfg_.mrs->check(write_rkey_, cfg_.pd, write_va_, p.payload_len, kAccessRemoteWrite,
                                &dst) != mem::AccessResult::Ok) {
                ++cfg_.counters->resp_remote_access_error;
                nak_and_error(wire::kAethNakRemoteAccessErr, psn);
                return;
            }
            wire::for_each_payload_chunk(p, [&](const uint8_t *src, uint32_t n) {
                std::memcpy(dst, src, n);
                dst += n;
            });
            write_va_ += p.payload_len;
            write_left_ -= p.payload_len;
            cfg_.counters->rx_bytes_copied += p.payload_len;
        }
        if (last) {
            in_write_ = false;
            msn_ = (msn_ + 1) & 0xFFFFFF;
            if (op.is(wire::kOpImm)) {
                complete_recv(rcv_->pop(), WcStatus::Success, WcOpcode::RecvRdmaWithImm, write_len_,
                              kWcWithImm, p.imm);
            }
        }
    } else if (op.is(wire::kOpRead)) {
        ++cfg_.counters->rx_read_requests;
        if (p.reth.dma_len > kMaxReadBytes) {
            ++cfg_.counters->resp_invalid_request;
            nak_and_error(wire::kAethNakInvalidRequest, psn);
            return;
        }
        uint8_t *host;
        if (p.reth.dma_len > 0 &&
            cfg_.mrs->check(p.reth.rkey, cfg_.pd, p.reth.va, p.reth.dma_len, kAccessRemoteRead,
                            &host) != mem::AccessResult::Ok) {
            ++cfg_.counters->resp_remote_access_error;
            nak_and_error(wire::kAethNakRemoteAccessErr, psn);
            return;
        }
        flush_owed_ack(); /* an ACK of earlier requests goes before the response */
        ReadResource *r = alloc_read_resource();
        *r = ReadResource{};
        r->psn = psn;
        r->va = p.reth.va;
        r->rkey = p.reth.rkey;
        r->length = p.reth.dma_len;
        r->npkts = read_npkts(r->length, m);
        r->valid = true;
        epsn_ = wire::psn_add(psn, r->npkts);
        msn_ = (msn_ + 1) & 0xFFFFFF;
        flush_read_responses();
        return;
    } else if (op.is(wire::kOpAtomic)) {
        ++cfg_.counters->rx_atomic_requests;
        if (p.atomic.va & 7) {
            ++cfg_.counters->resp_invalid_request;
            nak_and_error(wire::kAethNakInvalidRequest, psn);
            return;
        }
        uint8_t *host;
        if (cfg_.mrs->check(p.atomic.rkey, cfg_.pd, p.atomic.va, 8, kAccessRemoteAtomic, &host) !=
            mem::AccessResult::Ok) {
            ++cfg_.counters->resp_remote_access_error;
            nak_and_error(wire::kAethNakRemoteAccessErr, psn);
            return;
        }
        uint64_t orig;
        std::memcpy(&orig, host, 8);
        uint64_t result = orig;
        if (p.bth.opcode == wire::kRcCompareSwap) {
            if (orig == p.atomic.compare)
                result = p.atomic.swap_add;
        } else {
            result = orig + p.atomic.swap_add;
        }
        std::memcpy(host, &result, 8);
        flush_owed_ack(); /* an ACK of earlier requests goes before the response */
        ReadResource *r = alloc_read_resource();
        *r = ReadResource{};
        r->psn = psn;
        r->npkts = 1;
        r->is_atomic = true;
        r->atomic_orig = orig;
        r->valid = true;
        epsn_ = wire::psn_add(psn, 1);
        msn_ = (msn_ + 1) & 0xFFFFFF;
        flush_read_responses();
        return;
    } else {
        ++cfg_.counters->resp_invalid_request;
        nak_and_error(wire::kAethNakInvalidRequest, psn);
        return;
    }
    if (state_ == QpState::Err)
        return; /* its receive completion was lost (CQ overflow): no ACK from ERR */

    epsn_ = wire::psn_add(psn, 1);
    ++pkts_since_ack_;
    if (p.bth.ack_req || (cfg_.tuning.ack_every && pkts_since_ack_ >= cfg_.tuning.ack_every)) {
        pkts_since_ack_ = 0;
        owe_ack(psn);
    }
}

} // namespace droce::rc
