/* SPDX-License-Identifier: BSD-3-Clause */
/* Flood benchmark (issue 15, resource exhaustion from the wire): legitimate 64 B WRITEs
 * on N QP pairs (every WR's bytes checked) while an attacker floods the receiving
 * device at R x the legitimate packet rate (bench/flood.h describes the set-up).
 *
 *   bench_flood [--rates=0,0.25,0.5,1,2,4] [--kinds=garbage,roce_noise,...] [--rounds=5]
 *               [--seconds=0.5] [--pairs=8] [--depth=16] [--mbufs=8191] [--engine-pool]
 *               [--each] [--csv=FILE]
 *
 * --engine-pool draws the flood's mbufs from the engine's own pool (as a NIC's RX ring is
 * filled from it): flood frames queued at B's RX then hold mbufs the engine needs to send
 * data and ACKs; with a small --mbufs that is RX mempool pressure on TX.
 *
 * Each round first measures the legitimate rate without flood (calibration, not kept):
 * R x that is the flood's frame rate in the round's runs. Rates run in a rotated order per
 * round; throughput ratios are taken against the same round's 0x run. --each adds, per
 * round, every kind alone at 1x: what B does with it (counters on both sides).
 *
 * One thread does everything (embedded engine, attacker, checker): the attacker's own
 * cost (mbuf alloc, frame build, enqueue) is charged to the legitimate traffic too, so
 * the ratios are a lower bound on what a separate attacker would leave. Not run by CI. */
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

#include "bench_stats.h"
#include "flood.h"

using namespace droce;
using namespace droce::flood;

namespace {

struct Args {
    std::vector<double> rates = {0, 0.25, 0.5, 1, 2, 4};
    std::vector<Kind> kinds = {Kind::Garbage, Kind::RoceNoise, Kind::BadIcrc, Kind::UnknownQpn,
                               Kind::Truncated};
    uint32_t rounds = 5, pairs = 8, depth = 16;
    double seconds = 0.5;
    bool each = false;
    bool engine_pool = false; /* flood mbufs from the engine's pool (RX pool pressure) */
    uint32_t mbufs = 8191;    /* the engine's pool */
    std::string csv;
};

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "bench_flood: %s\n", what.c_str());
    std::exit(1);
}

std::unique_ptr<Engine> make_engine(uint32_t mbufs) {
    static std::string prefix = "--file-prefix=bench_flood_" + std::to_string(getpid());
    static const char *args[] = {
        "bench_flood", "-l",        "0",           "--no-huge",      "-m",
        "2048",        "--no-pci",  "--no-shconf", "--no-telemetry", prefix.c_str(),
        "--log-level", "*:warning", "--",          nullptr};
    EngineOptions o;
    o.embedded = true;
    o.mbufs = mbufs;
    o.log_level = "warn";
    int consumed = 0;
    auto e = Engine::create(13, const_cast<char **>(args), &consumed, o);
    if (!e)
        die("Engine::create: " + e.status().message());
    return std::move(*e);
}

using droce::bench::Stats;
using droce::bench::stats;

std::string kinds_label(const std::vector<Kind> &k) {
    std::string s;
    for (Kind x : k)
        s += (s.empty() ? "" : "+") + std::string(kind_name(x));
    return s;
}

/* A run must keep every promise; the figures of one that did not are not figures. */
bool check(const RunResult &r, bool silent_only, std::string *why) {
    char b[256];
    if (r.stalled || r.wr_errors || r.data_errors) {
        std::snprintf(b, sizeof b, "WR errors %" PRIu64 ", data errors %" PRIu64 " %s", r.wr_errors,
                      r.data_errors, r.error.c_str());
        *why = b;
        return false;
    }
    if (r.mbuf_delta != 0 || r.flood_pool_missing != 0) {
        std::snprintf(b, sizeof b, "mbufs: engine %+" PRId64 ", flood pool %+" PRId64, r.mbuf_delta,
                      r.flood_pool_missing);
        *why = b;
        return false;
    }
    if (silent_only && r.flood_counted != r.injected) {
        std::snprintf(b, sizeof b, "flood %" PRIu64 " injected, %" PRIu64 " counted", r.injected,
                      r.flood_counted);
        *why = b;
        return false;
    }
    return true;
}

void print_deltas(const char *side, const std::map<std::string, uint64_t> &d) {
    std::printf("    %s:", side);
    for (const auto &[k, v] : d)
        if (k.rfind("port_", 0) != 0 && k != "tx_bytes_copied" && k != "rx_bytes_copied" &&
            k != "rx_write_requests")
            std::printf(" %s=%" PRIu64, k.c_str(), v);
    std::printf("\n");
}

} // namespace

int main(int argc, char **argv) {
    Args args;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto val = [&](const char *name) -> const char * {
            const std::string pre = std::string(name) + "=";
            return a.rfind(pre, 0) == 0 ? argv[i] + pre.size() : nullptr;
        };
        const char *v;
        if ((v = val("--rates"))) {
            args.rates.clear();
            for (const char *p = v; *p;) {
                char *end = nullptr;
                args.rates.push_back(std::strtod(p, &end));
                if (end == p)
                    die("bad --rates");
                p = *end == ',' ? end + 1 : end;
            }
        } else if ((v = val("--kinds"))) {
            args.kinds.clear();
            std::string s = v;
            for (size_t p = 0; p <= s.size();) {
                const size_t c = std::min(s.find(',', p), s.size());
                Kind k;
                if (!kind_from_name(s.substr(p, c - p), &k))
                    die("unknown kind " + s.substr(p, c - p));
                args.kinds.push_back(k);
                p = c + 1;
            }
        } else if ((v = val("--rounds")))
            args.rounds = static_cast<uint32_t>(std::atoi(v));
        else if ((v = val("--pairs")))
            args.pairs = static_cast<uint32_t>(std::atoi(v));
        else if ((v = val("--depth")))
            args.depth = static_cast<uint32_t>(std::atoi(v));
        else if ((v = val("--seconds")))
            args.seconds = std::atof(v);
        else if ((v = val("--csv")))
            args.csv = v;
        else if ((v = val("--mbufs")))
            args.mbufs = static_cast<uint32_t>(std::atoi(v));
        else if (a == "--engine-pool")
            args.engine_pool = true;
        else if (a == "--each")
            args.each = true;
        else
            die("usage: bench_flood [--rates=LIST] [--kinds=LIST] [--rounds=N] [--seconds=S] "
                "[--pairs=N] [--depth=N] [--mbufs=N] [--engine-pool] [--each] [--csv=FILE]");
    }
    if (args.rounds == 0 || args.pairs == 0 || args.depth == 0 || args.depth >= kSlots ||
        args.seconds <= 0)
        die("rounds, pairs, seconds must be positive; depth 1..63");

    Bed bed;
    if (std::string e = bed.open(make_engine(args.mbufs), args.pairs); !e.empty())
        die(e);
    Legit lg;
    lg.engine = bed.engine.get();
    lg.a = &bed.a;
    lg.b = &bed.b;
    lg.depth = args.depth;
    lg.init();
    Flooder fl;
    if (!fl.open("bench_flood_pool", 4095))
        die("flood mempool");
    if (args.engine_pool && !fl.use_engine_pool())
        die("the engine's mempool (droce_pool*) not found");
    aim(fl, bed, lg);
    FILE *csv = args.csv.empty() ? nullptr : std::fopen(args.csv.c_str(), "a");
    if (!args.csv.empty() && csv == nullptr)
        die("cannot open " + args.csv);
    const bool silent_only =
        std::all_of(args.kinds.begin(), args.kinds.end(), [](Kind k) { return silent(k); });
    const std::string label = kinds_label(args.kinds);

    /* Warm-up: first-touch of buffers, ARP. */
    fl.kinds = args.kinds;
    (void)run(bed, lg, fl, 0, 0.1, 0.3);

    std::vector<std::vector<double>> ratio(args.rates.size()), rate(args.rates.size()),
        achieved(args.rates.size()), ratio_net(args.rates.size());
    std::vector<std::vector<double>> each_ratio(static_cast<size_t>(Kind::Count_));
    std::vector<RunResult> each_last(static_cast<size_t>(Kind::Count_));
    bool all_ok = true;
    for (uint32_t round = 0; round < args.rounds; ++round) {
        fl.kinds = args.kinds;
        const RunResult cal = run(bed, lg, fl, 0, 0.05, 0.3);
        const double base_pps = cal.wr_per_s;
        std::vector<double> wr(args.rates.size(), 0), wr_net(args.rates.size(), 0);
        for (size_t j = 0; j < args.rates.size(); ++j) {
            const size_t k = (j + round) % args.rates.size();
            const RunResult r = run(bed, lg, fl, args.rates[k] * base_pps, 0.1, args.seconds);
            std::string why;
            const bool ok = check(r, silent_only, &why);
            all_ok &= ok;
            wr[k] = r.wr_per_s;
            wr_net[k] = r.wr_per_s_net;
            const double ach = r.wr_per_s > 0 ? r.flood_per_s / r.wr_per_s : 0;
            achieved[k].push_back(ach);
            std::printf("round %u rate %.2fx: %.3f M WR/s, flood %.3f M/s (%.2fx the legit rate "
                        "achieved), %" PRIu64 " WRs ok, injected %" PRIu64 " (ring refused %" PRIu64
                        "), counted %" PRIu64 ", net %.3f M WR/s, mbufs %+" PRId64 "/%+" PRId64
                        " %s%s\n",
                        round + 1, args.rates[k], r.wr_per_s / 1e6, r.flood_per_s / 1e6, ach,
                        r.completed, r.injected, r.refused, r.flood_counted, r.wr_per_s_net / 1e6,
                        r.mbuf_delta, r.flood_pool_missing, ok ? "ok" : "FAILED: ", why.c_str());
            if (round == 0 && args.rates[k] == 1)
                print_deltas("B", r.deltas_b), print_deltas("A", r.deltas_a);
            std::fflush(stdout);
        }
        size_t base = args.rates.size();
        for (size_t k = 0; k < args.rates.size(); ++k)
            if (args.rates[k] == 0)
                base = k;
        for (size_t k = 0; k < args.rates.size(); ++k) {
            rate[k].push_back(wr[k]);
            const double rr = base < args.rates.size() && wr[base] > 0 ? wr[k] / wr[base] : 0;
            const double rn = base < args.rates.size() && wr[base] > 0 ? wr_net[k] / wr[base] : 0;
            ratio[k].push_back(rr);
            ratio_net[k].push_back(rn);
            if (csv != nullptr)
                std::fprintf(csv, "flood,%s,%.2f,%u,%.0f,%.4f,%.3f,%.4f\n", label.c_str(),
                             args.rates[k], round + 1, wr[k], rr, achieved[k].back(), rn);
        }
        if (args.each) {
            const RunResult r0 = run(bed, lg, fl, 0, 0.1, args.seconds);
            for (size_t ki = 0; ki < static_cast<size_t>(Kind::Count_); ++ki) {
                const Kind kd = static_cast<Kind>(ki);
                fl.kinds = {kd};
                const RunResult r = run(bed, lg, fl, base_pps, 0.1, args.seconds);
                std::string why;
                const bool ok = check(r, silent(kd), &why);
                all_ok &= ok;
                const double rr = r0.wr_per_s > 0 ? r.wr_per_s / r0.wr_per_s : 0;
                const double rn = r0.wr_per_s > 0 ? r.wr_per_s_net / r0.wr_per_s : 0;
                each_ratio[ki].push_back(rr);
                each_last[ki] = r;
                if (csv != nullptr)
                    std::fprintf(csv, "each,%s,1.00,%u,%.0f,%.4f,%.3f,%.4f\n", kind_name(kd),
                                 round + 1, r.wr_per_s, rr,
                                 r.wr_per_s > 0 ? r.flood_per_s / r.wr_per_s : 0, rn);
                std::printf("round %u %s alone at 1x: ratio %.2f, injected %" PRIu64
                            ", counted %" PRIu64 " %s%s\n",
                            round + 1, kind_name(kd), rr, r.injected, r.flood_counted,
                            ok ? "ok" : "FAILED: ", why.c_str());
                if (round == 0)
                    print_deltas("B", r.deltas_b), print_deltas("A", r.deltas_a);
            }
        }
    }

    std::printf("\nFlood of %s into the receiving device, %u QP pairs x %u outstanding 64 B "
                "WRITEs, %u rounds x %.2f s, one thread (embedded engine + attacker), engine "
                "pool %u mbufs%s\n",
                label.c_str(), args.pairs, args.depth, args.rounds, args.seconds, args.mbufs,
                args.engine_pool ? ", flood mbufs from the engine's pool" : "");
    std::printf("| flood rate (x legit) | achieved median | M WR/s min | median | max | ratio "
                "to no flood, same round: min / median / max | attacker's time excluded |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < args.rates.size(); ++k) {
        const Stats s = stats(rate[k]), q = stats(ratio[k]), a = stats(achieved[k]),
                    n = stats(ratio_net[k]);
        std::printf("| %.2f | %.2f | %.3f | %.3f | %.3f | %.2f / %.2f / %.2f | %.2f / %.2f / "
                    "%.2f |\n",
                    args.rates[k], a.med, s.min / 1e6, s.med / 1e6, s.max / 1e6, q.min, q.med,
                    q.max, n.min, n.med, n.max);
    }
    if (args.each) {
        std::printf("\nEach kind alone at 1x: ratio to no flood min / median / max; B's "
                    "counters (last round)\n");
        for (size_t ki = 0; ki < static_cast<size_t>(Kind::Count_); ++ki) {
            const Stats q = stats(each_ratio[ki]);
            std::printf("| %s | %.2f / %.2f / %.2f |", kind_name(static_cast<Kind>(ki)), q.min,
                        q.med, q.max);
            for (const auto &[k, v] : each_last[ki].deltas_b)
                if (is_flood_counter(k) || k == "port_xmit_packets")
                    std::printf(" %s=%" PRIu64, k.c_str(), v);
            std::printf(" |\n");
        }
    }
    std::printf("\nevery run: all WRs completed with correct data, flood counted, no mbuf "
                "leak: %s\n",
                all_ok ? "yes" : "NO");
    if (csv != nullptr)
        std::fclose(csv);
    lg.a = lg.b = nullptr;
    bed.close();
    fl.close();
    return all_ok ? 0 : 3;
}
