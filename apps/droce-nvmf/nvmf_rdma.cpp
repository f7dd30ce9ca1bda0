/* SPDX-License-Identifier: BSD-3-Clause */
/* RDMA glue of the NVMe-oF target (see nvmf_rdma.h). A connection's life:
 *   CM REQ -> Target::accept (REP or REJ private data) -> CQ, QP (INIT, no remote rights),
 *   MRs, receives posted -> CmDevice::accept (RTR/RTS, REP) -> Established (or the first
 *   receive: COMM_EST) -> capsules -> Disconnected / error completion -> the queue stops ->
 *   once the core has no request left in a backend, everything is freed.
 * Nothing on the I/O path allocates, blocks or makes a system call: buffers are made at
 * accept, the WRs are built on the stack. */
#include "nvmf_rdma.h"

#include <algorithm>
#include <cstring>

#include "app_engine.h"

namespace droce::nvmf {

namespace {
/* wr_id: kind in the high 32 bits, the request tag or receive index in the low. */
enum WrKind : uint64_t { kWrRecv = 1, kWrRead = 2, kWrWrite = 3, kWrSend = 4 };
constexpr uint64_t wr_id(WrKind k, uint32_t i) { return (uint64_t{k} << 32) | i; }
constexpr uint32_t kCqeBytes = 16;
} // namespace

struct RdmaTransport::Conn final : TransportActions {
    Conn(RdmaTransport &t, uint32_t id) : t(t), id(id) {}
    ~Conn() override {
        /* The QP before the MRs and the CQ it uses (verbs' order). */
        qp.reset();
        data_mr.reset();
        recv_mr.reset();
        send_mr.reset();
        cq.reset();
    }

    bool rdma_read(uint16_t tag, void *local, uint32_t len, uint64_t raddr,
                   uint32_t rkey) override {
        if (!flush_write())
            return false;
        SendWr w;
        w.wr_id = wr_id(kWrRead, tag);
        w.opcode = WrOpcode::RdmaRead;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(local), len, data_mr->lkey()};
        w.num_sge = 1;
        w.remote_addr = raddr;
        w.rkey = rkey;
        return post(w);
    }
    bool rdma_write(uint16_t tag, const void *local, uint32_t len, uint64_t raddr,
                    uint32_t rkey) override {
        SendWr w;
        w.wr_id = wr_id(kWrWrite, tag);
        w.opcode = WrOpcode::RdmaWrite; /* unsignaled: the SEND behind it completes after it */
        w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(local), len, data_mr->lkey()};
        w.num_sge = 1;
        w.remote_addr = raddr;
        w.rkey = rkey;
        /* Held until the response SEND the core posts right behind it: the two go to the
         * QP as one chain (one post, one scheduling of the QP). */
        if (!flush_write())
            return false;
        pending_write = w;
        has_pending_write = true;
        return true;
    }
    bool send(uint16_t tag, const uint8_t *cqe, bool invalidate, uint32_t rkey) override {
        /* The core's CQE is on its stack: copy it into this tag's registered slot. */
        uint8_t *slot = cqe_buf.data() + size_t{tag} * kCqeBytes;
        std::memcpy(slot, cqe, kCqeBytes);
        SendWr w;
        w.wr_id = wr_id(kWrSend, tag);
        w.opcode = invalidate ? WrOpcode::SendWithInv : WrOpcode::Send;
        w.invalidate_rkey = invalidate ? rkey : 0;
        w.send_flags = kSendSignaled;
        w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(slot), kCqeBytes, send_mr->lkey()};
        w.num_sge = 1;
        if (!has_pending_write)
            return post(w);
        /* A read's data and its response in one call (QueuePair's chained post). */
        has_pending_write = false;
        if (q_dead || !qp)
            return false;
        const SendWr chain[2] = {pending_write, w};
        if (!qp->post_send(chain, 2)) {
            ++t.cnt_.post_failures;
            return false;
        }
        return true;
    }
    /* A held WRITE that no SEND followed (not the core's pattern): posted alone. */
    bool flush_write() {
        if (!has_pending_write)
            return true;
        has_pending_write = false;
        return post(pending_write);
    }
    void disconnect() override {
        if (disc_asked || cm_done)
            return;
        disc_asked = true;
        ++t.cnt_.disconnects_asked;
        t.cm_.disconnect(id);
    }

    bool post(const SendWr &w) {
        if (q_dead || !qp)
            return false;
        if (!qp->post_send(w)) {
            ++t.cnt_.post_failures;
            return false;
        }
        return true;
    }
    bool post_recv(uint32_t i) {
        RecvWr r;
        r.wr_id = wr_id(kWrRecv, i);
        r.sg_list[0] = Sge{reinterpret_cast<uint64_t>(recv_buf.data() + size_t{i} * recv_bytes),
                           recv_bytes, recv_mr->lkey()};
        r.num_sge = 1;
        return static_cast<bool>(qp->post_recv(r));
    }

    RdmaTransport &t;
    uint32_t id;
    Queue *q = nullptr;
    bool established = false;
    bool q_dead = false;  /* the core's queue was told the connection is gone */
    SendWr pending_write; /* rdma_write's WR, posted with the response SEND behind it */
    bool has_pending_write = false;
    bool cm_done = false; /* the CM reported Disconnected / ConnectError (or never accepted) */
    bool disc_asked = false;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<QueuePair> qp;
    std::unique_ptr<MemoryRegion> data_mr, recv_mr, send_mr;
    std::vector<uint8_t> recv_buf, cqe_buf;
    uint32_t recv_bytes = 0, nrecv = 0;
};

RdmaTransport::RdmaTransport(Device &dev, CmDevice &cm, Target &target, const RdmaOptions &opt)
    : dev_(dev), cm_(cm), target_(target), opt_(opt) {}

RdmaTransport::~RdmaTransport() {
    for (auto &c : conns_) {
        if (c->q) {
            target_.destroy_queue(c->q);
            c->q = nullptr;
        }
        cm_.release(c->id);
    }
    conns_.clear();
}

bool RdmaTransport::start(std::string &err) {
    auto pd = dev_.alloc_pd();
    if (!pd) {
        err = "alloc_pd: " + pd.status().message();
        return false;
    }
    pd_ = std::move(*pd);
    if (!cm_.channel().listen(opt_.port)) {
        err = "CM listen on port " + std::to_string(opt_.port) + " failed";
        return false;
    }
    return true;
}

std::vector<uint32_t> RdmaTransport::connection_ids() const {
    std::vector<uint32_t> v;
    for (const auto &c : conns_)
        v.push_back(c->id);
    return v;
}

RdmaTransport::Conn *RdmaTransport::find(uint32_t id) {
    for (auto &c : conns_)
        if (c->id == id)
            return c.get();
    return nullptr;
}

void RdmaTransport::on_connect_request(const CmEventInfo &ev) {
    ++cnt_.connect_requests;
    auto c = std::make_unique<Conn>(*this, ev.id);
    AcceptResult res = target_.accept(ev.private_data, ev.private_data_len, *c);
    const uint64_t now = cm_.now_ns();
    if (!res.queue) { /* the NVMe-oF REJ status (queue id, sizes, record format) */
        ++cnt_.rejected;
        cm_.channel().reject(ev.id, res.priv, static_cast<uint8_t>(res.priv_len), now);
        return;
    }
    Queue &q = *res.queue;
    c->q = &q;
    const uint32_t depth = q.depth();
    c->recv_bytes = q.recv_bytes();
    c->nrecv = depth; /* the host never has more than hsqsize + 1 commands outstanding */
    c->recv_buf.assign(size_t{c->nrecv} * c->recv_bytes, 0);
    c->cqe_buf.assign(size_t{depth} * kCqeBytes, 0);
    bool ok = false;
    do {
        /* Per slot: READ, WRITE and SEND at most (see nvmf.h's ordering contract). */
        const uint32_t sq = 3 * depth;
        auto cq = dev_.create_cq(sq + c->nrecv + 8);
        if (!cq)
            break;
        c->cq = std::move(*cq);
        QpInitAttr qa;
        qa.send_cq = qa.recv_cq = c->cq.get();
        qa.cap.max_send_wr = sq;
        qa.cap.max_recv_wr = c->nrecv;
        qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
        auto qp = pd_->create_qp(qa);
        if (!qp)
            break;
        c->qp = std::move(*qp);
        /* Local write only: READ responses land in the data buffers, SENDs in the receive
         * buffers; the host gets no rkey of ours and no remote right on the QP. */
        auto m1 = pd_->reg_mr(q.buffer_base(), q.buffer_bytes(), kAccessLocalWrite);
        auto m2 = pd_->reg_mr(c->recv_buf.data(), c->recv_buf.size(), kAccessLocalWrite);
        auto m3 = pd_->reg_mr(c->cqe_buf.data(), c->cqe_buf.size(), kAccessLocalWrite);
        if (!m1 || !m2 || !m3)
            break;
        c->data_mr = std::move(*m1);
        c->recv_mr = std::move(*m2);
        c->send_mr = std::move(*m3);
        QpAttr a;
        a.qp_state = QpState::Init;
        a.pkey_index = 0;
        a.port_num = 1;
        a.qp_access_flags = 0;
        if (!c->qp->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags))
            break;
        uint32_t i = 0;
        while (i < c->nrecv && c->post_recv(i))
            ++i;
        ok = i == c->nrecv;
    } while (false);
    if (!ok) {
        ++cnt_.setup_failures;
        ++cnt_.rejected;
        target_.destroy_queue(&q);
        CmRejPriv rej;
        rej.status = CmRejStatus::NoResources;
        uint8_t p[kCmRejPrivLen];
        const size_t n = encode_cm_rej_priv(rej, p, sizeof p);
        cm_.channel().reject(ev.id, p, static_cast<uint8_t>(n), now);
        return;
    }
    CmAcceptParam ap;
    ap.rq_psn = app::random_psn();
    ap.responder_resources = 0; /* the host never READs from us */
    ap.initiator_depth = opt_.initiator_depth;
    ap.rnr_retry_count = 7;
    ap.private_data = res.priv;
    ap.private_data_len = static_cast<uint8_t>(res.priv_len);
    Conn &cr = *c;
    conns_.push_back(std::move(c));
    if (!cm_.accept(ev.id, *cr.qp, ap)) {
        /* Either the channel refused (no event will follow) or the QP could not be
         * readied (CmDevice disconnects it): stop the queue now, free it in reap(). */
        ++cnt_.accept_failures;
        teardown(cr);
        cr.cm_done = true;
        cm_.disconnect(ev.id);
        return;
    }
    ++cnt_.accepted;
}

void RdmaTransport::teardown(Conn &c) {
    if (c.q_dead)
        return;
    c.q_dead = true;
    if (c.q)
        c.q->on_disconnect();
}

int RdmaTransport::poll() {
    int work = cm_.poll();
    CmEventInfo ev;
    while (cm_.channel().poll_event(ev)) {
        ++work;
        Conn *c = ev.kind == CmEventKind::ConnectRequest ? nullptr : find(ev.id);
        switch (ev.kind) {
        case CmEventKind::ConnectRequest:
            on_connect_request(ev);
            break;
        case CmEventKind::Established:
            if (c && !c->established) {
                c->established = true;
                ++cnt_.established;
            }
            break;
        case CmEventKind::Disconnected:
        case CmEventKind::ConnectError:
        case CmEventKind::Rejected:
        case CmEventKind::Unreachable:
        case CmEventKind::TimewaitExit:
            /* Every way a connection ends: the queue stops now (the CM answered a DREQ
             * itself) and reap() frees it, its QP and MRs once drained. Rejected: the
             * host rejected our REP (issue 33: such a connection was never freed);
             * Unreachable is an active side's; TimewaitExit is the last word on an id,
             * so nothing outlives it whatever came before. */
            if (!c)
                break;
            if (ev.kind == CmEventKind::Rejected)
                ++cnt_.rejected_by_peer;
            else if (ev.kind != CmEventKind::TimewaitExit)
                ++cnt_.disconnected;
            teardown(*c);
            c->cm_done = true;
            break;
        default:
            break;
        }
    }
    const uint64_t now = cm_.now_ns();
    for (auto &c : conns_)
        work += poll_conn(*c, now);
    target_.poll(now);
    AsyncEvent ae;
    while (dev_.get_async_event(ae)) {
        ++work;
        if (ae.qp_num == 0)
            continue;
        for (auto &c : conns_)
            if (c->qp && c->qp->qp_num() == ae.qp_num) {
                teardown(*c);
                c->disconnect();
            }
    }
    reap();
    return work;
}

int RdmaTransport::poll_conn(Conn &c, uint64_t now) {
    if (!c.cq)
        return 0;
    Wc wc[32];
    const int n = c.cq->poll(wc, 32);
    for (int i = 0; i < n; ++i)
        on_wc(c, wc[i], now);
    return n;
}

void RdmaTransport::on_wc(Conn &c, const Wc &wc, uint64_t now) {
    const auto kind = static_cast<WrKind>(wc.wr_id >> 32);
    const uint32_t idx = static_cast<uint32_t>(wc.wr_id);
    if (wc.status != WcStatus::Success) {
        if (wc.status == WcStatus::WrFlushErr) {
            ++cnt_.wc_flushed;
            return;
        }
        /* A remote access error on READ/WRITE (a bad key or range from the host), a
         * retry exhausted...: the QP is in ERR, nothing more can be answered on it. The
         * host sees the connection drop and recovers (reconnect), as with nvmet. */
        ++cnt_.wc_errors;
        if (kind == kWrRead)
            ++cnt_.read_errors;
        teardown(c); /* frees the slots: no response goes out on a QP in ERR */
        c.disconnect();
        return;
    }
    if (c.q_dead)
        return;
    switch (kind) {
    case kWrRecv: {
        if (idx >= c.nrecv) {
            ++cnt_.wc_unexpected;
            return;
        }
        if (!c.established) {
            /* The host sent before its RTU reached us: it is connected (COMM_EST). */
            c.established = true;
            ++cnt_.established;
            cm_.channel().notify_comm_est(c.id, now);
        }
        const uint8_t *buf = c.recv_buf.data() + size_t{idx} * c.recv_bytes;
        const CapsuleResult r = c.q->on_capsule(buf, wc.byte_len, now);
        if (r != CapsuleResult::Accepted)
            ++cnt_.capsules_dropped;
        /* on_capsule copied the bytes out: the buffer goes back at once. */
        if (!c.q_dead && !c.post_recv(idx)) {
            ++cnt_.recv_repost_failures;
            teardown(c);
            c.disconnect();
        }
        break;
    }
    case kWrRead:
        c.q->on_read_done(static_cast<uint16_t>(idx), true, now);
        break;
    case kWrSend:
        c.q->on_send_done(static_cast<uint16_t>(idx));
        break;
    default:
        ++cnt_.wc_unexpected;
        break;
    }
}

void RdmaTransport::reap() {
    for (size_t i = 0; i < conns_.size();) {
        Conn &c = *conns_[i];
        if (!(c.cm_done && c.q_dead && (!c.q || c.q->drained()))) {
            ++i;
            continue;
        }
        if (c.q)
            target_.destroy_queue(c.q);
        c.q = nullptr;
        cm_.release(c.id);
        ++cnt_.queues_freed;
        conns_.erase(conns_.begin() + static_cast<std::ptrdiff_t>(i));
    }
}

void RdmaTransport::disconnect_all() {
    for (auto &c : conns_) {
        teardown(*c);
        c->disconnect();
    }
}

} // namespace droce::nvmf
