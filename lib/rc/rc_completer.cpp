/* SPDX-License-Identifier: BSD-3-Clause */
/* Completer: consumes ACKs, NAKs, READ responses and atomic ACKs; retires send WQEs
 * strictly in order; drives go-back-N on NAK, timeout and implied NAK; counts retries
 * and fails the QP when they run out. */
#include <cstring>

#include "mem_sgl.h"
#include "rc_qp.h"

namespace droce::rc {

namespace {
bool op_is_plain_ack(const wire::ParsedPacket &p) {
    return p.bth.opcode == wire::kRcAcknowledge && p.aeth.type() == wire::AethType::Ack;
}
} // namespace

void Qp::completer_on_packet(const wire::ParsedPacket &p, Time now) {
    const uint32_t psn = p.bth.psn;
    /* Only PSNs in [una, npsn) can be answered; anything else is stale or forged. */
    if (wire::psn_diff(psn, req_.sent_hi_psn) >= 0 || req_.sq_head == req_.sq_tail) {
        ++cfg_.counters->rx_ghost_response;
        return;
    }
    if (wire::psn_diff(psn, comp_.una_psn) < 0) {
        /* Older than anything outstanding. An ACK of exactly una-1 is the responder
         * re-ACKing one of our duplicates: it is alive and working through a backlog of
         * them (a slow software peer after a go-back-N). Restart the timer so the new
         * packets queued behind that backlog get their time, instead of piling more
         * duplicates on top and running out of retries; the retry budget is not refilled. */
        if (op_is_plain_ack(p) && wire::psn_diff(psn, comp_.una_psn) == -1 &&
            wire::psn_diff(req_.npsn, comp_.una_psn) > 0) {
            ++cfg_.counters->rx_duplicate_ack;
            arm_retransmit(now);
        }
        return;
    }
    const uint8_t op = p.bth.opcode;
    if (op == wire::kRcAcknowledge) {
        const uint32_t prev = wire::psn_add(psn, wire::kPsnMask);
        switch (p.aeth.type()) {
        case wire::AethType::Ack:
            ack_through(psn, now);
            return;
        case wire::AethType::RnrNak: {
            ack_through(prev, now);
            if (state_ == QpState::Err)
                return;
            ++cfg_.counters->rnr_nak_retry_err;
            if (comp_.rnr_retry_left == 0) {
                requester_error(req_.sq_head, WcStatus::RnrRetryExcErr);
                return;
            }
            if (attr_.rnr_retry != 7)
                --comp_.rnr_retry_left;
            rewind_to(psn);
            comp_.retrans_deadline = 0;
            comp_.rnr_deadline =
                now + static_cast<Time>(wire::rnr_timer_code_to_us(p.aeth.value())) * 1000;
            return;
        }
        case wire::AethType::Nak: {
            ack_through(prev, now);
            if (state_ == QpState::Err || req_.sq_head == req_.sq_tail)
                return;
            switch (p.aeth.syndrome) {
            case wire::kAethNakPsnSeqErr:
                ++cfg_.counters->packet_seq_err;
                rewind_to(psn);
                arm_retransmit(now);
                return;
            case wire::kAethNakInvalidRequest:
                ++cfg_.counters->req_remote_invalid_request;
                requester_error(req_.sq_head, WcStatus::RemInvReqErr);
                return;
            case wire::kAethNakRemoteAccessErr:
                ++cfg_.counters->req_remote_access_errors;
                requester_error(req_.sq_head, WcStatus::RemAccessErr);
                return;
            default:
                ++cfg_.counters->req_remote_operational_error;
                requester_error(req_.sq_head, WcStatus::RemOpErr);
                return;
            }
        }
        default:
            ++cfg_.counters->rx_unexpected_response;
            return;
        }
    }

    /* READ response or atomic ACK: belongs to the oldest unfinished READ/atomic. */
    for (uint32_t i = req_.sq_head; i != req_.sq_tail; ++i) {
        SendWqe &w = req_.sq[i & req_.sq_mask];
        if (!w.started)
            break;
        if (wire::psn_diff(psn, w.first_psn) < 0 || wire::psn_diff(psn, w.last_psn) > 0)
            continue;
        if (p.op->is(wire::kOpRead) && w.wr.opcode == WrOpcode::RdmaRead)
            on_read_response(p, w, now);
        else if (p.op->is(wire::kOpAtomic) && (w.wr.opcode == WrOpcode::AtomicCmpAndSwp ||
                                               w.wr.opcode == WrOpcode::AtomicFetchAndAdd))
            on_atomic_ack(p, w, now);
        else
            ++cfg_.counters->rx_unexpected_response;
        return;
    }
    ++cfg_.counters->rx_unexpected_response;
}

void Qp::on_read_response(const wire::ParsedPacket &p, SendWqe &w, Time now) {
    const uint32_t m = mtu();
    const uint32_t expect = wire::psn_add(w.first_psn, w.read_off / m);
    const int32_t d = wire::psn_diff(p.bth.psn, expect);
    if (d < 0)
        return; /* duplicate response */
    /* Everything before the READ is implicitly acknowledged by its response. */
    ack_through(wire::psn_add(w.first_psn, wire::kPsnMask), now);
    if (state_ == QpState::Err || &req_.sq[req_.sq_head & req_.sq_mask] != &w)
        return; /* an earlier READ/atomic is still missing data: ack_through rewound */
    if (d > 0) {
        /* A response went missing: ask again from the first missing byte. */
        ++cfg_.counters->implied_nak_seq_err;
        rewind_to(expect);
        return;
    }
    const bool last = p.op->is(wire::kOpLast);
    const uint32_t left = w.length - w.read_off;
    const uint32_t want = last ? left : m;
    if (p.payload_len != want || (!last && left <= m)) {
        ++cfg_.counters->rx_unexpected_response;
        requester_error(req_.sq_head, WcStatus::BadRespErr);
        return;
    }
    /* Scatter into the local SGEs, their lkeys checked for this packet: the application
     * may have deregistered a region since the WR started (verbs: LOC_PROT_ERR). */
    mem::SglWriter out(*cfg_.mrs, cfg_.pd, w.wr.sg_list, w.wr.num_sge, w.read_off);
    bool ok = true;
    wire::for_each_payload_chunk(
        p, [&](const uint8_t *src, uint32_t len) { ok = ok && out.put(src, len); });
    if (!ok) {
        requester_error(req_.sq_head, WcStatus::LocProtErr);
        return;
    }
    cfg_.counters->rx_bytes_copied += p.payload_len;
    w.read_off += p.payload_len;
    if (last)
        ack_through(w.last_psn, now);
    else {
        comp_.una_psn = wire::psn_add(p.bth.psn, 1);
        catch_up_with_una();
        arm_retransmit(now);
        comp_.retry_left = attr_.retry_cnt;
    }
}

void Qp::on_atomic_ack(const wire::ParsedPacket &p, SendWqe &w, Time now) {
    ack_through(wire::psn_add(w.first_psn, wire::kPsnMask), now);
    if (state_ == QpState::Err || &req_.sq[req_.sq_head & req_.sq_mask] != &w)
        return;
    const uint64_t orig = p.atomic_ack.orig;
    mem::SglWriter out(*cfg_.mrs, cfg_.pd, w.wr.sg_list, w.wr.num_sge, 0);
    if (!out.put(reinterpret_cast<const uint8_t *>(&orig), sizeof(orig))) {
        requester_error(req_.sq_head, WcStatus::LocProtErr);
        return;
    }
    w.read_off = 8;
    ack_through(w.last_psn, now);
}

void Qp::ack_through(uint32_t psn, Time now) {
    if (wire::psn_diff(psn, comp_.una_psn) < 0)
        return;
    const uint32_t head0 = req_.sq_head;
    while (req_.sq_head != req_.sq_tail) {
        SendWqe &w = req_.sq[req_.sq_head & req_.sq_mask];
        if (!w.started || wire::psn_diff(w.last_psn, psn) > 0)
            break;
        const bool rd = w.wr.opcode == WrOpcode::RdmaRead;
        const bool at =
            w.wr.opcode == WrOpcode::AtomicCmpAndSwp || w.wr.opcode == WrOpcode::AtomicFetchAndAdd;
        if ((rd && w.read_off < w.length) || (at && w.read_off == 0)) {
            /* An ACK past a READ/atomic whose data never came: its response was lost. */
            ++cfg_.counters->implied_nak_seq_err;
            comp_.una_psn = wire::psn_add(w.first_psn, rd ? w.read_off / mtu() : 0);
            rewind_to(comp_.una_psn);
            arm_retransmit(now);
            return;
        }
        if (rd || at)
            --req_.rd_atomic_inflight;
        /* Retired before its completion is written: a completion the CQ has no room for
         * puts the QP in ERR, whose flush must not see this WQE again. */
        ++req_.sq_head;
        if (w.signaled) { /* an unsignaled success leaves no completion (complete_send) */
            complete_send(w, WcStatus::Success);
            if (state_ == QpState::Err)
                return;
        }
    }
    check_sq_drained();
    uint32_t una = wire::psn_add(psn, 1);
    if (req_.sq_head != req_.sq_tail) {
        /* An ACK never acknowledges READ/atomic PSNs whose responses have not arrived
         * (only the responses do): a plain ACK inside a READ's range (forged, or from
         * a broken peer) must not move una past them, or the responses still to come
         * would be taken for duplicates and the requester rewound behind una. */
        const SendWqe &w = req_.sq[req_.sq_head & req_.sq_mask];
        const bool rd = w.wr.opcode == WrOpcode::RdmaRead;
        const bool at =
            w.wr.opcode == WrOpcode::AtomicCmpAndSwp || w.wr.opcode == WrOpcode::AtomicFetchAndAdd;
        if (w.started && (rd || at)) {
            const uint32_t missing = wire::psn_add(w.first_psn, rd ? w.read_off / mtu() : 0);
            if (wire::psn_diff(una, missing) > 0)
                una = missing;
        }
    }
    if (una == comp_.una_psn && req_.sq_head == head0)
        return; /* nothing new acknowledged: no progress, budgets and timer unchanged */
    comp_.una_psn = una;
    catch_up_with_una();
    /* Any new acknowledgement is forward progress: the retry budgets start over. */
    comp_.retry_left = attr_.retry_cnt;
    comp_.rnr_retry_left = attr_.rnr_retry;
    arm_retransmit(now);
}

/* An acknowledgement (or READ response) may arrive after a rewind for packets the peer had
 * after all: never resend what it already has. */
void Qp::catch_up_with_una() {
    if (static_cast<int32_t>(req_.sq_head - req_.sq_cur) > 0) {
        req_.sq_cur = req_.sq_head;
        req_.cur_off = 0;
    }
    if (wire::psn_diff(req_.npsn, comp_.una_psn) < 0) {
        if (req_.sq_head != req_.sq_tail && req_.sq[req_.sq_head & req_.sq_mask].started)
            rewind_to(comp_.una_psn);
        else
            req_.npsn = comp_.una_psn;
    }
}

/* The WR at SQ index idx fails with st and the QP goes to ERR. Completions leave in SQ
 * order: WRs ahead of it (started, waiting for ACKs an ERR QP no longer takes) are
 * flushed first, then its error, then the flush of the rest. The state changes first,
 * so a completion that finds the CQ full does not re-enter. A requester error is
 * reported by its completion: no event (verbs). */
void Qp::requester_error(uint32_t idx, WcStatus st) {
    if (state_ == QpState::Err)
        return;
    state_ = QpState::Err;
    attr_.qp_state = QpState::Err;
    req_.sqd_notify = false;
    while (req_.sq_head != idx && req_.sq_head != req_.sq_tail) {
        SendWqe &h = req_.sq[req_.sq_head++ & req_.sq_mask];
        h.signaled = true;
        complete_send(h, WcStatus::WrFlushErr);
    }
    if (req_.sq_head != req_.sq_tail) {
        SendWqe &w = req_.sq[req_.sq_head++ & req_.sq_mask];
        w.signaled = true;
        complete_send(w, st);
    }
    flush_queues();
    error_events(false, AsyncEventType::QpFatal);
}

void Qp::retry_or_fail(Time now) {
    ++cfg_.counters->local_ack_timeout_err;
    comp_.retrans_deadline = 0;
    if (req_.sq_head == req_.sq_tail)
        return;
    if (comp_.retry_left == 0) {
        requester_error(req_.sq_head, WcStatus::RetryExcErr);
        return;
    }
    --comp_.retry_left;
    rewind_to(comp_.una_psn);
    arm_retransmit(now);
}

} // namespace droce::rc
