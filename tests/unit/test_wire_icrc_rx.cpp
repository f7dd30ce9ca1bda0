/* SPDX-License-Identifier: BSD-3-Clause */
/* The RX ICRC of a contiguous frame (icrc_compute_contig: one fold over the frame in
 * place, the masks ORed in as the first vectors load) and parse_frame's use of it,
 * against the table reference and the gather path a chained frame takes. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "wire_headers.h"
#include "wire_icrc.h"
#include "wire_opcode.h"
#include "wire_packet.h"

using namespace droce::wire;

namespace {

size_t hdr_len(bool v6) { return (v6 ? kIpv6Len : kIpv4Len) + kUdpLen + kBthLen; }

/* Every length across the kernels' thresholds (the table path below 504, the 256-bit
 * fold, the 512-bit one from 2040: n = 8 + len) with every residue mod 16 (the fold's
 * leading zeros, hence where the masks land in the first vectors), at every alignment of
 * the frame start mod 64, random header bytes (variant fields included): equal to the
 * table reference, and the frame left as it was. */
TEST(WireIcrcRx, ContigMatchesReferenceEveryLengthAndAlignment) {
    std::mt19937 rng(91);
    std::vector<uint8_t> base(64 + 8 + 9100);
    for (bool v6 : {false, true}) {
        for (size_t len = hdr_len(v6); len <= 9000; len += (len < 2200 ? 1 : 61)) {
            for (auto &c : base)
                c = static_cast<uint8_t>(rng());
            const std::vector<uint8_t> before = base;
            const uint8_t *l3 = base.data() + 8 + (len % 64); /* start walks every residue */
            const uint32_t ref = icrc_compute_reference(l3, len, v6);
            ASSERT_EQ(icrc_compute_contig(l3, len, v6), ref)
                << (v6 ? "v6" : "v4") << " len " << len;
            ASSERT_EQ(base, before) << "read-only";
        }
    }
}

/* Each of the first 8 + headers bytes flipped in turn, in frames long enough for each
 * kernel: a masked (variant) byte must not change the ICRC, any other must, exactly as
 * the reference says. */
TEST(WireIcrcRx, ContigMasksEachHeaderByte) {
    std::mt19937 rng(17);
    for (bool v6 : {false, true}) {
        for (size_t len : {100u, 600u, 1031u, 2100u, 4140u}) {
            std::vector<uint8_t> f(8 + len);
            for (auto &c : f)
                c = static_cast<uint8_t>(rng());
            const uint8_t *l3 = f.data() + 8;
            const uint32_t ref0 = icrc_compute_reference(l3, len, v6);
            int unchanged = 0;
            for (size_t i = 0; i < 8 + hdr_len(v6); ++i) {
                for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x10}, uint8_t{0x80}}) {
                    f[i] ^= bit;
                    const uint32_t ref = icrc_compute_reference(l3, len, v6);
                    ASSERT_EQ(icrc_compute_contig(l3, len, v6), ref)
                        << (v6 ? "v6" : "v4") << " len " << len << " byte " << i;
                    unchanged += ref == ref0;
                    f[i] ^= bit;
                }
            }
            /* The prefix (8 bytes) and the variant bits: 24 + IPv4 TOS, TTL, checksum
             * (4 bytes) or IPv6 traffic class / flow label (byte 0's low nibble: only
             * 0x01 of the bits tried; 3 whole bytes) and hop limit, then UDP checksum and
             * FECN/BECN/resv (3 bytes); 3 bits each. */
            EXPECT_EQ(unchanged, v6 ? 24 + 1 + 3 * (3 + 1 + 3) : 24 + 3 * (4 + 3));
        }
    }
}

FrameSpec spec_for(uint8_t opcode, bool v6, const std::vector<uint8_t> &payload,
                   FrameSpec::Seg &seg) {
    FrameSpec s{};
    const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 0x0a};
    std::memcpy(s.eth.src, mac, 6);
    std::memcpy(s.eth.dst, mac, 6);
    if (v6) {
        for (int i = 0; i < 16; ++i) {
            s.src_gid[i] = static_cast<uint8_t>(0xfe + i);
            s.dst_gid[i] = static_cast<uint8_t>(0x20 + i);
        }
        s.ipv6 = true;
        s.flow_label = 0x12345;
    } else {
        gid_from_ipv4(0x0A4D0002, s.src_gid);
        gid_from_ipv4(0x0A4D0003, s.dst_gid);
    }
    s.ttl = 64;
    s.tos = 0x62;
    s.udp_sport = udp_sport_for_qpn(0x11);
    s.bth.opcode = opcode;
    s.bth.pkey = kDefaultPkey;
    s.bth.dest_qp = 0x11;
    s.bth.psn = 100;
    s.reth = Reth{0x1000, 0x1234, static_cast<uint32_t>(payload.size())};
    seg = FrameSpec::Seg{payload.data(), static_cast<uint32_t>(payload.size())};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = static_cast<uint32_t>(payload.size());
    return s;
}

/* parse_frame on WRITE frames whose ICRC trailer lands at every offset mod 64 (payload
 * length and frame start both walk), as single-segment RX sees them: Ok with the stored
 * ICRC; equal to the gather ICRC of the same frame cut into mbuf-like pieces (what a
 * chained frame goes through); a changed payload byte or trailer byte is BadIcrc, a
 * changed TTL / hop limit is not. */
TEST(WireIcrcRx, ParseSingleSegmentTrailerEveryAlignment) {
    std::mt19937 rng(5);
    for (bool v6 : {false, true}) {
        for (uint8_t opcode : {kRcWriteFirst, kRcWriteMiddle}) {
            for (size_t pay = 0; pay <= 4200; pay += (pay < 300 ? 1 : 29)) {
                std::vector<uint8_t> payload(pay);
                for (auto &c : payload)
                    c = static_cast<uint8_t>(rng());
                FrameSpec::Seg seg;
                const FrameSpec s = spec_for(opcode, v6, payload, seg);
                const size_t total = frame_len(s);
                std::vector<uint8_t> buf(total + 64);
                uint8_t *f = buf.data() + (pay * 7) % 64;
                ASSERT_EQ(build_frame(s, f, total), total);
                ParsedPacket p;
                ASSERT_EQ(parse_frame(f, total, p, true), ParseResult::Ok) << pay;
                ASSERT_EQ(p.icrc, icrc_load(f + total - kIcrcLen));
                const uint8_t *l3 = f + p.l3_off;
                const size_t crc_len = total - kIcrcLen - p.l3_off;
                ASSERT_EQ(icrc_compute_contig(l3, crc_len, v6), p.icrc);
                const size_t hl = p.bth_off - p.l3_off + kBthLen;
                std::vector<ByteSpan> segs;
                for (size_t o = hl; o < crc_len; o += 2048 - (o == hl ? 54 : 0))
                    segs.push_back({l3 + o, static_cast<uint32_t>(std::min<size_t>(
                                                2048 - (o == hl ? 54 : 0), crc_len - o))});
                ASSERT_EQ(icrc_compute_segments(l3, hl, segs.data(),
                                                static_cast<uint32_t>(segs.size()), v6),
                          p.icrc)
                    << pay;

                const std::vector<uint8_t> good(f, f + total);
                const size_t ttl = p.l3_off + (v6 ? 7 : 8), pay_off = p.payload_off;
                f[ttl] ^= 0x21; /* TTL / hop limit: variant */
                EXPECT_EQ(parse_frame(f, total, p, true), ParseResult::Ok) << pay;
                std::memcpy(f, good.data(), total);
                f[total - 1 - rng() % kIcrcLen] ^= 0x04; /* trailer */
                EXPECT_EQ(parse_frame(f, total, p, true), ParseResult::BadIcrc) << pay;
                std::memcpy(f, good.data(), total);
                if (pay != 0) {
                    f[pay_off + rng() % pay] ^= 0x40;
                    EXPECT_EQ(parse_frame(f, total, p, true), ParseResult::BadIcrc) << pay;
                }
            }
        }
    }
}

} // namespace
