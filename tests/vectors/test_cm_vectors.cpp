/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/cm against real RDMA-CM handshakes captured between two rxe peers (rping, ucmatose,
 * ib_write_bw -R): every CM MAD on QP1 decodes, its fields agree with the RC traffic that
 * follows (QPNs, starting PSNs, addresses, the service ID's port), and building it again
 * gives back the same 256 bytes. Then hostile MADs: each an error, never a crash. */
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cm_mad.h"
#include "pcap_read.h"
#include "wire_packet.h"

using namespace droce;
using namespace droce::cm;

namespace {

struct CmFrame {
    wire::ParsedPacket p;
    std::vector<uint8_t> mad;
    CmMad m;
};

struct Capture {
    std::vector<std::vector<uint8_t>> frames;
    std::vector<CmFrame> cm;
    std::vector<wire::ParsedPacket> rc; /* RC frames, payload pointers into frames */
};

/* Reads a capture, decodes every CM MAD (QP1 UD SEND_ONLY) and keeps the RC frames. */
void load(const std::string &name, Capture &c) {
    std::string err;
    c.frames = test::read_eth_capture(test::vectors_dir() + "/rxe/" + name, err);
    ASSERT_TRUE(err.empty()) << name << ": " << err;
    for (const auto &f : c.frames) {
        wire::ParsedPacket p{};
        if (wire::parse_frame(f.data(), f.size(), p, true) != wire::ParseResult::Ok)
            continue;
        if (p.bth.dest_qp == 1) {
            ASSERT_EQ(p.bth.opcode, wire::kUdSendOnly) << name;
            ASSERT_EQ(p.deth.qkey, 0x80010000u) << name;
            CmFrame cf{};
            cf.p = p;
            cf.mad.assign(p.payload, p.payload + p.payload_len);
            const MadError e = parse_cm_mad(cf.mad.data(), cf.mad.size(), cf.m);
            ASSERT_EQ(e, MadError::Ok) << name << ": " << mad_error_name(e);
            c.cm.push_back(cf);
        } else if (p.op->transport == wire::Transport::Rc) {
            c.rc.push_back(p);
        }
    }
}

uint32_t ip_src(const wire::ParsedPacket &p) { return wire::gid_to_ipv4(p.src_gid); }
uint32_t ip_dst(const wire::ParsedPacket &p) { return wire::gid_to_ipv4(p.dst_gid); }

/* Checks one capture's handshakes against its RC traffic; attrs: the attributes seen. */
/* Starting PSNs as Linux's CM uses them (seen on every capture here): the REQ's is the
 * PSN the passive side (the REQ's receiver) sends its first request with, the REP's the
 * active side's. check_psn: the passive side sends requests on every connection (not so
 * for ib_write_bw -R's second connection, where only the client WRITEs). */
void check_capture(const std::string &name, uint16_t expect_port, bool check_psn,
                   std::vector<uint16_t> &attrs) {
    Capture c;
    load(name, c);
    for (size_t i = 0; i < c.cm.size(); ++i) {
        const CmFrame &f = c.cm[i];
        SCOPED_TRACE(name + " CM MAD #" + std::to_string(i) + " " + cm_attr_name(f.m.hdr.attr_id));
        attrs.push_back(f.m.hdr.attr_id);
        EXPECT_EQ(f.m.hdr.method, kMadMethodSend);
        /* Re-encode: the same 256 bytes. */
        uint8_t again[kMadLen];
        ASSERT_EQ(build_cm_mad(f.m, again, sizeof again), kMadLen);
        EXPECT_EQ(0, std::memcmp(again, f.mad.data(), kMadLen));

        if (f.m.hdr.attr_id == static_cast<uint16_t>(CmAttr::Req)) {
            const Req &r = f.m.req;
            uint16_t ps = 0, port = 0;
            ASSERT_TRUE(parse_ip_service_id(r.service_id, ps, port));
            EXPECT_EQ(ps, kRdmaPsTcp);
            if (expect_port) {
                EXPECT_EQ(port, expect_port);
            }
            EXPECT_EQ(r.transport_type, 0); /* RC */
            IpCmHdr ih;
            ASSERT_EQ(parse_ip_cm_hdr(r.private_data, kReqPrivLen, ih), IpCmError::Ok);
            EXPECT_EQ(ih.ip_version, 4);
            EXPECT_EQ(ih.src_ipv4(), ip_src(f.p));
            EXPECT_EQ(ih.dst_ipv4(), ip_dst(f.p));
            uint8_t hb[kIpCmHdrLen];
            encode(ih, hb);
            EXPECT_EQ(0, std::memcmp(hb, r.private_data, kIpCmHdrLen));
            /* The path carries the two GIDs. */
            EXPECT_EQ(0, std::memcmp(r.primary.local_gid, f.p.src_gid, 16));
            EXPECT_EQ(0, std::memcmp(r.primary.remote_gid, f.p.dst_gid, 16));
            /* RC requests sent to the REQ's sender target its local QPN. The REP (the next
             * MAD back) names the other QP. */
            bool to_req_qp = false, from_req_psn = false;
            for (const auto &p : c.rc) {
                if (ip_dst(p) == ip_src(f.p) && p.bth.dest_qp == r.local_qpn)
                    to_req_qp = true;
                if (ip_src(p) == ip_dst(f.p) && p.op->is(wire::kOpRequest) &&
                    p.bth.psn == r.starting_psn)
                    from_req_psn = true;
            }
            EXPECT_TRUE(to_req_qp) << "no RC frame to QPN " << r.local_qpn;
            EXPECT_TRUE(from_req_psn || !check_psn) << "no RC frame with PSN " << r.starting_psn;
            ASSERT_LT(i + 1, c.cm.size());
            const CmFrame &rep = c.cm[i + 1];
            ASSERT_EQ(rep.m.hdr.attr_id, static_cast<uint16_t>(CmAttr::Rep));
            EXPECT_EQ(rep.m.rep.remote_comm_id, r.local_comm_id);
            EXPECT_EQ(rep.m.hdr.tid, f.m.hdr.tid);
            bool to_rep_qp = false, rep_psn = false;
            for (const auto &p : c.rc) {
                if (ip_dst(p) == ip_src(rep.p) && p.bth.dest_qp == rep.m.rep.local_qpn)
                    to_rep_qp = true;
                if (ip_src(p) == ip_src(f.p) && p.op->is(wire::kOpRequest) &&
                    p.bth.dest_qp == rep.m.rep.local_qpn && p.bth.psn == rep.m.rep.starting_psn)
                    rep_psn = true;
            }
            EXPECT_TRUE(to_rep_qp) << "no RC frame to REP QPN " << rep.m.rep.local_qpn;
            EXPECT_TRUE(rep_psn) << "no request with the REP's PSN " << rep.m.rep.starting_psn;
        }
        if (f.m.hdr.attr_id == static_cast<uint16_t>(CmAttr::Rtu)) {
            ASSERT_GE(i, 1u);
            const CmFrame &rep = c.cm[i - 1];
            EXPECT_EQ(f.m.rtu.remote_comm_id, rep.m.rep.local_comm_id);
            EXPECT_EQ(f.m.rtu.local_comm_id, rep.m.rep.remote_comm_id);
        }
        if (f.m.hdr.attr_id == static_cast<uint16_t>(CmAttr::Drep)) {
            ASSERT_GE(i, 1u);
            const CmFrame &dreq = c.cm[i - 1];
            ASSERT_EQ(dreq.m.hdr.attr_id, static_cast<uint16_t>(CmAttr::Dreq));
            EXPECT_EQ(f.m.drep.remote_comm_id, dreq.m.dreq.local_comm_id);
            EXPECT_EQ(f.m.drep.local_comm_id, dreq.m.dreq.remote_comm_id);
        }
    }
}

constexpr uint16_t R = 0x10, P = 0x13, T = 0x14, D = 0x15, E = 0x16;

TEST(CmVectors, Rping) {
    /* rping's default port is 7174. */
    std::vector<uint16_t> attrs;
    check_capture("rping.pcap", 7174, true, attrs);
    EXPECT_EQ(attrs, (std::vector<uint16_t>{R, P, T, D, E}));
}

TEST(CmVectors, Ucmatose) {
    /* ucmatose's default port is 7471. */
    std::vector<uint16_t> attrs;
    check_capture("ucmatose.pcap", 7471, true, attrs);
    EXPECT_EQ(attrs, (std::vector<uint16_t>{R, P, T, D, E}));
}

TEST(CmVectors, WriteBwCm) {
    std::vector<uint16_t> attrs;
    check_capture("write_bw_cm.pcap", 0, false, attrs);
    EXPECT_EQ(attrs, (std::vector<uint16_t>{R, P, T, R, P, T, D, E, D, E}));
}

/* ---- codec units ---- */

TEST(CmCodec, BuildParseEveryMessage) {
    for (CmAttr a : {CmAttr::Req, CmAttr::Mra, CmAttr::Rej, CmAttr::Rep, CmAttr::Rtu, CmAttr::Dreq,
                     CmAttr::Drep}) {
        CmMad m{};
        m.hdr = MadHdr{};
        m.hdr.attr_id = static_cast<uint16_t>(a);
        m.hdr.tid = 0x0102030405060708ull;
        m.req.local_qpn = 0xABCDEF;
        m.req.starting_psn = 0x123456;
        m.req.service_id = ip_service_id(kRdmaPsTcp, 7174);
        m.req.path_mtu = 3;
        m.req.rnr_retry_count = 7;
        m.req.primary.flow_label = 0xFFFFF;
        m.req.primary.sl = 5;
        m.req.primary.local_ack_timeout = 18;
        m.rej.reason = static_cast<uint16_t>(RejReason::InvalidServiceId);
        m.rej.message_rejected = 0;
        m.rep.local_qpn = 0x000019;
        m.rep.rnr_retry_count = 7;
        m.rep.srq = true;
        m.mra.service_timeout = 31;
        m.dreq.remote_qpn = 0x18;
        uint8_t b[kMadLen];
        ASSERT_EQ(build_cm_mad(m, b, sizeof b), kMadLen);
        CmMad d{};
        ASSERT_EQ(parse_cm_mad(b, sizeof b, d), MadError::Ok);
        EXPECT_EQ(d.hdr.tid, m.hdr.tid);
        switch (a) {
        case CmAttr::Req:
            EXPECT_EQ(d.req.local_qpn, 0xABCDEFu);
            EXPECT_EQ(d.req.starting_psn, 0x123456u);
            EXPECT_EQ(d.req.service_id, 0x0000000001061C06ull);
            EXPECT_EQ(d.req.path_mtu, 3);
            EXPECT_EQ(d.req.rnr_retry_count, 7);
            EXPECT_EQ(d.req.primary.flow_label, 0xFFFFFu);
            EXPECT_EQ(d.req.primary.sl, 5);
            EXPECT_EQ(d.req.primary.local_ack_timeout, 18);
            /* IBTA offsets (MAD offset = 24 + message offset). */
            EXPECT_EQ(b[24 + 32], 0xAB);
            EXPECT_EQ(b[24 + 50] >> 4, 3);
            EXPECT_EQ(b[24 + 95] >> 3, 18);
            break;
        case CmAttr::Rej:
            EXPECT_EQ(d.rej.reason, 8);
            EXPECT_EQ(b[24 + 11], 8);
            break;
        case CmAttr::Rep:
            EXPECT_EQ(d.rep.local_qpn, 0x19u);
            EXPECT_EQ(d.rep.rnr_retry_count, 7);
            EXPECT_TRUE(d.rep.srq);
            EXPECT_EQ(b[24 + 27], 0xF0); /* RNR retry count in bits 7:5, SRQ bit 4 */
            break;
        case CmAttr::Mra:
            EXPECT_EQ(d.mra.service_timeout, 31);
            break;
        case CmAttr::Dreq:
            EXPECT_EQ(d.dreq.remote_qpn, 0x18u);
            break;
        default:
            break;
        }
    }
}

TEST(CmCodec, ServiceId) {
    uint16_t ps = 0, port = 0;
    EXPECT_TRUE(parse_ip_service_id(0x0000000001061C06ull, ps, port));
    EXPECT_EQ(ps, kRdmaPsTcp);
    EXPECT_EQ(port, 7174);
    EXPECT_TRUE(parse_ip_service_id(ip_service_id(kRdmaPsUdp, 1), ps, port));
    EXPECT_EQ(ps, kRdmaPsUdp);
    EXPECT_FALSE(parse_ip_service_id(0x1000000001061C06ull, ps, port)); /* not an IP one */
    EXPECT_FALSE(parse_ip_service_id(0x0000000002061C06ull, ps, port));
}

TEST(CmCodec, IpCmHeader) {
    const IpCmHdr h = make_ip_cm_hdr_v4(0x0A4D0003, 40000, 0x0A4D0002);
    uint8_t b[kIpCmHdrLen];
    encode(h, b);
    EXPECT_EQ(b[0], 0);
    EXPECT_EQ(b[1], 0x40);
    EXPECT_EQ(b[2], 0x9C);
    EXPECT_EQ(b[3], 0x40);
    EXPECT_EQ(b[16], 10); /* IPv4 source in the last 4 bytes of its 16 */
    IpCmHdr d;
    ASSERT_EQ(parse_ip_cm_hdr(b, sizeof b, d), IpCmError::Ok);
    EXPECT_EQ(d.src_ipv4(), 0x0A4D0003u);
    EXPECT_EQ(d.dst_ipv4(), 0x0A4D0002u);
    EXPECT_EQ(parse_ip_cm_hdr(b, 35, d), IpCmError::TooShort);
    b[1] = 0x50;
    EXPECT_EQ(parse_ip_cm_hdr(b, sizeof b, d), IpCmError::BadIpVersion);
    b[1] = 0x60;
    EXPECT_EQ(parse_ip_cm_hdr(b, sizeof b, d), IpCmError::Ok);
    b[0] = 1;
    EXPECT_EQ(parse_ip_cm_hdr(b, sizeof b, d), IpCmError::BadVersion);
}

/* Hostile MADs: each a named error. */
TEST(CmCodec, HostileMads) {
    CmMad m{};
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Req);
    uint8_t good[kMadLen];
    ASSERT_EQ(build_cm_mad(m, good, sizeof good), kMadLen);
    CmMad d{};
    EXPECT_EQ(parse_cm_mad(good, sizeof good, d), MadError::Ok);
    EXPECT_EQ(parse_cm_mad(good, 255, d), MadError::BadLength); /* truncated */
    EXPECT_EQ(parse_cm_mad(good, 0, d), MadError::BadLength);
    EXPECT_EQ(parse_cm_mad(nullptr, 256, d), MadError::BadLength);
    auto with = [&](size_t off, uint8_t v) {
        uint8_t b[kMadLen];
        std::memcpy(b, good, sizeof b);
        b[off] = v;
        return parse_cm_mad(b, sizeof b, d);
    };
    EXPECT_EQ(with(0, 2), MadError::BadBaseVersion);
    EXPECT_EQ(with(1, 0x01), MadError::NotCmClass); /* subnet management */
    EXPECT_EQ(with(2, 1), MadError::BadClassVersion);
    EXPECT_EQ(with(3, 0x81), MadError::BadMethod);         /* a GetResp REQ */
    EXPECT_EQ(with(17, 0x1A), MadError::UnknownAttribute); /* APR */
    EXPECT_EQ(with(17, 0x99), MadError::UnknownAttribute);
    EXPECT_STREQ(mad_error_name(MadError::UnknownAttribute), "unknown_attribute");
    m.hdr.attr_id = 0x0019; /* LAP: not built */
    EXPECT_EQ(build_cm_mad(m, good, sizeof good), 0u);
    m.hdr.attr_id = static_cast<uint16_t>(CmAttr::Req);
    EXPECT_EQ(build_cm_mad(m, good, 100), 0u);
}

} // namespace
