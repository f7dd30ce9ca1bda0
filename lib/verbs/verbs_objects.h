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

#include <atomic>
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
    Engine *engine;   /**< dev's engine (droce's librdmacm opens the device's CM on it) */
    uint32_t index;   /**< ibv_get_device_index */
    uint64_t guid_be; /**< node GUID, network order: EUI-64 of the MAC, as rxe makes it */
    /** Run at exit before the engine stops, by whichever thread tears it down: droce's
     * librdmacm stops its CM thread here. Threads that call exit() at once run the exit
     * handlers concurrently (glibc runs each once, not one after the other), so the
     * order of registration alone does not keep the CM from outliving the engine. */
    std::atomic<void (*)()> *before_teardown;
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

/* The objects that use a PD, CQ or SRQ hold it (users): while any is left, dealloc or
 * destroy fails with EBUSY and destroys nothing, as rdma-core's kernel refuses. Programs
 * rely on it: fio destroys its CQ before its QP, and its PD with its MRs registered. */
inline void hold(uint32_t &users) { __atomic_add_fetch(&users, 1, __ATOMIC_RELAXED); }
inline void release(uint32_t &users) { __atomic_sub_fetch(&users, 1, __ATOMIC_RELEASE); }
inline bool in_use(const uint32_t &users) { return __atomic_load_n(&users, __ATOMIC_ACQUIRE) != 0; }

struct Pd {
    ibv_pd pd;
    ProtectionDomain *dpd;
    uint32_t users; /**< MRs, QPs, SRQs and AHs on it */
};

struct Mr {
    ibv_mr mr;
    MemoryRegion *dmr;
};

/* droce's completion flags that ibv_wc has (same values); kWcSolicited is droce's own. */
inline constexpr unsigned kVerbsWcFlags = IBV_WC_GRH | IBV_WC_WITH_IMM | IBV_WC_WITH_INV;
static_assert(unsigned{kWcGrh} == IBV_WC_GRH && unsigned{kWcWithImm} == IBV_WC_WITH_IMM &&
              unsigned{kWcWithInv} == IBV_WC_WITH_INV &&
              (unsigned{kWcSolicited} & kVerbsWcFlags) == 0);

/* Completions droce's poll returns per call, into a stack array (ibv_poll_cq) or a CQ's
 * held completions (ibv_start_poll): stack space, not a limit. */
inline constexpr int kPollChunk = 16;

/** A CQ. ibv_create_cq_ex's is the same object: ibv_cq_ex begins with ibv_cq's fields
 * (ibv_cq_ex_to_cq is a cast), so one wrapper serves both. */
struct Cq {
    union {
        ibv_cq cq;
        ibv_cq_ex cqx; /**< function pointers set by ibv_create_cq_ex only */
    };
    CompletionQueue *dcq;
    uint32_t users; /**< QPs that complete into it (send and receive side each) */
    /* Completions ibv_start_poll/ibv_next_poll took from droce's CQ in one call:
     * held[held_pos..held_n) are not handed out yet and go first to the next poll of
     * either API; current is the one the ibv_wc_read_* functions read. */
    Wc held[kPollChunk];
    uint32_t held_pos;
    uint32_t held_n;
    const Wc *current;
    /* Events handed out (ibv_get_cq_event, ibv_get_async_event), counted under the live
     * registry's lock: ibv_destroy_cq waits until the application acked as many
     * (cq.comp_events_completed, cq.async_events_completed), as rdma-core does. */
    uint32_t comp_events_delivered;
    uint32_t async_events_delivered;
};

/** ibv_create_comp_channel's channel; channel.refcnt counts its CQs. */
struct Channel {
    ibv_comp_channel channel;
    CompletionChannel *dch;
};

struct Srq {
    ibv_srq srq;
    SharedReceiveQueue *dsrq;
    uint32_t users;    /**< QPs that receive from it */
    ibv_srq_attr attr; /**< what create returned (ibv_query_srq) */
};

struct Ah {
    ibv_ah ah;
    AddressHandle *dah;
};

/** The work requests one ibv_wr_start .. ibv_wr_complete region builds (verbs_wr.cpp):
 * droce SendWrs, posted in one call at ibv_wr_complete, nothing at ibv_wr_abort. The
 * arrays are the QP's (max_send_wr entries, allocated when the QP is created): a region
 * holds at most a send queue's worth, and building one allocates nothing. */
struct WrBatch {
    SendWr *wrs;                            /**< capacity entries */
    uint8_t (*inline_data)[kMaxInlineData]; /**< wrs[i]'s inline payload, copied at the setter */
    uint32_t capacity;
    uint32_t n; /**< WRs built since ibv_wr_start */
    int error;  /**< the first error a builder or setter found: complete posts nothing */
    uint32_t max_send_sge;
};

/** A QP. One made by ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS has its
 * ibv_qp_ex function pointers set and a WrBatch (ibv_qp_to_qp_ex answers for it). */
struct Qp {
    union {
        ibv_qp qp;
        ibv_qp_ex qpx; /**< qpx.qp_base is qp */
    };
    QueuePair *dqp;
    ibv_qp_cap cap; /**< what create returned (ibv_query_qp's init_attr) */
    int sq_sig_all;
    WrBatch batch;             /**< wrs == nullptr: no ibv_qp_ex */
    uint32_t events_delivered; /**< asynchronous events handed out (see Cq) */
};

/** The ops of every context (verbs.c's table of the real library plays this role). */
void fill_context_ops(verbs_context &vctx);

/** Data path (verbs_datapath.cpp): reached through context->ops by verbs.h's inlines. */
int post_send(ibv_qp *qp, ibv_send_wr *wr, ibv_send_wr **bad_wr);
int post_recv(ibv_qp *qp, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);
int poll_cq(ibv_cq *cq, int num_entries, ibv_wc *wc);
int post_srq_recv(ibv_srq *srq, ibv_recv_wr *wr, ibv_recv_wr **bad_wr);

/** ibv_wc from droce's Wc (verbs_datapath.cpp). */
void to_verbs_wc(const Wc &d, ibv_wc &w);

/** ibv_create_cq's and ibv_create_cq_ex's CQ, registered for exit (verbs_cq_qp.cpp);
 * nullptr with errno set. */
Cq *new_cq(ibv_context *context, uint32_t cqe, void *cq_context, ibv_comp_channel *channel);
/** ibv_create_qp's and ibv_create_qp_ex's QP (verbs_cq_qp.cpp); nullptr with errno set. */
Qp *new_qp(ibv_pd *pd, ibv_qp_init_attr &attr);

/** The extended verbs (verbs_wr.cpp, verbs_cq_ex.cpp), through verbs_context. */
ibv_qp *create_qp_ex(ibv_context *ctx, ibv_qp_init_attr_ex *attr);
ibv_cq_ex *create_cq_ex(ibv_context *ctx, ibv_cq_init_attr_ex *attr);
/** Sets the ibv_qp_ex function pointers (builders for the send_ops_flags given, which
 * the caller checked) and allocates the WrBatch; 0 or the errno. */
int enable_wr_api(Qp &q, uint64_t send_ops_flags);

/** An ibv_ah_attr as droce's address vector: false when it has no GRH (RoCE routes every
 * path by its GRH) (verbs_cq_qp.cpp). */
bool to_droce_ah(const ibv_ah_attr &in, AhAttr &out);

/** Queries through verbs_context (verbs_device.cpp). */
int query_port_ex(ibv_context *ctx, uint8_t port_num, ibv_port_attr *attr, size_t len);
int query_device_ex(ibv_context *ctx, const ibv_query_device_ex_input *input,
                    ibv_device_attr_ex *attr, size_t attr_size);

/** ibv_req_notify_cq (verbs_events.cpp). */
int req_notify_cq(ibv_cq *cq, int solicited_only);

/** Ops droce does not have yet: they fail with EOPNOTSUPP (verbs_unsupported.cpp). */
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
