/* SPDX-License-Identifier: BSD-3-Clause */
/* rdma_create_qp and friends: a QP (and, when the caller gives none, its CQs with
 * completion channels, as librdmacm makes them for rdma_get_send_comp/rdma_get_recv_comp)
 * on the id's device, an RC QP taken to INIT with the rights the kernel's rdma_cm grants,
 * a UD QP all the way to RTS with rdma_cm's UDP Q_Key (librdmacm's ucma_init_ud_qp). */
#include <cerrno>
#include <cstring>

#include <rdma/rdma_verbs.h>

#include "rdmacm_service.h"

using namespace droce;
using namespace droce::rdmacm;

namespace {

int fail(int e) {
    errno = e;
    return -1;
}

int to_init(ibv_qp *qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.pkey_index = 0;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                        IBV_ACCESS_REMOTE_ATOMIC;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

/* A UD QP needs no peer: INIT with the port space's Q_Key, then RTR and RTS. */
int ud_to_rts(ibv_qp *qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.pkey_index = 0;
    a.qkey = kRdmaUdpQkey;
    if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
        e != 0)
        return e;
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    if (int e = ibv_modify_qp(qp, &a, IBV_QP_STATE); e != 0)
        return e;
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

void destroy_cqs(rdma_cm_id *id) {
    for (ibv_cq **cq : {&id->send_cq, &id->recv_cq})
        if (*cq != nullptr && (cq == &id->send_cq || *cq != id->send_cq))
            ibv_destroy_cq(*cq);
    for (ibv_comp_channel **ch : {&id->send_cq_channel, &id->recv_cq_channel})
        if (*ch != nullptr && (ch == &id->send_cq_channel || *ch != id->send_cq_channel))
            ibv_destroy_comp_channel(*ch);
    id->send_cq = id->recv_cq = nullptr;
    id->send_cq_channel = id->recv_cq_channel = nullptr;
}

/* The CQs the caller left out, each with its completion channel. */
int create_cqs(rdma_cm_id *id, ibv_qp_init_attr &attr) {
    struct Want {
        ibv_cq **cq;
        ibv_comp_channel **ch;
        uint32_t depth;
    };
    const Want want[] = {{&id->send_cq, &id->send_cq_channel, attr.cap.max_send_wr},
                         {&id->recv_cq, &id->recv_cq_channel, attr.cap.max_recv_wr}};
    for (const Want &w : want) {
        *w.ch = ibv_create_comp_channel(id->verbs);
        *w.cq = *w.ch != nullptr ? ibv_create_cq(id->verbs, static_cast<int>(w.depth ? w.depth : 1),
                                                 id, *w.ch, 0)
                                 : nullptr;
        if (*w.cq == nullptr) {
            const int e = errno;
            destroy_cqs(id);
            return e != 0 ? e : ENOMEM;
        }
    }
    if (attr.send_cq == nullptr)
        attr.send_cq = id->send_cq;
    if (attr.recv_cq == nullptr)
        attr.recv_cq = id->recv_cq;
    return 0;
}

} // namespace

extern "C" {

int rdma_create_qp(rdma_cm_id *id, ibv_pd *pd, ibv_qp_init_attr *qp_init_attr) {
    if (id == nullptr || qp_init_attr == nullptr || id->verbs == nullptr || id->qp != nullptr)
        return fail(EINVAL);
    if (pd == nullptr)
        pd = id->pd;
    if (pd == nullptr || pd->context != id->verbs)
        return fail(EINVAL);
    IdState &st = *id_of(id)->st;
    const bool own_cqs = qp_init_attr->send_cq == nullptr || qp_init_attr->recv_cq == nullptr;
    if (own_cqs) {
        if (int e = create_cqs(id, *qp_init_attr); e != 0)
            return fail(e);
        st.cqs_from_cm = true;
    }
    if (qp_init_attr->srq == nullptr)
        qp_init_attr->srq = id->srq;
    /* The port space decides the transport, as the kernel's rdma_cm checks it. */
    const ibv_qp_type want = id->ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
    if (qp_init_attr->qp_type != want) {
        if (own_cqs)
            destroy_cqs(id);
        st.cqs_from_cm = false;
        return fail(EINVAL);
    }
    ibv_qp *qp = ibv_create_qp(pd, qp_init_attr);
    if (qp == nullptr || (want == IBV_QPT_RC ? to_init(qp) : ud_to_rts(qp)) != 0) {
        const int e = errno != 0 ? errno : EINVAL;
        if (qp != nullptr)
            ibv_destroy_qp(qp);
        if (own_cqs)
            destroy_cqs(id);
        st.cqs_from_cm = false;
        return fail(e);
    }
    id->qp = qp;
    id->qp_type = qp_init_attr->qp_type;
    st.qp_from_cm = true;
    return 0;
}

int rdma_create_qp_ex(rdma_cm_id *id, ibv_qp_init_attr_ex *attr) {
    if (attr == nullptr)
        return fail(EINVAL);
    if ((attr->comp_mask & ~static_cast<uint32_t>(IBV_QP_INIT_ATTR_PD)) != 0)
        return fail(EOPNOTSUPP); /* the extended QP features: through ibv_create_qp_ex */
    ibv_qp_init_attr a{};
    a.qp_context = attr->qp_context;
    a.send_cq = attr->send_cq;
    a.recv_cq = attr->recv_cq;
    a.srq = attr->srq;
    a.cap = attr->cap;
    a.qp_type = attr->qp_type;
    a.sq_sig_all = attr->sq_sig_all;
    const int rc =
        rdma_create_qp(id, (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : nullptr, &a);
    attr->cap = a.cap;
    return rc;
}

void rdma_destroy_qp(rdma_cm_id *id) {
    if (id == nullptr || id->qp == nullptr)
        return;
    IdState &st = *id_of(id)->st;
    if (st.conn != 0 && st.dev != nullptr) {
        if (Service *s = Service::get(); s != nullptr) {
            std::lock_guard<std::mutex> lk(s->mu);
            st.dev->cm->release(st.conn); /* the CM forgets the QP before it goes */
        }
    }
    ibv_destroy_qp(id->qp);
    id->qp = nullptr;
    if (st.cqs_from_cm)
        destroy_cqs(id);
    st.cqs_from_cm = false;
}

int rdma_create_srq(rdma_cm_id *id, ibv_pd *pd, ibv_srq_init_attr *attr) {
    if (id == nullptr || attr == nullptr || id->verbs == nullptr || id->srq != nullptr)
        return fail(EINVAL);
    ibv_srq *srq = ibv_create_srq(pd != nullptr ? pd : id->pd, attr);
    if (srq == nullptr)
        return -1;
    id->srq = srq;
    return 0;
}

int rdma_create_srq_ex(rdma_cm_id *id, ibv_srq_init_attr_ex *attr) {
    if (attr == nullptr)
        return fail(EINVAL);
    const uint32_t basic = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;
    if ((attr->comp_mask & ~basic) != 0 ||
        ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC))
        return fail(EOPNOTSUPP);
    ibv_srq_init_attr a{};
    a.srq_context = attr->srq_context;
    a.attr = attr->attr;
    return rdma_create_srq(id, (attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ? attr->pd : nullptr, &a);
}

void rdma_destroy_srq(rdma_cm_id *id) {
    if (id == nullptr || id->srq == nullptr)
        return;
    ibv_destroy_srq(id->srq);
    id->srq = nullptr;
}

int rdma_init_qp_attr(rdma_cm_id *, ibv_qp_attr *, int *) {
    /* The QP a caller moves itself (rping -q): droce's CM moves the QP it is given. */
    return fail(EOPNOTSUPP);
}

int rdma_establish(rdma_cm_id *) { return fail(EOPNOTSUPP); }

} // extern "C"
