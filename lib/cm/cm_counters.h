/* SPDX-License-Identifier: BSD-3-Clause */
/* The CM's counters: every MAD received, sent, resent or dropped (with why), and every
 * state change with its reason. One flat array indexed by CmCtr so that the glue can dump
 * them by name without knowing the list. */
#pragma once

#include <cstddef>
#include <cstdint>

namespace droce::cm {

#define DROCE_CM_COUNTERS(X)                                                                                                                                                                                                                           \
    /* received, by attribute (after the codec accepted the MAD) */                                                                                                                                                                                    \
    X(rx_mad)                                                                                                                                                                                                                                          \
    X(rx_req) X(rx_mra) X(rx_rej) X(rx_rep) X(rx_rtu) X(rx_dreq)                                                                                                                                                                                       \
        X(rx_drep) /* sent for the first time, by attribute */                                                                                                                                                                                         \
        X(tx_req) X(tx_mra) X(tx_rej) X(tx_rep) X(tx_rtu) X(tx_dreq) X(tx_drep) X(                                                                                                                                                                     \
            tx_failed) /* the sink refused a MAD (the retry timer covers it) */ /* sent again: on                                                                                                                                                      \
                                                                                   a timeout (req,                                                                                                                                                     \
                                                                                   rep, dreq) or                                                                                                                                                       \
                                                                                   answering a                                                                                                                                                         \
                                                                                   duplicate */                                                                                                                                                        \
        X(resend_req) X(resend_rep) X(resend_rtu) X(resend_mra) X(resend_dreq) X(resend_drep)                                                                                                                                                          \
            X(resend_rej) /* dropped by the codec (one per MadError) */                                                                                                                                                                                \
        X(drop_bad_length) X(drop_bad_base_version) X(                                                                                                                                                                                                 \
            drop_not_cm_class) X(drop_bad_class_version) X(drop_bad_method) X(drop_unknown_attribute) /* dropped by the state machine: _unknown no such connection, _state a state that does */ /* not take it (a late duplicate, or a hostile one) */ \
        X(drop_req_dup) X(drop_req_no_listener) X(drop_req_bad_transport) X(drop_req_stale) X(drop_req_path_gid)                                                                                                                                                            \
            X(drop_req_no_resources) X(drop_rep_unknown) X(drop_rep_state) X(drop_rtu_unknown)                                                                                                                                                         \
                X(drop_rtu_state) X(drop_mra_unknown) X(drop_mra_state) X(drop_rej_unknown)                                                                                                                                                            \
                    X(drop_rej_state) X(drop_dreq_unknown) X(drop_dreq_state) X(drop_drep_unknown)                                                                                                                                                     \
                        X(drop_drep_state) /* state changes and their reasons */                                                                                                                                                                       \
        X(st_req_sent) X(st_req_rcvd) X(st_mra_req_rcvd) X(st_mra_req_sent) X(st_rep_sent)                                                                                                                                                             \
            X(st_mra_rep_rcvd) X(est_active) X(est_passive) X(est_comm_est) X(rej_rcvd)                                                                                                                                                                \
                X(rej_sent_consumer) X(rej_sent_invalid_service_id) X(rej_sent_stale_conn)                                                                                                                                                             \
                    X(rej_sent_timeout) X(rej_sent_invalid_comm_id) X(rej_sent_no_resources)                                                                                                                                                           \
                        X(rej_sent_invalid_transport) X(rej_sent_invalid_gid) X(timeout_req) X(timeout_rep)                                                                                                                                                                    \
                            X(timeout_dreq) X(disc_local) X(disc_remote) X(timewait_enter)                                                                                                                                                             \
                                X(timewait_exit) /* API calls refused (wrong state, bad handle,                                                                                                                                                        \
                                                    bad argument) */                                                                                                                                                                                   \
        X(api_refused) /* REQ floods (CmConfig): over a listener's backlog, over one source's */  \
        /* pending limit (both REJ no resources), unanswered until req_answer_timeout_ns */   \
        X(drop_req_backlog) X(drop_req_source_limit) X(timeout_req_unanswered) \
        /* stateless REJ / DREP not sent: over CmConfig::stateless_per_sec */ \
        X(stateless_rate_limited) \
        /* a Timewait slot reused early: the table was full (CmManager::alloc) */ \
        X(timewait_evicted) \
        /* a MAD naming a connection (a REQ: repeating one) but not from its peer's GID */ \
        X(drop_rej_source) X(drop_rep_source) X(drop_rtu_source) X(drop_mra_source) \
        X(drop_dreq_source) X(drop_drep_source) X(drop_req_source) \
        /* SIDR (UD service ID resolution): MADs in and out, a SIDR_REP the codec refused, */ \
        /* a SIDR_REQ for no listener (answered: status 1), one again while the */ \
        /* application decides (dropped; after: answered again), a SIDR_REP for no */ \
        /* request of ours or from another GID, results, requests out of retries */ \
        X(rx_sidr_req) X(rx_sidr_rep) X(tx_sidr_req) X(tx_sidr_rep) X(resend_sidr_req) \
        X(resend_sidr_rep) X(drop_bad_sidr_rep) X(drop_sidr_req_no_listener) \
        X(drop_sidr_req_dup) X(drop_sidr_rep_unknown) X(drop_sidr_rep_source) \
        X(st_sidr_req_sent) X(st_sidr_req_rcvd) X(sidr_resolved) X(sidr_rejected) \
        X(timeout_sidr_req)

enum class CmCtr : uint16_t {
#define X(n) n,
    DROCE_CM_COUNTERS(X)
#undef X
        Count_
};
inline constexpr size_t kCmCtrCount = static_cast<size_t>(CmCtr::Count_);

const char *cm_ctr_name(CmCtr c);

struct CmCounters {
    uint64_t v[kCmCtrCount] = {};
    uint64_t operator[](CmCtr c) const { return v[static_cast<size_t>(c)]; }
    void inc(CmCtr c) { ++v[static_cast<size_t>(c)]; }
};

} // namespace droce::cm
