/* SPDX-License-Identifier: BSD-3-Clause */
/* DCQCN inside the RC transport, on the deterministic simulator: ECN marking of data,
 * CNPs from CE marks (one per min_time_between_cnps), rate cuts on CNPs, the pacer's
 * accuracy, DCQCN switched off per QP, retransmission under a rate limit, and the CNP
 * compared byte for byte with a ConnectX-4 Lx capture. */
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "sim_fabric.h"

using namespace droce;
using namespace droce::sim;

namespace {

constexpr uint32_t kIpA = 0x0A001101, kIpB = 0x0A001201; /* the capture's 10.0.17.1 / 18.1 */
constexpr size_t kTos = 15, kBthOff = 42;                /* IPv4, no VLAN */
constexpr uint64_t k10G = 10'000'000'000;

const uint32_t kAll = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;

bool is_from(const std::vector<uint8_t> &f, const Endpoint &e) {
    return f.size() > kBthOff && std::memcmp(f.data() + 6, e.mac, 6) == 0;
}
uint8_t opcode(const std::vector<uint8_t> &f) { return f[kBthOff]; }
/* RC requests, READ responses and atomic responses: everything RC but the ACK. */
bool is_data(uint8_t op) { return op < 0x20 && op != wire::kRcAcknowledge; }

/* Rewrites the IP ECN field to CE (a switch marking congestion); the ICRC masks the TOS. */
void mark_ce(std::vector<uint8_t> &f) {
    f[kTos] |= 3;
    f[24] = f[25] = 0;
    const uint16_t c = wire::ipv4_checksum(f.data() + 14);
    f[24] = static_cast<uint8_t>(c >> 8);
    f[25] = static_cast<uint8_t>(c);
}

/* Two endpoints, each with the given DCQCN parameters (nullptr = none), a QP each. */
struct CcPair {
    CcPair(const cc::CcParams *pa, const cc::CcParams *pb, Faults f = {}, QpAttr attr = {},
           uint64_t line = k10G, Mtu mtu = Mtu::Mtu1024)
        : fab(1, f), a(fab, kIpA, 1), b(fab, kIpB, 2) {
        a.cc = pa;
        b.cc = pb;
        a.line_rate_bps = b.line_rate_bps = line;
        qa = &a.create_qp(0x11, &scq_a, &rcq_a);
        qb = &b.create_qp(0x118, &scq_b, &rcq_b);
        attr.qp_access_flags = kAll;
        a.connect(*qa, b, *qb, 0x100, 0x200, attr, mtu);
        b.connect(*qb, a, *qa, 0x200, 0x100, attr, mtu);
        buf_a.assign(8 << 20, 1);
        buf_b.assign(8 << 20, 0);
        mr_a = a.mrs.reg(1, buf_a.data(), buf_a.size(), kAll).value();
        mr_b = b.mrs.reg(1, buf_b.data(), buf_b.size(), kAll).value();
    }
    void write(uint64_t id, uint32_t len, uint64_t off = 0) {
        SendWr wr;
        wr.wr_id = id;
        wr.opcode = WrOpcode::RdmaWrite;
        wr.send_flags = kSendSignaled;
        wr.num_sge = 1;
        wr.sg_list[0] = {mr_a.addr + off, len, mr_a.key};
        wr.remote_addr = mr_b.addr + off;
        wr.rkey = mr_b.key;
        ASSERT_TRUE(qa->post_send(wr));
    }
    bool run_until_completions(size_t n, Time limit = 2'000'000'000) {
        return fab.run_until([&] { return scq_a.q.size() >= n; }, fab.now + limit);
    }
    Fabric fab;
    Endpoint a, b;
    SimCq scq_a, rcq_a, scq_b, rcq_b;
    rc::Qp *qa, *qb;
    std::vector<uint8_t> buf_a, buf_b;
    mem::MemoryRegion mr_a{}, mr_b{};
};

/* Parameters that hold a QP at `rate` after its first CNP: the first CNP sets the rate,
 * no cut goes below 100% of it, and no increase stage comes within the test. */
cc::CcParams fixed_rate(uint64_t rate) {
    cc::CcParams p;
    p.rate_to_set_on_first_cnp_bps = rate;
    p.rpg_min_dec_fac = 100;
    p.rpg_time_reset_ns = 1'000'000'000'000;
    p.rpg_byte_reset = UINT32_MAX;
    return p;
}

} // namespace

TEST(CcSim, DataCarriesEct0ByDefaultNotEctWhenOffAndAcksNeverEct) {
    struct Case {
        const char *name;
        bool cc;
        cc::EcnMode mode;
        uint8_t data_ecn;
    } cases[] = {{"default", true, cc::EcnMode::ect0, 2},
                 {"ect1", true, cc::EcnMode::ect1, 1},
                 {"off", true, cc::EcnMode::off, 0},
                 {"no dcqcn", false, cc::EcnMode::ect0, 0}};
    for (const Case &c : cases) {
        cc::CcParams p;
        p.ecn_mode = c.mode;
        CcPair t(c.cc ? &p : nullptr, c.cc ? &p : nullptr);
        uint64_t data = 0, acks = 0, bad = 0;
        t.fab.on_send = [&](std::vector<uint8_t> &f) {
            const uint8_t op = opcode(f), ecn = f[kTos] & 3;
            if (is_data(op)) {
                ++data;
                bad += ecn != c.data_ecn;
            } else if (op == 0x11) {
                ++acks;
                bad += ecn != 0;
            }
        };
        t.write(1, 100000);
        ASSERT_TRUE(t.run_until_completions(1)) << c.name;
        EXPECT_GT(data, 90u) << c.name;
        EXPECT_GT(acks, 0u) << c.name;
        EXPECT_EQ(bad, 0u) << c.name;
    }
}

TEST(CcSim, CeMarkedStreamYieldsExactlyOneCnpPerMinTimeBetweenCnps) {
    cc::CcParams pa; /* the sender ignores CNPs: a steady CE-marked stream */
    pa.rp_enabled = false;
    cc::CcParams pb;
    Faults f;
    f.link_gbps = 10; /* ~0.85 us per 1 KB frame: about five CE marks per 4 us interval */
    CcPair t(&pa, &pb, f);
    std::vector<Time> departs, cnps;
    t.fab.on_send = [&](std::vector<uint8_t> &fr) {
        if (is_from(fr, t.a) && is_data(opcode(fr))) {
            mark_ce(fr);
            /* When it leaves the sender's link (as Fabric::send computes it). */
            const Time ser = static_cast<Time>((fr.size() + 24) * 8 / f.link_gbps);
            departs.push_back(std::max(t.fab.now, t.a.link_free_at) + ser);
        }
        if (is_from(fr, t.b) && opcode(fr) == wire::kCnp)
            cnps.push_back(t.fab.now);
    };
    t.write(1, 1 << 20);
    ASSERT_TRUE(t.run_until_completions(1));
    /* The rule, replayed on the arrival times: a CNP for the first CE mark, then for the
     * first CE mark at least min_time_between_cnps after the last CNP. */
    uint64_t expect = 0;
    Time last = 0;
    for (size_t i = 0; i < departs.size(); ++i) {
        const Time at = departs[i] + f.delay_ns;
        if (expect == 0 || at - last >= pb.min_time_between_cnps_ns) {
            ++expect;
            last = at;
        }
    }
    ASSERT_GT(departs.size(), 1000u);
    EXPECT_EQ(t.b.counters.np_ecn_marked_roce_packets, departs.size());
    EXPECT_EQ(t.b.counters.np_cnp_sent, expect);
    EXPECT_EQ(cnps.size(), expect);
    EXPECT_EQ(t.b.counters.np_cnp_coalesced, departs.size() - expect);
    for (size_t i = 1; i < cnps.size(); ++i)
        ASSERT_GE(cnps[i] - cnps[i - 1], pb.min_time_between_cnps_ns) << "CNP " << i;
    /* ~1 MB at 10 Gb/s is ~860 us: about one CNP per 4.2 us (a frame boundary after 4). */
    EXPECT_GT(expect, 150u);
    EXPECT_LT(expect, 260u);
    /* The sender's RP is off: every CNP counted as ignored, no rate change. */
    EXPECT_EQ(t.a.counters.rp_cnp_ignored, expect);
    EXPECT_EQ(t.a.counters.rp_cnp_handled, 0u);
    EXPECT_FALSE(t.qa->cc_state().limited);
}

TEST(CcSim, OneCnpWithAlphaOneHalvesTheSendersRate) {
    cc::CcParams p;
    p.initial_alpha_value = 1024; /* alpha = 1: Rc·(1 − 1/2) */
    CcPair t(&p, &p);
    bool marked = false;
    t.fab.on_send = [&](std::vector<uint8_t> &f) {
        if (!marked && is_from(f, t.a) && is_data(opcode(f))) {
            mark_ce(f);
            marked = true;
        }
    };
    EXPECT_FALSE(t.qa->cc_state().limited);
    EXPECT_EQ(t.qa->cc_state().rate_bps, k10G);
    t.write(1, 4096);
    ASSERT_TRUE(t.run_until_completions(1));
    EXPECT_EQ(t.b.counters.np_cnp_sent, 1u);
    EXPECT_EQ(t.a.counters.rp_cnp_handled, 1u);
    EXPECT_EQ(t.a.counters.rp_rate_cuts, 1u);
    const rc::CcState s = t.qa->cc_state();
    EXPECT_TRUE(s.enabled);
    EXPECT_TRUE(s.limited);
    EXPECT_EQ(s.rate_bps, k10G / 2);
    EXPECT_EQ(s.target_bps, k10G);
    EXPECT_EQ(s.pacer_rate_bps, k10G / 2);
    EXPECT_EQ(s.stage, cc::RpStage::fast_recovery);
    /* alpha = (1 − g)·1 + g = 1 after the cut */
    EXPECT_DOUBLE_EQ(s.alpha, 1.0);
    /* The responder's QP saw no CNP: still at line rate, unpaced. */
    EXPECT_FALSE(t.qb->cc_state().limited);
    EXPECT_EQ(t.qb->cc_state().pacer_rate_bps, 0u);
    /* Time passes: the timer stages raise the rate back towards the target. */
    t.fab.run_until([] { return false; }, t.fab.now + 2'000'000);
    EXPECT_GT(t.a.counters.rp_rate_increases, 0u);
    EXPECT_GT(t.qa->cc_state().rate_bps, k10G / 2);
}

/* The pacer holds a QP at its rate: bytes on the wire (frame + 24 B of Ethernet overhead)
 * over virtual time, measured after the first CNP set the rate, within 2%. */
TEST(CcSim, PacerHoldsTheMeasuredRateWithinTwoPercent) {
    for (uint64_t rate :
         {uint64_t{100'000'000}, uint64_t{1'000'000'000}, k10G, uint64_t{40'000'000'000}}) {
        const cc::CcParams p = fixed_rate(rate);
        CcPair t(&p, &p, {}, {}, 100'000'000'000ull);
        bool marked = false;
        std::vector<std::pair<Time, uint32_t>> sent; /* after the rate took hold */
        t.fab.on_send = [&](std::vector<uint8_t> &f) {
            if (!is_from(f, t.a) || !is_data(opcode(f)))
                return;
            if (!marked) {
                mark_ce(f);
                marked = true;
            }
            if (t.qa->cc_state().limited)
                sent.emplace_back(t.fab.now, static_cast<uint32_t>(f.size() + 24));
        };
        /* Enough to measure over 30 ms of virtual time, at most 8 MB (1.7 ms at 40G). */
        const uint64_t total = std::min<uint64_t>(8u << 20, rate / 8 / 100 * 3);
        const uint32_t msg = 64 << 10;
        for (uint64_t off = 0, id = 1; off < total; off += msg, ++id)
            t.write(id, static_cast<uint32_t>(std::min<uint64_t>(msg, total - off)), off);
        const size_t n = (total + msg - 1) / msg;
        ASSERT_TRUE(t.run_until_completions(n, 10'000'000'000ull)) << rate;
        ASSERT_GT(sent.size(), 100u) << rate;
        /* Skip the first bucket's burst: measure from the 10th frame to the last one. */
        const size_t from = 10;
        uint64_t bytes = 0;
        for (size_t i = from; i + 1 < sent.size(); ++i)
            bytes += sent[i].second;
        const double secs = static_cast<double>(sent.back().first - sent[from].first) * 1e-9;
        const double measured = static_cast<double>(bytes) * 8 / secs;
        const double err = measured / static_cast<double>(rate) - 1;
        std::printf("pacer at %.1f Gb/s: measured %.4f Gb/s (%+.3f%%) over %.3f ms, %zu frames\n",
                    static_cast<double>(rate) * 1e-9, measured * 1e-9, err * 100, secs * 1e3,
                    sent.size());
        EXPECT_LT(std::fabs(err), 0.02) << rate;
        EXPECT_GT(t.a.counters.paced_defers, 0u);
        /* No spinning: a held frame is tried again only when its timer fires, so at most
         * one defer per frame sent (has_tx_work() is false while the pacer holds). */
        EXPECT_LE(t.a.counters.paced_defers, sent.size() + 16) << rate;
        EXPECT_EQ(t.qa->cc_state().pacer_rate_bps, rate);
        EXPECT_EQ(t.a.counters.retransmitted_packets, 0u);
    }
}

TEST(CcSim, DcqcnOffPerQpIgnoresCnpsAndSendsAtLineRate) {
    for (int variant = 0; variant < 2; ++variant) {
        cc::CcParams p;
        p.initial_alpha_value = 1024;
        CcPair t(&p, &p);
        if (variant == 0) {
            t.qa->disable_cc();
        } else {
            cc::CcParams off = p;
            off.rp_enabled = false;
            ASSERT_TRUE(t.qa->set_cc_params(off, t.fab.now));
        }
        t.fab.on_send = [&](std::vector<uint8_t> &f) {
            if (is_from(f, t.a) && is_data(opcode(f)))
                mark_ce(f);
        };
        t.write(1, 200000);
        ASSERT_TRUE(t.run_until_completions(1));
        EXPECT_GT(t.b.counters.np_cnp_sent, 0u) << variant;
        EXPECT_EQ(t.a.counters.rp_cnp_ignored, t.b.counters.np_cnp_sent) << variant;
        EXPECT_EQ(t.a.counters.rp_cnp_handled, 0u);
        EXPECT_EQ(t.a.counters.paced_defers, 0u);
        const rc::CcState s = t.qa->cc_state();
        EXPECT_EQ(s.enabled, variant == 1);
        EXPECT_FALSE(s.limited);
        EXPECT_EQ(s.pacer_rate_bps, 0u);
    }
}

TEST(CcSim, SetCcParamsRefusesBadValuesAndRpgMaxRateCapsAtOnce) {
    CcPair t(nullptr, nullptr);
    cc::CcParams bad;
    bad.rpg_min_dec_fac = 0;
    Status s = t.qa->set_cc_params(bad, 1);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("rpg_min_dec_fac"), std::string::npos) << s.message();
    EXPECT_FALSE(t.qa->cc_state().enabled) << "a refused change changes nothing";
    bad = {};
    bad.rpg_min_rate_bps = 2 * k10G; /* above the port's line rate */
    s = t.qa->set_cc_params(bad, 1);
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("line rate"), std::string::npos) << s.message();
    ASSERT_TRUE(t.qa->set_cc_params(cc::CcParams{}, 1));
    EXPECT_TRUE(t.qa->cc_state().enabled);
    EXPECT_EQ(t.qa->cc_state().max_rate_bps, k10G);
    EXPECT_EQ(t.qa->cc_state().pacer_rate_bps, 0u) << "at line rate: unpaced";
    /* rpg_max_rate under the line rate caps the QP before any CNP: paced at once. */
    cc::CcParams capped;
    capped.rpg_max_rate_bps = 2'000'000'000;
    ASSERT_TRUE(t.qa->set_cc_params(capped, 1));
    EXPECT_FALSE(t.qa->cc_state().limited);
    EXPECT_EQ(t.qa->cc_state().rate_bps, 2'000'000'000u);
    EXPECT_EQ(t.qa->cc_state().pacer_rate_bps, 2'000'000'000u);
    std::vector<std::pair<Time, uint32_t>> sent;
    t.fab.on_send = [&](std::vector<uint8_t> &f) {
        if (is_from(f, t.a) && is_data(opcode(f)))
            sent.emplace_back(t.fab.now, static_cast<uint32_t>(f.size() + 24));
    };
    t.write(1, 1 << 20);
    /* Held by the pacer: no TX work (the driver must not spin on it) and a deadline at
     * the frame's departure, one frame time (~4.4 us at 2 Gb/s) away at most. */
    ASSERT_TRUE(
        t.fab.run_until([&] { return t.a.counters.paced_defers > 0; }, t.fab.now + 1'000'000));
    EXPECT_TRUE(t.qa->pacer_holding());
    EXPECT_FALSE(t.qa->has_tx_work());
    EXPECT_GT(t.qa->next_deadline(), t.fab.now);
    EXPECT_LE(t.qa->next_deadline(), t.fab.now + 4'600);
    ASSERT_TRUE(t.run_until_completions(1));
    uint64_t bytes = 0;
    for (size_t i = 10; i + 1 < sent.size(); ++i)
        bytes += sent[i].second;
    const double secs = static_cast<double>(sent.back().first - sent[10].first) * 1e-9;
    EXPECT_NEAR(static_cast<double>(bytes) * 8 / secs, 2e9, 0.02 * 2e9);
}

/* A rate-limited QP still recovers a tail loss through its retransmission timer. */
TEST(CcSim, RateLimitedQpStillRetransmitsOnTimeout) {
    const cc::CcParams p = fixed_rate(1'000'000'000);
    Faults f;
    QpAttr attr;
    attr.timeout = 8; /* ~1 ms */
    CcPair t(&p, &p, f, attr);
    bool marked = false;
    t.fab.on_send = [&](std::vector<uint8_t> &fr) {
        if (!marked && is_from(fr, t.a) && is_data(opcode(fr))) {
            mark_ce(fr);
            marked = true;
        }
    };
    t.write(1, 1000); /* its CE mark brings the rate down to 1 Gb/s */
    ASSERT_TRUE(t.run_until_completions(1));
    ASSERT_TRUE(t.qa->cc_state().limited);
    /* Lose everything (data and ACKs) from 200 us into the paced message for 3 ms: its
     * tail, so only the retransmission timer can recover it. */
    t.fab.faults.blackout_from = t.fab.now + 200'000;
    t.fab.faults.blackout_to = t.fab.now + 3'200'000;
    t.write(2, 100000); /* 0.8 ms at 1 Gb/s */
    ASSERT_TRUE(t.run_until_completions(2, 100'000'000));
    Wc wc;
    ASSERT_TRUE(t.scq_a.pop(wc));
    ASSERT_TRUE(t.scq_a.pop(wc));
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_GE(t.a.counters.local_ack_timeout_err, 1u);
    EXPECT_GT(t.a.counters.retransmitted_packets, 0u);
    EXPECT_TRUE(t.qa->cc_state().limited);
    EXPECT_EQ(0, std::memcmp(t.buf_a.data(), t.buf_b.data(), 100000));
}

/* READ responses are data too: paced at the responder's rate, marked ECT(0). */
TEST(CcSim, ReadResponsesArePacedAtTheRespondersRate) {
    const cc::CcParams p = fixed_rate(1'000'000'000);
    CcPair t(&p, &p, {}, {}, 100'000'000'000ull);
    /* The first READ response from B arrives CE-marked: A sends a CNP to B, whose rate
     * then paces the rest of the responses. */
    bool marked = false;
    std::vector<std::pair<Time, uint32_t>> resp;
    t.fab.on_send = [&](std::vector<uint8_t> &f) {
        const uint8_t op = opcode(f);
        if (!is_from(f, t.b) || op < 0x0D || op > 0x10)
            return;
        EXPECT_EQ(f[kTos] & 3, 2);
        if (!marked) {
            mark_ce(f);
            marked = true;
        } else if (t.qb->cc_state().limited) {
            resp.emplace_back(t.fab.now, static_cast<uint32_t>(f.size() + 24));
        }
    };
    SendWr wr;
    wr.opcode = WrOpcode::RdmaRead;
    wr.send_flags = kSendSignaled;
    wr.num_sge = 1;
    wr.remote_addr = t.mr_b.addr;
    wr.rkey = t.mr_b.key;
    for (uint32_t i = 1; i <= 2; ++i) { /* a small READ takes the CE mark, then 1 MB */
        wr.wr_id = i;
        wr.sg_list[0] = {t.mr_a.addr, i == 1 ? 4096u : 1u << 20, t.mr_a.key};
        ASSERT_TRUE(t.qa->post_send(wr));
        ASSERT_TRUE(t.run_until_completions(i, 1'000'000'000));
    }
    EXPECT_EQ(t.a.counters.np_cnp_sent, 1u);
    EXPECT_EQ(t.b.counters.rp_cnp_handled, 1u);
    ASSERT_GT(resp.size(), 100u);
    uint64_t bytes = 0;
    for (size_t i = 10; i + 1 < resp.size(); ++i)
        bytes += resp[i].second;
    const double measured = static_cast<double>(bytes) * 8 /
                            (static_cast<double>(resp.back().first - resp[10].first) * 1e-9);
    EXPECT_NEAR(measured, 1e9, 0.02e9);
}

/* A CNP is obeyed only from the QP's peer and in its partition: one from another source
 * address (anyone on the network who guesses a QPN) or with a P_Key the QP does not
 * accept is dropped and counted before it reaches the reaction point, so it cannot
 * throttle the QP. The same CNP from the peer then cuts the rate (the frames are right). */
TEST(CcSim, CnpFromAnotherSourceOrPartitionLeavesTheRateAlone) {
    cc::CcParams p;
    CcPair t(&p, &p);
    const auto cnp = [&](uint32_t src_ip, uint16_t pkey) {
        wire::FrameSpec s{};
        std::memcpy(s.eth.dst, t.a.mac, 6);
        std::memcpy(s.eth.src, t.b.mac, 6);
        wire::gid_from_ipv4(src_ip, s.src_gid);
        wire::gid_from_ipv4(kIpA, s.dst_gid);
        s.ttl = 64;
        s.tos = 48 << 2;
        s.udp_sport = 0xC000;
        s.bth.opcode = wire::kCnp;
        s.bth.becn = true;
        s.bth.pkey = pkey;
        s.bth.dest_qp = t.qa->qpn();
        std::vector<uint8_t> f(wire::frame_len(s));
        f.resize(wire::build_frame(s, f.data(), f.size()));
        EXPECT_FALSE(f.empty());
        t.fab.send(std::move(f));
        t.fab.run_until([] { return false; }, t.fab.now + 100'000);
    };
    ASSERT_FALSE(t.qa->cc_state().limited);
    const uint64_t line = t.qa->cc_state().rate_bps;

    cnp(0x0A001163, 0xFFFF); /* 10.0.17.99: on the network, not the peer */
    EXPECT_EQ(t.a.counters.rx_drop_src_addr, 1u);
    EXPECT_EQ(t.a.counters.rp_cnp_handled, 0u);
    EXPECT_FALSE(t.qa->cc_state().limited);
    EXPECT_EQ(t.qa->cc_state().rate_bps, line);

    cnp(kIpB, 0x8123); /* the peer's address, another partition */
    EXPECT_EQ(t.a.counters.rx_pkey_violation, 1u);
    EXPECT_EQ(t.a.counters.rp_cnp_handled, 0u);
    EXPECT_FALSE(t.qa->cc_state().limited);
    EXPECT_EQ(t.qa->cc_state().rate_bps, line);

    cnp(kIpB, 0xFFFF); /* the peer's CNP: obeyed */
    EXPECT_EQ(t.a.counters.rp_cnp_handled, 1u);
    EXPECT_TRUE(t.qa->cc_state().limited);
    EXPECT_LT(t.qa->cc_state().rate_bps, line);
}

/* droce's CNP against the ConnectX-4 Lx CNP of the vectors: byte for byte except the
 * addresses (MACs, IPs, UDP source port: see rc_cc.cpp), the IPv4 ID and the checksum
 * that covers them, the QPN and the ICRC. */
TEST(CcSim, CnpMatchesTheConnectX4LxCapture) {
    const std::string path =
        std::string(DROCE_VECTORS_DIR) + "/synthetic/good_published_cx4lx_cnp.pcap";
    char err[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline(path.c_str(), err);
    ASSERT_NE(pc, nullptr) << err;
    pcap_pkthdr *h;
    const u_char *d;
    ASSERT_EQ(pcap_next_ex(pc, &h, &d), 1);
    const std::vector<uint8_t> cx(d, d + h->caplen);
    pcap_close(pc);
    wire::ParsedPacket pp;
    ASSERT_EQ(wire::parse_frame(cx.data(), cx.size(), pp, true), wire::ParseResult::Ok);
    ASSERT_EQ(pp.op->transport, wire::Transport::Cnp);

    cc::CcParams p;
    CcPair t(&p, &p);
    std::vector<uint8_t> ours;
    bool marked = false;
    t.fab.on_send = [&](std::vector<uint8_t> &f) {
        if (!marked && is_from(f, t.a) && is_data(opcode(f))) {
            mark_ce(f);
            marked = true;
        }
        if (is_from(f, t.b) && opcode(f) == wire::kCnp)
            ours = f;
    };
    t.write(1, 1000);
    ASSERT_TRUE(t.run_until_completions(1));
    ASSERT_EQ(ours.size(), cx.size());
    wire::ParsedPacket op;
    ASSERT_EQ(wire::parse_frame(ours.data(), ours.size(), op, true), wire::ParseResult::Ok)
        << "droce's CNP must carry a valid ICRC";
    EXPECT_EQ(op.bth.dest_qp, 0x11u) << "DestQP = the peer's QP";
    EXPECT_TRUE(op.bth.becn);
    EXPECT_EQ(op.dscp, 48);
    auto skip = [](size_t i) {
        return i < 12                                   /* MACs */
               || i == 18 || i == 19                    /* IPv4 ID */
               || i == 24 || i == 25                    /* IPv4 checksum (over the above) */
               || (i >= 26 && i < 34)                   /* IPs */
               || i == 34 || i == 35                    /* UDP source port */
               || (i >= kBthOff + 5 && i < kBthOff + 8) /* DestQP */
               || i >= 70;                              /* ICRC */
    };
    for (size_t i = 0; i < cx.size(); ++i) {
        if (!skip(i)) {
            EXPECT_EQ(ours[i], cx[i]) << "byte " << i;
        }
    }
}

/* CNP DSCP and 802.1p priority are the device's (here 26 and 3, not the defaults) and the
 * VLAN of the QP's path is kept. */
TEST(CcSim, CnpTakesConfiguredDscpAndPriorityOnAVlanPath) {
    cc::CcParams p;
    p.cnp_dscp = 26;
    p.cnp_802p_prio = 3;
    CcPair t(&p, &p);
    /* Re-path B's QP onto VLAN 100 (PCP 0 for its data): RTS -> SQD -> SQD with AV -> RTS. */
    QpAttr a = t.qb->attr();
    a.qp_state = QpState::Sqd;
    ASSERT_TRUE(t.qb->modify(a, kQpState));
    rc::Path path = t.qb->path();
    path.eth.has_vlan = true;
    path.eth.vlan_tci = 100;
    ASSERT_TRUE(t.qb->modify(a, kQpState | kQpAv, &path));
    a.qp_state = QpState::Rts;
    ASSERT_TRUE(t.qb->modify(a, kQpState));
    std::vector<uint8_t> cnp;
    bool marked = false;
    t.fab.on_send = [&](std::vector<uint8_t> &f) {
        if (!marked && is_from(f, t.a) && is_data(opcode(f))) {
            mark_ce(f);
            marked = true;
        }
        if (std::memcmp(f.data() + 6, t.b.mac, 6) == 0 && f.size() > kBthOff + 4 &&
            f[kBthOff + 4] == wire::kCnp)
            cnp = f;
    };
    t.write(1, 1000);
    ASSERT_TRUE(t.run_until_completions(1));
    ASSERT_FALSE(cnp.empty());
    EXPECT_EQ(cnp[12], 0x81); /* 802.1Q */
    EXPECT_EQ(cnp[13], 0x00);
    const uint16_t tci = static_cast<uint16_t>(cnp[14] << 8 | cnp[15]);
    EXPECT_EQ(tci >> 13, 3) << "802.1p priority";
    EXPECT_EQ(tci & 0xFFF, 100) << "VLAN kept";
    EXPECT_EQ(cnp[kTos + 4], (26 << 2) | 2) << "DSCP 26, ECT(0)";
    wire::ParsedPacket pp;
    ASSERT_EQ(wire::parse_frame(cnp.data(), cnp.size(), pp, true), wire::ParseResult::Ok);
    EXPECT_TRUE(pp.bth.becn);
    EXPECT_EQ(pp.bth.psn, 0u);
    EXPECT_EQ(t.a.counters.rp_cnp_handled, 1u);
}

/* A QP created capped under the line rate is paced from its first packet, and a path MTU
 * set later (4096, above the bucket sized at creation for 1024) does not stall it. */
TEST(CcSim, CappedAtCreationAndLargerMtuLaterStillPaced) {
    cc::CcParams p;
    p.rpg_max_rate_bps = 2'000'000'000;
    CcPair t(&p, &p, {}, {}, k10G, Mtu::Mtu4096);
    EXPECT_EQ(t.qa->cc_state().pacer_rate_bps, 2'000'000'000u);
    std::vector<std::pair<Time, uint32_t>> sent;
    t.fab.on_send = [&](std::vector<uint8_t> &f) {
        if (is_from(f, t.a) && is_data(opcode(f)))
            sent.emplace_back(t.fab.now, static_cast<uint32_t>(f.size() + 24));
    };
    t.write(1, 4 << 20);
    ASSERT_TRUE(t.run_until_completions(1, 100'000'000));
    ASSERT_GT(sent.size(), 1000u);
    EXPECT_GT(sent[0].second, 4096u);
    uint64_t bytes = 0;
    for (size_t i = 10; i + 1 < sent.size(); ++i)
        bytes += sent[i].second;
    const double secs = static_cast<double>(sent.back().first - sent[10].first) * 1e-9;
    EXPECT_NEAR(static_cast<double>(bytes) * 8 / secs, 2e9, 0.02 * 2e9);
}
