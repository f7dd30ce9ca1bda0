/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The verbs vocabulary droce's protocol core (lib/rc, lib/ud, lib/mem, lib/net) is
 * written in: work requests, completions, QP attributes and states, access flags, GIDs.
 * Names and values follow libibverbs so that code written against ibv_* reads the same.
 * It is the one definition of these types: the public API (droce/verbs.h) includes this
 * header, installed next to it, so a work request or completion crosses from the API into
 * the core as the same type (no conversion on the data path) while the core includes
 * nothing of include/droce. */
#pragma once

#include <cstdint>

namespace droce {

class AddressHandle; /* droce.h: ProtectionDomain::create_ah */

/** Maximum scatter/gather entries per work request. */
inline constexpr int kMaxSge = 4;

/** Largest kSendInline payload a WR may carry, whatever QpCap::max_inline_data asks. */
inline constexpr uint32_t kMaxInlineData = 256;

/** Memory access rights (ibv_access_flags). */
enum Access : uint32_t {
    kAccessLocalWrite = 1u << 0,
    kAccessRemoteWrite = 1u << 1,
    kAccessRemoteRead = 1u << 2,
    kAccessRemoteAtomic = 1u << 3,
};

/** One scatter/gather element: a range of a registered memory region. */
struct Sge {
    uint64_t addr;   /**< virtual address inside the memory region */
    uint32_t length; /**< bytes */
    uint32_t lkey;   /**< MemoryRegion::lkey() of the region */
};

/** Send work request opcodes (ibv_wr_opcode values). */
enum class WrOpcode : uint8_t {
    RdmaWrite = 0,
    RdmaWriteWithImm = 1,
    Send = 2,
    SendWithImm = 3,
    RdmaRead = 4,
    AtomicCmpAndSwp = 5,
    AtomicFetchAndAdd = 6,
    SendWithInv = 9,
};

/** Send flags (ibv_send_flags). */
enum SendFlags : uint32_t {
    kSendFence = 1u << 0,
    kSendSignaled = 1u << 1,
    kSendSolicited = 1u << 2,
    /** The payload is copied when post_send runs, in every mode and QP type: the buffer
     * is the application's again when it returns, and the lkeys are not looked at
     * (SEND and RDMA WRITE; at most min(QpCap::max_inline_data, kMaxInlineData) bytes). */
    kSendInline = 1u << 3,
};

/** A send-queue work request. */
struct SendWr {
    uint64_t wr_id = 0;               /**< returned in the completion's Wc::wr_id */
    WrOpcode opcode = WrOpcode::Send; /**< what to do */
    uint32_t send_flags = 0;          /**< SendFlags */
    Sge sg_list[kMaxSge] = {};    /**< local buffers: gathered (send/write) or scattered (read) */
    int num_sge = 0;              /**< entries used in sg_list */
    uint32_t imm_data = 0;        /**< host order; sent as ImmDt (SendWithImm, RdmaWriteWithImm) */
    uint32_t invalidate_rkey = 0; /**< SendWithInv: the peer's rkey the peer invalidates */
    uint64_t remote_addr = 0;     /**< RDMA and atomics: the peer's virtual address */
    uint32_t rkey = 0;            /**< RDMA and atomics: the peer's MemoryRegion::rkey() */
    uint64_t compare_add = 0;     /**< atomics: compare value (CmpAndSwp) or addend */
    uint64_t swap = 0;            /**< AtomicCmpAndSwp: the value swapped in */
    /* UD QPs (ibv_send_wr wr.ud): where the datagram goes. */
    const AddressHandle *ah = nullptr; /**< UD: the destination (must outlive the WR) */
    uint32_t remote_qpn = 0;           /**< UD: the destination QP */
    uint32_t remote_qkey = 0;          /**< UD: its Q_Key; with bit 31 set, the QP's own Q_Key */
};

/** A receive work request. */
struct RecvWr {
    uint64_t wr_id = 0;        /**< returned in the completion's Wc::wr_id */
    Sge sg_list[kMaxSge] = {}; /**< where an incoming SEND's payload is scattered */
    int num_sge = 0;           /**< entries used in sg_list */
};

/** Work completion status (ibv_wc_status values). */
enum class WcStatus : uint8_t {
    Success = 0,
    LocLenErr = 1,
    LocQpOpErr = 2,
    LocEecOpErr = 3,
    LocProtErr = 4,
    WrFlushErr = 5,
    MwBindErr = 6,
    BadRespErr = 7,
    LocAccessErr = 8,
    RemInvReqErr = 9,
    RemAccessErr = 10,
    RemOpErr = 11,
    RetryExcErr = 12,
    RnrRetryExcErr = 13,
    LocRddViolErr = 14,
    RemInvRdReqErr = 15,
    RemAbortErr = 16,
    InvEecnErr = 17,
    InvEecStateErr = 18,
    FatalErr = 19,
    RespTimeoutErr = 20,
    GeneralErr = 21,
};
/** "success", "local length error", ... as ibv_wc_status_str() prints them. */
const char *wc_status_str(WcStatus s);

/** Work completion opcode (ibv_wc_opcode values). */
enum class WcOpcode : uint8_t {
    Send = 0,
    RdmaWrite = 1,
    RdmaRead = 2,
    CompSwap = 3,
    FetchAdd = 4,
    BindMw = 5,
    LocalInv = 6,
    Recv = 128,
    RecvRdmaWithImm = 129,
};

/** Completion flags (ibv_wc_flags). */
enum WcFlags : uint32_t {
    kWcGrh = 1u << 0, /**< UD receive: the first 40 bytes of the buffer hold the GRH */
    kWcWithImm = 1u << 1,
    /** Never set by droce: it has no invalidatable keys (no memory windows, no
     * fast-registration MRs), so a SEND with Invalidate from a peer is refused (the
     * receive completes with RemInvReqErr, the peer gets NAK Invalid Request) rather than
     * reported as an invalidation that did not happen. */
    kWcWithInv = 1u << 3,
    /** droce's own (ibv_wc has no such flag; the verbs library clears it): the message
     * asked for a solicited event (the sender's kSendSolicited, BTH SE). A CQ armed with
     * CompletionQueue::req_notify(true) raises its event on such a completion. */
    kWcSolicited = 1u << 8,
};

/** A work completion. */
struct Wc {
    uint64_t wr_id;            /**< the WR's wr_id */
    WcStatus status;           /**< Success or why not */
    WcOpcode opcode;           /**< what completed (valid with Success for receives) */
    uint32_t vendor_err;       /**< droce-specific detail, 0 when none */
    uint32_t byte_len;         /**< bytes received (receives) or transferred */
    uint32_t imm_data;         /**< host order, valid with kWcWithImm */
    uint32_t invalidated_rkey; /**< valid with kWcWithInv */
    uint32_t qp_num;           /**< the local QP */
    uint32_t src_qp;           /**< the remote QP (receives) */
    uint32_t wc_flags;         /**< WcFlags */
};

/** QP states (ibv_qp_state values). */
enum class QpState : uint8_t { Reset = 0, Init = 1, Rtr = 2, Rts = 3, Sqd = 4, Sqe = 5, Err = 6 };
/** "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR". */
const char *qp_state_str(QpState s);

/** Asynchronous events (ibv_event_type values). Affiliated events name a QP or a CQ;
 * errors that a completion can report are reported there, not here. */
enum class AsyncEventType : uint8_t {
    CqErr = 0,             /**< a CQ overran: completions were lost */
    QpFatal = 1,           /**< QP to ERR for a reason no completion reports */
    QpReqErr = 2,          /**< responder: invalid request (NAK sent), QP to ERR */
    QpAccessErr = 3,       /**< responder: remote access violation (NAK sent), QP to ERR */
    CommEst = 4,           /**< first packet received in RTR */
    SqDrained = 5,         /**< SQD: every started send WR completed (en_sqd_async_notify) */
    PathMig = 6,           /**< (no alternate paths: never raised) */
    PathMigErr = 7,        /**< (never raised) */
    DeviceFatal = 8,       /**< the device is unusable */
    PortActive = 9,        /**< link up */
    PortErr = 10,          /**< link down */
    LidChange = 11,        /**< (never raised: RoCE) */
    PkeyChange = 12,       /**< P_Key table changed */
    SmChange = 13,         /**< (never raised: RoCE) */
    SrqErr = 14,           /**< SRQ catastrophic error */
    SrqLimitReached = 15,  /**< SRQ below its armed limit */
    QpLastWqeReached = 16, /**< an SRQ QP in ERR will take no more receives from the SRQ */
    ClientReregister = 17, /**< (never raised: RoCE) */
    GidChange = 18,        /**< GID table changed */
    WqFatal = 19,          /**< (no WQs: never raised) */
    PauseStorm = 20,       /**< droce: a peer kept a PFC priority paused longer than the
                            * device's pause-storm watchdog (not a verbs event; qp_num 0) */
};
/** "CQ error", "local work queue catastrophic error", ... as ibv_event_type_str() prints. */
const char *async_event_str(AsyncEventType t);

/** Which QpAttr fields a modify() call sets (ibv_qp_attr_mask values). */
enum QpAttrMask : uint32_t {
    kQpState = 1u << 0,
    kQpCurState = 1u << 1,
    kQpEnSqdAsyncNotify = 1u << 2,
    kQpAccessFlags = 1u << 3,
    kQpPkeyIndex = 1u << 4,
    kQpPort = 1u << 5,
    kQpQkey = 1u << 6,
    kQpAv = 1u << 7,
    kQpPathMtu = 1u << 8,
    kQpTimeout = 1u << 9,
    kQpRetryCnt = 1u << 10,
    kQpRnrRetry = 1u << 11,
    kQpRqPsn = 1u << 12,
    kQpMaxQpRdAtomic = 1u << 13,
    kQpAltPath = 1u << 14,
    kQpMinRnrTimer = 1u << 15,
    kQpSqPsn = 1u << 16,
    kQpMaxDestRdAtomic = 1u << 17,
    kQpPathMigState = 1u << 18,
    kQpCap = 1u << 19,
    kQpDestQpn = 1u << 20,
};

/** IB path MTU enum (ibv_mtu). */
enum class Mtu : uint8_t { Mtu256 = 1, Mtu512 = 2, Mtu1024 = 3, Mtu2048 = 4, Mtu4096 = 5 };
/** Bytes of an Mtu value; 0 when invalid. */
inline uint32_t mtu_bytes(Mtu m) {
    const auto v = static_cast<uint8_t>(m);
    return (v >= 1 && v <= 5) ? (128u << v) : 0;
}

/** A 16-byte GID (RoCEv2: an IPv6 address or an IPv4-mapped one). */
struct Gid {
    uint8_t raw[16]; /**< network byte order */
};

/** Address vector: where the peer is (ibv_ah_attr with its GRH). */
struct AhAttr {
    Gid dgid = {};             /**< the peer's GID (IPv4-mapped for RoCEv2 over IPv4) */
    uint8_t sgid_index = 0;    /**< our GID: index in Device::gids() (1 = the IPv4 one) */
    uint8_t hop_limit = 64;    /**< IPv4 TTL / IPv6 hop limit */
    uint8_t traffic_class = 0; /**< IPv4 TOS / IPv6 traffic class */
    uint32_t flow_label = 0;   /**< IPv6 flow label */
    uint8_t sl = 0;            /**< service level (accepted; RoCEv2 uses traffic_class) */
    uint8_t port_num = 1;      /**< droce devices have one port: 1 */
};

/** QP attributes (ibv_qp_attr subset that RC uses). */
struct QpAttr {
    QpState qp_state = QpState::Reset;     /**< kQpState: the state to move to */
    QpState cur_qp_state = QpState::Reset; /**< query(): the current state */
    Mtu path_mtu = Mtu::Mtu1024;           /**< kQpPathMtu (RTR): at most the active MTU */
    uint32_t qkey = 0;                     /**< kQpQkey (UD only; accepted) */
    uint32_t rq_psn = 0;                   /**< kQpRqPsn (RTR): the peer's first PSN */
    uint32_t sq_psn = 0;                   /**< kQpSqPsn (RTS): our first PSN */
    uint32_t dest_qp_num = 0;              /**< kQpDestQpn (RTR): the peer's QPN */
    uint32_t qp_access_flags = 0;          /**< kQpAccessFlags: remote Access allowed */
    uint16_t pkey_index = 0;               /**< kQpPkeyIndex: 0 */
    AhAttr ah_attr = {};                   /**< kQpAv (RTR): the path to the peer */
    uint8_t max_rd_atomic = 1;             /**< kQpMaxQpRdAtomic (RTS): READs/atomics in flight */
    uint8_t max_dest_rd_atomic = 1;        /**< kQpMaxDestRdAtomic (RTR): the peer's, served */
    uint8_t min_rnr_timer = 12;            /**< RNR timer code 0..31 */
    uint8_t port_num = 1;                  /**< kQpPort: 1 */
    uint8_t timeout = 14;                  /**< 4.096 us * 2^timeout, 0 = infinite */
    uint8_t retry_cnt = 7;                 /**< 0..7 */
    uint8_t rnr_retry = 7;                 /**< 0..7, 7 = infinite */
    uint8_t en_sqd_async_notify = 0;       /**< kQpEnSqdAsyncNotify (RTS->SQD): raise SqDrained */
};

/** Queue sizes requested at QP creation (ibv_qp_cap). */
struct QpCap {
    uint32_t max_send_wr = 128;      /**< send WRs outstanding at once (1..16384) */
    uint32_t max_recv_wr = 128;      /**< receive WRs outstanding at once (1..16384) */
    uint32_t max_send_sge = kMaxSge; /**< SGEs per send WR (up to kMaxSge) */
    uint32_t max_recv_sge = kMaxSge; /**< SGEs per receive WR (up to kMaxSge) */
    uint32_t max_inline_data = 0; /**< kSendInline bytes (copied at post; kMaxInlineData at most) */
};

/** A GID table entry. */
struct GidEntry {
    /** The GID: an IPv6 address, or an IPv4-mapped one (::ffff:a.b.c.d). */
    Gid gid;
    /** "RoCE v2", or "IB/RoCE v1" (DeviceConfig::rocev1_gids), as Linux's gid_attrs/types. */
    const char *type;
    /** The entry's 802.1Q VLAN (0 = untagged): DeviceConfig::vlan, or an IPv6 address's
     * own "@VID". A QP on this GID sends on it; frames for it are accepted on it only. */
    uint16_t vlan = 0;
};

} // namespace droce
