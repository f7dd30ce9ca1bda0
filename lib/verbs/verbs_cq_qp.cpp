/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion queues and queue pairs (control path): droce's CompletionQueue and
 * QueuePair, attributes translated field by field between verbs.h's structures and
 * droce's (whose enums carry the verbs values). */
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "verbs_objects.h"
#include "verbs_process.h"

using namespace droce;
using namespace droce::verbs;

namespace {

/* The attribute-mask bits droce's QueuePair::modify knows (QpAttrMask: the verbs bits
 * 0..20); alternate paths and path migration it refuses itself. */
constexpr int kDroceQpMask = (1 << 21) - 1;

} // namespace

bool droce::verbs::to_droce_ah(const ibv_ah_attr &in, AhAttr &out) {
    if (!in.is_global)
        return false; /* RoCE: every path is routed by its GRH */
    std::memcpy(out.dgid.raw, in.grh.dgid.raw, sizeof(out.dgid.raw));
    out.sgid_index = in.grh.sgid_index;
    out.hop_limit = in.grh.hop_limit;
    out.traffic_class = in.grh.traffic_class;
    out.flow_label = in.grh.flow_label;
    out.sl = in.sl;
    out.port_num = in.port_num;
    return true;
}

namespace {

void from_droce_ah(const AhAttr &in, ibv_ah_attr &out) {
    std::memset(&out, 0, sizeof(out));
    std::memcpy(out.grh.dgid.raw, in.dgid.raw, sizeof(in.dgid.raw));
    out.grh.sgid_index = in.sgid_index;
    out.grh.hop_limit = in.hop_limit;
    out.grh.traffic_class = in.traffic_class;
    out.grh.flow_label = in.flow_label;
    out.sl = in.sl;
    out.is_global = 1;
    out.port_num = in.port_num;
}

QpAttr to_droce_qp_attr(const ibv_qp_attr &a) {
    QpAttr d;
    d.qp_state = static_cast<QpState>(a.qp_state);
    d.cur_qp_state = static_cast<QpState>(a.cur_qp_state);
    d.path_mtu = static_cast<Mtu>(a.path_mtu);
    d.qkey = a.qkey;
    d.rq_psn = a.rq_psn;
    d.sq_psn = a.sq_psn;
    d.dest_qp_num = a.dest_qp_num;
    d.qp_access_flags = static_cast<uint32_t>(a.qp_access_flags);
    d.pkey_index = a.pkey_index;
    d.max_rd_atomic = a.max_rd_atomic;
    d.max_dest_rd_atomic = a.max_dest_rd_atomic;
    d.min_rnr_timer = a.min_rnr_timer;
    d.port_num = a.port_num;
    d.timeout = a.timeout;
    d.retry_cnt = a.retry_cnt;
    d.rnr_retry = a.rnr_retry;
    d.en_sqd_async_notify = a.en_sqd_async_notify;
    return d;
}

void from_droce_qp_attr(const QpAttr &d, ibv_qp_attr &a) {
    a.qp_state = static_cast<ibv_qp_state>(d.cur_qp_state);
    a.cur_qp_state = static_cast<ibv_qp_state>(d.cur_qp_state);
    a.path_mtu = static_cast<ibv_mtu>(d.path_mtu);
    a.qkey = d.qkey;
    a.rq_psn = d.rq_psn;
    a.sq_psn = d.sq_psn;
    a.dest_qp_num = d.dest_qp_num;
    a.qp_access_flags = static_cast<unsigned>(d.qp_access_flags);
    a.pkey_index = d.pkey_index;
    from_droce_ah(d.ah_attr, a.ah_attr);
    a.max_rd_atomic = d.max_rd_atomic;
    a.max_dest_rd_atomic = d.max_dest_rd_atomic;
    a.min_rnr_timer = d.min_rnr_timer;
    a.port_num = d.port_num;
    a.timeout = d.timeout;
    a.retry_cnt = d.retry_cnt;
    a.rnr_retry = d.rnr_retry;
    a.en_sqd_async_notify = d.en_sqd_async_notify;
}

/* ibv_qp_init_attr as droce's QpInitAttr; 0 or the errno. */
int to_droce_init(const ibv_qp_init_attr &in, QpInitAttr &out) {
    if (in.send_cq == nullptr || in.recv_cq == nullptr)
        return EINVAL;
    if (in.qp_type != IBV_QPT_RC && in.qp_type != IBV_QPT_UD)
        return EOPNOTSUPP;
    if (in.cap.max_inline_data > kMaxInlineData)
        return EINVAL;
    out.send_cq = outer_of<Cq>(in.send_cq)->dcq;
    out.recv_cq = outer_of<Cq>(in.recv_cq)->dcq;
    /* A queue of 0 WRs (a QP that only receives, or only sends: qperf's rc_bw sender) is
     * valid in verbs; droce's queues hold at least one WR. */
    out.cap.max_send_wr = in.cap.max_send_wr == 0 ? 1 : in.cap.max_send_wr;
    /* A QP on an SRQ posts no receives of its own; droce still sizes a queue for it. */
    out.srq = in.srq != nullptr ? outer_of<Srq>(in.srq)->dsrq : nullptr;
    out.cap.max_recv_wr = in.cap.max_recv_wr == 0 ? 1 : in.cap.max_recv_wr;
    out.cap.max_send_sge = in.cap.max_send_sge;
    out.cap.max_recv_sge = in.cap.max_recv_sge;
    out.cap.max_inline_data = kMaxInlineData; /* what the QP takes, whatever was asked */
    out.sq_sig_all = in.sq_sig_all != 0;
    out.qp_type = static_cast<QpType>(in.qp_type);
    return 0;
}

} // namespace

Cq *droce::verbs::new_cq(ibv_context *context, uint32_t cqe, void *cq_context,
                         ibv_comp_channel *channel) {
    CompletionChannel *dch = channel != nullptr ? outer_of<Channel>(channel)->dch : nullptr;
    auto r = context_of(context)->entry->dev->create_cq(cqe, -1, dch);
    if (!r) {
        status_errno(r.status());
        return nullptr;
    }
    auto *c = static_cast<Cq *>(std::calloc(1, sizeof(Cq)));
    if (c == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    c->dcq = r.value().release();
    c->cq.context = context;
    c->cq.cq_context = cq_context;
    c->cq.cqe = static_cast<int>(cqe);
    c->cq.channel = channel;
    if (channel != nullptr)
        __atomic_add_fetch(&channel->refcnt, 1, __ATOMIC_RELAXED);
    pthread_mutex_init(&c->cq.mutex, nullptr);
    pthread_cond_init(&c->cq.cond, nullptr);
    live_add(Kind::Cq, c);
    return c;
}

Qp *droce::verbs::new_qp(ibv_pd *pd, ibv_qp_init_attr &attr) {
    QpInitAttr init;
    if (int e = to_droce_init(attr, init); e != 0) {
        errno = e;
        return nullptr;
    }
    auto r = outer_of<Pd>(pd)->dpd->create_qp(init);
    if (!r) {
        status_errno(r.status());
        return nullptr;
    }
    auto *q = static_cast<Qp *>(std::calloc(1, sizeof(Qp)));
    if (q == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    q->dqp = r.value().release();
    attr.cap.max_inline_data = kMaxInlineData;
    q->cap = attr.cap;
    q->sq_sig_all = attr.sq_sig_all;
    q->qp.context = pd->context;
    q->qp.qp_context = attr.qp_context;
    q->qp.pd = pd;
    q->qp.send_cq = attr.send_cq;
    q->qp.recv_cq = attr.recv_cq;
    q->qp.srq = attr.srq;
    q->qp.qp_num = q->dqp->qp_num();
    q->qp.state = IBV_QPS_RESET;
    q->qp.qp_type = attr.qp_type;
    hold(outer_of<Pd>(pd)->users);
    hold(outer_of<Cq>(attr.send_cq)->users);
    hold(outer_of<Cq>(attr.recv_cq)->users);
    if (attr.srq != nullptr)
        hold(outer_of<Srq>(attr.srq)->users);
    pthread_mutex_init(&q->qp.mutex, nullptr);
    pthread_cond_init(&q->qp.cond, nullptr);
    live_add(Kind::Qp, q);
    return q;
}

extern "C" {

ibv_cq *ibv_create_cq(ibv_context *context, int cqe, void *cq_context, ibv_comp_channel *channel,
                      int comp_vector) {
    if (context == nullptr || cqe <= 0 || comp_vector != 0) {
        errno = EINVAL;
        return nullptr;
    }
    Cq *c = new_cq(context, static_cast<uint32_t>(cqe), cq_context, channel);
    return c != nullptr ? &c->cq : nullptr;
}

int ibv_destroy_cq(ibv_cq *cq) {
    if (cq == nullptr)
        return errno = EINVAL;
    Cq *c = outer_of<Cq>(cq);
    if (in_use(c->users))
        return errno = EBUSY;
    live_remove(Kind::Cq, c); /* no event is handed out for it from here on */
    /* rdma-core's rule: every event handed out is acked before the CQ goes. */
    pthread_mutex_lock(&cq->mutex);
    while (cq->comp_events_completed != c->comp_events_delivered ||
           cq->async_events_completed != c->async_events_delivered)
        pthread_cond_wait(&cq->cond, &cq->mutex);
    pthread_mutex_unlock(&cq->mutex);
    delete c->dcq;
    if (cq->channel != nullptr)
        __atomic_sub_fetch(&cq->channel->refcnt, 1, __ATOMIC_RELAXED);
    pthread_mutex_destroy(&c->cq.mutex);
    pthread_cond_destroy(&c->cq.cond);
    std::free(c);
    return 0;
}

ibv_qp *ibv_create_qp(ibv_pd *pd, ibv_qp_init_attr *attr) {
    if (pd == nullptr || attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    Qp *q = new_qp(pd, *attr);
    return q != nullptr ? &q->qp : nullptr;
}

int ibv_modify_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask) {
    if (qp == nullptr || attr == nullptr)
        return errno = EINVAL;
    if ((attr_mask & ~kDroceQpMask) != 0)
        return errno = EOPNOTSUPP;
    QpAttr d = to_droce_qp_attr(*attr);
    if ((attr_mask & IBV_QP_AV) != 0 && !to_droce_ah(attr->ah_attr, d.ah_attr))
        return errno = EINVAL;
    Qp *q = outer_of<Qp>(qp);
    if (Status st = q->dqp->modify(d, static_cast<uint32_t>(attr_mask)); !st)
        return status_errno(st);
    if ((attr_mask & IBV_QP_STATE) != 0)
        qp->state = attr->qp_state;
    return 0;
}

int ibv_query_qp(ibv_qp *qp, ibv_qp_attr *attr, int attr_mask, ibv_qp_init_attr *init_attr) {
    (void)attr_mask; /* everything is returned, as providers do */
    if (qp == nullptr || attr == nullptr)
        return errno = EINVAL;
    Qp *q = outer_of<Qp>(qp);
    QpAttr d;
    if (Status st = q->dqp->query(d); !st)
        return status_errno(st);
    std::memset(attr, 0, sizeof(*attr));
    from_droce_qp_attr(d, *attr);
    attr->cap = q->cap;
    qp->state = attr->qp_state;
    if (init_attr != nullptr) {
        std::memset(init_attr, 0, sizeof(*init_attr));
        init_attr->qp_context = qp->qp_context;
        init_attr->send_cq = qp->send_cq;
        init_attr->recv_cq = qp->recv_cq;
        init_attr->srq = qp->srq;
        init_attr->cap = q->cap;
        init_attr->qp_type = qp->qp_type;
        init_attr->sq_sig_all = q->sq_sig_all;
    }
    return 0;
}

int ibv_destroy_qp(ibv_qp *qp) {
    if (qp == nullptr)
        return errno = EINVAL;
    Qp *q = outer_of<Qp>(qp);
    live_remove(Kind::Qp, q);
    pthread_mutex_lock(&qp->mutex); /* every event handed out is acked first */
    while (qp->events_completed != q->events_delivered)
        pthread_cond_wait(&qp->cond, &qp->mutex);
    pthread_mutex_unlock(&qp->mutex);
    delete q->dqp;
    release(outer_of<Pd>(qp->pd)->users);
    release(outer_of<Cq>(qp->send_cq)->users);
    release(outer_of<Cq>(qp->recv_cq)->users);
    if (qp->srq != nullptr)
        release(outer_of<Srq>(qp->srq)->users);
    std::free(q->batch.wrs);
    std::free(q->batch.inline_data);
    pthread_mutex_destroy(&q->qp.mutex);
    pthread_cond_destroy(&q->qp.cond);
    std::free(q);
    return 0;
}

} // extern "C"
