/* SPDX-License-Identifier: BSD-3-Clause */
/* droce::CmChannel (include/droce/cm.h): rdma_cm's IP layer over lib/cm's state machine.
 * It turns IP ports into service IDs, puts the IP CM header in front of a REQ's private
 * data and takes it off on the other side, and queues the events for polling. */
#include <droce/cm.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cm_conn.h"

namespace droce {

namespace {

void ipv4_gid(uint32_t ip, uint8_t gid[16]) {
    /* RoCEv2's IPv4-mapped GID: ::ffff:a.b.c.d */
    std::memset(gid, 0, 16);
    gid[10] = gid[11] = 0xFF;
    for (int i = 0; i < 4; ++i)
        gid[12 + i] = static_cast<uint8_t>(ip >> (24 - 8 * i));
}
bool is_ipv4_mapped(const uint8_t gid[16]) {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    return std::memcmp(gid, kPrefix, 12) == 0;
}
uint32_t gid_ipv4(const uint8_t gid[16]) {
    return static_cast<uint32_t>(gid[12]) << 24 | static_cast<uint32_t>(gid[13]) << 16 |
           static_cast<uint32_t>(gid[14]) << 8 | gid[15];
}

CmQpParams to_public(const cm::QpParams &q) {
    CmQpParams o;
    o.local_qpn = q.local_qpn;
    o.remote_qpn = q.remote_qpn;
    o.sq_psn = q.sq_psn;
    o.rq_psn = q.rq_psn;
    o.path_mtu = q.path_mtu;
    o.timeout = q.local_ack_timeout;
    o.retry_cnt = q.retry_count;
    o.rnr_retry = q.rnr_retry_count;
    o.max_rd_atomic = q.max_rd_atomic;
    o.max_dest_rd_atomic = q.max_dest_rd_atomic;
    std::memcpy(o.remote_gid, q.remote_gid, 16);
    o.traffic_class = q.traffic_class;
    o.hop_limit = q.hop_limit;
    std::memcpy(o.local_gid, q.local_gid, 16);
    return o;
}

/* rdma_cm's REQ private data: its 36-byte IP header, then the user's 56 bytes. */
constexpr size_t kUserReqPd = cm::kReqPrivLen - cm::kIpCmHdrLen;

} // namespace

const char *cm_event_kind_name(CmEventKind k) {
    return cm::cm_event_name(static_cast<cm::CmEventType>(k));
}
static_assert(static_cast<int>(CmEventKind::TimewaitExit) ==
              static_cast<int>(cm::CmEventType::TimewaitExit));
static_assert(static_cast<int>(CmEventKind::SidrUnreachable) ==
              static_cast<int>(cm::CmEventType::SidrUnreachable));
static_assert(kCmSidrReqPrivateData == cm::kSidrReqPrivLen - cm::kIpCmHdrLen &&
              kCmSidrRepPrivateData == cm::kSidrRepPrivLen);

struct CmChannel::Impl : cm::MadSink, cm::CmEventSink {
    CmChannelConfig cfg;
    CmQp1Transport &tr;
    CmQpHook *hook;
    std::vector<CmEventInfo> ring;
    size_t head = 0, count = 0;
    uint64_t ev_grown = 0, bad_ip_hdr = 0;
    uint64_t now = 0; /* of the call in progress, for answers given from callbacks */
    uint16_t next_port;
    cm::CmManager cm; /* last: it holds references to the sinks above */

    static cm::CmConfig cm_config(const CmChannelConfig &c) {
        cm::CmConfig o;
        o.max_conns = c.max_conns;
        o.local_ca_guid = c.ca_guid;
        ipv4_gid(c.local_ipv4, o.local_gid);
        o.cm_response_timeout = c.cm_response_timeout;
        o.max_cm_retries = c.max_cm_retries;
        o.packet_life_time = c.packet_life_time;
        o.stateless_per_sec = c.stateless_per_sec;
        o.stateless_burst = c.stateless_burst;
        o.comm_id_seed = static_cast<uint32_t>(c.ca_guid ^ (c.ca_guid >> 32));
        return o;
    }

    Impl(const CmChannelConfig &c, CmQp1Transport &t, CmQpHook *h)
        : cfg(c), tr(t), hook(h), ring(std::max<uint32_t>(c.max_events, 1)),
          next_port(static_cast<uint16_t>(0xC000 | (c.ca_guid & 0x3FFF))),
          cm(cm_config(c), *this, *this) {}

    uint32_t connect(const uint8_t dst[16], uint16_t dst_port, const CmConnectParam &p, uint64_t t);

    bool send_mad(const cm::MadAddr &to, const uint8_t *mad, size_t len) override {
        return tr.send_mad(to.gid, mad, len);
    }

    CmEventInfo *push() {
        if (count == ring.size()) {
            /* Never drop an event: a lost Disconnected or TimewaitExit leaks the
             * application's connection. Control path: the queue doubles. */
            std::vector<CmEventInfo> bigger(ring.size() * 2);
            for (size_t i = 0; i < count; ++i)
                bigger[i] = ring[(head + i) % ring.size()];
            ring.swap(bigger);
            head = 0;
            ++ev_grown;
        }
        CmEventInfo *e = &ring[(head + count++) % ring.size()];
        *e = CmEventInfo{};
        return e;
    }

    void on_cm_event(const cm::CmEvent &ev) override {
        const uint8_t *pd = ev.private_data;
        size_t pd_len = ev.private_data_len;
        uint8_t peer_gid[16];
        std::memcpy(peer_gid, ev.peer.gid, 16);
        uint16_t peer_port = 0;
        const bool sidr_req = ev.type == cm::CmEventType::SidrRequest;
        if (ev.type == cm::CmEventType::ConnectRequest || sidr_req) {
            cm::IpCmHdr ih;
            if (cm::parse_ip_cm_hdr(pd, pd_len, ih) != cm::IpCmError::Ok) {
                /* Not rdma_cm's IP header: rdma_cm's answer, a consumer REJ (a SIDR_REP
                 * "rejected"). */
                ++bad_ip_hdr;
                if (sidr_req)
                    cm.sidr_reject(ev.conn, cm::SidrStatus::Reject, nullptr, 0, now);
                else
                    cm.reject(ev.conn, nullptr, 0, now);
                return;
            }
            /* The peer's address as its header gives it (rdma_cm's new id takes it from
             * there, not from the path). */
            if (ih.ip_version == 6)
                std::memcpy(peer_gid, ih.src_addr, 16);
            else
                ipv4_gid(ih.src_ipv4(), peer_gid);
            peer_port = ih.src_port;
            pd += cm::kIpCmHdrLen;
            pd_len = sidr_req ? kCmSidrReqPrivateData : kUserReqPd;
        } else if (ev.type == cm::CmEventType::Established && ev.active && hook) {
            /* Before the RTU leaves: the passive side may send as soon as it has it. */
            hook->ready_qp(ev.conn, to_public(ev.qp));
        }
        if (ev.type == cm::CmEventType::Established && !ev.active)
            pd_len = 0; /* an RTU's private data is not rdma_cm's to deliver */
        CmEventInfo *e = push();
        e->kind = static_cast<CmEventKind>(ev.type);
        e->id = ev.conn;
        e->listen_port = static_cast<uint16_t>(ev.service_id);
        e->ipv6 = !is_ipv4_mapped(peer_gid);
        e->peer_ip = e->ipv6 ? 0 : gid_ipv4(peer_gid);
        std::memcpy(e->peer_gid, peer_gid, 16);
        e->peer_port = peer_port;
        e->reason = ev.rej_reason;
        e->user_ctx = ev.user_ctx;
        e->qp = to_public(ev.qp);
        e->qkey = ev.qkey;
        e->sidr_status = ev.sidr_status;
        if (pd) {
            e->private_data_len = static_cast<uint8_t>(std::min(pd_len, kCmMaxPrivateData));
            std::memcpy(e->private_data, pd, e->private_data_len);
        }
    }
};

CmChannel::CmChannel(const CmChannelConfig &cfg, CmQp1Transport &t, CmQpHook *hook)
    : impl_(std::make_unique<Impl>(cfg, t, hook)) {}
CmChannel::~CmChannel() = default;

bool CmChannel::listen(uint16_t port, uint64_t ctx) {
    return impl_->cm.listen(cm::ip_service_id(cm::kRdmaPsTcp, port), ctx);
}
bool CmChannel::unlisten(uint16_t port) {
    return impl_->cm.unlisten(cm::ip_service_id(cm::kRdmaPsTcp, port));
}

bool CmChannel::listen_ud(uint16_t port, uint64_t ctx) {
    return impl_->cm.listen(cm::ip_service_id(cm::kRdmaPsUdp, port), ctx);
}
bool CmChannel::unlisten_ud(uint16_t port) {
    return impl_->cm.unlisten(cm::ip_service_id(cm::kRdmaPsUdp, port));
}

uint32_t CmChannel::resolve_ud(uint32_t dst_ip, uint16_t dst_port, const CmSidrParam &p,
                               uint64_t now) {
    Impl &I = *impl_;
    if (p.private_data_len > kCmSidrReqPrivateData || (p.private_data_len && !p.private_data))
        return 0;
    I.now = now;
    const uint16_t sport = I.next_port;
    I.next_port = static_cast<uint16_t>(I.next_port == 0xFFFF ? 0xC000 : I.next_port + 1);
    /* As for a REQ: rdma_cm's IP header, then the user's bytes. */
    uint8_t pd[cm::kSidrReqPrivLen] = {};
    cm::encode(cm::make_ip_cm_hdr_v4(I.cfg.local_ipv4, sport, dst_ip), pd);
    if (p.private_data_len)
        std::memcpy(pd + cm::kIpCmHdrLen, p.private_data, p.private_data_len);
    cm::SidrParams s;
    s.service_id = cm::ip_service_id(cm::kRdmaPsUdp, dst_port);
    ipv4_gid(dst_ip, s.peer.gid);
    s.pkey = p.pkey;
    s.private_data = pd;
    s.private_data_len = sizeof pd;
    s.user_ctx = p.user_ctx;
    return I.cm.sidr_request(s, now);
}

bool CmChannel::sidr_accept(uint32_t id, uint32_t qpn, uint32_t qkey, const void *pd, uint8_t len,
                            uint64_t now) {
    if (len && !pd)
        return false;
    impl_->now = now;
    return impl_->cm.sidr_accept(id, qpn, qkey, static_cast<const uint8_t *>(pd), len, now);
}

bool CmChannel::sidr_reject(uint32_t id, const void *pd, uint8_t len, uint64_t now) {
    if (len && !pd)
        return false;
    impl_->now = now;
    return impl_->cm.sidr_reject(id, cm::SidrStatus::Reject, static_cast<const uint8_t *>(pd), len,
                                 now);
}

uint32_t CmChannel::connect(uint32_t dst_ip, uint16_t dst_port, const CmConnectParam &p,
                            uint64_t now) {
    uint8_t dst[16];
    ipv4_gid(dst_ip, dst);
    return impl_->connect(dst, dst_port, p, now);
}

uint32_t CmChannel::connect6(const uint8_t dst_ip6[16], uint16_t dst_port, const CmConnectParam &p,
                             uint64_t now) {
    static constexpr uint8_t kNone[16] = {};
    /* An IPv4-mapped destination is connect()'s; no IPv6 address of ours: nothing to
     * put in the header or the REQ's path. */
    if (!dst_ip6 || is_ipv4_mapped(dst_ip6) || std::memcmp(impl_->cfg.local_ipv6, kNone, 16) == 0)
        return 0;
    return impl_->connect(dst_ip6, dst_port, p, now);
}

uint32_t CmChannel::Impl::connect(const uint8_t dst[16], uint16_t dst_port, const CmConnectParam &p,
                                  uint64_t t) {
    if (p.private_data_len > kUserReqPd || (p.private_data_len && !p.private_data))
        return 0;
    now = t;
    /* rdma_cm's source port: an ephemeral one, only ever seen in the IP CM header. */
    const uint16_t sport = next_port;
    next_port = static_cast<uint16_t>(next_port == 0xFFFF ? 0xC000 : next_port + 1);
    const bool v4 = is_ipv4_mapped(dst);
    uint8_t pd[cm::kReqPrivLen] = {};
    cm::encode(v4 ? cm::make_ip_cm_hdr_v4(cfg.local_ipv4, sport, gid_ipv4(dst))
                  : cm::make_ip_cm_hdr_v6(cfg.local_ipv6, sport, dst),
               pd);
    if (p.private_data_len)
        std::memcpy(pd + cm::kIpCmHdrLen, p.private_data, p.private_data_len);
    cm::ConnectParams c;
    c.service_id = cm::ip_service_id(cm::kRdmaPsTcp, dst_port);
    std::memcpy(c.peer.gid, dst, 16);
    /* The REQ's path names our GID of the destination's IP version. */
    if (v4)
        ipv4_gid(cfg.local_ipv4, c.local_gid);
    else
        std::memcpy(c.local_gid, cfg.local_ipv6, 16);
    c.local_qpn = p.qpn;
    c.rq_psn = p.rq_psn;
    c.path_mtu = p.path_mtu;
    c.responder_resources = p.responder_resources;
    c.initiator_depth = p.initiator_depth;
    c.local_ack_timeout = p.timeout;
    c.retry_count = p.retry_count;
    c.rnr_retry_count = p.rnr_retry_count;
    c.private_data = pd;
    c.private_data_len = sizeof pd;
    c.user_ctx = p.user_ctx;
    return cm.connect(c, now);
}

bool CmChannel::accept(uint32_t id, const CmAcceptParam &p, uint64_t now) {
    Impl &I = *impl_;
    I.now = now;
    const cm::QpParams *q = I.cm.qp_params(id);
    const cm::ConnState st = I.cm.state(id);
    if (!q || (st != cm::ConnState::ReqRcvd && st != cm::ConnState::MraReqSent) ||
        (p.private_data_len && !p.private_data))
        return false;
    if (I.hook) {
        /* The QP must take the peer's first packet as soon as the REP is out: the same
         * clamping accept() applies, computed here so the hook sees the final values. */
        cm::QpParams f = *q;
        f.local_qpn = p.qpn & 0xFFFFFF;
        f.rq_psn = p.rq_psn & 0xFFFFFF;
        f.max_dest_rd_atomic = std::min(p.responder_resources, q->max_dest_rd_atomic);
        f.max_rd_atomic = std::min(p.initiator_depth, q->max_rd_atomic);
        I.hook->ready_qp(id, to_public(f));
    }
    cm::AcceptParams a;
    a.local_qpn = p.qpn;
    a.rq_psn = p.rq_psn;
    a.responder_resources = p.responder_resources;
    a.initiator_depth = p.initiator_depth;
    a.rnr_retry_count = p.rnr_retry_count;
    a.private_data = static_cast<const uint8_t *>(p.private_data);
    a.private_data_len = p.private_data_len;
    a.user_ctx = p.user_ctx;
    return I.cm.accept(id, a, now);
}

bool CmChannel::reject(uint32_t id, const void *pd, uint8_t len, uint64_t now) {
    impl_->now = now;
    return impl_->cm.reject(id, static_cast<const uint8_t *>(pd), len, now);
}

bool CmChannel::disconnect(uint32_t id, uint64_t now) {
    impl_->now = now;
    return impl_->cm.disconnect(id, nullptr, 0, now);
}

bool CmChannel::notify_comm_est(uint32_t id, uint64_t now) {
    impl_->now = now;
    return impl_->cm.notify_comm_est(id, now);
}

bool CmChannel::poll_event(CmEventInfo &out) {
    Impl &I = *impl_;
    if (!I.count)
        return false;
    out = I.ring[I.head];
    I.head = (I.head + 1) % I.ring.size();
    --I.count;
    return true;
}

void CmChannel::on_mad(const uint8_t src_gid[16], const uint8_t *mad, size_t len, uint64_t now) {
    cm::MadAddr from;
    std::memcpy(from.gid, src_gid, 16);
    impl_->now = now;
    impl_->cm.on_mad(from, mad, len, now);
}

void CmChannel::on_time(uint64_t now) {
    impl_->now = now;
    impl_->cm.on_time(now);
}

uint64_t CmChannel::next_deadline() const { return impl_->cm.next_deadline(); }

bool CmChannel::counter(size_t i, const char *&name, uint64_t &value) const {
    const Impl &I = *impl_;
    if (i < cm::kCmCtrCount) {
        name = cm::cm_ctr_name(static_cast<cm::CmCtr>(i));
        value = I.cm.counters().v[i];
        return true;
    }
    switch (i - cm::kCmCtrCount) {
    case 0:
        name = "ch_event_queue_grown";
        value = I.ev_grown;
        return true;
    case 1:
        name = "ch_bad_ip_cm_hdr";
        value = I.bad_ip_hdr;
        return true;
    default:
        return false;
    }
}

} // namespace droce
