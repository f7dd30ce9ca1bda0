/* SPDX-License-Identifier: BSD-3-Clause */
#include "cm_mad.h"

#include <cstring>

#include "wire_bytes.h"

namespace droce::cm {

using wire::load_be16;
using wire::load_be24;
using wire::load_be32;
using wire::load_be64;
using wire::store_be16;
using wire::store_be24;
using wire::store_be32;
using wire::store_be64;

namespace {

/* The n-bit field of byte b whose least significant bit is bit lsb (IBTA numbers bits
 * from the most significant one: a field at IBTA bit offset o is at lsb 8 - o - n). */
uint8_t bits(uint8_t b, int lsb, int n) {
    return static_cast<uint8_t>((b >> lsb) & ((1u << n) - 1));
}
uint8_t place(uint32_t v, int lsb, int n) {
    return static_cast<uint8_t>((v & ((1u << n) - 1)) << lsb);
}

/* A REQ path (44 bytes: primary at message offset 52, alternate at 96). */
void get_path(const uint8_t *d, CmPath &c) {
    c.local_lid = load_be16(d);
    c.remote_lid = load_be16(d + 2);
    std::memcpy(c.local_gid, d + 4, 16);
    std::memcpy(c.remote_gid, d + 20, 16);
    c.flow_label = load_be24(d + 36) >> 4;
    c.packet_rate = bits(d[39], 0, 6);
    c.traffic_class = d[40];
    c.hop_limit = d[41];
    c.sl = bits(d[42], 4, 4);
    c.subnet_local = bits(d[42], 3, 1);
    c.local_ack_timeout = bits(d[43], 3, 5);
}
void put_path(uint8_t *d, const CmPath &c) {
    store_be16(d, c.local_lid);
    store_be16(d + 2, c.remote_lid);
    std::memcpy(d + 4, c.local_gid, 16);
    std::memcpy(d + 20, c.remote_gid, 16);
    store_be24(d + 36, (c.flow_label & 0xFFFFF) << 4);
    d[39] = place(c.packet_rate, 0, 6);
    d[40] = c.traffic_class;
    d[41] = c.hop_limit;
    d[42] = static_cast<uint8_t>(place(c.sl, 4, 4) | place(c.subnet_local, 3, 1));
    d[43] = place(c.local_ack_timeout, 3, 5);
}

void get_req(const uint8_t *d, Req &r) {
    r.local_comm_id = load_be32(d);
    r.vendor_id = load_be24(d + 5);
    r.service_id = load_be64(d + 8);
    r.local_ca_guid = load_be64(d + 16);
    r.local_qkey = load_be32(d + 28);
    r.local_qpn = load_be24(d + 32);
    r.responder_resources = d[35];
    r.local_eecn = load_be24(d + 36);
    r.initiator_depth = d[39];
    r.remote_eecn = load_be24(d + 40);
    r.remote_cm_response_timeout = bits(d[43], 3, 5);
    r.transport_type = bits(d[43], 1, 2);
    r.e2e_flow_control = bits(d[43], 0, 1);
    r.starting_psn = load_be24(d + 44);
    r.local_cm_response_timeout = bits(d[47], 3, 5);
    r.retry_count = bits(d[47], 0, 3);
    r.pkey = load_be16(d + 48);
    r.path_mtu = bits(d[50], 4, 4);
    r.rdc_exists = bits(d[50], 3, 1);
    r.rnr_retry_count = bits(d[50], 0, 3);
    r.max_cm_retries = bits(d[51], 4, 4);
    r.srq = bits(d[51], 3, 1);
    r.ext_transport_type = bits(d[51], 0, 3);
    get_path(d + 52, r.primary);
    get_path(d + 96, r.alternate);
    r.sap_supported = bits(d[139], 2, 1);
    std::memcpy(r.private_data, d + 140, kReqPrivLen);
}
void put_req(uint8_t *d, const Req &r) {
    store_be32(d, r.local_comm_id);
    store_be24(d + 5, r.vendor_id);
    store_be64(d + 8, r.service_id);
    store_be64(d + 16, r.local_ca_guid);
    store_be32(d + 28, r.local_qkey);
    store_be24(d + 32, r.local_qpn);
    d[35] = r.responder_resources;
    store_be24(d + 36, r.local_eecn);
    d[39] = r.initiator_depth;
    store_be24(d + 40, r.remote_eecn);
    d[43] = static_cast<uint8_t>(place(r.remote_cm_response_timeout, 3, 5) |
                                 place(r.transport_type, 1, 2) | place(r.e2e_flow_control, 0, 1));
    store_be24(d + 44, r.starting_psn);
    d[47] =
        static_cast<uint8_t>(place(r.local_cm_response_timeout, 3, 5) | place(r.retry_count, 0, 3));
    store_be16(d + 48, r.pkey);
    d[50] = static_cast<uint8_t>(place(r.path_mtu, 4, 4) | place(r.rdc_exists, 3, 1) |
                                 place(r.rnr_retry_count, 0, 3));
    d[51] = static_cast<uint8_t>(place(r.max_cm_retries, 4, 4) | place(r.srq, 3, 1) |
                                 place(r.ext_transport_type, 0, 3));
    put_path(d + 52, r.primary);
    put_path(d + 96, r.alternate);
    d[139] = static_cast<uint8_t>(d[139] | place(r.sap_supported, 2, 1));
    std::memcpy(d + 140, r.private_data, kReqPrivLen);
}

void get_rep(const uint8_t *d, Rep &r) {
    r.local_comm_id = load_be32(d);
    r.remote_comm_id = load_be32(d + 4);
    r.local_qkey = load_be32(d + 8);
    r.local_qpn = load_be24(d + 12);
    r.local_eecn = load_be24(d + 16);
    r.starting_psn = load_be24(d + 20);
    r.vendor_id = static_cast<uint32_t>(d[15]) << 16 | static_cast<uint32_t>(d[19]) << 8 | d[23];
    r.responder_resources = d[24];
    r.initiator_depth = d[25];
    r.target_ack_delay = bits(d[26], 3, 5);
    r.failover_accepted = bits(d[26], 1, 2);
    r.e2e_flow_control = bits(d[26], 0, 1);
    r.rnr_retry_count = bits(d[27], 5, 3);
    r.srq = bits(d[27], 4, 1);
    r.local_ca_guid = load_be64(d + 28);
    std::memcpy(r.private_data, d + 36, kRepPrivLen);
}
void put_rep(uint8_t *d, const Rep &r) {
    store_be32(d, r.local_comm_id);
    store_be32(d + 4, r.remote_comm_id);
    store_be32(d + 8, r.local_qkey);
    store_be24(d + 12, r.local_qpn);
    store_be24(d + 16, r.local_eecn);
    store_be24(d + 20, r.starting_psn);
    d[15] = static_cast<uint8_t>(r.vendor_id >> 16);
    d[19] = static_cast<uint8_t>(r.vendor_id >> 8);
    d[23] = static_cast<uint8_t>(r.vendor_id);
    d[24] = r.responder_resources;
    d[25] = r.initiator_depth;
    d[26] =
        static_cast<uint8_t>(place(r.target_ack_delay, 3, 5) | place(r.failover_accepted, 1, 2) |
                             place(r.e2e_flow_control, 0, 1));
    d[27] = static_cast<uint8_t>(place(r.rnr_retry_count, 5, 3) | place(r.srq, 4, 1));
    store_be64(d + 28, r.local_ca_guid);
    std::memcpy(d + 36, r.private_data, kRepPrivLen);
}

void get_sidr_req(const uint8_t *d, SidrReq &r) {
    r.request_id = load_be32(d);
    r.pkey = load_be16(d + 4);
    r.service_id = load_be64(d + 8);
    std::memcpy(r.private_data, d + 16, kSidrReqPrivLen);
}
void put_sidr_req(uint8_t *d, const SidrReq &r) {
    store_be32(d, r.request_id);
    store_be16(d + 4, r.pkey);
    store_be64(d + 8, r.service_id);
    std::memcpy(d + 16, r.private_data, kSidrReqPrivLen);
}

MadError get_sidr_rep(const uint8_t *d, SidrRep &r) {
    r.request_id = load_be32(d);
    r.status = d[4];
    r.info_length = d[5];
    r.qpn = load_be24(d + 8);
    r.service_id = load_be64(d + 12);
    r.qkey = load_be32(d + 20);
    std::memcpy(r.info, d + 24, kSidrRepInfoLen);
    std::memcpy(r.private_data, d + 96, kSidrRepPrivLen);
    if (r.status > kSidrStatusMax || r.info_length > kSidrRepInfoLen)
        return MadError::BadSidrRep;
    return MadError::Ok;
}
void put_sidr_rep(uint8_t *d, const SidrRep &r) {
    store_be32(d, r.request_id);
    d[4] = r.status;
    d[5] = r.info_length;
    store_be24(d + 8, r.qpn);
    store_be64(d + 12, r.service_id);
    store_be32(d + 20, r.qkey);
    std::memcpy(d + 24, r.info, kSidrRepInfoLen);
    std::memcpy(d + 96, r.private_data, kSidrRepPrivLen);
}

} // namespace

const char *cm_attr_name(uint16_t a) {
    switch (static_cast<CmAttr>(a)) {
    case CmAttr::ClassPortInfo:
        return "ClassPortInfo";
    case CmAttr::Req:
        return "REQ";
    case CmAttr::Mra:
        return "MRA";
    case CmAttr::Rej:
        return "REJ";
    case CmAttr::Rep:
        return "REP";
    case CmAttr::Rtu:
        return "RTU";
    case CmAttr::Dreq:
        return "DREQ";
    case CmAttr::Drep:
        return "DREP";
    case CmAttr::SidrReq:
        return "SIDR_REQ";
    case CmAttr::SidrRep:
        return "SIDR_REP";
    case CmAttr::Lap:
        return "LAP";
    case CmAttr::Apr:
        return "APR";
    }
    return "unknown";
}

const char *mad_error_name(MadError e) {
    switch (e) {
    case MadError::Ok:
        return "ok";
    case MadError::BadLength:
        return "bad_length";
    case MadError::BadBaseVersion:
        return "bad_base_version";
    case MadError::NotCmClass:
        return "not_cm_class";
    case MadError::BadClassVersion:
        return "bad_class_version";
    case MadError::BadMethod:
        return "bad_method";
    case MadError::UnknownAttribute:
        return "unknown_attribute";
    case MadError::BadSidrRep:
        return "bad_sidr_rep";
    case MadError::Count_:
        break;
    }
    return "?";
}

void encode(const MadHdr &h, uint8_t *p) {
    p[0] = h.base_version;
    p[1] = h.mgmt_class;
    p[2] = h.class_version;
    p[3] = h.method;
    store_be16(p + 4, h.status);
    store_be16(p + 6, h.class_specific);
    store_be64(p + 8, h.tid);
    store_be16(p + 16, h.attr_id);
    store_be16(p + 18, h.reserved);
    store_be32(p + 20, h.attr_mod);
}

MadHdr decode_mad_hdr(const uint8_t *p) {
    MadHdr h;
    h.base_version = p[0];
    h.mgmt_class = p[1];
    h.class_version = p[2];
    h.method = p[3];
    h.status = load_be16(p + 4);
    h.class_specific = load_be16(p + 6);
    h.tid = load_be64(p + 8);
    h.attr_id = load_be16(p + 16);
    h.reserved = load_be16(p + 18);
    h.attr_mod = load_be32(p + 20);
    return h;
}

MadError parse_cm_mad(const uint8_t *p, size_t len, CmMad &out) {
    if (!p || len != kMadLen)
        return MadError::BadLength;
    out.hdr = decode_mad_hdr(p);
    if (out.hdr.base_version != kMadBaseVersion)
        return MadError::BadBaseVersion;
    if (out.hdr.mgmt_class != kMgmtClassCm)
        return MadError::NotCmClass;
    if (out.hdr.class_version != kCmClassVersion)
        return MadError::BadClassVersion;
    const uint8_t *d = p + kMadHdrLen;
    const auto a = static_cast<CmAttr>(out.hdr.attr_id);
    switch (a) {
    case CmAttr::Req:
    case CmAttr::Mra:
    case CmAttr::Rej:
    case CmAttr::Rep:
    case CmAttr::Rtu:
    case CmAttr::Dreq:
    case CmAttr::Drep:
    case CmAttr::SidrReq:
    case CmAttr::SidrRep:
        break;
    default:
        return MadError::UnknownAttribute;
    }
    if (out.hdr.method != kMadMethodSend)
        return MadError::BadMethod;
    switch (a) {
    case CmAttr::Req:
        get_req(d, out.req);
        break;
    case CmAttr::Mra:
        out.mra.local_comm_id = load_be32(d);
        out.mra.remote_comm_id = load_be32(d + 4);
        out.mra.message_mraed = bits(d[8], 6, 2);
        out.mra.service_timeout = bits(d[9], 3, 5);
        std::memcpy(out.mra.private_data, d + 10, kMraPrivLen);
        break;
    case CmAttr::Rej:
        out.rej.local_comm_id = load_be32(d);
        out.rej.remote_comm_id = load_be32(d + 4);
        out.rej.message_rejected = bits(d[8], 6, 2);
        out.rej.reject_info_length = bits(d[9], 1, 7);
        out.rej.reason = load_be16(d + 10);
        std::memcpy(out.rej.ari, d + 12, kRejAriLen);
        std::memcpy(out.rej.private_data, d + 84, kRejPrivLen);
        break;
    case CmAttr::Rep:
        get_rep(d, out.rep);
        break;
    case CmAttr::Rtu:
        out.rtu.local_comm_id = load_be32(d);
        out.rtu.remote_comm_id = load_be32(d + 4);
        std::memcpy(out.rtu.private_data, d + 8, kRtuPrivLen);
        break;
    case CmAttr::Dreq:
        out.dreq.local_comm_id = load_be32(d);
        out.dreq.remote_comm_id = load_be32(d + 4);
        out.dreq.remote_qpn = load_be24(d + 8);
        std::memcpy(out.dreq.private_data, d + 12, kDreqPrivLen);
        break;
    case CmAttr::Drep:
        out.drep.local_comm_id = load_be32(d);
        out.drep.remote_comm_id = load_be32(d + 4);
        std::memcpy(out.drep.private_data, d + 8, kDrepPrivLen);
        break;
    case CmAttr::SidrReq:
        get_sidr_req(d, out.sidr_req);
        break;
    case CmAttr::SidrRep:
        return get_sidr_rep(d, out.sidr_rep);
    default:
        break;
    }
    return MadError::Ok;
}

size_t build_cm_mad(const CmMad &m, uint8_t *out, size_t cap) {
    if (!out || cap < kMadLen)
        return 0;
    uint8_t buf[kMadLen] = {};
    uint8_t *d = buf + kMadHdrLen;
    switch (static_cast<CmAttr>(m.hdr.attr_id)) {
    case CmAttr::Req:
        put_req(d, m.req);
        break;
    case CmAttr::Mra:
        store_be32(d, m.mra.local_comm_id);
        store_be32(d + 4, m.mra.remote_comm_id);
        d[8] = place(m.mra.message_mraed, 6, 2);
        d[9] = place(m.mra.service_timeout, 3, 5);
        std::memcpy(d + 10, m.mra.private_data, kMraPrivLen);
        break;
    case CmAttr::Rej:
        store_be32(d, m.rej.local_comm_id);
        store_be32(d + 4, m.rej.remote_comm_id);
        d[8] = place(m.rej.message_rejected, 6, 2);
        d[9] = place(m.rej.reject_info_length, 1, 7);
        store_be16(d + 10, m.rej.reason);
        std::memcpy(d + 12, m.rej.ari, kRejAriLen);
        std::memcpy(d + 84, m.rej.private_data, kRejPrivLen);
        break;
    case CmAttr::Rep:
        put_rep(d, m.rep);
        break;
    case CmAttr::Rtu:
        store_be32(d, m.rtu.local_comm_id);
        store_be32(d + 4, m.rtu.remote_comm_id);
        std::memcpy(d + 8, m.rtu.private_data, kRtuPrivLen);
        break;
    case CmAttr::Dreq:
        store_be32(d, m.dreq.local_comm_id);
        store_be32(d + 4, m.dreq.remote_comm_id);
        store_be24(d + 8, m.dreq.remote_qpn);
        std::memcpy(d + 12, m.dreq.private_data, kDreqPrivLen);
        break;
    case CmAttr::Drep:
        store_be32(d, m.drep.local_comm_id);
        store_be32(d + 4, m.drep.remote_comm_id);
        std::memcpy(d + 8, m.drep.private_data, kDrepPrivLen);
        break;
    case CmAttr::SidrReq:
        put_sidr_req(d, m.sidr_req);
        break;
    case CmAttr::SidrRep:
        put_sidr_rep(d, m.sidr_rep);
        break;
    default:
        return 0;
    }
    encode(m.hdr, buf);
    std::memcpy(out, buf, kMadLen);
    return kMadLen;
}

bool parse_ip_service_id(uint64_t sid, uint16_t &ps, uint16_t &port) {
    const uint16_t s = static_cast<uint16_t>(sid >> 16);
    if ((sid >> 32) != 0 || (s != kRdmaPsTcp && s != kRdmaPsUdp && s != kRdmaPsIb))
        return false;
    ps = s;
    port = static_cast<uint16_t>(sid);
    return true;
}

uint32_t IpCmHdr::src_ipv4() const { return load_be32(src_addr + 12); }
uint32_t IpCmHdr::dst_ipv4() const { return load_be32(dst_addr + 12); }

const char *ip_cm_error_name(IpCmError e) {
    switch (e) {
    case IpCmError::Ok:
        return "ok";
    case IpCmError::TooShort:
        return "too_short";
    case IpCmError::BadVersion:
        return "bad_cma_version";
    case IpCmError::BadIpVersion:
        return "bad_ip_version";
    }
    return "?";
}

IpCmError parse_ip_cm_hdr(const uint8_t *p, size_t len, IpCmHdr &out) {
    if (!p || len < kIpCmHdrLen)
        return IpCmError::TooShort;
    out.cma_version = p[0];
    if (out.cma_version != kCmaVersion)
        return IpCmError::BadVersion;
    out.ip_version = static_cast<uint8_t>(p[1] >> 4);
    if (out.ip_version != 4 && out.ip_version != 6)
        return IpCmError::BadIpVersion;
    out.src_port = load_be16(p + 2);
    std::memcpy(out.src_addr, p + 4, 16);
    std::memcpy(out.dst_addr, p + 20, 16);
    return IpCmError::Ok;
}

void encode(const IpCmHdr &h, uint8_t *p) {
    p[0] = h.cma_version;
    p[1] = static_cast<uint8_t>(h.ip_version << 4);
    store_be16(p + 2, h.src_port);
    std::memcpy(p + 4, h.src_addr, 16);
    std::memcpy(p + 20, h.dst_addr, 16);
}

IpCmHdr make_ip_cm_hdr_v4(uint32_t src_ip, uint16_t src_port, uint32_t dst_ip) {
    IpCmHdr h;
    h.ip_version = 4;
    h.src_port = src_port;
    store_be32(h.src_addr + 12, src_ip);
    store_be32(h.dst_addr + 12, dst_ip);
    return h;
}

IpCmHdr make_ip_cm_hdr_v6(const uint8_t src_ip[16], uint16_t src_port, const uint8_t dst_ip[16]) {
    IpCmHdr h;
    h.ip_version = 6;
    h.src_port = src_port;
    std::memcpy(h.src_addr, src_ip, 16);
    std::memcpy(h.dst_addr, dst_ip, 16);
    return h;
}

} // namespace droce::cm
