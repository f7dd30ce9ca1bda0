/* SPDX-License-Identifier: BSD-3-Clause */
/* Requester: turns send WQEs into request packets. Segments by path MTU, assigns PSNs,
 * asks for ACKs (message end and every ackreq_every packets, as rxe does), keeps at most
 * max_inflight_pkts unacknowledged, honours fences and the READ/atomic limit, and
 * restarts from any PSN (go-back-N) when the completer rewinds it. */
#include <algorithm>

#include "rc_cc.h"
#include "rc_qp.h"

namespace droce::rc {

namespace {

/* The opcode of a one-packet message of op on the straight path, 0 for none. */
uint8_t straight_opcode(WrOpcode op) {
    switch (op) {
    case WrOpcode::Send:
        return wire::kRcSendOnly;
    case WrOpcode::SendWithImm:
        return wire::kRcSendOnlyImm;
    case WrOpcode::RdmaWrite:
        return wire::kRcWriteOnly;
    case WrOpcode::RdmaWriteWithImm:
        return wire::kRcWriteOnlyImm;
    default:
        return 0;
    }
}

bool is_read_or_atomic(WrOpcode op) {
    return op == WrOpcode::RdmaRead || op == WrOpcode::AtomicCmpAndSwp ||
           op == WrOpcode::AtomicFetchAndAdd;
}

uint8_t send_opcode(bool first, bool last, WrOpcode op) {
    using namespace wire;
    const bool imm = op == WrOpcode::SendWithImm;
    const bool inv = op == WrOpcode::SendWithInv;
    if (first && last)
        return imm ? kRcSendOnlyImm : inv ? kRcSendOnlyInv : kRcSendOnly;
    if (first)
        return kRcSendFirst;
    if (last)
        return imm ? kRcSendLastImm : inv ? kRcSendLastInv : kRcSendLast;
    return kRcSendMiddle;
}

uint8_t write_opcode(bool first, bool last, WrOpcode op) {
    using namespace wire;
    const bool imm = op == WrOpcode::RdmaWriteWithImm;
    if (first && last)
        return imm ? kRcWriteOnlyImm : kRcWriteOnly;
    if (first)
        return kRcWriteFirst;
    if (last)
        return imm ? kRcWriteLastImm : kRcWriteLast;
    return kRcWriteMiddle;
}

/* A READ request takes all its response PSNs at once (other ops one per packet, which
 * max_inflight_pkts bounds): the PSNs outstanding after it must stay under kPsnWindow. */
bool read_fits_psn_window(uint32_t outstanding, uint32_t length, uint32_t m) {
    const uint64_t npkts = length == 0 ? 1 : (uint64_t{length} + m - 1) / m;
    return outstanding + npkts < kPsnWindow;
}

/* A retransmission is always copied, never attached zero-copy: the original (or the
 * ACK for it) may be in flight, so the ACK that completes the WR can come before the
 * port (over net_ring: the peer's RX) has read this copy; the application may then
 * refill the buffer and the frame would carry bytes its ICRC was not computed over.
 * Copied at transmit time, it holds what the WR sent. Retransmissions are rare, so the
 * copy costs nothing on the normal path (one PSN compare). */
void copy_only(wire::FrameSpec::Seg *segs, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i)
        segs[i].mr_key = 0;
}

} // namespace

/* Whether requester_progress() would send a packet now: the same gates, no side effects. */
bool Qp::requester_can_send() const {
    if ((state_ != QpState::Rts && state_ != QpState::Sqd) || comp_.rnr_deadline != 0 ||
        req_.sq_cur == req_.sq_tail)
        return false;
    if (static_cast<uint32_t>(wire::psn_diff(req_.npsn, comp_.una_psn)) >=
        cfg_.tuning.max_inflight_pkts)
        return false;
    const SendWqe &w = req_.sq[req_.sq_cur & req_.sq_mask];
    if (w.started)
        return true;
    if (state_ == QpState::Sqd)
        return false;
    if ((w.wr.send_flags & kSendFence) && req_.rd_atomic_inflight > 0)
        return false;
    if (w.wr.opcode == WrOpcode::RdmaRead &&
        !read_fits_psn_window(static_cast<uint32_t>(wire::psn_diff(req_.npsn, comp_.una_psn)),
                              w.length, mtu()))
        return false;
    return !is_read_or_atomic(w.wr.opcode) ||
           req_.rd_atomic_inflight < std::max<uint32_t>(1, attr_.max_rd_atomic);
}

void Qp::requester_progress(Time now) {
    if (comp_.rnr_deadline != 0)
        return; /* paused by an RNR NAK until on_timer() */
    if (pace_until_ > now)
        return; /* held by the pacer until on_timer() */
    /* The host address of the first SGE of a WQE started in this very call: its region
     * was checked there, so the packet that follows at once needs no second lookup. */
    uint8_t *host0 = nullptr;
    while (req_.sq_cur != req_.sq_tail && state_ != QpState::Err) {
        SendWqe &w = req_.sq[req_.sq_cur & req_.sq_mask];
        if (!w.started) {
            if (state_ == QpState::Sqd)
                return; /* draining: finish what started, start nothing new */
            if ((w.wr.send_flags & kSendFence) && req_.rd_atomic_inflight > 0)
                return;
            if (is_read_or_atomic(w.wr.opcode) &&
                req_.rd_atomic_inflight >= std::max<uint32_t>(1, attr_.max_rd_atomic))
                return;
            const uint32_t outstanding =
                static_cast<uint32_t>(wire::psn_diff(req_.npsn, comp_.una_psn));
            if (w.wr.opcode == WrOpcode::RdmaRead &&
                !read_fits_psn_window(outstanding, w.length, mtu())) {
                /* Waits for ACKs; alone it can never fit (the path MTU shrank after
                 * post_send checked it): the WR fails rather than the SQ stalling. */
                if (outstanding == 0)
                    requester_error(req_.sq_cur, WcStatus::LocLenErr);
                return;
            }
            if (!start_wqe(w, &host0))
                return;
        }
        if (static_cast<uint32_t>(wire::psn_diff(req_.npsn, comp_.una_psn)) >=
            cfg_.tuning.max_inflight_pkts)
            return;
        const TxPort::Straight st = send_first_straight(w, now, host0);
        if (st == TxPort::Straight::Blocked ||
            (st == TxPort::Straight::Unserved && !send_next_packet(w, now)))
            return;
        host0 = nullptr; /* checked for that WQE, and only just now */
    }
}

[[gnu::always_inline]] inline bool Qp::start_wqe(SendWqe &w, uint8_t **host0) {
    /* Local access is checked when the WR starts, so that a bad lkey fails before any
     * packet leaves, and again for every packet that reads or writes the region (gather
     * below, scatter for READ responses and atomic results): a region deregistered while
     * the WR is in flight is never touched after its dereg (rxe's copy_data looks the MR
     * up per packet the same way). Inline data lives in the WQE: no key to check. */
    if (w.wr.send_flags & kSendInline)
        return start_wqe_psns(w);
    const uint32_t need = is_read_or_atomic(w.wr.opcode) ? uint32_t{kAccessLocalWrite} : 0u;
    for (int i = 0; i < w.wr.num_sge; ++i) {
        const Sge &s = w.wr.sg_list[i];
        uint8_t *host;
        if (s.length != 0 && cfg_.mrs->check(s.lkey, cfg_.pd, s.addr, s.length, need, &host) !=
                                 mem::AccessResult::Ok) {
            requester_error(req_.sq_cur, WcStatus::LocProtErr);
            return false;
        }
        if (i == 0 && s.length != 0)
            *host0 = host;
    }
    return start_wqe_psns(w);
}

[[gnu::always_inline]] inline bool Qp::start_wqe_psns(SendWqe &w) {
    const uint32_t m = mtu();
    switch (w.wr.opcode) {
    case WrOpcode::AtomicCmpAndSwp:
    case WrOpcode::AtomicFetchAndAdd:
        w.npkts = 1;
        break;
    default: /* the path MTU is a power of two: a shift, not a division per WR */
        w.npkts = w.length == 0 ? 1 : (w.length + m - 1) >> __builtin_ctz(m);
    }
    w.first_psn = req_.npsn;
    w.last_psn = wire::psn_add(req_.npsn, w.npkts - 1);
    w.read_off = 0;
    w.started = true;
    if (is_read_or_atomic(w.wr.opcode))
        ++req_.rd_atomic_inflight;
    req_.cur_off = 0;
    return true;
}

/* The segments of bytes [off, off+len) of w's message. Each region is looked up again
 * (one O(1) check per SGE the packet touches, the table only read): the WR may have
 * outlived its region, and a packet built after the dereg, a retransmission included,
 * must not read memory the application may have freed. False: an lkey no longer checks. */
bool Qp::gather(const SendWqe &w, uint32_t off, uint32_t len, wire::FrameSpec::Seg *segs,
                uint32_t *nsegs) const {
    if (w.wr.send_flags & kSendInline) {
        /* Inline data lives in the WQE, contiguous, not in a region: never attached
         * zero-copy. */
        segs[0] = {w.inline_data + off, len, 0u};
        *nsegs = len != 0 ? 1 : 0;
        return true;
    }
    uint32_t n = 0;
    for (int i = 0; i < w.wr.num_sge && len > 0; ++i) {
        const Sge &s = w.wr.sg_list[i];
        if (off >= s.length) {
            off -= s.length;
            continue;
        }
        const uint32_t take = std::min(s.length - off, len);
        uint8_t *host;
        if (cfg_.mrs->check(s.lkey, cfg_.pd, s.addr + off, take, 0, &host) != mem::AccessResult::Ok)
            [[unlikely]]
            return false;
        segs[n].addr = host;
        segs[n].len = take;
        segs[n].mr_key = s.lkey;
        ++n;
        len -= take;
        off = 0;
    }
    *nsegs = n;
    return true;
}

/* The straight path (wire_data_template.h) of a one-packet WRITE or SEND sent for the
 * first time (opcode: its one-packet opcode): its payload inline or in one SGE (the
 * caller checks the rest). Unserved: the caller builds the FrameSpec, as for every other packet, and
 * reports what gather finds wrong. */
[[gnu::always_inline]] inline TxPort::Straight Qp::send_straight(const SendWqe &w, uint8_t opcode,
                                                                 uint8_t *host0) {
    wire::DataFrame d;
    d.opcode = opcode;
    d.payload = nullptr;
    d.mr_key = 0;
    if (w.wr.send_flags & kSendInline) {
        d.payload = w.inline_data;
    } else if (w.length != 0) {
        if (w.wr.num_sge != 1)
            return TxPort::Straight::Unserved;
        const Sge &s = w.wr.sg_list[0];
        uint8_t *host = host0;
        if (host == nullptr &&
            cfg_.mrs->check(s.lkey, cfg_.pd, s.addr, w.length, 0, &host) != mem::AccessResult::Ok)
            [[unlikely]]
            return TxPort::Straight::Unserved;
        d.payload = host;
        d.mr_key = s.lkey;
    }
    d.path_gen = path_gen_;
    d.tos = data_tos();
    d.se = (w.wr.send_flags & kSendSolicited) != 0;
    d.ack_req = true; /* the last packet of its message */
    d.psn = w.first_psn;
    d.reth = {w.wr.remote_addr, w.wr.rkey, w.length};
    d.imm = w.wr.imm_data;
    d.len = w.length;
    return cfg_.port->transmit_data(d);
}

/* pace_bytes() of the FrameSpec the straight packet of w (opcode op) stands for: a RoCEv2
 * frame on the QP's path. */
uint32_t Qp::straight_pace_bytes(const SendWqe &w, uint8_t op) const {
    const size_t headers = wire::encoded_len(path_.eth) +
                           (path_.ipv6 ? wire::kIpv6Len : wire::kIpv4Len) + wire::kUdpLen +
                           wire::opcode_info(op).hdr_len;
    return static_cast<uint32_t>(headers + w.length + wire::pad_len(w.length) + wire::kIcrcLen) +
           kEthWireOverhead;
}

/* The next packet of w on the straight path, if it is a one-packet WRITE or SEND sent for
 * the first time: Sent, Blocked (nothing left, as send_next_packet false), or Unserved
 * (send_next_packet builds it). Inline in requester_progress: the generic path's frame
 * (a FrameSpec and its segments on the stack) is not set up for the packets that never
 * take it. */
[[gnu::always_inline]] inline TxPort::Straight Qp::send_first_straight(SendWqe &w, Time now,
                                                                       uint8_t *host0) {
    const uint8_t op = straight_opcode(w.wr.opcode);
    if (op == 0 || req_.cur_off != 0 || w.length > mtu() || path_.rocev1 ||
        wire::psn_diff(w.first_psn, req_.sent_hi_psn) < 0)
        return TxPort::Straight::Unserved;
    /* Paced as the FrameSpec path paces (an Unserved frame is admitted there again, with
     * the same bytes: admitting has no effect but to clear the hold). */
    uint32_t wire_bytes = 0;
    if (paced_) [[unlikely]] {
        wire_bytes = straight_pace_bytes(w, op);
        if (!cc_pace_admit(wire_bytes, now))
            return TxPort::Straight::Blocked;
    }
    const TxPort::Straight st = send_straight(w, op, host0);
    if (st == TxPort::Straight::Sent) [[likely]] {
        if (wire_bytes != 0)
            cc_sent(wire_bytes, now);
        packet_sent(w, w.first_psn, true, w.length, true, now);
    } else if (st == TxPort::Straight::Blocked) {
        ++cfg_.counters->tx_blocked;
    }
    return st;
}

bool Qp::send_next_packet(SendWqe &w, Time now) {
    const uint32_t m = mtu();
    wire::FrameSpec::Seg segs[kMaxSge];
    wire::FrameSpec f;
    uint32_t psn;
    bool done_wqe = false;
    uint32_t chunk = 0;
    switch (w.wr.opcode) {
    case WrOpcode::Send:
    case WrOpcode::SendWithImm:
    case WrOpcode::SendWithInv:
    case WrOpcode::RdmaWrite:
    case WrOpcode::RdmaWriteWithImm: {
        const uint32_t off = req_.cur_off;
        chunk = std::min(m, w.length - off);
        const bool first = off == 0;
        const bool last = off + chunk >= w.length;
        const bool is_send = w.wr.opcode == WrOpcode::Send ||
                             w.wr.opcode == WrOpcode::SendWithImm ||
                             w.wr.opcode == WrOpcode::SendWithInv;
        psn = wire::psn_add(w.first_psn, off / m);
        base_frame(f,
                   is_send ? send_opcode(first, last, w.wr.opcode)
                           : write_opcode(first, last, w.wr.opcode),
                   psn);
        if (!is_send && first)
            f.reth = {w.wr.remote_addr, w.wr.rkey, w.length};
        f.imm = w.wr.imm_data;
        f.ieth = w.wr.invalidate_rkey;
        f.bth.se = last && (w.wr.send_flags & kSendSolicited) != 0;
        if (!gather(w, off, chunk, segs, &f.nsegs)) [[unlikely]] {
            /* Its region was deregistered after the WR started (verbs: a WR must not
             * outlive its MR; hardware reports the same local protection error). */
            ++cfg_.counters->req_local_prot_error;
            requester_error(req_.sq_cur, WcStatus::LocProtErr);
            return false;
        }
        if (wire::psn_diff(psn, req_.sent_hi_psn) < 0) [[unlikely]]
            copy_only(segs, f.nsegs);
        f.segs = segs;
        f.payload_len = chunk;
        done_wqe = last;
        f.bth.ack_req = last || static_cast<uint32_t>(wire::psn_diff(psn, req_.ackreq_psn)) >=
                                    cfg_.tuning.ackreq_every;
        break;
    }
    case WrOpcode::RdmaRead: {
        /* A retried READ asks only for what has not arrived yet. */
        const uint32_t off = w.read_off;
        psn = wire::psn_add(w.first_psn, off / m);
        base_frame(f, wire::kRcReadRequest, psn);
        f.reth = {w.wr.remote_addr + off, w.wr.rkey, w.length - off};
        f.bth.ack_req = true;
        done_wqe = true;
        break;
    }
    default: { /* atomics */
        psn = w.first_psn;
        base_frame(
            f, w.wr.opcode == WrOpcode::AtomicCmpAndSwp ? wire::kRcCompareSwap : wire::kRcFetchAdd,
            psn);
        f.atomic.va = w.wr.remote_addr;
        f.atomic.rkey = w.wr.rkey;
        if (w.wr.opcode == WrOpcode::AtomicCmpAndSwp) {
            f.atomic.swap_add = w.wr.swap;
            f.atomic.compare = w.wr.compare_add;
        } else {
            f.atomic.swap_add = w.wr.compare_add;
        }
        f.bth.ack_req = true;
        done_wqe = true;
        break;
    }
    }
    f.tos = data_tos();
    uint32_t wire_bytes = 0;
    if (paced_) {
        wire_bytes = pace_bytes(f);
        if (!cc_pace_admit(wire_bytes, now))
            return false;
    }
    if (!cfg_.port->transmit(f)) {
        ++cfg_.counters->tx_blocked;
        return false;
    }
    if (wire_bytes != 0)
        cc_sent(wire_bytes, now);
    packet_sent(w, psn, f.bth.ack_req, chunk, done_wqe, now);
    return true;
}

/* What a packet of w that left (PSN psn, chunk payload bytes) moves on: PSNs, the WQE,
 * the retransmission timer. */
[[gnu::always_inline]] inline void Qp::packet_sent(const SendWqe &w, uint32_t psn, bool ack_req,
                                                   uint32_t chunk, bool done_wqe, Time now) {
    if (ack_req)
        req_.ackreq_psn = psn;
    /* PSNs the packet consumes: a READ request takes one per response packet. */
    const uint32_t next =
        w.wr.opcode == WrOpcode::RdmaRead ? wire::psn_add(w.last_psn, 1) : wire::psn_add(psn, 1);
    if (wire::psn_diff(psn, req_.sent_hi_psn) < 0)
        ++cfg_.counters->retransmitted_packets;
    else
        req_.sent_hi_psn = next;
    req_.npsn = next;
    if (done_wqe) {
        ++req_.sq_cur;
        req_.cur_off = 0;
    } else {
        req_.cur_off += chunk;
    }
    if (comp_.retrans_deadline == 0)
        arm_retransmit(now);
}

void Qp::arm_retransmit(Time now) {
    const Time t = ack_timeout_ns(attr_.timeout);
    comp_.retrans_deadline = (t != 0 && wire::psn_diff(req_.npsn, comp_.una_psn) > 0) ? now + t : 0;
}

void Qp::rewind_to(uint32_t psn) {
    for (uint32_t i = req_.sq_head; i != req_.sq_tail; ++i) {
        SendWqe &w = req_.sq[i & req_.sq_mask];
        if (!w.started)
            break;
        if (wire::psn_diff(psn, w.first_psn) >= 0 && wire::psn_diff(psn, w.last_psn) <= 0) {
            req_.sq_cur = i;
            req_.cur_off = static_cast<uint32_t>(wire::psn_diff(psn, w.first_psn)) * mtu();
            if (w.wr.opcode == WrOpcode::RdmaRead)
                req_.cur_off = 0;
            req_.npsn = w.wr.opcode == WrOpcode::RdmaRead
                            ? wire::psn_add(w.first_psn, w.read_off / mtu())
                            : psn;
            return;
        }
    }
}

} // namespace droce::rc
