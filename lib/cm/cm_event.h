/* SPDX-License-Identifier: BSD-3-Clause */
/* What the CM state machine tells its owner: connection states, the QP parameters a
 * connection settles on, and the events (librdmacm's CONNECT_REQUEST, ESTABLISHED,
 * REJECTED, UNREACHABLE, CONNECT_ERROR, DISCONNECTED, TIMEWAIT_EXIT). */
#pragma once

#include <cstddef>
#include <cstdint>

#include "cm_io.h"

namespace droce::cm {

/* IBTA CM states (ib_cm's IB_CM_*), minus the ones droce never enters (LAP). */
enum class ConnState : uint8_t {
    Idle = 0,    /* free slot */
    ReqSent,     /* active: REQ out, waiting for REP (or MRA, REJ) */
    MraReqRcvd,  /* active: the peer said "wait" (MRA for our REQ) */
    ReqRcvd,     /* passive: REQ in, the application decides (accept / reject) */
    MraReqSent,  /* passive: a duplicate REQ came while deciding; we asked it to wait */
    RepSent,     /* passive: REP out, waiting for RTU */
    MraRepRcvd,  /* passive: the active side said "wait" (MRA for our REP) */
    Established, /* both: QP in RTS, data flows */
    DreqSent,    /* our DREQ out, waiting for DREP */
    Timewait,    /* closed; the comm ID is held until stray MADs have died out */
    SidrReqSent, /* active SIDR: SIDR_REQ out, waiting for SIDR_REP */
    SidrReqRcvd, /* passive SIDR: SIDR_REQ in, the application decides */
};
const char *conn_state_name(ConnState s);

/* Everything the RC QP's RTR/RTS transitions need, from this side's point of view. */
struct QpParams {
    uint32_t local_qpn = 0;
    uint32_t remote_qpn = 0;
    uint32_t sq_psn = 0;            /* the PSN our first request carries */
    uint32_t rq_psn = 0;            /* the PSN we expect first from the peer */
    uint8_t path_mtu = 3;           /* IB MTU enum: 1 256 .. 5 4096 */
    uint8_t local_ack_timeout = 0;  /* 5 bits, the QP's timeout */
    uint8_t retry_count = 0;        /* 3 bits */
    uint8_t rnr_retry_count = 0;    /* 3 bits */
    uint8_t max_rd_atomic = 0;      /* READ/atomic requests we may have outstanding */
    uint8_t max_dest_rd_atomic = 0; /* the peer's outstanding ones we must absorb */
    uint16_t pkey = 0xFFFF;
    uint8_t local_gid[16] = {};
    uint8_t remote_gid[16] = {};
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 64;
    uint8_t sl = 0;
    uint32_t flow_label = 0;
};

enum class CmEventType : uint8_t {
    ConnectRequest, /* passive: a REQ for a listened service ID; accept() or reject() */
    Established,    /* both: the QP may (active: must, now) go to RTR/RTS with ev.qp */
    Rejected,       /* a REJ came: ev.rej_reason, ev.private_data */
    Unreachable,    /* active: no REP after every retry */
    ConnectError,   /* passive: no RTU after every REP retry */
    Disconnected,   /* DREQ in (remote), or our DREQ answered or timed out (local) */
    TimewaitExit,   /* the connection's slot and comm ID are free again */
    /* SIDR (UD service ID resolution): no connection, one request and its reply. */
    SidrRequest,     /* passive: a SIDR_REQ for a listened service ID; sidr_accept() or
                      * sidr_reject() it (private data: the SIDR_REQ's 216 bytes) */
    SidrResolved,    /* active: SIDR_REP status 0: ev.qp.remote_qpn, ev.qkey, private data;
                      * the handle is free again */
    SidrRejected,    /* active: SIDR_REP with another status (ev.sidr_status) */
    SidrUnreachable, /* active: no SIDR_REP after every retry */
};
const char *cm_event_name(CmEventType t);

/* Why a connection left Established (Disconnected events). */
enum class DiscCause : uint8_t { None = 0, Remote, LocalDone, LocalTimeout, Rejected };

struct CmEvent {
    CmEventType type = CmEventType::Established;
    uint32_t conn = 0;     /* our local comm ID: the connection's handle */
    bool active = false;   /* we sent the REQ */
    uint64_t user_ctx = 0; /* the listener's (ConnectRequest) or the connection's */
    uint64_t service_id = 0;
    QpParams qp;  /* ConnectRequest: the REQ's side (local_qpn/rq_psn still 0) */
    MadAddr peer; /* where the peer's CM answers */
    uint16_t rej_reason = 0;
    DiscCause cause = DiscCause::None;
    uint32_t qkey = 0;       /* SidrResolved: the peer's Q_Key */
    uint8_t sidr_status = 0; /* SidrResolved / SidrRejected: the SIDR_REP's status */
    /* The REQ / REP / REJ / DREQ private data: valid only during the callback. */
    const uint8_t *private_data = nullptr;
    size_t private_data_len = 0;
};

/* Receives events synchronously from inside CmManager calls. It may call the manager's
 * API (accept, reject, disconnect, connect) from the callback. On Established for an
 * active connection, the RTU is sent after the callback returns: the QP must be in RTS
 * by then (ib_cm and rdma_cm have the same order). */
class CmEventSink {
  public:
    virtual ~CmEventSink() = default;
    virtual void on_cm_event(const CmEvent &ev) = 0;
};

} // namespace droce::cm
