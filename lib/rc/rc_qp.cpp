/* SPDX-License-Identifier: BSD-3-Clause */
/* QP state machine, queue posting, flushing and the pieces the three roles share. */
#include "rc_qp.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "mem_inline.h"

namespace droce::rc {

namespace {

uint32_t pow2_at_least(uint32_t n) {
    uint32_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

struct Transition {
    QpState from, to;
    uint32_t required, optional;
};

/* The RC rows of the IBTA/libibverbs QP state table. */
constexpr uint32_t kRtsOptional =
    kQpCurState | kQpAccessFlags | kQpAltPath | kQpPathMigState | kQpMinRnrTimer;
constexpr Transition kTransitions[] = {
    {QpState::Reset, QpState::Init, kQpPkeyIndex | kQpPort | kQpAccessFlags, 0},
    {QpState::Init, QpState::Init, 0, kQpPkeyIndex | kQpPort | kQpAccessFlags},
    {QpState::Init, QpState::Rtr,
     kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer,
     kQpAltPath | kQpAccessFlags | kQpPkeyIndex},
    {QpState::Rtr, QpState::Rts,
     kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic, kRtsOptional},
    {QpState::Rts, QpState::Rts, 0, kRtsOptional},
    {QpState::Rts, QpState::Sqd, 0, kQpEnSqdAsyncNotify},
    {QpState::Sqd, QpState::Rts, 0, kRtsOptional},
    {QpState::Sqd, QpState::Sqd, 0,
     kQpAv | kQpAltPath | kQpAccessFlags | kQpPkeyIndex | kQpMinRnrTimer | kQpTimeout |
         kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic | kQpMaxDestRdAtomic | kQpPathMigState |
         kQpCurState},
    {QpState::Sqe, QpState::Rts, 0, kQpCurState | kQpAccessFlags},
};

/* READs and atomics this QP may have in flight as the requester: only a count, so as many
 * as rxe allows (perftest sets it to the peer's max_qp_rd_atom, 128 on rxe). What it
 * answers as the responder is bounded by the responder's resources. */
constexpr uint8_t kMaxInitRdAtomic = 128;
constexpr uint8_t kMaxDestRdAtomic = 16;

std::string mask_names(uint32_t m) {
    static const char *const names[] = {"STATE",
                                        "CUR_STATE",
                                        "EN_SQD_ASYNC_NOTIFY",
                                        "ACCESS_FLAGS",
                                        "PKEY_INDEX",
                                        "PORT",
                                        "QKEY",
                                        "AV",
                                        "PATH_MTU",
                                        "TIMEOUT",
                                        "RETRY_CNT",
                                        "RNR_RETRY",
                                        "RQ_PSN",
                                        "MAX_QP_RD_ATOMIC",
                                        "ALT_PATH",
                                        "MIN_RNR_TIMER",
                                        "SQ_PSN",
                                        "MAX_DEST_RD_ATOMIC",
                                        "PATH_MIG_STATE",
                                        "CAP",
                                        "DEST_QPN"};
    std::string s;
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); ++i)
        if (m & (1u << i)) {
            if (!s.empty())
                s.push_back('|');
            s.append(names[i]);
        }
    return s;
}

} // namespace

Time ack_timeout_ns(uint8_t timeout) {
    if (timeout == 0)
        return 0;
    /* 4.096 us * 2^timeout = 4096 ns << timeout */
    return static_cast<Time>(4096) << (timeout > 31 ? 31 : timeout);
}

Qp::Qp(const QpConfig &cfg) : cfg_(cfg), resp_(cfg) {
    const uint32_t sq = pow2_at_least(cfg.cap.max_send_wr ? cfg.cap.max_send_wr : 1);
    req_.sq.resize(sq);
    req_.sq_mask = sq - 1;
    resp_.rd_res.resize(kMaxDestRdAtomic);
    renew_path_gen();
    if (cfg.cc) { /* validated by the owner (QpConfig::cc) */
        cc_ = std::make_unique<QpCc>(*cfg.cc,
                                     cfg.line_rate_bps ? cfg.line_rate_bps : kDefaultLineRateBps);
        data_ecn_ = cc::ecn_bits(cfg.cc->ecn_mode);
        cc_after_rp(0); /* rpg_max_rate under the line rate: paced from the start */
    }
}

/* modify(), step 1: the transition exists in the state table and the mask names every
 * attribute it requires and none it does not allow. */
Status Qp::check_transition(const QpAttr &a, uint32_t mask, QpState cur, QpState to) const {
    if ((mask & kQpCurState) && a.cur_qp_state != cur)
        return Status(EINVAL, std::string("modify QP: cur_qp_state ") +
                                  qp_state_str(a.cur_qp_state) + " but QP is " + qp_state_str(cur));
    uint32_t required = 0, optional = 0;
    if (to != QpState::Reset && to != QpState::Err) { /* any state may go to RESET or ERR */
        bool found = false;
        for (const auto &t : kTransitions)
            if (t.from == cur && t.to == to) {
                required = t.required;
                optional = t.optional;
                found = true;
            }
        if (!found)
            return Status(EINVAL, std::string("modify QP: invalid transition ") +
                                      qp_state_str(cur) + " -> " + qp_state_str(to));
    }
    const uint32_t attrs = mask & ~(kQpState | kQpCurState);
    if ((attrs & required) != required)
        return Status(EINVAL, std::string("modify QP ") + qp_state_str(cur) + " -> " +
                                  qp_state_str(to) + ": missing " + mask_names(required & ~attrs));
    if (attrs & ~(required | optional))
        return Status(EINVAL, std::string("modify QP ") + qp_state_str(cur) + " -> " +
                                  qp_state_str(to) + ": attribute not allowed here: " +
                                  mask_names(attrs & ~(required | optional)));
    return {};
}

/* modify(), step 2: every attribute the mask names is in range, before anything changes. */
Status Qp::check_attr_values(const QpAttr &a, uint32_t mask, const Path *path) const {
    if ((mask & kQpPathMtu) && mtu_bytes(a.path_mtu) == 0)
        return Status(EINVAL, "modify QP: path_mtu must be 1..5 (256..4096)");
    if ((mask & kQpTimeout) && a.timeout > 31)
        return Status(EINVAL, "modify QP: timeout must be 0..31");
    if ((mask & kQpRetryCnt) && a.retry_cnt > 7)
        return Status(EINVAL, "modify QP: retry_cnt must be 0..7");
    if ((mask & kQpRnrRetry) && a.rnr_retry > 7)
        return Status(EINVAL, "modify QP: rnr_retry must be 0..7");
    if ((mask & kQpMinRnrTimer) && a.min_rnr_timer > 31)
        return Status(EINVAL, "modify QP: min_rnr_timer must be 0..31");
    if ((mask & kQpRqPsn) && a.rq_psn > wire::kPsnMask)
        return Status(EINVAL, "modify QP: rq_psn must fit 24 bits");
    if ((mask & kQpSqPsn) && a.sq_psn > wire::kPsnMask)
        return Status(EINVAL, "modify QP: sq_psn must fit 24 bits");
    if ((mask & kQpDestQpn) && a.dest_qp_num > wire::kQpnMask)
        return Status(EINVAL, "modify QP: dest_qp_num must fit 24 bits");
    if ((mask & kQpMaxQpRdAtomic) && a.max_rd_atomic > kMaxInitRdAtomic)
        return Status(EINVAL, "modify QP: max_rd_atomic above " + std::to_string(kMaxInitRdAtomic));
    if ((mask & kQpMaxDestRdAtomic) && a.max_dest_rd_atomic > kMaxDestRdAtomic)
        return Status(EINVAL,
                      "modify QP: max_dest_rd_atomic above " + std::to_string(kMaxDestRdAtomic));
    const uint32_t npkeys = cfg_.pkey_table ? cfg_.pkey_table_len : 1;
    if ((mask & kQpPkeyIndex) && a.pkey_index >= npkeys)
        return Status(EINVAL, "modify QP: pkey_index " + std::to_string(a.pkey_index) +
                                  " out of range (P_Key table has " + std::to_string(npkeys) +
                                  (npkeys == 1 ? " entry)" : " entries)"));
    if ((mask & kQpPkeyIndex) && cfg_.pkey_table && (cfg_.pkey_table[a.pkey_index] & 0x7FFF) == 0)
        return Status(EINVAL, "modify QP: P_Key table entry " + std::to_string(a.pkey_index) +
                                  " is the invalid P_Key");
    if ((mask & kQpPort) && a.port_num != 1)
        return Status(EINVAL, "modify QP: port_num must be 1");
    if ((mask & kQpAccessFlags) && (a.qp_access_flags & ~(kAccessLocalWrite | kAccessRemoteWrite |
                                                          kAccessRemoteRead | kAccessRemoteAtomic)))
        return Status(EINVAL, "modify QP: unknown access flag");
    if ((mask & kQpAv) && path == nullptr)
        return Status(EINVAL, "modify QP: address vector given but no resolved path");
    return {};
}

/* modify(), step 3a: the attributes of the connection itself (both roles use them). */
void Qp::apply_path_attrs(const QpAttr &a, uint32_t mask, const Path *path) {
    if (mask & kQpAccessFlags)
        attr_.qp_access_flags = a.qp_access_flags;
    if (mask & kQpPkeyIndex) {
        attr_.pkey_index = a.pkey_index;
        pkey_ = cfg_.pkey_table ? cfg_.pkey_table[a.pkey_index] : wire::kDefaultPkey;
    }
    if (mask & kQpPort)
        attr_.port_num = a.port_num;
    if (mask & kQpAv) {
        attr_.ah_attr = a.ah_attr;
        path_ = *path;
        std::memcpy(peer_gids_, path_.dgid, 16);
        std::memcpy(peer_gids_ + 16, path_.sgid, 16);
        static constexpr uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
        peer_v4_ = std::memcmp(path_.dgid, kV4Mapped, 12) == 0 &&
                   std::memcmp(path_.sgid, kV4Mapped, 12) == 0;
        std::memcpy(&peer_ip_pair_[0], path_.dgid + 12, 4);
        std::memcpy(&peer_ip_pair_[1], path_.sgid + 12, 4);
    }
    if (mask & kQpPathMtu) {
        attr_.path_mtu = a.path_mtu;
        mtu_bytes_ = mtu_bytes(a.path_mtu);
    }
    if (mask & kQpDestQpn)
        attr_.dest_qp_num = a.dest_qp_num;
    if (mask & (kQpAv | kQpPkeyIndex | kQpDestQpn))
        renew_path_gen();
}

void Qp::renew_path_gen() {
    /* Process-wide, so that no QP (a new one at a freed one's address included) ever gets a
     * generation some port learnt for another: written only when a path changes. */
    static std::atomic<uint64_t> last{0};
    path_gen_ = last.fetch_add(1, std::memory_order_relaxed) + 1;
}

/* modify(), step 3b: the responder's attributes (the RTR group). */
void Qp::apply_responder_attrs(const QpAttr &a, uint32_t mask) {
    if (mask & kQpRqPsn) {
        attr_.rq_psn = a.rq_psn;
        resp_.epsn = a.rq_psn;
    }
    if (mask & kQpMaxDestRdAtomic)
        attr_.max_dest_rd_atomic = a.max_dest_rd_atomic;
    if (mask & kQpMinRnrTimer)
        attr_.min_rnr_timer = a.min_rnr_timer;
}

/* modify(), step 3c: the requester's attributes (the RTS group). */
void Qp::apply_requester_attrs(const QpAttr &a, uint32_t mask) {
    if (mask & kQpSqPsn) {
        attr_.sq_psn = a.sq_psn;
        req_.npsn = comp_.una_psn = a.sq_psn;
        req_.ackreq_psn = wire::psn_add(a.sq_psn, wire::kPsnMask); /* sq_psn - 1 */
        req_.sent_hi_psn = a.sq_psn;
    }
    if (mask & kQpTimeout)
        attr_.timeout = a.timeout;
    if (mask & kQpRetryCnt) {
        attr_.retry_cnt = a.retry_cnt;
        comp_.retry_left = a.retry_cnt;
    }
    if (mask & kQpRnrRetry) {
        attr_.rnr_retry = a.rnr_retry;
        comp_.rnr_retry_left = a.rnr_retry;
    }
    if (mask & kQpMaxQpRdAtomic)
        attr_.max_rd_atomic = a.max_rd_atomic;
}

/* modify(), step 4 for a move into RESET: verbs discards every queued WR without
 * completions and the QP forgets its protocol state. */
void Qp::reset_queues_and_state() {
    pace_until_ = 0;
    req_.sq_head = req_.sq_cur = req_.sq_tail = 0;
    resp_.rq.clear();
    /* A receive a SEND was filling came off the SRQ, which still owns it (the QP's
     * own RQ is discarded whole): it goes back; with no room there (the SRQ was
     * refilled since), it completes flushed rather than vanish. */
    if (resp_.in_send && cfg_.srq && !cfg_.srq->post(resp_.cur_recv.wr))
        complete_recv(resp_.cur_recv, WcStatus::WrFlushErr, WcOpcode::Recv, 0, 0, 0);
    req_.cur_off = 0;
    resp_.in_send = resp_.in_write = resp_.nak_sent = resp_.ack_owed = resp_.busy_dropped =
        resp_.dup_acked = resp_.seq_naked = false;
    resp_.ahead_run = 0;
    comp_.retrans_deadline = comp_.rnr_deadline = 0;
    req_.rd_atomic_inflight = 0;
    resp_.msn = 0;
    for (auto &r : resp_.rd_res)
        r.valid = false;
    req_.sqd_notify = resp_.comm_est = false;
    cq_err_raised_[0] = cq_err_raised_[1] = nullptr;
    state_ = QpState::Reset;
}

/* modify(), step 4 for every other move: the new state and what entering it does. */
void Qp::enter_state(QpState cur, QpState to, const QpAttr &a, uint32_t mask) {
    if (to == QpState::Rtr && cur == QpState::Init)
        resp_.comm_est = false;
    if (to == QpState::Sqd && cur == QpState::Rts)
        req_.sqd_notify = (mask & kQpEnSqdAsyncNotify) && a.en_sqd_async_notify;
    else if (to != QpState::Sqd)
        req_.sqd_notify = false;
    state_ = to;
    attr_.qp_state = to;
    if (to == QpState::Err && cur != QpState::Err) {
        flush_queues();
        error_events(false, AsyncEventType::QpFatal);
    }
    check_sq_drained(); /* entering SQD with nothing in flight is drained at once */
}

Status Qp::modify(const QpAttr &a, uint32_t mask, const Path *path) {
    const QpState cur = state_;
    const QpState to = (mask & kQpState) ? a.qp_state : cur;
    if (Status st = check_transition(a, mask, cur, to); !st)
        return st;
    if (Status st = check_attr_values(a, mask, path); !st)
        return st;
    apply_path_attrs(a, mask, path);
    apply_responder_attrs(a, mask);
    apply_requester_attrs(a, mask);
    if (to == QpState::Reset && cur != QpState::Reset)
        reset_queues_and_state();
    else
        enter_state(cur, to, a, mask);
    return {};
}

/* Why post_send refuses a WR, found by check_post_send on the posting path without
 * building a message; post_send_refused (out of line, cold) words it. */
enum class Qp::PostRefusal : uint8_t {
    None,
    NotRts,
    Full,
    NumSge,
    TooLong,
    ReadPsns,
    AtomicShape,
    AtomicAlign,
    Opcode,
    InlineOpcode,
    InlineLen,
};

inline Qp::PostRefusal Qp::check_post_send(const SendWr &wr, uint64_t *len_out) const {
    using R = PostRefusal;
    if (state_ == QpState::Reset || state_ == QpState::Init || state_ == QpState::Rtr)
        return R::NotRts;
    if (req_.sq_tail - req_.sq_head >= cfg_.cap.max_send_wr)
        return R::Full;
    if (wr.num_sge < 0 || wr.num_sge > static_cast<int>(cfg_.cap.max_send_sge) ||
        wr.num_sge > kMaxSge)
        return R::NumSge;
    uint64_t len = 0;
    for (int i = 0; i < wr.num_sge; ++i)
        len += wr.sg_list[i].length;
    *len_out = len;
    switch (wr.opcode) {
    case WrOpcode::Send:
    case WrOpcode::SendWithImm:
    case WrOpcode::SendWithInv:
    case WrOpcode::RdmaWrite:
    case WrOpcode::RdmaWriteWithImm:
    case WrOpcode::RdmaRead:
        if (len > (1ull << 31))
            return R::TooLong;
        /* A READ request takes one PSN per response: at most half the 24-bit PSN space
         * minus one, or PSN comparisons invert (only 2^31 bytes at MTU 256 reaches it). */
        if (wr.opcode == WrOpcode::RdmaRead && (len + mtu() - 1) / mtu() >= kPsnWindow)
            return R::ReadPsns;
        break;
    case WrOpcode::AtomicCmpAndSwp:
    case WrOpcode::AtomicFetchAndAdd:
        if (len != 8 || wr.num_sge != 1)
            return R::AtomicShape;
        if (wr.remote_addr & 7)
            return R::AtomicAlign;
        break;
    default:
        return R::Opcode;
    }
    if (wr.send_flags & kSendInline) {
        if (wr.opcode != WrOpcode::Send && wr.opcode != WrOpcode::SendWithImm &&
            wr.opcode != WrOpcode::SendWithInv && wr.opcode != WrOpcode::RdmaWrite &&
            wr.opcode != WrOpcode::RdmaWriteWithImm)
            return R::InlineOpcode;
        if (len > inline_cap())
            return R::InlineLen;
    }
    return R::None;
}

Status Qp::post_send_refused(PostRefusal why, const SendWr &wr, uint64_t len) const {
    using R = PostRefusal;
    switch (why) {
    case R::NotRts:
        return Status(EINVAL, std::string("post_send: QP ") + std::to_string(cfg_.qpn) + " is in " +
                                  qp_state_str(state_) + ", needs RTS");
    case R::Full:
        return Status(ENOMEM, "post_send: send queue full (" +
                                  std::to_string(cfg_.cap.max_send_wr) + " WRs)");
    case R::NumSge:
        return Status(EINVAL, "post_send: num_sge " + std::to_string(wr.num_sge) + " out of range");
    case R::TooLong:
        return Status(EINVAL, "post_send: message longer than 2 GiB");
    case R::ReadPsns:
        return Status(EINVAL, "post_send: an RDMA READ of " + std::to_string(len) +
                                  " bytes takes 2^23 response PSNs at path MTU " +
                                  std::to_string(mtu()) + " (half the PSN space); at most " +
                                  std::to_string((kPsnWindow - 1) * uint64_t{mtu()}) + " bytes");
    case R::AtomicShape:
        return Status(EINVAL, "post_send: atomics take exactly one 8-byte SGE");
    case R::AtomicAlign:
        return Status(EINVAL, "post_send: atomic remote_addr must be 8-byte aligned");
    case R::Opcode:
        return Status(EINVAL, "post_send: unsupported opcode " +
                                  std::to_string(static_cast<int>(wr.opcode)));
    case R::InlineOpcode:
        return Status(EINVAL, "post_send: IBV_SEND_INLINE only with SEND and RDMA WRITE");
    case R::InlineLen:
        return Status(EINVAL, "post_send: inline data of " + std::to_string(len) +
                                  " bytes above max_inline_data " + std::to_string(inline_cap()));
    case R::None:
        break;
    }
    return {};
}

Status Qp::post_send(const SendWr &wr) {
    uint64_t len = 0;
    if (const PostRefusal why = check_post_send(wr, &len); why != PostRefusal::None) [[unlikely]]
        return post_send_refused(why, wr, len);
    SendWqe &w = req_.sq[req_.sq_tail & req_.sq_mask];
    w.wr = wr;
    if (wr.send_flags & kSendInline) {
        /* Verbs: inline payload is copied now, the buffer is reusable on return, and the
         * lkeys are not looked at. */
        mem::gather_inline(wr, w.inline_data);
    }
    w.length = static_cast<uint32_t>(len);
    w.started = false;
    w.read_off = 0;
    w.signaled = cfg_.sq_sig_all || (wr.send_flags & kSendSignaled);
    ++req_.sq_tail;
    if (state_ == QpState::Err) [[unlikely]]
        flush_queues();
    return {};
}

Status Qp::post_recv(const RecvWr &wr) {
    if (cfg_.srq)
        return Status(EINVAL, "post_recv: QP " + std::to_string(cfg_.qpn) +
                                  " uses a shared receive queue; post to the SRQ");
    Status st = resp_.rq.post(wr);
    if (st && state_ == QpState::Err)
        flush_queues();
    return st;
}

void Qp::complete_send(SendWqe &w, WcStatus st) {
    if (!w.signaled && st == WcStatus::Success)
        return;
    Wc wc{};
    wc.wr_id = w.wr.wr_id;
    wc.status = st;
    switch (w.wr.opcode) {
    case WrOpcode::RdmaWrite:
    case WrOpcode::RdmaWriteWithImm:
        wc.opcode = WcOpcode::RdmaWrite;
        break;
    case WrOpcode::RdmaRead:
        wc.opcode = WcOpcode::RdmaRead;
        break;
    case WrOpcode::AtomicCmpAndSwp:
        wc.opcode = WcOpcode::CompSwap;
        break;
    case WrOpcode::AtomicFetchAndAdd:
        wc.opcode = WcOpcode::FetchAdd;
        break;
    default:
        wc.opcode = WcOpcode::Send;
    }
    wc.byte_len = (w.wr.opcode == WrOpcode::RdmaRead || w.wr.opcode == WrOpcode::AtomicCmpAndSwp ||
                   w.wr.opcode == WrOpcode::AtomicFetchAndAdd)
                      ? w.length
                      : 0;
    wc.qp_num = cfg_.qpn;
    if (st != WcStatus::Success && st != WcStatus::WrFlushErr)
        ++cfg_.counters->req_cqe_error;
    if (!cfg_.send_cq->push(wc))
        cq_overflow(cfg_.send_cq);
}

void Qp::complete_recv(const RecvWqe &r, WcStatus st, WcOpcode op, uint32_t byte_len,
                       uint32_t flags, uint32_t imm) {
    Wc wc{};
    wc.wr_id = r.wr.wr_id;
    wc.status = st;
    wc.opcode = op;
    wc.byte_len = byte_len;
    wc.imm_data = imm;
    wc.wc_flags = flags;
    wc.qp_num = cfg_.qpn;
    wc.src_qp = attr_.dest_qp_num;
    if (st != WcStatus::Success && st != WcStatus::WrFlushErr)
        ++cfg_.counters->resp_cqe_error;
    if (!cfg_.recv_cq->push(wc))
        cq_overflow(cfg_.recv_cq);
}

/* A completion could not be written: it is lost, which is what the events say. Verbs: a
 * CQ overrun is a CQ error (CQ_ERR) and the QP whose completion was lost goes to ERR
 * (QP_FATAL). The flush completions that follow find the same CQ full: they are counted,
 * raise nothing more, and cannot recurse (the QP is in ERR before the flush starts).
 * Callers that complete in a loop (ack_through) check for ERR after each completion. */
void Qp::cq_overflow(const CqSink *cq) {
    ++cfg_.counters->cq_overflow;
    if (cq != cq_err_raised_[0] && cq != cq_err_raised_[1]) {
        cq_err_raised_[cq_err_raised_[0] ? 1 : 0] = cq;
        raise(AsyncEventType::CqErr, cq);
    }
    enter_error(true, AsyncEventType::QpFatal);
}

void Qp::raise(AsyncEventType t, const CqSink *cq) {
    if (cfg_.events)
        cfg_.events->on_async_event(AsyncEvent{t, cfg_.qpn, cq});
}

void Qp::error_events(bool raise_ev, AsyncEventType ev) {
    if (raise_ev)
        raise(ev);
    /* An SRQ QP in ERR takes no more receives from the SRQ: the application may now
     * destroy it without losing a WR (ibv_destroy_qp's documented SRQ sequence). */
    if (cfg_.srq)
        raise(AsyncEventType::QpLastWqeReached);
}

/* SQD with en_sqd_async_notify: SQ_DRAINED once every started WR has completed (the
 * requester starts none in SQD, so that is when the head WQE is not started). */
void Qp::check_sq_drained() {
    if (!req_.sqd_notify || state_ != QpState::Sqd)
        return;
    if (req_.sq_head != req_.sq_tail && req_.sq[req_.sq_head & req_.sq_mask].started)
        return;
    req_.sqd_notify = false;
    raise(AsyncEventType::SqDrained);
}

void Qp::flush_queues() {
    /* Every outstanding WR completes with WR_FLUSH_ERR, signaled or not (verbs). */
    while (req_.sq_head != req_.sq_tail) {
        SendWqe &w = req_.sq[req_.sq_head++ & req_.sq_mask]; /* off the queue before it completes */
        w.signaled = true;
        complete_send(w, WcStatus::WrFlushErr);
    }
    req_.sq_cur = req_.sq_head;
    req_.cur_off = 0;
    /* A receive a SEND was filling completes with the flush too; the WRs still on an SRQ
     * belong to the SRQ and stay there (verbs). */
    if (resp_.in_send)
        complete_recv(resp_.cur_recv, WcStatus::WrFlushErr, WcOpcode::Recv, 0, 0, 0);
    while (!resp_.rq.empty())
        complete_recv(resp_.rq.pop(), WcStatus::WrFlushErr, WcOpcode::Recv, 0, 0, 0);
    comp_.retrans_deadline = comp_.rnr_deadline = 0;
    pace_until_ = 0; /* nothing is sent from ERR but a NAK */
    req_.rd_atomic_inflight = 0;
    resp_.in_send = resp_.in_write = false;
    /* READ/atomic responses still queued are never sent from ERR. */
    for (auto &r : resp_.rd_res)
        r.valid = false;
}

void Qp::enter_error(bool raise_ev, AsyncEventType ev) {
    if (state_ == QpState::Err)
        return;
    state_ = QpState::Err;
    attr_.qp_state = QpState::Err;
    req_.sqd_notify = false;
    flush_queues();
    error_events(raise_ev, ev);
}

void Qp::base_frame(wire::FrameSpec &f, uint8_t opcode, uint32_t psn) const {
    /* Every member is assigned here rather than value-initialised: `f{}` compiled to a
     * `rep stos` over the whole spec per packet, and the callers' reads of the fresh
     * spec then stalled on it (~5% of the 64 B WRITE client in perf). */
    f.ip_id = 0;
    f.bth = {};
    f.reth = {};
    f.aeth = {};
    f.atomic = {};
    f.atomic_ack = {};
    f.deth = {};
    f.imm = 0;
    f.ieth = 0;
    f.segs = nullptr;
    f.nsegs = 0;
    f.payload_len = 0;
    f.eth = path_.eth;
    f.ipv6 = path_.ipv6;
    f.rocev1 = path_.rocev1;
    for (int i = 0; i < 16; ++i) {
        f.src_gid[i] = path_.sgid[i];
        f.dst_gid[i] = path_.dgid[i];
    }
    f.tos = path_.tos;
    f.ttl = path_.ttl;
    f.flow_label = path_.flow_label;
    f.udp_sport = path_.udp_sport;
    f.bth.opcode = opcode;
    f.bth.pkey = pkey_;
    f.bth.dest_qp = attr_.dest_qp_num;
    f.bth.psn = psn;
    f.path_gen = path_gen_;
}

/* from_peer() compares the two GIDs as one block. */
static_assert(offsetof(wire::ParsedPacket, dst_gid) == offsetof(wire::ParsedPacket, src_gid) + 16);

void Qp::on_packet(const wire::ParsedPacket &p, Time now) {
    now_ = now;
    /* Silent drops (IBTA 9.6.1 header checks), each before anything acts on the packet:
     * another transport's opcode (an RC QP neither answers nor errors on UD/UC traffic
     * aimed at its QPN); a packet not from the QP's peer; a P_Key of another partition.
     * Then a CNP goes to the reaction point, or is dropped without DCQCN. */
    const wire::Transport t = p.op->transport;
    if (t != wire::Transport::Rc && t != wire::Transport::Cnp) {
        ++cfg_.counters->rx_transport_drop;
        return;
    }
    /* rxe's check_addr: a connected QP takes packets from its path's remote GID to its
     * own GID only (IPv4-mapped, IPv6, or a RoCEv1 GRH's: the parser gives all three as
     * GIDs). Anyone else on the network who learns the QPN and a PSN in the window could
     * otherwise complete our WRs (an ACK), fail them (a NAK), write with a known rkey,
     * or throttle the QP (a CNP). Before RTR there is no path: nothing is for the QP. */
    if (!from_peer(p)) [[unlikely]] {
        if (state_ == QpState::Reset || state_ == QpState::Init)
            ++cfg_.counters->rx_qp_state_drop;
        else
            ++cfg_.counters->rx_drop_src_addr;
        return;
    }
    if (!pkey_match(p.bth.pkey, pkey_)) {
        ++cfg_.counters->rx_pkey_violation;
        return;
    }
    if (t == wire::Transport::Cnp) [[unlikely]] {
        if (cc_ && (state_ == QpState::Rts || state_ == QpState::Sqd))
            cc_on_cnp(now); /* an RP that is off counts it as ignored */
        else
            ++cfg_.counters->rp_cnp_ignored;
        return;
    }
    /* Notification point: congestion on the path from our peer to us, whatever the
     * packet (a request, or a response to our requester). */
    if (p.ecn == 3 && cc_ &&
        (state_ == QpState::Rtr || state_ == QpState::Rts || state_ == QpState::Sqd))
        cc_on_ce(now);
    if (p.op->is(wire::kOpResponse)) {
        if (state_ != QpState::Rts && state_ != QpState::Sqd) {
            ++cfg_.counters->rx_qp_state_drop;
            return;
        }
        completer_on_packet(p, now);
    } else {
        if (state_ != QpState::Rtr && state_ != QpState::Rts && state_ != QpState::Sqd) {
            ++cfg_.counters->rx_qp_state_drop;
            return;
        }
        if (state_ == QpState::Rtr && !resp_.comm_est) {
            /* Verbs: COMM_EST when the first packet arrives in RTR (the application may
             * be waiting for it to move to RTS). */
            resp_.comm_est = true;
            raise(AsyncEventType::CommEst);
        }
        responder_on_packet(p, now);
    }
}

void Qp::progress(Time now) {
    now_ = now;
    if (state_ == QpState::Err) {
        /* The NAK that put the QP in error may have found TX full: it still goes. */
        flush_owed_ack();
        return;
    }
    if (state_ == QpState::Reset)
        return;
    responder_progress();
    if (state_ == QpState::Rts || state_ == QpState::Sqd)
        requester_progress(now);
}

bool Qp::has_tx_work() const {
    if (state_ == QpState::Err)
        return resp_.ack_owed;
    if (state_ == QpState::Reset)
        return false;
    if (pace_until_ != 0) {
        /* Data waits for the pacer (a timer at pace_until_ wakes the QP); an ACK or NAK
         * owed still goes, unless it is queued behind READ responses, which are data. */
        return (resp_.ack_owed || resp_.busy_dropped) && !read_responses_pending();
    }
    if (resp_.ack_owed || resp_.busy_dropped || read_responses_pending())
        return true;
    return requester_can_send();
}

Time Qp::next_deadline() const {
    Time d = comp_.retrans_deadline;
    if (comp_.rnr_deadline && (d == 0 || comp_.rnr_deadline < d))
        d = comp_.rnr_deadline;
    if (pace_until_ && (d == 0 || pace_until_ < d))
        d = pace_until_;
    if (rp_limited_) { /* not *cc_ otherwise: the driver asks after every packet */
        const uint64_t r = cc_->rp.next_deadline();
        if (r != cc::Rp::kNoDeadline && (d == 0 || r < d))
            d = r;
    }
    return d;
}

void Qp::on_timer(Time now) {
    now_ = now;
    if (cc_)
        cc_timer(now);
    if (comp_.rnr_deadline && now >= comp_.rnr_deadline) {
        comp_.rnr_deadline = 0;
        /* the requester resumes from comp_.una_psn (rewound when the RNR NAK came) */
        arm_retransmit(now);
    }
    if (comp_.retrans_deadline && now >= comp_.retrans_deadline)
        retry_or_fail(now);
}

std::string Qp::check_invariants() const {
    if (state_ != QpState::Rts && state_ != QpState::Sqd)
        return {};
    if (wire::psn_diff(req_.npsn, comp_.una_psn) < 0)
        return "npsn before una";
    if (wire::psn_diff(req_.sent_hi_psn, req_.npsn) < 0)
        return "npsn beyond sent_hi";
    if (static_cast<int32_t>(req_.sq_cur - req_.sq_head) < 0 ||
        static_cast<int32_t>(req_.sq_tail - req_.sq_cur) < 0)
        return "sq indices out of order";
    if (wire::psn_diff(req_.npsn, comp_.una_psn) > 0 && comp_.retrans_deadline == 0 &&
        comp_.rnr_deadline == 0 && attr_.timeout != 0)
        return "packets outstanding but no timer armed";
    return {};
}

std::string Qp::debug_string() const {
    char buf[512];
    uint32_t pending_rd = 0;
    for (const auto &r : resp_.rd_res)
        pending_rd += r.valid && r.sent_pkts < r.npkts;
    std::snprintf(buf, sizeof buf,
                  "qpn 0x%06x %s sq %u (cur +%u) npsn 0x%06x una 0x%06x sent_hi 0x%06x "
                  "rdat %u retry %u rnr %u t_retx %llu t_rnr %llu | rq %u epsn 0x%06x msn %u "
                  "in_send %d in_write %d nak %d busy %d ack_owed %d rd_pending %u",
                  cfg_.qpn, qp_state_str(state_), req_.sq_tail - req_.sq_head,
                  req_.sq_cur - req_.sq_head, req_.npsn, comp_.una_psn, req_.sent_hi_psn,
                  req_.rd_atomic_inflight, comp_.retry_left, comp_.rnr_retry_left,
                  static_cast<unsigned long long>(comp_.retrans_deadline),
                  static_cast<unsigned long long>(comp_.rnr_deadline), resp_.rcv->depth(),
                  resp_.epsn, resp_.msn, resp_.in_send, resp_.in_write, resp_.nak_sent,
                  resp_.busy_dropped, resp_.ack_owed, pending_rd);
    std::string out = buf;
    if (cc_) {
        /* DCQCN: what droce-info -q and telemetry show per QP. */
        const CcState c = cc_state();
        std::snprintf(buf, sizeof buf,
                      " | dcqcn rp %d np %d rate_mbps %.3f target_mbps %.3f alpha %.4f stage %s "
                      "limited %d pace_until %llu",
                      c.rp_enabled, c.np_enabled, static_cast<double>(c.rate_bps) * 1e-6,
                      static_cast<double>(c.target_bps) * 1e-6, c.alpha, cc::to_string(c.stage),
                      c.limited, static_cast<unsigned long long>(pace_until_));
        out += buf;
    }
    return out;
}

} // namespace droce::rc
