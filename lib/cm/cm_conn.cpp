/* SPDX-License-Identifier: BSD-3-Clause */
#include "cm_conn.h"

#include <algorithm>
#include <cstring>

#include "cm_time.h"

namespace droce::cm {

namespace {

CmCtr rej_ctr(RejReason r) {
    switch (r) {
    case RejReason::InvalidServiceId:
        return CmCtr::rej_sent_invalid_service_id;
    case RejReason::StaleConn:
        return CmCtr::rej_sent_stale_conn;
    case RejReason::Timeout:
        return CmCtr::rej_sent_timeout;
    case RejReason::InvalidCommId:
        return CmCtr::rej_sent_invalid_comm_id;
    case RejReason::NoResources:
        return CmCtr::rej_sent_no_resources;
    case RejReason::InvalidTransportType:
        return CmCtr::rej_sent_invalid_transport;
    case RejReason::InvalidGid:
        return CmCtr::rej_sent_invalid_gid;
    default:
        return CmCtr::rej_sent_consumer;
    }
}

CmCtr resend_ctr(uint16_t attr) {
    switch (static_cast<CmAttr>(attr)) {
    case CmAttr::Req:
        return CmCtr::resend_req;
    case CmAttr::Rep:
        return CmCtr::resend_rep;
    case CmAttr::Rtu:
        return CmCtr::resend_rtu;
    case CmAttr::Mra:
        return CmCtr::resend_mra;
    case CmAttr::Dreq:
        return CmCtr::resend_dreq;
    case CmAttr::Drep:
        return CmCtr::resend_drep;
    case CmAttr::SidrReq:
        return CmCtr::resend_sidr_req;
    case CmAttr::SidrRep:
        return CmCtr::resend_sidr_rep;
    default:
        return CmCtr::resend_rej;
    }
}

CmCtr drop_ctr(MadError e) {
    switch (e) {
    case MadError::BadBaseVersion:
        return CmCtr::drop_bad_base_version;
    case MadError::NotCmClass:
        return CmCtr::drop_not_cm_class;
    case MadError::BadClassVersion:
        return CmCtr::drop_bad_class_version;
    case MadError::BadMethod:
        return CmCtr::drop_bad_method;
    case MadError::UnknownAttribute:
        return CmCtr::drop_unknown_attribute;
    case MadError::BadSidrRep:
        return CmCtr::drop_bad_sidr_rep;
    default:
        return CmCtr::drop_bad_length;
    }
}

/* The connection's peer sent it: its CM's GID (QP1 on RoCE). */
bool same_gid(const MadAddr &a, const MadAddr &b) { return std::memcmp(a.gid, b.gid, 16) == 0; }

CmMad mad_of(CmAttr a, uint64_t tid) {
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(a);
    m.hdr.tid = tid;
    return m;
}

void copy_pd(uint8_t *dst, size_t cap, const uint8_t *src, size_t len) {
    if (src && len)
        std::memcpy(dst, src, std::min(cap, len));
}

} // namespace

CmManager::CmManager(const CmConfig &cfg, MadSink &out, CmEventSink &events)
    : cfg_(cfg), out_(out), events_(events) {
    /* Slot index in the low bits of the comm ID makes lookups O(1); the rest of the ID
     * changes on every reuse of a slot so that a late MAD for an old connection does not
     * match its successor. */
    const uint32_t want = std::clamp<uint32_t>(cfg.max_conns, 1, 1u << 16);
    while ((1u << slot_bits_) < want)
        ++slot_bits_;
    conns_.resize(size_t{1} << slot_bits_);
    listeners_.resize(std::max<uint32_t>(cfg.max_listeners, 1));
}

/* ---- tables ---- */

CmManager::Conn *CmManager::find(uint32_t id) {
    if (id == 0)
        return nullptr;
    Conn &c = conns_[id & ((1u << slot_bits_) - 1)];
    return c.st != ConnState::Idle && c.local_id == id ? &c : nullptr;
}
const CmManager::Conn *CmManager::find(uint32_t id) const {
    return const_cast<CmManager *>(this)->find(id);
}

CmManager::Conn *CmManager::find_remote(uint32_t remote_id, uint64_t guid) {
    for (Conn &c : conns_)
        if (c.st != ConnState::Idle && !c.active && !c.sidr && c.remote_id == remote_id &&
            c.remote_ca_guid == guid)
            return &c;
    return nullptr;
}

CmManager::Conn *CmManager::find_sidr_remote(uint32_t request_id, const MadAddr &from) {
    for (Conn &c : conns_)
        if (c.st != ConnState::Idle && !c.active && c.sidr && c.remote_id == request_id &&
            same_gid(c.peer, from))
            return &c;
    return nullptr;
}

CmManager::Conn *CmManager::alloc() {
    /* No free slot: the Timewait connection closest to its end makes room. A REQ flood
     * the application rejects fills the table with Timewait slots for as long as the
     * REQs' own response timeout asks (up to max_response_timeout, 69 s), which would
     * lock every other peer out; Timewait only guards against late duplicates, and the
     * new connection gets a new comm ID anyway. */
    size_t pick = conns_.size();
    for (size_t i = 0; i < conns_.size(); ++i) {
        if (conns_[i].st == ConnState::Idle) {
            pick = i;
            break;
        }
        if (conns_[i].st == ConnState::Timewait &&
            (pick == conns_.size() || conns_[i].deadline < conns_[pick].deadline))
            pick = i;
    }
    if (pick < conns_.size() && conns_[pick].st == ConnState::Timewait) {
        ctr_.inc(CmCtr::timewait_evicted);
        const Conn gone = conns_[pick];
        conns_[pick] = Conn{};
        emit(gone, CmEventType::TimewaitExit);
    }
    for (size_t i = pick; i < conns_.size(); ++i) {
        Conn &c = conns_[i];
        if (c.st != ConnState::Idle)
            continue;
        uint32_t id = 0;
        do {
            ++gen_;
            id =
                ((gen_ * 0x9E3779B1u) ^ cfg_.comm_id_seed) << slot_bits_ | static_cast<uint32_t>(i);
        } while (id == 0);
        c = Conn{};
        c.local_id = id;
        return &c;
    }
    return nullptr;
}

int CmManager::find_listener(uint64_t sid) const {
    for (size_t i = 0; i < listeners_.size(); ++i)
        if (listeners_[i].used && listeners_[i].sid == sid)
            return static_cast<int>(i);
    return -1;
}

uint64_t CmManager::new_tid() {
    /* As ib_mad: the agent's part in the high half, a counter in the low one. */
    return static_cast<uint64_t>(cfg_.comm_id_seed) << 32 | ++tid_;
}

uint64_t CmManager::clamp_wait(uint8_t t) const {
    return cm_wait_ns(cfg_.packet_life_time, std::min(t, cfg_.max_response_timeout));
}

ConnState CmManager::state(uint32_t conn) const {
    const Conn *c = find(conn);
    return c ? c->st : ConnState::Idle;
}

const QpParams *CmManager::qp_params(uint32_t conn) const {
    const Conn *c = find(conn);
    return c ? &c->qp : nullptr;
}

size_t CmManager::live_conns() const {
    return static_cast<size_t>(std::count_if(
        conns_.begin(), conns_.end(), [](const Conn &c) { return c.st != ConnState::Idle; }));
}

uint64_t CmManager::next_deadline() const {
    uint64_t d = UINT64_MAX;
    for (const Conn &c : conns_)
        if (c.st != ConnState::Idle && c.deadline)
            d = std::min(d, c.deadline);
    return d;
}

/* ---- sending ---- */

void CmManager::send(Conn &c, const CmMad &m, CmCtr first_ctr) {
    /* Kept: a timeout or a duplicate sends these exact bytes again. */
    build_cm_mad(m, c.last, kMadLen);
    c.last_attr = m.hdr.attr_id;
    ctr_.inc(first_ctr);
    if (!out_.send_mad(c.peer, c.last, kMadLen))
        ctr_.inc(CmCtr::tx_failed);
}

void CmManager::resend_last(Conn &c) {
    if (!c.last_attr)
        return;
    ctr_.inc(resend_ctr(c.last_attr));
    if (!out_.send_mad(c.peer, c.last, kMadLen))
        ctr_.inc(CmCtr::tx_failed);
}

bool CmManager::stateless_allowed() {
    if (cfg_.stateless_per_sec == 0)
        return true;
    /* GCRA: stateless_tat_ is when the bucket would be full again; an answer fits while
     * that is at most burst - 1 intervals ahead of now. */
    const uint64_t interval = std::max<uint64_t>(1, 1'000'000'000ull / cfg_.stateless_per_sec);
    const uint64_t depth = interval * (std::max<uint32_t>(cfg_.stateless_burst, 1) - 1);
    const uint64_t now = rx_now_;
    /* A clock that went backwards (a driver reset) must not silence the CM for long. */
    if (stateless_tat_ > now + depth + interval)
        stateless_tat_ = now;
    const uint64_t tat = std::max(stateless_tat_, now);
    if (tat - now > depth) {
        ctr_.inc(CmCtr::stateless_rate_limited);
        return false;
    }
    stateless_tat_ = tat + interval;
    return true;
}

void CmManager::send_stateless(const MadAddr &to, const CmMad &m, CmCtr ctr) {
    uint8_t b[kMadLen];
    build_cm_mad(m, b, sizeof b);
    ctr_.inc(ctr);
    if (!out_.send_mad(to, b, sizeof b))
        ctr_.inc(CmCtr::tx_failed);
}

void CmManager::send_rej(Conn &c, RejReason reason, uint8_t msg_rejected, const uint8_t *pd,
                         size_t len) {
    CmMad m = mad_of(CmAttr::Rej, c.tid);
    m.rej.local_comm_id = c.local_id;
    m.rej.remote_comm_id = c.remote_id;
    m.rej.message_rejected = msg_rejected;
    m.rej.reason = static_cast<uint16_t>(reason);
    if (reason == RejReason::Timeout) {
        /* IBTA: a Timeout REJ names the CA that gave up (its GUID) in the ARI. */
        for (int i = 0; i < 8; ++i)
            m.rej.ari[i] = static_cast<uint8_t>(cfg_.local_ca_guid >> (56 - 8 * i));
        m.rej.reject_info_length = 8;
    }
    copy_pd(m.rej.private_data, kRejPrivLen, pd, len);
    ctr_.inc(rej_ctr(reason));
    send(c, m, CmCtr::tx_rej);
}

void CmManager::stateless_rej(const MadAddr &to, uint64_t tid, uint32_t remote_id, RejReason reason,
                              uint8_t msg_rejected) {
    CmMad m = mad_of(CmAttr::Rej, tid);
    m.rej.remote_comm_id = remote_id;
    m.rej.message_rejected = msg_rejected;
    m.rej.reason = static_cast<uint16_t>(reason);
    if (!stateless_allowed())
        return;
    ctr_.inc(rej_ctr(reason));
    send_stateless(to, m, CmCtr::tx_rej);
}

/* ---- state ---- */

void CmManager::enter(Conn &c, ConnState s, CmCtr reason) {
    c.st = s;
    ctr_.inc(reason);
}

void CmManager::enter_timewait(Conn &c, uint64_t now) {
    /* Long enough for MADs still in flight to die out before the comm ID can match a
     * new connection (ib_cm waits twice the packet life), and longer than one of the
     * peer's retry waits: its resent REQ or DREQ (our REJ or DREP was lost) still finds
     * the connection and gets the same answer, not a new ConnectRequest. */
    enter(c, ConnState::Timewait, CmCtr::timewait_enter);
    c.deadline = now + 2 * iba_time_ns(cfg_.packet_life_time) + c.peer_wait_ns;
}

void CmManager::emit(const Conn &c, CmEventType t, const uint8_t *pd, size_t len, uint16_t rej,
                     DiscCause cause) {
    CmEvent ev;
    ev.type = t;
    ev.conn = c.local_id;
    ev.active = c.active;
    ev.user_ctx = c.user_ctx;
    ev.service_id = c.service_id;
    ev.qp = c.qp;
    ev.peer = c.peer;
    ev.rej_reason = rej;
    ev.cause = cause;
    ev.private_data = pd;
    ev.private_data_len = pd ? len : 0;
    events_.on_cm_event(ev);
}

void CmManager::expire(Conn &c, uint64_t now) {
    c.deadline = 0;
    switch (c.st) {
    case ConnState::ReqSent:
    case ConnState::MraReqRcvd:
    case ConnState::RepSent:
    case ConnState::MraRepRcvd:
    case ConnState::DreqSent:
    case ConnState::SidrReqSent:
        if (c.retries_left > 0) {
            --c.retries_left;
            c.deadline = now + c.wait_ns;
            resend_last(c);
            return;
        }
        break;
    case ConnState::ReqRcvd:
    case ConnState::MraReqSent:
    case ConnState::SidrReqRcvd:
        /* The application never answered (req_answer_timeout_ns): the slot goes back,
         * the active side learns it with a REJ "timeout" for its REQ (a SIDR_REP
         * "rejected" for a SIDR_REQ), the application with ConnectError on the handle it
         * was given (accept/reject now refused). */
        ctr_.inc(CmCtr::timeout_req_unanswered);
        if (c.sidr) { /* it enters Timewait too */
            sidr_answer(c.local_id, SidrStatus::Reject, 0, 0, nullptr, 0, now);
        } else {
            send_rej(c, RejReason::Timeout, 0, nullptr, 0);
            enter_timewait(c, now);
        }
        emit(c, CmEventType::ConnectError, nullptr, 0, static_cast<uint16_t>(RejReason::Timeout));
        return;
    case ConnState::Timewait: {
        ctr_.inc(CmCtr::timewait_exit);
        const Conn gone = c;
        c = Conn{};
        emit(gone, CmEventType::TimewaitExit);
        return;
    }
    default:
        return;
    }
    /* Out of retries. */
    if (c.st == ConnState::SidrReqSent) {
        ctr_.inc(CmCtr::timeout_sidr_req);
        finish_sidr(c, CmEventType::SidrUnreachable, nullptr);
        return;
    }
    if (c.st == ConnState::DreqSent) {
        ctr_.inc(CmCtr::timeout_dreq);
        enter_timewait(c, now);
        emit(c, CmEventType::Disconnected, nullptr, 0, 0, DiscCause::LocalTimeout);
        return;
    }
    const bool active = c.active;
    ctr_.inc(active ? CmCtr::timeout_req : CmCtr::timeout_rep);
    /* Message rejected "other" (2): the REJ ends the exchange, it answers no message. */
    send_rej(c, RejReason::Timeout, 2, nullptr, 0);
    enter_timewait(c, now);
    emit(c, active ? CmEventType::Unreachable : CmEventType::ConnectError, nullptr, 0,
         static_cast<uint16_t>(RejReason::Timeout));
}

void CmManager::on_time(uint64_t now) {
    for (Conn &c : conns_)
        if (c.st != ConnState::Idle && c.deadline && c.deadline <= now)
            expire(c, now);
}

/* ---- API ---- */

bool CmManager::listen(uint64_t sid, uint64_t ctx, uint32_t backlog) {
    if (find_listener(sid) >= 0) {
        ctr_.inc(CmCtr::api_refused);
        return false;
    }
    for (Listener &l : listeners_)
        if (!l.used) {
            l = Listener{true, sid, ctx, backlog ? backlog : cfg_.listen_backlog};
            return true;
        }
    ctr_.inc(CmCtr::api_refused);
    return false;
}

bool CmManager::unlisten(uint64_t sid) {
    const int i = find_listener(sid);
    if (i < 0)
        return false;
    listeners_[static_cast<size_t>(i)] = Listener{};
    return true;
}

uint32_t CmManager::connect(const ConnectParams &p, uint64_t now) {
    Conn *c = p.private_data_len <= kReqPrivLen ? alloc() : nullptr;
    if (!c) {
        ctr_.inc(CmCtr::api_refused);
        return 0;
    }
    c->active = true;
    c->service_id = p.service_id;
    c->user_ctx = p.user_ctx;
    c->peer = p.peer;
    c->tid = new_tid();
    QpParams &q = c->qp;
    q.local_qpn = p.local_qpn & 0xFFFFFF;
    q.rq_psn = p.rq_psn & 0xFFFFFF;
    q.path_mtu = p.path_mtu;
    q.local_ack_timeout = p.local_ack_timeout;
    q.retry_count = p.retry_count;
    q.max_rd_atomic = p.initiator_depth;
    q.max_dest_rd_atomic = p.responder_resources;
    q.pkey = p.pkey;
    static constexpr uint8_t kNoGid[16] = {};
    std::memcpy(q.local_gid, std::memcmp(p.local_gid, kNoGid, 16) ? p.local_gid : cfg_.local_gid,
                16);
    std::memcpy(q.remote_gid, p.peer.gid, 16);
    q.traffic_class = p.peer.traffic_class;
    q.hop_limit = p.peer.hop_limit;
    q.flow_label = p.peer.flow_label;

    CmMad m = mad_of(CmAttr::Req, c->tid);
    Req &r = m.req;
    r.local_comm_id = c->local_id;
    r.service_id = p.service_id;
    r.local_ca_guid = cfg_.local_ca_guid;
    r.local_qpn = q.local_qpn;
    r.responder_resources = p.responder_resources;
    r.initiator_depth = p.initiator_depth;
    r.remote_cm_response_timeout = cfg_.cm_response_timeout;
    r.transport_type = 0; /* RC */
    r.starting_psn = q.rq_psn;
    r.local_cm_response_timeout = cfg_.cm_response_timeout;
    r.retry_count = p.retry_count;
    r.pkey = p.pkey;
    r.path_mtu = p.path_mtu;
    r.rnr_retry_count = p.rnr_retry_count;
    r.max_cm_retries = cfg_.max_cm_retries;
    std::memcpy(r.primary.local_gid, q.local_gid, 16);
    std::memcpy(r.primary.remote_gid, q.remote_gid, 16);
    r.primary.flow_label = q.flow_label;
    r.primary.traffic_class = q.traffic_class;
    r.primary.hop_limit = q.hop_limit;
    r.primary.local_ack_timeout = p.local_ack_timeout;
    r.alternate.local_lid = r.alternate.remote_lid = 0; /* no alternate path: all zero */
    copy_pd(r.private_data, kReqPrivLen, p.private_data, p.private_data_len);

    c->wait_ns = clamp_wait(cfg_.cm_response_timeout);
    c->peer_wait_ns = clamp_wait(cfg_.cm_response_timeout); /* the REQ's local timeout */
    c->max_retries = c->retries_left = cfg_.max_cm_retries;
    c->deadline = now + c->wait_ns;
    enter(*c, ConnState::ReqSent, CmCtr::st_req_sent);
    send(*c, m, CmCtr::tx_req);
    return c->local_id;
}

bool CmManager::accept(uint32_t conn, const AcceptParams &p, uint64_t now) {
    Conn *c = find(conn);
    if (!c || c->active || (c->st != ConnState::ReqRcvd && c->st != ConnState::MraReqSent) ||
        p.private_data_len > kRepPrivLen) {
        ctr_.inc(CmCtr::api_refused);
        return false;
    }
    QpParams &q = c->qp;
    q.local_qpn = p.local_qpn & 0xFFFFFF;
    q.rq_psn = p.rq_psn & 0xFFFFFF;
    /* IBTA: the REP may not offer more than the REQ asked for, each way round. */
    q.max_dest_rd_atomic = std::min(p.responder_resources, c->req_init_depth);
    q.max_rd_atomic = std::min(p.initiator_depth, c->req_resp_res);
    c->user_ctx = p.user_ctx;

    CmMad m = mad_of(CmAttr::Rep, c->tid);
    Rep &r = m.rep;
    r.local_comm_id = c->local_id;
    r.remote_comm_id = c->remote_id;
    r.local_qpn = q.local_qpn;
    r.starting_psn = q.rq_psn;
    r.responder_resources = q.max_dest_rd_atomic;
    r.initiator_depth = q.max_rd_atomic;
    r.target_ack_delay = p.target_ack_delay;
    r.rnr_retry_count = p.rnr_retry_count;
    r.srq = p.srq;
    r.local_ca_guid = cfg_.local_ca_guid;
    copy_pd(r.private_data, kRepPrivLen, p.private_data, p.private_data_len);

    c->retries_left = c->max_retries;
    c->deadline = now + c->wait_ns;
    enter(*c, ConnState::RepSent, CmCtr::st_rep_sent);
    send(*c, m, CmCtr::tx_rep);
    return true;
}

bool CmManager::reject(uint32_t conn, const uint8_t *pd, size_t len, uint64_t now) {
    Conn *c = find(conn);
    if (!c || c->active || (c->st != ConnState::ReqRcvd && c->st != ConnState::MraReqSent) ||
        len > kRejPrivLen) {
        ctr_.inc(CmCtr::api_refused);
        return false;
    }
    send_rej(*c, RejReason::ConsumerDefined, 0, pd, len);
    enter_timewait(*c, now);
    return true;
}

bool CmManager::disconnect(uint32_t conn, const uint8_t *pd, size_t len, uint64_t now) {
    Conn *c = find(conn);
    if (!c || c->st != ConnState::Established || len > kDreqPrivLen) {
        ctr_.inc(CmCtr::api_refused);
        return false;
    }
    c->dreq_tid = new_tid();
    CmMad m = mad_of(CmAttr::Dreq, c->dreq_tid);
    m.dreq.local_comm_id = c->local_id;
    m.dreq.remote_comm_id = c->remote_id;
    m.dreq.remote_qpn = c->qp.remote_qpn;
    copy_pd(m.dreq.private_data, kDreqPrivLen, pd, len);
    c->retries_left = c->max_retries;
    c->deadline = now + c->wait_ns;
    enter(*c, ConnState::DreqSent, CmCtr::disc_local);
    send(*c, m, CmCtr::tx_dreq);
    return true;
}

bool CmManager::notify_comm_est(uint32_t conn, uint64_t) {
    Conn *c = find(conn);
    if (c && c->st == ConnState::Established)
        return true;
    if (!c || c->active || (c->st != ConnState::RepSent && c->st != ConnState::MraRepRcvd)) {
        ctr_.inc(CmCtr::api_refused);
        return false;
    }
    c->deadline = 0;
    enter(*c, ConnState::Established, CmCtr::est_comm_est);
    emit(*c, CmEventType::Established);
    return true;
}

/* ---- receiving ---- */

void CmManager::on_mad(const MadAddr &from, const uint8_t *p, size_t len, uint64_t now) {
    CmMad m{};
    const MadError e = parse_cm_mad(p, len, m);
    if (e != MadError::Ok) {
        ctr_.inc(drop_ctr(e));
        return;
    }
    ctr_.inc(CmCtr::rx_mad);
    rx_now_ = now;
    switch (static_cast<CmAttr>(m.hdr.attr_id)) {
    case CmAttr::Req:
        on_req(from, m, now);
        break;
    case CmAttr::Mra:
        on_mra(from, m, now);
        break;
    case CmAttr::Rej:
        on_rej(from, m, now);
        break;
    case CmAttr::Rep:
        on_rep(from, m, now);
        break;
    case CmAttr::Rtu:
        on_rtu(from, m, now);
        break;
    case CmAttr::Dreq:
        on_dreq(from, m, now);
        break;
    case CmAttr::Drep:
        on_drep(from, m, now);
        break;
    case CmAttr::SidrReq:
        on_sidr_req(from, m, now);
        break;
    case CmAttr::SidrRep:
        on_sidr_rep(from, m);
        break;
    default: /* the codec lets only the nine above through */
        ctr_.inc(CmCtr::drop_unknown_attribute);
        break;
    }
}

bool CmManager::pending_over_limit(const MadAddr &from, size_t listener) {
    const Listener &l = listeners_[listener];
    uint32_t for_sid = 0, from_src = 0;
    for (const Conn &o : conns_) {
        if (o.active || (o.st != ConnState::ReqRcvd && o.st != ConnState::MraReqSent &&
                         o.st != ConnState::SidrReqRcvd))
            continue;
        for_sid += o.service_id == l.sid;
        from_src += std::memcmp(o.peer.gid, from.gid, 16) == 0;
    }
    CmCtr why;
    if (for_sid >= l.backlog)
        why = CmCtr::drop_req_backlog;
    else if (cfg_.max_pending_per_source && from_src >= cfg_.max_pending_per_source)
        why = CmCtr::drop_req_source_limit;
    else
        return false;
    ctr_.inc(why);
    return true;
}

void CmManager::on_req(const MadAddr &from, const CmMad &m, uint64_t now) {
    ctr_.inc(CmCtr::rx_req);
    const Req &r = m.req;
    /* A REQ we already hold (same comm ID from the same CA): the active side resent it
     * because our answer is late or was lost. */
    if (Conn *d = find_remote(r.local_comm_id, r.local_ca_guid)) {
        if (!same_gid(from, d->peer)) {
            /* Not the active side resending: a copy from elsewhere gets no MRA, REP or
             * REJ and moves nothing. */
            ctr_.inc(CmCtr::drop_req_source);
            return;
        }
        switch (d->st) {
        case ConnState::ReqRcvd: {
            /* The application is still deciding: ask the active side to wait. */
            CmMad a = mad_of(CmAttr::Mra, d->tid);
            a.mra.local_comm_id = d->local_id;
            a.mra.remote_comm_id = d->remote_id;
            a.mra.message_mraed = 0;
            a.mra.service_timeout = cfg_.mra_service_timeout;
            enter(*d, ConnState::MraReqSent, CmCtr::st_mra_req_sent);
            send(*d, a, CmCtr::tx_mra);
            return;
        }
        case ConnState::MraReqSent: /* the MRA again */
        case ConnState::RepSent:    /* the REP again: it or the RTU was lost */
        case ConnState::MraRepRcvd:
            resend_last(*d);
            return;
        case ConnState::Timewait:
            if (d->last_attr == static_cast<uint16_t>(CmAttr::Rej))
                resend_last(*d); /* the REJ we decided on */
            else
                stateless_rej(from, m.hdr.tid, r.local_comm_id, RejReason::StaleConn, 0);
            return;
        default: /* established: the REQ is old news */
            ctr_.inc(CmCtr::drop_req_dup);
            return;
        }
    }
    const int li = find_listener(r.service_id);
    if (li < 0) {
        ctr_.inc(CmCtr::drop_req_no_listener);
        stateless_rej(from, m.hdr.tid, r.local_comm_id, RejReason::InvalidServiceId, 0);
        return;
    }
    if (r.transport_type != 0) {
        ctr_.inc(CmCtr::drop_req_bad_transport);
        stateless_rej(from, m.hdr.tid, r.local_comm_id, RejReason::InvalidTransportType, 0);
        return;
    }
    /* Our QP will send to the primary path's GID: it must be the MAD's own source, or a
     * client could aim our traffic (READ responses, retries) at a third host (rxe's
     * check_addr on the data path, the same rule on the way in). */
    if (std::memcmp(r.primary.local_gid, from.gid, 16) != 0) {
        ctr_.inc(CmCtr::drop_req_path_gid);
        stateless_rej(from, m.hdr.tid, r.local_comm_id, RejReason::InvalidGid, 0);
        return;
    }
    /* A new comm ID for a remote QP we are still connected to: the peer lost its state
     * (rebooted) and our connection is stale (ib_cm's remote QPN check). */
    for (const Conn &o : conns_)
        if (o.st != ConnState::Idle && o.st != ConnState::Timewait && !o.sidr && o.remote_id &&
            o.qp.remote_qpn == r.local_qpn &&
            std::memcmp(o.qp.remote_gid, r.primary.local_gid, 16) == 0) {
            ctr_.inc(CmCtr::drop_req_stale);
            stateless_rej(from, m.hdr.tid, r.local_comm_id, RejReason::StaleConn, 0);
            return;
        }
    if (pending_over_limit(from, static_cast<size_t>(li))) {
        stateless_rej(from, m.hdr.tid, r.local_comm_id, RejReason::NoResources, 0);
        return;
    }
    Conn *c = alloc();
    if (!c) {
        ctr_.inc(CmCtr::drop_req_no_resources);
        stateless_rej(from, m.hdr.tid, r.local_comm_id, RejReason::NoResources, 0);
        return;
    }
    c->active = false;
    c->remote_id = r.local_comm_id;
    c->remote_ca_guid = r.local_ca_guid;
    c->service_id = r.service_id;
    c->user_ctx = listeners_[static_cast<size_t>(li)].ctx;
    c->peer = from;
    c->tid = m.hdr.tid;
    QpParams &q = c->qp;
    q.remote_qpn = r.local_qpn;
    q.sq_psn = r.starting_psn;
    q.path_mtu = r.path_mtu;
    q.local_ack_timeout = r.primary.local_ack_timeout;
    q.retry_count = r.retry_count;
    q.rnr_retry_count = r.rnr_retry_count;
    /* The proposal until accept() clamps it: the REQ's offer seen from our side. */
    q.max_dest_rd_atomic = r.initiator_depth;
    q.max_rd_atomic = r.responder_resources;
    q.pkey = r.pkey;
    std::memcpy(q.local_gid, r.primary.remote_gid, 16);
    std::memcpy(q.remote_gid, from.gid, 16); /* = the path's, checked above */
    q.traffic_class = r.primary.traffic_class;
    q.hop_limit = r.primary.hop_limit;
    q.sl = r.primary.sl;
    q.flow_label = r.primary.flow_label;
    c->req_resp_res = r.responder_resources;
    c->req_init_depth = r.initiator_depth;
    /* Our answers (REP, DREQ) wait as long as the active side said it needs. */
    c->wait_ns = clamp_wait(r.local_cm_response_timeout);
    c->peer_wait_ns = clamp_wait(r.remote_cm_response_timeout);
    c->max_retries = r.max_cm_retries;
    enter(*c, ConnState::ReqRcvd, CmCtr::st_req_rcvd);
    c->deadline = cfg_.req_answer_timeout_ns ? now + cfg_.req_answer_timeout_ns : 0;
    emit(*c, CmEventType::ConnectRequest, r.private_data, kReqPrivLen);
}

void CmManager::on_mra(const MadAddr &from, const CmMad &m, uint64_t now) {
    ctr_.inc(CmCtr::rx_mra);
    const Mra &a = m.mra;
    Conn *c = find(a.remote_comm_id);
    if (!c) {
        ctr_.inc(CmCtr::drop_mra_unknown);
        return;
    }
    if (!same_gid(from, c->peer)) {
        ctr_.inc(CmCtr::drop_mra_source);
        return;
    }
    const uint64_t wait = 2 * iba_time_ns(cfg_.packet_life_time) +
                          iba_time_ns(std::min(a.service_timeout, cfg_.max_response_timeout));
    if (c->active && a.message_mraed == 0 &&
        (c->st == ConnState::ReqSent || c->st == ConnState::MraReqRcvd)) {
        c->remote_id = a.local_comm_id;
        c->deadline = now + wait;
        enter(*c, ConnState::MraReqRcvd, CmCtr::st_mra_req_rcvd);
        return;
    }
    if (!c->active && a.message_mraed == 1 && a.local_comm_id == c->remote_id &&
        (c->st == ConnState::RepSent || c->st == ConnState::MraRepRcvd)) {
        c->deadline = now + wait;
        enter(*c, ConnState::MraRepRcvd, CmCtr::st_mra_rep_rcvd);
        return;
    }
    ctr_.inc(CmCtr::drop_mra_state);
}

bool CmManager::rej_fits_state(const Conn &c, const Rej &j, uint64_t now) {
    /* Message rejected: 0 the REQ (only the passive side rejects it), 1 the REP (only the
     * active side), 2 other (either side giving up: a Timeout REJ). */
    const uint8_t msg = j.message_rejected;
    switch (c.st) {
    case ConnState::ReqSent:
    case ConnState::MraReqRcvd:
        return c.active && msg != 1;
    case ConnState::ReqRcvd:
    case ConnState::MraReqSent:
    case ConnState::RepSent:
    case ConnState::MraRepRcvd:
        return !c.active && msg != 0;
    case ConnState::Established:
        /* The passive side never got our RTU, resent its REP until it gave up, and says
         * so (CmLink.EveryRtuLostPassiveGivesUp): only that REJ, only while it can come. */
        return c.active && msg == 2 && j.reason == static_cast<uint16_t>(RejReason::Timeout) &&
               now <= c.rej_until;
    default: /* DreqSent, Timewait: nothing left to reject */
        return false;
    }
}

void CmManager::on_rej(const MadAddr &from, const CmMad &m, uint64_t now) {
    ctr_.inc(CmCtr::rx_rej);
    const Rej &j = m.rej;
    Conn *c = find(j.remote_comm_id);
    /* Once the peer's comm ID is known the REJ must name it; only a REJ of our REQ before
     * we know it (ReqSent: no REP, no MRA yet) may carry another or 0 (the peer kept no
     * state for the REQ). ib_cm checks both IDs the same way (cm_acquire_rejected_id). */
    if (!c || (c->remote_id && j.local_comm_id != c->remote_id)) {
        ctr_.inc(CmCtr::drop_rej_unknown);
        return;
    }
    if (!same_gid(from, c->peer)) {
        ctr_.inc(CmCtr::drop_rej_source);
        return;
    }
    if (!rej_fits_state(*c, j, now)) {
        ctr_.inc(CmCtr::drop_rej_state);
        return;
    }
    ctr_.inc(CmCtr::rej_rcvd);
    enter_timewait(*c, now);
    emit(*c, CmEventType::Rejected, j.private_data, kRejPrivLen, j.reason, DiscCause::Rejected);
}

void CmManager::on_rep(const MadAddr &from, const CmMad &m, uint64_t now) {
    ctr_.inc(CmCtr::rx_rep);
    const Rep &r = m.rep;
    Conn *c = find(r.remote_comm_id);
    if (!c || !c->active) {
        /* A REP for a connection we never asked for: as ib_cm, tell its sender. */
        ctr_.inc(CmCtr::drop_rep_unknown);
        stateless_rej(from, m.hdr.tid, r.local_comm_id, RejReason::InvalidCommId, 1);
        return;
    }
    if (!same_gid(from, c->peer)) { /* not from where our REQ went: no answer either */
        ctr_.inc(CmCtr::drop_rep_source);
        return;
    }
    if (c->st == ConnState::Established) {
        /* Our RTU was lost: the passive side resent its REP. */
        if (r.local_comm_id == c->remote_id && c->last_attr == static_cast<uint16_t>(CmAttr::Rtu))
            resend_last(*c);
        else
            ctr_.inc(CmCtr::drop_rep_state);
        return;
    }
    if (c->st != ConnState::ReqSent && c->st != ConnState::MraReqRcvd) {
        ctr_.inc(CmCtr::drop_rep_state);
        return;
    }
    c->remote_id = r.local_comm_id;
    c->remote_ca_guid = r.local_ca_guid;
    QpParams &q = c->qp;
    q.remote_qpn = r.local_qpn;
    q.sq_psn = r.starting_psn;
    q.rnr_retry_count = r.rnr_retry_count;
    q.max_rd_atomic = std::min(q.max_rd_atomic, r.responder_resources);
    q.max_dest_rd_atomic = r.initiator_depth;
    c->deadline = 0;
    /* The passive side resends this REP (max_cm_retries more times, a REP wait apart, the
     * wait our REQ asked for) before it gives up: a slot more for its clock and the trip. */
    c->rej_until = now + (c->max_retries + 2u) * c->peer_wait_ns;
    enter(*c, ConnState::Established, CmCtr::est_active);
    const uint32_t id = c->local_id;
    emit(*c, CmEventType::Established, r.private_data, kRepPrivLen);
    /* The RTU after the event: the QP is in RTS before the passive side may send. */
    if (c->local_id != id || c->st != ConnState::Established)
        return;
    CmMad u = mad_of(CmAttr::Rtu, c->tid);
    u.rtu.local_comm_id = c->local_id;
    u.rtu.remote_comm_id = c->remote_id;
    (void)now;
    send(*c, u, CmCtr::tx_rtu);
}

void CmManager::on_rtu(const MadAddr &from, const CmMad &m, uint64_t) {
    ctr_.inc(CmCtr::rx_rtu);
    Conn *c = find(m.rtu.remote_comm_id);
    if (!c || c->active || m.rtu.local_comm_id != c->remote_id) {
        ctr_.inc(CmCtr::drop_rtu_unknown);
        return;
    }
    if (!same_gid(from, c->peer)) {
        ctr_.inc(CmCtr::drop_rtu_source);
        return;
    }
    if (c->st != ConnState::RepSent && c->st != ConnState::MraRepRcvd) {
        ctr_.inc(CmCtr::drop_rtu_state);
        return;
    }
    c->deadline = 0;
    enter(*c, ConnState::Established, CmCtr::est_passive);
    emit(*c, CmEventType::Established, m.rtu.private_data, kRtuPrivLen);
}

void CmManager::on_dreq(const MadAddr &from, const CmMad &m, uint64_t now) {
    ctr_.inc(CmCtr::rx_dreq);
    const Dreq &q = m.dreq;
    Conn *c = find(q.remote_comm_id);
    CmMad a = mad_of(CmAttr::Drep, m.hdr.tid);
    a.drep.local_comm_id = q.remote_comm_id;
    a.drep.remote_comm_id = q.local_comm_id;
    if (c && !same_gid(from, c->peer)) {
        /* Naming our connection from another GID: a forger; no DREP to it either. */
        ctr_.inc(CmCtr::drop_dreq_source);
        return;
    }
    if (!c || c->sidr || q.local_comm_id != c->remote_id || q.remote_qpn != c->qp.local_qpn) {
        /* As ib_cm: answer anyway so the sender stops retrying, keep nothing. */
        ctr_.inc(CmCtr::drop_dreq_unknown);
        if (stateless_allowed())
            send_stateless(from, a, CmCtr::tx_drep);
        return;
    }
    switch (c->st) {
    case ConnState::RepSent: /* our RTU never came, but the active side is done */
    case ConnState::MraRepRcvd:
    case ConnState::Established:
    case ConnState::DreqSent: /* both sides disconnected at once */
        c->dreq_tid = m.hdr.tid;
        send(*c, a, CmCtr::tx_drep);
        ctr_.inc(CmCtr::disc_remote);
        enter_timewait(*c, now);
        emit(*c, CmEventType::Disconnected, q.private_data, kDreqPrivLen, 0, DiscCause::Remote);
        return;
    case ConnState::Timewait:
        /* Our DREP was lost. */
        if (c->last_attr == static_cast<uint16_t>(CmAttr::Drep))
            resend_last(*c);
        else
            send(*c, a, CmCtr::tx_drep);
        return;
    default:
        ctr_.inc(CmCtr::drop_dreq_state);
        return;
    }
}

void CmManager::on_drep(const MadAddr &from, const CmMad &m, uint64_t now) {
    ctr_.inc(CmCtr::rx_drep);
    Conn *c = find(m.drep.remote_comm_id);
    if (!c || m.drep.local_comm_id != c->remote_id) {
        ctr_.inc(CmCtr::drop_drep_unknown);
        return;
    }
    if (!same_gid(from, c->peer)) {
        ctr_.inc(CmCtr::drop_drep_source);
        return;
    }
    if (c->st != ConnState::DreqSent) {
        ctr_.inc(CmCtr::drop_drep_state);
        return;
    }
    enter_timewait(*c, now);
    emit(*c, CmEventType::Disconnected, m.drep.private_data, kDrepPrivLen, 0, DiscCause::LocalDone);
}

} // namespace droce::cm

namespace droce::cm {

/* ---- SIDR (IBTA 12.11) ---- */

namespace {

CmMad sidr_rep_of(uint64_t tid, uint32_t request_id, SidrStatus status, uint64_t sid) {
    CmMad m = mad_of(CmAttr::SidrRep, tid);
    m.sidr_rep.request_id = request_id;
    m.sidr_rep.status = static_cast<uint8_t>(status);
    m.sidr_rep.service_id = sid;
    return m;
}

} // namespace

uint32_t CmManager::sidr_request(const SidrParams &p, uint64_t now) {
    Conn *c = p.private_data_len <= kSidrReqPrivLen ? alloc() : nullptr;
    if (!c) {
        ctr_.inc(CmCtr::api_refused);
        return 0;
    }
    c->active = true;
    c->sidr = true;
    c->service_id = p.service_id;
    c->user_ctx = p.user_ctx;
    c->peer = p.peer;
    c->tid = new_tid();
    c->qp.pkey = p.pkey;
    std::memcpy(c->qp.local_gid, cfg_.local_gid, 16);
    std::memcpy(c->qp.remote_gid, p.peer.gid, 16);
    CmMad m = mad_of(CmAttr::SidrReq, c->tid);
    m.sidr_req.request_id = c->local_id;
    m.sidr_req.pkey = p.pkey;
    m.sidr_req.service_id = p.service_id;
    copy_pd(m.sidr_req.private_data, kSidrReqPrivLen, p.private_data, p.private_data_len);
    /* A SIDR_REQ carries no timing fields: we wait and retry as for our REQs (rdma_cm:
     * 2^(20 - 8) ms per try, 15 retries). */
    c->wait_ns = c->peer_wait_ns = clamp_wait(cfg_.cm_response_timeout);
    c->max_retries = c->retries_left = cfg_.max_cm_retries;
    c->deadline = now + c->wait_ns;
    enter(*c, ConnState::SidrReqSent, CmCtr::st_sidr_req_sent);
    send(*c, m, CmCtr::tx_sidr_req);
    return c->local_id;
}

bool CmManager::sidr_accept(uint32_t conn, uint32_t qpn, uint32_t qkey, const uint8_t *pd,
                            size_t len, uint64_t now) {
    return sidr_answer(conn, SidrStatus::Success, qpn, qkey, pd, len, now);
}

bool CmManager::sidr_reject(uint32_t conn, SidrStatus status, const uint8_t *pd, size_t len,
                            uint64_t now) {
    if (status == SidrStatus::Success || static_cast<uint8_t>(status) > kSidrStatusMax) {
        ctr_.inc(CmCtr::api_refused);
        return false;
    }
    return sidr_answer(conn, status, 0, 0, pd, len, now);
}

bool CmManager::sidr_answer(uint32_t conn, SidrStatus status, uint32_t qpn, uint32_t qkey,
                            const uint8_t *pd, size_t len, uint64_t now) {
    Conn *c = find(conn);
    if (!c || !c->sidr || c->st != ConnState::SidrReqRcvd || len > kSidrRepPrivLen) {
        ctr_.inc(CmCtr::api_refused);
        return false;
    }
    CmMad m = sidr_rep_of(c->tid, c->remote_id, status, c->service_id);
    m.sidr_rep.qpn = qpn & 0xFFFFFF;
    m.sidr_rep.qkey = qkey;
    copy_pd(m.sidr_rep.private_data, kSidrRepPrivLen, pd, len);
    c->qp.local_qpn = qpn & 0xFFFFFF;
    /* Kept in Timewait: a copy of the SIDR_REQ (our SIDR_REP was lost) gets it again. */
    send(*c, m, CmCtr::tx_sidr_rep);
    enter_timewait(*c, now);
    return true;
}

void CmManager::finish_sidr(Conn &c, CmEventType t, const SidrRep *rep) {
    const Conn done = c;
    c = Conn{}; /* free before the event: the sink may start the next request at once */
    CmEvent ev;
    ev.type = t;
    ev.conn = done.local_id;
    ev.active = true;
    ev.user_ctx = done.user_ctx;
    ev.service_id = done.service_id;
    ev.qp = done.qp;
    ev.peer = done.peer;
    if (rep) {
        ev.qp.remote_qpn = rep->qpn;
        ev.qkey = rep->qkey;
        ev.sidr_status = rep->status;
        ev.private_data = rep->private_data;
        ev.private_data_len = kSidrRepPrivLen;
    }
    events_.on_cm_event(ev);
}

void CmManager::on_sidr_req(const MadAddr &from, const CmMad &m, uint64_t now) {
    ctr_.inc(CmCtr::rx_sidr_req);
    const SidrReq &r = m.sidr_req;
    if (Conn *d = find_sidr_remote(r.request_id, from)) {
        /* The active side resent it: answered already -> the same SIDR_REP again (only
         * from the GID it came from: find_sidr_remote keys on it); still deciding ->
         * the answer comes when the application gives it. */
        if (d->st == ConnState::Timewait && d->last_attr == static_cast<uint16_t>(CmAttr::SidrRep))
            resend_last(*d);
        else
            ctr_.inc(CmCtr::drop_sidr_req_dup);
        return;
    }
    const int li = find_listener(r.service_id);
    if (li < 0 || pending_over_limit(from, static_cast<size_t>(li))) {
        /* No state kept: ib_cm's answers, "not supported" for an unknown service ID,
         * "rejected" for one over its limits. */
        if (li < 0)
            ctr_.inc(CmCtr::drop_sidr_req_no_listener);
        if (stateless_allowed())
            send_stateless(from,
                           sidr_rep_of(m.hdr.tid, r.request_id,
                                       li < 0 ? SidrStatus::Unsupported : SidrStatus::Reject,
                                       r.service_id),
                           CmCtr::tx_sidr_rep);
        return;
    }
    Conn *c = alloc();
    if (!c) {
        ctr_.inc(CmCtr::drop_req_no_resources);
        if (stateless_allowed())
            send_stateless(from,
                           sidr_rep_of(m.hdr.tid, r.request_id, SidrStatus::NoQp, r.service_id),
                           CmCtr::tx_sidr_rep);
        return;
    }
    c->active = false;
    c->sidr = true;
    c->remote_id = r.request_id;
    c->service_id = r.service_id;
    c->user_ctx = listeners_[static_cast<size_t>(li)].ctx;
    c->peer = from;
    c->tid = m.hdr.tid;
    c->qp.pkey = r.pkey;
    std::memcpy(c->qp.remote_gid, from.gid, 16);
    c->qp.traffic_class = from.traffic_class;
    c->qp.hop_limit = from.hop_limit;
    /* Timewait after the answer outlasts one of the active side's retry waits. */
    c->wait_ns = c->peer_wait_ns = clamp_wait(cfg_.cm_response_timeout);
    enter(*c, ConnState::SidrReqRcvd, CmCtr::st_sidr_req_rcvd);
    c->deadline = cfg_.req_answer_timeout_ns ? now + cfg_.req_answer_timeout_ns : 0;
    emit(*c, CmEventType::SidrRequest, r.private_data, kSidrReqPrivLen);
}

void CmManager::on_sidr_rep(const MadAddr &from, const CmMad &m) {
    ctr_.inc(CmCtr::rx_sidr_rep);
    const SidrRep &r = m.sidr_rep;
    Conn *c = find(r.request_id);
    if (!c || !c->sidr || !c->active || c->st != ConnState::SidrReqSent) {
        ctr_.inc(CmCtr::drop_sidr_rep_unknown);
        return;
    }
    if (!same_gid(from, c->peer)) {
        ctr_.inc(CmCtr::drop_sidr_rep_source);
        return;
    }
    const bool ok = r.status == static_cast<uint8_t>(SidrStatus::Success);
    ctr_.inc(ok ? CmCtr::sidr_resolved : CmCtr::sidr_rejected);
    finish_sidr(*c, ok ? CmEventType::SidrResolved : CmEventType::SidrRejected, &r);
}

} // namespace droce::cm
