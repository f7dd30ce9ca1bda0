/* SPDX-License-Identifier: BSD-3-Clause */
/* The work request API of extended QPs (ibv_create_qp_ex with
 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, ibv_qp_to_qp_ex, ibv_wr_*): the builders and setters
 * verbs.h's inlines call through struct ibv_qp_ex write droce SendWrs into the QP's
 * WrBatch, and ibv_wr_complete posts them to droce's QueuePair in one call. The send
 * operations a QP was created with get their builders; every other builder, and a setter
 * a QP type has no use for, records an error, so that ibv_wr_complete fails and posts
 * nothing (the man page's contract: the builders return nothing, ibv_wr_complete tells).
 * No lock, allocation or system call between ibv_wr_start and ibv_wr_complete: as with
 * ibv_post_send in this library, one thread at a time posts to a QP. */
#include <arpa/inet.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "verbs_objects.h"

namespace droce::verbs {
namespace {

/* The send operations droce has, per QP type (ibv_qp_create_send_ops_flags). */
constexpr uint64_t kRcSendOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                                IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                                IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                                IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV;
constexpr uint64_t kUdSendOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

/* wr_flags droce takes; IBV_SEND_INLINE is the setter's choice in this API (inline
 * setters copy, SGE setters do not), IBV_SEND_IP_CSUM is for raw packet QPs. */
constexpr unsigned kWrFlags =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

WrBatch &batch_of(ibv_qp_ex *x) { return outer_of<Qp>(&x->qp_base)->batch; }

void fail(WrBatch &b, int e) {
    if (b.error == 0)
        b.error = e;
}

/* A builder's new WR, from qp->wr_id and qp->wr_flags. A region fuller than the send
 * queue fails; the builder and its setters then write over the last entry, which
 * ibv_wr_complete never posts. */
SendWr &begin(ibv_qp_ex *x, WrOpcode op) {
    WrBatch &b = batch_of(x);
    if (b.n == b.capacity) {
        fail(b, ENOMEM);
        return b.wrs[b.capacity - 1];
    }
    SendWr &w = b.wrs[b.n++];
    w = SendWr{};
    w.wr_id = x->wr_id;
    if ((x->wr_flags & ~kWrFlags) != 0)
        fail(b, EINVAL);
    w.send_flags = x->wr_flags & ~static_cast<unsigned>(IBV_SEND_INLINE);
    w.opcode = op;
    return w;
}

/* The WR the last builder began, for a setter; nullptr (error recorded) before any. */
SendWr *last(WrBatch &b) {
    if (b.n == 0) {
        fail(b, EINVAL);
        return nullptr;
    }
    return &b.wrs[b.n - 1];
}

/* ---- builders ---- */
void wr_rdma_write(ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr) {
    SendWr &w = begin(x, WrOpcode::RdmaWrite);
    w.rkey = rkey;
    w.remote_addr = remote_addr;
}
void wr_rdma_write_imm(ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr, __be32 imm) {
    SendWr &w = begin(x, WrOpcode::RdmaWriteWithImm);
    w.rkey = rkey;
    w.remote_addr = remote_addr;
    w.imm_data = ntohl(imm);
}
void wr_rdma_read(ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr) {
    SendWr &w = begin(x, WrOpcode::RdmaRead);
    w.rkey = rkey;
    w.remote_addr = remote_addr;
}
void wr_send(ibv_qp_ex *x) { begin(x, WrOpcode::Send); }
void wr_send_imm(ibv_qp_ex *x, __be32 imm) {
    begin(x, WrOpcode::SendWithImm).imm_data = ntohl(imm);
}
void wr_send_inv(ibv_qp_ex *x, uint32_t invalidate_rkey) {
    begin(x, WrOpcode::SendWithInv).invalidate_rkey = invalidate_rkey;
}
void wr_atomic_cmp_swp(ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr, uint64_t compare,
                       uint64_t swap) {
    SendWr &w = begin(x, WrOpcode::AtomicCmpAndSwp);
    w.rkey = rkey;
    w.remote_addr = remote_addr;
    w.compare_add = compare;
    w.swap = swap;
}
void wr_atomic_fetch_add(ibv_qp_ex *x, uint32_t rkey, uint64_t remote_addr, uint64_t add) {
    SendWr &w = begin(x, WrOpcode::AtomicFetchAndAdd);
    w.rkey = rkey;
    w.remote_addr = remote_addr;
    w.compare_add = add;
}

/* ---- setters ---- */
void wr_set_sge(ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length) {
    if (SendWr *w = last(batch_of(x))) {
        w->sg_list[0] = Sge{addr, length, lkey};
        w->num_sge = 1;
    }
}
void wr_set_sge_list(ibv_qp_ex *x, size_t num_sge, const ibv_sge *sg_list) {
    WrBatch &b = batch_of(x);
    SendWr *w = last(b);
    if (w == nullptr)
        return;
    if (num_sge > b.max_send_sge || (num_sge > 0 && sg_list == nullptr)) {
        fail(b, EINVAL);
        return;
    }
    for (size_t i = 0; i < num_sge; ++i)
        w->sg_list[i] = Sge{sg_list[i].addr, sg_list[i].length, sg_list[i].lkey};
    w->num_sge = static_cast<int>(num_sge);
}

/* Inline data is copied now (the caller may reuse its buffer when the setter returns)
 * into the WR's own slot, which droce's kSendInline copies again at the post. */
void set_inline(ibv_qp_ex *x, size_t num_buf, const ibv_data_buf *bufs) {
    WrBatch &b = batch_of(x);
    SendWr *w = last(b);
    if (w == nullptr)
        return;
    if (w->opcode != WrOpcode::Send && w->opcode != WrOpcode::SendWithImm &&
        w->opcode != WrOpcode::SendWithInv && w->opcode != WrOpcode::RdmaWrite &&
        w->opcode != WrOpcode::RdmaWriteWithImm) {
        fail(b, EINVAL); /* inline data is for SENDs and RDMA WRITEs only */
        return;
    }
    uint8_t *slot = b.inline_data[w - b.wrs];
    size_t total = 0;
    for (size_t i = 0; i < num_buf; ++i) {
        if (bufs[i].length > kMaxInlineData - total) {
            fail(b, EINVAL);
            return;
        }
        std::memcpy(slot + total, bufs[i].addr, bufs[i].length);
        total += bufs[i].length;
    }
    w->sg_list[0] = Sge{reinterpret_cast<uintptr_t>(slot), static_cast<uint32_t>(total), 0};
    w->num_sge = 1;
    w->send_flags |= kSendInline;
}
void wr_set_inline_data(ibv_qp_ex *x, void *addr, size_t length) {
    const ibv_data_buf buf{addr, length};
    set_inline(x, 1, &buf);
}
void wr_set_inline_data_list(ibv_qp_ex *x, size_t num_buf, const ibv_data_buf *buf_list) {
    if (num_buf > 0 && buf_list == nullptr) {
        fail(batch_of(x), EINVAL);
        return;
    }
    set_inline(x, num_buf, buf_list);
}
void wr_set_ud_addr(ibv_qp_ex *x, ibv_ah *ah, uint32_t remote_qpn, uint32_t remote_qkey) {
    WrBatch &b = batch_of(x);
    SendWr *w = last(b);
    if (w == nullptr)
        return;
    if (ah == nullptr) {
        fail(b, EINVAL);
        return;
    }
    w->ah = outer_of<Ah>(ah)->dah;
    w->remote_qpn = remote_qpn;
    w->remote_qkey = remote_qkey;
}

/* ---- what a QP does not do: the region fails (EOPNOTSUPP: not asked for at create, or
 * not in droce; EINVAL: a setter of another QP type) ---- */
void refuse_rdma(ibv_qp_ex *x, uint32_t, uint64_t) { fail(batch_of(x), EOPNOTSUPP); }
void refuse_rdma_imm(ibv_qp_ex *x, uint32_t, uint64_t, __be32) { fail(batch_of(x), EOPNOTSUPP); }
void refuse_send(ibv_qp_ex *x) { fail(batch_of(x), EOPNOTSUPP); }
void refuse_send_imm(ibv_qp_ex *x, __be32) { fail(batch_of(x), EOPNOTSUPP); }
void refuse_rkey(ibv_qp_ex *x, uint32_t) { fail(batch_of(x), EOPNOTSUPP); }
void refuse_cmp_swp(ibv_qp_ex *x, uint32_t, uint64_t, uint64_t, uint64_t) {
    fail(batch_of(x), EOPNOTSUPP);
}
void refuse_fetch_add(ibv_qp_ex *x, uint32_t, uint64_t, uint64_t) { fail(batch_of(x), EOPNOTSUPP); }
void refuse_bind_mw(ibv_qp_ex *x, ibv_mw *, uint32_t, const ibv_mw_bind_info *) {
    fail(batch_of(x), EOPNOTSUPP);
}
void refuse_send_tso(ibv_qp_ex *x, void *, uint16_t, uint16_t) { fail(batch_of(x), EOPNOTSUPP); }
void refuse_atomic_write(ibv_qp_ex *x, uint32_t, uint64_t, const void *) {
    fail(batch_of(x), EOPNOTSUPP);
}
void refuse_ud_addr(ibv_qp_ex *x, ibv_ah *, uint32_t, uint32_t) { fail(batch_of(x), EINVAL); }
void refuse_xrc_srqn(ibv_qp_ex *x, uint32_t) { fail(batch_of(x), EINVAL); }

/* ---- the region ---- */
void wr_start(ibv_qp_ex *x) {
    WrBatch &b = batch_of(x);
    b.n = 0;
    b.error = 0;
}

void wr_abort(ibv_qp_ex *x) {
    WrBatch &b = batch_of(x);
    b.n = 0;
    b.error = 0;
}

/* What droce would refuse at the post, checked for the whole region first so that a bad
 * WR leaves every WR unposted: 0 or the errno. */
int check_region(const WrBatch &b, bool ud) {
    for (uint32_t i = 0; i < b.n; ++i) {
        const SendWr &w = b.wrs[i];
        if (static_cast<uint32_t>(w.num_sge) > b.max_send_sge)
            return EINVAL;
        if (ud && w.ah == nullptr)
            return EINVAL; /* a UD WR without ibv_wr_set_ud_addr */
        if (w.opcode == WrOpcode::AtomicCmpAndSwp || w.opcode == WrOpcode::AtomicFetchAndAdd) {
            if (w.num_sge != 1 || w.sg_list[0].length != 8 || (w.remote_addr & 7) != 0)
                return EINVAL; /* one 8-byte SGE, an aligned target */
        }
    }
    return 0;
}

/* Posts the region. Errors droce finds only at the post (the send queue full, the QP not
 * in RTS) stop it at the WR refused: the WRs before it are posted, as ibv_post_send's
 * bad_wr leaves them. */
int wr_complete(ibv_qp_ex *x) {
    Qp *q = outer_of<Qp>(&x->qp_base);
    WrBatch &b = q->batch;
    int e = b.error != 0 ? b.error : check_region(b, x->qp_base.qp_type == IBV_QPT_UD);
    if (e == 0 && b.n != 0) {
        const Status st = q->dqp->post_send(b.wrs, b.n, nullptr);
        e = st.is_ok() ? 0 : status_errno(st);
    }
    b.n = 0;
    b.error = 0;
    if (e != 0)
        errno = e;
    return e;
}

} // namespace

int enable_wr_api(Qp &q, uint64_t ops) {
    const bool ud = q.qp.qp_type == IBV_QPT_UD;
    WrBatch &b = q.batch;
    b.capacity = q.cap.max_send_wr > 0 ? q.cap.max_send_wr : 1;
    b.max_send_sge = q.cap.max_send_sge;
    b.wrs = static_cast<SendWr *>(std::calloc(b.capacity, sizeof(SendWr)));
    b.inline_data =
        static_cast<uint8_t(*)[kMaxInlineData]>(std::calloc(b.capacity, kMaxInlineData));
    if (b.wrs == nullptr || b.inline_data == nullptr) {
        std::free(b.wrs);
        std::free(b.inline_data);
        b.wrs = nullptr;
        b.inline_data = nullptr;
        return ENOMEM;
    }
    ibv_qp_ex &x = q.qpx;
    auto has = [ops](uint64_t op) { return (ops & op) != 0; };
    x.wr_rdma_write = has(IBV_QP_EX_WITH_RDMA_WRITE) ? wr_rdma_write : refuse_rdma;
    x.wr_rdma_write_imm =
        has(IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) ? wr_rdma_write_imm : refuse_rdma_imm;
    x.wr_rdma_read = has(IBV_QP_EX_WITH_RDMA_READ) ? wr_rdma_read : refuse_rdma;
    x.wr_send = has(IBV_QP_EX_WITH_SEND) ? wr_send : refuse_send;
    x.wr_send_imm = has(IBV_QP_EX_WITH_SEND_WITH_IMM) ? wr_send_imm : refuse_send_imm;
    x.wr_send_inv = has(IBV_QP_EX_WITH_SEND_WITH_INV) ? wr_send_inv : refuse_rkey;
    x.wr_atomic_cmp_swp =
        has(IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) ? wr_atomic_cmp_swp : refuse_cmp_swp;
    x.wr_atomic_fetch_add =
        has(IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) ? wr_atomic_fetch_add : refuse_fetch_add;
    x.wr_local_inv = refuse_rkey;
    x.wr_bind_mw = refuse_bind_mw;
    x.wr_send_tso = refuse_send_tso;
    x.wr_atomic_write = refuse_atomic_write;
    x.wr_set_ud_addr = ud ? wr_set_ud_addr : refuse_ud_addr;
    x.wr_set_xrc_srqn = refuse_xrc_srqn;
    x.wr_set_inline_data = wr_set_inline_data;
    x.wr_set_inline_data_list = wr_set_inline_data_list;
    x.wr_set_sge = wr_set_sge;
    x.wr_set_sge_list = wr_set_sge_list;
    x.wr_start = wr_start;
    x.wr_complete = wr_complete;
    x.wr_abort = wr_abort;
    return 0;
}

/* Init attributes beyond ibv_create_qp's that droce takes: the PD (required), the send
 * operations. Create flags, TSO, RSS, XRC and the rest are refused. */
ibv_qp *create_qp_ex(ibv_context *ctx, ibv_qp_init_attr_ex *attr) {
    constexpr uint32_t kKnownMask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    if (ctx == nullptr || attr == nullptr || (attr->comp_mask & IBV_QP_INIT_ATTR_PD) == 0 ||
        attr->pd == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    if ((attr->comp_mask & ~kKnownMask) != 0) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    /* ibv_qp_init_attr is ibv_qp_init_attr_ex's first members. */
    ibv_qp_init_attr base;
    std::memcpy(&base, attr, sizeof(base));
    const bool wr_api = (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) != 0;
    const uint64_t ops_droce_has = base.qp_type == IBV_QPT_UD ? kUdSendOps : kRcSendOps;
    if (wr_api && (attr->send_ops_flags & ~ops_droce_has) != 0) {
        errno = EOPNOTSUPP; /* an operation droce does not have (or not on this QP type) */
        return nullptr;
    }
    Qp *q = new_qp(attr->pd, base);
    if (q == nullptr)
        return nullptr;
    attr->cap = base.cap;
    if (wr_api) {
        if (int e = enable_wr_api(*q, attr->send_ops_flags); e != 0) {
            ibv_destroy_qp(&q->qp);
            errno = e;
            return nullptr;
        }
    }
    return &q->qp;
}

} // namespace droce::verbs

extern "C" ibv_qp_ex *ibv_qp_to_qp_ex(ibv_qp *qp) {
    if (qp == nullptr || droce::verbs::outer_of<droce::verbs::Qp>(qp)->batch.wrs == nullptr) {
        errno = EINVAL; /* not made by ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
        return nullptr;
    }
    return &droce::verbs::outer_of<droce::verbs::Qp>(qp)->qpx;
}
