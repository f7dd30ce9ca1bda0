/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/wire DataTemplate (through HeaderTemplate): after one build_frame of a one-packet
 * RC request teaches it a path, every DataFrame of that path generation and TOS is
 * written byte-for-byte as wire::build_frame writes the FrameSpec the requester would
 * have built (ICRC included, and parse_frame verifies it), for the four opcodes, every
 * layout (VLAN, IPv4/IPv6), payloads 0..mtu with every pad, SE, AckReq and PSN; another
 * generation or TOS, an unlearnt template, a short buffer and specs it must not learn from
 * are refused (build 0: the caller builds the FrameSpec). */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "wire_data_template.h"
#include "wire_opcode.h"
#include "wire_packet.h"
#include "wire_random_path.h"
#include "wire_template.h"

using namespace droce::wire;

namespace {

constexpr uint8_t kOps[] = {kRcSendOnly, kRcSendOnlyImm, kRcWriteOnly, kRcWriteOnlyImm};

/* A path as Qp::base_frame fills a spec (IP id 0, BTH flags clear). */
FrameSpec path_spec(std::mt19937 &rng, int layout, uint64_t gen) {
    FrameSpec s = random_path_spec(rng, layout);
    s.path_gen = gen;
    return s;
}

/* A random DataFrame on s's path, and s filled as the requester fills it for that frame. */
DataFrame next_frame(std::mt19937 &rng, FrameSpec &s, FrameSpec::Seg &seg,
                     const std::vector<uint8_t> &payload) {
    DataFrame d{};
    d.path_gen = s.path_gen;
    d.opcode = kOps[rng() % 4];
    d.tos = s.tos;
    d.se = rng() & 1;
    d.ack_req = rng() & 1;
    d.psn = static_cast<uint32_t>(rng()) & kPsnMask;
    d.reth = {(uint64_t{rng()} << 32) | rng(), static_cast<uint32_t>(rng()),
              static_cast<uint32_t>(rng())};
    d.imm = static_cast<uint32_t>(rng());
    d.len = static_cast<uint32_t>(rng() % (payload.size() + 1));
    d.payload = d.len != 0 ? payload.data() + (payload.size() - d.len) : nullptr;
    s.bth.opcode = d.opcode;
    s.bth.se = d.se;
    s.bth.ack_req = d.ack_req;
    s.bth.psn = d.psn;
    s.reth = d.opcode >= kRcWriteOnly ? d.reth : Reth{};
    s.imm = d.imm;
    seg = {d.payload, d.len, 0};
    s.segs = d.len != 0 ? &seg : nullptr;
    s.nsegs = d.len != 0 ? 1 : 0;
    s.payload_len = d.len;
    return d;
}

/* The template's frame against the builder's, both into different garbage. */
void expect_same(const HeaderTemplate &t, const DataFrame &d, const FrameSpec &s) {
    std::vector<uint8_t> a(8192, 0xA5), b(8192, 0x5A);
    const size_t na = build_frame(s, a.data(), 8000);
    const size_t nb = t.build_data(d, b.data(), 8000);
    ASSERT_NE(na, 0u);
    ASSERT_EQ(na, nb) << "frame length, opcode " << int(d.opcode) << " len " << d.len;
    EXPECT_EQ(0, std::memcmp(a.data(), b.data(), na))
        << "frames differ, opcode " << int(d.opcode) << " len " << d.len;
    EXPECT_EQ(b[std::max(na, DataTemplate::kMaxHdr)], 0x5A) << "template wrote past the frame";
    ParsedPacket pp;
    EXPECT_EQ(parse_frame(b.data(), nb, pp, true), ParseResult::Ok);
}

} // namespace

TEST(WireDataTemplate, ServedByteIdenticalAfterOneBuild) {
    std::mt19937 rng(23);
    std::vector<uint8_t> payload(4096);
    for (auto &x : payload)
        x = static_cast<uint8_t>(rng());
    for (int layout = 0; layout < 4; ++layout) {
        SCOPED_TRACE(testing::Message() << "vlan " << (layout & 1) << " v6 " << (layout >> 1));
        HeaderTemplate t;
        FrameSpec s = path_spec(rng, layout, 7 + layout);
        FrameSpec::Seg seg;
        DataFrame d = next_frame(rng, s, seg, payload);
        EXPECT_FALSE(t.serves(d)) << "nothing learnt yet";
        std::vector<uint8_t> out(4096);
        EXPECT_EQ(t.build_data(d, out.data(), out.size()), 0u);
        ASSERT_NE(t.build_frame(s, out.data(), out.size()), 0u); /* teaches it */
        for (int i = 0; i < 400; ++i) {
            d = next_frame(rng, s, seg, payload);
            ASSERT_TRUE(t.serves(d));
            expect_same(t, d, s);
        }
        EXPECT_EQ(t.data_template().hits(), 400u);
    }
}

TEST(WireDataTemplate, RefusesOtherGenerationTosOrShortBuffer) {
    std::mt19937 rng(5);
    std::vector<uint8_t> payload(256, 0x77);
    HeaderTemplate t;
    FrameSpec s = path_spec(rng, 0, 41);
    FrameSpec::Seg seg;
    DataFrame d = next_frame(rng, s, seg, payload);
    std::vector<uint8_t> out(4096);
    ASSERT_NE(t.build_frame(s, out.data(), out.size()), 0u);
    ASSERT_TRUE(t.serves(d));
    DataFrame other = d;
    other.path_gen = 42;
    EXPECT_EQ(t.build_data(other, out.data(), out.size()), 0u) << "another generation";
    other = d;
    other.tos = static_cast<uint8_t>(d.tos ^ 4);
    EXPECT_EQ(t.build_data(other, out.data(), out.size()), 0u) << "another TOS";
    other = d;
    other.opcode = kRcWriteFirst;
    EXPECT_EQ(t.build_data(other, out.data(), out.size()), 0u) << "not a one-packet request";
    const size_t n = t.build_data(d, out.data(), out.size());
    ASSERT_NE(n, 0u);
    EXPECT_EQ(t.build_data(d, out.data(), n - 1), 0u) << "a buffer one byte short";
    /* A new generation of the same QP: refused until a FrameSpec of it is built. */
    s.path_gen = 43;
    d.path_gen = 43;
    EXPECT_EQ(t.build_data(d, out.data(), out.size()), 0u);
    s.bth.opcode = d.opcode;
    ASSERT_NE(t.build_frame(s, out.data(), out.size()), 0u);
    EXPECT_NE(t.build_data(d, out.data(), out.size()), 0u);
}

TEST(WireDataTemplate, LearnsOnlyFromSpecsItCanReproduce) {
    std::mt19937 rng(9);
    std::vector<uint8_t> payload(64, 1);
    const auto learns = [&](auto change) {
        HeaderTemplate t;
        FrameSpec s = path_spec(rng, 0, 99);
        FrameSpec::Seg seg;
        DataFrame d = next_frame(rng, s, seg, payload);
        change(s);
        std::vector<uint8_t> out(4096);
        EXPECT_NE(t.build_frame(s, out.data(), out.size()), 0u);
        return t.serves(d);
    };
    EXPECT_TRUE(learns([](FrameSpec &) {}));
    EXPECT_FALSE(learns([](FrameSpec &s) { s.path_gen = 0; })) << "no generation";
    EXPECT_FALSE(learns([](FrameSpec &s) { s.ip_id = 1; })) << "an IP id";
    EXPECT_FALSE(learns([](FrameSpec &s) { s.bth.becn = true; })) << "BECN";
    EXPECT_FALSE(learns([](FrameSpec &s) { s.bth.mig = true; })) << "MigReq";
    EXPECT_FALSE(learns([](FrameSpec &s) { s.rocev1 = true; })) << "RoCEv1";
    EXPECT_FALSE(learns([](FrameSpec &s) { s.bth.opcode = kRcWriteLast; }))
        << "not a one-packet request";
}
