/* SPDX-License-Identifier: BSD-3-Clause */
/* A verbs program of droce's own, built against the system's <infiniband/verbs.h> and
 * linked against the system's libibverbs like any verbs program; run under droce-run it
 * must find droce's library instead. It walks the verbs droce implements and the error
 * paths of those it does not: each check prints "ok" or "FAIL" with what it saw. */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            printf("ok: ");                                                                        \
        } else {                                                                                   \
            printf("FAIL: ");                                                                      \
            ++failures;                                                                            \
        }                                                                                          \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
    } while (0)

struct objs {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_mr *mr;
    struct ibv_cq *cq;
    struct ibv_qp *qp;
    char *buf;
};

static void check_device(struct ibv_context *ctx) {
    struct ibv_device_attr da;
    struct ibv_device_attr_ex dx;
    struct ibv_port_attr pa;
    union ibv_gid gid;
    __be16 pkey = 0;

    CHECK(ibv_query_device(ctx, &da) == 0 && da.max_qp_init_rd_atom == 128 &&
              da.max_qp_rd_atom == 16,
          "READs/atomics per QP: 128 in flight (as rxe), 16 responder resources");
    CHECK(ibv_query_device(ctx, &da) == 0 && da.phys_port_cnt == 1 && da.max_qp_wr > 0 &&
              da.max_sge >= 1 && da.node_guid != 0,
          "ibv_query_device: ports %u, max_qp_wr %d, max_sge %d", da.phys_port_cnt, da.max_qp_wr,
          da.max_sge);
    CHECK(ibv_query_device_ex(ctx, NULL, &dx) == 0 && dx.orig_attr.max_qp_wr == da.max_qp_wr &&
              dx.phys_port_cnt_ex == 1,
          "ibv_query_device_ex (through verbs_context)");
    CHECK(ibv_query_port(ctx, 1, &pa) == 0 && pa.link_layer == IBV_LINK_LAYER_ETHERNET &&
              pa.state == IBV_PORT_ACTIVE && pa.gid_tbl_len >= 2,
          "ibv_query_port: state %s, link layer %u, %d GIDs", ibv_port_state_str(pa.state),
          pa.link_layer, pa.gid_tbl_len);
    CHECK(ibv_query_port(ctx, 2, &pa) != 0, "ibv_query_port on port 2 fails");
    CHECK(ibv_query_gid(ctx, 1, 1, &gid) == 0 && gid.raw[10] == 0xff && gid.raw[11] == 0xff,
          "ibv_query_gid 1: IPv4-mapped %u.%u.%u.%u", gid.raw[12], gid.raw[13], gid.raw[14],
          gid.raw[15]);
    CHECK(ibv_query_gid(ctx, 1, 999, &gid) == -1, "ibv_query_gid 999 fails");
    CHECK(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && ntohs(pkey) == 0xffff,
          "ibv_query_pkey 0: 0x%04x", ntohs(pkey));
    CHECK(ibv_query_pkey(ctx, 1, 1, &pkey) == -1, "ibv_query_pkey 1 fails");
}

static void check_pd_mr(struct objs *o) {
    o->pd = ibv_alloc_pd(o->ctx);
    CHECK(o->pd != NULL, "ibv_alloc_pd");
    o->buf = calloc(1, 8192);
    o->mr = ibv_reg_mr(o->pd, o->buf, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    CHECK(o->mr != NULL && o->mr->addr == o->buf && o->mr->length == 8192,
          "ibv_reg_mr: lkey 0x%x rkey 0x%x", o->mr ? o->mr->lkey : 0, o->mr ? o->mr->rkey : 0);
    errno = 0;
    CHECK(ibv_reg_mr(o->pd, o->buf, 0, IBV_ACCESS_LOCAL_WRITE) == NULL && errno == EINVAL,
          "ibv_reg_mr of 0 bytes: EINVAL (errno %d)", errno);
    errno = 0;
    CHECK(ibv_reg_mr(o->pd, o->buf, 64, IBV_ACCESS_MW_BIND) == NULL && errno == EOPNOTSUPP,
          "ibv_reg_mr with IBV_ACCESS_MW_BIND: EOPNOTSUPP (errno %d)", errno);
}

static void check_cq_qp(struct objs *o) {
    struct ibv_qp_init_attr ia;
    o->cq = ibv_create_cq(o->ctx, 64, NULL, NULL, 0);
    CHECK(o->cq != NULL && o->cq->cqe >= 64, "ibv_create_cq 64");
    errno = 0;
    CHECK(ibv_create_cq(o->ctx, 0, NULL, NULL, 0) == NULL && errno == EINVAL,
          "ibv_create_cq 0: EINVAL (errno %d)", errno);

    memset(&ia, 0, sizeof(ia));
    ia.send_cq = o->cq;
    ia.recv_cq = o->cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 16;
    ia.cap.max_recv_wr = 16;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    o->qp = ibv_create_qp(o->pd, &ia);
    CHECK(o->qp != NULL && o->qp->qp_num >= 0x11 && o->qp->state == IBV_QPS_RESET,
          "ibv_create_qp RC: QPN 0x%x, max_inline_data %u", o->qp ? o->qp->qp_num : 0,
          ia.cap.max_inline_data);
    ia.qp_type = IBV_QPT_UC;
    errno = 0;
    CHECK(ibv_create_qp(o->pd, &ia) == NULL && errno == EOPNOTSUPP,
          "ibv_create_qp UC: EOPNOTSUPP (errno %d)", errno);
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_sge = 99;
    errno = 0;
    CHECK(ibv_create_qp(o->pd, &ia) == NULL && errno == EINVAL,
          "ibv_create_qp with 99 SGEs: EINVAL (errno %d)", errno);
}

static void check_qp_states(struct objs *o) {
    struct ibv_qp_attr a;
    struct ibv_qp_init_attr ia;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    CHECK(ibv_modify_qp(o->qp, &a,
                        IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) == 0,
          "ibv_modify_qp RESET->INIT");
    memset(&a, 0, sizeof(a));
    CHECK(ibv_query_qp(o->qp, &a, IBV_QP_STATE | IBV_QP_CAP, &ia) == 0 &&
              a.qp_state == IBV_QPS_INIT && ia.cap.max_send_wr >= 16 && ia.qp_type == IBV_QPT_RC &&
              ia.send_cq == o->cq,
          "ibv_query_qp: state %d, max_send_wr %u", a.qp_state, ia.cap.max_send_wr);
    a.qp_state = IBV_QPS_RTS;
    CHECK(ibv_modify_qp(o->qp, &a, IBV_QP_STATE) != 0, "ibv_modify_qp INIT->RTS refused");
    a.rate_limit = 1000;
    CHECK(ibv_modify_qp(o->qp, &a, IBV_QP_RATE_LIMIT) == EOPNOTSUPP,
          "ibv_modify_qp IBV_QP_RATE_LIMIT: EOPNOTSUPP");
}

static void check_datapath(struct objs *o) {
    struct ibv_sge sge = {(uintptr_t)o->buf, 64, o->mr->lkey};
    struct ibv_recv_wr rwr = {.wr_id = 7, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad_r = NULL;
    struct ibv_send_wr swr = {.wr_id = 8,
                              .sg_list = &sge,
                              .num_sge = 1,
                              .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED};
    struct ibv_send_wr *bad_s = NULL;
    struct ibv_wc wc[4];

    CHECK(ibv_post_recv(o->qp, &rwr, &bad_r) == 0, "ibv_post_recv on INIT");
    swr.num_sge = 5;
    CHECK(ibv_post_send(o->qp, &swr, &bad_s) == EINVAL && bad_s == &swr,
          "ibv_post_send with 5 SGEs: EINVAL, bad_wr set");
    swr.num_sge = 1;
    swr.opcode = IBV_WR_BIND_MW;
    bad_s = NULL;
    CHECK(ibv_post_send(o->qp, &swr, &bad_s) == EINVAL && bad_s == &swr,
          "ibv_post_send BIND_MW: EINVAL");
    CHECK(ibv_poll_cq(o->cq, 4, wc) == 0, "ibv_poll_cq: empty");
}

static void check_unsupported(struct objs *o) {
    struct ibv_srq_init_attr sa;
    struct ibv_cq_init_attr_ex cx;
    struct ibv_xrcd_init_attr xa;
    struct ibv_ah_attr aa;
    struct ibv_srq *srq;
    memset(&sa, 0, sizeof(sa));
    memset(&cx, 0, sizeof(cx));
    memset(&xa, 0, sizeof(xa));
    cx.cqe = 16;
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    srq = ibv_create_srq(o->pd, &sa);
    CHECK(srq != NULL && ibv_destroy_srq(srq) == 0, "ibv_create_srq, ibv_destroy_srq");
    sa.attr.srq_limit = 4;
    errno = 0;
    CHECK(ibv_create_srq(o->pd, &sa) == NULL && errno == EOPNOTSUPP,
          "ibv_create_srq with a limit: EOPNOTSUPP (errno %d)", errno);
    memset(&aa, 0, sizeof(aa));
    aa.port_num = 1;
    errno = 0;
    CHECK(ibv_create_ah(o->pd, &aa) == NULL && errno == EINVAL,
          "ibv_create_ah without GRH: EINVAL (errno %d)", errno);
    cx.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
    errno = 0;
    CHECK(ibv_create_cq_ex(o->ctx, &cx) == NULL && errno == EOPNOTSUPP,
          "ibv_create_cq_ex on a parent domain: EOPNOTSUPP");
    errno = 0;
    CHECK(ibv_alloc_mw(o->pd, IBV_MW_TYPE_1) == NULL && errno == EOPNOTSUPP, "ibv_alloc_mw");
    errno = 0;
    CHECK(ibv_open_xrcd(o->ctx, &xa) == NULL && errno == EOPNOTSUPP, "ibv_open_xrcd");
    errno = 0;
    CHECK(ibv_qp_to_qp_ex(o->qp) == NULL && errno == EINVAL,
          "ibv_qp_to_qp_ex of an ibv_create_qp QP: EINVAL");
    CHECK(ibv_resize_cq(o->cq, 128) == EOPNOTSUPP, "ibv_resize_cq");
    CHECK(strcmp(ibv_wc_status_str(IBV_WC_SUCCESS), "success") == 0 &&
              strcmp(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE") == 0,
          "status strings");
}

static void set_nonblocking(int fd) {
    const int fl = fcntl(fd, F_GETFL);
    CHECK(fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0, "O_NONBLOCK on fd %d", fd);
}

static int readable_within(int fd, int ms) {
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN) != 0;
}

/* An RC QP on cq (and srq, if given) in INIT. */
static struct ibv_qp *qp_in_init(struct objs *o, struct ibv_cq *cq, struct ibv_srq *srq) {
    struct ibv_qp_init_attr ia;
    struct ibv_qp_attr a;
    struct ibv_qp *qp;
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = cq;
    ia.recv_cq = cq;
    ia.srq = srq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    qp = ibv_create_qp(o->pd, &ia);
    if (qp == NULL)
        return NULL;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
        ibv_destroy_qp(qp);
        return NULL;
    }
    return qp;
}

static int to_err(struct ibv_qp *qp) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_ERR;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

/* Completion channels and asynchronous events: a CQ on a channel, armed, raises one event
 * when a QP's receive is flushed into it (the QP to ERR); the channel refuses to go while
 * the CQ is on it; a QP on an SRQ going to ERR raises QP_LAST_WQE_REACHED on async_fd, and
 * its destroy waits for nothing once the event is acked. */
static void check_events(struct objs *o) {
    struct ibv_comp_channel *ch = ibv_create_comp_channel(o->ctx);
    struct ibv_srq_init_attr sa;
    struct ibv_cq *cq, *ev_cq = NULL;
    struct ibv_qp *qp, *qs;
    struct ibv_srq *srq;
    struct ibv_async_event ae;
    struct ibv_wc wc[4];
    void *ev_ctx = NULL;
    int got = 0;
    CHECK(ch != NULL && ch->fd >= 0 && ch->context == o->ctx, "ibv_create_comp_channel: fd %d",
          ch ? ch->fd : -1);
    if (ch == NULL)
        return;
    CHECK(ibv_req_notify_cq(o->cq, 0) == 0, "ibv_req_notify_cq on a CQ without a channel: 0");
    cq = ibv_create_cq(o->ctx, 16, (void *)0x5eed, ch, 0);
    CHECK(cq != NULL && cq->channel == ch, "ibv_create_cq on the channel");
    if (cq == NULL)
        return;
    CHECK(ibv_destroy_comp_channel(ch) == EBUSY, "ibv_destroy_comp_channel with a CQ: EBUSY");
    set_nonblocking(ch->fd);
    errno = 0;
    CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == -1 && errno == EAGAIN,
          "ibv_get_cq_event with none (non-blocking): EAGAIN (errno %d)", errno);
    qp = qp_in_init(o, cq, NULL);
    CHECK(qp != NULL, "a QP on the CQ, in INIT");
    if (qp == NULL)
        return;
    {
        struct ibv_sge sge = {(uintptr_t)(o->buf + 4096), 64, o->mr->lkey};
        struct ibv_recv_wr rwr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad_r;
        CHECK(ibv_post_recv(qp, &rwr, &bad_r) == 0, "a receive posted");
    }
    CHECK(ibv_req_notify_cq(cq, 0) == 0, "ibv_req_notify_cq");
    CHECK(to_err(qp) == 0, "the QP to ERR (its receive flushed into the CQ)");
    CHECK(readable_within(ch->fd, 5000), "the channel's fd becomes readable");
    CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq && ev_ctx == (void *)0x5eed,
          "ibv_get_cq_event: the CQ and its context");
    ibv_ack_cq_events(cq, 1);
    for (int tries = 0; got < 1 && tries < 5000; ++tries) {
        int n = ibv_poll_cq(cq, 4, wc);
        got += n > 0 ? n : 0;
        if (got < 1)
            usleep(1000);
    }
    CHECK(got == 1 && wc[0].status == IBV_WC_WR_FLUSH_ERR && wc[0].wr_id == 1,
          "the flushed receive polled after the event");
    CHECK(!readable_within(ch->fd, 50), "one event per arm: nothing more on the channel");
    CHECK(ibv_destroy_qp(qp) == 0 && ibv_destroy_cq(cq) == 0, "QP and CQ destroyed (acked)");
    CHECK(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel");

    CHECK(o->ctx->async_fd >= 0, "context->async_fd %d", o->ctx->async_fd);
    set_nonblocking(o->ctx->async_fd);
    errno = 0;
    CHECK(ibv_get_async_event(o->ctx, &ae) == -1 && errno == EAGAIN,
          "ibv_get_async_event with none (non-blocking): EAGAIN (errno %d)", errno);
    memset(&sa, 0, sizeof(sa));
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    srq = ibv_create_srq(o->pd, &sa);
    qs = srq != NULL ? qp_in_init(o, o->cq, srq) : NULL;
    CHECK(qs != NULL && to_err(qs) == 0, "a QP on an SRQ to ERR");
    if (qs == NULL)
        return;
    CHECK(readable_within(o->ctx->async_fd, 5000), "async_fd becomes readable");
    CHECK(ibv_get_async_event(o->ctx, &ae) == 0 && ae.event_type == IBV_EVENT_QP_LAST_WQE_REACHED &&
              ae.element.qp == qs,
          "ibv_get_async_event: %s of the QP", ibv_event_type_str(ae.event_type));
    ibv_ack_async_event(&ae);
    CHECK(ibv_destroy_qp(qs) == 0 && ibv_destroy_srq(srq) == 0, "QP (acked) and SRQ destroyed");
}

/* RTR and RTS towards dest_qpn at our own GID 1: a QP of this same device. */
static int to_rts_self(struct objs *o, struct ibv_qp *qp, uint32_t dest_qpn) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest_qpn;
    a.rq_psn = 7;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.sgid_index = 1;
    a.ah_attr.grh.hop_limit = 64;
    if (ibv_query_gid(o->ctx, 1, 1, &a.ah_attr.grh.dgid) != 0 ||
        ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
        return -1;
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 7;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 128; /* what perftest sets against rxe: the peer's max_qp_rd_atom */
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Loopback: two QPs of the one device, connected through its own GID, exchange a SEND
 * whose data arrives (as on rxe and ConnectX). */
static void check_loopback(struct objs *o) {
    struct ibv_qp *qa = qp_in_init(o, o->cq, NULL), *qb = qp_in_init(o, o->cq, NULL);
    struct ibv_wc wc[4];
    int got = 0, ok = 1;
    CHECK(qa != NULL && qb != NULL && to_rts_self(o, qa, qb->qp_num) == 0 &&
              to_rts_self(o, qb, qa->qp_num) == 0,
          "two QPs of the device connected to each other (own GID)");
    if (qa == NULL || qb == NULL)
        return;
    {
        struct ibv_qp_attr a;
        memset(&a, 0, sizeof(a));
        a.qp_state = IBV_QPS_RTS;
        a.max_rd_atomic = 129;
        CHECK(ibv_modify_qp(qa, &a, IBV_QP_STATE | IBV_QP_MAX_QP_RD_ATOMIC) == EINVAL,
              "max_rd_atomic 129, above max_qp_init_rd_atom: EINVAL");
    }
    memset(o->buf, 0, 8192);
    for (int i = 0; i < 256; ++i)
        o->buf[i] = (char)(i * 7 + 1);
    {
        struct ibv_sge rs = {(uintptr_t)(o->buf + 4096), 256, o->mr->lkey};
        struct ibv_sge ss = {(uintptr_t)o->buf, 256, o->mr->lkey};
        struct ibv_recv_wr rwr = {.wr_id = 11, .sg_list = &rs, .num_sge = 1}, *bad_r;
        struct ibv_send_wr swr = {.wr_id = 12,
                                  .sg_list = &ss,
                                  .num_sge = 1,
                                  .opcode = IBV_WR_SEND,
                                  .send_flags = IBV_SEND_SIGNALED},
                           *bad_s;
        CHECK(ibv_post_recv(qb, &rwr, &bad_r) == 0 && ibv_post_send(qa, &swr, &bad_s) == 0,
              "a SEND from one to the other");
    }
    for (int tries = 0; got < 2 && tries < 5000; ++tries) {
        int n = ibv_poll_cq(o->cq, 2 - got, wc + got);
        got += n > 0 ? n : 0;
        if (got < 2)
            usleep(1000);
    }
    for (int i = 0; i < got; ++i)
        ok = ok && wc[i].status == IBV_WC_SUCCESS;
    CHECK(got == 2 && ok && memcmp(o->buf, o->buf + 4096, 256) == 0,
          "both completions, the data in place (%d completions)", got);
    CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0, "the two QPs destroyed");
}

/* Objects in use refuse to go, with EBUSY, and stay usable (rdma-core's kernel does the
 * same; fio's rdma engine destroys its CQ before its QP and its PD with MRs left). */
static void check_in_use(struct objs *o) {
    struct ibv_srq_init_attr sa;
    struct ibv_srq *srq;
    struct ibv_qp *qp;
    struct ibv_wc wc;
    memset(&sa, 0, sizeof(sa));
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    srq = ibv_create_srq(o->pd, &sa);
    qp = srq != NULL ? qp_in_init(o, o->cq, srq) : NULL;
    CHECK(qp != NULL, "a QP on the SRQ");
    if (qp == NULL)
        return;
    CHECK(ibv_destroy_cq(o->cq) == EBUSY, "ibv_destroy_cq of a CQ its QPs use: EBUSY");
    CHECK(ibv_destroy_srq(srq) == EBUSY, "ibv_destroy_srq of an SRQ a QP uses: EBUSY");
    CHECK(ibv_dealloc_pd(o->pd) == EBUSY, "ibv_dealloc_pd of a PD with QPs and MRs: EBUSY");
    CHECK(ibv_poll_cq(o->cq, 1, &wc) == 0, "the CQ refused still polls");
    CHECK(ibv_destroy_qp(qp) == 0 && ibv_destroy_srq(srq) == 0, "the QP, then its SRQ, destroyed");
}

int main(void) {
    struct objs o;
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    memset(&o, 0, sizeof(o));
    CHECK(list != NULL && n == 1 && strcmp(ibv_get_device_name(list[0]), "droce0") == 0 &&
              ibv_get_device_guid(list[0]) != 0,
          "ibv_get_device_list: %d device(s), first %s", n,
          n > 0 ? ibv_get_device_name(list[0]) : "-");
    if (list == NULL || n < 1)
        return 1;
    o.ctx = ibv_open_device(list[0]);
    CHECK(o.ctx != NULL, "ibv_open_device");
    if (o.ctx == NULL)
        return 1;
    check_device(o.ctx);
    check_pd_mr(&o);
    check_cq_qp(&o);
    if (o.pd == NULL || o.mr == NULL || o.cq == NULL || o.qp == NULL)
        return 1;
    check_qp_states(&o);
    check_datapath(&o);
    check_unsupported(&o);
    check_events(&o);
    check_loopback(&o);
    check_in_use(&o);
    CHECK(ibv_destroy_qp(o.qp) == 0, "ibv_destroy_qp");
    CHECK(ibv_destroy_cq(o.cq) == 0, "ibv_destroy_cq");
    CHECK(ibv_dealloc_pd(o.pd) == EBUSY, "ibv_dealloc_pd with an MR left: EBUSY");
    CHECK(ibv_dereg_mr(o.mr) == 0, "ibv_dereg_mr");
    CHECK(ibv_dealloc_pd(o.pd) == 0, "ibv_dealloc_pd");
    CHECK(ibv_close_device(o.ctx) == 0, "ibv_close_device");
    ibv_free_device_list(list);
    free(o.buf);
    printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
