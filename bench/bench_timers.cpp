/* SPDX-License-Identifier: BSD-3-Clause */
/* Timers for the engine at 64k QPs: droce::sched::TimerWheel vs DPDK's rte_timer.
 *
 * Every benchmark runs with kPending (65,536) other timers pending, the per-worker QP count
 * issue 8 targets. Timers are touched in a random order (a random QP gets the next ACK), so
 * both sides pay the cache misses 64k QP contexts cost. The wheel runs on virtual time (it
 * is sans-I/O); rte_timer reads the TSC itself, so its "due" timers are made due by waiting
 * (outside the timed region). Each benchmark reports ops_per_iter; ns per operation is
 * real_time / ops_per_iter (bench/README.md has the table). */
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_lcore.h>
#include <rte_timer.h>

#include "sched_timer_wheel.h"

using droce::sched::TimerNode;
using droce::sched::TimerWheel;

namespace {

constexpr size_t kPending = 65'536;
constexpr size_t kPool = 4096;    /* extra timers armed / cancelled by the benchmark */
constexpr size_t kDueBatch = 256; /* timers made due per expire() in BM_*ExpireDue */
/* Background deadlines: 1 ms - 10 s ahead, interleaved with the benchmarked ones (so
 * rte_timer's skiplist is searched, not just prepended to), or, where nothing may fire
 * while virtual time runs for hours (the expire benchmarks), moved kParkNs further. */
constexpr uint64_t kParkNs = 1'000'000'000'000'000ull; /* 10^6 s */
constexpr uint64_t kRtoNs = 67'108'864;                /* 4.096 us << 14: a typical RC RTO */

/* Random, reproducible inputs shared by both implementations. */
struct Inputs {
    std::vector<uint32_t> order;  /* random permutation of [0, kPending) */
    std::vector<uint64_t> far_ns; /* background deadlines (offsets): 1 ms .. 10 s */
    std::vector<uint64_t> rto_ns; /* RTO + jitter (offsets): 1 ms .. 100 ms */
    Inputs() : order(kPending), far_ns(kPending), rto_ns(kPending) {
        std::mt19937_64 rng(42);
        for (size_t i = 0; i < kPending; ++i) {
            order[i] = static_cast<uint32_t>(i);
            far_ns[i] = 1'000'000 + rng() % 10'000'000'000ull;
            rto_ns[i] = 1'000'000 + rng() % 99'000'000;
        }
        std::shuffle(order.begin(), order.end(), rng);
    }
};
const Inputs &inputs() {
    static const Inputs in;
    return in;
}

/* ---- TimerWheel ---- */

struct WheelSet {
    TimerWheel wheel{0, 1024};
    std::vector<TimerNode> bg{kPending};
    std::vector<TimerNode> pool{kPool};
    uint64_t now = 0;
    explicit WheelSet(uint64_t bg_base) {
        for (size_t i = 0; i < kPending; ++i)
            wheel.arm(bg[i], bg_base + inputs().far_ns[i]);
    }
};

void BM_WheelArm(benchmark::State &st) {
    WheelSet s(0);
    const auto &in = inputs();
    size_t i = 0;
    for (auto _ : st) {
        if (i == kPool) {
            st.PauseTiming();
            for (auto &n : s.pool)
                s.wheel.cancel(n);
            i = 0;
            st.ResumeTiming();
        }
        s.wheel.arm(s.pool[(i * 2654435761u) % kPool], s.now + in.rto_ns[in.order[i]]);
        ++i;
    }
    st.counters["ops_per_iter"] = 1;
}

void BM_WheelCancel(benchmark::State &st) {
    WheelSet s(0);
    const auto &in = inputs();
    size_t i = kPool;
    for (auto _ : st) {
        if (i == kPool) {
            st.PauseTiming();
            for (size_t k = 0; k < kPool; ++k)
                s.wheel.arm(s.pool[k], s.now + in.rto_ns[k]);
            i = 0;
            st.ResumeTiming();
        }
        /* i * odd mod 2^12 is a permutation: the pool in a fixed scrambled order. */
        s.wheel.cancel(s.pool[(i * 2654435761u) % kPool]);
        ++i;
    }
    st.counters["ops_per_iter"] = 1;
}

/* The RC case: every ACK pushes its QP's retransmit deadline to now + RTO. The 64k timers
 * are the QPs' own; time advances 100 ns per ACK. */
void BM_WheelRearm(benchmark::State &st) {
    TimerWheel wheel(0, 1024);
    std::vector<TimerNode> qp(kPending);
    const auto &in = inputs();
    for (size_t i = 0; i < kPending; ++i)
        wheel.arm(qp[i], kRtoNs + in.rto_ns[i] % 1'000'000);
    uint64_t now = 0;
    size_t i = 0;
    for (auto _ : st) {
        now += 100;
        wheel.arm(qp[in.order[i]], now + kRtoNs + in.rto_ns[i] % 1'000'000);
        if (++i == kPending)
            i = 0;
    }
    benchmark::DoNotOptimize(wheel.size());
    st.counters["ops_per_iter"] = 1;
}

void BM_WheelExpireDue(benchmark::State &st) {
    WheelSet s(kParkNs);
    const auto &in = inputs();
    const uint64_t spread = static_cast<uint64_t>(st.range(0));
    size_t fired = 0, k = 0;
    for (auto _ : st) {
        st.PauseTiming();
        /* Deadlines within `spread` ns: 10 us as for rte_timer, or up to 100 ms, where
         * firing includes cascading each timer down two levels (the wheel sorts lazily). */
        for (size_t j = 0; j < kDueBatch; ++j, k = (k + 1) % kPending)
            s.wheel.arm(s.pool[j], s.now + 1 + in.rto_ns[k] % spread);
        s.now += spread + 2 * s.wheel.tick_ns(); /* past every deadline's tick */
        st.ResumeTiming();
        fired += s.wheel.expire(s.now, [](TimerNode &) {});
    }
    if (fired != st.iterations() * kDueBatch)
        st.SkipWithError("wrong number of timers fired");
    st.counters["ops_per_iter"] = kDueBatch;
}

void BM_WheelExpireEmpty(benchmark::State &st) {
    WheelSet s(kParkNs);
    uint32_t fired = 0;
    for (auto _ : st) {
        s.now += 100; /* called every 100 ns, nothing due */
        fired += s.wheel.expire(s.now, [](TimerNode &) {});
    }
    if (fired != 0)
        st.SkipWithError("a background timer fired");
    st.counters["ops_per_iter"] = 1;
}

/* ---- rte_timer ---- */

void on_rte_timer(rte_timer *, void *arg) { ++*static_cast<size_t *>(arg); }

uint64_t ns_to_cycles(uint64_t ns) {
    return static_cast<uint64_t>(static_cast<double>(ns) * static_cast<double>(rte_get_timer_hz()) /
                                 1e9);
}

struct RteSet {
    std::vector<rte_timer> bg{kPending};
    std::vector<rte_timer> pool{kPool};
    std::vector<uint64_t> rto_cycles;
    size_t fired = 0;
    const unsigned lcore = rte_lcore_id();
    explicit RteSet(uint64_t bg_base) : rto_cycles(kPending) {
        for (auto &t : bg)
            rte_timer_init(&t);
        for (auto &t : pool)
            rte_timer_init(&t);
        for (size_t i = 0; i < kPending; ++i) {
            rto_cycles[i] = ns_to_cycles(inputs().rto_ns[i]);
            reset(bg[i], ns_to_cycles(bg_base + inputs().far_ns[i]));
        }
    }
    ~RteSet() {
        for (auto &t : bg)
            rte_timer_stop(&t);
        for (auto &t : pool)
            rte_timer_stop(&t);
    }
    RteSet(const RteSet &) = delete;
    RteSet &operator=(const RteSet &) = delete;
    void reset(rte_timer &t, uint64_t cycles) {
        rte_timer_reset(&t, cycles, SINGLE, lcore, on_rte_timer, &fired);
    }
};

void BM_RteTimerArm(benchmark::State &st) {
    RteSet s(0);
    const auto &in = inputs();
    size_t i = 0;
    for (auto _ : st) {
        if (i == kPool) {
            st.PauseTiming();
            for (auto &t : s.pool)
                rte_timer_stop(&t);
            i = 0;
            st.ResumeTiming();
        }
        s.reset(s.pool[(i * 2654435761u) % kPool], s.rto_cycles[in.order[i]]);
        ++i;
    }
    st.counters["ops_per_iter"] = 1;
}

void BM_RteTimerCancel(benchmark::State &st) {
    RteSet s(0);
    size_t i = kPool;
    for (auto _ : st) {
        if (i == kPool) {
            st.PauseTiming();
            for (size_t k = 0; k < kPool; ++k)
                s.reset(s.pool[k], s.rto_cycles[k]);
            i = 0;
            st.ResumeTiming();
        }
        rte_timer_stop(&s.pool[(i * 2654435761u) % kPool]);
        ++i;
    }
    st.counters["ops_per_iter"] = 1;
}

void BM_RteTimerRearm(benchmark::State &st) {
    std::vector<rte_timer> qp(kPending);
    const auto &in = inputs();
    const unsigned lcore = rte_lcore_id();
    size_t fired = 0;
    std::vector<uint64_t> rto(kPending);
    for (size_t i = 0; i < kPending; ++i) {
        rto[i] = ns_to_cycles(kRtoNs + in.rto_ns[i] % 1'000'000);
        rte_timer_init(&qp[i]);
        rte_timer_reset(&qp[i], rto[i], SINGLE, lcore, on_rte_timer, &fired);
    }
    size_t i = 0;
    for (auto _ : st) {
        rte_timer_reset(&qp[in.order[i]], rto[i], SINGLE, lcore, on_rte_timer, &fired);
        if (++i == kPending)
            i = 0;
    }
    for (auto &t : qp)
        rte_timer_stop(&t);
    st.counters["ops_per_iter"] = 1;
}

void BM_RteTimerExpireDue(benchmark::State &st) {
    RteSet s(kParkNs);
    const uint64_t spread = ns_to_cycles(static_cast<uint64_t>(st.range(0))); /* then wait */
    std::mt19937_64 rng(7);
    size_t expected = 0;
    for (auto _ : st) {
        st.PauseTiming();
        for (size_t j = 0; j < kDueBatch; ++j)
            s.reset(s.pool[j], rng() % spread);
        expected += kDueBatch;
        const uint64_t armed = rte_get_timer_cycles(); /* every deadline is before this + spread */
        while (rte_get_timer_cycles() <= armed + spread)
            rte_pause();
        st.ResumeTiming();
        rte_timer_manage();
    }
    if (s.fired != expected)
        st.SkipWithError("wrong number of timers fired");
    st.counters["ops_per_iter"] = kDueBatch;
}

void BM_RteTimerExpireEmpty(benchmark::State &st) {
    RteSet s(kParkNs);
    for (auto _ : st)
        rte_timer_manage();
    if (s.fired != 0)
        st.SkipWithError("a background timer fired");
    st.counters["ops_per_iter"] = 1;
}

BENCHMARK(BM_WheelArm);
BENCHMARK(BM_RteTimerArm);
BENCHMARK(BM_WheelCancel);
BENCHMARK(BM_RteTimerCancel);
BENCHMARK(BM_WheelRearm);
BENCHMARK(BM_RteTimerRearm);
BENCHMARK(BM_WheelExpireDue)->Arg(10'000)->Arg(100'000'000);
BENCHMARK(BM_RteTimerExpireDue)->Arg(10'000);
BENCHMARK(BM_WheelExpireEmpty);
BENCHMARK(BM_RteTimerExpireEmpty);

} // namespace

/* rte_timer needs the EAL (per-lcore lists); a minimal one: no hugepages, no devices. */
int main(int argc, char **argv) {
    std::vector<std::string> eal_args = {argv[0],       "--no-huge",     "-m", "256", "--no-pci",
                                         "--no-shconf", "--log-level=1", "-l", "0"};
    std::vector<char *> eal_argv;
    for (auto &a : eal_args)
        eal_argv.push_back(a.data());
    if (rte_eal_init(static_cast<int>(eal_argv.size()), eal_argv.data()) < 0) {
        std::fprintf(stderr, "bench_timers: rte_eal_init failed\n");
        return 1;
    }
    if (rte_timer_subsystem_init() < 0) {
        std::fprintf(stderr, "bench_timers: rte_timer_subsystem_init failed\n");
        return 1;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    rte_timer_subsystem_finalize();
    rte_eal_cleanup();
    return 0;
}
