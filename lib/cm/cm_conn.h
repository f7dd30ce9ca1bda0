/* SPDX-License-Identifier: BSD-3-Clause */
/* The CM connection state machine (IBTA vol. 1 ch. 12, as Linux's ib_cm runs it), sans
 * I/O: MADs in through on_mad(), out through a MadSink; time passed in (nanoseconds, any
 * monotonic origin) to on_mad/on_time and the API calls, next_deadline() says when to
 * call on_time again; events out through a CmEventSink. No clock, no socket, no thread,
 * no allocation after construction (fixed connection and listener tables).
 *
 * Active side:  connect() -> REQ -> ReqSent -[REP]-> Established (RTU out)
 * Passive side: listen(sid); REQ -> ReqRcvd (ConnectRequest) -accept()-> REP -> RepSent
 *               -[RTU or notify_comm_est()]-> Established;  reject() -> REJ, Timewait
 * Disconnect:   disconnect() -> DREQ -> DreqSent -[DREP]-> Timewait;  DREQ in -> DREP out,
 *               Timewait;  Timewait -> (the peer's retry wait + 2 packet lives) -> slot
 *               free (TimewaitExit)
 * Retries: a REQ waits 2 * packet life + the REQ's remote CM response timeout, a REP
 * 2 * packet life + the REQ's local CM response timeout, a DREQ as long as its
 * connection's REQ/REP did; each is sent again up to the REQ's max CM retries, then the
 * side gives up (REJ with reason Timeout, Unreachable / ConnectError, or for a DREQ
 * straight to Timewait). An MRA stretches the current wait by its service timeout.
 * Duplicates: a REQ again while deciding -> MRA; after REP -> the REP again; in Timewait
 * -> REJ stale connection (or the REJ we sent). A REP again after RTU -> the RTU again.
 * A DREQ again in Timewait -> the DREP again. Everything else that does not fit is a
 * counted drop (cm_counters.h).
 * SIDR (IBTA 12.11, UD service ID resolution; no connection):
 *   Active:  sidr_request() -> SIDR_REQ -> SidrReqSent -[SIDR_REP]-> slot free
 *            (SidrResolved, or SidrRejected with the status); no answer after a REQ's
 *            retries (same wait and count) -> SidrUnreachable, slot free
 *   Passive: SIDR_REQ for a listened service ID -> SidrReqRcvd (SidrRequest)
 *            -sidr_accept()/sidr_reject()-> SIDR_REP -> Timewait (a copy of the SIDR_REQ
 *            meanwhile gets the same SIDR_REP again; while deciding it is dropped);
 *            no listener -> a stateless SIDR_REP "service ID not supported" (status 1).
 * Sender: a MAD that names a connection (MRA, REJ, REP, RTU, DREQ, DREP) is taken only from
 * the GID the connection is with (the REQ's source, or where our REQ went): comm IDs are
 * guessable, a source GID is what RoCE routes on. A REJ ends only a connection still being
 * set up (and an active one whose RTUs were all lost: the passive side's Timeout REJ). */
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cm_counters.h"
#include "cm_event.h"
#include "cm_io.h"
#include "cm_mad.h"

namespace droce::cm {

struct CmConfig {
    uint32_t max_conns = 256; /* connection slots (rounded up to a power of two) */
    uint32_t max_listeners = 16;
    uint64_t local_ca_guid = 0;
    uint8_t local_gid[16] = {}; /* the GID REQs name as the primary path's local one */
    /* Linux rdma_cm's values (CMA_CM_RESPONSE_TIMEOUT 20 = 4.3 s, CMA_MAX_CM_RETRIES
     * 15, CMA_IBOE_PACKET_LIFETIME 16 = 268 ms): what we announce and expect. */
    uint8_t cm_response_timeout = 20;
    uint8_t max_cm_retries = 15;
    uint8_t packet_life_time = 16;
    uint8_t mra_service_timeout = 24; /* what our MRA asks the active side to wait */
    /* A hostile REQ may ask for 2^31 * 4 us per retry: no wait beyond this exponent. */
    uint8_t max_response_timeout = 24; /* 68.7 s */
    uint32_t comm_id_seed = 0x5eed;    /* mixed into local comm IDs so reboots differ */
    /* REQ floods (issue 15): connection requests the application has not answered yet
     * (ReqRcvd, MraReqSent) hold a slot each. Beyond a listener's backlog, or beyond
     * this many from one source GID, a REQ is rejected with reason 3 "no resources"
     * (IBTA 12.6.7, ib_cm's IB_CM_REJ_NO_RESOURCES) and counted; so one source cannot
     * take the whole table from the others. A request never answered is rejected with
     * reason 4 "timeout" after req_answer_timeout_ns and its slot freed (Timewait):
     * the active side (rdma_cm: 16 tries of 4.8 s) has given up on it by then anyway. */
    uint32_t listen_backlog = 128;        /* default for listen(); its own value wins */
    uint32_t max_pending_per_source = 64; /* 0 = no per-source limit */
    uint64_t req_answer_timeout_ns = 30'000'000'000ull; /* 0 = wait for ever */
    /* Stateless answers (issue 15): a REJ for a REQ we keep nothing for (unknown
     * service, over a limit, stale), for a REP we never asked for, and the DREP for an
     * unknown DREQ each cost a forger one MAD and us one MAD towards whatever source
     * GID it wrote: a reflector. Together they leave at most stateless_burst at once
     * and stateless_per_sec on average (a token bucket on the MADs' receive time);
     * the others are counted (stateless_rate_limited) and not sent: the sender retries
     * (or times out), as for a lost MAD. 0 = no limit. */
    uint32_t stateless_per_sec = 1000;
    uint32_t stateless_burst = 64;
};

struct ConnectParams {
    uint64_t service_id = 0; /* ip_service_id(kRdmaPsTcp, port) for rdma_cm peers */
    MadAddr peer;            /* the passive side's QP1 */
    /* The GID the REQ names as ours; all zero: CmConfig::local_gid. An IPv6 connection
     * names our IPv6 GID, an IPv4 one the IPv4-mapped GID. */
    uint8_t local_gid[16] = {};
    uint32_t local_qpn = 0;
    uint32_t rq_psn = 0; /* the PSN we expect first: the REQ's starting PSN */
    uint8_t path_mtu = 3;
    uint8_t responder_resources = 1;
    uint8_t initiator_depth = 1;
    uint8_t local_ack_timeout = 19; /* the QP timeout both sides use (Linux: 19 on RoCE) */
    uint8_t retry_count = 7;
    uint8_t rnr_retry_count = 7; /* what the passive side's QP uses */
    uint16_t pkey = 0xFFFF;
    const uint8_t *private_data = nullptr; /* up to kReqPrivLen (92) bytes */
    size_t private_data_len = 0;
    uint64_t user_ctx = 0;
};

struct AcceptParams {
    uint32_t local_qpn = 0;
    uint32_t rq_psn = 0;             /* the PSN we expect first: the REP's starting PSN */
    uint8_t responder_resources = 1; /* clamped to the REQ's initiator depth */
    uint8_t initiator_depth = 1;     /* clamped to the REQ's responder resources */
    uint8_t rnr_retry_count = 7;     /* what the active side's QP uses */
    uint8_t target_ack_delay = 15;   /* Linux sends 15 */
    bool srq = false;
    const uint8_t *private_data = nullptr; /* up to kRepPrivLen (196) bytes */
    size_t private_data_len = 0;
    uint64_t user_ctx = 0;
};

struct SidrParams {
    uint64_t service_id = 0; /* ip_service_id(kRdmaPsUdp, port) for rdma_cm peers */
    MadAddr peer;            /* the passive side's QP1 */
    uint16_t pkey = 0xFFFF;
    const uint8_t *private_data = nullptr; /* up to kSidrReqPrivLen (216) bytes */
    size_t private_data_len = 0;
    uint64_t user_ctx = 0;
};

class CmManager {
  public:
    CmManager(const CmConfig &cfg, MadSink &out, CmEventSink &events);

    /* Passive side: take REQs for this service ID (user_ctx comes back in their
     * ConnectRequest events), at most `backlog` of them unanswered at a time (0 = the
     * config's listen_backlog). False: already listened, or the table is full. */
    bool listen(uint64_t service_id, uint64_t user_ctx = 0, uint32_t backlog = 0);
    bool unlisten(uint64_t service_id);

    /* Active side: sends a REQ. Returns the connection handle (its local comm ID), 0 when
     * the table is full or the private data too long. */
    uint32_t connect(const ConnectParams &p, uint64_t now_ns);
    /* Passive side, after ConnectRequest (possibly from inside the callback). */
    bool accept(uint32_t conn, const AcceptParams &p, uint64_t now_ns);
    bool reject(uint32_t conn, const uint8_t *private_data, size_t len, uint64_t now_ns);
    /* Established -> DREQ. */
    bool disconnect(uint32_t conn, const uint8_t *private_data, size_t len, uint64_t now_ns);
    /* Passive side: the QP received its first packet while the RTU was still missing
     * (verbs' COMM_EST): the RTU was lost and the active side is sending, so established. */
    bool notify_comm_est(uint32_t conn, uint64_t now_ns);

    /* SIDR, active side: sends a SIDR_REQ. Returns the request's handle (its request ID),
     * 0 when the table is full or the private data too long. The handle ends with its
     * SidrResolved, SidrRejected or SidrUnreachable event. */
    uint32_t sidr_request(const SidrParams &p, uint64_t now_ns);
    /* SIDR, passive side, after SidrRequest: the SIDR_REP with our QPN and Q_Key (status
     * 0), or with a status that says no (not Success). Private data up to 136 bytes. */
    bool sidr_accept(uint32_t conn, uint32_t qpn, uint32_t qkey, const uint8_t *private_data,
                     size_t len, uint64_t now_ns);
    bool sidr_reject(uint32_t conn, SidrStatus status, const uint8_t *private_data, size_t len,
                     uint64_t now_ns);

    /* One received CM MAD (the UD payload) from `from` (its source GID and QPN). */
    void on_mad(const MadAddr &from, const uint8_t *mad, size_t len, uint64_t now_ns);
    /* Runs every timer due at now_ns (retransmissions, give-ups, timewait ends). */
    void on_time(uint64_t now_ns);
    /* The earliest pending timer, UINT64_MAX when none. */
    uint64_t next_deadline() const;

    ConnState state(uint32_t conn) const;
    const QpParams *qp_params(uint32_t conn) const; /* nullptr for a bad handle */
    const CmCounters &counters() const { return ctr_; }
    uint64_t counter(CmCtr c) const { return ctr_[c]; }
    size_t live_conns() const;

  private:
    struct Conn {
        ConnState st = ConnState::Idle;
        bool active = false;
        bool sidr = false; /* a SIDR exchange, not a connection */
        uint32_t local_id = 0;
        uint32_t remote_id = 0;
        uint64_t remote_ca_guid = 0;
        uint64_t service_id = 0;
        uint64_t user_ctx = 0;
        MadAddr peer;
        QpParams qp;
        uint64_t tid = 0;          /* REQ/REP/RTU transaction (REJ and MRA echo it) */
        uint64_t dreq_tid = 0;     /* DREQ/DREP transaction */
        uint64_t deadline = 0;     /* 0: no timer */
        uint64_t wait_ns = 0;      /* one retry's wait for this connection's peer */
        uint64_t peer_wait_ns = 0; /* the peer's wait before it sends again */
        /* Active, established: until when the passive side may still give up on its REP
         * (every RTU lost) and say so with a Timeout REJ; 0 otherwise. */
        uint64_t rej_until = 0;
        uint8_t retries_left = 0;
        uint8_t max_retries = 0;
        uint8_t req_resp_res = 0;   /* the REQ's responder resources / initiator depth, for */
        uint8_t req_init_depth = 0; /* clamping the REP */
        uint16_t last_attr = 0;     /* attribute of `last` (0: nothing kept) */
        uint8_t last[kMadLen] = {}; /* the MAD a timeout or a duplicate sends again */
    };

    Conn *find(uint32_t local_id);
    const Conn *find(uint32_t local_id) const;
    Conn *find_remote(uint32_t remote_id, uint64_t remote_ca_guid);
    /* The passive SIDR exchange of this request ID from this GID (ib_cm keys it so). */
    Conn *find_sidr_remote(uint32_t request_id, const MadAddr &from);
    Conn *alloc();
    int find_listener(uint64_t sid) const;
    uint64_t new_tid();
    uint64_t clamp_wait(uint8_t response_timeout) const;

    void send(Conn &c, const CmMad &m, CmCtr first_ctr);
    void resend_last(Conn &c);
    /* A MAD kept nowhere (no connection); callers take a token first. */
    void send_stateless(const MadAddr &to, const CmMad &m, CmCtr ctr);
    /* Takes a token for one stateless answer at rx_now_; false: counted, not sent. */
    bool stateless_allowed();
    void send_rej(Conn &c, RejReason reason, uint8_t msg_rejected, const uint8_t *pd, size_t len);
    void stateless_rej(const MadAddr &to, uint64_t tid, uint32_t remote_id, RejReason reason,
                       uint8_t msg_rejected);
    void enter(Conn &c, ConnState s, CmCtr reason);
    void enter_timewait(Conn &c, uint64_t now);
    void emit(const Conn &c, CmEventType t, const uint8_t *pd = nullptr, size_t len = 0,
              uint16_t rej = 0, DiscCause cause = DiscCause::None);
    void expire(Conn &c, uint64_t now);

    void on_req(const MadAddr &from, const CmMad &m, uint64_t now);
    /* A request over the listener's backlog or its source's limit: counted (the caller
     * answers it). */
    bool pending_over_limit(const MadAddr &from, size_t listener);
    void on_sidr_req(const MadAddr &from, const CmMad &m, uint64_t now);
    void on_sidr_rep(const MadAddr &from, const CmMad &m);
    bool sidr_answer(uint32_t conn, SidrStatus status, uint32_t qpn, uint32_t qkey,
                     const uint8_t *pd, size_t len, uint64_t now);
    /* A SIDR exchange's end on the active side: the slot goes, then the event. */
    void finish_sidr(Conn &c, CmEventType t, const SidrRep *rep);
    void on_mra(const MadAddr &from, const CmMad &m, uint64_t now);
    void on_rej(const MadAddr &from, const CmMad &m, uint64_t now);
    /* Whether c's state takes this REJ (IBTA 12.9.6, ib_cm's cm_rej_handler). */
    static bool rej_fits_state(const Conn &c, const Rej &j, uint64_t now);
    void on_rep(const MadAddr &from, const CmMad &m, uint64_t now);
    void on_rtu(const MadAddr &from, const CmMad &m, uint64_t now);
    void on_dreq(const MadAddr &from, const CmMad &m, uint64_t now);
    void on_drep(const MadAddr &from, const CmMad &m, uint64_t now);

    struct Listener {
        bool used = false;
        uint64_t sid = 0;
        uint64_t ctx = 0;
        uint32_t backlog = 0;
    };

    CmConfig cfg_;
    MadSink &out_;
    CmEventSink &events_;
    std::vector<Conn> conns_;
    std::vector<Listener> listeners_;
    uint32_t slot_bits_ = 0;
    uint32_t gen_ = 0;
    uint32_t tid_ = 0;
    CmCounters ctr_;
    uint64_t rx_now_ = 0;        /* receive time of the MAD being handled */
    uint64_t stateless_tat_ = 0; /* token bucket (GCRA): when the next one is earned */
};

} // namespace droce::cm
