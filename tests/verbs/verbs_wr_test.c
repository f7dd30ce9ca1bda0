/* SPDX-License-Identifier: BSD-3-Clause */
/* The extended verbs on droce, as a verbs program of droce's own uses them (built against
 * the system's <infiniband/verbs.h>, linked against the system's libibverbs, run under
 * droce-run): QPs from ibv_create_qp_ex posted to with the ibv_wr_* API, CQs from
 * ibv_create_cq_ex polled with ibv_start_poll / ibv_next_poll / ibv_wc_read_*. Two QPs of
 * the one device talk to each other through its port (net_ring: frames come back):
 * RDMA WRITE, inline SEND, SEND with immediate from an SGE list, RDMA READ, both atomics,
 * a region of several WRs, ibv_wr_abort, UD sends, and the errors ibv_wr_complete and the
 * create verbs report. Each check prints "ok" or "FAIL" with what it saw. */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

enum { kBufSize = 65536, kDepth = 32, kGid = 1 };

/* Every RC operation droce has. */
static const uint64_t kRcOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                               IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                               IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                               IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

struct env {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_mr *mr;
    uint8_t *buf; /* [0, 32K): A's side; [32K, 64K): B's side */
    struct ibv_cq_ex *cq_a, *cq_b;
    struct ibv_qp *qp_a, *qp_b;
    struct ibv_qp_ex *x_a;
    union ibv_gid gid;
};

/* One completion as the ibv_wc_read_* functions give it. */
struct comp {
    uint64_t wr_id;
    enum ibv_wc_status status;
    enum ibv_wc_opcode opcode;
    uint32_t byte_len, qp_num, imm;
    unsigned int wc_flags;
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void read_comp(struct ibv_cq_ex *cq, struct comp *c) {
    c->wr_id = cq->wr_id;
    c->status = cq->status;
    c->opcode = ibv_wc_read_opcode(cq);
    c->byte_len = ibv_wc_read_byte_len(cq);
    c->qp_num = ibv_wc_read_qp_num(cq);
    c->wc_flags = ibv_wc_read_wc_flags(cq);
    c->imm = (c->wc_flags & IBV_WC_WITH_IMM) ? ntohl(ibv_wc_read_imm_data(cq)) : 0;
}

/* Up to max completions within 2 s, through ibv_start_poll / ibv_next_poll; how many. */
static int poll_ex(struct ibv_cq_ex *cq, struct comp *out, int max) {
    struct ibv_poll_cq_attr attr = {0};
    int n = 0;
    double end = now_s() + 2.0;
    while (n < max && now_s() < end) {
        if (ibv_start_poll(cq, &attr) != 0)
            continue;
        read_comp(cq, &out[n++]);
        while (n < max && ibv_next_poll(cq) == 0)
            read_comp(cq, &out[n++]);
        ibv_end_poll(cq);
    }
    return n;
}

static int one_ok(struct ibv_cq_ex *cq, uint64_t wr_id, enum ibv_wc_opcode op, struct comp *c) {
    memset(c, 0, sizeof(*c));
    return poll_ex(cq, c, 1) == 1 && c->status == IBV_WC_SUCCESS && c->wr_id == wr_id &&
           c->opcode == op;
}

static struct ibv_cq_ex *make_cq(struct ibv_context *ctx, uint64_t wc_flags) {
    struct ibv_cq_init_attr_ex a;
    memset(&a, 0, sizeof(a));
    a.cqe = 2 * kDepth;
    a.wc_flags = wc_flags;
    return ibv_create_cq_ex(ctx, &a);
}

static struct ibv_qp *make_qp(struct env *e, enum ibv_qp_type type, struct ibv_cq_ex *cq,
                              uint64_t ops) {
    struct ibv_qp_init_attr_ex a;
    memset(&a, 0, sizeof(a));
    a.send_cq = ibv_cq_ex_to_cq(cq);
    a.recv_cq = ibv_cq_ex_to_cq(cq);
    a.qp_type = type;
    a.cap.max_send_wr = kDepth;
    a.cap.max_recv_wr = kDepth;
    a.cap.max_send_sge = 2;
    a.cap.max_recv_sge = 2;
    a.cap.max_inline_data = 64;
    a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    a.pd = e->pd;
    a.send_ops_flags = ops;
    return ibv_create_qp_ex(e->ctx, &a);
}

static int to_rts(struct env *e, struct ibv_qp *qp, uint32_t dest_qpn) {
    struct ibv_qp_attr a;
    int rc_qp = qp->qp_type == IBV_QPT_RC;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qkey = 0x11111111;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                          (rc_qp ? IBV_QP_ACCESS_FLAGS : IBV_QP_QKEY)))
        return -1;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    if (rc_qp) {
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = dest_qpn;
        a.rq_psn = 0;
        a.max_dest_rd_atomic = 4;
        a.min_rnr_timer = 12;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.dgid = e->gid;
        a.ah_attr.grh.sgid_index = kGid;
        a.ah_attr.grh.hop_limit = 64;
        a.ah_attr.port_num = 1;
    }
    if (ibv_modify_qp(qp, &a,
                      IBV_QP_STATE |
                          (rc_qp ? IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER
                                 : 0)))
        return -1;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = 0;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    return ibv_modify_qp(
        qp, &a,
        IBV_QP_STATE | IBV_QP_SQ_PSN |
            (rc_qp ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC
                   : 0));
}

static int post_recv(struct ibv_qp *qp, uint64_t wr_id, uint8_t *addr, uint32_t len,
                     uint32_t lkey) {
    struct ibv_sge sge = {(uintptr_t)addr, len, lkey};
    struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad;
    return ibv_post_recv(qp, &wr, &bad);
}

static void check_write_send_read(struct env *e) {
    uint8_t *a = e->buf, *b = e->buf + kBufSize / 2;
    uint64_t rb = (uintptr_t)b;
    uint32_t lkey = e->mr->lkey, rkey = e->mr->rkey;
    struct comp c;
    char msg[48];
    struct ibv_sge two[2] = {{(uintptr_t)a, 100, lkey}, {(uintptr_t)a + 1000, 28, lkey}};

    for (int i = 0; i < 4096; ++i)
        a[i] = (uint8_t)(i * 7 + 1);
    ibv_wr_start(e->x_a);
    e->x_a->wr_id = 11;
    e->x_a->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(e->x_a, rkey, rb);
    ibv_wr_set_sge(e->x_a, lkey, (uintptr_t)a, 4096);
    CHECK(ibv_wr_complete(e->x_a) == 0, "ibv_wr_complete: RDMA WRITE 4096 B");
    CHECK(one_ok(e->cq_a, 11, IBV_WC_RDMA_WRITE, &c) && memcmp(a, b, 4096) == 0,
          "RDMA WRITE completed (wr_id %llu), the bytes arrived", (unsigned long long)c.wr_id);

    /* Inline SEND: the buffer changes after the setter, before ibv_wr_complete. */
    CHECK(post_recv(e->qp_b, 21, b + 8192, 256, lkey) == 0, "receive posted on B");
    snprintf(msg, sizeof(msg), "inline through ibv_wr_set_inline_data");
    ibv_wr_start(e->x_a);
    e->x_a->wr_id = 12;
    e->x_a->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    ibv_wr_send(e->x_a);
    ibv_wr_set_inline_data(e->x_a, msg, sizeof(msg));
    memset(msg, 'X', sizeof(msg));
    CHECK(ibv_wr_complete(e->x_a) == 0, "ibv_wr_complete: inline SEND");
    CHECK(one_ok(e->cq_a, 12, IBV_WC_SEND, &c), "SEND completed on A");
    CHECK(one_ok(e->cq_b, 21, IBV_WC_RECV, &c) && c.byte_len == sizeof(msg) &&
              c.qp_num == e->qp_b->qp_num &&
              strcmp((char *)b + 8192, "inline through ibv_wr_set_inline_data") == 0,
          "B received %u B on QP 0x%x: \"%s\" (copied at the setter)", c.byte_len, c.qp_num,
          (char *)b + 8192);

    /* SEND with immediate, two SGEs. */
    CHECK(post_recv(e->qp_b, 22, b + 12288, 256, lkey) == 0, "receive posted on B");
    ibv_wr_start(e->x_a);
    e->x_a->wr_id = 13;
    e->x_a->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send_imm(e->x_a, htonl(0xabcd1234));
    ibv_wr_set_sge_list(e->x_a, 2, two);
    CHECK(ibv_wr_complete(e->x_a) == 0, "ibv_wr_complete: SEND with immediate, 2 SGEs");
    CHECK(one_ok(e->cq_a, 13, IBV_WC_SEND, &c), "SEND with immediate completed on A");
    CHECK(one_ok(e->cq_b, 22, IBV_WC_RECV, &c) && c.byte_len == 128 &&
              (c.wc_flags & IBV_WC_WITH_IMM) && c.imm == 0xabcd1234 &&
              memcmp(b + 12288, a, 100) == 0 && memcmp(b + 12288 + 100, a + 1000, 28) == 0,
          "B received %u B, immediate 0x%x (wc_flags 0x%x), the SGEs in order", c.byte_len, c.imm,
          c.wc_flags);

    /* RDMA READ of what B holds at 16K into A at 20K. */
    for (int i = 0; i < 2048; ++i)
        b[16384 + i] = (uint8_t)(i ^ 0x5a);
    ibv_wr_start(e->x_a);
    e->x_a->wr_id = 14;
    e->x_a->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_read(e->x_a, rkey, rb + 16384);
    ibv_wr_set_sge(e->x_a, lkey, (uintptr_t)a + 20480, 2048);
    CHECK(ibv_wr_complete(e->x_a) == 0, "ibv_wr_complete: RDMA READ 2048 B");
    CHECK(one_ok(e->cq_a, 14, IBV_WC_RDMA_READ, &c) && c.byte_len == 2048 &&
              memcmp(a + 20480, b + 16384, 2048) == 0,
          "RDMA READ completed with %u B, the bytes read", c.byte_len);
}

static void check_atomics(struct env *e) {
    uint8_t *a = e->buf, *b = e->buf + kBufSize / 2;
    uint64_t *target = (uint64_t *)(b + 24576), *old = (uint64_t *)(a + 24576);
    struct comp c;
    *target = 40;
    ibv_wr_start(e->x_a);
    e->x_a->wr_id = 31;
    e->x_a->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_atomic_fetch_add(e->x_a, e->mr->rkey, (uintptr_t)target, 2);
    ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)old, 8);
    CHECK(ibv_wr_complete(e->x_a) == 0, "ibv_wr_complete: fetch and add");
    CHECK(one_ok(e->cq_a, 31, IBV_WC_FETCH_ADD, &c) && *old == 40 && *target == 42,
          "fetch and add: old %llu, now %llu", (unsigned long long)*old,
          (unsigned long long)*target);
    ibv_wr_start(e->x_a);
    e->x_a->wr_id = 32;
    ibv_wr_atomic_cmp_swp(e->x_a, e->mr->rkey, (uintptr_t)target, 42, 7);
    ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)old, 8);
    CHECK(ibv_wr_complete(e->x_a) == 0, "ibv_wr_complete: compare and swap");
    CHECK(one_ok(e->cq_a, 32, IBV_WC_COMP_SWAP, &c) && *old == 42 && *target == 7,
          "compare and swap: old %llu, now %llu", (unsigned long long)*old,
          (unsigned long long)*target);
}

/* Several WRs in one region, a region aborted, completions split between the two poll
 * APIs. */
static void check_regions(struct env *e) {
    uint8_t *a = e->buf, *b = e->buf + kBufSize / 2;
    struct comp c[8];
    struct ibv_wc wc[8];
    int n;
    memset(b + 28672, 0, 1024);
    memset(a + 28672, 0xee, 1024);
    ibv_wr_start(e->x_a);
    for (int i = 0; i < 8; ++i) {
        e->x_a->wr_id = 100 + i;
        e->x_a->wr_flags = i % 3 == 2 ? IBV_SEND_SIGNALED : 0;
        ibv_wr_rdma_write(e->x_a, e->mr->rkey, (uintptr_t)b + 28672 + i * 128);
        ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)a + 28672 + i * 128, 128);
    }
    CHECK(ibv_wr_complete(e->x_a) == 0, "ibv_wr_complete: 8 RDMA WRITEs in one region");
    n = poll_ex(e->cq_a, c, 1);
    CHECK(n == 1 && c[0].wr_id == 102, "ibv_start_poll: the first signaled (wr_id %llu)",
          (unsigned long long)c[0].wr_id);
    /* The rest through ibv_poll_cq: what ibv_start_poll took but did not hand out first. */
    n = 0;
    for (double end = now_s() + 2.0; n < 1 && now_s() < end;)
        n += ibv_poll_cq(ibv_cq_ex_to_cq(e->cq_a), 8, wc + n);
    CHECK(n == 1 && wc[0].wr_id == 105 && wc[0].status == IBV_WC_SUCCESS &&
              memcmp(a + 28672, b + 28672, 1024) == 0,
          "ibv_poll_cq on the extended CQ: wr_id %llu; the 8 writes arrived",
          (unsigned long long)wc[0].wr_id);

    memset(b + 28672, 0, 128);
    ibv_wr_start(e->x_a);
    e->x_a->wr_id = 120;
    e->x_a->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(e->x_a, e->mr->rkey, (uintptr_t)b + 28672);
    ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)a + 28672, 128);
    ibv_wr_abort(e->x_a);
    CHECK(poll_ex(e->cq_a, c, 1) == 0 && b[28672] == 0, "ibv_wr_abort: nothing posted");
}

/* A region that ibv_wr_complete must refuse whole: the remote bytes stay 0. */
static void expect_refused(struct env *e, struct ibv_qp_ex *x, int want, const char *what) {
    uint8_t *b = e->buf + kBufSize / 2 + 30720;
    struct comp c;
    int rc;
    b[0] = 0;
    errno = 0;
    rc = ibv_wr_complete(x);
    CHECK(rc == want && errno == want && poll_ex(e->cq_a, &c, 1) == 0 && b[0] == 0,
          "%s: ibv_wr_complete %d (%s), nothing posted", what, rc, strerror(rc));
}

static void check_wr_errors(struct env *e) {
    uint8_t *b = e->buf + kBufSize / 2 + 30720;
    uint8_t big[300] = {0};
    struct ibv_sge sges[3];
    struct ibv_qp *send_only = make_qp(e, IBV_QPT_RC, e->cq_a, IBV_QP_EX_WITH_SEND);
    struct ibv_qp_ex *xs = send_only ? ibv_qp_to_qp_ex(send_only) : NULL;
    CHECK(xs != NULL, "ibv_create_qp_ex with IBV_QP_EX_WITH_SEND only");
    if (xs != NULL) {
        ibv_wr_start(xs);
        xs->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_rdma_write(xs, e->mr->rkey, (uintptr_t)b);
        ibv_wr_set_sge(xs, e->mr->lkey, (uintptr_t)e->buf, 8);
        b[0] = 0;
        CHECK(ibv_wr_complete(xs) == EOPNOTSUPP, "RDMA WRITE on a QP created without it");
        ibv_destroy_qp(send_only);
    }
    for (int i = 0; i < 3; ++i)
        sges[i] = (struct ibv_sge){(uintptr_t)e->buf, 8, e->mr->lkey};
    memset(e->buf, 1, 8);
#define REGION(...)                                                                                \
    do {                                                                                           \
        ibv_wr_start(e->x_a);                                                                      \
        e->x_a->wr_id = 200;                                                                       \
        e->x_a->wr_flags = IBV_SEND_SIGNALED;                                                      \
        __VA_ARGS__;                                                                               \
    } while (0)
    REGION(ibv_wr_rdma_write(e->x_a, e->mr->rkey, (uintptr_t)b);
           ibv_wr_set_sge_list(e->x_a, 3, sges));
    expect_refused(e, e->x_a, EINVAL, "3 SGEs on a QP of 2");
    REGION(ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)e->buf, 8));
    expect_refused(e, e->x_a, EINVAL, "a setter before any builder");
    REGION(ibv_wr_rdma_write(e->x_a, e->mr->rkey, (uintptr_t)b);
           ibv_wr_set_inline_data(e->x_a, big, sizeof(big)));
    expect_refused(e, e->x_a, EINVAL, "300 B of inline data");
    REGION(ibv_wr_rdma_read(e->x_a, e->mr->rkey, (uintptr_t)b);
           ibv_wr_set_inline_data(e->x_a, big, 8));
    expect_refused(e, e->x_a, EINVAL, "inline data on an RDMA READ");
    REGION(ibv_wr_rdma_write(e->x_a, e->mr->rkey, (uintptr_t)b);
           ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)e->buf, 8);
           ibv_wr_atomic_fetch_add(e->x_a, e->mr->rkey, (uintptr_t)b + 3, 1);
           ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)e->buf + 64, 8));
    expect_refused(e, e->x_a, EINVAL, "a good WRITE, then an unaligned atomic");
    REGION(ibv_wr_rdma_write(e->x_a, e->mr->rkey, (uintptr_t)b);
           ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)e->buf, 8);
           ibv_wr_set_ud_addr(e->x_a, NULL, 1, 1));
    expect_refused(e, e->x_a, EINVAL, "ibv_wr_set_ud_addr on an RC QP");
    REGION(for (int i = 0; i <= kDepth; ++i) {
        ibv_wr_rdma_write(e->x_a, e->mr->rkey, (uintptr_t)b);
        ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)e->buf, 8);
    });
    expect_refused(e, e->x_a, ENOMEM, "a region of max_send_wr + 1 WRs");
    REGION(e->x_a->wr_flags = IBV_SEND_IP_CSUM;
           ibv_wr_rdma_write(e->x_a, e->mr->rkey, (uintptr_t)b);
           ibv_wr_set_sge(e->x_a, e->mr->lkey, (uintptr_t)e->buf, 8));
    expect_refused(e, e->x_a, EINVAL, "IBV_SEND_IP_CSUM");
#undef REGION
}

static void check_create_errors(struct env *e) {
    struct ibv_qp_init_attr ia;
    struct ibv_qp *plain;
    errno = 0;
    CHECK(make_qp(e, IBV_QPT_RC, e->cq_a, IBV_QP_EX_WITH_TSO) == NULL && errno == EOPNOTSUPP,
          "ibv_create_qp_ex RC with TSO: EOPNOTSUPP (errno %d)", errno);
    errno = 0;
    CHECK(make_qp(e, IBV_QPT_UD, e->cq_a, IBV_QP_EX_WITH_RDMA_WRITE) == NULL && errno == EOPNOTSUPP,
          "ibv_create_qp_ex UD with RDMA WRITE: EOPNOTSUPP (errno %d)", errno);
    errno = 0;
    CHECK(make_cq(e->ctx, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) == NULL && errno == EOPNOTSUPP,
          "ibv_create_cq_ex with completion timestamps: EOPNOTSUPP (errno %d)", errno);
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = ibv_cq_ex_to_cq(e->cq_a);
    ia.recv_cq = ibv_cq_ex_to_cq(e->cq_a);
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = 4;
    ia.cap.max_recv_wr = 4;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    plain = ibv_create_qp(e->pd, &ia);
    errno = 0;
    CHECK(plain != NULL && ibv_qp_to_qp_ex(plain) == NULL && errno == EINVAL,
          "ibv_qp_to_qp_ex of an ibv_create_qp QP: NULL (errno %d)", errno);
    if (plain)
        ibv_destroy_qp(plain);
}

static void check_ud(struct env *e) {
    uint8_t *b = e->buf + kBufSize / 2;
    struct ibv_cq_ex *cq = make_cq(e->ctx, IBV_WC_STANDARD_FLAGS);
    struct ibv_qp *u1 = cq ? make_qp(e, IBV_QPT_UD, cq, IBV_QP_EX_WITH_SEND) : NULL;
    struct ibv_qp *u2 = cq ? make_qp(e, IBV_QPT_UD, cq, IBV_QP_EX_WITH_SEND) : NULL;
    struct ibv_qp_ex *x = u1 ? ibv_qp_to_qp_ex(u1) : NULL;
    struct ibv_ah_attr aa;
    struct ibv_ah *ah;
    struct comp c[2];
    char msg[] = "a datagram through ibv_wr_set_ud_addr";
    int n;
    CHECK(x != NULL && u2 != NULL && to_rts(e, u1, 0) == 0 && to_rts(e, u2, 0) == 0,
          "two UD QPs from ibv_create_qp_ex in RTS");
    if (x == NULL || u2 == NULL)
        return;
    memset(&aa, 0, sizeof(aa));
    aa.is_global = 1;
    aa.grh.dgid = e->gid;
    aa.grh.sgid_index = kGid;
    aa.grh.hop_limit = 64;
    aa.port_num = 1;
    ah = ibv_create_ah(e->pd, &aa);
    CHECK(ah != NULL && post_recv(u2, 41, b + 32000 - 40, 40 + 512, e->mr->lkey) == 0,
          "address handle, receive posted on the second");
    ibv_wr_start(x);
    x->wr_id = 40;
    x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(x);
    ibv_wr_set_ud_addr(x, ah, u2->qp_num, 0x11111111);
    memcpy(e->buf + 32000, msg, sizeof(msg));
    ibv_wr_set_sge(x, e->mr->lkey, (uintptr_t)e->buf + 32000, sizeof(msg));
    CHECK(ibv_wr_complete(x) == 0, "ibv_wr_complete: UD SEND");
    n = poll_ex(cq, c, 2);
    CHECK(n == 2 && c[0].status == IBV_WC_SUCCESS && c[1].status == IBV_WC_SUCCESS &&
              strcmp((char *)b + 32000, msg) == 0,
          "UD SEND and its receive completed (%d): \"%s\"", n, (char *)b + 32000);
    ibv_wr_start(x);
    ibv_wr_send(x);
    ibv_wr_set_sge(x, e->mr->lkey, (uintptr_t)e->buf + 32000, 8);
    CHECK(ibv_wr_complete(x) == EINVAL, "a UD WR without ibv_wr_set_ud_addr: EINVAL");
    ibv_destroy_qp(u1);
    ibv_destroy_qp(u2);
    ibv_destroy_ah(ah);
    ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
}

int main(void) {
    struct env e;
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    const uint64_t wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM;
    memset(&e, 0, sizeof(e));
    if (list == NULL || n < 1 || (e.ctx = ibv_open_device(list[0])) == NULL) {
        printf("FAIL: no droce device\n");
        return 1;
    }
    e.pd = ibv_alloc_pd(e.ctx);
    e.buf = aligned_alloc(4096, kBufSize);
    e.mr = e.pd && e.buf ? ibv_reg_mr(e.pd, e.buf, kBufSize,
                                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
                         : NULL;
    e.cq_a = make_cq(e.ctx, wc_flags);
    e.cq_b = make_cq(e.ctx, wc_flags);
    CHECK(e.mr != NULL && e.cq_a != NULL && e.cq_b != NULL &&
              ibv_query_gid(e.ctx, 1, kGid, &e.gid) == 0,
          "PD, MR, two ibv_create_cq_ex CQs");
    if (e.mr == NULL || e.cq_a == NULL || e.cq_b == NULL)
        return 1;
    e.qp_a = make_qp(&e, IBV_QPT_RC, e.cq_a, kRcOps);
    e.qp_b = make_qp(&e, IBV_QPT_RC, e.cq_b, kRcOps);
    e.x_a = e.qp_a ? ibv_qp_to_qp_ex(e.qp_a) : NULL;
    CHECK(e.x_a != NULL && e.qp_b != NULL && ibv_qp_to_qp_ex(e.qp_b) != NULL,
          "two RC QPs from ibv_create_qp_ex, ibv_qp_to_qp_ex");
    if (e.x_a == NULL || e.qp_b == NULL)
        return 1;
    CHECK(to_rts(&e, e.qp_a, e.qp_b->qp_num) == 0 && to_rts(&e, e.qp_b, e.qp_a->qp_num) == 0,
          "connected to each other (GID %d of the one port)", kGid);
    check_write_send_read(&e);
    check_atomics(&e);
    check_regions(&e);
    check_wr_errors(&e);
    check_create_errors(&e);
    check_ud(&e);
    CHECK(ibv_destroy_qp(e.qp_a) == 0 && ibv_destroy_qp(e.qp_b) == 0 &&
              ibv_destroy_cq(ibv_cq_ex_to_cq(e.cq_a)) == 0 &&
              ibv_destroy_cq(ibv_cq_ex_to_cq(e.cq_b)) == 0 && ibv_dereg_mr(e.mr) == 0 &&
              ibv_dealloc_pd(e.pd) == 0 && ibv_close_device(e.ctx) == 0,
          "everything destroyed");
    ibv_free_device_list(list);
    free(e.buf);
    printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
