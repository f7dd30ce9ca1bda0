/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/wire HeaderTemplate: byte-for-byte the same output as build_headers/build_frame
 * for random specs (IPv4/IPv6, VLAN, every opcode, lengths up to the IP limit, short
 * buffers), across path changes on one template, and one rebuild per path. */
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "wire_opcode.h"
#include "wire_packet.h"
#include "wire_template.h"

using namespace droce::wire;

namespace {

const uint8_t kOpcodes[] = {kRcSendFirst,
                            kRcSendMiddle,
                            kRcSendLast,
                            kRcSendLastImm,
                            kRcSendOnly,
                            kRcSendOnlyImm,
                            kRcWriteFirst,
                            kRcWriteMiddle,
                            kRcWriteLast,
                            kRcWriteLastImm,
                            kRcWriteOnly,
                            kRcWriteOnlyImm,
                            kRcReadRequest,
                            kRcReadResponseFirst,
                            kRcReadResponseMiddle,
                            kRcReadResponseLast,
                            kRcReadResponseOnly,
                            kRcAcknowledge,
                            kRcAtomicAcknowledge,
                            kRcCompareSwap,
                            kRcFetchAdd,
                            kRcSendLastInv,
                            kRcSendOnlyInv,
                            kUdSendOnly,
                            kUdSendOnlyImm,
                            kCnp,
                            0x1F /* unknown */};

struct Path {
    EthHdr eth;
    bool ipv6;
    uint8_t sgid[16], dgid[16];
    uint8_t tos, ttl;
    uint32_t flow_label;
    uint16_t sport;
};

Path random_path(std::mt19937 &rng) {
    Path p{};
    for (auto &b : p.eth.dst)
        b = static_cast<uint8_t>(rng());
    for (auto &b : p.eth.src)
        b = static_cast<uint8_t>(rng());
    p.eth.has_vlan = rng() & 1;
    p.eth.vlan_tci = static_cast<uint16_t>(rng());
    p.eth.ethertype = static_cast<uint16_t>(rng()); /* set by the builder */
    p.ipv6 = rng() & 1;
    for (int i = 0; i < 16; ++i) {
        p.sgid[i] = static_cast<uint8_t>(rng());
        p.dgid[i] = static_cast<uint8_t>(rng());
    }
    if (!p.ipv6 && (rng() & 1)) {
        gid_from_ipv4(static_cast<uint32_t>(rng()), p.sgid);
        gid_from_ipv4(static_cast<uint32_t>(rng()), p.dgid);
    }
    p.tos = static_cast<uint8_t>(rng());
    p.ttl = static_cast<uint8_t>(rng());
    p.flow_label = static_cast<uint32_t>(rng()) & 0xFFFFF;
    p.sport = static_cast<uint16_t>(rng());
    return p;
}

FrameSpec random_spec(std::mt19937 &rng, const Path &path, const FrameSpec::Seg *seg,
                      uint32_t max_payload) {
    FrameSpec s{};
    s.eth = path.eth;
    s.ipv6 = path.ipv6;
    std::memcpy(s.src_gid, path.sgid, 16);
    std::memcpy(s.dst_gid, path.dgid, 16);
    s.tos = path.tos;
    s.ttl = path.ttl;
    s.flow_label = path.flow_label;
    s.udp_sport = path.sport;
    s.ip_id = static_cast<uint16_t>(rng());
    s.bth.opcode = kOpcodes[rng() % std::size(kOpcodes)];
    s.bth.se = rng() & 1;
    s.bth.mig = rng() & 1;
    s.bth.pkey = static_cast<uint16_t>(rng());
    s.bth.fecn = rng() & 1;
    s.bth.becn = rng() & 1;
    s.bth.dest_qp = static_cast<uint32_t>(rng()) & kQpnMask;
    s.bth.ack_req = rng() & 1;
    s.bth.psn = static_cast<uint32_t>(rng()) & kPsnMask;
    s.reth = Reth{(uint64_t{rng()} << 32) | rng(), static_cast<uint32_t>(rng()),
                  static_cast<uint32_t>(rng())};
    s.aeth = Aeth{static_cast<uint8_t>(rng()), static_cast<uint32_t>(rng()) & 0xFFFFFF};
    s.atomic = AtomicEth{(uint64_t{rng()} << 32) | rng(), static_cast<uint32_t>(rng()),
                         (uint64_t{rng()} << 32) | rng(), (uint64_t{rng()} << 32) | rng()};
    s.atomic_ack = AtomicAckEth{(uint64_t{rng()} << 32) | rng()};
    s.deth = Deth{static_cast<uint32_t>(rng()), static_cast<uint32_t>(rng()) & kQpnMask};
    s.imm = static_cast<uint32_t>(rng());
    s.ieth = static_cast<uint32_t>(rng());
    /* Mostly small payloads, some at and beyond the 16-bit IP length limit. */
    switch (rng() % 4) {
    case 0:
        s.payload_len = rng() % 8;
        break;
    case 1:
        s.payload_len = rng() % 4200;
        break;
    case 2:
        s.payload_len = 65535 - 100 + rng() % 120;
        break;
    default:
        s.payload_len = 64;
        break;
    }
    if (s.payload_len > max_payload)
        s.payload_len = max_payload;
    s.segs = seg;
    s.nsegs = 1;
    return s;
}

/* Both builders into buffers prefilled with different garbage, so a byte one of them
 * leaves unwritten shows up as a difference. */
size_t expect_same(HeaderTemplate &t, const FrameSpec &s, size_t cap) {
    std::vector<uint8_t> a(cap + 16, 0xA5), b(cap + 16, 0x5A);
    const size_t na = build_headers(s, a.data(), cap);
    const size_t nb = t.build_headers(s, b.data(), cap);
    EXPECT_EQ(na, nb) << "build_headers length, cap " << cap;
    if (na != 0 && na == nb) {
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), na)) << "headers differ";
        EXPECT_EQ(b[na], 0x5A) << "template wrote past the headers";
    }
    std::fill(a.begin(), a.end(), 0xA5);
    std::fill(b.begin(), b.end(), 0x5A);
    const size_t fa = build_frame(s, a.data(), cap);
    const size_t fb = t.build_frame(s, b.data(), cap);
    EXPECT_EQ(fa, fb) << "build_frame length, cap " << cap;
    if (fa != 0 && fa == fb) {
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), fa)) << "frames differ";
        EXPECT_EQ(b[fa], 0x5A) << "template wrote past the frame";
    }
    return fa;
}

} // namespace

TEST(WireTemplate, SameBytesAsBuildersForRandomSpecs) {
    std::mt19937 rng(9);
    std::vector<uint8_t> payload(70000);
    for (size_t i = 0; i < payload.size(); ++i)
        payload[i] = static_cast<uint8_t>(i * 13 + 1);
    const FrameSpec::Seg seg{payload.data(), static_cast<uint32_t>(payload.size())};
    HeaderTemplate t;
    int v6 = 0, vlan = 0, ok = 0, refused = 0;
    for (int path_i = 0; path_i < 200; ++path_i) {
        const Path path = random_path(rng);
        v6 += path.ipv6;
        vlan += path.eth.has_vlan;
        for (int i = 0; i < 20; ++i) {
            const FrameSpec s = random_spec(rng, path, &seg, static_cast<uint32_t>(payload.size()));
            const size_t need = frame_len(s);
            /* Room for the frame, for the headers only, or not even that. */
            size_t cap = 70200;
            switch (rng() % 4) {
            case 0:
                cap = need;
                break;
            case 1:
                cap = headers_len(s);
                break;
            case 2:
                cap = headers_len(s) ? headers_len(s) - 1 : 0;
                break;
            default:
                break;
            }
            SCOPED_TRACE(testing::Message() << "path " << path_i << " op " << int(s.bth.opcode)
                                            << " v6 " << s.ipv6 << " vlan " << s.eth.has_vlan
                                            << " plen " << s.payload_len << " cap " << cap);
            const size_t n = expect_same(t, s, cap);
            n != 0 ? ++ok : ++refused;
            if (testing::Test::HasFailure())
                return;
        }
    }
    /* The sample covers every layout and both outcomes. */
    EXPECT_GT(v6, 50);
    EXPECT_GT(vlan, 50);
    EXPECT_GT(ok, 100);
    EXPECT_GT(refused, 100);
}

TEST(WireTemplate, OneRebuildPerPathAndEveryKeyFieldCounts) {
    std::mt19937 rng(4791);
    std::vector<uint8_t> payload(64, 0x11);
    const FrameSpec::Seg seg{payload.data(), 64};
    HeaderTemplate t;
    Path path = random_path(rng);
    path.ipv6 = false;
    path.eth.has_vlan = false;
    std::vector<uint8_t> buf(8192);
    for (int i = 0; i < 100; ++i) {
        FrameSpec s = random_spec(rng, path, &seg, 64);
        s.bth.opcode = kRcWriteOnly;
        ASSERT_NE(t.build_headers(s, buf.data(), buf.size()), 0u);
    }
    EXPECT_EQ(t.rebuilds(), 1u);

    /* Each field the prebuilt bytes hold, changed alone, must be seen (else stale bytes
     * would go out) and give the builder's bytes. (The TOS is written per frame: see
     * TosPerFrameWithoutRebuild.) */
    const auto mutations = std::vector<void (*)(Path &)>{
        [](Path &p) { p.eth.dst[5] ^= 1; },
        [](Path &p) { p.eth.src[0] ^= 2; },
        [](Path &p) { p.eth.has_vlan = !p.eth.has_vlan; },
        [](Path &p) {
            p.eth.has_vlan = true;
            p.eth.vlan_tci ^= 0x1000;
        },
        [](Path &p) { p.ipv6 = !p.ipv6; },
        [](Path &p) { p.sgid[15] ^= 1; },
        [](Path &p) { p.dgid[12] ^= 0x80; },
        [](Path &p) { p.ttl ^= 0x40; },
        [](Path &p) {
            p.ipv6 = true;
            p.flow_label ^= 0x80000;
        },
        [](Path &p) { p.sport ^= 0x8000; },
    };
    uint64_t expect = t.rebuilds();
    for (size_t m = 0; m < mutations.size(); ++m) {
        SCOPED_TRACE(testing::Message() << "mutation " << m);
        mutations[m](path);
        for (int i = 0; i < 3; ++i) {
            const FrameSpec s = random_spec(rng, path, &seg, 64);
            EXPECT_FALSE(i == 0 && t.matches(s));
            expect_same(t, s, 8192);
        }
        ++expect;
        EXPECT_EQ(t.rebuilds(), expect);
    }
}

TEST(WireTemplate, FieldsOffThePathDoNotRebuild) {
    /* The ethertype is the builder's, the VLAN TCI is not on the wire without a tag, the
     * flow label not in an IPv4 header: none of them may cost a rebuild. */
    std::mt19937 rng(7);
    std::vector<uint8_t> payload(8, 0);
    const FrameSpec::Seg seg{payload.data(), 8};
    Path path = random_path(rng);
    path.ipv6 = false;
    path.eth.has_vlan = false;
    HeaderTemplate t;
    for (int i = 0; i < 10; ++i) {
        path.eth.ethertype = static_cast<uint16_t>(rng());
        path.eth.vlan_tci = static_cast<uint16_t>(rng());
        path.flow_label = static_cast<uint32_t>(rng()) & 0xFFFFF;
        expect_same(t, random_spec(rng, path, &seg, 8), 8192);
    }
    EXPECT_EQ(t.rebuilds(), 1u);
}

/* Data frames (ECT(0)), ACKs (not-ECT) and CNPs (another DSCP) of one QP alternate on its
 * template: the TOS / traffic class is written per frame, never rebuilt, and every frame
 * is still the builder's bytes (IPv4 header checksum included) on each framing. */
TEST(WireTemplate, TosPerFrameWithoutRebuild) {
    std::mt19937 rng(0x7055);
    std::vector<uint8_t> payload(4200, 0x3C);
    const FrameSpec::Seg seg{payload.data(), 4200};
    for (int framing = 0; framing < 4; ++framing) { /* IPv4, IPv4+VLAN, IPv6, RoCEv1 */
        SCOPED_TRACE(testing::Message() << "framing " << framing);
        Path path = random_path(rng);
        path.ipv6 = framing >= 2;
        path.eth.has_vlan = framing == 1;
        if (!path.ipv6) {
            gid_from_ipv4(static_cast<uint32_t>(rng()), path.sgid);
            gid_from_ipv4(static_cast<uint32_t>(rng()), path.dgid);
        }
        HeaderTemplate t;
        for (int i = 0; i < 300; ++i) {
            /* Every TOS value at least once, then the ECT/not-ECT ping-pong. */
            path.tos = i < 256 ? static_cast<uint8_t>(i) : (i & 1 ? 0x02 : 0x00);
            FrameSpec s = random_spec(rng, path, &seg, 4200);
            s.rocev1 = framing == 3;
            expect_same(t, s, 8192);
        }
        EXPECT_EQ(t.rebuilds(), 1u);
    }
}
