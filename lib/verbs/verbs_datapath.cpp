/* SPDX-License-Identifier: BSD-3-Clause */
/* The fast path: ibv_post_send, ibv_post_recv and ibv_poll_cq arrive here through
 * context->ops (verbs.h's inlines call them directly) and go straight to the QP's and
 * CQ's droce calls: a work request is translated on the stack into droce's (its SGEs name
 * the application's buffers: no payload is copied, except what IBV_SEND_INLINE asks), and
 * completions are translated from droce's into the caller's array. No lock, allocation or
 * system call here; droce's own post and poll take none either. */
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

#include "verbs_objects.h"

namespace droce::verbs {
namespace {

/* Flags droce has (ibv_send_flags' first four, same values); IBV_SEND_IP_CSUM is for raw
 * packet QPs only. */
constexpr unsigned kDroceSendFlags =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;

bool is_droce_opcode(ibv_wr_opcode op) {
    switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_SEND_WITH_INV:
        return true;
    default:
        return false;
    }
}

bool copy_sges(const ibv_sge *in, int n, Sge *out) {
    if (n < 0 || n > kMaxSge || (n > 0 && in == nullptr))
        return false;
    for (int i = 0; i < n; ++i)
        out[i] = Sge{in[i].addr, in[i].length, in[i].lkey};
    return true;
}

/* One ibv_send_wr as droce's SendWr; 0 or the errno. */
int to_droce_send(const ibv_send_wr &w, SendWr &d) {
    if (!is_droce_opcode(w.opcode))
        return EINVAL;
    if ((w.send_flags & ~kDroceSendFlags) != 0)
        return EINVAL;
    if (!copy_sges(w.sg_list, w.num_sge, d.sg_list))
        return EINVAL;
    d.wr_id = w.wr_id;
    d.opcode = static_cast<WrOpcode>(w.opcode);
    d.send_flags = w.send_flags;
    d.num_sge = w.num_sge;
    if (w.opcode == IBV_WR_SEND_WITH_INV)
        d.invalidate_rkey = w.invalidate_rkey;
    else
        d.imm_data = ntohl(w.imm_data);
    if (w.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || w.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        d.remote_addr = w.wr.atomic.remote_addr;
        d.rkey = w.wr.atomic.rkey;
        d.compare_add = w.wr.atomic.compare_add;
        d.swap = w.wr.atomic.swap;
    } else {
        d.remote_addr = w.wr.rdma.remote_addr;
        d.rkey = w.wr.rdma.rkey;
    }
    return 0;
}

} // namespace

void to_verbs_wc(const Wc &d, ibv_wc &w) {
    w.wr_id = d.wr_id;
    w.status = static_cast<ibv_wc_status>(d.status);
    w.opcode = static_cast<ibv_wc_opcode>(d.opcode);
    w.vendor_err = d.vendor_err;
    w.byte_len = d.byte_len;
    if ((d.wc_flags & kWcWithInv) != 0)
        w.invalidated_rkey = d.invalidated_rkey;
    else
        w.imm_data = htonl(d.imm_data);
    w.qp_num = d.qp_num;
    w.src_qp = d.src_qp;
    w.wc_flags = d.wc_flags & kVerbsWcFlags;
    w.pkey_index = 0;
    w.slid = 0;
    w.sl = 0;
    w.dlid_path_bits = 0;
}

int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr) {
    QueuePair *dqp = outer_of<Qp>(qp)->dqp;
    for (; wr != nullptr; wr = wr->next) {
        SendWr d;
        int e = to_droce_send(*wr, d);
        if (e == 0 && qp->qp_type == IBV_QPT_UD) {
            if (wr->wr.ud.ah == nullptr) {
                e = EINVAL;
            } else {
                d.ah = outer_of<Ah>(wr->wr.ud.ah)->dah;
                d.remote_qpn = wr->wr.ud.remote_qpn;
                d.remote_qkey = wr->wr.ud.remote_qkey;
            }
        }
        if (e == 0) {
            const Status st = dqp->post_send(d);
            e = st.is_ok() ? 0 : status_errno(st);
        }
        if (e != 0) {
            *bad_wr = wr;
            return errno = e;
        }
    }
    return 0;
}

/* Receives to a QP's or an SRQ's queue (Target: QueuePair or SharedReceiveQueue). */
template <class Target> int post_recv_to(Target *t, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) {
    for (; wr != nullptr; wr = wr->next) {
        RecvWr d;
        d.wr_id = wr->wr_id;
        d.num_sge = wr->num_sge;
        int e = copy_sges(wr->sg_list, wr->num_sge, d.sg_list) ? 0 : EINVAL;
        if (e == 0) {
            const Status st = t->post_recv(d);
            e = st.is_ok() ? 0 : status_errno(st);
        }
        if (e != 0) {
            *bad_wr = wr;
            return errno = e;
        }
    }
    return 0;
}

int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) {
    return post_recv_to(outer_of<Qp>(qp)->dqp, wr, bad_wr);
}

int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad_wr) {
    return post_recv_to(outer_of<Srq>(srq)->dsrq, wr, bad_wr);
}

int poll_cq(ibv_cq *cq, int num_entries, ibv_wc *wc) {
    if (num_entries < 0)
        return -1;
    Cq *c = outer_of<Cq>(cq);
    int done = 0;
    /* Completions ibv_start_poll took and did not hand out come first. */
    while (c->held_pos < c->held_n && done < num_entries)
        to_verbs_wc(c->held[c->held_pos++], wc[done++]);
    CompletionQueue *dcq = c->dcq;
    Wc chunk[kPollChunk];
    while (done < num_entries) {
        const int want = num_entries - done < kPollChunk ? num_entries - done : kPollChunk;
        const int n = dcq->poll(chunk, want);
        for (int i = 0; i < n; ++i)
            to_verbs_wc(chunk[i], wc[done + i]);
        done += n;
        if (n < want)
            break;
    }
    return done;
}

} // namespace droce::verbs
