/* SPDX-License-Identifier: BSD-3-Clause */
/* Transport counters, named as mlx5 names them where mlx5 has one (rdma statistic
 * show / hw_counters), so that dashboards and habits carry over. One set per device;
 * QPs of a device share it (same worker, so no atomics). */
#pragma once

#include <cstdint>

namespace droce::rc {

#define DROCE_RC_COUNTERS(X)                                                                       \
    /* responder */                                                                                \
    X(out_of_sequence)          /* request PSN ahead of the expected one (gap) */                  \
    X(duplicate_request)        /* request PSN behind the expected one */                          \
    X(rnr_nak_sent)             /* SEND arrived with no receive posted */                          \
    X(resp_local_length_error)  /* SEND longer than the posted receive */                          \
    X(resp_remote_access_error) /* rkey/bounds/permission failure: NAK sent */                     \
    X(resp_invalid_request)     /* bad opcode sequence or length: NAK sent */                      \
    X(resp_op_not_allowed)      /* op the QP's access flags forbid: NAK invalid request sent */    \
    X(resp_invalidate_refused) /* SEND with Invalidate: no invalidatable keys, NAK inv. request */ \
    X(rx_read_requests)                                                                            \
    X(rx_atomic_requests)                                                                          \
    X(rx_write_requests)                                                                           \
    X(rx_send_requests)                                                                            \
    X(resp_straight) /* of those: SEND/WRITE ONLY run by the responder's straight path */          \
    X(resp_cqe_error)                                                                              \
    X(resp_busy_drop) /* new request while READ responses were queued: dropped, NAKed after */     \
    X(duplicate_ack_suppressed) /* duplicate not re-ACKed/replayed: one answered < interval ago */ \
    X(duplicate_read_suppressed) /* duplicate READ not re-served: served < interval ago */         \
    X(nak_seq_suppressed)        /* ahead PSN not NAKed: a sequence NAK left < interval ago */     \
    /* requester / completer */                                                                    \
    X(packet_seq_err)             /* NAK PSN sequence error received */                            \
    X(implied_nak_seq_err)        /* READ/atomic response implies earlier packets lost */          \
    X(local_ack_timeout_err)      /* retransmission timer expired */                               \
    X(rnr_nak_retry_err)          /* RNR NAK received */                                           \
    X(req_remote_access_errors)   /* NAK remote access error received */                           \
    X(req_remote_invalid_request) /* NAK invalid request received */                               \
    X(req_remote_operational_error)                                                                \
    X(req_cqe_error)                                                                               \
    X(req_local_prot_error) /* a started send WR's lkey failed: MR deregistered (LocProtErr) */    \
    X(retransmitted_packets)                                                                       \
    X(rx_duplicate_ack)       /* re-ACK of una-1: peer alive behind a backlog; timer restarted */  \
    X(rx_ghost_response)      /* ACK/response for nothing outstanding: dropped */                  \
    X(rx_unexpected_response) /* response out of order: dropped */                                 \
    /* both */                                                                                     \
    X(rx_qp_state_drop)  /* packet for a QP not in a state that takes it */                        \
    X(rx_pkey_violation) /* BTH P_Key does not match the QP's: dropped */                          \
    X(rx_drop_src_addr)  /* source/destination GID not the QP's path (rxe check_addr): dropped */  \
    X(rx_transport_drop) /* UC/RD/UD opcode for an RC QP: dropped (IBTA 9.6.1) */                  \
    /* DCQCN (lib/cc through rc_cc.cpp; mlx5 names where it has them) */                           \
    X(np_ecn_marked_roce_packets) /* CE-marked RoCE packets for a QP with DCQCN */                 \
    X(np_cnp_sent)                /* CNPs sent */                                                  \
    X(np_cnp_coalesced)           /* CE marks within min_time_between_cnps (or NP off): no CNP */  \
    X(np_cnp_tx_dropped) /* CNP the TX queue had no room for (the next CE mark sends one) */       \
    X(rp_cnp_handled)    /* CNPs that cut (or tried to cut) a QP's rate */                         \
    X(rp_cnp_ignored)    /* CNPs for a QP without DCQCN or with its RP off: dropped */             \
    X(rp_rate_cuts)      /* cuts that lowered a rate */                                            \
    X(rp_rate_increases) /* increase stages: fast recovery, additive and hyper together */         \
    X(paced_defers)      /* a data packet held back by its QP's pacer (woken by a timer) */        \
    X(tx_blocked)        /* transmit() refused: retried later */                                   \
    X(ack_dropped)       /* ACK/NAK could not be sent and was not worth keeping */                 \
    X(cq_overflow)                                                                                 \
    X(rx_bytes_copied) /* payload bytes copied into MRs / receive buffers (the one RX copy) */

struct Counters {
#define DROCE_RC_FIELD(n) uint64_t n = 0;
    DROCE_RC_COUNTERS(DROCE_RC_FIELD)
#undef DROCE_RC_FIELD

    /** Calls f(name, value) for each counter. */
    template <class F> void for_each(F &&f) const {
#define DROCE_RC_VISIT(n) f(#n, n);
        DROCE_RC_COUNTERS(DROCE_RC_VISIT)
#undef DROCE_RC_VISIT
    }
};

} // namespace droce::rc
