/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/fabric: the bottleneck queue's RED/ECN marking probability, the CE rewrite (IPv4
 * checksum and RoCE ICRC still valid), tail drop, RED drop, random loss, departure times at
 * the configured rate, delay and depth sampling. */
#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fabric_bottleneck.h"
#include "wire_headers.h"
#include "wire_opcode.h"
#include "wire_packet.h"

using namespace droce::fabric;
namespace w = droce::wire;

namespace {

/* A real RoCEv2 RC WRITE_ONLY frame of `plen` payload bytes with the given ECN bits. */
std::vector<uint8_t> roce_frame(uint8_t ecn, bool ipv6 = false, bool vlan = false,
                                uint32_t plen = 1000) {
    w::FrameSpec s{};
    const uint8_t dst[6] = {0x02, 0, 0, 0, 0, 0x0b}, src[6] = {0x02, 0, 0, 0, 0, 0x0a};
    std::memcpy(s.eth.dst, dst, 6);
    std::memcpy(s.eth.src, src, 6);
    s.eth.has_vlan = vlan;
    s.eth.vlan_tci = vlan ? 0x6064 : 0;
    s.ipv6 = ipv6;
    w::gid_from_ipv4(0x0A000001, s.src_gid);
    w::gid_from_ipv4(0x0A000002, s.dst_gid);
    if (ipv6)
        for (int i = 0; i < 16; ++i)
            s.dst_gid[i] = static_cast<uint8_t>(0x10 + i);
    s.tos = static_cast<uint8_t>(26 << 2 | ecn);
    s.ttl = 64;
    s.ip_id = 0x1234;
    s.flow_label = 0x12345;
    s.udp_sport = w::udp_sport_for_qpn(0x11);
    s.bth.opcode = 0x0A; /* RC RDMA WRITE ONLY */
    s.bth.pkey = w::kDefaultPkey;
    s.bth.dest_qp = 0x22;
    s.bth.psn = 7;
    s.reth = w::Reth{0x1000, 0x1234, plen};
    std::vector<uint8_t> payload(plen, 0x5A);
    w::FrameSpec::Seg seg{payload.data(), plen};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = plen;
    std::vector<uint8_t> f(w::frame_len(s));
    EXPECT_EQ(w::build_frame(s, f.data(), f.size()), f.size());
    return f;
}

BottleneckParams slow_queue() {
    /* 1 bit/s: nothing leaves during a test, so the depth is what was enqueued */
    BottleneckParams p;
    p.rate_bps = 1;
    p.buffer_bytes = 1'000'000;
    p.kmin_bytes = 10'000;
    p.kmax_bytes = 30'000;
    p.pmax = 0.5;
    return p;
}

} // namespace

TEST(Fabric, ValidateRefusesBadValues) {
    BottleneckParams p;
    EXPECT_EQ(validate(p), nullptr);
    auto bad = [](auto f) {
        BottleneckParams q;
        f(q);
        return validate(q);
    };
    EXPECT_NE(bad([](BottleneckParams &q) { q.rate_bps = 0; }), nullptr);
    EXPECT_NE(bad([](BottleneckParams &q) { q.buffer_bytes = 0; }), nullptr);
    EXPECT_NE(bad([](BottleneckParams &q) { q.kmin_bytes = q.kmax_bytes; }), nullptr);
    EXPECT_NE(bad([](BottleneckParams &q) { q.pmax = 1.5; }), nullptr);
    EXPECT_NE(bad([](BottleneckParams &q) { q.loss = -0.1; }), nullptr);
    EXPECT_STREQ(bad([](BottleneckParams &q) { q.kmin_bytes = q.kmax_bytes; }),
                 "kmin_bytes must be below kmax_bytes");
    EXPECT_NE(bad([](BottleneckParams &q) {
                  q.pfc_xoff_bytes = 10'000;
                  q.pfc_xon_bytes = 10'000;
              }),
              nullptr)
        << "XON must be below XOFF";
    EXPECT_NE(bad([](BottleneckParams &q) { q.pfc_xoff_bytes = q.buffer_bytes + 1; }), nullptr);
    EXPECT_EQ(bad([](BottleneckParams &q) {
                  q.pfc_xoff_bytes = 10'000;
                  q.pfc_xon_bytes = 8'000;
              }),
              nullptr);
}

TEST(Fabric, MarkProbabilityIsLinearFromKminToPmaxThenAll) {
    Bottleneck b(slow_queue(), 1);
    EXPECT_EQ(b.mark_probability(0), 0);
    EXPECT_EQ(b.mark_probability(10'000), 0);
    EXPECT_DOUBLE_EQ(b.mark_probability(20'000), 0.25);
    EXPECT_DOUBLE_EQ(b.mark_probability(25'000), 0.375);
    EXPECT_EQ(b.mark_probability(30'000), 1);
    EXPECT_EQ(b.mark_probability(1'000'000), 1);
}

/* Frame i of a run meets a depth of i frames: over many seeds the fraction of marks at each
 * depth must follow the ramp: none up to Kmin, pmax·(q − Kmin)/(Kmax − Kmin) inside, all
 * from Kmax on. */
TEST(Fabric, MarkingFrequencyFollowsTheRamp) {
    const std::vector<uint8_t> proto = roce_frame(2);
    const uint32_t len = static_cast<uint32_t>(proto.size());
    const int n = 45, seeds = 4000;
    std::vector<int> marks(n, 0);
    for (int seed = 0; seed < seeds; ++seed) {
        Bottleneck b(slow_queue(), static_cast<uint64_t>(seed) + 1);
        for (int i = 0; i < n; ++i) {
            std::vector<uint8_t> f = proto;
            const Decision d = b.enqueue(f.data(), len, 1);
            ASSERT_TRUE(d.accepted());
            if (d.verdict == Verdict::marked) {
                ++marks[i];
                EXPECT_EQ(frame_ecn(f.data(), f.size()), 3);
            } else {
                EXPECT_EQ(f, proto);
            }
        }
    }
    Bottleneck ref(slow_queue(), 1);
    for (int i = 0; i < n; ++i) {
        const double p = ref.mark_probability(static_cast<uint32_t>(i) * len);
        const double got = static_cast<double>(marks[i]) / seeds;
        if (p == 0 || p == 1)
            EXPECT_EQ(got, p) << "frame " << i;
        else
            EXPECT_NEAR(got, p, 0.035) << "frame " << i << " depth " << i * len;
    }
}

TEST(Fabric, CeRewriteKeepsIpv4ChecksumAndIcrcValid) {
    for (bool v6 : {false, true})
        for (bool vlan : {false, true})
            for (uint8_t ecn : {1, 2}) {
                SCOPED_TRACE(testing::Message()
                             << "v6 " << v6 << " vlan " << vlan << " ecn " << int(ecn));
                std::vector<uint8_t> f = roce_frame(ecn, v6, vlan);
                EXPECT_EQ(frame_ecn(f.data(), f.size()), ecn);
                ASSERT_TRUE(frame_mark_ce(f.data(), f.size()));
                w::ParsedPacket p;
                ASSERT_EQ(w::parse_frame(f.data(), f.size(), p, true), w::ParseResult::Ok);
                EXPECT_EQ(p.ecn, 3);
                EXPECT_EQ(p.dscp, 26);
                if (!v6)
                    EXPECT_EQ(p.ip4.checksum, w::ipv4_checksum(f.data() + p.l3_off));
                else
                    EXPECT_EQ(p.ip6.flow_label, 0x12345u);
            }
    uint8_t arp[60] = {};
    arp[12] = 0x08;
    arp[13] = 0x06;
    EXPECT_EQ(frame_ecn(arp, sizeof arp), -1);
    EXPECT_FALSE(frame_mark_ce(arp, sizeof arp));
    EXPECT_EQ(frame_ecn(arp, 10), -1);
}

TEST(Fabric, NotEctPassesUnlessRedDrop) {
    for (bool red_drop : {false, true}) {
        BottleneckParams p = slow_queue();
        p.red_drop = red_drop;
        Bottleneck b(p, 3);
        std::vector<uint8_t> proto = roce_frame(0);
        const uint32_t len = static_cast<uint32_t>(proto.size());
        uint64_t dropped = 0;
        for (int i = 0; i < 40; ++i) {
            std::vector<uint8_t> f = proto;
            const Decision d = b.enqueue(f.data(), len, 1);
            EXPECT_NE(d.verdict, Verdict::marked);
            EXPECT_EQ(f, proto) << "not-ECT frames are never rewritten";
            if (d.verdict == Verdict::dropped_red)
                ++dropped;
        }
        EXPECT_EQ(b.counters().marked, 0u);
        EXPECT_EQ(b.counters().not_ect_arrived, 40u);
        EXPECT_EQ(b.counters().dropped_red, dropped);
        if (red_drop)
            EXPECT_GE(dropped, 10u); /* everything from Kmax on, at least */
        else
            EXPECT_EQ(dropped, 0u);
    }
}

TEST(Fabric, TailDropAtTheBuffer) {
    BottleneckParams p = slow_queue();
    p.ecn = false;
    p.buffer_bytes = 10'000;
    Bottleneck b(p, 1);
    std::vector<uint8_t> f(1000, 0);
    for (int i = 0; i < 10; ++i)
        EXPECT_EQ(b.enqueue(f.data(), 1000, 1).verdict, Verdict::queued);
    EXPECT_EQ(b.enqueue(f.data(), 1000, 1).verdict, Verdict::dropped_tail);
    EXPECT_EQ(b.enqueue(f.data(), 1, 1).verdict, Verdict::dropped_tail) << "buffer exactly full";
    EXPECT_EQ(b.depth_bytes(), 10'000u);
    EXPECT_EQ(b.counters().dropped_tail, 2u);
    EXPECT_EQ(b.counters().max_depth_bytes, 10'000u);
    /* a departure frees room */
    const uint64_t t = b.next_departure();
    EXPECT_TRUE(b.dequeue(t).ok);
    EXPECT_EQ(b.enqueue(f.data(), 1000, t).verdict, Verdict::queued);
    EXPECT_EQ(b.enqueue(f.data(), 1000, t).verdict, Verdict::dropped_tail);
}

TEST(Fabric, DeparturesAtTheRate) {
    BottleneckParams p;
    p.rate_bps = 10'000'000'000; /* (1000 + 24) bytes = 819.2 ns */
    p.ecn = false;
    p.delay_ns = 2000;
    Bottleneck b(p, 1);
    std::vector<uint8_t> f(1000, 0);
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(b.enqueue(f.data(), 1000, 100).depart_at,
                  100 + static_cast<uint64_t>((i + 1) * 8192) / 10);
    EXPECT_EQ(b.next_departure(), 100u + 819);
    EXPECT_FALSE(b.dequeue(100 + 818).ok) << "not before its last bit left";
    for (int i = 0; i < 5; ++i) {
        const uint64_t t = b.next_departure();
        const Departure d = b.dequeue(t);
        ASSERT_TRUE(d.ok);
        EXPECT_EQ(d.len, 1000u);
        EXPECT_EQ(d.deliver_at, t + 2000);
    }
    EXPECT_EQ(b.next_departure(), UINT64_MAX);
    EXPECT_EQ(b.depth_bytes(), 0u);
    /* 5 × 819.2 ns = 4096 exactly: the remainder is carried, no drift */
    EXPECT_EQ(b.counters().dequeued, 5u);
    /* an idle egress starts the next frame when it arrives */
    EXPECT_EQ(b.enqueue(f.data(), 1000, 100'000).depart_at, 100'000u + 819);
    /* a long back-to-back run keeps the exact rate */
    Bottleneck c(p, 1);
    uint64_t last = c.enqueue(f.data(), 1000, 0).depart_at, now = 0;
    for (int i = 1; i < 100'000; ++i) { /* one frame always waiting: the egress never idles */
        last = c.enqueue(f.data(), 1000, now).depart_at;
        now = c.next_departure();
        ASSERT_TRUE(c.dequeue(now).ok);
    }
    EXPECT_EQ(last, 81'920'000u);
}

TEST(Fabric, RandomLossIsSeededAndCounted) {
    BottleneckParams p;
    p.loss = 0.1;
    p.ecn = false;
    std::vector<uint8_t> f(1000, 0);
    auto run = [&](uint64_t seed) {
        Bottleneck b(p, seed);
        std::vector<bool> lost;
        for (int i = 0; i < 10'000; ++i) {
            const Decision d = b.enqueue(f.data(), 1000, static_cast<uint64_t>(i) * 1000);
            lost.push_back(d.verdict == Verdict::dropped_loss);
            while (b.dequeue(static_cast<uint64_t>(i) * 1000).ok) {
            }
        }
        EXPECT_EQ(b.counters().dropped_loss + b.counters().enqueued, 10'000u);
        EXPECT_NEAR(static_cast<double>(b.counters().dropped_loss), 1000, 150);
        return lost;
    };
    EXPECT_EQ(run(7), run(7));
    EXPECT_NE(run(7), run(8));
}

TEST(Fabric, DepthSamplesAtIntervalBoundaries) {
    BottleneckParams p;
    p.rate_bps = 8'000'000'000; /* (976 + 24) bytes = 1000 ns */
    p.ecn = false;
    Bottleneck b(p, 1);
    DepthSample s[8];
    b.set_sampling(500, s, 8);
    std::vector<uint8_t> f(976, 0);
    b.enqueue(f.data(), 976, 100); /* departs 1100 */
    b.enqueue(f.data(), 976, 200); /* departs 2100 */
    while (b.next_departure() != UINT64_MAX)
        b.dequeue(b.next_departure());
    b.flush_samples(3600);
    ASSERT_EQ(b.samples(), 8u);
    const uint32_t want[8] = {0, 1952, 1952, 976, 976, 0, 0, 0};
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(s[i].t, static_cast<uint64_t>(i) * 500);
        EXPECT_EQ(s[i].bytes, want[i]) << "t " << s[i].t;
    }
    b.flush_samples(4000);
    EXPECT_EQ(b.counters().samples_lost, 1u);
}

/* mark_at_dequeue: enqueue never marks; a departing ECT frame is marked on the depth it
 * leaves behind (all of them at or above Kmax, none at or below Kmin). */
TEST(Fabric, MarkAtDequeueUsesTheDepthLeftBehind) {
    BottleneckParams p = slow_queue();
    p.rate_bps = 10'000'000'000;
    p.mark_at_dequeue = true;
    Bottleneck b(p, 5);
    const std::vector<uint8_t> proto = roce_frame(2);
    const uint32_t len = static_cast<uint32_t>(proto.size());
    std::vector<std::vector<uint8_t>> q;
    for (int i = 0; i < 45; ++i) {
        q.push_back(proto);
        EXPECT_EQ(b.enqueue(q.back().data(), len, 0).verdict, Verdict::queued);
    }
    EXPECT_EQ(b.counters().marked, 0u);
    for (int i = 0; i < 45; ++i) {
        const uint32_t behind = static_cast<uint32_t>(44 - i) * len;
        const Departure d = b.dequeue(b.next_departure(), q[static_cast<size_t>(i)].data());
        ASSERT_TRUE(d.ok);
        EXPECT_EQ(frame_ecn(q[static_cast<size_t>(i)].data(), len), d.marked ? 3 : 2);
        if (behind >= p.kmax_bytes) {
            EXPECT_TRUE(d.marked) << i;
        }
        if (behind <= p.kmin_bytes) {
            EXPECT_FALSE(d.marked) << i;
        }
    }
    EXPECT_GE(b.counters().marked, 11u);
}

/* PFC per ingress port: XOFF when a port's bytes in the queue reach the threshold (that
 * port only), XON when they fall to the lower one, one signal per transition. */
TEST(Fabric, PfcPausesTheIngressPortAtXoffAndResumesAtXon) {
    BottleneckParams p = slow_queue();
    p.ecn = false;
    p.rate_bps = 8'000'000'000; /* 1000 B + 24 overhead = 1024 ns a frame */
    p.pfc_xoff_bytes = 3'000;
    p.pfc_xon_bytes = 1'000;
    Bottleneck b(p, 1);
    std::vector<uint8_t> f(1000, 0);
    EXPECT_EQ(b.enqueue(f.data(), 1000, 0, 1).pfc, PfcSignal::none);
    EXPECT_EQ(b.enqueue(f.data(), 1000, 0, 2).pfc, PfcSignal::none) << "port 2's own bytes";
    EXPECT_EQ(b.enqueue(f.data(), 1000, 0, 1).pfc, PfcSignal::none);
    EXPECT_EQ(b.enqueue(f.data(), 1000, 0, 1).pfc, PfcSignal::xoff) << "port 1 at 3000 B";
    EXPECT_TRUE(b.ingress_paused(1));
    EXPECT_FALSE(b.ingress_paused(2));
    EXPECT_EQ(b.enqueue(f.data(), 1000, 0, 1).pfc, PfcSignal::none) << "already paused";
    EXPECT_EQ(b.ingress_bytes(1), 4'000u);
    EXPECT_EQ(b.counters().pfc_xoff, 1u);
    /* frames leave in order: port 1, 2, 1, 1, 1; XON when port 1 is down to 1000 B */
    std::vector<PfcSignal> sig;
    std::vector<uint8_t> from;
    for (uint64_t t = 0; sig.size() < 5; t += 100) {
        const Departure d = b.dequeue(t);
        if (d.ok) {
            sig.push_back(d.pfc);
            from.push_back(d.ingress);
        }
    }
    EXPECT_EQ(from, (std::vector<uint8_t>{1, 2, 1, 1, 1}));
    EXPECT_EQ(sig, (std::vector<PfcSignal>{PfcSignal::none, PfcSignal::none, PfcSignal::none,
                                           PfcSignal::xon, PfcSignal::none}));
    EXPECT_FALSE(b.ingress_paused(1));
    EXPECT_EQ(b.ingress_bytes(1), 0u);
    EXPECT_EQ(b.counters().pfc_xon, 1u);
}

TEST(Fabric, PfcOffNeverSignals) {
    BottleneckParams p = slow_queue();
    p.ecn = false;
    Bottleneck b(p, 1);
    std::vector<uint8_t> f(1000, 0);
    for (int i = 0; i < 100; ++i)
        EXPECT_EQ(b.enqueue(f.data(), 1000, 0, 3).pfc, PfcSignal::none);
    EXPECT_FALSE(b.ingress_paused(3));
    EXPECT_EQ(b.counters().pfc_xoff, 0u);
}

TEST(Fabric, RestartAfterAHoldSpacesTheQueueFromThen) {
    /* droce-fabric --honour-pfc: an egress held by a pause resumes at the rate from the
     * resume, neither bursting the time it stood still nor owing it. */
    BottleneckParams p = slow_queue();
    p.ecn = false;
    p.rate_bps = 8'000'000'000; /* 1000 B + 24 overhead = 1024 ns a frame */
    Bottleneck b(p, 1);
    std::vector<uint8_t> f(1000, 0);
    for (int i = 0; i < 3; ++i)
        b.enqueue(f.data(), 1000, 0);
    EXPECT_EQ(b.next_departure(), 1024u);
    /* held from 0 to 50 µs: nothing left; then back to back from 50 µs */
    b.restart(50'000);
    std::vector<uint64_t> at;
    for (uint64_t t = 50'000; at.size() < 3 && t < 60'000; ++t)
        if (b.dequeue(t).ok)
            at.push_back(t);
    EXPECT_EQ(at, (std::vector<uint64_t>{51'024, 52'048, 53'072}));
    /* an empty queue restarts idle: the next frame starts when it arrives */
    b.restart(70'000);
    EXPECT_EQ(b.enqueue(f.data(), 1000, 80'000).depart_at, 81'024u);
}
