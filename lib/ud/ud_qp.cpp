/* SPDX-License-Identifier: BSD-3-Clause */
#include "ud_qp.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "mem_inline.h"
#include "mem_sgl.h"
#include "wire_opcode.h"

namespace droce::ud {

namespace {

/* The UD rows of the libibverbs/kernel QP state table (ib_modify_qp_is_ok, IB_QPT_UD):
 * required and optional attributes per transition. */
struct Transition {
    QpState from, to;
    uint32_t required, optional;
};
constexpr Transition kTable[] = {
    {QpState::Reset, QpState::Init, kQpPkeyIndex | kQpPort | kQpQkey, 0},
    {QpState::Init, QpState::Init, 0, kQpPkeyIndex | kQpPort | kQpQkey},
    {QpState::Init, QpState::Rtr, 0, kQpPkeyIndex | kQpQkey},
    {QpState::Rtr, QpState::Rts, kQpSqPsn, kQpCurState | kQpQkey},
    {QpState::Rts, QpState::Rts, 0, kQpCurState | kQpQkey},
};

} // namespace

bool gid_is_multicast(const uint8_t gid[16]) {
    if (wire::gid_is_ipv4(gid))
        return (gid[12] & 0xF0) == 0xE0;
    return gid[0] == 0xFF;
}

Status check_ah(const AddressHandle &ah) {
    if (gid_is_multicast(ah.dgid))
        return Status(EOPNOTSUPP, "address handle: multicast destination GID (droce has no "
                                  "multicast groups; UD is unicast only)");
    if (wire::gid_is_ipv4(ah.dgid) != wire::gid_is_ipv4(ah.sgid))
        return Status(EINVAL, "address handle: source and destination GIDs are not the same "
                              "IP version");
    if (ah.hop_limit == 0)
        return Status(EINVAL, "address handle: hop limit 0");
    return {};
}

Qp::Qp(const QpConfig &cfg)
    : cfg_(cfg), ctr_(cfg.counters ? cfg.counters : &own_ctr_),
      sport_(wire::udp_sport_for_qpn(cfg.qpn)), rq_(cfg.cap.max_recv_wr, cfg.cap.max_recv_sge) {
    uint32_t n = 1;
    while (n < (cfg.cap.max_send_wr ? cfg.cap.max_send_wr : 1))
        n <<= 1;
    sq_.resize(n);
    sq_mask_ = n - 1;
    if (cfg_.qpn == 1)
        attr_.qkey = kGsiQkey;
}

uint32_t Qp::max_msg_size() const { return mtu_bytes(cfg_.mtu); }

Status Qp::modify(const QpAttr &a, uint32_t mask) {
    const QpState to = (mask & kQpState) ? a.qp_state : state_;
    if ((mask & kQpCurState) && a.cur_qp_state != state_)
        return Status(EINVAL, std::string("modify_qp: cur_qp_state ") +
                                  qp_state_str(a.cur_qp_state) + " but the QP is " +
                                  qp_state_str(state_));
    if (to == QpState::Reset || to == QpState::Err) {
        if (mask & ~(kQpState | kQpCurState))
            return Status(EINVAL, "modify_qp: only the state may be given going to RESET/ERR");
        if (to == QpState::Reset) {
            /* Nothing completes going to RESET: verbs discards both queues. */
            sq_head_ = sq_tail_ = 0;
            rq_.clear();
            state_ = QpState::Reset;
        } else {
            to_error();
        }
        return {};
    }
    const Transition *t = nullptr;
    for (const Transition &x : kTable)
        if (x.from == state_ && x.to == to)
            t = &x;
    if (!t)
        return Status(EINVAL, std::string("modify_qp: UD QP cannot go ") + qp_state_str(state_) +
                                  " -> " + qp_state_str(to));
    const uint32_t given = mask & ~kQpState;
    if ((given & t->required) != t->required)
        return Status(EINVAL, std::string("modify_qp: UD ") + qp_state_str(state_) + " -> " +
                                  qp_state_str(to) + " needs " +
                                  (t->required & kQpQkey ? "pkey_index, port and qkey" : "sq_psn"));
    if (given & ~(t->required | t->optional))
        return Status(EINVAL, "modify_qp: attribute not valid for a UD QP in this transition "
                              "(UD has no path, destination QP or path MTU: those go in the "
                              "address handle and the WR)");
    if (given & kQpPort && a.port_num != 1)
        return Status(EINVAL, "modify_qp: port_num must be 1");
    uint16_t pkey = pkey_;
    if (given & kQpPkeyIndex) {
        const uint32_t n = cfg_.pkey_table ? cfg_.pkey_table_len : 1;
        if (a.pkey_index >= n)
            return Status(EINVAL, "modify_qp: pkey_index " + std::to_string(a.pkey_index) +
                                      " beyond the P_Key table (" + std::to_string(n) + ")");
        pkey = cfg_.pkey_table ? cfg_.pkey_table[a.pkey_index] : wire::kDefaultPkey;
    }
    if (given & kQpQkey) {
        /* QP1's Q_Key is fixed by the spec; the GSI agent never changes it. */
        if (cfg_.qpn == 1 && a.qkey != kGsiQkey)
            return Status(EINVAL, "modify_qp: QP1's Q_Key is 0x80010000");
        attr_.qkey = a.qkey;
    }
    if (given & kQpPkeyIndex) {
        attr_.pkey_index = a.pkey_index;
        pkey_ = pkey;
    }
    if (given & kQpPort)
        attr_.port_num = a.port_num;
    if (given & kQpSqPsn) {
        attr_.sq_psn = a.sq_psn & wire::kPsnMask;
        psn_ = attr_.sq_psn;
    }
    state_ = to;
    attr_.qp_state = attr_.cur_qp_state = to;
    return {};
}

Status Qp::post_send(const UdSendWr &u) {
    const SendWr &wr = u.wr;
    if (state_ != QpState::Rts)
        return Status(EINVAL, std::string("post_send: UD QP is ") + qp_state_str(state_) +
                                  ", sends need RTS");
    if (wr.opcode != WrOpcode::Send && wr.opcode != WrOpcode::SendWithImm)
        return Status(EINVAL, "post_send: a UD QP sends only SEND and SEND_WITH_IMM");
    if (!u.ah)
        return Status(EINVAL, "post_send: UD WR without an address handle");
    if (Status s = check_ah(*u.ah); !s)
        return s;
    if ((u.remote_qpn & ~wire::kQpnMask) || u.remote_qpn == kMulticastQpn)
        return Status(u.remote_qpn == kMulticastQpn ? EOPNOTSUPP : EINVAL,
                      "post_send: remote QPN " + std::to_string(u.remote_qpn) +
                          (u.remote_qpn == kMulticastQpn ? " is the multicast QPN (unsupported)"
                                                         : " is not 24 bits"));
    if (wr.num_sge < 0 || wr.num_sge > static_cast<int>(cfg_.cap.max_send_sge) ||
        wr.num_sge > kMaxSge)
        return Status(EINVAL, "post_send: num_sge " + std::to_string(wr.num_sge) + " out of range");
    uint64_t len = 0;
    for (int i = 0; i < wr.num_sge; ++i)
        len += wr.sg_list[i].length;
    if (len > max_msg_size()) {
        ++ctr_->post_mtu_refused;
        return Status(EMSGSIZE, "post_send: UD message of " + std::to_string(len) +
                                    " bytes exceeds the path MTU (" +
                                    std::to_string(max_msg_size()) + " bytes): UD is one packet");
    }
    const bool inl = (wr.send_flags & kSendInline) != 0;
    if (inl && len > inline_cap())
        return Status(EINVAL, "post_send: inline data of " + std::to_string(len) +
                                  " bytes above max_inline_data " + std::to_string(inline_cap()));
    if (sq_tail_ - sq_head_ >= cfg_.cap.max_send_wr)
        return Status(ENOMEM, "post_send: send queue full (" +
                                  std::to_string(cfg_.cap.max_send_wr) + " WRs)");
    SendWqe &w = sq_[sq_tail_ & sq_mask_];
    w.wr = wr;
    w.ah = *u.ah;
    w.remote_qpn = u.remote_qpn;
    w.qkey = (u.remote_qkey & kQkeyUseQp) ? attr_.qkey : u.remote_qkey;
    w.length = static_cast<uint32_t>(len);
    w.signaled = cfg_.sq_sig_all || (wr.send_flags & kSendSignaled);
    if (inl) {
        /* Verbs: inline payload is copied now, the buffer is reusable on return (the
         * datagram leaves on a later progress()), and the lkeys are not looked at. */
        mem::gather_inline(wr, w.inline_data);
    }
    ++sq_tail_;
    return {};
}

Status Qp::post_recv(const RecvWr &wr) {
    if (state_ == QpState::Err)
        return Status(EINVAL, "post_recv: UD QP is in ERR");
    return rq_.post(wr);
}

bool Qp::push(qp::CqSink *cq, const Wc &wc) {
    if (cq && cq->push(wc))
        return true;
    ++ctr_->cq_overflow;
    return false;
}

void Qp::complete_send(const SendWqe &w, WcStatus st) {
    if (!w.signaled && st == WcStatus::Success)
        return;
    Wc wc{};
    wc.wr_id = w.wr.wr_id;
    wc.status = st;
    wc.opcode = WcOpcode::Send;
    wc.byte_len = w.length;
    wc.qp_num = cfg_.qpn;
    push(cfg_.send_cq, wc);
}

bool Qp::transmit(SendWqe &w) {
    wire::FrameSpec::Seg segs[kMaxSge];
    uint32_t nsegs = 0;
    const bool inl = (w.wr.send_flags & kSendInline) != 0;
    if (inl && w.length != 0)
        segs[nsegs++] = {w.inline_data, w.length, 0u}; /* copied at post */
    for (int i = 0; i < w.wr.num_sge && !inl; ++i) {
        const Sge &s = w.wr.sg_list[i];
        if (!s.length)
            continue;
        uint8_t *host = nullptr;
        /* Looked up at transmit, not at post: the region may have been deregistered
         * since, and then nothing of it is read. */
        if (!cfg_.mrs ||
            cfg_.mrs->check(s.lkey, cfg_.pd, s.addr, s.length, 0, &host) != mem::AccessResult::Ok) {
            ++sq_head_; /* taken off before to_error() flushes the rest */
            complete_send(w, WcStatus::LocProtErr);
            to_error();
            return true; /* consumed */
        }
        /* Never zero-copy (mr_key 0): a UD send completes as soon as its frame is handed
         * to the port, and verbs lets the application reuse the buffer from then on, while
         * an attached buffer would still be read by the NIC (RC completes at the ACK). */
        segs[nsegs++] = {host, s.length, 0u};
    }
    wire::FrameSpec f{};
    f.eth = w.ah.eth;
    f.ipv6 = !wire::gid_is_ipv4(w.ah.dgid);
    std::memcpy(f.src_gid, w.ah.sgid, 16);
    std::memcpy(f.dst_gid, w.ah.dgid, 16);
    f.tos = w.ah.traffic_class;
    f.ttl = w.ah.hop_limit;
    f.flow_label = w.ah.flow_label;
    f.rocev1 = w.ah.rocev1;
    f.ip_id = ip_id_;
    f.udp_sport = sport_;
    const bool imm = w.wr.opcode == WrOpcode::SendWithImm;
    f.bth.opcode = imm ? wire::kUdSendOnlyImm : wire::kUdSendOnly;
    f.bth.se = (w.wr.send_flags & kSendSolicited) != 0;
    f.bth.pkey = pkey_;
    f.bth.dest_qp = w.remote_qpn;
    f.bth.psn = psn_;
    f.deth.qkey = w.qkey;
    f.deth.src_qp = cfg_.qpn;
    f.imm = w.wr.imm_data;
    f.segs = segs;
    f.nsegs = nsegs;
    f.payload_len = w.length;
    if (!cfg_.port || !cfg_.port->transmit(f)) {
        ++ctr_->tx_port_busy;
        return false;
    }
    ++ip_id_;
    psn_ = wire::psn_add(psn_, 1);
    ++ctr_->tx_packets;
    ctr_->tx_bytes += w.length;
    complete_send(w, WcStatus::Success);
    return true;
}

void Qp::progress(Time) {
    while (state_ == QpState::Rts && sq_head_ != sq_tail_) {
        if (!transmit(sq_[sq_head_ & sq_mask_]))
            return;
        if (state_ == QpState::Rts)
            ++sq_head_;
    }
}

void Qp::on_packet(const wire::ParsedPacket &p, Time) {
    if (state_ != QpState::Rtr && state_ != QpState::Rts) {
        ++ctr_->rx_bad_state;
        return;
    }
    if (p.bth.opcode != wire::kUdSendOnly && p.bth.opcode != wire::kUdSendOnlyImm) {
        ++ctr_->rx_bad_opcode;
        return;
    }
    if (p.bth.dest_qp == kMulticastQpn || gid_is_multicast(p.dst_gid)) {
        ++ctr_->rx_multicast;
        return;
    }
    /* A UD message is one packet of at most the port's MTU (IBTA 10.2.5): a bigger one
     * comes from a misconfigured peer and is dropped, not delivered. */
    if (p.payload_len > max_msg_size()) {
        ++ctr_->rx_over_mtu;
        return;
    }
    if (!qp::pkey_match(p.bth.pkey, pkey_)) { /* IBTA 10.9.3 */
        ++ctr_->rx_pkey_mismatch;
        return;
    }
    /* IBTA: a datagram whose Q_Key does not match is silently dropped (QP1: 0x80010000). */
    if (p.deth.qkey != attr_.qkey) {
        ++ctr_->rx_qkey_mismatch;
        return;
    }
    if (rq_.empty()) {
        ++ctr_->rx_no_wqe;
        return;
    }
    if (static_cast<uint64_t>(kGrhLen) + p.payload_len > rq_.front().length) {
        /* The datagram does not fit the receive at the head: dropped and counted, the
         * receive stays posted for the next one and the QP in its state. rxe's responder
         * (RESPST_ERR_LENGTH on a UD QP without SRQ: class D, drop_msg) does the same;
         * any sender may send any length up to the MTU, and an error completion here
         * would take the QP to ERR — QP1 among them, and with it the CM. */
        ++ctr_->rx_too_long;
        return;
    }
    const qp::RecvWqe wqe = rq_.pop();
    Wc wc{};
    wc.wr_id = wqe.wr.wr_id;
    wc.opcode = WcOpcode::Recv;
    wc.qp_num = cfg_.qpn;
    wc.src_qp = p.deth.src_qp;
    wc.byte_len = kGrhLen + p.payload_len;
    /* The GRH as verbs delivers it (rxe's union rdma_network_hdr): for IPv6 the IPv6
     * header itself; for IPv4 20 zero bytes then the IPv4 header. */
    uint8_t grh[kGrhLen] = {};
    if (p.ipv6)
        wire::encode(p.ip6, grh);
    else
        wire::encode(p.ip4, grh + 20);
    bool ok = cfg_.mrs != nullptr;
    if (ok) {
        mem::SglWriter out(*cfg_.mrs, cfg_.pd, wqe.wr.sg_list, wqe.wr.num_sge, 0);
        ok = out.put(grh, kGrhLen);
        wire::for_each_payload_chunk(
            p, [&](const uint8_t *d, uint32_t n) { ok = ok && out.put(d, n); });
    }
    if (!ok) {
        /* A receive SGE no longer valid (it fits: checked above). */
        ++ctr_->rx_bad_lkey;
        wc.status = WcStatus::LocProtErr;
        push(cfg_.recv_cq, wc);
        to_error();
        return;
    }
    wc.status = WcStatus::Success;
    wc.wc_flags = kWcGrh | (p.bth.se ? kWcSolicited : 0u);
    if (p.bth.opcode == wire::kUdSendOnlyImm) {
        wc.wc_flags |= kWcWithImm;
        wc.imm_data = p.imm;
    }
    ++ctr_->rx_packets;
    ctr_->rx_bytes += p.payload_len;
    push(cfg_.recv_cq, wc);
}

void Qp::to_error() {
    if (state_ == QpState::Err)
        return;
    state_ = QpState::Err;
    attr_.qp_state = attr_.cur_qp_state = QpState::Err;
    /* Every outstanding WR completes flushed (IBTA 10.3.1 Error state). */
    for (; sq_head_ != sq_tail_; ++sq_head_) {
        SendWqe &w = sq_[sq_head_ & sq_mask_];
        Wc wc{};
        wc.wr_id = w.wr.wr_id;
        wc.status = WcStatus::WrFlushErr;
        wc.opcode = WcOpcode::Send;
        wc.qp_num = cfg_.qpn;
        push(cfg_.send_cq, wc);
    }
    while (!rq_.empty()) {
        const qp::RecvWqe r = rq_.pop();
        Wc wc{};
        wc.wr_id = r.wr.wr_id;
        wc.status = WcStatus::WrFlushErr;
        wc.opcode = WcOpcode::Recv;
        wc.qp_num = cfg_.qpn;
        push(cfg_.recv_cq, wc);
    }
}

} // namespace droce::ud
