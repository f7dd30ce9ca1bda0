/* SPDX-License-Identifier: BSD-3-Clause */
/* RoCEv1 (ethertype 0x8915, GRH): build/parse round trips, the ICRC against a value
 * computed by hand (Python zlib.crc32 over the masked bytes), the header template, and
 * the rejection of malformed frames. */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "wire_headers.h"
#include "wire_icrc.h"
#include "wire_opcode.h"
#include "wire_packet.h"
#include "wire_rocev1.h"
#include "wire_template.h"

using namespace droce::wire;

namespace {

/* RC SEND Only, payload "ABCD", fe80::1 -> fe80::2, TC 0x68, flow label 0x12345, hop 64,
 * DestQP 0x11, AckReq, PSN 1. Frame and ICRC from:
 *   crc = zlib.crc32(b'\xff'*8 + grh_masked + bth_masked + b'ABCD')
 * with the GRH's TC/flow label/hop limit and BTH byte 4 set to ones (= 0xa059862c). */
const char kHandFrameHex[] =
    "02000000000b02000000000a89156681234500141b40fe80000000000000000000000000"
    "0001fe8000000000000000000000000000020400ffff0000001180000001414243442c8659a0";
constexpr uint32_t kHandIcrc = 0xa059862c;

std::vector<uint8_t> unhex(const char *s) {
    std::vector<uint8_t> v;
    for (size_t i = 0; s[i] && s[i + 1]; i += 2) {
        auto nib = [](char c) { return static_cast<uint8_t>(c <= '9' ? c - '0' : c - 'a' + 10); };
        v.push_back(static_cast<uint8_t>(nib(s[i]) << 4 | nib(s[i + 1])));
    }
    return v;
}

FrameSpec hand_spec(const uint8_t *payload, FrameSpec::Seg &seg) {
    FrameSpec s{};
    const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x0b}, src[6] = {0x02, 0, 0, 0, 0, 0x0a};
    std::memcpy(s.eth.dst, dst, 6);
    std::memcpy(s.eth.src, src, 6);
    s.rocev1 = true;
    s.src_gid[0] = s.dst_gid[0] = 0xfe;
    s.src_gid[1] = s.dst_gid[1] = 0x80;
    s.src_gid[15] = 1;
    s.dst_gid[15] = 2;
    s.tos = 0x68;
    s.flow_label = 0x12345;
    s.ttl = 64;
    s.bth.opcode = kRcSendOnly;
    s.bth.pkey = kDefaultPkey;
    s.bth.dest_qp = 0x11;
    s.bth.ack_req = true;
    s.bth.psn = 1;
    seg = {payload, 4, 0};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = 4;
    return s;
}

/* Every field set, like test_wire_packet's make_spec, on a RoCEv1 path. */
FrameSpec full_spec(uint8_t opcode, bool vlan, const FrameSpec::Seg *seg, uint32_t plen) {
    FrameSpec s{};
    const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x0b}, src[6] = {0x02, 0, 0, 0, 0, 0x0a};
    std::memcpy(s.eth.dst, dst, 6);
    std::memcpy(s.eth.src, src, 6);
    s.eth.has_vlan = vlan;
    s.eth.vlan_tci = vlan ? 0x6064 : 0;
    s.rocev1 = true;
    gid_from_ipv4(0x0A4D0002, s.src_gid); /* IPv4-mapped GIDs are fine in a GRH */
    for (int i = 0; i < 16; ++i)
        s.dst_gid[i] = static_cast<uint8_t>(0x10 + i);
    s.tos = 26 << 2;
    s.ttl = 7;
    s.flow_label = 0xABCDE;
    s.bth.opcode = opcode;
    s.bth.pkey = kDefaultPkey;
    s.bth.dest_qp = 0x22;
    s.bth.psn = 0xFFFFFE;
    s.reth = Reth{0x7F0000001000ull, 0xA1B2C3D4, 4096};
    s.aeth = Aeth{0x1F, 0x123456};
    s.atomic = AtomicEth{0x1000, 0x4242, 0x1111222233334444ull, 0x5555666677778888ull};
    s.atomic_ack = AtomicAckEth{0x0102030405060708ull};
    s.imm = 0xDEADBEEF;
    s.ieth = 0xCAFE0001;
    if (opcode_info(opcode).is(kOpPayload)) {
        s.segs = seg;
        s.nsegs = 1;
        s.payload_len = plen;
    }
    return s;
}

} // namespace

TEST(WireRoceV1, BuildMatchesHandCheckedFrameAndIcrc) {
    const uint8_t payload[4] = {'A', 'B', 'C', 'D'};
    FrameSpec::Seg seg{};
    const FrameSpec s = hand_spec(payload, seg);
    const std::vector<uint8_t> want = unhex(kHandFrameHex);
    uint8_t out[256];
    ASSERT_EQ(frame_len(s), want.size());
    ASSERT_EQ(build_frame(s, out, sizeof(out)), want.size());
    EXPECT_EQ(0, std::memcmp(out, want.data(), want.size()));
    const size_t crc_len = want.size() - kEthLen - kIcrcLen;
    EXPECT_EQ(icrc_v1_compute(want.data() + kEthLen, crc_len), kHandIcrc);
    EXPECT_EQ(icrc_v1_compute_reference(want.data() + kEthLen, crc_len), kHandIcrc);

    ParsedPacket p{};
    ASSERT_EQ(parse_frame(want.data(), want.size(), p, true), ParseResult::Ok);
    EXPECT_TRUE(p.rocev1);
    EXPECT_EQ(p.icrc, kHandIcrc);
    EXPECT_EQ(p.bth_off, kEthLen + kGrhLen);
    EXPECT_EQ(p.payload_len, 4u);
    EXPECT_EQ(0, std::memcmp(p.payload, "ABCD", 4));
    EXPECT_EQ(0, std::memcmp(p.src_gid, s.src_gid, 16));
    EXPECT_EQ(0, std::memcmp(p.dst_gid, s.dst_gid, 16));
    EXPECT_EQ(p.dscp, 0x68 >> 2);
    EXPECT_EQ(p.ttl, 64);
}

TEST(WireRoceV1, VariantFieldsAreMaskedOthersAreNot) {
    std::vector<uint8_t> f = unhex(kHandFrameHex);
    ParsedPacket p{};
    /* Traffic class, flow label, hop limit and BTH byte 4 may change on the way. */
    for (size_t off : {kEthLen + 1, kEthLen + 2, kEthLen + 3, kEthLen + 7, kEthLen + kGrhLen + 4}) {
        std::vector<uint8_t> g = f;
        g[off] ^= 0x5A;
        EXPECT_EQ(parse_frame(g.data(), g.size(), p, true), ParseResult::Ok) << off;
    }
    /* Anything else is covered: a GID, the P_Key, the payload, the ICRC itself. */
    for (size_t off :
         {kEthLen + 8, kEthLen + 39, kEthLen + kGrhLen + 2, f.size() - 6, f.size() - 1}) {
        std::vector<uint8_t> g = f;
        g[off] ^= 0x01;
        EXPECT_EQ(parse_frame(g.data(), g.size(), p, true), ParseResult::BadIcrc) << off;
    }
}

TEST(WireRoceV1, MalformedFramesHaveNamedReasons) {
    const std::vector<uint8_t> f = unhex(kHandFrameHex);
    ParsedPacket p{};
    std::vector<uint8_t> g = f;
    g[kEthLen + 6] = 17; /* next header UDP: not a RoCEv1 GRH */
    EXPECT_EQ(parse_frame(g.data(), g.size(), p, true), ParseResult::BadIpHeader);
    g = f;
    g[kEthLen] = 0x46; /* version 4 */
    EXPECT_EQ(parse_frame(g.data(), g.size(), p, true), ParseResult::BadIpHeader);
    g = f;
    g[kEthLen + 5] += 4; /* payload length past the frame */
    EXPECT_EQ(parse_frame(g.data(), g.size(), p, true), ParseResult::TooShort);
    g = f;
    g[kEthLen + 4] = 0;
    g[kEthLen + 5] = 8; /* shorter than a BTH + ICRC */
    EXPECT_EQ(parse_frame(g.data(), g.size(), p, true), ParseResult::TooShort);
    g = f;
    g[kEthLen + kGrhLen + 1] = 0x01; /* TVer 1 */
    EXPECT_EQ(parse_frame(g.data(), g.size(), p, false), ParseResult::BadTver);
    for (size_t n = 0; n < f.size(); ++n) /* every truncation is refused, never read past */
        EXPECT_NE(parse_frame(f.data(), n, p, true), ParseResult::Ok) << n;
}

TEST(WireRoceV1, RoundTripEveryRcOpcodeWithAndWithoutVlan) {
    const uint8_t rc[] = {
        kRcSendFirst,        kRcSendMiddle,        kRcSendLast,           kRcSendLastImm,
        kRcSendOnly,         kRcSendOnlyImm,       kRcWriteFirst,         kRcWriteMiddle,
        kRcWriteLast,        kRcWriteLastImm,      kRcWriteOnly,          kRcWriteOnlyImm,
        kRcReadRequest,      kRcReadResponseFirst, kRcReadResponseMiddle, kRcReadResponseLast,
        kRcReadResponseOnly, kRcAcknowledge,       kRcAtomicAcknowledge,  kRcCompareSwap,
        kRcFetchAdd,         kRcSendLastInv,       kRcSendOnlyInv};
    std::vector<uint8_t> payload(1027);
    for (size_t i = 0; i < payload.size(); ++i)
        payload[i] = static_cast<uint8_t>(i * 7);
    const FrameSpec::Seg seg{payload.data(), static_cast<uint32_t>(payload.size()), 0};
    for (uint8_t op : rc)
        for (bool vlan : {false, true}) {
            const FrameSpec s = full_spec(op, vlan, &seg, static_cast<uint32_t>(payload.size()));
            std::vector<uint8_t> out(frame_len(s));
            ASSERT_EQ(build_frame(s, out.data(), out.size()), out.size());
            HeaderTemplate t;
            std::vector<uint8_t> out2(out.size());
            ASSERT_EQ(t.build_frame(s, out2.data(), out2.size()), out.size());
            EXPECT_EQ(out, out2) << int{op};
            ParsedPacket p{};
            ASSERT_EQ(parse_frame(out.data(), out.size(), p, true), ParseResult::Ok) << int{op};
            EXPECT_TRUE(p.rocev1 && p.ipv6);
            EXPECT_EQ(p.eth.ethertype, kEtherTypeRoceV1);
            EXPECT_EQ(p.eth.has_vlan, vlan);
            EXPECT_EQ(p.bth.opcode, op);
            EXPECT_EQ(p.bth.psn, s.bth.psn);
            EXPECT_EQ(p.ip6.flow_label, s.flow_label);
            EXPECT_EQ(p.ttl, s.ttl);
            EXPECT_EQ(0, std::memcmp(p.src_gid, s.src_gid, 16));
            EXPECT_EQ(0, std::memcmp(p.dst_gid, s.dst_gid, 16));
            EXPECT_EQ(p.payload_len, s.payload_len);
            if (s.payload_len) {
                EXPECT_EQ(0, std::memcmp(p.payload, payload.data(), s.payload_len));
            }
            if (opcode_info(op).off_reth) {
                EXPECT_EQ(p.reth.rkey, s.reth.rkey);
            }
            /* The gather-list ICRC (zero-copy TX, chained RX) agrees. */
            const size_t l3 = p.l3_off, hl = p.payload_off - l3;
            const ByteSpan rest{out.data() + p.payload_off,
                                static_cast<uint32_t>(out.size() - kIcrcLen - p.payload_off)};
            EXPECT_EQ(icrc_v1_compute_segments(out.data() + l3, hl, &rest, 1), p.icrc);
            /* A RoCEv2 frame of the same spec is a different frame (UDP, 0x86DD). */
            FrameSpec v2 = s;
            v2.rocev1 = false;
            v2.ipv6 = true;
            EXPECT_EQ(frame_len(v2), out.size() + kUdpLen);
        }
}

TEST(WireRoceV1, TemplateRebuildsWhenTheFramingChanges) {
    const uint8_t payload[4] = {'A', 'B', 'C', 'D'};
    FrameSpec::Seg seg{};
    FrameSpec s = hand_spec(payload, seg);
    HeaderTemplate t;
    uint8_t a[256], b[256];
    ASSERT_NE(t.build_frame(s, a, sizeof(a)), 0u);
    FrameSpec v2 = s;
    v2.rocev1 = false;
    v2.ipv6 = true;
    EXPECT_FALSE(t.matches(v2));
    const size_t n = t.build_frame(v2, a, sizeof(a));
    ASSERT_EQ(n, build_frame(v2, b, sizeof(b)));
    EXPECT_EQ(0, std::memcmp(a, b, n));
    EXPECT_EQ(t.rebuilds(), 2u);
}
