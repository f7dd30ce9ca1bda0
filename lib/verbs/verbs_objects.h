/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The objects behind the pointers droce's libibverbs hands out. Each wraps the structure
 * <infiniband/verbs.h> defines as its first member (the application sees and may read
 * that structure: qp->qp_num, cq->cqe, mr->lkey, context->ops), and holds the droce object
 * that does the work. All are standard-layout, so the verbs pointer converts back with
 * outer_of(). Layouts come from the system header this library is compiled against;
 * nothing here repeats them. */
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <droce/droce.h>

namespace droce::verbs {

/** The wrapper whose first member m is (every wrapper below starts with its ibv struct). */
template <class Outer, class Member> Outer *outer_of(Member *m) {
    static_assert(std::is_standard_layout_v<Outer>);
    return reinterpret_cast<Outer *>(m);
}

/** One droce device as ibv_get_device_list lists it (lives as long as the process). */
struct DeviceEntry {
    ibv_device ibdev;
    Device *dev;      /**< the engine's; valid until the engine stops at exit */
    uint32_t index;   /**< ibv_get_device_index */
    uint64_t guid_be; /**< node GUID, network order: EUI-64 of the MAC, as rxe makes it */
};

/** ibv_open_device's context: a real struct verbs_context (the inline verbs of verbs.h
 * reach the extended ops through it), its ibv_context last as the header requires. */
struct Context {
    verbs_context vctx;
    DeviceEntry *entry;
};
static_assert(offsetof(Context, vctx) == 0);

inline Context *context_of(ibv_context *c) {
    return reinterpret_cast<Context *>(reinterpret_cast<uint8_t *>(c) -
                                       offsetof(verbs_context, context));
}

struct Pd {
    ibv_pd pd;
    ProtectionDomain *dpd;
};

struct Mr {
    ibv_mr mr;
    MemoryRegion *dmr;
};

struct Cq {
    ibv_cq cq;
    CompletionQueue *dcq;
};

struct Srq {
    ibv_srq srq;
    SharedReceiveQueue *dsrq;
    ibv_srq_attr attr; /**< what create returned (ibv_query_srq) */
};

struct Ah {
    ibv_ah ah;
    AddressHandle *dah;
};

struct Qp {
    ibv_qp qp;
    QueuePair *dqp;
    ibv_qp_cap cap; /**< what create returned (ibv_query_qp's init_attr) */
    int sq_sig_all;
};

/** The ops of every context (verbs.c's table of the real library plays this role). */
void fill_context_ops(verbs_context &vctx);

/** Data path (verbs_datapath.cpp): reached through context->ops by verbs.h's inlines. */
int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr);
int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);
int poll_cq(ibv_cq *cq, int num_entries, ibv_wc *wc);
int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);

/** An ibv_ah_attr as droce's address vector: false when it has no GRH (RoCE routes every
 * path by its GRH) (verbs_cq_qp.cpp). */
bool to_droce_ah(const ibv_ah_attr &in, AhAttr &out);

/** Queries through verbs_context (verbs_device.cpp). */
int query_port_ex(ibv_context *ctx, uint8_t port_num, ibv_port_attr *attr, size_t len);
int query_device_ex(ibv_context *ctx, const ibv_query_device_ex_input *input,
                    ibv_device_attr_ex *attr, size_t attr_size);

/** Ops droce does not have yet: they fail with EOPNOTSUPP (verbs_unsupported.cpp). */
int unsupported_req_notify_cq(ibv_cq *cq, int solicited_only);
ibv_mw *unsupported_alloc_mw(ibv_pd *pd, ibv_mw_type type);
int unsupported_dealloc_mw(ibv_mw *mw);
int unsupported_bind_mw(ibv_qp *qp, ibv_mw *mw, ibv_mw_bind *bind);

/** A droce Status as a verbs return: errno set, the code returned (never 0 on error). */
inline int status_errno(const Status &s) {
    const int e = s.is_ok() ? 0 : (s.code() != 0 ? s.code() : EIO);
    errno = e;
    return e;
}

} // namespace droce::verbs
