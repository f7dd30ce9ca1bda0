/* SPDX-License-Identifier: BSD-3-Clause */
/* Goodput of 64 KiB RDMA WRITEs under random loss, in the deterministic simulator: one
 * RC QP pair over a 25 Gb/s link with 2 us one-way delay, 32 WRITEs kept outstanding,
 * path MTU 4096, local ACK timeout 4.2 ms (timeout 10), go-back-N recovery. Reported in
 * virtual time (what the protocol achieves), not wall time (what simulating costs):
 *   goodput_Gbps, msgs_per_s (virtual), retransmit_ratio (retransmitted / data packets),
 *   timeouts, seq_naks. */
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "sim_fabric.h"

using namespace droce;
using namespace droce::sim;

namespace {

void BM_Write64KiBGoodput(benchmark::State &state) {
    const double loss = static_cast<double>(state.range(0)) / 10000.0;
    constexpr uint32_t kMsg = 64 * 1024;
    constexpr int kMsgs = 3000;
    constexpr int kOutstanding = 32;
    double goodput = 0, msgs_per_s = 0, retx_ratio = 0;
    uint64_t timeouts = 0, naks = 0;
    for (auto _ : state) {
        Faults f;
        f.loss = loss;
        f.delay_ns = 2000;
        f.link_gbps = 25;
        Fabric fab(42, f);
        Endpoint a(fab, 0x0A000001, 1), b(fab, 0x0A000002, 2);
        SimCq scq_a, rcq_a, scq_b, rcq_b;
        QpCap cap;
        cap.max_send_wr = 256;
        rc::Qp &qa = a.create_qp(0x11, &scq_a, &rcq_a, cap);
        rc::Qp &qb = b.create_qp(0x22, &scq_b, &rcq_b, cap);
        QpAttr attr;
        attr.timeout = 10;
        attr.retry_cnt = 7;
        a.connect(qa, b, qb, 1, 2, attr, Mtu::Mtu4096);
        attr.qp_access_flags = kAccessRemoteWrite; /* A only WRITEs into B */
        b.connect(qb, a, qa, 2, 1, attr, Mtu::Mtu4096);
        std::vector<uint8_t> src(kMsg, 0x5A), dst(kMsg * 4, 0);
        auto mra = a.mrs.reg(1, src.data(), src.size(), kAccessLocalWrite).value();
        auto mrb =
            b.mrs.reg(1, dst.data(), dst.size(), kAccessLocalWrite | kAccessRemoteWrite).value();
        int posted = 0, done = 0;
        auto post = [&] {
            while (posted < kMsgs && posted - done < kOutstanding) {
                SendWr w;
                w.wr_id = static_cast<uint64_t>(posted);
                w.opcode = WrOpcode::RdmaWrite;
                w.send_flags = kSendSignaled;
                w.num_sge = 1;
                w.sg_list[0] = {mra.addr, kMsg, mra.key};
                w.remote_addr = mrb.addr + (posted % 4) * kMsg;
                w.rkey = mrb.key;
                if (!qa.post_send(w))
                    break;
                ++posted;
            }
        };
        post();
        const bool ok = fab.run_until(
            [&] {
                Wc wc;
                while (scq_a.pop(wc)) {
                    if (wc.status != WcStatus::Success)
                        return true;
                    ++done;
                }
                post();
                return done == kMsgs;
            },
            600'000'000'000ull);
        if (!ok || done != kMsgs) {
            state.SkipWithError("transfer did not complete");
            return;
        }
        const double secs = static_cast<double>(fab.now) / 1e9;
        goodput = static_cast<double>(kMsgs) * kMsg * 8 / secs / 1e9;
        msgs_per_s = kMsgs / secs;
        const double data_pkts = static_cast<double>(kMsgs) * (kMsg / 4096);
        retx_ratio = static_cast<double>(a.counters.retransmitted_packets) / data_pkts;
        timeouts = a.counters.local_ack_timeout_err;
        naks = a.counters.packet_seq_err;
    }
    state.counters["goodput_Gbps"] = goodput;
    state.counters["msgs_per_s"] = msgs_per_s;
    state.counters["retransmit_ratio"] = retx_ratio;
    state.counters["timeouts"] = static_cast<double>(timeouts);
    state.counters["seq_naks"] = static_cast<double>(naks);
}

/* loss in units of 0.01%: 0, 0.1%, 1%, 5% */
BENCHMARK(BM_Write64KiBGoodput)
    ->ArgName("loss_bp")
    ->Arg(0)
    ->Arg(10)
    ->Arg(100)
    ->Arg(500)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
