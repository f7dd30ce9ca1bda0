/* SPDX-License-Identifier: BSD-3-Clause */
/* Resource exhaustion from the wire (issue 15): a flood of garbage, bad-ICRC, unknown-QPN,
 * random-transport and truncated frames at the legitimate packet rate into a device whose
 * QPs carry traffic. Every legitimate WR completes with the right bytes, every flood frame
 * is counted by exactly one drop counter, and no mbuf is lost (bench/flood.h has the
 * harness; bench/bench_flood measures the curve). */
#include <gtest/gtest.h>

#include "flood.h"

using namespace droce;
using namespace droce::flood;

namespace {

std::unique_ptr<Engine> make_engine() {
    static const char *args[] = {
        "test_flood",     "--no-huge", "-m", "512",         "--no-pci",  "--no-shconf",
        "--no-telemetry", "-l",        "0",  "--log-level", "*:warning", "--",
        nullptr};
    EngineOptions o;
    o.embedded = true;
    o.mbufs = 4095;
    o.log_level = "warn";
    int consumed = 0;
    auto e = Engine::create(12, const_cast<char **>(args), &consumed, o);
    EXPECT_TRUE(e) << e.status().message();
    return e ? std::move(*e) : nullptr;
}

class Flood : public ::testing::Test {
  protected:
    void SetUp() override {
        auto e = make_engine();
        ASSERT_TRUE(e);
        const std::string err = bed.open(std::move(e), 8);
        ASSERT_TRUE(err.empty()) << err;
        lg.engine = bed.engine.get();
        lg.a = &bed.a;
        lg.b = &bed.b;
        lg.depth = 16;
        lg.init();
        ASSERT_TRUE(fl.open("test_flood_pool", 2047));
        aim(fl, bed, lg);
    }
    void TearDown() override {
        bed.close();
        fl.close();
    }
    Bed bed;
    Legit lg;
    Flooder fl;
};

TEST_F(Flood, AtLegitRateEveryWrCompletesEveryFrameCountedNoLeak) {
    fl.kinds = {Kind::Garbage, Kind::RoceNoise, Kind::BadIcrc, Kind::UnknownQpn, Kind::Truncated};
    const RunResult base = run(bed, lg, fl, 0, 0.05, 0.3);
    ASSERT_GT(base.wr_per_s, 0);
    EXPECT_EQ(base.injected, 0u);
    EXPECT_EQ(base.flood_counted, 0u) << "legitimate traffic alone drops nothing";

    const RunResult r = run(bed, lg, fl, base.wr_per_s, 0.05, 0.5);
    EXPECT_FALSE(r.stalled) << r.error;
    EXPECT_EQ(r.wr_errors, 0u) << r.error;
    EXPECT_EQ(r.data_errors, 0u);
    EXPECT_GT(r.completed, 1000u);
    /* The flood really ran at about the legitimate rate. */
    EXPECT_GT(r.injected, r.completed / 3);
    for (Kind k : fl.kinds)
        EXPECT_GT(fl.per_kind[static_cast<size_t>(k)], 0u) << kind_name(k);
    EXPECT_EQ(r.flood_counted, r.injected) << "every flood frame is counted as a drop";
    EXPECT_GT(r.deltas_b.count("rx_drop_bad_icrc") ? r.deltas_b.at("rx_drop_bad_icrc") : 0, 0u);
    EXPECT_GT(r.deltas_b.count("rx_drop_unknown_qpn") ? r.deltas_b.at("rx_drop_unknown_qpn") : 0,
              0u);
    /* Nothing of the flood reaches a QP: no NAK, no sequence error on either side. */
    for (const char *k : {"out_of_sequence", "duplicate_request", "packet_seq_err",
                          "retransmitted_packets", "tx_no_mbuf", "ack_dropped"}) {
        EXPECT_EQ(r.deltas_b.count(k), 0u) << "B " << k;
        EXPECT_EQ(r.deltas_a.count(k), 0u) << "A " << k;
    }
    EXPECT_EQ(r.mbuf_delta, 0) << "engine mbufs leaked";
    EXPECT_EQ(r.flood_pool_missing, 0) << "flood mbufs not freed";
    /* No bar on throughput here: speed is measured by bench/bench_flood (the curve in
     * bench/README.md), not asserted by a timed test on a shared machine. */
}

} // namespace
