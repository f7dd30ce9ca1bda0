/* SPDX-License-Identifier: BSD-3-Clause */
/* Zero-copy vs copy, in process, embedded mode, two devices on a net_ring pair (RoCE MTU
 * 4096). One engine per mode, side by side in one run:
 *  - BM_Write64K/<mode>: 64 KiB RDMA WRITEs, 8 in flight; throughput (bytes_per_second)
 *    and bytes copied per byte delivered on TX (tx_copy_per_byte) and on RX
 *    (rx_copy_per_byte);
 *  - BM_WriteSize/<mode>/<bytes>: single-packet WRITEs, 32 in flight: where zero-copy
 *    starts to pay (the threshold below which the engine copies anyway).
 * mode 0 = copy (zero_copy off), 1 = zero-copy with the default threshold, 2 = zero-copy
 * for every payload. Repetitions with min/median/max. */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_engine_setup.h"
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "engine.h"

using namespace droce;

namespace {

constexpr uint32_t kBuf = 4 << 20;

struct Pair {
    std::unique_ptr<engine::Runtime> rt;
    engine::Dev *a = nullptr, *b = nullptr;
    std::unique_ptr<engine::CqCtx> acq, bcq;
    engine::QpCtx *qa = nullptr, *qb = nullptr;
    std::vector<uint8_t> bufa, bufb;
    uint32_t keya = 0, keyb = 0;
};
Pair *g_pairs[3] = {};
const char *g_argv0 = "bench_zero_copy";

using bench::connect;
using bench::make_cq;
using bench::path;

Pair *pair(int mode) {
    if (g_pairs[mode])
        return g_pairs[mode];
    static const char *eal[] = {g_argv0,       "--no-huge",   "-m",   "1024",
                                "--no-pci",    "--no-shconf", "-l",   "0",
                                "--log-level", "*:warning",   nullptr};
    EngineOptions o;
    o.embedded = true;
    o.mbufs = 4095;
    o.zero_copy = mode != 0;
    o.zero_copy_min_bytes = mode == 2 ? 1 : 0;
    int consumed = 0;
    auto rt = engine::Runtime::create(10, const_cast<char **>(eal), &consumed, o);
    if (!rt) {
        std::fprintf(stderr, "engine: %s\n", rt.status().message().c_str());
        return nullptr;
    }
    auto *g = new Pair;
    g->rt = std::move(*rt);
    auto ports = g->rt->create_ring_pair();
    if (!ports)
        return nullptr;
    DeviceConfig ca;
    ca.port = ports->first;
    ca.ipv4_cidr = "10.77.0.1/24";
    ca.mac = "02:00:00:00:01:01";
    ca.mtu = 4200;
    DeviceConfig cb = ca;
    cb.port = ports->second;
    cb.ipv4_cidr = "10.77.0.2/24";
    cb.mac = "02:00:00:00:01:02";
    auto da = g->rt->open_device(ca);
    auto db = g->rt->open_device(cb);
    if (!da || !db)
        return nullptr;
    g->a = *da;
    g->b = *db;
    g->acq = make_cq();
    g->bcq = make_cq();
    g->bufa.assign(kBuf, 0x5a);
    g->bufb.assign(kBuf, 0);
    /* A WRITEs into B: only B's region and QP take remote writes. */
    g->keya = g->a->reg_mr(1, g->bufa.data(), kBuf, kAccessLocalWrite)->key;
    g->keyb = g->b->reg_mr(1, g->bufb.data(), kBuf, kAccessLocalWrite | kAccessRemoteWrite)->key;
    QpInitAttr ia;
    ia.cap.max_send_wr = 256;
    ia.cap.max_recv_wr = 16;
    auto na = g->a->create_qp(1, ia, g->acq.get(), g->acq.get(), nullptr, nullptr, &g->qa);
    auto nb = g->b->create_qp(1, ia, g->bcq.get(), g->bcq.get(), nullptr, nullptr, &g->qb);
    if (!na || !nb)
        return nullptr;
    const net::Mac ma = g->a->iface().mac, mb = g->b->iface().mac;
    if (!connect(*g->qa->qp, path(*g->a, mb, g->b->iface().ip, *na), *nb, 0x100, 0x200, 0) ||
        !connect(*g->qb->qp, path(*g->b, ma, g->a->iface().ip, *nb), *na, 0x200, 0x100,
                 kAccessRemoteWrite))
        return nullptr;
    g_pairs[mode] = g;
    return g;
}

uint64_t counter(const engine::Dev &d, const char *name) {
    for (const auto &[k, v] : d.counters())
        if (k == name)
            return v;
    return 0;
}

/* WRITEs of len bytes, depth in flight, one benchmark iteration per completed WRITE. */
void run_writes(benchmark::State &state, int mode, uint32_t len, uint32_t depth) {
    Pair *g = pair(mode);
    if (g == nullptr) {
        state.SkipWithError("engine setup failed");
        return;
    }
    const uint64_t tx0 = counter(*g->a, "tx_bytes_copied"),
                   zc0 = counter(*g->a, "tx_bytes_zero_copy"),
                   rx0 = counter(*g->b, "rx_bytes_copied");
    SendWr w;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.num_sge = 1;
    w.rkey = g->keyb;
    uint32_t posted = 0, done = 0, slot = 0;
    const uint32_t slots = kBuf / len;
    uint64_t delivered = 0;
    for (auto _ : state) {
        for (;;) {
            while (posted - done < depth) {
                const uint64_t off = uint64_t{slot} * len;
                slot = slot + 1 == slots ? 0 : slot + 1;
                w.wr_id = posted;
                w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(g->bufa.data() + off), len, g->keya};
                w.remote_addr = reinterpret_cast<uint64_t>(g->bufb.data() + off);
                if (!g->qa->qp->post_send(w).is_ok())
                    break;
                ++posted;
            }
            g->a->touch(*g->qa); /* the doorbell: posted straight into the QP */
            g->rt->poll_once();
            Wc wc[32];
            const int k = g->acq->poll(wc, 32);
            for (int i = 0; i < k; ++i)
                if (wc[i].status != WcStatus::Success) {
                    state.SkipWithError("WRITE failed");
                    return;
                }
            g->bcq->poll(wc, 32);
            done += static_cast<uint32_t>(k);
            if (k > 0) {
                delivered += uint64_t{len} * static_cast<uint32_t>(k);
                break;
            }
        }
    }
    /* Drain what is still in flight so the next benchmark starts clean. */
    while (done < posted) {
        g->rt->poll_once();
        Wc wc[32];
        done += static_cast<uint32_t>(g->acq->poll(wc, 32));
    }
    const uint64_t all = uint64_t{len} * posted; /* bytes sent, in flight ones included */
    state.SetBytesProcessed(static_cast<int64_t>(delivered));
    state.counters["tx_copy_per_byte"] =
        static_cast<double>(counter(*g->a, "tx_bytes_copied") - tx0) / static_cast<double>(all);
    state.counters["tx_zc_per_byte"] =
        static_cast<double>(counter(*g->a, "tx_bytes_zero_copy") - zc0) / static_cast<double>(all);
    state.counters["rx_copy_per_byte"] =
        static_cast<double>(counter(*g->b, "rx_bytes_copied") - rx0) / static_cast<double>(all);
}

void BM_Write64K(benchmark::State &state) {
    run_writes(state, static_cast<int>(state.range(0)), 64 * 1024, 8);
}

void BM_WriteSize(benchmark::State &state) {
    run_writes(state, static_cast<int>(state.range(0)), static_cast<uint32_t>(state.range(1)), 32);
}

double stat_min(const std::vector<double> &v) { return *std::min_element(v.begin(), v.end()); }
double stat_max(const std::vector<double> &v) { return *std::max_element(v.begin(), v.end()); }

} // namespace

BENCHMARK(BM_Write64K)
    ->ArgName("mode")
    ->Arg(0)
    ->Arg(1)
    ->Repetitions(5)
    ->ComputeStatistics("min", stat_min)
    ->ComputeStatistics("max", stat_max)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WriteSize)
    ->ArgNames({"mode", "bytes"})
    ->ArgsProduct({{0, 2}, {64, 256, 512, 1024, 2048, 4096}})
    ->Repetitions(5)
    ->ComputeStatistics("min", stat_min)
    ->ComputeStatistics("max", stat_max)
    ->Unit(benchmark::kMicrosecond);

int main(int argc, char **argv) {
    g_argv0 = argv[0];
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    /* Runtimes are left to process exit (EAL not cleaned up, as in bench_engine). */
    return 0;
}
