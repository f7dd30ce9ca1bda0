/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/wire AckTemplate (through HeaderTemplate::build_frame): a run of ACKs on one path
 * is served from the template (hits) and every frame is byte-for-byte what
 * wire::build_frame writes, ICRC included (and parse_frame verifies it); a change of any
 * field the template baked in falls back to the builder and is relearnt; short buffers
 * and RoCEv1 are never served from it. */
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "wire_opcode.h"
#include "wire_packet.h"
#include "wire_random_path.h"
#include "wire_template.h"

using namespace droce::wire;

namespace {

FrameSpec ack_spec(std::mt19937 &rng, int layout) {
    FrameSpec s = random_path_spec(rng, layout);
    s.ip_id = static_cast<uint16_t>(rng());
    s.bth.opcode = kRcAcknowledge;
    return s;
}

void next_ack(std::mt19937 &rng, FrameSpec &s) {
    s.bth.psn = static_cast<uint32_t>(rng()) & kPsnMask;
    s.bth.ack_req = rng() & 1;
    s.aeth.syndrome = static_cast<uint8_t>(rng());
    s.aeth.msn = static_cast<uint32_t>(rng()) & 0xFFFFFF;
}

/* The template's frame against the builder's, both into different garbage; and the
 * template's frame parses with its ICRC verified. */
size_t expect_same(HeaderTemplate &t, const FrameSpec &s, size_t cap = 256) {
    std::vector<uint8_t> a(cap + 16, 0xA5), b(cap + 16, 0x5A);
    const size_t na = build_frame(s, a.data(), cap);
    const size_t nb = t.build_frame(s, b.data(), cap);
    EXPECT_EQ(na, nb) << "frame length, cap " << cap;
    if (na != 0 && na == nb) {
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), na)) << "frames differ";
        EXPECT_EQ(b[na], 0x5A) << "template wrote past the frame";
        ParsedPacket pp;
        EXPECT_EQ(parse_frame(b.data(), nb, pp, true), ParseResult::Ok);
    }
    return nb;
}

} // namespace

TEST(WireAckTemplate, RunOfAcksServedAndByteIdentical) {
    std::mt19937 rng(11);
    for (int layout = 0; layout < 4; ++layout) {
        SCOPED_TRACE(testing::Message() << "vlan " << (layout & 1) << " v6 " << (layout >> 1));
        HeaderTemplate t;
        FrameSpec s = ack_spec(rng, layout);
        const uint64_t hits0 = t.ack_template().hits();
        for (int i = 0; i < 500; ++i) {
            next_ack(rng, s);
            ASSERT_NE(expect_same(t, s), 0u);
        }
        /* The first ACK teaches the template, the other 499 come from it. */
        EXPECT_EQ(t.ack_template().hits() - hits0, 499u);
    }
}

TEST(WireAckTemplate, BakedFieldChangeFallsBackAndRelearns) {
    std::mt19937 rng(12);
    for (int layout = 0; layout < 4; ++layout) {
        HeaderTemplate t;
        FrameSpec s = ack_spec(rng, layout);
        for (int change = 0; change < 12; ++change) {
            SCOPED_TRACE(testing::Message() << "layout " << layout << " change " << change);
            next_ack(rng, s);
            ASSERT_NE(expect_same(t, s), 0u);
            switch (change) {
            case 0:
                s.tos = static_cast<uint8_t>(s.tos + 1);
                break;
            case 1:
                s.ip_id = static_cast<uint16_t>(s.ip_id + 1);
                break;
            case 2:
                s.bth.pkey = static_cast<uint16_t>(s.bth.pkey ^ 0x8000);
                break;
            case 3:
                s.bth.dest_qp = (s.bth.dest_qp + 1) & kQpnMask;
                break;
            case 4:
                s.bth.fecn = !s.bth.fecn;
                break;
            case 5:
                s.bth.becn = !s.bth.becn;
                break;
            case 6:
                s.bth.se = !s.bth.se;
                break;
            case 7:
                s.bth.mig = !s.bth.mig;
                break;
            case 8:
                s.ttl = static_cast<uint8_t>(s.ttl + 1);
                break;
            case 9:
                s.eth.dst[5] = static_cast<uint8_t>(s.eth.dst[5] + 1);
                break;
            case 10:
                s.udp_sport = static_cast<uint16_t>(s.udp_sport + 1);
                break;
            default:
                s.dst_gid[15] = static_cast<uint8_t>(s.dst_gid[15] + 1);
                break;
            }
            const uint64_t h = t.ack_template().hits();
            next_ack(rng, s);
            ASSERT_NE(expect_same(t, s), 0u); /* the builder, relearnt */
            EXPECT_EQ(t.ack_template().hits(), h) << "served with a stale baked field";
            next_ack(rng, s);
            ASSERT_NE(expect_same(t, s), 0u); /* from the template again */
            EXPECT_EQ(t.ack_template().hits(), h + 1);
        }
    }
}

TEST(WireAckTemplate, ShortBufferAndNonAcksNotServed) {
    std::mt19937 rng(13);
    HeaderTemplate t;
    FrameSpec s = ack_spec(rng, 0);
    next_ack(rng, s);
    const size_t n = expect_same(t, s);
    ASSERT_NE(n, 0u);
    const uint64_t h = t.ack_template().hits();
    next_ack(rng, s);
    EXPECT_EQ(expect_same(t, s, n - 1), 0u); /* one byte short: refused like the builder */
    EXPECT_EQ(t.ack_template().hits(), h);
    /* An atomic ACK and a NAK-shaped frame with payload on the same path: the builder. */
    FrameSpec o = s;
    o.bth.opcode = kRcAtomicAcknowledge;
    expect_same(t, o);
    EXPECT_EQ(t.ack_template().hits(), h);
    /* RoCEv1 has another ICRC: never from the template. */
    FrameSpec v1 = s;
    v1.rocev1 = true;
    for (int i = 0; i < 3; ++i) {
        next_ack(rng, v1);
        expect_same(t, v1);
    }
    EXPECT_EQ(t.ack_template().hits(), h);
}
