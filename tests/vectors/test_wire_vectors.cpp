/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/wire against the captured and synthetic packet vectors in ../shared/vectors:
 * every RoCEv2 frame decodes, its ICRC verifies, and building it again from the decoded
 * fields gives back the same bytes. The vectors must be present: a missing directory is a
 * failure, not a skip. */
#include <gtest/gtest.h>

#include <pcap/pcap.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "wire_headers.h"
#include "wire_icrc.h"
#include "wire_opcode.h"
#include "wire_packet.h"

using namespace droce::wire;

namespace {

std::string vectors_dir() {
    if (const char *e = std::getenv("DROCE_VECTORS_DIR"); e && *e)
        return e;
#ifdef DROCE_VECTORS_DIR
    return DROCE_VECTORS_DIR;
#else
    return "../shared/vectors";
#endif
}

struct Frame {
    std::vector<uint8_t> bytes; /* Ethernet frame (cooked captures: synthesized L2) */
    uint32_t wire_len;          /* original length, L2 adjusted like bytes */
    bool cooked;                /* L2 was synthesized: compare from L3 only */
    bool truncated;             /* caplen < len */
};

/* Reads every packet; cooked (SLL/SLL2) link headers become a zero-MAC Ethernet header
 * carrying the same protocol, so the parser sees the L3 bytes unchanged. */
std::vector<Frame> read_capture(const std::string &path, std::string &err) {
    std::vector<Frame> out;
    char errbuf[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline(path.c_str(), errbuf);
    if (!pc) {
        err = errbuf;
        return out;
    }
    const int dlt = pcap_datalink(pc);
    pcap_pkthdr *h;
    const u_char *data;
    int rc;
    while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
        Frame f{};
        f.truncated = h->caplen < h->len;
        if (dlt == DLT_EN10MB) {
            f.bytes.assign(data, data + h->caplen);
            f.wire_len = h->len;
        } else if (dlt == DLT_LINUX_SLL || dlt == DLT_LINUX_SLL2) {
            const size_t hl = dlt == DLT_LINUX_SLL ? 16 : 20;
            const size_t proto_off = dlt == DLT_LINUX_SLL ? 14 : 0;
            if (h->caplen < hl) {
                err = "short cooked header";
                break;
            }
            f.bytes.assign(12, 0);
            f.bytes.push_back(data[proto_off]);
            f.bytes.push_back(data[proto_off + 1]);
            f.bytes.insert(f.bytes.end(), data + hl, data + h->caplen);
            f.wire_len = h->len - static_cast<uint32_t>(hl) + 14;
            f.cooked = true;
        } else {
            err = "unexpected link type " + std::to_string(dlt);
            break;
        }
        out.push_back(std::move(f));
    }
    if (rc == -1)
        err = pcap_geterr(pc);
    pcap_close(pc);
    return out;
}

/* Fills a FrameSpec from a parsed packet (the re-encode half of the round trip). */
FrameSpec spec_from(const ParsedPacket &p, FrameSpec::Seg &seg) {
    FrameSpec s{};
    s.eth = p.eth;
    s.ipv6 = p.ipv6;
    std::memcpy(s.src_gid, p.src_gid, 16);
    std::memcpy(s.dst_gid, p.dst_gid, 16);
    s.tos = static_cast<uint8_t>(p.dscp << 2 | p.ecn);
    s.ttl = p.ttl;
    s.flow_label = p.ipv6 ? p.ip6.flow_label : 0;
    s.ip_id = p.ipv6 ? 0 : p.ip4.id;
    s.udp_sport = p.udp.sport;
    s.bth = p.bth;
    s.reth = p.reth;
    s.aeth = p.aeth;
    s.atomic = p.atomic;
    s.atomic_ack = p.atomic_ack;
    s.deth = p.deth;
    s.imm = p.imm;
    s.ieth = p.ieth;
    seg = FrameSpec::Seg{p.payload, p.payload_len};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = p.payload_len;
    return s;
}

struct Expect {
    const char *file;
    int total;    /* packets in the capture */
    int roce;     /* UDP dport 4791 frames (tshark -Y udp.dstport==4791) */
    int bad_icrc; /* of those, with a wrong ICRC on purpose */
    int truncated;
};

/* Counts pre-computed once with tshark (total, udp.dstport==4791). */
const Expect kFiles[] = {
    {"rxe/atomic_cas.pcap", 245, 200, 0, 0},
    {"rxe/atomic_fadd.pcap", 244, 200, 0, 0},
    {"rxe/rc_pingpong.pcap", 137, 124, 0, 0},
    /* rxe to rxe over an IPv6 GID and a VLAN GID (PCP 3): droce speaks both now. */
    {"rxe-features/rc_pingpong_ipv6.pcap", 533, 516, 0, 0},
    {"rxe-features/rc_pingpong_vlan_pcp3.pcap", 519, 500, 0, 0},
    {"rxe/read_bw.pcap", 543, 500, 0, 0},
    {"rxe/rping.pcap", 65, 65, 0, 0},
    {"rxe/send_lat.pcap", 451, 418, 0, 0},
    {"rxe/ucmatose.pcap", 25, 25, 0, 0},
    {"rxe/ud_pingpong.pcap", 31, 20, 0, 0},
    {"rxe/userspace_peer_bad_icrc_retransmit.pcap", 68, 55, 1, 0},
    {"rxe/userspace_peer_rc_pingpong_with_arp.pcap", 65, 50, 0, 0},
    {"rxe/write_bw.pcap", 540, 500, 0, 0},
    {"rxe/write_bw_4k.pcap", 291, 250, 0, 0},
    {"rxe/write_bw_cm.pcap", 574, 574, 0, 0},
    {"synthetic/good_atomic.pcap", 4, 4, 0, 0},
    {"synthetic/good_cnp.pcap", 7, 7, 0, 0},
    {"synthetic/good_nak_psn_seq_err.pcap", 7, 7, 0, 0},
    {"synthetic/good_psn_wrap.pcap", 4, 4, 0, 0},
    {"synthetic/good_published_cx4lx_cnp.pcap", 1, 1, 0, 0},
    {"synthetic/good_read.pcap", 5, 5, 0, 0},
    {"synthetic/good_rnr_nak.pcap", 4, 4, 0, 0},
    {"synthetic/good_send_multi_imm.pcap", 6, 6, 0, 0},
    {"synthetic/good_send_only_imm.pcap", 2, 2, 0, 0},
    {"synthetic/good_ud_send.pcap", 2, 2, 0, 0},
    {"synthetic/good_write_fcs.pcapng", 4, 4, 0, 0},
    {"synthetic/good_write_ipv4.pcap", 4, 4, 0, 0},
    {"synthetic/good_write_ipv4.pcapng", 4, 4, 0, 0},
    {"synthetic/good_write_ipv6.pcap", 4, 4, 0, 0},
    {"synthetic/good_write_sll.pcap", 4, 4, 0, 0},
    {"synthetic/good_write_sll2_any_dups.pcapng", 8, 8, 0, 0},
    {"synthetic/good_write_snaplen96.pcap", 4, 4, 0, 2},
    {"synthetic/good_write_vlan_pcp3_dscp26_ect0.pcap", 4, 4, 0, 0},
    {"synthetic/good_write_with_noise.pcap", 9, 4, 0, 0},
};

void PrintTo(const Expect &e, std::ostream *os) { *os << e.file; }

class WireVectors : public testing::TestWithParam<Expect> {};

std::string test_name(const testing::TestParamInfo<Expect> &i) {
    std::string n = i.param.file;
    for (char &c : n)
        if (!isalnum(static_cast<unsigned char>(c)))
            c = '_';
    return n;
}

/* Is this frame UDP with destination port 4791? Independent of the parser. */
bool is_udp_4791(const std::vector<uint8_t> &f) {
    size_t off = 12;
    if (f.size() < 14)
        return false;
    uint16_t et = static_cast<uint16_t>(f[12] << 8 | f[13]);
    if (et == 0x8100) {
        if (f.size() < 18)
            return false;
        et = static_cast<uint16_t>(f[16] << 8 | f[17]);
        off = 16;
    }
    const size_t l3 = off + 2;
    size_t l4;
    if (et == 0x0800) {
        if (f.size() < l3 + 20 || f[l3 + 9] != 17)
            return false;
        l4 = l3 + (f[l3] & 0xF) * 4u;
    } else if (et == 0x86DD) {
        if (f.size() < l3 + 40 || f[l3 + 6] != 17)
            return false;
        l4 = l3 + 40;
    } else {
        return false;
    }
    return f.size() >= l4 + 4 && f[l4 + 2] == 0x12 && f[l4 + 3] == 0xB7;
}

} // namespace

TEST(WireVectorsDir, Present) {
    std::string err;
    const auto frames = read_capture(vectors_dir() + "/synthetic/good_write_ipv4.pcap", err);
    ASSERT_TRUE(err.empty()) << "vectors not found in " << vectors_dir() << ": " << err;
    ASSERT_FALSE(frames.empty());
}

TEST_P(WireVectors, DecodeVerifyReencode) {
    const Expect &e = GetParam();
    std::string err;
    const auto frames = read_capture(vectors_dir() + "/" + e.file, err);
    ASSERT_TRUE(err.empty()) << e.file << ": " << err;
    ASSERT_EQ(static_cast<int>(frames.size()), e.total);

    int roce = 0, ok = 0, bad_icrc = 0, truncated = 0, not_roce = 0;
    int idx = 0;
    for (const Frame &f : frames) {
        ++idx;
        SCOPED_TRACE(testing::Message() << e.file << " packet " << idx);
        ParsedPacket p;
        const ParseResult r = parse_frame(f.bytes.data(), f.bytes.size(), p, true);
        const bool udp4791 = is_udp_4791(f.bytes);
        if (!udp4791) {
            EXPECT_EQ(r, ParseResult::NotRoce) << parse_result_name(r);
            not_roce += r == ParseResult::NotRoce;
            continue;
        }
        ++roce;
        if (f.truncated) {
            /* snaplen-cut: the decoder must never claim a verified ICRC */
            ++truncated;
            EXPECT_TRUE(r == ParseResult::TooShort || r == ParseResult::BadIcrc)
                << parse_result_name(r);
            ParsedPacket q;
            EXPECT_NE(parse_frame(f.bytes.data(), f.bytes.size(), q, false), ParseResult::Ok);
            continue;
        }
        if (r == ParseResult::BadIcrc) {
            ++bad_icrc;
            /* everything but the ICRC is fine */
            ParsedPacket q;
            EXPECT_EQ(parse_frame(f.bytes.data(), f.bytes.size(), q, false), ParseResult::Ok);
            continue;
        }
        ASSERT_EQ(r, ParseResult::Ok) << parse_result_name(r);
        ++ok;
        /* frame_len covers exactly the IP datagram; FCS / padding excluded */
        EXPECT_EQ(p.frame_len, p.l3_off + (p.ipv6 ? 40u + p.ip6.payload_len : p.ip4.total_len));
        EXPECT_LE(p.frame_len, f.bytes.size());
        EXPECT_EQ(p.icrc, icrc_load(f.bytes.data() + p.frame_len - 4));
        EXPECT_EQ(
            icrc_compute_reference(f.bytes.data() + p.l3_off, p.frame_len - 4 - p.l3_off, p.ipv6),
            p.icrc);

        FrameSpec::Seg seg;
        const FrameSpec s = spec_from(p, seg);
        std::vector<uint8_t> out(frame_len(s) + 16);
        const size_t n = build_frame(s, out.data(), out.size());
        ASSERT_EQ(n, p.frame_len);
        if (p.udp.csum != 0) {
            /* droce never sends a UDP checksum; one synthetic frame carries one. The ICRC
             * masks it, so patching it in keeps the comparison exact. */
            const size_t c = p.l3_off + (p.ipv6 ? 40u : 20u) + 6;
            out[c] = static_cast<uint8_t>(p.udp.csum >> 8);
            out[c + 1] = static_cast<uint8_t>(p.udp.csum);
        }
        const size_t from = f.cooked ? p.l3_off : 0;
        EXPECT_EQ(std::vector<uint8_t>(out.begin() + static_cast<long>(from),
                                       out.begin() + static_cast<long>(n)),
                  std::vector<uint8_t>(f.bytes.begin() + static_cast<long>(from),
                                       f.bytes.begin() + static_cast<long>(n)))
            << "re-encoded frame differs";
    }
    EXPECT_GT(roce, 0);
    EXPECT_EQ(roce, e.roce);
    EXPECT_EQ(bad_icrc, e.bad_icrc);
    EXPECT_EQ(truncated, e.truncated);
    EXPECT_EQ(ok, e.roce - e.bad_icrc - e.truncated);
    EXPECT_EQ(not_roce, e.total - e.roce);
}

INSTANTIATE_TEST_SUITE_P(AllFiles, WireVectors, testing::ValuesIn(kFiles), test_name);

/* Every file in the vector folders is listed above (a new capture must not be ignored). */
TEST(WireVectorsDir, EveryFileListed) {
    std::set<std::string> listed;
    for (const Expect &e : kFiles)
        listed.insert(e.file);
    for (const char *sub : {"rxe", "synthetic"}) {
        std::error_code ec;
        int n = 0;
        for (const auto &ent : std::filesystem::directory_iterator(vectors_dir() + "/" + sub, ec)) {
            const std::string name = ent.path().filename().string();
            if (name.find(".pcap") == std::string::npos)
                continue;
            ++n;
            EXPECT_TRUE(listed.count(std::string(sub) + "/" + name)) << name << " not tested";
        }
        EXPECT_FALSE(ec) << sub << ": " << ec.message();
        EXPECT_GT(n, 0) << sub;
    }
}

TEST(WireVectorsSpecial, Cx4LxCnpIcrc) {
    std::string err;
    const auto frames =
        read_capture(vectors_dir() + "/synthetic/good_published_cx4lx_cnp.pcap", err);
    ASSERT_TRUE(err.empty()) << err;
    ASSERT_EQ(frames.size(), 1u);
    const Frame &f = frames[0];
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f.bytes.data(), f.bytes.size(), p, true), ParseResult::Ok);
    EXPECT_EQ(p.bth.opcode, kCnp);
    EXPECT_TRUE(p.bth.becn);
    EXPECT_EQ(p.bth.psn, 0u);
    EXPECT_EQ(p.dscp, 48);
    EXPECT_EQ(p.payload_len, 0u);
    const uint8_t stored[4] = {0x82, 0xfd, 0x00, 0x2a};
    EXPECT_EQ(0, std::memcmp(f.bytes.data() + p.frame_len - 4, stored, 4));
    std::vector<uint8_t> copy = f.bytes;
    uint8_t computed[4];
    icrc_store(icrc_compute_inplace(copy.data() + p.l3_off, p.frame_len - 4 - p.l3_off, false),
               computed);
    EXPECT_EQ(0, std::memcmp(computed, stored, 4));
    EXPECT_EQ(copy, f.bytes);
}

TEST(WireVectorsSpecial, FcsTrailerExcluded) {
    std::string err;
    const auto frames = read_capture(vectors_dir() + "/synthetic/good_write_fcs.pcapng", err);
    ASSERT_TRUE(err.empty()) << err;
    ASSERT_FALSE(frames.empty());
    for (const Frame &f : frames) {
        ParsedPacket p;
        ASSERT_EQ(parse_frame(f.bytes.data(), f.bytes.size(), p, true), ParseResult::Ok);
        EXPECT_EQ(p.frame_len + 4, f.bytes.size());
    }
}

/* Which QPN rxe's UDP source port is derived from. */
TEST(WireVectorsSpecial, RxeUdpSourcePorts) {
    /* UD and QP1: 0xC000 | hash_32(own QPN, 14); the DETH carries the sender's QPN. */
    for (const char *file :
         {"rxe/ud_pingpong.pcap", "rxe/rping.pcap", "rxe/ucmatose.pcap", "rxe/write_bw_cm.pcap"}) {
        std::string err;
        const auto frames = read_capture(vectors_dir() + "/" + file, err);
        ASSERT_TRUE(err.empty()) << err;
        int n = 0;
        for (const Frame &f : frames) {
            ParsedPacket p;
            if (parse_frame(f.bytes.data(), f.bytes.size(), p, true) != ParseResult::Ok ||
                p.op->transport != Transport::Ud)
                continue;
            ++n;
            EXPECT_EQ(p.udp.sport, udp_sport_for_qpn(p.deth.src_qp)) << file;
        }
        EXPECT_GT(n, 0) << file;
    }
    /* Verbs-connected RC: sport from rdma_calc_flow_label(local, remote QPN), where the
     * sender's own QPN is the DestQP seen in the other direction. The user-space peer
     * (10.77.0.100) uses its own rule: 0xC000 | (own QPN & 0x3fff). */
    for (const char *file : {"rxe/rc_pingpong.pcap", "rxe/atomic_cas.pcap", "rxe/atomic_fadd.pcap",
                             "rxe/read_bw.pcap", "rxe/send_lat.pcap", "rxe/write_bw.pcap",
                             "rxe/write_bw_4k.pcap", "rxe/userspace_peer_rc_pingpong_with_arp.pcap",
                             "rxe/userspace_peer_bad_icrc_retransmit.pcap"}) {
        std::string err;
        const auto frames = read_capture(vectors_dir() + "/" + file, err);
        ASSERT_TRUE(err.empty()) << err;
        std::vector<ParsedPacket> pkts;
        std::map<std::pair<uint32_t, uint32_t>, uint32_t> qp_by_dir; /* (src, dst) -> DestQP */
        for (const Frame &f : frames) {
            ParsedPacket p;
            if (parse_frame(f.bytes.data(), f.bytes.size(), p, false) != ParseResult::Ok)
                continue;
            const auto key = std::make_pair(gid_to_ipv4(p.src_gid), gid_to_ipv4(p.dst_gid));
            auto [it, fresh] = qp_by_dir.emplace(key, p.bth.dest_qp);
            EXPECT_EQ(it->second, p.bth.dest_qp) << "one RC connection per file expected";
            pkts.push_back(p);
        }
        ASSERT_FALSE(pkts.empty()) << file;
        for (const ParsedPacket &p : pkts) {
            const uint32_t src = gid_to_ipv4(p.src_gid), dst = gid_to_ipv4(p.dst_gid);
            const auto rev = qp_by_dir.find(std::make_pair(dst, src));
            ASSERT_NE(rev, qp_by_dir.end()) << file;
            const uint32_t own_qpn = rev->second;
            if (src == 0x0A4D0064) /* 10.77.0.100, the user-space peer */
                EXPECT_EQ(p.udp.sport, 0xC000 | (own_qpn & 0x3FFF)) << file;
            else
                EXPECT_EQ(p.udp.sport,
                          udp_sport_for_flow_label(rdma_calc_flow_label(own_qpn, p.bth.dest_qp)))
                    << file;
        }
    }
}
