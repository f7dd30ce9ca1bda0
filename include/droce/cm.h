/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Connection management in the spirit of librdmacm: listen on an IP port, connect to an
 * IP address and port with private data, accept or reject, disconnect, and poll events.
 * It speaks Linux rdma_cm's wire protocol (IBTA CM MADs on QP1 with the IP service ID of
 * the TCP port space and the IP CM header in the REQ's private data), so rping, ucmatose
 * and perftest -R peers can talk to it.
 *
 * The channel is sans-I/O: it owns no thread, clock or socket. Whoever runs it (the
 * engine's QP1/GSI glue, or a test) provides
 *   - a CmQp1Transport that sends a 256-byte MAD to a peer's QP1 as a UD SEND
 *     (Q_Key 0x80010000, P_Key 0xFFFF) to the given GID,
 *   - every MAD QP1 receives, through on_mad(),
 *   - the time (monotonic nanoseconds) to every call, and on_time() calls no later than
 *     next_deadline(),
 *   - optionally a CmQpHook that moves the RC QP to RTR/RTS with the parameters the
 *     connection settled on, synchronously, before the CM lets the peer send.
 * Events are queued and polled: poll_event(). Not thread-safe: one thread drives a
 * channel (CmDevice: the application's, in either engine mode).
 *
 * Addresses: IPv4 (connect(), peer_ip) and IPv6 (connect6(), peer_gid). A listen() takes
 * both, as rdma_listen on the wildcard address does: the IP CM header of a REQ says
 * which one the peer used (its IP version field, 4 or 6, and 16-byte addresses).
 *
 * UD (rdma_cm's UDP port space): SIDR, IBTA's service ID resolution, with the service ID
 * 0x0000000001110000 + port and rdma_cm's IP CM header at the start of the SIDR_REQ's
 * private data. Active: resolve_ud() -> SidrResolved (the peer's QPN and Q_Key: qp.
 * remote_qpn, qkey) or SidrRejected / SidrUnreachable; the id is then gone. Passive:
 * listen_ud() -> SidrRequest -> sidr_accept() (our UD QP's number and Q_Key, rdma_cm's
 * kRdmaUdpQkey) or sidr_reject(). */
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace droce {

/** What an RC QP needs for RTR/RTS, from this side's point of view. */
struct CmQpParams {
    uint32_t local_qpn = 0;
    uint32_t remote_qpn = 0;
    uint32_t sq_psn = 0;  /**< the PSN our first request carries */
    uint32_t rq_psn = 0;  /**< the PSN we expect first */
    uint8_t path_mtu = 3; /**< IB MTU enum: 1 = 256 ... 5 = 4096 */
    uint8_t timeout = 0;  /**< local ACK timeout exponent */
    uint8_t retry_cnt = 0;
    uint8_t rnr_retry = 0;
    uint8_t max_rd_atomic = 0;      /**< READ/atomics we may have outstanding */
    uint8_t max_dest_rd_atomic = 0; /**< the peer's we must absorb */
    uint8_t remote_gid[16] = {};
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 64;
    uint8_t local_gid[16] = {}; /**< ours for this connection (IPv4-mapped or IPv6) */
};

enum class CmEventKind : uint8_t {
    ConnectRequest,  /**< passive: accept() or reject() it (id is the new connection) */
    Established,     /**< both: connected; qp holds the final parameters */
    Rejected,        /**< the peer rejected (reason: IBTA REJ code, 28 = consumer) */
    Unreachable,     /**< active: no answer after every retry */
    ConnectError,    /**< passive: the active side never confirmed (no RTU) */
    Disconnected,    /**< either side disconnected (or our DREQ went unanswered) */
    TimewaitExit,    /**< the id is gone; its QP may be reused */
    SidrRequest,     /**< passive UD: sidr_accept() or sidr_reject() it */
    SidrResolved,    /**< active UD: qp.remote_qpn and qkey are the peer's; id gone */
    SidrRejected,    /**< active UD: the peer said no (sidr_status); id gone */
    SidrUnreachable, /**< active UD: no answer after every retry; id gone */
};
const char *cm_event_kind_name(CmEventKind k);

inline constexpr size_t kCmMaxPrivateData = 196; /**< a REP's; a REQ's user part is 56 */
/** The user part of a SIDR_REQ's private data (216 less rdma_cm's IP header) and a
 * SIDR_REP's. */
inline constexpr size_t kCmSidrReqPrivateData = 180;
inline constexpr size_t kCmSidrRepPrivateData = 136;
/** The Q_Key of Linux rdma_cm's UDP port space (RDMA_UDP_QKEY). */
inline constexpr uint32_t kRdmaUdpQkey = 0x01234567;

struct CmEventInfo {
    CmEventKind kind = CmEventKind::Established;
    uint32_t id = 0;          /**< the connection */
    uint16_t listen_port = 0; /**< ConnectRequest: the port it came in on */
    uint32_t peer_ip = 0;     /**< IPv4, host order (0 for an IPv6 peer) */
    uint16_t peer_port = 0;   /**< the active side's source port (from its IP CM header) */
    uint16_t reason = 0;      /**< Rejected: the REJ reason */
    uint64_t user_ctx = 0;
    CmQpParams qp;
    uint8_t private_data[kCmMaxPrivateData] = {};
    uint8_t private_data_len = 0;
    bool ipv6 = false;         /**< the connection is over IPv6 (rdma_cm's header said 6) */
    uint8_t peer_gid[16] = {}; /**< the peer's address: IPv6, or IPv4-mapped ::ffff:a.b.c.d */
    uint32_t qkey = 0;         /**< SidrResolved: the peer's Q_Key */
    uint8_t sidr_status = 0;   /**< SidrRejected: the SIDR_REP's status (1 no such
                                    service, 2 rejected, 3 no QP, ...) */
};

/** Puts a CM MAD on the wire: a UD SEND to QP1 at dst_gid. False when it could not be
 * queued (the CM retries on its timer as for a lost MAD). Must not call back into the
 * channel. */
class CmQp1Transport {
  public:
    virtual ~CmQp1Transport() = default;
    virtual bool send_mad(const uint8_t dst_gid[16], const uint8_t *mad, size_t len) = 0;
};

/** Moves the connection's RC QP to RTR and RTS. Called from inside accept() before the
 * REP leaves, and on the active side before the RTU leaves. */
class CmQpHook {
  public:
    virtual ~CmQpHook() = default;
    virtual void ready_qp(uint32_t id, const CmQpParams &qp) = 0;
};

struct CmChannelConfig {
    uint32_t local_ipv4 = 0; /**< host order */
    /** Our IPv6 address (= IPv6 GID) for connect6(); all zero: connect6() refused. */
    uint8_t local_ipv6[16] = {};
    uint64_t ca_guid = 0;
    uint32_t max_conns = 256;
    /** Unpolled events the queue holds without allocating; beyond, it doubles (counted
     * as ch_event_queue_grown): an event is never dropped. */
    uint32_t max_events = 256;
    /* The CM's timing fields (IBTA exponents, 4.096 us * 2^t); Linux rdma_cm's values. */
    uint8_t cm_response_timeout = 20;
    uint8_t max_cm_retries = 15;
    uint8_t packet_life_time = 16;
    /** Stateless answers (a REJ for a REQ nothing is kept for, a REJ for an unasked REP,
     * the DREP for an unknown DREQ) toward a source GID the sender may have forged: at
     * most stateless_burst at once and stateless_per_sec on average; the rest are
     * counted (stateless_rate_limited), not sent. stateless_per_sec 0 = no limit. */
    uint32_t stateless_per_sec = 1000;
    uint32_t stateless_burst = 64;
};

struct CmConnectParam {
    uint32_t qpn = 0;
    uint32_t rq_psn = 0; /**< the PSN we expect first */
    uint8_t path_mtu = 3;
    uint8_t responder_resources = 1;
    uint8_t initiator_depth = 1;
    uint8_t retry_count = 7;
    uint8_t rnr_retry_count = 7;
    uint8_t timeout = 19; /**< local ACK timeout exponent */
    const void *private_data = nullptr;
    uint8_t private_data_len = 0; /**< at most 56 (rdma_cm's 92 less its IP header) */
    uint64_t user_ctx = 0;
};

struct CmAcceptParam {
    uint32_t qpn = 0;
    uint32_t rq_psn = 0;
    uint8_t responder_resources = 1;
    uint8_t initiator_depth = 1;
    uint8_t rnr_retry_count = 7;
    const void *private_data = nullptr;
    uint8_t private_data_len = 0; /**< at most 196 */
    uint64_t user_ctx = 0;
};

struct CmSidrParam {
    const void *private_data = nullptr;
    uint8_t private_data_len = 0; /**< at most kCmSidrReqPrivateData (180) */
    uint16_t pkey = 0xFFFF;
    uint64_t user_ctx = 0;
};

class CmChannel {
  public:
    CmChannel(const CmChannelConfig &cfg, CmQp1Transport &transport, CmQpHook *hook = nullptr);
    ~CmChannel();
    CmChannel(const CmChannel &) = delete;
    CmChannel &operator=(const CmChannel &) = delete;

    /** rdma_listen on an IP port (TCP port space). False: already listened / no room. */
    bool listen(uint16_t port, uint64_t user_ctx = 0);
    bool unlisten(uint16_t port);
    /** rdma_connect: returns the connection id, 0 on a bad argument or a full table. */
    uint32_t connect(uint32_t dst_ip, uint16_t dst_port, const CmConnectParam &p, uint64_t now_ns);
    /** connect() to an IPv6 address (16 bytes, network order) from local_ipv6. */
    uint32_t connect6(const uint8_t dst_ip6[16], uint16_t dst_port, const CmConnectParam &p,
                      uint64_t now_ns);
    bool accept(uint32_t id, const CmAcceptParam &p, uint64_t now_ns);
    bool reject(uint32_t id, const void *private_data, uint8_t len, uint64_t now_ns);
    bool disconnect(uint32_t id, uint64_t now_ns);
    /** The RC QP saw its first packet before the RTU (verbs' COMM_EST). */
    bool notify_comm_est(uint32_t id, uint64_t now_ns);

    /** rdma_listen on a port of the UDP port space: SIDR_REQs for it come as SidrRequest. */
    bool listen_ud(uint16_t port, uint64_t user_ctx = 0);
    bool unlisten_ud(uint16_t port);
    /** rdma_connect of a UD id: a SIDR_REQ to dst_ip's UDP port space port. Returns the
     * request's id (ends with SidrResolved, SidrRejected or SidrUnreachable), 0 on a bad
     * argument or a full table. */
    uint32_t resolve_ud(uint32_t dst_ip, uint16_t dst_port, const CmSidrParam &p, uint64_t now_ns);
    /** rdma_accept of a UD id: the SIDR_REP with our QP number and Q_Key (private data up
     * to kCmSidrRepPrivateData). */
    bool sidr_accept(uint32_t id, uint32_t qpn, uint32_t qkey, const void *private_data,
                     uint8_t len, uint64_t now_ns);
    /** rdma_reject of a UD id: a SIDR_REP with status 2 (rejected). */
    bool sidr_reject(uint32_t id, const void *private_data, uint8_t len, uint64_t now_ns);

    /** The next event, if any (embedded mode). */
    bool poll_event(CmEventInfo &out);

    /** Transport side: a MAD received on QP1 from src_gid. */
    void on_mad(const uint8_t src_gid[16], const uint8_t *mad, size_t len, uint64_t now_ns);
    void on_time(uint64_t now_ns);
    uint64_t next_deadline() const; /**< UINT64_MAX: no timer */

    /** Counters by name (the state machine's, then the channel's own); false past the
     * last index. */
    bool counter(size_t i, const char *&name, uint64_t &value) const;

    struct Impl;

  private:
    std::unique_ptr<Impl> impl_;
};

} // namespace droce
