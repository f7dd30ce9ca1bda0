/* SPDX-License-Identifier: BSD-3-Clause */
/* QP1 for a CM layer: see engine_gsi.h. */
#include "engine_gsi.h"

#include <cstring>
#include <string>

#include <rte_errno.h>
#include <rte_ring.h>
#include <spdlog/spdlog.h>

#include "engine_ud.h"

namespace droce::engine {

namespace {
std::unique_ptr<CqCtx> make_cq(Runtime &rt, uint32_t worker, uint32_t n) {
    auto c = std::make_unique<CqCtx>();
    c->worker = worker;
    const std::string name = rt.unique_name("gsi_c");
    c->ring =
        ring_alloc(name.c_str(), sizeof(Wc), n, RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
    if (c->ring == nullptr)
        return nullptr;
    return c;
}
} // namespace

Result<std::unique_ptr<Gsi>> Gsi::open(Runtime &rt, Dev &dev, uint32_t slots) {
    if (slots == 0 || slots > 4096)
        return Status(EINVAL, "GSI: slots must be 1..4096");
    if (dev.active_mtu() < kMadLen)
        return Status(EINVAL, "GSI: the port's MTU cannot carry a 256-byte MAD");
    std::unique_ptr<Gsi> g(new Gsi(rt, dev));
    const uint32_t w = dev.owner(1);
    g->nrecv_ = slots;
    g->nsend_ = slots;
    g->scq_ = make_cq(rt, w, 2 * slots);
    g->rcq_ = make_cq(rt, w, 2 * slots);
    if (!g->scq_ || !g->rcq_)
        return Status(ENOMEM, std::string("GSI: CQ rings: ") + rte_strerror(rte_errno));
    g->buf_.assign(
        static_cast<size_t>(g->nrecv_) * kSlot + static_cast<size_t>(g->nsend_) * kMadLen, 0);
    Result<mem::MemoryRegion> mr = Status(EINVAL, "");
    rt.exec_all(
        [&] { mr = dev.reg_mr(kGsiPd, g->buf_.data(), g->buf_.size(), kAccessLocalWrite); });
    if (!mr)
        return Status(mr.status().code(), "GSI: buffers: " + mr.status().message());
    g->lkey_ = mr->key;
    g->mr_ = true;

    QpInitAttr ia;
    ia.qp_type = QpType::Ud;
    ia.cap.max_send_wr = slots;
    ia.cap.max_recv_wr = slots;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    ia.cap.max_inline_data = kMadLen;
    ia.sq_sig_all = true; /* every send completes: that frees its slot */
    Result<uint32_t> qpn = Status(EINVAL, "");
    Status s;
    rt.exec_on(w, [&] {
        qpn =
            dev.create_ud_qp(kGsiPd, ia, g->scq_.get(), g->rcq_.get(), nullptr, nullptr, &g->q_, 1);
        if (!qpn)
            return;
        QpAttr a;
        a.qp_state = QpState::Init;
        a.pkey_index = 0; /* 0xffff, the default P_Key: CM MADs carry it */
        a.port_num = 1;
        a.qkey = ud::kGsiQkey;
        s = g->q_->ud->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey);
        a.qp_state = QpState::Rtr;
        if (s)
            s = g->q_->ud->modify(a, kQpState);
        a.qp_state = QpState::Rts;
        a.sq_psn = 0;
        if (s)
            s = g->q_->ud->modify(a, kQpState | kQpSqPsn);
    });
    if (!qpn)
        return qpn.status();
    if (!s)
        return Status(s.code(), "GSI: QP1 to RTS: " + s.message());
    for (uint32_t i = 0; i < g->nrecv_; ++i)
        if (Status p = g->post_recv_slot(i); !p)
            return p;
    return g;
}

Gsi::~Gsi() {
    if (q_ != nullptr)
        rt_.exec_on(dev_.owner(1), [&] { dev_.destroy_qp(1); });
    if (mr_) {
        uint32_t out = 0;
        rt_.exec_all([&] { (void)dev_.dereg_mr(lkey_, &out); });
    }
}

Status Gsi::post_recv_slot(uint32_t slot) {
    RecvWr wr;
    wr.wr_id = slot;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(buf_.data() + static_cast<size_t>(slot) * kSlot),
                     kSlot, lkey_};
    Status s;
    rt_.exec_on(q_->worker, [&] {
        s = q_->ud->post_recv(wr);
        dev_.touch(*q_);
    });
    return s;
}

void Gsi::reap_sends() {
    Wc wc[32];
    int n;
    while ((n = scq_->poll(wc, 32)) > 0)
        for (int i = 0; i < n; ++i) {
            --send_out_;
            if (wc[i].status != WcStatus::Success)
                ++send_errors_;
        }
}

Status Gsi::send(const AhAttr &to, uint32_t remote_qpn, const uint8_t *mad, uint32_t len) {
    if (len == 0 || len > kMadLen)
        return Status(EINVAL, "GSI send: a MAD is 1.." + std::to_string(kMadLen) + " bytes");
    reap_sends();
    if (send_out_ >= nsend_)
        return Status(EAGAIN, "GSI send: every send slot is in flight");
    Result<ud::AddressHandle> ah = resolve_ah(rt_, dev_, to);
    if (!ah)
        return ah.status();
    uint8_t *slot = buf_.data() + static_cast<size_t>(nrecv_) * kSlot +
                    static_cast<size_t>(send_next_) * kMadLen;
    std::memcpy(slot, mad, len);
    ud::UdSendWr u;
    u.wr.wr_id = send_next_;
    u.wr.opcode = WrOpcode::Send;
    /* Inline: the slot is the QP's until its completion, and never attached zero-copy. */
    u.wr.send_flags = kSendSignaled | kSendInline;
    u.wr.num_sge = 1;
    u.wr.sg_list[0] = {reinterpret_cast<uint64_t>(slot), len, 0};
    u.ah = &*ah;
    u.remote_qpn = remote_qpn;
    u.remote_qkey = ud::kGsiQkey;
    Status s;
    rt_.exec_on(q_->worker, [&] {
        s = q_->ud->post_send(u);
        dev_.touch(*q_);
    });
    if (!s)
        return s;
    ++send_out_;
    send_next_ = (send_next_ + 1) % nsend_;
    return {};
}

int Gsi::poll(MadIn *out, int max) {
    reap_sends();
    Wc wc[32];
    int got = 0;
    while (got < max) {
        const int want = max - got < 32 ? max - got : 32;
        const int n = rcq_->poll(wc, want);
        if (n <= 0)
            break;
        for (int i = 0; i < n; ++i) {
            const auto slot = static_cast<uint32_t>(wc[i].wr_id);
            const uint8_t *b = buf_.data() + static_cast<size_t>(slot) * kSlot;
            if (wc[i].status == WcStatus::Success) {
                MadIn &m = out[got++];
                m.len = wc[i].byte_len - ud::kGrhLen;
                std::memcpy(m.data, b + ud::kGrhLen, m.len);
                m.src_qp = wc[i].src_qp;
                /* The GRH as verbs gives it: IPv6 header, or 20 bytes then the IPv4
                 * header (its source at offset 12). */
                if ((b[0] >> 4) == 6) {
                    std::memcpy(m.src_gid.raw, b + 8, 16);
                    m.traffic_class = static_cast<uint8_t>((b[0] << 4) | (b[1] >> 4));
                    m.hop_limit = b[7];
                } else {
                    const uint8_t *ip = b + 20;
                    std::memset(m.src_gid.raw, 0, 16);
                    m.src_gid.raw[10] = m.src_gid.raw[11] = 0xFF;
                    std::memcpy(m.src_gid.raw + 12, ip + 12, 4);
                    m.traffic_class = ip[1];
                    m.hop_limit = ip[8];
                }
            }
            /* A flushed or failed receive is not re-posted (QP1 is then in ERR: only a
             * local fault does that; a datagram that does not fit a slot is dropped by
             * lib/ud with the slot still posted). */
            if (wc[i].status == WcStatus::Success)
                (void)post_recv_slot(slot);
        }
    }
    return got;
}

} // namespace droce::engine
