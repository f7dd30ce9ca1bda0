/* SPDX-License-Identifier: BSD-3-Clause */
/* DCQCN experiments in the deterministic simulator (issue 10, item 4), each with DCQCN on
 * and off: senders with 10 Gb/s links and 2 µs latency write into one receiver behind a
 * 10 Gb/s lib/fabric bottleneck with RED/ECN marking.
 *   a  2:1 incast: per-flow rate and queue depth against time
 *   b  one flow's response to a single CNP, against the paper's equations
 *   c  8:1 incast: Jain's index, queue bound, drops
 *   d  two long flows, then 15 senders of 4 KB WRITEs for 1 ms: long-flow dip and recovery
 *   e  2:1 and 8:1 incast with PFC only, DCQCN only (lossy) and PFC + DCQCN, plus a victim
 *      flow from flow 0's host to a receiver off the bottleneck (issue 16, item 4): rates,
 *      queue, pause frames and paused time, drops, and the victim's head-of-line blocking
 *   f  8:1 incast into a small buffer (--small-buffer, default 500 KB: above DCQCN's queue
 *      peak at 8:1, below the ~1 MB the RC windows stack up without it), on and off side
 *      by side: drops without DCQCN, none with it
 * Each run writes <out>/<exp>_<on|off>[_<round>].csv and prints one summary line; rounds
 * vary the seed (marking, not the workload) and give min/median/max.
 * bench/plot_cc.py turns the CSVs into PNGs, on and off side by side. */
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cc_params.h"
#include "sim_incast.h"

using namespace droce;
using namespace droce::sim;

namespace {

constexpr Time kUs = 1000, kMs = 1000 * kUs;
/* Fair share is judged on 5 ms averages (100 bins of 50 µs), as tests/unit/test_cc.cpp
 * does: DCQCN with ConnectX defaults keeps oscillating around the share at shorter scales. */
constexpr size_t kWindow = 100;
/* ... and on 1 ms averages (20 bins), the "within 10% of the fair share within
 * 20 ms" read strictly: the 5 ms means hide oscillations a flow sees at the 1 ms scale. */
constexpr size_t kWindow1ms = 20;

/* How far from the fair share the flows stay on sliding `window`-bin means over bins
 * [from, to): the largest |rate - fair| / fair of any flow in any window, the flow and the
 * window end (ns) where it happened. The fair share is `share` (the link's capacity over
 * N), or with share 0 the window's mean of the flows (equal flows on an under-used link
 * count as fair then). */
struct Deviation {
    double worst = 0;
    size_t flow = 0;
    Time at = 0;
    double rate = 0, fair = 0; /* of that flow in that window, Gb/s */
};
Deviation max_deviation(const IncastResult &r, const std::vector<size_t> &flows, size_t window,
                        size_t from, size_t to, double share) {
    Deviation d;
    for (size_t b = from; b + window <= to; ++b) {
        const std::vector<double> m = mean_rates(r, b, b + window, flows);
        double fair = 0;
        for (double v : m)
            fair += v / static_cast<double>(m.size());
        if (share > 0)
            fair = share;
        for (size_t k = 0; k < m.size(); ++k) {
            const double dev = fair > 0 ? std::fabs(m[k] - fair) / fair : 1.0;
            if (dev > d.worst)
                d = {dev, flows[k], (b + window) * r.bin_ns, m[k], fair};
        }
    }
    return d;
}

struct Opts {
    std::string out = ".";
    std::string exps = "abcd";
    std::string modes = "on,off";
    int rounds = 3;
    double pmax = 0.05;
    bool mark_dequeue = true;
    bool paper = false; /* the paper's DCQCN parameters instead of ConnectX's */
    bool fair = false;  /* DcqcnProfile::Fair (droce/dcqcn.h) */
    uint32_t kmin = 5'000, kmax = 200'000, buffer = 2'000'000;
    uint32_t small_buffer = 500'000;              /* f's buffer */
    uint32_t pfc_xoff = 80'000, pfc_xon = 77'800; /* per ingress port; xon = xoff - 2 MTU */
    Time duration = 30 * kMs;
    std::vector<std::string> cc_set; /* --cc KEY=VALUE, applied after --params */
};

[[noreturn]] void usage(int code) {
    std::fprintf(
        code ? stderr : stdout,
        "usage: cc_sim [options]\n"
        "  --out DIR        CSV directory (default .)\n"
        "  --exp LIST       experiments among a,b,c,d,e,f (default abcd)\n"
        "  --modes LIST     on,off | on | off (default on,off; e runs its three modes)\n"
        "  --rounds N       seeds per experiment (default 3)\n"
        "  --pmax P         RED marking probability at Kmax (default 0.05)\n"
        "  --params connectx|paper|fair   DCQCN parameters (default connectx; fair: the\n"
        "                   profile of droce/dcqcn.h, meant for --pmax 1)\n"
        "  --mark enqueue|dequeue   where RED looks at the queue (default dequeue)\n"
        "  --kmin B --kmax B --buffer B   bottleneck bytes (5000, 200000, 2000000)\n"
        "  --small-buffer B f's bottleneck buffer (default 500000)\n"
        "  --duration-ms N  length of a, c, d and e (default 30)\n"
        "  --cc KEY=VALUE   one DCQCN parameter over --params (repeatable): dce_tcp_rtt_ns,\n"
        "                   rate_reduce_monitor_period_ns, rpg_byte_reset, rpg_time_reset_ns,\n"
        "                   rpg_threshold, clamp_tgt_rate, clamp_tgt_rate_after_time_inc,\n"
        "                   min_time_between_cnps_ns, dce_tcp_g, rpg_ai_rate_bps,\n"
        "                   rpg_hai_rate_bps, rpg_min_dec_fac, rpg_gd, initial_alpha_value,\n"
        "                   rate_to_set_on_first_cnp_bps\n"
        "  --pfc-xoff B --pfc-xon B   e's PFC thresholds per ingress port (80000, 77800)\n");
    std::exit(code);
}

Opts parse(int argc, char **argv) {
    Opts o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "cc_sim: %s needs a value\n", a.c_str());
                usage(2);
            }
            return argv[++i];
        };
        auto num = [&](double lo, double hi) {
            const std::string v = val();
            char *end = nullptr;
            const double d = std::strtod(v.c_str(), &end);
            if (end == v.c_str() || *end || !(d >= lo && d <= hi)) {
                std::fprintf(stderr, "cc_sim: %s %s: want a number in %g..%g\n", a.c_str(),
                             v.c_str(), lo, hi);
                usage(2);
            }
            return d;
        };
        if (a == "--help" || a == "-h")
            usage(0);
        else if (a == "--out")
            o.out = val();
        else if (a == "--exp")
            o.exps = val();
        else if (a == "--modes")
            o.modes = val();
        else if (a == "--rounds")
            o.rounds = static_cast<int>(num(1, 100));
        else if (a == "--params") {
            const std::string v = val();
            if (v != "paper" && v != "connectx" && v != "fair") {
                std::fprintf(stderr, "cc_sim: --params %s: want connectx, paper or fair\n",
                             v.c_str());
                usage(2);
            }
            o.paper = v == "paper";
            o.fair = v == "fair";
        } else if (a == "--mark")
            o.mark_dequeue = val() != "enqueue";
        else if (a == "--pmax")
            o.pmax = num(0, 1);
        else if (a == "--kmin")
            o.kmin = static_cast<uint32_t>(num(0, 1e8));
        else if (a == "--kmax")
            o.kmax = static_cast<uint32_t>(num(1, 1e8));
        else if (a == "--buffer")
            o.buffer = static_cast<uint32_t>(num(1, 2.5e8));
        else if (a == "--small-buffer")
            o.small_buffer = static_cast<uint32_t>(num(1, 2.5e8));
        else if (a == "--pfc-xoff")
            o.pfc_xoff = static_cast<uint32_t>(num(1, 2.5e8));
        else if (a == "--pfc-xon")
            o.pfc_xon = static_cast<uint32_t>(num(0, 2.5e8));
        else if (a == "--cc")
            o.cc_set.push_back(val());
        else if (a == "--duration-ms")
            o.duration = static_cast<Time>(num(1, 1000)) * kMs;
        else {
            std::fprintf(stderr, "cc_sim: unknown option %s\n", a.c_str());
            usage(2);
        }
    }
    return o;
}

struct Stat {
    std::vector<double> v;
    void add(double x) { v.push_back(x); }
    std::string str(const char *fmt = "%.3f") const {
        if (v.empty())
            return "-";
        std::vector<double> s = v;
        /* NaN (never converged) counts as the largest: std::sort with NaN is no order */
        std::sort(s.begin(), s.end(), [](double a, double b) {
            return std::isnan(b) ? !std::isnan(a) : !std::isnan(a) && a < b;
        });
        char b[160], x[3][40];
        std::snprintf(x[0], sizeof x[0], fmt, s.front());
        std::snprintf(x[1], sizeof x[1], fmt, s[s.size() / 2]);
        std::snprintf(x[2], sizeof x[2], fmt, s.back());
        std::snprintf(b, sizeof b, "%s/%s/%s", x[0], x[1], x[2]);
        return b;
    }
};

IncastConfig base(const Opts &o, const cc::CcParams *cc, uint64_t seed) {
    IncastConfig c;
    c.duration_ns = o.duration;
    c.bottleneck.rate_bps = 10'000'000'000;
    c.bottleneck.buffer_bytes = o.buffer;
    c.bottleneck.kmin_bytes = o.kmin;
    c.bottleneck.kmax_bytes = o.kmax;
    c.bottleneck.pmax = o.pmax;
    c.bottleneck.mark_at_dequeue = o.mark_dequeue;
    c.cc = cc;
    c.seed = seed;
    return c;
}

double total_drops(const IncastResult &r) {
    return static_cast<double>(r.bq.dropped_tail + r.bq.dropped_red + r.bq.dropped_loss);
}

std::string csv_name(const Opts &o, const char *exp, bool on, int round) {
    /* snprintf, not string +: GCC 12 warns falsely (-Wrestrict) on the concatenation */
    char b[64];
    if (round)
        std::snprintf(b, sizeof b, "/%s_%s_%d.csv", exp, on ? "on" : "off", round);
    else
        std::snprintf(b, sizeof b, "/%s_%s.csv", exp, on ? "on" : "off");
    return o.out + b;
}

/* (a) and (c): N flows start together at 100 µs and run to the end. */
void incast(const Opts &o, const char *name, size_t n, const cc::CcParams *cc) {
    Stat conv, jn, qafter, qmax, drops, marks, util, conv1, qafter1, dev20, convc, conv1c,
        qafter1c, dev20c, cap;
    for (int round = 0; round < o.rounds; ++round) {
        IncastConfig c = base(o, cc, 1 + static_cast<uint64_t>(round));
        c.flows.assign(n, FlowSpec{});
        for (auto &f : c.flows)
            f.start_ns = 100 * kUs;
        const IncastResult r = run_incast(c);
        write_csv(r, csv_name(o, name, cc, round));
        if (cc && round == 0) {
            /* The reaction points of seed 1: which flows have their targets clamped */
            std::printf("# %s seed 1, last 10 ms, per flow: Gb/s at the bottleneck, RP rate Rc, "
                        "target Rt, alpha; rate cuts in the run\n",
                        name);
            const size_t bins = c.duration_ns / c.bin_ns;
            for (size_t k = 0; k < n; ++k) {
                const std::vector<double> m1 = mean_rates(r, bins - 200, bins, {k});
                std::printf("#   flow %zu: %.2f  Rc %.2f  Rt %.2f  alpha %.3f  cuts %llu\n", k,
                            m1[0], r.rp_rate_gbps[k], r.rp_target_gbps[k], r.rp_alpha[k],
                            static_cast<unsigned long long>(r.rp_cuts[k]));
            }
        }
        std::vector<size_t> all(n);
        for (size_t k = 0; k < n; ++k)
            all[k] = k;
        const size_t bins = c.duration_ns / c.bin_ns;
        /* within 10% of the fair share in every 5 ms window from then on */
        const Time t = convergence_time(r, all, kWindow, 2, bins, 0.10);
        conv.add(t == std::numeric_limits<Time>::max() ? std::nan("") : (t - 100.0 * kUs) / 1e6);
        const std::vector<double> m = mean_rates(r, bins - 200, bins, all); /* last 10 ms */
        jn.add(jain(m));
        double sum = 0;
        for (double x : m)
            sum += x;
        util.add(sum);
        qafter.add(
            max_depth_after(r, t == std::numeric_limits<Time>::max() ? c.duration_ns / 2 : t) /
            1e3);
        qmax.add(static_cast<double>(r.bq.max_depth_bytes) / 1e3);
        drops.add(total_drops(r));
        marks.add(static_cast<double>(r.bq.marked));
        /* The metric on 1 ms means: converged at the end of the first window from
         * which on every flow stays within 10% to the end of the run (measured from the
         * flows' start, 100 µs); the queue's maximum after that; and, converged or not, the
         * worst deviation of any flow from 20 ms on (below 10%: the 20 ms target is met). */
        const Time t1 = convergence_time(r, all, kWindow1ms, 2, bins, 0.10);
        const bool ok1 = t1 != std::numeric_limits<Time>::max();
        conv1.add(ok1 ? (t1 - 100.0 * kUs) / 1e6 : std::nan(""));
        qafter1.add(ok1 ? max_depth_after(r, t1) / 1e3 : std::nan(""));
        const Deviation d = max_deviation(r, all, kWindow1ms, 20 * kMs / c.bin_ns, bins, 0);
        dev20.add(100 * d.worst);
        /* The same against the link's share, capacity / N (the fair share): flows
         * equal to each other but together below the link's capacity are not converged.
         * These are the figures the targets use. */
        const double share = r.capacity_gbps / static_cast<double>(n);
        cap.add(r.capacity_gbps);
        const Time tc = convergence_time(r, all, kWindow, 2, bins, 0.10, share);
        convc.add(tc == std::numeric_limits<Time>::max() ? std::nan("")
                                                           : (tc - 100.0 * kUs) / 1e6);
        const Time t1c = convergence_time(r, all, kWindow1ms, 2, bins, 0.10, share);
        const bool ok1c = t1c != std::numeric_limits<Time>::max();
        conv1c.add(ok1c ? (t1c - 100.0 * kUs) / 1e6 : std::nan(""));
        qafter1c.add(ok1c ? max_depth_after(r, t1c) / 1e3 : std::nan(""));
        const Deviation dc =
            max_deviation(r, all, kWindow1ms, 20 * kMs / c.bin_ns, bins, share);
        dev20c.add(100 * dc.worst);
        if (cc)
            std::printf("#   %s seed %d: 1 ms windows from 20 ms: worst flow %zu at %.2f ms, "
                        "%.2f Gb/s against the flows' mean %.2f (%+.0f%%), worst against the "
                        "link's share %.3f: flow %zu at %.2f ms, %.2f Gb/s (%+.0f%%); "
                        "converged %.2f ms (mean) %.2f ms (share), Jain %.4f, queue after "
                        "%.1f KB, drops %.0f\n",
                        name, round + 1, d.flow, static_cast<double>(d.at) / 1e6, d.rate, d.fair,
                        d.fair > 0 ? 100 * (d.rate / d.fair - 1) : 0.0, share, dc.flow,
                        static_cast<double>(dc.at) / 1e6, dc.rate,
                        100 * (dc.rate / share - 1), conv1.v.back(), conv1c.v.back(),
                        jn.v.back(), qafter1c.v.back(), total_drops(r));
    }
    std::printf("%s dcqcn=%-3s flows=%zu converge_ms=%s jain=%s goodput_gbps=%s "
                "qmax_after_conv_kb=%s qmax_kb=%s drops=%s marked=%s conv1ms_ms=%s "
                "qmax_after_conv1ms_kb=%s maxdev_from20ms_pct=%s capacity_gbps=%s "
                "converge_cap_ms=%s conv1ms_cap_ms=%s qmax_after_conv1ms_cap_kb=%s "
                "maxdev_cap_from20ms_pct=%s (min/median/max of %d)\n",
                name, cc ? "on" : "off", n, conv.str().c_str(), jn.str().c_str(),
                util.str().c_str(), qafter.str("%.1f").c_str(), qmax.str("%.1f").c_str(),
                drops.str("%.0f").c_str(), marks.str("%.0f").c_str(), conv1.str().c_str(),
                qafter1.str("%.1f").c_str(), dev20.str("%.1f").c_str(), cap.str().c_str(),
                convc.str().c_str(), conv1c.str().c_str(), qafter1c.str("%.1f").c_str(),
                dev20c.str("%.1f").c_str(), o.rounds);
}

/* The reaction point after one CNP, from the paper's equations (not from lib/cc): the
 * cut, then stages by timer (every T) and byte counter (every B bytes sent at Rc), each
 * Rc = (Rt + Rc)/2 with Rt at the line rate (additive and hyper increases only raise a
 * target already at the cap). Integrated in 100 ns steps. */
std::vector<double> dcqcn_reference(const cc::CcParams &p, double line /* Gb/s */, Time cnp_at,
                                    Time bin, size_t bins) {
    std::vector<double> out(bins, line);
    const double alpha = p.initial_alpha_value / 1024.0;
    double rt = line;
    double rc = std::max(line * (1 - alpha * 1024 / std::pow(2.0, p.rpg_gd)),
                         line * p.rpg_min_dec_fac / 100.0);
    rc = std::max(rc, static_cast<double>(p.rpg_min_rate_bps) / 1e9); /* rates in Gb/s */
    double bytes = 0;
    Time last_timer = cnp_at;
    const Time dt = 100;
    for (Time t = cnp_at; t / bin < bins; t += dt) {
        out[t / bin] = rc;                         /* the last value in a bin stands for it */
        bytes += rc * static_cast<double>(dt) / 8; /* Gb/s × ns = bits */
        bool stage = false;
        if (bytes >= p.rpg_byte_reset) {
            bytes -= p.rpg_byte_reset;
            stage = true;
        }
        if (t - last_timer >= p.rpg_time_reset_ns) {
            last_timer = t;
            stage = true;
        }
        if (stage)
            rc = (rt + rc) / 2;
    }
    return out;
}

void one_cnp(const Opts &o, const cc::CcParams *cc, const cc::CcParams &ref) {
    IncastConfig c = base(o, cc, 1);
    c.duration_ns = 4 * kMs;
    c.bin_ns = 10 * kUs;
    c.sample_ns = 10 * kUs;
    c.bottleneck.ecn = false; /* the one CNP is the only congestion signal */
    c.bottleneck.buffer_bytes = 4'000'000;
    c.flows.assign(1, FlowSpec{});
    c.inject_cnp_at = 1 * kMs;
    const IncastResult r = run_incast(c);
    const size_t bins = c.duration_ns / c.bin_ns + 1;
    /* the line as measured before the CNP: frame bytes at the bottleneck */
    double line = 0;
    for (size_t b = 50; b < 100; ++b)
        line += r.rate_gbps[0][b] / 50;
    const std::vector<double> refv = dcqcn_reference(ref, line, c.inject_cnp_at, c.bin_ns, bins);
    const std::string path = csv_name(o, "b", cc, 0);
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f) {
        std::perror(path.c_str());
        std::exit(1);
    }
    std::fprintf(f, "t_us,flow0_gbps,reference_gbps\n");
    double low = line, err = 0;
    size_t recovered = 0, nerr = 0;
    for (size_t b = 0; b < bins; ++b) {
        std::fprintf(f, "%.1f,%.4f,%.4f\n", static_cast<double>(b * c.bin_ns) / 1e3,
                     r.rate_gbps[0][b], refv[b]);
        if (b * c.bin_ns > c.inject_cnp_at + 20 * kUs && b + 1 < bins) {
            low = std::min(low, r.rate_gbps[0][b]);
            if (!recovered && r.rate_gbps[0][b] >= 0.95 * line && low < 0.9 * line)
                recovered = b;
            err += std::fabs(r.rate_gbps[0][b] - refv[b]) / line;
            ++nerr;
        }
    }
    std::fclose(f);
    char rec_us[32];
    std::snprintf(rec_us, sizeof rec_us, "%.0f",
                  static_cast<double>(recovered * c.bin_ns - c.inject_cnp_at) / 1e3);
    std::printf("b dcqcn=%-3s line_gbps=%.3f min_after_cnp_gbps=%.3f recover_95pct_us=%s "
                "mean_abs_dev_from_reference=%.1f%% cnps=%llu handled=%llu cuts=%llu\n",
                cc ? "on" : "off", line, low, recovered ? rec_us : "-",
                nerr ? 100 * err / static_cast<double>(nerr) : 0.0,
                static_cast<unsigned long long>(r.cnps),
                static_cast<unsigned long long>(r.rp_cnp_handled),
                static_cast<unsigned long long>(r.rp_rate_cuts));
}

/* (d) two long flows from 100 µs; senders 2..16 WRITE 4 KB, one at a time, in [10, 11) ms. */
void burst(const Opts &o, const cc::CcParams *cc) {
    Stat dip, rec, drops, qmax;
    for (int round = 0; round < o.rounds; ++round) {
        IncastConfig c = base(o, cc, 1 + static_cast<uint64_t>(round));
        c.flows.assign(17, FlowSpec{});
        for (size_t k = 0; k < 2; ++k)
            c.flows[k].start_ns = 100 * kUs;
        for (size_t k = 2; k < 17; ++k) {
            c.flows[k].start_ns = 10 * kMs;
            c.flows[k].stop_ns = 11 * kMs;
            c.flows[k].msg_bytes = 4096;
            c.flows[k].outstanding = 1;
        }
        const IncastResult r = run_incast(c);
        write_csv(r, csv_name(o, "d", cc, round));
        const size_t b0 = 10 * kMs / c.bin_ns, b1 = 11 * kMs / c.bin_ns;
        auto longsum = [&](size_t b) { return r.rate_gbps[0][b] + r.rate_gbps[1][b]; };
        double before = 0;
        for (size_t b = b0 - 100; b < b0; ++b)
            before += longsum(b) / 100;
        /* 200 µs windows smooth the 50 µs bins */
        double low = before;
        size_t back = 0;
        const size_t end = c.duration_ns / c.bin_ns;
        for (size_t b = b0; b + 4 <= end; ++b) {
            double w = 0;
            for (size_t k = b; k < b + 4; ++k)
                w += longsum(k) / 4;
            low = std::min(low, w);
            if (b >= b1 && !back && w >= 0.9 * before)
                back = b;
        }
        dip.add(100 * (1 - low / before));
        rec.add(back ? static_cast<double>((back - b1) * c.bin_ns) / 1e3 : std::nan(""));
        drops.add(total_drops(r));
        qmax.add(static_cast<double>(r.bq.max_depth_bytes) / 1e3);
    }
    std::printf("d dcqcn=%-3s long_flow_dip_pct=%s recovery_to_90pct_after_burst_us=%s "
                "drops=%s qmax_kb=%s (min/median/max of %d)\n",
                cc ? "on" : "off", dip.str("%.1f").c_str(), rec.str("%.0f").c_str(),
                drops.str("%.0f").c_str(), qmax.str("%.1f").c_str(), o.rounds);
}

/* (e) N:1 incast plus the victim flow, in three modes. The victim shares flow 0's link,
 * not the bottleneck: its fair rate is what flow 0 leaves of that link. */
void pfc_lab(const Opts &o, size_t n, const cc::CcParams &params) {
    struct Mode {
        const char *name;
        bool pfc, dcqcn;
    };
    const Mode modes[] = {{"pfc", true, false}, {"dcqcn", false, true}, {"pfc+dcqcn", true, true}};
    for (const Mode &m : modes) {
        Stat good, vic, vshare, qmax, pauses, paused, drops, marks;
        bool err = false;
        for (int round = 0; round < o.rounds; ++round) {
            IncastConfig c = base(o, m.dcqcn ? &params : nullptr, 1 + static_cast<uint64_t>(round));
            c.flows.assign(n, FlowSpec{});
            for (auto &f : c.flows)
                f.start_ns = 100 * kUs;
            c.victim = true;
            c.victim_flow.start_ns = 100 * kUs;
            c.bottleneck.ecn = m.dcqcn;
            if (m.pfc) {
                c.bottleneck.pfc_xoff_bytes = o.pfc_xoff;
                c.bottleneck.pfc_xon_bytes = o.pfc_xon;
            }
            const IncastResult r = run_incast(c);
            char tag[48];
            std::snprintf(tag, sizeof tag, "e%zu_%s", n, m.pfc && m.dcqcn ? "both" : m.name);
            char file[96];
            std::snprintf(file, sizeof file, "/%s_%d.csv", tag, round);
            write_csv(r, o.out + file);
            std::vector<size_t> all(n);
            for (size_t k = 0; k < n; ++k)
                all[k] = k;
            const size_t bins = c.duration_ns / c.bin_ns;
            const std::vector<double> mr = mean_rates(r, bins - 200, bins, all); /* last 10 ms */
            double sum = 0;
            for (double x : mr)
                sum += x;
            double v = 0;
            for (size_t b = bins - 200; b < bins; ++b)
                v += r.victim_gbps[b] / 200;
            good.add(sum);
            vic.add(v);
            /* flow 0's host link minus what flow 0 sends on it: the victim's fair share */
            double f0 = 0;
            for (size_t b = bins - 200; b < bins; ++b)
                f0 += r.sent_gbps[0][b] / 200;
            vshare.add(v / std::max(1e-9, c.link_gbps - f0));
            qmax.add(static_cast<double>(r.bq.max_depth_bytes) / 1e3);
            pauses.add(static_cast<double>(r.pause_frames));
            double p = 0;
            for (double x : r.paused_ms)
                p += x / static_cast<double>(n);
            paused.add(p);
            drops.add(total_drops(r));
            marks.add(static_cast<double>(r.bq.marked));
            err |= r.qp_error;
        }
        std::printf("e %zu:1 mode=%-9s goodput_gbps=%s victim_gbps=%s victim_of_fair=%s "
                    "qmax_kb=%s pause_frames=%s paused_ms_per_sender=%s drops=%s marked=%s%s "
                    "(min/median/max of %d)\n",
                    n, m.name, good.str().c_str(), vic.str().c_str(), vshare.str("%.2f").c_str(),
                    qmax.str("%.1f").c_str(), pauses.str("%.0f").c_str(),
                    paused.str("%.2f").c_str(), drops.str("%.0f").c_str(),
                    marks.str("%.0f").c_str(), err ? " QP_ERROR" : "", o.rounds);
    }
}

/* (f) 8:1 into a buffer DCQCN's queue fits in and the RC windows' does not. */
void small_buffer(const Opts &o, const cc::CcParams *cc) {
    Stat drops, qmax, good, jn, retx;
    bool err = false;
    for (int round = 0; round < o.rounds; ++round) {
        IncastConfig c = base(o, cc, 1 + static_cast<uint64_t>(round));
        c.bottleneck.buffer_bytes = o.small_buffer;
        c.flows.assign(8, FlowSpec{});
        for (auto &f : c.flows)
            f.start_ns = 100 * kUs;
        const IncastResult r = run_incast(c);
        write_csv(r, csv_name(o, "f", cc, round));
        std::vector<size_t> all(8);
        for (size_t k = 0; k < 8; ++k)
            all[k] = k;
        const size_t bins = c.duration_ns / c.bin_ns;
        const std::vector<double> m = mean_rates(r, bins - 200, bins, all); /* last 10 ms */
        double sum = 0;
        for (double x : m)
            sum += x;
        good.add(sum);
        jn.add(jain(m));
        drops.add(total_drops(r));
        qmax.add(static_cast<double>(r.bq.max_depth_bytes) / 1e3);
        retx.add(static_cast<double>(r.retransmits));
        err |= r.qp_error;
    }
    std::printf("f dcqcn=%-3s flows=8 buffer_kb=%.0f drops=%s qmax_kb=%s retransmits=%s "
                "goodput_gbps=%s jain=%s%s (min/median/max of %d)\n",
                cc ? "on" : "off", o.small_buffer / 1e3, drops.str("%.0f").c_str(),
                qmax.str("%.1f").c_str(), retx.str("%.0f").c_str(), good.str().c_str(),
                jn.str().c_str(), err ? " QP_ERROR" : "", o.rounds);
}

} // namespace

int main(int argc, char **argv) {
    const Opts o = parse(argc, argv);
    cc::CcParams params; /* ConnectX defaults */
    if (o.fair)
        params = cc::params_from(dcqcn_profile_params(DcqcnProfile::Fair));
    if (o.paper) {
        /* Zhu et al. 2015: T = 55 µs, B = 10 MB, g = 1/256, a CNP per 50 µs, Rt = Rc on
         * every CNP, R_AI 40 Mb/s, R_HAI 100 Mb/s (as tests/unit/test_cc.cpp) */
        params.rpg_time_reset_ns = 55'000;
        params.rpg_byte_reset = 10'000'000;
        params.clamp_tgt_rate = true;
        params.dce_tcp_g = 1020;
        params.min_time_between_cnps_ns = 50'000;
        params.rpg_ai_rate_bps = 40'000'000;
        params.rpg_hai_rate_bps = 100'000'000;
    }
    for (const std::string &kv : o.cc_set) {
        const size_t eq = kv.find('=');
        const std::string k = kv.substr(0, eq);
        const uint64_t v =
            eq == std::string::npos ? 0 : std::strtoull(kv.c_str() + eq + 1, nullptr, 0);
        if (k == "dce_tcp_rtt_ns")
            params.dce_tcp_rtt_ns = v;
        else if (k == "rate_reduce_monitor_period_ns")
            params.rate_reduce_monitor_period_ns = v;
        else if (k == "rpg_byte_reset")
            params.rpg_byte_reset = static_cast<uint32_t>(v);
        else if (k == "rpg_time_reset_ns")
            params.rpg_time_reset_ns = v;
        else if (k == "rpg_threshold")
            params.rpg_threshold = static_cast<uint32_t>(v);
        else if (k == "clamp_tgt_rate")
            params.clamp_tgt_rate = v != 0;
        else if (k == "clamp_tgt_rate_after_time_inc")
            params.clamp_tgt_rate_after_time_inc = v != 0;
        else if (k == "min_time_between_cnps_ns")
            params.min_time_between_cnps_ns = v;
        else if (k == "dce_tcp_g")
            params.dce_tcp_g = static_cast<uint32_t>(v);
        else if (k == "rpg_ai_rate_bps")
            params.rpg_ai_rate_bps = v;
        else if (k == "rpg_hai_rate_bps")
            params.rpg_hai_rate_bps = v;
        else if (k == "rpg_min_dec_fac")
            params.rpg_min_dec_fac = static_cast<uint32_t>(v);
        else if (k == "rpg_gd")
            params.rpg_gd = static_cast<uint32_t>(v);
        else if (k == "initial_alpha_value")
            params.initial_alpha_value = static_cast<uint32_t>(v);
        else if (k == "rate_to_set_on_first_cnp_bps")
            params.rate_to_set_on_first_cnp_bps = v;
        else {
            std::fprintf(stderr, "cc_sim: --cc %s: unknown parameter\n", kv.c_str());
            return 2;
        }
    }
    if (const char *err = cc::validate(params, 10'000'000'000)) {
        std::fprintf(stderr, "cc_sim: %s\n", err);
        return 2;
    }
    std::vector<const cc::CcParams *> modes;
    if (o.modes.find("on") != std::string::npos)
        modes.push_back(&params);
    if (o.modes.find("off") != std::string::npos)
        modes.push_back(nullptr);
    if (modes.empty()) {
        std::fprintf(stderr, "cc_sim: --modes wants on, off or on,off\n");
        return 2;
    }
    std::printf(
        "# 10 Gb/s bottleneck, buffer %u B, Kmin %u B, Kmax %u B, Pmax %.3f; 10 Gb/s "
        "links, 2 us; MTU 1024; 64 KiB WRITEs, 4 outstanding; DCQCN %s parameters; marking at %s\n",
        o.buffer, o.kmin, o.kmax, o.pmax, o.paper ? "paper" : o.fair ? "fair profile" : "ConnectX",
        o.mark_dequeue ? "dequeue" : "enqueue");
    if (o.exps.find('e') != std::string::npos) {
        if (o.pfc_xon >= o.pfc_xoff || o.pfc_xoff > o.buffer) {
            std::fprintf(stderr, "cc_sim: want --pfc-xon < --pfc-xoff <= --buffer\n");
            return 2;
        }
        std::printf("# e: PFC XOFF %u B / XON %u B per ingress port, pause refresh 1.68 ms; "
                    "victim: flow 0's host WRITEs 64 KiB x4 to a receiver off the bottleneck\n",
                    o.pfc_xoff, o.pfc_xon);
        pfc_lab(o, 2, params);
        pfc_lab(o, 8, params);
    }
    for (const cc::CcParams *cc : modes) {
        if (o.exps.find('a') != std::string::npos)
            incast(o, "a", 2, cc);
        if (o.exps.find('b') != std::string::npos)
            one_cnp(o, cc, params);
        if (o.exps.find('c') != std::string::npos)
            incast(o, "c", 8, cc);
        if (o.exps.find('d') != std::string::npos)
            burst(o, cc);
        if (o.exps.find('f') != std::string::npos)
            small_buffer(o, cc);
        std::fflush(stdout);
    }
    return 0;
}
