/* SPDX-License-Identifier: BSD-3-Clause */
/* Responder, as rxe's (rxe_resp.c): each request goes through a list of steps, each
 * returning a Verdict (rc_resp_checks.h) — check_psn (one NAK per gap, duplicates
 * re-ACKed, replayed or re-served), check_pending_read, then check_request: opcode
 * sequence, the QP's rights, payload length, a receive to consume (RNR), the remote key
 * before any byte moves — then execute (SEND payload into the posted receive, WRITE
 * payload into the target region, atomics once, READs queued as responses) and
 * acknowledge: an ACK on AckReq or every ack_every packets, coalesced (one ACK for the
 * newest PSN when the QP is next served for TX; NAKs and READ responses are not held
 * back). A request that does not pass gets what its verdict names from respond(). */
#include <algorithm>
#include <cstring>

#include "mem_sgl.h"
#include "rc_qp.h"
#include "rc_resp_checks.h"

namespace droce::rc {

namespace {
constexpr uint8_t kAckSyndrome = 0x1F; /* ACK, credits not limited (rxe sends the same) */
constexpr uint8_t kRnrNak = 0x20;

/* Responses of a READ of len bytes (a zero-length READ still has one): at most 2^23 at
 * MTU 256 for a capped length, computed in 64 bits as (len + m - 1) wraps in 32. */
uint32_t read_npkts(uint32_t len, uint32_t m) {
    return len == 0 ? 1u : static_cast<uint32_t>((uint64_t{len} + m - 1) / m);
}
} // namespace

bool Qp::read_responses_queued() const {
    for (const auto &r : resp_.rd_res)
        if (r.valid && r.sent_pkts < r.npkts)
            return true;
    resp_.rd_maybe_pending = false;
    return false;
}

bool Qp::overlaps_pending_read(uint64_t va, uint64_t len) const {
    if (!resp_.rd_maybe_pending)
        return false;
    for (const auto &r : resp_.rd_res)
        if (r.valid && !r.is_atomic && r.sent_pkts < r.npkts && len > 0 && va < r.va + r.length &&
            r.va < va + len)
            return true;
    return false;
}

/* Sends queued READ/atomic responses oldest PSN first; false when TX is full. */
bool Qp::flush_read_responses() {
    if (!resp_.rd_maybe_pending)
        return true;
    if (pace_until_ > now_)
        return false; /* held by the pacer until on_timer() */
    for (;;) {
        ReadResource *next = nullptr;
        for (auto &r : resp_.rd_res)
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
        resp_.ack_owed = true;
        resp_.ack_owed_syndrome = syndrome;
        resp_.ack_owed_psn = psn;
        return false;
    }
    wire::FrameSpec f;
    base_frame(f, wire::kRcAcknowledge, psn);
    f.aeth.syndrome = syndrome;
    f.aeth.msn = resp_.msn & 0xFFFFFF;
    if (cfg_.port->transmit(f)) {
        resp_.ack_owed = false;
        return true;
    }
    /* Keep only the newest: a later ACK covers an earlier one. */
    ++cfg_.counters->tx_blocked;
    resp_.ack_owed = true;
    resp_.ack_owed_syndrome = syndrome;
    resp_.ack_owed_psn = psn;
    return false;
}

bool Qp::send_ack(uint8_t syndrome, uint32_t psn) {
    /* Sent now (NAKs, and ACKs that must precede other responses), after a coalesced
     * ACK still owed for an earlier PSN: the wire order stays what it was when every
     * ACK left at once. An owed ACK for a later PSN (one held behind READ responses)
     * is dropped: this packet's PSN comes first, and e.g. a NAK of a READ that could
     * not be served must not be preceded by an ACK claiming it. */
    if (resp_.ack_owed && wire::psn_diff(resp_.ack_owed_psn, psn) < 0)
        transmit_ack(resp_.ack_owed_syndrome, resp_.ack_owed_psn); /* TX full: superseded below */
    return transmit_ack(syndrome, psn);
}

[[gnu::always_inline]] inline void Qp::owe_ack(uint32_t psn) {
    /* Coalescing (IBTA 9.7.5.1.1: an ACK acknowledges every earlier request): the ACK
     * leaves when the QP is next served for TX, after the whole RX burst, so a burst
     * of requests costs one ACK for its last PSN. A NAK still owed for a later PSN
     * (its TX was full) already acknowledges this one and is kept. */
    if (resp_.ack_owed && resp_.ack_owed_syndrome != kAckSyndrome &&
        wire::psn_diff(psn, resp_.ack_owed_psn) < 0)
        return;
    resp_.ack_owed = true;
    resp_.ack_owed_syndrome = kAckSyndrome;
    resp_.ack_owed_psn = psn;
}

bool Qp::ack_only_tx_work() const {
    /* Not a NAK (those go at once), not in ERR, nothing the requester could send (data
     * goes now, and the ACK with it), and no READ response queued (ordered with it). */
    return resp_.ack_owed && resp_.ack_owed_syndrome == kAckSyndrome && !resp_.busy_dropped &&
           pace_until_ == 0 &&
           (state_ == QpState::Rtr || state_ == QpState::Rts || state_ == QpState::Sqd) &&
           !read_responses_pending() && !requester_can_send();
}

void Qp::flush_owed_ack() {
    if (resp_.ack_owed)
        transmit_ack(resp_.ack_owed_syndrome, resp_.ack_owed_psn);
}

void Qp::nak_and_error(uint8_t syndrome, uint32_t psn, bool raise_ev) {
    /* The QP dies: READ responses still queued will never go (progress() sends nothing
     * in ERR but this NAK), so they must not hold it back either. */
    for (auto &r : resp_.rd_res)
        r.valid = false;
    send_ack(syndrome, psn);
    /* No WQE carries a responder's request error, so verbs reports it as an affiliated
     * event (IBTA 11.6.3: invalid request / local access violation WQ error). */
    enter_error(raise_ev, syndrome == wire::kAethNakRemoteAccessErr ? AsyncEventType::QpAccessErr
                                                                    : AsyncEventType::QpReqErr);
}

Qp::ReadResource *Qp::alloc_read_resource() {
    const uint32_t n = std::max<uint32_t>(1, attr_.max_dest_rd_atomic);
    ReadResource *r = &resp_.rd_res[resp_.rd_res_next % n];
    resp_.rd_res_next = (resp_.rd_res_next + 1) % n;
    resp_.rd_maybe_pending = true; /* the caller fills it with responses to send */
    return r;
}

bool Qp::send_read_responses(ReadResource &r) {
    const uint32_t m = mtu();
    while (r.sent_pkts < r.npkts) {
        const uint32_t i = r.sent_pkts;
        wire::FrameSpec f;
        wire::FrameSpec::Seg seg;
        if (r.is_atomic) {
            base_frame(f, wire::kRcAtomicAcknowledge, r.psn);
            f.aeth = {kAckSyndrome, resp_.msn & 0xFFFFFF};
            f.atomic_ack.orig = r.atomic_orig;
        } else {
            const uint32_t off = i * m;
            const uint32_t chunk = std::min(m, r.length - off);
            const uint8_t op = r.npkts == 1       ? wire::kRcReadResponseOnly
                               : i == 0           ? wire::kRcReadResponseFirst
                               : i == r.npkts - 1 ? wire::kRcReadResponseLast
                                                  : wire::kRcReadResponseMiddle;
            base_frame(f, op, wire::psn_add(r.psn, i));
            f.aeth = {kAckSyndrome, resp_.msn & 0xFFFFFF};
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
    if (resp_.busy_dropped) {
        /* Restart the requester at the first request we had to drop (after any owed
         * ACK of the requests before it: send_ack keeps that order). */
        if (send_ack(wire::kAethNakPsnSeqErr, resp_.epsn)) {
            resp_.busy_dropped = false;
            resp_.nak_sent = true;
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
        const ReadResource &slot = resp_.rd_res[resp_.rd_res_next % n];
        if (slot.valid && slot.sent_pkts < slot.npkts)
            return true;
        return op.is(wire::kOpAtomic) && overlaps_pending_read(p.atomic.va, 8);
    }
    if (op.is(wire::kOpWrite) && op.is(wire::kOpFirst))
        return overlaps_pending_read(p.reth.va, p.reth.dma_len);
    if (op.is(wire::kOpSend) && op.is(wire::kOpFirst) && !resp_.rcv->empty()) {
        const RecvWqe &r = resp_.rcv->front();
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
    const uint32_t psn = p.bth.psn;
    if (p.op->is(wire::kOpSend) || p.op->is(wire::kOpWrite)) {
        /* The ACK was lost: say again how far we are (C9-105); coalesced with the
         * other duplicates of this burst, and at most once per interval: the re-ACK
         * that leaves answers every duplicate until ePSN - 1. */
        if (!dup_answer_allowed(&resp_.dup_acked, &resp_.dup_ack_at, now)) {
            ++cfg_.counters->duplicate_ack_suppressed;
            return;
        }
        owe_ack(wire::psn_add(resp_.epsn, wire::kPsnMask));
        return;
    }
    for (auto &r : resp_.rd_res) {
        if (!r.valid)
            continue;
        if (p.op->is(wire::kOpAtomic) && r.is_atomic && r.psn == psn) {
            if (!dup_answer_allowed(&r.replayed, &r.replayed_at, now)) {
                ++cfg_.counters->duplicate_ack_suppressed;
                return;
            }
            flush_owed_ack();
            r.sent_pkts = 0; /* replay the saved result; never execute twice */
            resp_.rd_maybe_pending = true;
            flush_read_responses();
            return;
        }
        if (p.op->is(wire::kOpRead) && !r.is_atomic && wire::psn_diff(psn, r.psn) >= 0 &&
            wire::psn_diff(psn, wire::psn_add(r.psn, r.npkts - 1)) <= 0) {
            /* Serve the retried READ as asked (it may start part-way), checked anew. */
            uint8_t *host;
            Verdict v = check_rkey(p, *cfg_.mrs, cfg_.pd, resp_.write, &host);
            if (v.accepted() && p.reth.dma_len > 0 && !(attr_.qp_access_flags & kAccessRemoteRead))
                v = Verdict::access_error();
            if (!v.accepted()) {
                ++(cfg_.counters->*v.counter); /* counted, not answered: the QP lives on */
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
            r.npkts = read_npkts(r.length, mtu());
            r.sent_pkts = 0;
            resp_.rd_maybe_pending = true;
            flush_read_responses();
            return;
        }
    }
    /* Too old to have a resource: nothing sensible to answer. */
}

/* An ahead PSN: packets were lost. One NAK per sequence error (what IBTA asks), and at
 * most one per interval: a legitimate packet clears resp_.nak_sent, so forged ahead-PSN frames
 * between legitimate ones would otherwise each send the real peer back N. A run of ahead
 * packets (a real gap in a stream) gets the short interval, a lone one the long
 * (QpTuning::seq_nak_after_run). Left unset when suppressed: a genuine gap is NAKed by a
 * later ahead packet, or covered by the requester's own timeout. */
void Qp::responder_ahead(const wire::ParsedPacket &p, Time now) {
    if (resp_.nak_sent)
        return;
    /* A run is consecutive PSNs (a READ request takes one per response), as the packets
     * behind a real gap are; a repeated or random forged PSN is not one. */
    const uint32_t psn = p.bth.psn;
    resp_.ahead_run =
        (resp_.ahead_run != 0 && psn == resp_.ahead_next_psn && resp_.ahead_run < UINT32_MAX)
            ? resp_.ahead_run + 1
            : 1;
    const uint32_t m = mtu();
    resp_.ahead_next_psn = wire::psn_add(
        psn, p.op->is(wire::kOpRead) && p.reth.dma_len > m ? read_npkts(p.reth.dma_len, m) : 1u);
    const uint64_t interval = resp_.ahead_run >= cfg_.tuning.seq_nak_after_run
                                  ? cfg_.tuning.dup_ack_interval_ns
                                  : cfg_.tuning.seq_nak_interval_ns;
    if (!answer_allowed(&resp_.seq_naked, &resp_.seq_nak_at, now, interval)) {
        ++cfg_.counters->nak_seq_suppressed;
        return;
    }
    resp_.nak_sent = true;
    send_ack(wire::kAethNakPsnSeqErr, resp_.epsn);
}

inline Verdict Qp::check_pending_read(const wire::ParsedPacket &p) const {
    if (read_responses_pending() && conflicts_with_pending_read(p))
        return {Verdict::Busy, 0, false, &Counters::resp_busy_drop};
    return {};
}

/* rx_*_requests: what the peer asked for, counted once the request is well formed and
 * has its resources, whether or not its key then checks. */
inline void Qp::count_request(const wire::OpcodeInfo &op) {
    Counters &c = *cfg_.counters;
    if (op.is(wire::kOpSend))
        c.rx_send_requests += op.is(wire::kOpFirst);
    else if (op.is(wire::kOpWrite))
        c.rx_write_requests += op.is(wire::kOpFirst);
    else if (op.is(wire::kOpRead))
        ++c.rx_read_requests;
    else if (op.is(wire::kOpAtomic))
        ++c.rx_atomic_requests;
}

/* The checks of an in-sequence request, in rxe's order (rc_resp_checks.h); on Accept,
 * *host is the target of an atomic or of a WRITE packet's payload. */
inline Verdict Qp::check_request(const wire::ParsedPacket &p, uint8_t **host) {
    const wire::OpcodeInfo &op = *p.op;
    Verdict v = check_op_seq(op, resp_.in_send, resp_.in_write);
    if (v.accepted())
        v = check_op_valid(op, attr_.qp_access_flags);
    if (v.accepted())
        v = check_length(op, p.payload_len, mtu());
    if (v.accepted())
        v = check_resource(op, resp_.rcv->empty());
    if (!v.accepted())
        return v;
    count_request(op);
    return check_rkey(p, *cfg_.mrs, cfg_.pd, resp_.write, host);
}

/* A SEND packet's payload into the receive it fills, each SGE's lkey checked. False: it
 * does not fit the receive, or an lkey failed (LOC_LEN_ERR either way). */
template <class P> bool Qp::copy_to_recv(const P &p) {
    const RecvWqe &r = resp_.cur_recv;
    if (uint64_t{resp_.recv_off} + p.payload_len > r.length)
        return false;
    mem::SglWriter out(*cfg_.mrs, cfg_.pd, r.wr.sg_list, r.wr.num_sge, resp_.recv_off);
    bool ok = true;
    wire::for_each_payload_chunk(
        p, [&](const uint8_t *src, uint32_t n) { ok = ok && out.put(src, n); });
    return ok;
}

/* Inlined: in the straight path the opcode's flags are constants. */
template <class P>
[[gnu::always_inline]] inline Verdict Qp::execute_send(const P &p, const wire::OpcodeInfo &op) {
    if (op.is(wire::kOpFirst)) {
        /* The receive leaves the queue now: with an SRQ, other QPs must not take it
         * while the rest of this message is on its way. */
        resp_.cur_recv = resp_.rcv->pop();
        resp_.recv_off = 0;
        resp_.in_send = true;
    }
    const RecvWqe &r = resp_.cur_recv;
    if (!copy_to_recv(p)) {
        resp_.in_send = false;
        complete_recv(r, WcStatus::LocLenErr, WcOpcode::Recv, resp_.recv_off, 0, 0);
        /* the LOC_LEN_ERR completion reports it: no event */
        return {Verdict::NakError, wire::kAethNakInvalidRequest, false,
                &Counters::resp_local_length_error};
    }
    cfg_.counters->rx_bytes_copied += p.payload_len;
    resp_.recv_off += p.payload_len;
    if (!op.is(wire::kOpLast))
        return {};
    resp_.in_send = false;
    if (op.is(wire::kOpInv)) [[unlikely]] {
        /* SEND with Invalidate: droce has no key a peer may invalidate (no memory
         * windows, no fast-registration MRs; a plain MR's rkey is not invalidatable), so
         * the request is one this responder cannot execute. It is refused as IBTA refuses
         * an R_Key it cannot invalidate (rxe: RESPST_ERR_INVALIDATE_RKEY), never completed
         * as an invalidation that did not happen: the peer's WR fails with NAK Invalid
         * Request, the receive completes with RemInvReqErr, QP to ERR. */
        complete_recv(r, WcStatus::RemInvReqErr, WcOpcode::Recv, resp_.recv_off, 0, 0);
        return {Verdict::NakError, wire::kAethNakInvalidRequest, false,
                &Counters::resp_invalidate_refused};
    }
    const bool imm = op.is(wire::kOpImm);
    const uint32_t flags = (imm ? kWcWithImm : 0u) | (p.bth.se ? kWcSolicited : 0u);
    complete_recv(r, WcStatus::Success, WcOpcode::Recv, resp_.recv_off, flags, imm ? p.imm : 0u);
    resp_.msn = (resp_.msn + 1) & 0xFFFFFF;
    return {};
}

/* `dst`: where this packet's payload goes, its key checked by check_rkey. */
template <class P>
[[gnu::always_inline]] inline void Qp::execute_write(const P &p, const wire::OpcodeInfo &op,
                                                     uint8_t *dst) {
    if (op.is(wire::kOpFirst)) {
        resp_.write = {p.reth.va, p.reth.rkey, p.reth.dma_len, p.reth.dma_len};
        resp_.in_write = !op.is(wire::kOpLast);
    }
    if (p.payload_len) {
        wire::for_each_payload_chunk(
            p, [&](const uint8_t *src, uint32_t n) __attribute__((always_inline)) {
                wire::detail::copy_payload(dst, src, n);
                dst += n;
            });
        resp_.write.va += p.payload_len;
        resp_.write.left -= p.payload_len;
        cfg_.counters->rx_bytes_copied += p.payload_len;
    }
    if (op.is(wire::kOpLast)) {
        resp_.in_write = false;
        resp_.msn = (resp_.msn + 1) & 0xFFFFFF;
        if (op.is(wire::kOpImm))
            complete_recv(resp_.rcv->pop(), WcStatus::Success, WcOpcode::RecvRdmaWithImm,
                          resp_.write.len, kWcWithImm | (p.bth.se ? kWcSolicited : 0u), p.imm);
    }
}

/* Takes a response resource for the request at psn (the ePSN) and sends what TX has
 * room for; the rest leaves from progress(). */
void Qp::queue_response(const ReadResource &res) {
    flush_owed_ack(); /* an ACK of earlier requests goes before the response */
    ReadResource *r = alloc_read_resource();
    *r = res;
    r->valid = true;
    resp_.epsn = wire::psn_add(res.psn, res.npkts);
    resp_.msn = (resp_.msn + 1) & 0xFFFFFF;
    flush_read_responses();
}

void Qp::execute_read(const wire::ParsedPacket &p) {
    ReadResource r{};
    r.psn = p.bth.psn;
    r.va = p.reth.va;
    r.rkey = p.reth.rkey;
    r.length = p.reth.dma_len;
    r.npkts = read_npkts(r.length, mtu());
    queue_response(r);
}

/* Executed once, here; a duplicate replays the saved result (responder_duplicate). */
void Qp::execute_atomic(const wire::ParsedPacket &p, uint8_t *host) {
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
    ReadResource r{};
    r.psn = p.bth.psn;
    r.npkts = 1;
    r.is_atomic = true;
    r.atomic_orig = orig;
    queue_response(r);
}

inline Verdict Qp::execute(const wire::ParsedPacket &p, uint8_t *host) {
    const wire::OpcodeInfo &op = *p.op;
    if (op.is(wire::kOpSend))
        return execute_send(p, op);
    if (op.is(wire::kOpWrite))
        execute_write(p, op, host);
    else if (op.is(wire::kOpRead))
        execute_read(p);
    else if (op.is(wire::kOpAtomic))
        execute_atomic(p, host);
    else
        return Verdict::invalid_request();
    return {};
}

/* SEND and WRITE: the ePSN moves on, and an ACK is owed on AckReq or every ack_every
 * packets (coalesced: owe_ack). READ and atomic requests are acknowledged by their
 * responses, queued by execute. */
template <class P> [[gnu::always_inline]] inline void Qp::acknowledge(const P &p) {
    if (p.op->is(wire::kOpRead) || p.op->is(wire::kOpAtomic))
        return;
    if (state_ == QpState::Err)
        return; /* its receive completion was lost (CQ overflow): no ACK from ERR */
    resp_.epsn = wire::psn_add(p.bth.psn, 1);
    ++resp_.pkts_since_ack;
    if (p.bth.ack_req || (cfg_.tuning.ack_every && resp_.pkts_since_ack >= cfg_.tuning.ack_every)) {
        resp_.pkts_since_ack = 0;
        owe_ack(p.bth.psn);
    }
}

/* A request that did not pass: its counter, then the answer its verdict names. */
void Qp::respond(const wire::ParsedPacket &p, const Verdict &v, Time now) {
    if (v.counter)
        ++(cfg_.counters->*v.counter);
    switch (v.kind) {
    case Verdict::Duplicate:
        responder_duplicate(p, now);
        break;
    case Verdict::OutOfSequence:
        responder_ahead(p, now);
        break;
    case Verdict::Busy:
        resp_.busy_dropped = true; /* responder_progress() NAKs it once the responses are out */
        break;
    case Verdict::Rnr:
        send_ack(static_cast<uint8_t>(kRnrNak | (attr_.min_rnr_timer & 0x1F)), p.bth.psn);
        break;
    case Verdict::NakError:
        nak_and_error(v.syndrome, p.bth.psn, v.raise_event);
        break;
    case Verdict::Accept:
        break;
    }
}

/* rxe's responder as a list: the PSN, then whether it may overtake queued READ
 * responses, then the request's checks; an accepted request executes and is
 * acknowledged, any other gets the answer its verdict names. */
void Qp::responder_on_packet(const wire::ParsedPacket &p, Time now) {
    Verdict v = check_psn(p.bth.psn, resp_.epsn);
    if (v.accepted())
        v = check_pending_read(p);
    if (v.accepted()) {
        /* In sequence: the next gap gets its NAK again, and starts a new run. */
        resp_.nak_sent = false;
        resp_.ahead_run = 0;
        uint8_t *host = nullptr;
        v = check_request(p, &host);
        if (v.accepted())
            v = execute(p, host);
    }
    if (v.accepted())
        acknowledge(p);
    else
        respond(p, v, now);
}

/* What check_request would say of a SEND ONLY or WRITE ONLY, true where it accepts
 * (host: where a WRITE's payload goes); and a SEND's payload fits its receive's one SGE
 * (more SGEs, or an SGE that could refuse the payload, are the generic path's to
 * handle: its failure is an answer). Changes nothing. Per opcode: the checks read its
 * row of the opcode table as constants. */
template <uint8_t Opc>
inline bool Qp::straight_request_ok(const wire::SmallFrame &f, uint8_t **host) const {
    constexpr wire::OpcodeInfo op = wire::kOpcodeTable[Opc];
    if (!check_op_seq(op, resp_.in_send, resp_.in_write).accepted() ||
        !check_op_valid(op, attr_.qp_access_flags).accepted() ||
        !check_length(op, f.payload_len, mtu()).accepted() ||
        !check_resource(op, resp_.rcv->empty()).accepted())
        return false;
    if constexpr (op.is(wire::kOpWrite)) {
        return check_write_rkey(op, f.reth, f.payload_len, *cfg_.mrs, cfg_.pd, resp_.write, host)
            .accepted();
    } else {
        const RecvWqe &r = resp_.rcv->front();
        if (f.payload_len == 0)
            return true;
        uint8_t *dst;
        return r.wr.num_sge == 1 && r.wr.sg_list[0].length >= f.payload_len &&
               cfg_.mrs->check(r.wr.sg_list[0].lkey, cfg_.pd, r.wr.sg_list[0].addr, f.payload_len,
                               kAccessLocalWrite, &dst) == mem::AccessResult::Ok;
    }
}

/* The straight path of the responder: a SEND ONLY or WRITE ONLY (either with immediate or
 * without) read from the fast parse's view, through on_packet's header checks and the
 * responder's steps, where it passes them all: from the QP's peer, its P_Key, not CE
 * marked while DCQCN runs (the NP's work is on_packet's), the QP ready, in sequence,
 * nothing queued ahead of it, check_request's verdict Accept. Then it executes and is
 * acknowledged by the very steps responder_on_packet runs. Anything else changes nothing
 * and returns false: the generic path, given the ParsedPacket, answers it. */
template <uint8_t Opc> inline bool Qp::responder_straight(const wire::SmallFrame &f, Time now) {
    constexpr wire::OpcodeInfo op = wire::kOpcodeTable[Opc];
    if (!peer_v4_ || std::memcmp(f.ip_pair, peer_ip_pair_, sizeof peer_ip_pair_) != 0 ||
        !pkey_match(f.bth.pkey, pkey_) || (f.ecn == 3 && cc_))
        return false;
    const bool ready = state_ == QpState::Rts || state_ == QpState::Sqd ||
                       (state_ == QpState::Rtr && resp_.comm_est);
    if (!ready || !check_psn(f.bth.psn, resp_.epsn).accepted() || read_responses_pending())
        return false;
    uint8_t *host = nullptr;
    if (!straight_request_ok<Opc>(f, &host))
        return false;
    now_ = now;
    resp_.nak_sent = false;
    resp_.ahead_run = 0;
    count_request(op);
    ++cfg_.counters->resp_straight;
    if constexpr (op.is(wire::kOpWrite)) {
        execute_write(f, op, host);
    } else if (const Verdict v = execute_send(f, op); !v.accepted()) {
        /* The receive refused the payload (the checks above leave it no reason to): as
         * respond() answers it. */
        ++(cfg_.counters->*v.counter);
        nak_and_error(v.syndrome, f.bth.psn, v.raise_event);
        return true;
    }
    acknowledge(f);
    return true;
}

bool Qp::on_small_frame(const wire::SmallFrame &f, Time now) {
    switch (f.bth.opcode) {
    case wire::kRcWriteOnly:
        return responder_straight<wire::kRcWriteOnly>(f, now);
    case wire::kRcWriteOnlyImm:
        return responder_straight<wire::kRcWriteOnlyImm>(f, now);
    case wire::kRcSendOnly:
        return responder_straight<wire::kRcSendOnly>(f, now);
    case wire::kRcSendOnlyImm:
        return responder_straight<wire::kRcSendOnlyImm>(f, now);
    default:
        return false; /* an ACK: the completer's */
    }
}

} // namespace droce::rc
