/* SPDX-License-Identifier: BSD-3-Clause */
/* Management datagrams of the Communication Management class (IBTA vol. 1 ch. 12/13):
 * the 24-byte MAD common header, the CM messages REQ, MRA, REJ, REP, RTU, DREQ and DREP
 * and SIDR's SIDR_REQ and SIDR_REP (IBTA 12.11) with their fields at the IBTA offsets, and what
 * Linux's rdma_cm puts on top: the IP service ID and the IP CM private-data header. Pure functions
 * over bytes: no state, no allocation; a malformed MAD is a MadError, never a read outside the
 * buffer. CM MADs travel as UD SEND_ONLY payloads to QP1 (256 bytes, Q_Key 0x80010000). */
#pragma once

#include <cstddef>
#include <cstdint>

namespace droce::cm {

inline constexpr size_t kMadLen = 256;
inline constexpr size_t kMadHdrLen = 24;
inline constexpr size_t kCmDataLen = kMadLen - kMadHdrLen; /* 232 */

inline constexpr uint8_t kMadBaseVersion = 1;
inline constexpr uint8_t kMgmtClassCm = 0x07;
inline constexpr uint8_t kCmClassVersion = 2;
inline constexpr uint8_t kMadMethodSend = 0x03; /* every CM message is a Send */

/* CM attribute IDs (as Linux ib_cm: CM_REQ_ATTR_ID, ...). */
enum class CmAttr : uint16_t {
    ClassPortInfo = 0x0001,
    Req = 0x0010,
    Mra = 0x0011,
    Rej = 0x0012,
    Rep = 0x0013,
    Rtu = 0x0014,
    Dreq = 0x0015,
    Drep = 0x0016,
    SidrReq = 0x0017,
    SidrRep = 0x0018,
    Lap = 0x0019,
    Apr = 0x001A,
};
const char *cm_attr_name(uint16_t attr_id); /* "REQ", ..., "unknown" */

/* Why a MAD was not accepted. Each value is a drop counter name. */
enum class MadError : uint8_t {
    Ok = 0,
    BadLength,        /* not exactly 256 bytes */
    BadBaseVersion,   /* base version != 1 */
    NotCmClass,       /* management class != 0x07 */
    BadClassVersion,  /* CM class version != 2 */
    BadMethod,        /* a CM message whose method is not Send */
    UnknownAttribute, /* an attribute this codec does not handle (LAP, APR, ...) */
    BadSidrRep,       /* a SIDR_REP whose status is not one IBTA defines (0..5) or whose
                       * additional information is longer than its 72-byte field */
    Count_
};
const char *mad_error_name(MadError e); /* "bad_length", ... */

/* MAD common header (IBTA 13.4.2). */
struct MadHdr {
    uint8_t base_version = kMadBaseVersion;
    uint8_t mgmt_class = kMgmtClassCm;
    uint8_t class_version = kCmClassVersion;
    uint8_t method = kMadMethodSend; /* R bit (0x80) + method */
    uint16_t status = 0;
    uint16_t class_specific = 0;
    uint64_t tid = 0;
    uint16_t attr_id = 0;
    uint16_t reserved = 0;
    uint32_t attr_mod = 0;
};
void encode(const MadHdr &h, uint8_t *p); /* 24 bytes */
MadHdr decode_mad_hdr(const uint8_t *p);  /* reads 24 bytes */

/* One path of a REQ (primary at message offset 52, alternate at 96). */
struct CmPath {
    uint16_t local_lid = 0xFFFF; /* RoCE: permissive LID */
    uint16_t remote_lid = 0xFFFF;
    uint8_t local_gid[16] = {};
    uint8_t remote_gid[16] = {};
    uint32_t flow_label = 0; /* 20 bits */
    uint8_t packet_rate = 0; /* 6 bits */
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 0;
    uint8_t sl = 0; /* 4 bits */
    bool subnet_local = false;
    uint8_t local_ack_timeout = 0; /* 5 bits */
};

inline constexpr size_t kReqPrivLen = 92;
inline constexpr size_t kMraPrivLen = 222;
inline constexpr size_t kRejPrivLen = 148;
inline constexpr size_t kRejAriLen = 72;
inline constexpr size_t kRepPrivLen = 196;
inline constexpr size_t kRtuPrivLen = 224;
inline constexpr size_t kDreqPrivLen = 220;
inline constexpr size_t kDrepPrivLen = 224;

struct Req {
    uint32_t local_comm_id = 0;
    uint32_t vendor_id = 0; /* 24 bits at offset 5 */
    uint64_t service_id = 0;
    uint64_t local_ca_guid = 0;
    uint32_t local_qkey = 0;
    uint32_t local_qpn = 0; /* 24 bits */
    uint8_t responder_resources = 0;
    uint32_t local_eecn = 0; /* 24 bits */
    uint8_t initiator_depth = 0;
    uint32_t remote_eecn = 0;               /* 24 bits */
    uint8_t remote_cm_response_timeout = 0; /* 5 bits */
    uint8_t transport_type = 0;             /* 2 bits: 0 RC, 1 UC, 2 RD, 3 extended */
    bool e2e_flow_control = false;
    /* The PSN the sender expects to receive first, i.e. the passive side's send PSN (its
     * sq_psn; the active side's rq_psn), as seen on every Linux capture in the vectors.
     * The REP's starting_psn is the reverse: the active side's send PSN. */
    uint32_t starting_psn = 0;             /* 24 bits */
    uint8_t local_cm_response_timeout = 0; /* 5 bits */
    uint8_t retry_count = 0;               /* 3 bits */
    uint16_t pkey = 0;
    uint8_t path_mtu = 0; /* 4 bits, IB MTU enum */
    bool rdc_exists = false;
    uint8_t rnr_retry_count = 0; /* 3 bits */
    uint8_t max_cm_retries = 0;  /* 4 bits */
    bool srq = false;
    uint8_t ext_transport_type = 0; /* 3 bits */
    CmPath primary;
    CmPath alternate;
    bool sap_supported = false; /* offset 139, beside the alternate ACK timeout */
    uint8_t private_data[kReqPrivLen] = {};
};

struct Mra {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint8_t message_mraed = 0;   /* 2 bits: 0 REQ, 1 REP, 2 LAP */
    uint8_t service_timeout = 0; /* 5 bits */
    uint8_t private_data[kMraPrivLen] = {};
};

/* REJ reason codes (enum ib_cm_rej_reason values). */
enum class RejReason : uint16_t {
    NoQp = 1,
    NoEec = 2,
    NoResources = 3,
    Timeout = 4,
    UnsupportedReq = 5,
    InvalidCommId = 6,
    InvalidCommInstance = 7,
    InvalidServiceId = 8,
    InvalidTransportType = 9,
    StaleConn = 10,
    RdcNotExist = 11,
    InvalidGid = 12,
    InvalidLid = 13,
    InvalidSl = 14,
    InvalidTrafficClass = 15,
    InvalidHopLimit = 16,
    InvalidPacketRate = 17,
    InvalidAltGid = 18,
    InvalidAltLid = 19,
    InvalidAltSl = 20,
    InvalidAltTrafficClass = 21,
    InvalidAltHopLimit = 22,
    InvalidAltPacketRate = 23,
    PortCmRedirect = 24,
    PortRedirect = 25,
    InvalidMtu = 26,
    InsufficientRespResources = 27,
    ConsumerDefined = 28,
    InvalidRnrRetry = 29,
    DuplicateLocalCommId = 30,
    InvalidClassVersion = 31,
    InvalidFlowLabel = 32,
    InvalidAltFlowLabel = 33,
};

struct Rej {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint8_t message_rejected = 0;   /* 2 bits: 0 REQ, 1 REP, 2 other */
    uint8_t reject_info_length = 0; /* 7 bits */
    uint16_t reason = 0;
    uint8_t ari[kRejAriLen] = {};
    uint8_t private_data[kRejPrivLen] = {};
};

struct Rep {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t local_qkey = 0;
    uint32_t local_qpn = 0;    /* 24 bits */
    uint32_t local_eecn = 0;   /* 24 bits */
    uint32_t starting_psn = 0; /* 24 bits */
    uint32_t vendor_id = 0;    /* 24 bits, one byte after each of the three above */
    uint8_t responder_resources = 0;
    uint8_t initiator_depth = 0;
    uint8_t target_ack_delay = 0;  /* 5 bits */
    uint8_t failover_accepted = 0; /* 2 bits */
    bool e2e_flow_control = false;
    uint8_t rnr_retry_count = 0; /* 3 bits */
    bool srq = false;
    uint64_t local_ca_guid = 0;
    uint8_t private_data[kRepPrivLen] = {};
};

struct Rtu {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint8_t private_data[kRtuPrivLen] = {};
};

struct Dreq {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint32_t remote_qpn = 0; /* 24 bits (QPN or EECN) */
    uint8_t private_data[kDreqPrivLen] = {};
};

struct Drep {
    uint32_t local_comm_id = 0;
    uint32_t remote_comm_id = 0;
    uint8_t private_data[kDrepPrivLen] = {};
};

/* SIDR (IBTA 12.11): a UD service ID resolved to a QPN and Q_Key, one request and one
 * reply, no connection. SIDR_REQ: request ID at 0, P_Key at 4, service ID at 8, private
 * data at 16 (216 bytes). SIDR_REP: request ID at 0, status at 4, additional information
 * length at 5, QPN (24 bits) at 8, service ID at 12, Q_Key at 20, the ClassPortInfo
 * (additional information) at 24 (72 bytes), private data at 96 (136 bytes); bytes 6, 7
 * and 11 hold a vendor ID, written as zero and not kept. */
inline constexpr size_t kSidrReqPrivLen = 216;
inline constexpr size_t kSidrRepInfoLen = 72;
inline constexpr size_t kSidrRepPrivLen = 136;

/* SIDR_REP status (ib_cm's enum ib_cm_sidr_status). */
enum class SidrStatus : uint8_t {
    Success = 0,            /* QPN and Q_Key are valid */
    Unsupported = 1,        /* the service ID is not supported */
    Reject = 2,             /* the service rejected the request */
    NoQp = 3,               /* no QP for the service */
    Redirect = 4,           /* ask the ClassPortInfo's address instead */
    UnsupportedVersion = 5, /* the class version is not supported */
};
inline constexpr uint8_t kSidrStatusMax = 5;

struct SidrReq {
    uint32_t request_id = 0;
    uint16_t pkey = 0;
    uint64_t service_id = 0;
    uint8_t private_data[kSidrReqPrivLen] = {};
};

struct SidrRep {
    uint32_t request_id = 0;
    uint8_t status = 0;
    uint8_t info_length = 0;
    uint32_t qpn = 0; /* 24 bits */
    uint64_t service_id = 0;
    uint32_t qkey = 0;
    uint8_t info[kSidrRepInfoLen] = {};
    uint8_t private_data[kSidrRepPrivLen] = {};
};

/* A decoded CM MAD: hdr.attr_id says which one member is meaningful. */
struct CmMad {
    MadHdr hdr;
    Req req;
    Mra mra;
    Rej rej;
    Rep rep;
    Rtu rtu;
    Dreq dreq;
    Drep drep;
    SidrReq sidr_req;
    SidrRep sidr_rep;
};

/* Parses a CM MAD (the UD payload, exactly kMadLen bytes). Reserved bits are ignored.
 * On error `out` holds what was decoded before the error (at least nothing invalid). */
MadError parse_cm_mad(const uint8_t *p, size_t len, CmMad &out);
/* Writes the 256-byte MAD for out.hdr.attr_id (reserved bits zero); returns kMadLen, or
 * 0 when cap is too small or the attribute is not one of REQ..SIDR_REP. */
size_t build_cm_mad(const CmMad &m, uint8_t *out, size_t cap);

/* ---- Linux rdma_cm on top of the CM ---- */

/* Port spaces (enum rdma_ucm_port_space); the IP service ID is 0x00000000_01PP_pppp:
 * port space PP in bits 23:16 with 0x01 above it (RDMA_IB_IP_PS_*), port pppp. */
inline constexpr uint16_t kRdmaPsTcp = 0x0106;
inline constexpr uint16_t kRdmaPsUdp = 0x0111;
inline constexpr uint16_t kRdmaPsIb = 0x013F;
inline constexpr uint64_t kRdmaIpPsMask = 0xFFFFFFFFFFFF0000ull;

inline uint64_t ip_service_id(uint16_t ps, uint16_t port) {
    return (static_cast<uint64_t>(ps) << 16) | port;
}
/* True when sid is an rdma_cm IP service ID (TCP, UDP or IB port space). */
bool parse_ip_service_id(uint64_t sid, uint16_t &ps, uint16_t &port);

/* The IP CM header rdma_cm puts at the start of a REQ's private data (struct cma_hdr,
 * 36 bytes): version 0, IP version in bits 7:4, the *source* port (the destination port
 * is the service ID's), then source and destination addresses, each 16 bytes: an IPv6
 * address, or an IPv4 one in the last 4 bytes after 12 zero bytes. */
inline constexpr size_t kIpCmHdrLen = 36;
inline constexpr uint8_t kCmaVersion = 0x00;

struct IpCmHdr {
    uint8_t cma_version = kCmaVersion;
    uint8_t ip_version = 4; /* 4 or 6 */
    uint16_t src_port = 0;
    uint8_t src_addr[16] = {}; /* as on the wire: IPv4 in bytes 12..15 */
    uint8_t dst_addr[16] = {};
    uint32_t src_ipv4() const;
    uint32_t dst_ipv4() const;
};
enum class IpCmError : uint8_t { Ok = 0, TooShort, BadVersion, BadIpVersion };
const char *ip_cm_error_name(IpCmError e);
IpCmError parse_ip_cm_hdr(const uint8_t *p, size_t len, IpCmHdr &out);
void encode(const IpCmHdr &h, uint8_t *p); /* 36 bytes, addresses as stored */
IpCmHdr make_ip_cm_hdr_v4(uint32_t src_ip, uint16_t src_port, uint32_t dst_ip);
IpCmHdr make_ip_cm_hdr_v6(const uint8_t src_ip[16], uint16_t src_port, const uint8_t dst_ip[16]);

} // namespace droce::cm
