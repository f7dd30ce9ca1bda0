/* SPDX-License-Identifier: BSD-3-Clause */
/* The extended verbs on droce, as a verbs program of droce's own uses them (built against
 * the system's <infiniband/verbs.h>, linked against the system's libibverbs, run under
 * droce-run): QPs from ibv_create_qp_ex posted to with the ibv_wr_* API, CQs from
 * ibv_create_cq_ex polled with ibv_start_poll / ibv_next_poll / ibv_wc_read_*. Two
 * processes, "server" and "client", each with an RC and a UD QP; they swap their QPNs,
 * GIDs, rkeys and buffer addresses through files in a directory both are given. The
 * client posts: RDMA WRITE, inline SEND, SEND with immediate from an SGE list, RDMA READ,
 * both atomics, a region of several WRs, ibv_wr_abort, a UD SEND, and the errors
 * ibv_wr_complete and the create verbs report; it checks the server's memory with RDMA
 * READs. The server polls its receives with ibv_start_poll and writes what
 * ibv_wc_read_* gave into a report in its registered buffer, which the client reads.
 * Each check prints "ok" or "FAIL" with what it saw.
 * Usage: verbs_wr_test server|client DIR */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

enum { kBufSize = 65536, kDepth = 32, kGid = 1 };

/* Offsets in either side's registered buffer. Server: what the client writes, reads and
 * sends to; the report of its receives; the flag that ends it. Client: sources and
 * read-back areas. */
enum {
    kWriteOff = 0,      /* 4096 B RDMA WRITE target (client: its source) */
    kRecv1Off = 8192,   /* server: receive 21 (inline SEND) */
    kRecv2Off = 12288,  /* server: receive 22 (SEND with immediate) */
    kReadOff = 16384,   /* server: 2048 B the client reads */
    kReadDst = 20480,   /* client: where they land */
    kAtomicOff = 24576, /* server: the 64-bit target; client: the old value */
    kRegionOff = 28672, /* 1 KiB: 8 RDMA WRITEs of one region */
    kUdOff = 32000,     /* server: a UD receive's payload (its GRH 40 B before) */
    kZeroOff = 36864,   /* client: 128 zero bytes (the aborted WRITE's source) */
    kBackOff = 40960,   /* client: read-back area */
    kReportOff = 57344, /* server: count, then kMaxReports struct report */
    kDoneOff = 61440,   /* server: set to 1 by the client at the end */
    kMaxReports = 8,
};

/* A receive completion as the server's ibv_wc_read_* gave it. */
struct report {
    uint64_t wr_id;
    uint32_t status, opcode, byte_len, qp_num, imm, wc_flags;
};

/* Every RC operation droce has. */
static const uint64_t kRcOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                               IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                               IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                               IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;

/* What each side tells the other. */
struct info {
    unsigned rc_qpn, ud_qpn, rkey;
    unsigned long long addr;
    union ibv_gid gid;
};

struct env {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_mr *mr;
    uint8_t *buf;
    struct ibv_cq_ex *cq, *ud_cq;
    struct ibv_qp *qp, *ud;
    struct ibv_qp_ex *x;
    struct info me, peer;
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

/* Up to max completions within secs, through ibv_start_poll / ibv_next_poll; how many. */
static int poll_ex(struct ibv_cq_ex *cq, struct comp *out, int max, double secs) {
    struct ibv_poll_cq_attr attr = {0};
    int n = 0;
    double end = now_s() + secs;
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
    return poll_ex(cq, c, 1, 5.0) == 1 && c->status == IBV_WC_SUCCESS && c->wr_id == wr_id &&
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

static int to_rts(struct ibv_qp *qp, uint32_t dest_qpn, const union ibv_gid *dgid) {
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
        a.ah_attr.grh.dgid = *dgid;
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

/* The swap of struct info through DIR/ROLE (written whole, then renamed). */
static int publish(const char *dir, const char *role, const struct info *i) {
    char tmp[512], path[512];
    FILE *f;
    snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, role);
    snprintf(path, sizeof(path), "%s/%s", dir, role);
    f = fopen(tmp, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "%u %u %u %llu", i->rc_qpn, i->ud_qpn, i->rkey, i->addr);
    for (int k = 0; k < 16; ++k)
        fprintf(f, " %u", i->gid.raw[k]);
    fprintf(f, "\n");
    fclose(f);
    return rename(tmp, path);
}

static int fetch(const char *dir, const char *role, struct info *i) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, role);
    for (double end = now_s() + 30.0; now_s() < end; usleep(20000)) {
        FILE *f = fopen(path, "r");
        int n;
        unsigned g;
        if (f == NULL)
            continue;
        n = fscanf(f, "%u %u %u %llu", &i->rc_qpn, &i->ud_qpn, &i->rkey, &i->addr);
        for (int k = 0; k < 16 && n == 4; ++k) {
            if (fscanf(f, "%u", &g) != 1)
                n = -1;
            i->gid.raw[k] = (uint8_t)g;
        }
        fclose(f);
        return n == 4 ? 0 : -1;
    }
    return -1;
}

/* Builds and posts one signaled WR through the ibv_wr_* API and waits for it. */
static int remote_io(struct env *e, int read, uint64_t local_off, uint64_t remote_off,
                     uint32_t len) {
    struct comp c;
    ibv_wr_start(e->x);
    e->x->wr_id = 900;
    e->x->wr_flags = IBV_SEND_SIGNALED;
    if (read)
        ibv_wr_rdma_read(e->x, e->peer.rkey, e->peer.addr + remote_off);
    else
        ibv_wr_rdma_write(e->x, e->peer.rkey, e->peer.addr + remote_off);
    ibv_wr_set_sge(e->x, e->mr->lkey, (uintptr_t)e->buf + local_off, len);
    return ibv_wr_complete(e->x) == 0 &&
           one_ok(e->cq, 900, read ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE, &c);
}

static void check_write_send_read(struct env *e) {
    uint8_t *a = e->buf;
    uint64_t r = e->peer.addr;
    uint32_t lkey = e->mr->lkey, rkey = e->peer.rkey;
    struct comp c;
    char msg[48];
    struct ibv_sge two[2] = {{(uintptr_t)a, 100, lkey}, {(uintptr_t)a + 1000, 28, lkey}};

    for (int i = 0; i < 4096; ++i)
        a[i] = (uint8_t)(i * 7 + 1);
    ibv_wr_start(e->x);
    e->x->wr_id = 11;
    e->x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(e->x, rkey, r + kWriteOff);
    ibv_wr_set_sge(e->x, lkey, (uintptr_t)a, 4096);
    CHECK(ibv_wr_complete(e->x) == 0, "ibv_wr_complete: RDMA WRITE 4096 B");
    CHECK(one_ok(e->cq, 11, IBV_WC_RDMA_WRITE, &c), "RDMA WRITE completed (wr_id %llu)",
          (unsigned long long)c.wr_id);
    CHECK(remote_io(e, 1, kBackOff, kWriteOff, 4096) && memcmp(a + kBackOff, a, 4096) == 0,
          "read back: the bytes arrived");

    /* Inline SEND: the buffer changes after the setter, before ibv_wr_complete. */
    snprintf(msg, sizeof(msg), "inline through ibv_wr_set_inline_data");
    ibv_wr_start(e->x);
    e->x->wr_id = 12;
    e->x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    ibv_wr_send(e->x);
    ibv_wr_set_inline_data(e->x, msg, sizeof(msg));
    memset(msg, 'X', sizeof(msg));
    CHECK(ibv_wr_complete(e->x) == 0, "ibv_wr_complete: inline SEND");
    CHECK(one_ok(e->cq, 12, IBV_WC_SEND, &c), "inline SEND completed");

    ibv_wr_start(e->x);
    e->x->wr_id = 13;
    e->x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send_imm(e->x, htonl(0xabcd1234));
    ibv_wr_set_sge_list(e->x, 2, two);
    CHECK(ibv_wr_complete(e->x) == 0, "ibv_wr_complete: SEND with immediate, 2 SGEs");
    CHECK(one_ok(e->cq, 13, IBV_WC_SEND, &c), "SEND with immediate completed");

    /* RDMA READ of the server's pattern. */
    ibv_wr_start(e->x);
    e->x->wr_id = 14;
    e->x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_read(e->x, rkey, r + kReadOff);
    ibv_wr_set_sge(e->x, lkey, (uintptr_t)a + kReadDst, 2048);
    CHECK(ibv_wr_complete(e->x) == 0, "ibv_wr_complete: RDMA READ 2048 B");
    int done = one_ok(e->cq, 14, IBV_WC_RDMA_READ, &c), same = 1;
    for (int i = 0; i < 2048; ++i)
        same &= a[kReadDst + i] == (uint8_t)(i ^ 0x5a);
    CHECK(done && c.byte_len == 2048 && same, "RDMA READ completed with %u B, the server's bytes",
          c.byte_len);
}

static void check_atomics(struct env *e) {
    uint64_t *old = (uint64_t *)(e->buf + kAtomicOff);
    uint64_t target = e->peer.addr + kAtomicOff;
    struct comp c;
    ibv_wr_start(e->x);
    e->x->wr_id = 31;
    e->x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_atomic_fetch_add(e->x, e->peer.rkey, target, 2);
    ibv_wr_set_sge(e->x, e->mr->lkey, (uintptr_t)old, 8);
    CHECK(ibv_wr_complete(e->x) == 0, "ibv_wr_complete: fetch and add");
    CHECK(one_ok(e->cq, 31, IBV_WC_FETCH_ADD, &c) && *old == 40, "fetch and add of 2: old %llu",
          (unsigned long long)*old);
    ibv_wr_start(e->x);
    e->x->wr_id = 32;
    e->x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_atomic_cmp_swp(e->x, e->peer.rkey, target, 42, 7);
    ibv_wr_set_sge(e->x, e->mr->lkey, (uintptr_t)old, 8);
    CHECK(ibv_wr_complete(e->x) == 0, "ibv_wr_complete: compare and swap");
    CHECK(one_ok(e->cq, 32, IBV_WC_COMP_SWAP, &c) && *old == 42, "compare 42 and swap 7: old %llu",
          (unsigned long long)*old);
    CHECK(remote_io(e, 1, kBackOff, kAtomicOff, 8) && *(uint64_t *)(e->buf + kBackOff) == 7,
          "read back: the target is 7");
}

/* Several WRs in one region, a region aborted, completions split between the two poll
 * APIs. */
static void check_regions(struct env *e) {
    uint8_t *a = e->buf;
    struct comp c[8];
    struct ibv_wc wc[8];
    int n;
    for (int i = 0; i < 1024; ++i)
        a[kRegionOff + i] = (uint8_t)(i * 13);
    ibv_wr_start(e->x);
    for (int i = 0; i < 8; ++i) {
        e->x->wr_id = 100 + i;
        e->x->wr_flags = i % 3 == 2 ? IBV_SEND_SIGNALED : 0;
        ibv_wr_rdma_write(e->x, e->peer.rkey, e->peer.addr + kRegionOff + i * 128);
        ibv_wr_set_sge(e->x, e->mr->lkey, (uintptr_t)a + kRegionOff + i * 128, 128);
    }
    CHECK(ibv_wr_complete(e->x) == 0, "ibv_wr_complete: 8 RDMA WRITEs in one region");
    memset(c, 0, sizeof(c));
    n = poll_ex(e->cq, c, 1, 5.0);
    CHECK(n == 1 && c[0].wr_id == 102, "ibv_start_poll: the first signaled (wr_id %llu)",
          (unsigned long long)c[0].wr_id);
    /* The other through ibv_poll_cq: what ibv_start_poll took but did not hand out first. */
    n = 0;
    for (double end = now_s() + 5.0; n < 1 && now_s() < end;)
        n += ibv_poll_cq(ibv_cq_ex_to_cq(e->cq), 8, wc + n);
    CHECK(n == 1 && wc[0].wr_id == 105 && wc[0].status == IBV_WC_SUCCESS,
          "ibv_poll_cq on the extended CQ: wr_id %llu", (unsigned long long)wc[0].wr_id);
    CHECK(remote_io(e, 1, kBackOff, kRegionOff, 1024) &&
              memcmp(a + kBackOff, a + kRegionOff, 1024) == 0,
          "read back: the 8 writes arrived");

    memset(a + kZeroOff, 0, 128);
    ibv_wr_start(e->x);
    e->x->wr_id = 120;
    e->x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(e->x, e->peer.rkey, e->peer.addr + kRegionOff);
    ibv_wr_set_sge(e->x, e->mr->lkey, (uintptr_t)a + kZeroOff, 128);
    ibv_wr_abort(e->x);
    CHECK(poll_ex(e->cq, c, 1, 0.3) == 0 && remote_io(e, 1, kBackOff, kRegionOff, 128) &&
              memcmp(a + kBackOff, a + kRegionOff, 128) == 0,
          "ibv_wr_abort: nothing posted, the remote bytes unchanged");
}

/* A region that ibv_wr_complete must refuse whole: no completion of its signaled WRs. */
static void expect_refused(struct env *e, int want, const char *what) {
    struct comp c;
    int rc;
    errno = 0;
    rc = ibv_wr_complete(e->x);
    CHECK(rc == want && errno == want && poll_ex(e->cq, &c, 1, 0.2) == 0,
          "%s: ibv_wr_complete %d (%s), nothing posted", what, rc, strerror(rc));
}

static void check_wr_errors(struct env *e) {
    uint64_t b = e->peer.addr + kRegionOff;
    uint32_t rkey = e->peer.rkey, lkey = e->mr->lkey;
    uintptr_t src = (uintptr_t)e->buf + kZeroOff;
    uint8_t big[300] = {0};
    struct ibv_sge sges[3];
    struct ibv_qp *send_only = make_qp(e, IBV_QPT_RC, e->cq, IBV_QP_EX_WITH_SEND);
    struct ibv_qp_ex *xs = send_only ? ibv_qp_to_qp_ex(send_only) : NULL;
    CHECK(xs != NULL, "ibv_create_qp_ex with IBV_QP_EX_WITH_SEND only");
    if (xs != NULL) {
        ibv_wr_start(xs);
        xs->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_rdma_write(xs, rkey, b);
        ibv_wr_set_sge(xs, lkey, src, 8);
        CHECK(ibv_wr_complete(xs) == EOPNOTSUPP,
              "RDMA WRITE on a QP created without it: EOPNOTSUPP");
        ibv_destroy_qp(send_only);
    }
    for (int i = 0; i < 3; ++i)
        sges[i] = (struct ibv_sge){src, 8, lkey};
#define REGION(...)                                                                                \
    do {                                                                                           \
        ibv_wr_start(e->x);                                                                        \
        e->x->wr_id = 200;                                                                         \
        e->x->wr_flags = IBV_SEND_SIGNALED;                                                        \
        __VA_ARGS__;                                                                               \
    } while (0)
    REGION(ibv_wr_rdma_write(e->x, rkey, b); ibv_wr_set_sge_list(e->x, 3, sges));
    expect_refused(e, EINVAL, "3 SGEs on a QP of 2");
    REGION(ibv_wr_set_sge(e->x, lkey, src, 8));
    expect_refused(e, EINVAL, "a setter before any builder");
    REGION(ibv_wr_rdma_write(e->x, rkey, b); ibv_wr_set_inline_data(e->x, big, sizeof(big)));
    expect_refused(e, EINVAL, "300 B of inline data");
    REGION(ibv_wr_rdma_read(e->x, rkey, b); ibv_wr_set_inline_data(e->x, big, 8));
    expect_refused(e, EINVAL, "inline data on an RDMA READ");
    REGION(ibv_wr_rdma_write(e->x, rkey, b); ibv_wr_set_sge(e->x, lkey, src, 8);
           ibv_wr_atomic_fetch_add(e->x, rkey, b + 3, 1); ibv_wr_set_sge(e->x, lkey, src + 64, 8));
    expect_refused(e, EINVAL, "a good WRITE, then an unaligned atomic");
    REGION(ibv_wr_rdma_write(e->x, rkey, b); ibv_wr_set_sge(e->x, lkey, src, 8);
           ibv_wr_set_ud_addr(e->x, NULL, 1, 1));
    expect_refused(e, EINVAL, "ibv_wr_set_ud_addr on an RC QP");
    REGION(for (int i = 0; i <= kDepth; ++i) {
        ibv_wr_rdma_write(e->x, rkey, b);
        ibv_wr_set_sge(e->x, lkey, src, 8);
    });
    expect_refused(e, ENOMEM, "a region of max_send_wr + 1 WRs");
    REGION(e->x->wr_flags = IBV_SEND_IP_CSUM; ibv_wr_rdma_write(e->x, rkey, b);
           ibv_wr_set_sge(e->x, lkey, src, 8));
    expect_refused(e, EINVAL, "IBV_SEND_IP_CSUM");
#undef REGION
}

static void check_create_errors(struct env *e) {
    struct ibv_qp_init_attr ia;
    struct ibv_qp *plain;
    errno = 0;
    CHECK(make_qp(e, IBV_QPT_RC, e->cq, IBV_QP_EX_WITH_TSO) == NULL && errno == EOPNOTSUPP,
          "ibv_create_qp_ex RC with TSO: EOPNOTSUPP (errno %d)", errno);
    errno = 0;
    CHECK(make_qp(e, IBV_QPT_UD, e->cq, IBV_QP_EX_WITH_RDMA_WRITE) == NULL && errno == EOPNOTSUPP,
          "ibv_create_qp_ex UD with RDMA WRITE: EOPNOTSUPP (errno %d)", errno);
    errno = 0;
    CHECK(make_cq(e->ctx, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) == NULL && errno == EOPNOTSUPP,
          "ibv_create_cq_ex with completion timestamps: EOPNOTSUPP (errno %d)", errno);
    memset(&ia, 0, sizeof(ia));
    ia.send_cq = ibv_cq_ex_to_cq(e->cq);
    ia.recv_cq = ibv_cq_ex_to_cq(e->cq);
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

static const char kUdMsg[] = "a datagram through ibv_wr_set_ud_addr";

static void check_ud(struct env *e) {
    struct ibv_qp_ex *x = ibv_qp_to_qp_ex(e->ud);
    struct ibv_ah_attr aa;
    struct ibv_ah *ah;
    struct comp c;
    memset(&aa, 0, sizeof(aa));
    aa.is_global = 1;
    aa.grh.dgid = e->peer.gid;
    aa.grh.sgid_index = kGid;
    aa.grh.hop_limit = 64;
    aa.port_num = 1;
    ah = ibv_create_ah(e->pd, &aa);
    CHECK(x != NULL && ah != NULL, "UD: ibv_qp_to_qp_ex, an address handle to the server");
    if (x == NULL || ah == NULL)
        return;
    memcpy(e->buf + kUdOff, kUdMsg, sizeof(kUdMsg));
    ibv_wr_start(x);
    x->wr_id = 40;
    x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send(x);
    ibv_wr_set_ud_addr(x, ah, e->peer.ud_qpn, 0x11111111);
    ibv_wr_set_sge(x, e->mr->lkey, (uintptr_t)e->buf + kUdOff, sizeof(kUdMsg));
    CHECK(ibv_wr_complete(x) == 0, "ibv_wr_complete: UD SEND");
    CHECK(one_ok(e->ud_cq, 40, IBV_WC_SEND, &c), "UD SEND completed");
    ibv_wr_start(x);
    ibv_wr_send(x);
    ibv_wr_set_sge(x, e->mr->lkey, (uintptr_t)e->buf + kUdOff, 8);
    CHECK(ibv_wr_complete(x) == EINVAL, "a UD WR without ibv_wr_set_ud_addr: EINVAL");
    ibv_destroy_ah(ah);
}

static const struct report *find_report(const uint8_t *rep, uint64_t wr_id) {
    uint64_t n = *(const uint64_t *)rep;
    const struct report *r = (const struct report *)(rep + 8);
    for (uint64_t i = 0; i < n && i < kMaxReports; ++i)
        if (r[i].wr_id == wr_id && r[i].status == IBV_WC_SUCCESS)
            return &r[i];
    return NULL;
}

/* The server's receives, as its ibv_wc_read_* reported them, and their payloads. */
static void check_server_side(struct env *e) {
    const uint8_t *rep = e->buf + kBackOff;
    const struct report *r1 = NULL, *r2 = NULL, *r3 = NULL;
    const size_t rep_len = 8 + kMaxReports * sizeof(struct report);
    for (double end = now_s() + 5.0; now_s() < end && !(r1 && r2 && r3);) {
        if (!remote_io(e, 1, kBackOff, kReportOff, rep_len))
            break;
        r1 = find_report(rep, 21);
        r2 = find_report(rep, 22);
        r3 = find_report(rep, 41);
    }
    CHECK(r1 && r1->opcode == IBV_WC_RECV && r1->byte_len == 48 && r1->qp_num == e->peer.rc_qpn,
          "server: receive 21 of %u B on QP 0x%x", r1 ? r1->byte_len : 0, r1 ? r1->qp_num : 0);
    CHECK(r2 && r2->byte_len == 128 && (r2->wc_flags & IBV_WC_WITH_IMM) && r2->imm == 0xabcd1234,
          "server: receive 22 of %u B, immediate 0x%x (wc_flags 0x%x)", r2 ? r2->byte_len : 0,
          r2 ? r2->imm : 0, r2 ? r2->wc_flags : 0);
    CHECK(r3 && r3->byte_len == 40 + sizeof(kUdMsg) && (r3->wc_flags & IBV_WC_GRH) &&
              r3->qp_num == e->peer.ud_qpn,
          "server: UD receive 41 of %u B with its GRH", r3 ? r3->byte_len : 0);
    CHECK(remote_io(e, 1, kBackOff, kRecv1Off, 48) &&
              strcmp((char *)e->buf + kBackOff, "inline through ibv_wr_set_inline_data") == 0,
          "server's receive 21 holds \"%s\" (copied at the setter)", (char *)e->buf + kBackOff);
    CHECK(remote_io(e, 1, kBackOff, kRecv2Off, 128) &&
              memcmp(e->buf + kBackOff, e->buf, 100) == 0 &&
              memcmp(e->buf + kBackOff + 100, e->buf + 1000, 28) == 0,
          "server's receive 22 holds the two SGEs in order");
    CHECK(remote_io(e, 1, kBackOff, kUdOff, sizeof(kUdMsg)) &&
              strcmp((char *)e->buf + kBackOff, kUdMsg) == 0,
          "server's UD receive holds \"%s\"", (char *)e->buf + kBackOff);
}

static int setup(struct env *e) {
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    const uint64_t wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM;
    if (list == NULL || n < 1 || (e->ctx = ibv_open_device(list[0])) == NULL) {
        printf("FAIL: no droce device\n");
        return -1;
    }
    ibv_free_device_list(list);
    e->pd = ibv_alloc_pd(e->ctx);
    e->buf = aligned_alloc(4096, kBufSize);
    if (e->buf != NULL)
        memset(e->buf, 0, kBufSize);
    e->mr = e->pd && e->buf ? ibv_reg_mr(e->pd, e->buf, kBufSize,
                                         IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                             IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
                            : NULL;
    e->cq = make_cq(e->ctx, wc_flags);
    e->ud_cq = make_cq(e->ctx, IBV_WC_STANDARD_FLAGS);
    CHECK(e->mr != NULL && e->cq != NULL && e->ud_cq != NULL &&
              ibv_query_gid(e->ctx, 1, kGid, &e->me.gid) == 0,
          "PD, MR, two ibv_create_cq_ex CQs");
    if (e->mr == NULL || e->cq == NULL || e->ud_cq == NULL)
        return -1;
    e->qp = make_qp(e, IBV_QPT_RC, e->cq, kRcOps);
    e->ud = make_qp(e, IBV_QPT_UD, e->ud_cq, IBV_QP_EX_WITH_SEND);
    e->x = e->qp ? ibv_qp_to_qp_ex(e->qp) : NULL;
    CHECK(e->x != NULL && e->ud != NULL, "RC and UD QPs from ibv_create_qp_ex, ibv_qp_to_qp_ex");
    if (e->x == NULL || e->ud == NULL)
        return -1;
    e->me.rc_qpn = e->qp->qp_num;
    e->me.ud_qpn = e->ud->qp_num;
    e->me.rkey = e->mr->rkey;
    e->me.addr = (uintptr_t)e->buf;
    return 0;
}

static int connect_to(struct env *e, const char *dir, const char *me, const char *peer) {
    int ok = publish(dir, me, &e->me) == 0 && fetch(dir, peer, &e->peer) == 0;
    CHECK(ok, "QPNs, GIDs, rkeys swapped with the %s", peer);
    if (!ok)
        return -1;
    ok = to_rts(e->qp, e->peer.rc_qpn, &e->peer.gid) == 0 && to_rts(e->ud, 0, NULL) == 0;
    CHECK(ok, "RC QP connected to the %s's (QPN 0x%x), UD QP in RTS", peer, e->peer.rc_qpn);
    return ok ? 0 : -1;
}

/* The server: targets ready, receives posted, then its receives reported until the
 * client sets the done flag. */
static void serve(struct env *e) {
    volatile uint64_t *done = (volatile uint64_t *)(e->buf + kDoneOff);
    uint64_t *count = (uint64_t *)(e->buf + kReportOff);
    struct report *rep = (struct report *)(e->buf + kReportOff + 8);
    struct ibv_cq_ex *cqs[2] = {e->cq, e->ud_cq};
    struct comp c;
    double end = now_s() + 40.0;
    while (*done != 1 && now_s() < end) {
        for (int k = 0; k < 2; ++k) {
            if (poll_ex(cqs[k], &c, 1, 0.001) != 1)
                continue;
            if (*count < kMaxReports)
                rep[*count] = (struct report){c.wr_id,  c.status, c.opcode,  c.byte_len,
                                              c.qp_num, c.imm,    c.wc_flags};
            ++*count;
        }
    }
    CHECK(*done == 1, "the client finished; %llu receive(s) reported", (unsigned long long)*count);
}

int main(int argc, char **argv) {
    struct env e;
    int server;
    memset(&e, 0, sizeof(e));
    if (argc != 3 || (strcmp(argv[1], "server") != 0 && strcmp(argv[1], "client") != 0)) {
        fprintf(stderr, "usage: %s server|client DIR\n", argv[0]);
        return 2;
    }
    server = strcmp(argv[1], "server") == 0;
    if (setup(&e) != 0)
        return 1;
    if (server) {
        for (int i = 0; i < 2048; ++i)
            e.buf[kReadOff + i] = (uint8_t)(i ^ 0x5a);
        *(uint64_t *)(e.buf + kAtomicOff) = 40;
        CHECK(post_recv(e.qp, 21, e.buf + kRecv1Off, 256, e.mr->lkey) == 0 &&
                  post_recv(e.qp, 22, e.buf + kRecv2Off, 256, e.mr->lkey) == 0 &&
                  post_recv(e.ud, 41, e.buf + kUdOff - 40, 40 + 512, e.mr->lkey) == 0,
              "receives posted");
        if (connect_to(&e, argv[2], "server", "client") != 0)
            return 1;
        serve(&e);
    } else {
        if (connect_to(&e, argv[2], "client", "server") != 0)
            return 1;
        check_write_send_read(&e);
        check_atomics(&e);
        check_regions(&e);
        check_wr_errors(&e);
        check_create_errors(&e);
        check_ud(&e);
        check_server_side(&e);
        *(uint64_t *)(e.buf + kZeroOff) = 1;
        CHECK(remote_io(&e, 0, kZeroOff, kDoneOff, 8), "done flag written");
    }
    CHECK(ibv_destroy_qp(e.qp) == 0 && ibv_destroy_qp(e.ud) == 0 &&
              ibv_destroy_cq(ibv_cq_ex_to_cq(e.cq)) == 0 &&
              ibv_destroy_cq(ibv_cq_ex_to_cq(e.ud_cq)) == 0 && ibv_dereg_mr(e.mr) == 0 &&
              ibv_dealloc_pd(e.pd) == 0 && ibv_close_device(e.ctx) == 0,
          "everything destroyed");
    free(e.buf);
    printf("%d failure(s)\n", failures);
    return failures == 0 ? 0 : 1;
}
