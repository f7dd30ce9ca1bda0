/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/wire: build/parse round trips, ICRC coverage, rejection reasons, truncation. */
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "wire_headers.h"
#include "wire_icrc.h"
#include "wire_opcode.h"
#include "wire_packet.h"

using namespace droce::wire;

namespace {

const uint8_t kAllOpcodes[] = {kRcSendFirst,          kRcSendMiddle,
                               kRcSendLast,           kRcSendLastImm,
                               kRcSendOnly,           kRcSendOnlyImm,
                               kRcWriteFirst,         kRcWriteMiddle,
                               kRcWriteLast,          kRcWriteLastImm,
                               kRcWriteOnly,          kRcWriteOnlyImm,
                               kRcReadRequest,        kRcReadResponseFirst,
                               kRcReadResponseMiddle, kRcReadResponseLast,
                               kRcReadResponseOnly,   kRcAcknowledge,
                               kRcAtomicAcknowledge,  kRcCompareSwap,
                               kRcFetchAdd,           kRcSendLastInv,
                               kRcSendOnlyInv,        kUdSendOnly,
                               kUdSendOnlyImm,        kCnp};

struct Built {
    std::vector<uint8_t> payload;
    FrameSpec::Seg seg;
    FrameSpec spec;
    std::vector<uint8_t> frame;
};

/* A spec with every field non-trivial, so a round trip proves each one. */
FrameSpec make_spec(uint8_t opcode, bool ipv6, bool vlan, uint32_t plen) {
    FrameSpec s{};
    const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x0b}, src[6] = {0x02, 0, 0, 0, 0, 0x0a};
    std::memcpy(s.eth.dst, dst, 6);
    std::memcpy(s.eth.src, src, 6);
    s.eth.has_vlan = vlan;
    s.eth.vlan_tci = vlan ? 0x6064 : 0;
    s.ipv6 = ipv6;
    if (ipv6) {
        for (int i = 0; i < 16; ++i) {
            s.src_gid[i] = static_cast<uint8_t>(0xF0 + i);
            s.dst_gid[i] = static_cast<uint8_t>(0x10 + i);
        }
        s.flow_label = 0x12345;
    } else {
        gid_from_ipv4(0x0A4D0002, s.src_gid);
        gid_from_ipv4(0x0A4D0003, s.dst_gid);
    }
    s.tos = 26 << 2 | 2;
    s.ttl = 64;
    s.ip_id = 0x1234;
    s.udp_sport = udp_sport_for_qpn(0x11);
    s.bth.opcode = opcode;
    s.bth.se = true;
    s.bth.pkey = kDefaultPkey;
    s.bth.becn = opcode == kCnp;
    s.bth.dest_qp = 0x000022;
    s.bth.ack_req = true;
    s.bth.psn = 0xFFFFFE;
    s.reth = Reth{0x00007F0000001000ull, 0xA1B2C3D4, 4096};
    s.aeth = Aeth{0x1F, 0x123456};
    s.atomic = AtomicEth{0x1000, 0x4242, 0x1111222233334444ull, 0x5555666677778888ull};
    s.atomic_ack = AtomicAckEth{0x0102030405060708ull};
    s.deth = Deth{0x11111111, 0x000033};
    s.imm = 0xDEADBEEF;
    s.ieth = 0xCAFE0001;
    s.payload_len = opcode_info(opcode).is(kOpPayload) ? plen : 0;
    return s;
}

Built build(uint8_t opcode, bool ipv6, bool vlan, uint32_t plen) {
    Built b;
    b.spec = make_spec(opcode, ipv6, vlan, plen);
    b.payload.resize(b.spec.payload_len);
    for (size_t i = 0; i < b.payload.size(); ++i)
        b.payload[i] = static_cast<uint8_t>(i * 7 + 3);
    b.seg = FrameSpec::Seg{b.payload.data(), b.spec.payload_len};
    b.spec.segs = &b.seg;
    b.spec.nsegs = 1;
    b.frame.resize(frame_len(b.spec));
    const size_t n = build_frame(b.spec, b.frame.data(), b.frame.size());
    EXPECT_EQ(n, b.frame.size());
    return b;
}

} // namespace

TEST(WireCrc, PrefixSeedMatchesRxe) {
    uint32_t st = 0xFFFFFFFF;
    for (int i = 0; i < 8; ++i) {
        st ^= 0xFF;
        for (int k = 0; k < 8; ++k)
            st = (st & 1) ? (0xEDB88320u ^ (st >> 1)) : (st >> 1);
    }
    EXPECT_EQ(st, 0xDEBB20E3u);
}

TEST(WireCrc, DpdkMatchesReference) {
    std::mt19937 rng(42);
    for (size_t len : {48u, 49u, 60u, 64u, 100u, 1024u, 1500u, 4096u, 9000u, 16384u}) {
        for (bool v6 : {false, true}) {
            if (len < (v6 ? 60u : 40u))
                continue;
            std::vector<uint8_t> buf(len + 8);
            for (auto &c : buf)
                c = static_cast<uint8_t>(rng());
            std::vector<uint8_t> copy = buf;
            const uint32_t ref = icrc_compute_reference(buf.data() + 8, len, v6);
            EXPECT_EQ(icrc_compute(buf.data() + 8, len, v6), ref) << len;
            EXPECT_EQ(icrc_compute_inplace(buf.data() + 8, len, v6), ref) << len;
            EXPECT_EQ(buf, copy) << "inplace must restore everything";
        }
    }
}

/* crc32_eth folds four lanes of 16-byte blocks from 256 bytes on (rte_net_crc below):
 * every length across the thresholds (256, then each 64-byte 4-lane step; each residue
 * mod 16: the zero-filled head) and every alignment of the start, against a bitwise
 * CRC-32. */
TEST(WireCrc, Crc32EthEveryLengthAndAlignment) {
    std::mt19937 rng(4791);
    std::vector<uint8_t> buf(2200);
    for (auto &c : buf)
        c = static_cast<uint8_t>(rng());
    auto bitwise = [](const uint8_t *p, size_t n) {
        uint32_t st = 0xFFFFFFFF;
        for (size_t i = 0; i < n; ++i) {
            st ^= p[i];
            for (int k = 0; k < 8; ++k)
                st = (st & 1) ? (0xEDB88320u ^ (st >> 1)) : (st >> 1);
        }
        return ~st;
    };
    for (size_t len = 0; len <= 2100; len += (len < 300 ? 1 : 37)) {
        for (size_t off : {0u, 1u, 3u, 8u, 15u}) {
            ASSERT_EQ(crc32_eth(buf.data() + off, len), bitwise(buf.data() + off, len))
                << "len " << len << " off " << off;
        }
    }
}

TEST(WireCrc, OversizeAndUndersizeAreSafe) {
    std::vector<uint8_t> big(kIcrcMaxLen + 100, 0x5A);
    const uint32_t ref = icrc_compute_reference(big.data(), big.size(), false);
    EXPECT_EQ(icrc_compute(big.data(), big.size(), false), ref);
    uint8_t small[64] = {};
    EXPECT_EQ(icrc_compute(small + 8, 39, false), 0u);
    EXPECT_EQ(icrc_compute(small + 8, 59, true), 0u);
    EXPECT_EQ(icrc_compute_inplace(small + 8, 39, false), 0u);
}

TEST(WireCrc, LoadStoreLsbFirst) {
    uint8_t p[4];
    icrc_store(0x2A00FD82, p);
    EXPECT_EQ(p[0], 0x82);
    EXPECT_EQ(p[3], 0x2A);
    EXPECT_EQ(icrc_load(p), 0x2A00FD82u);
}

TEST(WireBuild, RoundTripEveryOpcode) {
    for (uint8_t opc : kAllOpcodes) {
        for (bool v6 : {false, true}) {
            for (bool vlan : {false, true}) {
                for (uint32_t plen : {0u, 1u, 2u, 3u, 4u, 61u, 1024u}) {
                    SCOPED_TRACE(testing::Message() << "op " << int(opc) << " v6 " << v6 << " vlan "
                                                    << vlan << " plen " << plen);
                    Built b = build(opc, v6, vlan, plen);
                    const FrameSpec &s = b.spec;
                    ParsedPacket p;
                    ASSERT_EQ(parse_frame(b.frame.data(), b.frame.size(), p, true),
                              ParseResult::Ok);
                    EXPECT_EQ(p.frame_len, b.frame.size());
                    EXPECT_EQ(p.ipv6, v6);
                    EXPECT_EQ(p.eth.has_vlan, vlan);
                    EXPECT_EQ(p.eth.vlan_tci, s.eth.vlan_tci);
                    EXPECT_EQ(0, std::memcmp(p.eth.dst, s.eth.dst, 6));
                    EXPECT_EQ(0, std::memcmp(p.src_gid, s.src_gid, 16));
                    EXPECT_EQ(0, std::memcmp(p.dst_gid, s.dst_gid, 16));
                    EXPECT_EQ((p.dscp << 2) | p.ecn, s.tos);
                    EXPECT_EQ(p.ttl, s.ttl);
                    if (v6) {
                        EXPECT_EQ(p.ip6.flow_label, s.flow_label);
                    } else {
                        EXPECT_EQ(p.ip4.id, s.ip_id);
                        EXPECT_EQ(p.ip4.frag, 0x4000);
                        EXPECT_EQ(p.ip4.checksum, ipv4_checksum(b.frame.data() + p.l3_off));
                    }
                    EXPECT_EQ(p.udp.sport, s.udp_sport);
                    EXPECT_EQ(p.udp.dport, kRoceV2UdpPort);
                    EXPECT_EQ(p.udp.csum, 0);
                    EXPECT_EQ(p.bth.opcode, opc);
                    EXPECT_EQ(p.bth.se, s.bth.se);
                    EXPECT_EQ(p.bth.becn, s.bth.becn);
                    EXPECT_EQ(p.bth.pkey, s.bth.pkey);
                    EXPECT_EQ(p.bth.dest_qp, s.bth.dest_qp);
                    EXPECT_EQ(p.bth.psn, s.bth.psn);
                    EXPECT_EQ(p.bth.ack_req, s.bth.ack_req);
                    EXPECT_EQ((p.payload_len + p.bth.pad_cnt) % 4, 0u);
                    EXPECT_EQ(p.op, &opcode_info(opc));
                    const OpcodeInfo &op = *p.op;
                    if (op.has(kHdrReth)) {
                        EXPECT_EQ(p.reth.va, s.reth.va);
                        EXPECT_EQ(p.reth.rkey, s.reth.rkey);
                        EXPECT_EQ(p.reth.dma_len, s.reth.dma_len);
                    }
                    if (op.has(kHdrAeth)) {
                        EXPECT_EQ(p.aeth.syndrome, s.aeth.syndrome);
                        EXPECT_EQ(p.aeth.msn, s.aeth.msn);
                    }
                    if (op.has(kHdrAtomicEth)) {
                        EXPECT_EQ(p.atomic.swap_add, s.atomic.swap_add);
                        EXPECT_EQ(p.atomic.compare, s.atomic.compare);
                        EXPECT_EQ(p.atomic.rkey, s.atomic.rkey);
                    }
                    if (op.has(kHdrAtomicAckEth)) {
                        EXPECT_EQ(p.atomic_ack.orig, s.atomic_ack.orig);
                    }
                    if (op.has(kHdrDeth)) {
                        EXPECT_EQ(p.deth.qkey, s.deth.qkey);
                        EXPECT_EQ(p.deth.src_qp, s.deth.src_qp);
                    }
                    if (op.has(kHdrImmDt)) {
                        EXPECT_EQ(p.imm, s.imm);
                    }
                    if (op.has(kHdrIeth)) {
                        EXPECT_EQ(p.ieth, s.ieth);
                    }
                    ASSERT_EQ(p.payload_len, s.payload_len);
                    if (p.payload_len) {
                        EXPECT_EQ(0, std::memcmp(p.payload, b.payload.data(), p.payload_len));
                    }
                }
            }
        }
    }
}

TEST(WireBuild, GatherListAndErrors) {
    std::vector<uint8_t> data(1000);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = static_cast<uint8_t>(i);
    FrameSpec s = make_spec(kRcSendOnly, false, false, 1000);
    FrameSpec::Seg segs[3] = {{data.data(), 1}, {data.data() + 1, 500}, {data.data() + 501, 499}};
    s.segs = segs;
    s.nsegs = 3;
    std::vector<uint8_t> f(frame_len(s));
    EXPECT_EQ(f.size(), 14u + 20 + 8 + 12 + 1000 + 0 + 4);
    EXPECT_EQ(headers_len(s), 14u + 20 + 8 + 12);
    ASSERT_EQ(build_frame(s, f.data(), f.size()), f.size());
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f.data(), f.size(), p, true), ParseResult::Ok);
    EXPECT_EQ(0, std::memcmp(p.payload, data.data(), 1000));
    /* too small a buffer */
    EXPECT_EQ(build_frame(s, f.data(), f.size() - 1), 0u);
    /* segs shorter than payload_len */
    s.nsegs = 2;
    EXPECT_EQ(build_frame(s, f.data(), f.size()), 0u);
    /* unknown opcode */
    s.nsegs = 3;
    s.bth.opcode = 0x15;
    EXPECT_EQ(frame_len(s), 0u);
    EXPECT_EQ(build_frame(s, f.data(), f.size()), 0u);
}

TEST(WireIcrc, EveryCoveredBitMatters) {
    for (auto [opc, v6, vlan, plen] :
         {std::tuple{kRcWriteFirst, false, false, 61u}, std::tuple{kRcAcknowledge, false, true, 0u},
          std::tuple{kUdSendOnlyImm, true, false, 33u}, std::tuple{kCnp, false, false, 0u}}) {
        Built b = build(opc, v6, vlan, plen);
        ParsedPacket p;
        ASSERT_EQ(parse_frame(b.frame.data(), b.frame.size(), p, true), ParseResult::Ok);
        const size_t l3 = p.l3_off, ip_len = v6 ? 40 : 20;
        const size_t crc_len = p.frame_len - 4 - l3;
        /* byte offsets from l3 of the masked (variant) fields */
        std::vector<bool> masked(crc_len, false);
        std::vector<uint8_t> mask_bits(crc_len, 0);
        if (v6) {
            mask_bits[0] = 0x0F;
            mask_bits[1] = mask_bits[2] = mask_bits[3] = mask_bits[7] = 0xFF;
        } else {
            mask_bits[1] = mask_bits[8] = mask_bits[10] = mask_bits[11] = 0xFF;
        }
        mask_bits[ip_len + 6] = mask_bits[ip_len + 7] = 0xFF;
        mask_bits[ip_len + 8 + 4] = 0xFF;
        const uint32_t good = icrc_compute(b.frame.data() + l3, crc_len, v6);
        ASSERT_EQ(good, p.icrc);
        for (size_t i = 0; i < crc_len; ++i) {
            for (int bit = 0; bit < 8; ++bit) {
                std::vector<uint8_t> f = b.frame;
                f[l3 + i] ^= static_cast<uint8_t>(1u << bit);
                const uint32_t c = icrc_compute(f.data() + l3, crc_len, v6);
                if (mask_bits[i] & (1u << bit)) {
                    EXPECT_EQ(c, good) << "masked byte " << i << " bit " << bit;
                } else
                    EXPECT_NE(c, good) << "covered byte " << i << " bit " << bit;
            }
        }
        /* L2 bytes are not covered; the stored ICRC bytes are compared */
        for (size_t i = 0; i < l3; ++i) {
            std::vector<uint8_t> f = b.frame;
            f[i] ^= 0x01;
            if (i == 12 || i == 13 || (vlan && (i == 16 || i == 17)))
                continue; /* ethertypes change the parse path, not the CRC */
            EXPECT_EQ(parse_frame(f.data(), f.size(), p, true), ParseResult::Ok) << i;
        }
        for (size_t i = p.frame_len - 4; i < p.frame_len; ++i) {
            std::vector<uint8_t> f = b.frame;
            f[i] ^= 0x80;
            EXPECT_EQ(parse_frame(f.data(), f.size(), p, true), ParseResult::BadIcrc) << i;
        }
    }
}

TEST(WireIcrc, MaskedFieldsKeepParseOk) {
    Built b = build(kRcWriteOnly, false, false, 100);
    ParsedPacket p;
    ASSERT_EQ(parse_frame(b.frame.data(), b.frame.size(), p, true), ParseResult::Ok);
    const size_t l3 = p.l3_off, udp = l3 + 20, bth = udp + 8;
    struct Edit {
        size_t off;
        uint8_t val;
        const char *what;
    };
    for (Edit e : {Edit{l3 + 8, 1, "TTL"}, Edit{l3 + 1, 0x03, "ECN CE"}, Edit{l3 + 1, 0xB8, "DSCP"},
                   Edit{l3 + 10, 0x12, "IP checksum"}, Edit{udp + 6, 0xAB, "UDP checksum"},
                   Edit{bth + 4, 0x80, "FECN"}, Edit{bth + 4, 0x40, "BECN"},
                   Edit{bth + 4, 0x3F, "BTH resv6"}}) {
        std::vector<uint8_t> f = b.frame;
        f[e.off] = e.val;
        ParsedPacket q;
        EXPECT_EQ(parse_frame(f.data(), f.size(), q, true), ParseResult::Ok) << e.what;
    }
    /* ...but e.g. the P_Key, DestQP, PSN, IP addresses and length are covered */
    for (size_t off : {bth + 2, bth + 7, bth + 11, l3 + 15, l3 + 19, bth + 1, bth + 8}) {
        std::vector<uint8_t> f = b.frame;
        f[off] ^= 0x01;
        ParsedPacket q;
        EXPECT_NE(parse_frame(f.data(), f.size(), q, true), ParseResult::Ok) << off;
    }
    /* IPv6: traffic class, flow label, hop limit are masked */
    Built b6 = build(kRcWriteOnly, true, false, 100);
    for (size_t off : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
        std::vector<uint8_t> f = b6.frame;
        f[14 + off] ^= (off == 0 ? 0x0F : 0xFF);
        ParsedPacket q;
        EXPECT_EQ(parse_frame(f.data(), f.size(), q, true), ParseResult::Ok) << off;
    }
}

TEST(WireParse, EveryTruncationRejected) {
    for (auto [opc, v6, vlan, plen] :
         {std::tuple{kRcWriteFirst, false, false, 1024u},
          std::tuple{kRcReadResponseLast, true, true, 7u},
          std::tuple{kRcAtomicAcknowledge, false, false, 0u},
          std::tuple{kUdSendOnlyImm, true, false, 256u}, std::tuple{kCnp, false, true, 0u}}) {
        Built b = build(opc, v6, vlan, plen);
        for (size_t n = 0; n < b.frame.size(); ++n) {
            /* copy into an exact-size heap block so ASan catches any overread */
            std::vector<uint8_t> f(b.frame.begin(), b.frame.begin() + static_cast<long>(n));
            ParsedPacket p;
            EXPECT_EQ(parse_frame(f.data(), f.size(), p, false), ParseResult::TooShort) << n;
            EXPECT_EQ(parse_frame(f.data(), f.size(), p, true), ParseResult::TooShort) << n;
        }
    }
}

TEST(WireParse, TrailingBytesExcluded) {
    Built b = build(kRcAcknowledge, false, false, 0);
    ASSERT_EQ(b.frame.size(), 14u + 20 + 8 + 16 + 4); /* 62: below the 64 B minimum */
    std::vector<uint8_t> f = b.frame;
    f.resize(64 + 4, 0xEE); /* Ethernet padding + FCS */
    ParsedPacket p;
    ASSERT_EQ(parse_frame(f.data(), f.size(), p, true), ParseResult::Ok);
    EXPECT_EQ(p.frame_len, 62u);
}

TEST(WireParse, RejectionReasons) {
    auto parse = [](std::vector<uint8_t> &f, bool verify = true) {
        ParsedPacket p;
        return parse_frame(f.data(), f.size(), p, verify);
    };
    const Built b = build(kRcSendOnly, false, false, 16);
    const size_t l3 = 14, udp = 34, bth = 42;
    std::vector<uint8_t> f;

    f = b.frame;
    f[12] = 0x08, f[13] = 0x06; /* ARP */
    EXPECT_EQ(parse(f), ParseResult::NotRoce);
    f[12] = 0x89, f[13] = 0x15; /* RoCEv1 whose "GRH" is this IPv4 header (test_wire_rocev1) */
    EXPECT_EQ(parse(f), ParseResult::BadIpHeader);
    f[12] = 0x05, f[13] = 0xDC; /* 802.3 length */
    EXPECT_EQ(parse(f), ParseResult::BadEthertype);
    f[12] = 0x88, f[13] = 0xA8; /* 802.1ad */
    EXPECT_EQ(parse(f), ParseResult::BadEthertype);

    f = b.frame;
    f[l3] = 0x46; /* IHL 6 on UDP */
    EXPECT_EQ(parse(f), ParseResult::BadIpHeader);
    f[l3 + 9] = 6; /* ... on TCP: not ours */
    EXPECT_EQ(parse(f), ParseResult::NotRoce);
    f = b.frame;
    f[l3] = 0x55;
    EXPECT_EQ(parse(f), ParseResult::BadIpHeader);
    f = b.frame;
    f[l3 + 2] = 0, f[l3 + 3] = 19; /* total_len < 20 */
    EXPECT_EQ(parse(f), ParseResult::BadIpHeader);
    f = b.frame;
    f[l3 + 3] += 1; /* total_len beyond the buffer */
    EXPECT_EQ(parse(f), ParseResult::TooShort);
    f = b.frame;
    f[l3 + 9] = 1; /* ICMP */
    EXPECT_EQ(parse(f), ParseResult::NotRoce);
    f = b.frame;
    f[l3 + 6] = 0x20; /* MF */
    EXPECT_EQ(parse(f), ParseResult::IpFragment);
    f = b.frame;
    f[l3 + 6] = 0x40, f[l3 + 7] = 0x01; /* offset 8 */
    EXPECT_EQ(parse(f), ParseResult::IpFragment);

    f = b.frame;
    f[udp + 3] = 0xB8; /* dport 4792 */
    EXPECT_EQ(parse(f), ParseResult::NotRoce);
    f = b.frame;
    f[udp + 5] -= 1;
    EXPECT_EQ(parse(f), ParseResult::BadUdpLength);
    f = b.frame;
    f[udp + 4] = 0, f[udp + 5] = 4;
    EXPECT_EQ(parse(f), ParseResult::BadUdpLength);

    f = b.frame;
    f[bth + 1] |= 0x01; /* TVer 1 */
    EXPECT_EQ(parse(f), ParseResult::BadTver);
    f = b.frame;
    f[bth] = 0x15;
    EXPECT_EQ(parse(f), ParseResult::BadOpcode);
    f[bth] = 0x20; /* UC */
    EXPECT_EQ(parse(f), ParseResult::BadOpcode);
    f = b.frame;
    f[bth] = kRcWriteOnlyImm; /* needs 32 + 4 bytes; the frame carries 12 + 16 + 4 */
    EXPECT_EQ(parse(f, false), ParseResult::TooShort);

    /* pad count larger than the payload area: a 0-byte ACK with PadCnt 3 */
    const Built a = build(kRcAcknowledge, false, false, 0);
    f = a.frame;
    f[bth + 1] |= 0x30;
    EXPECT_EQ(parse(f, false), ParseResult::BadPadLength);
    /* a 16-byte SEND with PadCnt 3: parses, payload 13 (ICRC now wrong) */
    f = b.frame;
    f[bth + 1] |= 0x30;
    ParsedPacket p;
    EXPECT_EQ(parse_frame(f.data(), f.size(), p, false), ParseResult::Ok);
    EXPECT_EQ(p.payload_len, 13u);
    EXPECT_EQ(parse(f, true), ParseResult::BadIcrc);

    /* IPv6 with a non-UDP next header */
    const Built b6 = build(kRcSendOnly, true, false, 16);
    f = b6.frame;
    f[14 + 6] = 0; /* hop-by-hop */
    EXPECT_EQ(parse(f), ParseResult::NotRoce);
    f = b6.frame;
    f[14] = 0x40; /* version 4 in an IPv6 ethertype */
    EXPECT_EQ(parse(f), ParseResult::BadIpHeader);
    f = b6.frame;
    f[14 + 5] += 1;
    EXPECT_EQ(parse(f), ParseResult::TooShort);
}

TEST(WireParse, RandomGarbageNeverCrashes) {
    std::mt19937 rng(7);
    const Built b = build(kRcWriteFirst, false, true, 64);
    for (int iter = 0; iter < 20000; ++iter) {
        std::vector<uint8_t> f = b.frame;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int k = 0; k < flips; ++k)
            f[rng() % f.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
        f.resize(rng() % (f.size() + 1));
        ParsedPacket p;
        const ParseResult r = parse_frame(f.data(), f.size(), p, true);
        if (r == ParseResult::Ok) {
            EXPECT_LE(p.frame_len, f.size());
            EXPECT_LE(p.payload + p.payload_len, f.data() + p.frame_len - 4);
        }
    }
}

/* ---- gather-list ICRC (zero-copy TX, chained RX) ---- */

TEST(WireCrc, Crc32CombineMatchesWholeBuffer) {
    std::mt19937 rng(7);
    std::vector<uint8_t> d(40000);
    for (auto &x : d)
        x = static_cast<uint8_t>(rng());
    for (size_t split : {size_t{0}, size_t{1}, size_t{127}, size_t{128}, size_t{4096},
                         size_t{16383}, size_t{16384}, size_t{20000}, size_t{40000}}) {
        const uint32_t a = crc32_eth(d.data(), split);
        const uint32_t b = crc32_eth(d.data() + split, d.size() - split);
        EXPECT_EQ(crc32_combine(a, b, d.size() - split), crc32_eth(d.data(), d.size())) << split;
    }
}

/* Every length 0..9000 of RoCE payload after the headers, each cut into random
 * segments (some empty), against the plain-table reference. */
TEST(WireCrc, SegmentsMatchReferenceAllLengths) {
    std::mt19937 rng(42);
    for (bool v6 : {false, true}) {
        const size_t hlen = (v6 ? 40 : 20) + 8 + 12;
        std::vector<uint8_t> buf(hlen + 9000);
        for (auto &x : buf)
            x = static_cast<uint8_t>(rng());
        for (size_t len = 0; len <= 9000; ++len) {
            const size_t total = hlen + len;
            const uint32_t ref = icrc_compute_reference(buf.data(), total, v6);
            /* headers plus a random part of the rest contiguous, then random segments */
            const size_t first = hlen + (len ? rng() % (len + 1) : 0);
            std::vector<ByteSpan> segs;
            size_t at = first;
            while (at < total || (segs.size() < 2 && rng() % 2)) {
                const size_t n = std::min<size_t>(total - at, rng() % 3 == 0 ? 0 : rng() % 3000);
                segs.push_back({buf.data() + at, static_cast<uint32_t>(n)});
                at += n;
            }
            ASSERT_EQ(icrc_compute_segments(buf.data(), first, segs.data(),
                                            static_cast<uint32_t>(segs.size()), v6),
                      ref)
                << "len " << len << " v6 " << v6 << " segs " << segs.size();
        }
        /* too short for the headers */
        EXPECT_EQ(icrc_compute_segments(buf.data(), hlen - 1, nullptr, 0, v6), 0u);
    }
}

/* parse_frame_headers on a frame split like a zero-copy chain: headers contiguous,
 * payload elsewhere; the ICRC over the pieces equals the stored one. */
TEST(WireParse, HeadersOnlyOfAScatteredFrame) {
    std::vector<uint8_t> data(3000);
    for (size_t i = 0; i < data.size(); ++i)
        data[i] = static_cast<uint8_t>(i * 3);
    FrameSpec s = make_spec(kRcWriteFirst, false, true, 3000);
    FrameSpec::Seg seg{data.data(), 3000};
    s.segs = &seg;
    s.nsegs = 1;
    std::vector<uint8_t> whole(frame_len(s));
    ASSERT_EQ(build_frame(s, whole.data(), whole.size()), whole.size());
    std::vector<uint8_t> hdr(headers_len(s));
    ASSERT_EQ(build_headers(s, hdr.data(), hdr.size()), hdr.size());
    EXPECT_EQ(0, std::memcmp(hdr.data(), whole.data(), hdr.size())) << "same headers";
    EXPECT_EQ(build_headers(s, hdr.data(), hdr.size() - 1), 0u);

    ParsedPacket p;
    ASSERT_EQ(parse_frame_headers(whole.data(), hdr.size(), whole.size(), p), ParseResult::Ok);
    EXPECT_EQ(p.payload, nullptr);
    EXPECT_EQ(p.payload_off, hdr.size());
    EXPECT_EQ(p.payload_len, 3000u);
    EXPECT_EQ(p.frame_len, whole.size());
    EXPECT_EQ(p.reth.dma_len, 4096u);
    /* headers cut short in the first piece */
    EXPECT_EQ(parse_frame_headers(whole.data(), hdr.size() - 1, whole.size(), p),
              ParseResult::TooShort);
    ASSERT_EQ(parse_frame_headers(whole.data(), hdr.size(), whole.size(), p), ParseResult::Ok);
    const uint8_t zero[4] = {};
    const ByteSpan rest[] = {{data.data(), 1000}, {data.data() + 1000, 2000}, {zero, 0}};
    const size_t l3 = p.l3_off;
    EXPECT_EQ(icrc_compute_segments(whole.data() + l3, hdr.size() - l3, rest, 3, false),
              icrc_load(whole.data() + whole.size() - 4));
}

/* ---- CRC kernels (issue 9): each against a bitwise CRC-32 ---- */

namespace {
uint32_t crc32_bitwise(const uint8_t *p, size_t n) {
    uint32_t st = 0xFFFFFFFF;
    for (size_t i = 0; i < n; ++i) {
        st ^= p[i];
        for (int k = 0; k < 8; ++k)
            st = (st & 1) ? (0xEDB88320u ^ (st >> 1)) : (st >> 1);
    }
    return ~st;
}
} // namespace

/* Every kernel the CPU has, forced (not just where crc32_eth picks it): every length up
 * to 1700 (each residue mod 16 and each lane/step boundary of the folds: 64, 128 and
 * 256 bytes per step), then sparser to 9000, at start alignments that cross 16 and 32. */
TEST(WireCrc, EveryKernelEveryLengthAndAlignment) {
    std::mt19937 rng(99);
    std::vector<uint8_t> buf(9100);
    for (auto &c : buf)
        c = static_cast<uint8_t>(rng());
    int kernels = 0;
    for (CrcKernel k : {CrcKernel::Auto, CrcKernel::Dpdk, CrcKernel::Fold128, CrcKernel::Fold256,
                        CrcKernel::Fold512, CrcKernel::Small}) {
        if (!crc_kernel_available(k))
            continue;
        ++kernels;
        for (size_t len = 0; len <= 9000; len += (len < 1700 ? 1 : 53))
            for (size_t off : {0u, 1u, 7u, 16u, 31u, 33u})
                ASSERT_EQ(crc32_eth_kernel(buf.data() + off, len, k),
                          crc32_bitwise(buf.data() + off, len))
                    << "kernel " << static_cast<int>(k) << " len " << len << " off " << off;
    }
    EXPECT_GE(kernels, 2);
}

/* crc32_eth_copy: the CRC of the source, every byte copied, nothing written outside the
 * destination, source untouched; source and destination at different alignments. */
TEST(WireCrc, CopyWithCrcEveryLengthAndAlignment) {
    std::mt19937 rng(5);
    std::vector<uint8_t> src(9100);
    for (auto &c : src)
        c = static_cast<uint8_t>(rng());
    const std::vector<uint8_t> src_copy = src;
    std::vector<uint8_t> dst(9200);
    for (size_t len = 0; len <= 9000; len += (len < 1100 ? 1 : 41)) {
        for (auto [so, doff] :
             {std::pair<size_t, size_t>{0, 0}, {1, 0}, {0, 5}, {15, 17}, {32, 1}, {7, 64}}) {
            std::fill(dst.begin(), dst.end(), uint8_t{0xC3});
            ASSERT_EQ(crc32_eth_copy(dst.data() + doff, src.data() + so, len),
                      crc32_bitwise(src.data() + so, len))
                << "len " << len << " src+" << so << " dst+" << doff;
            ASSERT_EQ(std::memcmp(dst.data() + doff, src.data() + so, len), 0) << len;
            for (size_t i = 0; i < doff; ++i)
                ASSERT_EQ(dst[i], 0xC3) << "wrote before dst, len " << len;
            for (size_t i = doff + len; i < dst.size(); ++i)
                ASSERT_EQ(dst[i], 0xC3) << "wrote past dst, len " << len;
        }
    }
    EXPECT_EQ(src, src_copy);
}

/* crc32_combine (carry-less multiply) at every split of random buffers: each length
 * class (< 128, table product < 16 KiB, square-and-multiply beyond). */
TEST(WireCrc, Crc32CombineRandomSplits) {
    std::mt19937 rng(11);
    std::vector<uint8_t> d(70000);
    for (auto &x : d)
        x = static_cast<uint8_t>(rng());
    for (int i = 0; i < 3000; ++i) {
        const size_t n = 1 + rng() % (i < 1000 ? 300 : i < 2000 ? 20000 : 70000);
        const size_t split = rng() % (n + 1);
        const uint32_t a = crc32_bitwise(d.data(), split);
        const uint32_t b = crc32_bitwise(d.data() + split, n - split);
        ASSERT_EQ(crc32_combine(a, b, n - split), crc32_bitwise(d.data(), n))
            << "n " << n << " split " << split;
    }
}

/* ---- reuse of a ParsedPacket (parse_impl no longer zeroes the whole struct) ---- */

namespace {
/* Names the first field where a and b differ, "" when none does. Every field of
 * ParsedPacket is listed: a new field must be added here too. */
std::string first_difference(const ParsedPacket &a, const ParsedPacket &b) {
#define DIFF_IF(x)                                                                                 \
    if (std::memcmp(&a.x, &b.x, sizeof(a.x)) != 0)                                                 \
    return #x
    DIFF_IF(eth.dst);
    DIFF_IF(eth.src);
    DIFF_IF(eth.has_vlan);
    DIFF_IF(eth.vlan_tci);
    DIFF_IF(eth.ethertype);
    DIFF_IF(ipv6);
    DIFF_IF(rocev1);
    DIFF_IF(src_gid);
    DIFF_IF(dst_gid);
    DIFF_IF(ecn);
    DIFF_IF(dscp);
    DIFF_IF(ttl);
    DIFF_IF(ip4.tos);
    DIFF_IF(ip4.total_len);
    DIFF_IF(ip4.id);
    DIFF_IF(ip4.frag);
    DIFF_IF(ip4.ttl);
    DIFF_IF(ip4.proto);
    DIFF_IF(ip4.checksum);
    DIFF_IF(ip4.src);
    DIFF_IF(ip4.dst);
    DIFF_IF(ip6.tclass);
    DIFF_IF(ip6.flow_label);
    DIFF_IF(ip6.payload_len);
    DIFF_IF(ip6.next_hdr);
    DIFF_IF(ip6.hop_limit);
    DIFF_IF(ip6.src);
    DIFF_IF(ip6.dst);
    DIFF_IF(udp);
    DIFF_IF(bth.opcode);
    DIFF_IF(bth.se);
    DIFF_IF(bth.mig);
    DIFF_IF(bth.pad_cnt);
    DIFF_IF(bth.tver);
    DIFF_IF(bth.pkey);
    DIFF_IF(bth.fecn);
    DIFF_IF(bth.becn);
    DIFF_IF(bth.dest_qp);
    DIFF_IF(bth.ack_req);
    DIFF_IF(bth.psn);
    DIFF_IF(op);
    DIFF_IF(reth.va);
    DIFF_IF(reth.rkey);
    DIFF_IF(reth.dma_len);
    DIFF_IF(aeth.syndrome);
    DIFF_IF(aeth.msn);
    DIFF_IF(atomic.va);
    DIFF_IF(atomic.rkey);
    DIFF_IF(atomic.swap_add);
    DIFF_IF(atomic.compare);
    DIFF_IF(atomic_ack);
    DIFF_IF(deth.qkey);
    DIFF_IF(deth.src_qp);
    DIFF_IF(imm);
    DIFF_IF(ieth);
    DIFF_IF(payload);
    DIFF_IF(payload_len);
    DIFF_IF(payload_segs);
    DIFF_IF(payload_nsegs);
    DIFF_IF(payload_off);
    DIFF_IF(icrc);
    DIFF_IF(l3_off);
    DIFF_IF(bth_off);
    DIFF_IF(frame_len);
#undef DIFF_IF
    return "";
}
} // namespace

/* A ParsedPacket reused from any earlier parse (another opcode, IP version, VLAN or
 * RoCEv1, or a rejected frame) reads exactly as a fresh one after an Ok parse: the engine
 * keeps one on its stack and never clears it. */
TEST(WireParse, ReusedParsedPacketEqualsFresh) {
    std::vector<Built> frames;
    for (uint8_t opc : kAllOpcodes)
        for (int path = 0; path < 4; ++path) { /* IPv4, IPv6, IPv4+VLAN, RoCEv1 */
            frames.push_back(build(opc, path == 1, path == 2, 61));
            if (path == 3) {
                Built &b = frames.back();
                b.spec.segs = &b.seg; /* spec points into the Built it was made in: moved */
                b.spec.rocev1 = true;
                b.frame.assign(frame_len(b.spec), 0);
                ASSERT_EQ(build_frame(b.spec, b.frame.data(), b.frame.size()), b.frame.size());
            }
        }
    /* A rejected frame in between: a BTH with tver 1 gets far into the parse. */
    Built bad = build(kRcSendOnly, false, false, 8);
    bad.frame[14 + 20 + 8 + 1] |= 1;
    ASSERT_EQ(
        [&] {
            ParsedPacket t{};
            return parse_frame(bad.frame.data(), bad.frame.size(), t, false);
        }(),
        ParseResult::BadTver);

    ParsedPacket reused;
    std::memset(&reused, 0xA5, sizeof(reused)); /* stack garbage */
    std::mt19937 rng(7);
    for (int i = 0; i < 4000; ++i) {
        const Built &b = frames[rng() % frames.size()];
        const bool verify = (rng() & 1) != 0;
        const ParsedPacket before = reused;
        if (rng() % 8 == 0)
            (void)parse_frame(bad.frame.data(), bad.frame.size(), reused, false);
        ParsedPacket fresh{};
        const ParseResult rf = parse_frame(b.frame.data(), b.frame.size(), fresh, verify);
        ASSERT_EQ(rf, ParseResult::Ok);
        ASSERT_EQ(parse_frame(b.frame.data(), b.frame.size(), reused, verify), rf);
        ASSERT_EQ(first_difference(reused, fresh), "")
            << "op " << int(b.spec.bth.opcode) << " after op " << int(before.bth.opcode);
    }
    /* Headers-only (scattered) parses too. */
    const Built &w = frames[0];
    ParsedPacket fresh{};
    ASSERT_EQ(parse_frame_headers(w.frame.data(), 60, w.frame.size(), fresh), ParseResult::Ok);
    for (const Built &b : frames) {
        ASSERT_EQ(parse_frame(b.frame.data(), b.frame.size(), reused, true), ParseResult::Ok);
        ASSERT_EQ(parse_frame_headers(w.frame.data(), 60, w.frame.size(), reused), ParseResult::Ok);
        ASSERT_EQ(first_difference(reused, fresh), "") << "op " << int(b.spec.bth.opcode);
    }
}

/* parse_frame_rc_small (the engine's RX fast path) may only say yes where parse_frame says
 * Ok, with the very same ParsedPacket; it must say yes for every well-formed untagged IPv4
 * ACK, SEND ONLY and WRITE ONLY (with immediate or without); everything else (other opcodes, VLAN, IPv6, RoCEv1, any malformed
 * header, a bad ICRC) it leaves to parse_frame. Mutations keep the ICRC valid where it can
 * be (resealed at the end the IP header declares), so header checks are what is tested. */
TEST(WireParse, RcSmallFastPathEqualsGeneric) {
    AckIcrcCache cache; /* kept across every frame: hits and misses, right either way */
    auto check = [&cache](const uint8_t *f, size_t len, bool want_fast, const std::string &what) {
        ParsedPacket fast, gen, cached;
        std::memset(&fast, 0xA5, sizeof(fast));
        std::memset(&gen, 0x5A, sizeof(gen));
        std::memset(&cached, 0x3C, sizeof(cached));
        const bool ok = parse_frame_rc_small(f, len, fast);
        const ParseResult r = parse_frame(f, len, gen, true);
        EXPECT_EQ(parse_frame_rc_small(f, len, cached, &cache), ok) << what;
        if (ok) {
            EXPECT_EQ(first_difference(cached, gen), "") << what;
        }
        if (want_fast) {
            EXPECT_TRUE(ok) << what;
        }
        if (ok) {
            EXPECT_EQ(r, ParseResult::Ok) << what;
            EXPECT_EQ(first_difference(fast, gen), "") << what;
        }
        /* The view (what the straight paths read) says what the ParsedPacket says. */
        SmallFrame v;
        std::memset(&v, 0x77, sizeof v);
        EXPECT_EQ(parse_small_frame(f, len, v), ok) << what;
        if (ok) {
            EXPECT_EQ(v.bth.opcode, gen.bth.opcode) << what;
            EXPECT_EQ(v.bth.se, gen.bth.se) << what;
            EXPECT_EQ(v.bth.ack_req, gen.bth.ack_req) << what;
            EXPECT_EQ(v.bth.pkey, gen.bth.pkey) << what;
            EXPECT_EQ(v.bth.dest_qp, gen.bth.dest_qp) << what;
            EXPECT_EQ(v.bth.psn, gen.bth.psn) << what;
            EXPECT_EQ(v.op, gen.op) << what;
            EXPECT_EQ(v.ecn, gen.ecn) << what;
            EXPECT_EQ(std::memcmp(v.ip_pair, gen.src_gid + 12, 4), 0) << what;
            EXPECT_EQ(std::memcmp(v.ip_pair + 1, gen.dst_gid + 12, 4), 0) << what;
            EXPECT_EQ(v.dst_ip, gen.ip4.dst) << what;
            EXPECT_EQ(v.reth.va, gen.reth.va) << what;
            EXPECT_EQ(v.reth.rkey, gen.reth.rkey) << what;
            EXPECT_EQ(v.reth.dma_len, gen.reth.dma_len) << what;
            EXPECT_EQ(v.aeth.syndrome, gen.aeth.syndrome) << what;
            EXPECT_EQ(v.aeth.msn, gen.aeth.msn) << what;
            EXPECT_EQ(v.imm, gen.imm) << what;
            EXPECT_EQ(v.payload, gen.payload) << what;
            EXPECT_EQ(v.payload_len, gen.payload_len) << what;
            EXPECT_EQ(v.icrc, gen.icrc) << what;
            EXPECT_EQ(v.frame, f) << what;
        }
        return ok;
    };
    /* Every opcode and path: yes exactly for those five opcodes, untagged IPv4. */
    for (uint8_t opc : kAllOpcodes)
        for (int path = 0; path < 3; ++path)
            for (uint32_t plen : {0u, 1u, 2u, 3u, 4u, 61u, 64u, 1024u}) {
                Built b = build(opc, path == 1, path == 2, plen);
                const bool want = path == 0 && (opc == kRcAcknowledge || opc == kRcWriteOnly ||
                                                opc == kRcWriteOnlyImm || opc == kRcSendOnly ||
                                                opc == kRcSendOnlyImm);
                const bool ok = check(b.frame.data(), b.frame.size(), want,
                                      "op " + std::to_string(opc) + " path " +
                                          std::to_string(path) + " len " + std::to_string(plen));
                EXPECT_EQ(ok, want) << int(opc) << " " << path << " " << plen;
                /* Trailing bytes (Ethernet padding, FCS) are excluded as by parse_frame. */
                b.frame.resize(b.frame.size() + 6, 0xEE);
                EXPECT_EQ(check(b.frame.data(), b.frame.size(), want, "trailing"), want);
            }
    /* Each byte of the headers changed (ICRC resealed), and each truncation. */
    std::mt19937 rng(4791);
    int fast_yes = 0, fast_no = 0;
    for (uint8_t opc :
         {kRcAcknowledge, kRcWriteOnly, kRcWriteOnlyImm, kRcSendOnly, kRcSendOnlyImm}) {
        const Built b = build(opc, false, false, 64);
        const size_t hdr_end = 42 + opcode_info(opc).hdr_len;
        for (size_t pos = 0; pos < hdr_end; ++pos)
            for (int k = 0; k < 24; ++k) {
                std::vector<uint8_t> f = b.frame;
                f[pos] =
                    k < 8 ? static_cast<uint8_t>(f[pos] ^ (1u << k)) : static_cast<uint8_t>(rng());
                const size_t total = (size_t{f[16]} << 8) | f[17];
                if (total >= 24 && 14 + total <= f.size())
                    icrc_store(icrc_compute_reference(f.data() + 14, total - 4, false),
                               f.data() + 14 + total - 4);
                (check(f.data(), f.size(), false, "pos " + std::to_string(pos)) ? fast_yes
                                                                                : fast_no)++;
            }
        for (size_t len = 0; len < b.frame.size(); ++len)
            EXPECT_FALSE(check(b.frame.data(), len, false, "truncated " + std::to_string(len)));
        /* A bad ICRC: no (the generic parse counts it). */
        std::vector<uint8_t> f = b.frame;
        f.back() ^= 1;
        EXPECT_FALSE(check(f.data(), f.size(), false, "bad icrc"));
        f = b.frame;
        f[hdr_end] ^= 0x80; /* payload (or, for the ACK, the ICRC itself) */
        EXPECT_FALSE(check(f.data(), f.size(), false, "bad payload"));
    }
    EXPECT_GT(fast_yes, 0);
    EXPECT_GT(fast_no, 0);
    EXPECT_GT(cache.hits, 0u);
    EXPECT_GT(cache.misses, 0u);
}

/* The ACK ICRC cache: ACKs of one QP that differ in PSN, AckReq and AETH hit it; a bad
 * ICRC or a changed covered byte is still caught on a hit; another QP misses, is verified
 * in full and becomes the entry. */
TEST(WireParse, AckIcrcCacheHitsAndStillVerifies) {
    AckIcrcCache cache;
    ParsedPacket pp;
    auto ack = [](uint32_t qpn, uint32_t psn, uint8_t syn, uint32_t msn, uint16_t ip_id) {
        Built b = build(kRcAcknowledge, false, false, 0);
        b.spec.bth.dest_qp = qpn;
        b.spec.bth.psn = psn;
        b.spec.bth.ack_req = (psn & 1) != 0;
        b.spec.aeth = Aeth{syn, msn};
        b.spec.ip_id = ip_id;
        b.frame.assign(frame_len(b.spec), 0);
        EXPECT_EQ(build_frame(b.spec, b.frame.data(), b.frame.size()), b.frame.size());
        return b.frame;
    };
    for (uint32_t i = 0; i < 64; ++i) {
        const auto f = ack(0x22, 0xFFFFF0 + i, i % 3 == 0 ? 0x1F : 0x60 + (i & 3), i * 977, 0);
        ASSERT_TRUE(parse_frame_rc_small(f.data(), f.size(), pp, &cache)) << i;
        EXPECT_EQ(pp.bth.psn, (0xFFFFF0 + i) & kPsnMask);
        auto bad = f;
        bad[58 + (i & 3)] ^= static_cast<uint8_t>(1u << (i & 7)); /* the ICRC */
        EXPECT_FALSE(parse_frame_rc_small(bad.data(), bad.size(), pp, &cache)) << i;
        bad = f;
        bad[50 + (i & 7)] ^= 0x10; /* a covered byte past the fixed part */
        EXPECT_FALSE(parse_frame_rc_small(bad.data(), bad.size(), pp, &cache)) << i;
    }
    EXPECT_EQ(cache.misses, 1u);
    EXPECT_EQ(cache.hits, 64u * 3 - 1);
    /* Another QP: a miss, verified in full; then its ACKs hit, with any IP ID (rxe changes
     * it every frame) and any value of the bytes the ICRC masks (TTL, TOS, checksums). */
    for (const auto &f :
         {ack(0x23, 5, 0x1F, 1, 0), ack(0x23, 6, 0x1F, 2, 0), ack(0x23, 7, 0x1F, 3, 9),
          ack(0x23, 8, 0x1F, 4, 0xFFFF), ack(0x23, 9, 0x1F, 5, 0x1234)})
        EXPECT_TRUE(parse_frame_rc_small(f.data(), f.size(), pp, &cache));
    EXPECT_EQ(cache.misses, 2u);
    uint64_t hits = cache.hits;
    auto g = ack(0x23, 10, 0x1F, 6, 0x4321);
    g[14 + 8] ^= 0x3F;          /* TTL */
    g[14 + 1] ^= 0xC3;          /* TOS */
    g[14 + 10] ^= 0x55;         /* IP checksum */
    g[14 + 20 + 6] ^= 0x77;     /* UDP checksum */
    g[14 + 20 + 8 + 4] ^= 0x80; /* BTH byte 4 (FECN) */
    EXPECT_TRUE(parse_frame_rc_small(g.data(), g.size(), pp, &cache));
    EXPECT_EQ(cache.hits, hits + 1);
    /* A changed IP ID without the ICRC that goes with it: caught on a hit. */
    g[14 + 5] ^= 0x01;
    EXPECT_FALSE(parse_frame_rc_small(g.data(), g.size(), pp, &cache));
    EXPECT_EQ(cache.hits, hits + 2);
    /* A bad ICRC on a miss, then the same frame good: the entry was right all along. */
    auto f = ack(0x24, 5, 0x1F, 1, 0);
    f.back() ^= 1;
    EXPECT_FALSE(parse_frame_rc_small(f.data(), f.size(), pp, &cache));
    f.back() ^= 1;
    EXPECT_TRUE(parse_frame_rc_small(f.data(), f.size(), pp, &cache));
    EXPECT_EQ(cache.misses, 3u);
}

/* The payload copy has fixed-size paths for 16..64 bytes (two overlapping copies):
 * every length around them, in one segment and split in two at every point, lands
 * byte for byte where it belongs and the ICRC covers it. */
TEST(WireBuild, PayloadEveryLengthAndSplit) {
    for (uint32_t plen = 0; plen <= 130; ++plen) {
        FrameSpec s = make_spec(kRcWriteOnly, false, false, plen);
        std::vector<uint8_t> pay(plen);
        for (uint32_t i = 0; i < plen; ++i)
            pay[i] = static_cast<uint8_t>(i * 13 + 5);
        for (uint32_t cut = 0; cut <= plen; cut += (plen < 70 ? 1 : 7)) {
            SCOPED_TRACE(testing::Message() << "plen " << plen << " cut " << cut);
            FrameSpec::Seg segs[2] = {{pay.data(), cut}, {pay.data() + cut, plen - cut}};
            s.segs = segs;
            s.nsegs = 2;
            std::vector<uint8_t> frame(frame_len(s) + 64, 0xA5);
            const size_t n = build_frame(s, frame.data(), frame.size());
            ASSERT_EQ(n, frame_len(s));
            ASSERT_EQ(frame[n], 0xA5) << "written past the frame";
            ParsedPacket p;
            ASSERT_EQ(parse_frame(frame.data(), n, p, true), ParseResult::Ok);
            ASSERT_EQ(p.payload_len, plen);
            if (plen != 0) {
                ASSERT_EQ(0, std::memcmp(p.payload, pay.data(), plen));
            }
        }
    }
}
