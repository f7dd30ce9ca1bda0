/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/wire: header codecs, opcode table, PSN arithmetic, AETH tables, helpers. */
#include <gtest/gtest.h>

#include <cstring>

#include "wire_headers.h"
#include "wire_opcode.h"
#include "wire_packet.h"

using namespace droce::wire;

TEST(WirePsn, SerialArithmeticAcrossWrap) {
    EXPECT_EQ(psn_diff(5, 3), 2);
    EXPECT_EQ(psn_diff(3, 5), -2);
    EXPECT_EQ(psn_diff(0, 0xFFFFFF), 1);
    EXPECT_EQ(psn_diff(0xFFFFFF, 0), -1);
    EXPECT_EQ(psn_diff(2, 0xFFFFFE), 4);
    EXPECT_EQ(psn_diff(0xFFFFFE, 2), -4);
    EXPECT_EQ(psn_diff(0x7FFFFF, 0), 0x7FFFFF);  /* largest "after" */
    EXPECT_EQ(psn_diff(0x800000, 0), -0x800000); /* half space wraps to "before" */
    EXPECT_EQ(psn_diff(0x123456, 0x123456), 0);
    EXPECT_EQ(psn_add(0xFFFFFF, 1), 0u);
    EXPECT_EQ(psn_add(0xFFFFF0, 0x20), 0x10u);
    EXPECT_EQ(psn_add(1, 2), 3u);
    /* bits above 24 are ignored */
    EXPECT_EQ(psn_diff(0xAB000005, 0xCD000003), 2);
}

TEST(WireAeth, SyndromeDecoding) {
    Aeth a{0x1F, 7};
    EXPECT_EQ(a.type(), AethType::Ack);
    EXPECT_EQ(a.value(), kAethCreditInvalid);
    Aeth r{0x20 | 14, 0};
    EXPECT_EQ(r.type(), AethType::RnrNak);
    EXPECT_EQ(r.value(), 14);
    Aeth n{kAethNakPsnSeqErr, 0};
    EXPECT_EQ(n.type(), AethType::Nak);
    EXPECT_EQ(n.value(), 0);
    EXPECT_EQ((Aeth{kAethNakRemoteAccessErr, 0}.value()), 2);
    EXPECT_EQ((Aeth{kAethNakInvalidRdRequest, 0}.type()), AethType::Nak);
    uint8_t b[4];
    encode(Aeth{0x61, 0xABCDEF}, b);
    EXPECT_EQ(b[0], 0x61);
    EXPECT_EQ(b[1], 0xAB);
    Aeth d = decode_aeth(b);
    EXPECT_EQ(d.syndrome, 0x61);
    EXPECT_EQ(d.msn, 0xABCDEFu);
}

TEST(WireAeth, RnrTimerTable) {
    const uint32_t expect[32] = {655360, 10,    20,    30,     40,     60,     80,     120,
                                 160,    240,   320,   480,    640,    960,    1280,   1920,
                                 2560,   3840,  5120,  7680,   10240,  15360,  20480,  30720,
                                 40960,  61440, 81920, 122880, 163840, 245760, 327680, 491520};
    for (uint8_t c = 0; c < 32; ++c)
        EXPECT_EQ(rnr_timer_code_to_us(c), expect[c]) << "code " << int(c);
}

TEST(WireAeth, CreditTable) {
    const uint32_t expect[31] = {0,    1,    2,    3,     4,     6,     8,    12,
                                 16,   24,   32,   48,    64,    96,    128,  192,
                                 256,  384,  512,  768,   1024,  1536,  2048, 3072,
                                 4096, 6144, 8192, 12288, 16384, 24576, 32768};
    for (uint8_t c = 0; c < 31; ++c)
        EXPECT_EQ(credit_code_to_count(c), expect[c]) << "code " << int(c);
}

TEST(WireOpcode, Offsets) {
    const OpcodeInfo &wi = opcode_info(kRcWriteOnlyImm);
    EXPECT_STREQ(wi.name, "RC RDMA_WRITE_ONLY_WITH_IMMEDIATE");
    EXPECT_EQ(wi.off_reth, 12);
    EXPECT_EQ(wi.off_imm, 28);
    EXPECT_EQ(wi.hdr_len, 32);
    EXPECT_TRUE(wi.has(kHdrReth) && wi.has(kHdrImmDt) && !wi.has(kHdrAeth));
    EXPECT_TRUE(wi.is(kOpRequest) && wi.is(kOpFirst) && wi.is(kOpLast) && wi.is(kOpImm));

    EXPECT_EQ(opcode_info(kRcSendMiddle).hdr_len, 12);
    EXPECT_EQ(opcode_info(kRcWriteFirst).off_reth, 12);
    EXPECT_EQ(opcode_info(kRcWriteFirst).hdr_len, 28);
    EXPECT_EQ(opcode_info(kRcReadRequest).hdr_len, 28);
    EXPECT_FALSE(opcode_info(kRcReadRequest).is(kOpPayload));
    EXPECT_EQ(opcode_info(kRcReadResponseFirst).off_aeth, 12);
    EXPECT_EQ(opcode_info(kRcReadResponseFirst).hdr_len, 16);
    EXPECT_EQ(opcode_info(kRcReadResponseMiddle).hdr_len, 12);
    EXPECT_EQ(opcode_info(kRcReadResponseLast).hdr_len, 16);
    EXPECT_EQ(opcode_info(kRcReadResponseOnly).off_aeth, 12);
    EXPECT_EQ(opcode_info(kRcAcknowledge).hdr_len, 16);
    EXPECT_TRUE(opcode_info(kRcAcknowledge).is(kOpAck));
    EXPECT_EQ(opcode_info(kRcAtomicAcknowledge).off_aeth, 12);
    EXPECT_EQ(opcode_info(kRcAtomicAcknowledge).off_atomic_ack_eth, 16);
    EXPECT_EQ(opcode_info(kRcAtomicAcknowledge).hdr_len, 24);
    EXPECT_EQ(opcode_info(kRcCompareSwap).off_atomic_eth, 12);
    EXPECT_EQ(opcode_info(kRcCompareSwap).hdr_len, 40);
    EXPECT_EQ(opcode_info(kRcFetchAdd).hdr_len, 40);
    EXPECT_EQ(opcode_info(kRcSendLastImm).off_imm, 12);
    EXPECT_EQ(opcode_info(kRcSendOnlyInv).off_ieth, 12);
    EXPECT_EQ(opcode_info(kRcSendLastInv).hdr_len, 16);
    EXPECT_TRUE(opcode_info(kRcSendLastInv).is(kOpInv));
    EXPECT_EQ(opcode_info(kUdSendOnly).off_deth, 12);
    EXPECT_EQ(opcode_info(kUdSendOnly).hdr_len, 20);
    EXPECT_EQ(opcode_info(kUdSendOnlyImm).off_deth, 12);
    EXPECT_EQ(opcode_info(kUdSendOnlyImm).off_imm, 20);
    EXPECT_EQ(opcode_info(kUdSendOnlyImm).hdr_len, 24);
    EXPECT_EQ(opcode_info(kUdSendOnly).transport, Transport::Ud);
    EXPECT_EQ(opcode_info(kCnp).hdr_len, 28);
    EXPECT_EQ(opcode_info(kCnp).transport, Transport::Cnp);
    EXPECT_TRUE(opcode_info(kCnp).has(kHdrCnpPad));
}

TEST(WireOpcode, KnownSetAndUnknownRows) {
    int known = 0;
    for (int i = 0; i < 256; ++i) {
        const OpcodeInfo &o = opcode_info(static_cast<uint8_t>(i));
        if (!o.valid()) {
            EXPECT_EQ(o.hdr_len, 0) << i;
            continue;
        }
        ++known;
        /* every present header lies inside hdr_len, after the BTH */
        for (uint8_t off : {o.off_reth, o.off_aeth, o.off_atomic_eth, o.off_atomic_ack_eth,
                            o.off_imm, o.off_ieth, o.off_deth})
            if (off) {
                EXPECT_GE(off, 12);
            }
        EXPECT_GE(o.hdr_len, 12);
        EXPECT_LE(o.hdr_len, 40);
        /* exactly one direction except the CNP */
        if (i != kCnp) {
            EXPECT_NE(o.is(kOpRequest), o.is(kOpResponse)) << i;
        }
    }
    EXPECT_EQ(known, 23 + 2 + 1);
    EXPECT_FALSE(opcode_info(0x15).valid());
    EXPECT_FALSE(opcode_info(0x18).valid());
    EXPECT_FALSE(opcode_info(0x20).valid()); /* UC: not supported */
    EXPECT_EQ(opcode_info(0x20).transport, Transport::Uc);
    EXPECT_FALSE(opcode_info(0xFF).valid());
}

TEST(WireHeaders, BthRoundTrip) {
    Bth b{};
    b.opcode = kRcWriteMiddle;
    b.se = true;
    b.mig = true;
    b.pad_cnt = 3;
    b.tver = 0;
    b.pkey = 0x8001;
    b.fecn = true;
    b.becn = false;
    b.dest_qp = 0xABCDEF;
    b.ack_req = true;
    b.psn = 0xFFFFFE;
    uint8_t p[12];
    encode(b, p);
    const uint8_t expect[12] = {0x07, 0xF0, 0x80, 0x01, 0x80, 0xAB,
                                0xCD, 0xEF, 0x80, 0xFF, 0xFF, 0xFE};
    EXPECT_EQ(0, std::memcmp(p, expect, 12));
    Bth d = decode_bth(p);
    EXPECT_EQ(d.opcode, b.opcode);
    EXPECT_EQ(d.se, true);
    EXPECT_EQ(d.mig, true);
    EXPECT_EQ(d.pad_cnt, 3);
    EXPECT_EQ(d.pkey, 0x8001);
    EXPECT_TRUE(d.fecn);
    EXPECT_FALSE(d.becn);
    EXPECT_EQ(d.dest_qp, 0xABCDEFu);
    EXPECT_TRUE(d.ack_req);
    EXPECT_EQ(d.psn, 0xFFFFFEu);
}

TEST(WireHeaders, ExtHeadersRoundTrip) {
    uint8_t p[32];
    encode(Reth{0x0102030405060708ull, 0xA1B2C3D4, 0x1000}, p);
    EXPECT_EQ(p[0], 0x01);
    EXPECT_EQ(p[8], 0xA1);
    Reth r = decode_reth(p);
    EXPECT_EQ(r.va, 0x0102030405060708ull);
    EXPECT_EQ(r.rkey, 0xA1B2C3D4u);
    EXPECT_EQ(r.dma_len, 0x1000u);

    encode(AtomicEth{1, 2, 3, 4}, p);
    AtomicEth a = decode_atomic_eth(p);
    EXPECT_EQ(a.va, 1u);
    EXPECT_EQ(a.rkey, 2u);
    EXPECT_EQ(a.swap_add, 3u);
    EXPECT_EQ(a.compare, 4u);
    EXPECT_EQ(p[19], 3);
    EXPECT_EQ(p[27], 4);

    encode(AtomicAckEth{0xDEADBEEFCAFEF00Dull}, p);
    EXPECT_EQ(decode_atomic_ack_eth(p).orig, 0xDEADBEEFCAFEF00Dull);

    encode(Deth{0x11111111, 0x123456}, p);
    EXPECT_EQ(p[4], 0);
    EXPECT_EQ(p[5], 0x12);
    Deth d = decode_deth(p);
    EXPECT_EQ(d.qkey, 0x11111111u);
    EXPECT_EQ(d.src_qp, 0x123456u);

    encode_u32(0xCAFEBABE, p);
    EXPECT_EQ(p[0], 0xCA);
    EXPECT_EQ(decode_u32(p), 0xCAFEBABEu);
}

TEST(WireHeaders, EthAndIp) {
    EthHdr e{{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}, true, 0x6064, kEtherTypeIpv4};
    uint8_t p[64];
    EXPECT_EQ(encoded_len(e), 18u);
    EXPECT_EQ(encode(e, p), 18u);
    EXPECT_EQ(p[12], 0x81);
    EthHdr d{};
    EXPECT_EQ(decode_eth(p, 18, d), 18u);
    EXPECT_EQ(decode_eth(p, 17, d), 0u);
    EXPECT_EQ(decode_eth(p, 13, d), 0u);
    EXPECT_TRUE(d.has_vlan);
    EXPECT_EQ(d.vlan_tci, 0x6064);
    EXPECT_EQ(d.ethertype, kEtherTypeIpv4);

    /* IPv4 checksum: classic example from RFC 1071 style header */
    const uint8_t hdr[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                             0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
    EXPECT_EQ(ipv4_checksum(hdr), 0xb861);
    Ipv4Hdr ip{};
    ASSERT_TRUE(decode_ipv4(hdr, 20, ip));
    EXPECT_FALSE(decode_ipv4(hdr, 19, ip));
    encode(ip, p);
    EXPECT_EQ(0, std::memcmp(p, hdr, 20));

    Ipv6Hdr v6{};
    v6.tclass = 0xAB;
    v6.flow_label = 0x12345;
    v6.payload_len = 100;
    v6.next_hdr = 17;
    v6.hop_limit = 64;
    encode(v6, p);
    EXPECT_EQ(p[0], 0x6A);
    EXPECT_EQ(p[1], 0xB1);
    Ipv6Hdr v6d{};
    ASSERT_TRUE(decode_ipv6(p, 40, v6d));
    EXPECT_EQ(v6d.tclass, 0xAB);
    EXPECT_EQ(v6d.flow_label, 0x12345u);
    EXPECT_EQ(v6d.payload_len, 100);
}

TEST(WireHelpers, MtuTables) {
    EXPECT_EQ(ib_mtu_to_bytes(1), 256u);
    EXPECT_EQ(ib_mtu_to_bytes(3), 1024u);
    EXPECT_EQ(ib_mtu_to_bytes(5), 4096u);
    EXPECT_EQ(ib_mtu_to_bytes(0), 0u);
    EXPECT_EQ(ib_mtu_to_bytes(6), 0u);
    EXPECT_EQ(ib_mtu_from_bytes(2048), 4);
    EXPECT_EQ(ib_mtu_from_bytes(1500), 0);
    /* rxe: active_mtu 1024 at Ethernet MTU 1500, 4096 at 4200 */
    EXPECT_EQ(ib_mtu_for_eth_mtu(1500), 3);
    EXPECT_EQ(ib_mtu_for_eth_mtu(4200), 5);
    EXPECT_EQ(ib_mtu_for_eth_mtu(9000), 5);
    EXPECT_EQ(ib_mtu_for_eth_mtu(1024 + 72), 3);
    EXPECT_EQ(ib_mtu_for_eth_mtu(1024 + 71), 2);
    EXPECT_EQ(ib_mtu_for_eth_mtu(200), 0);
    EXPECT_EQ(ib_mtu_for_eth_mtu(0), 0);
}

TEST(WireHelpers, Gid) {
    uint8_t g[16];
    gid_from_ipv4(0x0A4D0002, g);
    const uint8_t expect[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 77, 0, 2};
    EXPECT_EQ(0, std::memcmp(g, expect, 16));
    EXPECT_TRUE(gid_is_ipv4(g));
    EXPECT_EQ(gid_to_ipv4(g), 0x0A4D0002u);
    g[0] = 0xFE;
    EXPECT_FALSE(gid_is_ipv4(g));
}

TEST(WireHelpers, UdpSportHash) {
    /* hash_32(val, 14) = (val * 0x61C88647) >> 18, computed independently */
    auto ref = [](uint32_t q) {
        return static_cast<uint16_t>(0xC000 | ((uint32_t(q * 0x61C88647ull) >> 18) & 0x3FFF));
    };
    for (uint32_t q : {0u, 1u, 2u, 17u, 0x11u, 0x22u, 0xFFFFFFu, 0x123456u})
        EXPECT_EQ(udp_sport_for_qpn(q), ref(q)) << q;
    EXPECT_EQ(udp_sport_for_qpn(0), 0xC000);
    EXPECT_EQ(udp_sport_for_qpn(1), 0xC000 | (0x61C88647u >> 18)); /* 0xD872 */
    EXPECT_EQ(udp_sport_for_qpn(1), 0xD872);
    for (uint32_t q = 0; q < 5000; ++q)
        EXPECT_GE(udp_sport_for_qpn(q), 0xC000);
}

TEST(WireParse, ResultNames) {
    EXPECT_STREQ(parse_result_name(ParseResult::Ok), "ok");
    EXPECT_STREQ(parse_result_name(ParseResult::BadIcrc), "bad_icrc");
    EXPECT_STREQ(parse_result_name(ParseResult::TooShort), "too_short");
    for (int i = 0; i < static_cast<int>(ParseResult::Count_); ++i)
        EXPECT_STRNE(parse_result_name(static_cast<ParseResult>(i)), "unknown");
}
