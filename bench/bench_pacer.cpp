/* SPDX-License-Identifier: BSD-3-Clause */
/* Pacer accuracy of the engine, on the wire (issue 10): one RC QP of an embedded engine
 * keeps its send queue full of RDMA WRITEs to a second device over a net_ring pair, its
 * DCQCN pacer set to a rate R (CcParams::rpg_max_rate_bps, the port's line rate set far
 * above). An RX callback on the receiving port timestamps every burst of arriving data
 * frames with the TSC, so the rate is what crossed the ring, not what completed.
 *
 * Bytes count as the pacer charges them (rc::Qp::pace_bytes): the frame from the MAC
 * header to the ICRC (the mbuf's pkt_len: the ring carries no FCS) plus
 * rc::kEthWireOverhead (FCS 4, preamble/SFD 8, inter-frame gap 12). The window starts at
 * the first burst after the warm-up and ends at the last burst once it is at least
 * --window-ms long and holds at least --frames frames; its rate is the bytes of every
 * burst before the last one over the time from the first burst to the last. The first
 * set rate row is the path unpaced (rate 0): its median is then set as the last paced
 * rate ("the highest the ring path reaches").
 *
 * Prints a table (set rate, measured rate, error min/median/max over --reps rounds) and
 * writes --csv (one line per round). A benchmark, not a test: it asserts nothing. */
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <sys/resource.h>
#include <vector>

#include "bench_engine_setup.h"
#include "bench_stats.h"
#include "engine.h"
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

using namespace droce;

namespace {

/* What the RX callback records (the engine's poll thread is the only thread). */
struct Window {
    bool armed = false;   /* count arriving frames */
    bool started = false; /* the first burst has been seen */
    uint64_t t_first = 0; /* TSC of the first burst */
    uint64_t t_last = 0;  /* TSC of the latest burst */
    uint64_t bytes = 0;   /* wire bytes of every burst so far */
    uint64_t bytes_before_last = 0;
    uint64_t frames = 0;
    uint64_t frame_len = 0; /* pkt_len of the latest data frame */
    uint64_t max_gap = 0;   /* TSC cycles: the longest time between two bursts */
    /* Stalls: gaps longer than stall_min (TSC cycles), each minus one frame interval at
     * the set rate (what the wire would have idled anyway); the pacer's bucket cannot
     * hold the credit of a stall longer than its depth, so this time is lost. */
    uint64_t stall_min = 0, interval = 0, stall = 0, nstalls = 0;
};
Window win;

bool is_roce(const rte_mbuf *m) {
    const auto *p = rte_pktmbuf_mtod(m, const uint8_t *);
    if (m->data_len < 14 + 20 + 8 || p[12] != 0x08 || p[13] != 0x00 || p[14 + 9] != 17)
        return false;
    const uint32_t ihl = (p[14] & 0xFu) * 4;
    const uint8_t *udp = p + 14 + ihl;
    return udp[2] == 0x12 && udp[3] == 0xB7; /* 4791 */
}

uint16_t on_rx(uint16_t, uint16_t, rte_mbuf **pkts, uint16_t n, uint16_t, void *) {
    if (!win.armed || n == 0)
        return n;
    const uint64_t now = rte_rdtsc();
    uint64_t b = 0, f = 0;
    for (uint16_t i = 0; i < n; ++i)
        if (is_roce(pkts[i])) {
            b += pkts[i]->pkt_len + rc::kEthWireOverhead;
            win.frame_len = pkts[i]->pkt_len;
            ++f;
        }
    if (f == 0)
        return n;
    if (!win.started) {
        win.started = true;
        win.t_first = now;
    }
    if (win.t_last != 0) {
        const uint64_t gap = now - win.t_last;
        win.max_gap = gap > win.max_gap ? gap : win.max_gap;
        if (gap > win.stall_min) {
            win.stall += gap - win.interval;
            ++win.nstalls;
        }
    }
    win.t_last = now;
    win.bytes_before_last = win.bytes;
    win.bytes += b;
    win.frames += f;
    return n;
}

struct Opts {
    uint32_t mtu = 4096;
    uint32_t msg = 4096;
    int reps = 5;
    double window_ms = 50;
    uint64_t min_frames = 2000;
    double warmup_ms = 20;
    std::string csv = "pacer_accuracy.csv";
    std::vector<double> rates_gbps = {0.1, 0.5, 1, 2, 5, 10, 20, 40};
};

struct Bench {
    std::unique_ptr<engine::Runtime> rt;
    engine::Dev *a = nullptr, *b = nullptr;
    std::unique_ptr<engine::CqCtx> acq, bcq;
    engine::QpCtx *qa = nullptr, *qb = nullptr;
    std::vector<uint8_t> bufa, bufb;
    uint32_t keya = 0, keyb = 0;
};

constexpr uint32_t kSq = 512;
constexpr uint64_t kLine = 400'000'000'000; /* far above every set rate */

bool setup(Bench &g, const Opts &o, char *argv0) {
    static char *eal[] = {argv0,
                          const_cast<char *>("--no-huge"),
                          const_cast<char *>("-m"),
                          const_cast<char *>("512"),
                          const_cast<char *>("--no-pci"),
                          const_cast<char *>("--no-shconf"),
                          const_cast<char *>("-l"),
                          const_cast<char *>("0"),
                          const_cast<char *>("--log-level"),
                          const_cast<char *>("*:warning"),
                          nullptr};
    EngineOptions eo;
    eo.embedded = true;
    int consumed = 0;
    auto rt = engine::Runtime::create(10, eal, &consumed, eo);
    if (!rt) {
        std::fprintf(stderr, "engine: %s\n", rt.status().message().c_str());
        return false;
    }
    g.rt = std::move(*rt);
    auto ports = g.rt->create_ring_pair();
    if (!ports)
        return false;
    DeviceConfig ca;
    ca.port = ports->first;
    ca.ipv4_cidr = "10.78.0.1/24";
    ca.mac = "02:00:00:00:02:01";
    ca.mtu = 4200; /* RoCE active MTU 4096; the QPs' path MTU is --mtu */
    DeviceConfig cb = ca;
    cb.port = ports->second;
    cb.ipv4_cidr = "10.78.0.2/24";
    cb.mac = "02:00:00:00:02:02";
    auto da = g.rt->open_device(ca);
    auto db = g.rt->open_device(cb);
    if (!da || !db) {
        std::fprintf(stderr, "open_device failed\n");
        return false;
    }
    g.a = *da;
    g.b = *db;
    const cc::CcParams ccp;
    g.a->qp_defaults().set_cc(&ccp, kLine);
    g.acq = bench::make_cq();
    g.bcq = bench::make_cq();
    g.bufa.assign(o.msg, 0x5a);
    g.bufb.assign(o.msg, 0);
    g.keya = g.a->reg_mr(1, g.bufa.data(), o.msg, kAccessLocalWrite)->key;
    g.keyb = g.b->reg_mr(1, g.bufb.data(), o.msg, kAccessLocalWrite | kAccessRemoteWrite)->key;
    QpInitAttr ia;
    ia.cap.max_send_wr = kSq;
    ia.cap.max_recv_wr = 16;
    auto na = g.a->create_qp(1, ia, g.acq.get(), g.acq.get(), nullptr, nullptr, &g.qa);
    auto nb = g.b->create_qp(1, ia, g.bcq.get(), g.bcq.get(), nullptr, nullptr, &g.qb);
    if (!na || !nb)
        return false;
    const Mtu mtu = o.mtu == 1024   ? Mtu::Mtu1024
                    : o.mtu == 2048 ? Mtu::Mtu2048
                    : o.mtu == 512  ? Mtu::Mtu512
                                    : Mtu::Mtu4096;
    if (!bench::connect(*g.qa->qp, bench::path(*g.a, g.b->iface().mac, g.b->iface().ip, *na), *nb,
                        0x100, 0x200, 0, mtu) ||
        !bench::connect(*g.qb->qp, bench::path(*g.b, g.a->iface().mac, g.a->iface().ip, *nb), *na,
                        0x200, 0x100, kAccessRemoteWrite, mtu))
        return false;
    if (rte_eth_add_rx_callback(g.b->port_id(), 0, on_rx, nullptr) == nullptr) {
        std::fprintf(stderr, "rte_eth_add_rx_callback: %s\n", rte_strerror(rte_errno));
        return false;
    }
    return true;
}

double mono_s() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Round {
    double measured_bps = 0;
    uint64_t frames = 0;
    double window_s = 0;
    double tsc_vs_mono_ppm = 0; /* the TSC's scaling against CLOCK_MONOTONIC */
    uint64_t defers = 0;
    uint64_t frame_len = 0;
    double max_gap_us = 0; /* the longest pause of the wire in the window */
    double stall_pct = 0;  /* stalls (Window::stall) as % of the window */
    uint64_t nstalls = 0;
    uint64_t preempted = 0; /* involuntary context switches of the thread in the window */
};

/* One round at rate_bps (0 = unpaced). */
bool run_round(Bench &g, const Opts &o, uint64_t rate_bps, Round *out) {
    rc::Qp &q = *g.qa->qp;
    cc::CcParams p;
    p.rpg_max_rate_bps = rate_bps;
    if (!q.set_cc_params(p, g.rt->now_ns()).is_ok() || q.cc_state().pacer_rate_bps != rate_bps) {
        std::fprintf(stderr, "pacer not at %" PRIu64 " b/s\n", rate_bps);
        return false;
    }
    SendWr w;
    w.opcode = WrOpcode::RdmaWrite;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(g.bufa.data()), o.msg, g.keya};
    w.num_sge = 1;
    w.remote_addr = reinterpret_cast<uint64_t>(g.bufb.data());
    w.rkey = g.keyb;
    uint32_t outstanding = 0;
    auto fill = [&] {
        bool posted = false;
        while (outstanding < kSq && q.post_send(w).is_ok()) {
            ++outstanding;
            posted = true;
        }
        if (posted)
            g.a->touch(*g.qa);
    };
    Wc wc[64];
    auto reap = [&] {
        const int n = g.acq->poll(wc, 64);
        for (int i = 0; i < n; ++i)
            if (wc[i].status != WcStatus::Success) {
                std::fprintf(stderr, "completion status %d\n", static_cast<int>(wc[i].status));
                return false;
            }
        outstanding -= static_cast<uint32_t>(n);
        return true;
    };
    const uint64_t hz = rte_get_tsc_hz();
    const uint64_t warm_end = rte_rdtsc() + static_cast<uint64_t>(o.warmup_ms * 1e-3 * hz);
    while (rte_rdtsc() < warm_end) {
        fill();
        g.rt->poll_once();
        if (!reap())
            return false;
    }
    const uint64_t defers0 = g.a->shard(0).rcc.paced_defers;
    win = Window{};
    /* A stall: longer than 20 us and 3 frame intervals. */
    win.interval =
        rate_bps ? static_cast<uint64_t>(static_cast<double>(o.mtu + 98) * 8 /
                                         static_cast<double>(rate_bps) * static_cast<double>(hz))
                 : 0;
    win.stall_min = std::max<uint64_t>(hz / 50'000, 3 * win.interval);
    rusage ru0;
    getrusage(RUSAGE_THREAD, &ru0);
    win.armed = true;
    const uint64_t need = static_cast<uint64_t>(o.window_ms * 1e-3 * hz);
    double m0 = 0;
    uint64_t c0 = 0;
    for (;;) {
        fill();
        g.rt->poll_once();
        if (!reap())
            return false;
        if (win.started && m0 == 0) {
            m0 = mono_s();
            c0 = rte_rdtsc();
        }
        if (win.started && win.frames >= o.min_frames && win.t_last - win.t_first >= need)
            break;
    }
    win.armed = false;
    rusage ru1;
    getrusage(RUSAGE_THREAD, &ru1);
    out->preempted = static_cast<uint64_t>(ru1.ru_nivcsw - ru0.ru_nivcsw);
    out->nstalls = win.nstalls;
    const double m1 = mono_s();
    const uint64_t c1 = rte_rdtsc();
    out->defers = g.a->shard(0).rcc.paced_defers - defers0;
    /* Drain: every WR completes before the next round changes the rate. */
    for (int spins = 0; outstanding > 0 && spins < 100'000'000; ++spins) {
        g.rt->poll_once();
        if (!reap())
            return false;
    }
    if (outstanding != 0) {
        std::fprintf(stderr, "%u WRs never completed\n", outstanding);
        return false;
    }
    const double dt = static_cast<double>(win.t_last - win.t_first) / static_cast<double>(hz);
    out->window_s = dt;
    out->frames = win.frames;
    out->frame_len = win.frame_len;
    out->max_gap_us = static_cast<double>(win.max_gap) * 1e6 / static_cast<double>(hz);
    out->stall_pct =
        static_cast<double>(win.stall) * 100 / static_cast<double>(win.t_last - win.t_first);
    out->measured_bps = static_cast<double>(win.bytes_before_last) * 8 / dt;
    const double tsc_s = static_cast<double>(c1 - c0) / static_cast<double>(hz);
    out->tsc_vs_mono_ppm = (tsc_s / (m1 - m0) - 1) * 1e6;
    return true;
}

bool parse(int argc, char **argv, Opts *o) {
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        auto val = [&](const char *k) -> const char * {
            const size_t n = std::strlen(k);
            return std::strncmp(a, k, n) == 0 && a[n] == '=' ? a + n + 1 : nullptr;
        };
        if (const char *v = val("--mtu"))
            o->mtu = static_cast<uint32_t>(std::atoi(v));
        else if (const char *v2 = val("--msg"))
            o->msg = static_cast<uint32_t>(std::atoi(v2));
        else if (const char *v3 = val("--reps"))
            o->reps = std::atoi(v3);
        else if (const char *v4 = val("--window-ms"))
            o->window_ms = std::atof(v4);
        else if (const char *v5 = val("--frames"))
            o->min_frames = static_cast<uint64_t>(std::atoll(v5));
        else if (const char *v6 = val("--csv"))
            o->csv = v6;
        else if (const char *v7 = val("--rates")) {
            o->rates_gbps.clear();
            for (const char *s = v7; *s;) {
                char *end = nullptr;
                o->rates_gbps.push_back(std::strtod(s, &end));
                if (end == s)
                    return false;
                s = *end == ',' ? end + 1 : end;
            }
        } else {
            std::fprintf(stderr,
                         "usage: %s [--mtu=4096|2048|1024|512] [--msg=4096] [--reps=5] "
                         "[--window-ms=50] [--frames=2000] [--rates=0.1,0.5,...(Gb/s)] "
                         "[--csv=pacer_accuracy.csv]\n",
                         argv[0]);
            return false;
        }
    }
    return o->mtu == 4096 || o->mtu == 2048 || o->mtu == 1024 || o->mtu == 512;
}

} // namespace

int main(int argc, char **argv) {
    Opts o;
    if (!parse(argc, argv, &o))
        return 2;
    Bench g;
    if (!setup(g, o, argv[0])) {
        std::fprintf(stderr, "bench_pacer: setup failed\n");
        return 1;
    }
    std::FILE *csv = std::fopen(o.csv.c_str(), "w");
    if (csv == nullptr) {
        std::perror(o.csv.c_str());
        return 1;
    }
    std::fprintf(csv, "set_bps,round,measured_bps,error_pct,frames,window_s,frame_len,"
                      "paced_defers,tsc_vs_monotonic_ppm,max_gap_us,stall_pct,stalls,preempted\n");
    std::printf("path MTU %u, %u B RDMA WRITEs, %u WRs posted, window >= %.0f ms and >= %" PRIu64
                " frames, %d rounds; bytes = frame (MAC..ICRC) + %u\n",
                o.mtu, o.msg, kSq, o.window_ms, o.min_frames, o.reps, rc::kEthWireOverhead);
    std::printf("%12s %12s %9s %9s %9s %8s %10s %10s %7s\n", "set Gb/s", "meas Gb/s", "err% min",
                "err% med", "err% max", "frames", "TSC ppm", "maxgap us", "stall%");
    /* Rate 0 first: the path unpaced; its median becomes the last paced rate. */
    std::vector<uint64_t> rates{0};
    for (double r : o.rates_gbps)
        rates.push_back(static_cast<uint64_t>(r * 1e9 + 0.5));
    for (size_t k = 0; k < rates.size(); ++k) {
        const uint64_t r = rates[k];
        std::vector<double> meas, err, ppm, gap, stall;
        uint64_t frames = 0;
        for (int i = 0; i < o.reps; ++i) {
            Round rd;
            if (!run_round(g, o, r, &rd))
                return 1;
            const double e = r ? (rd.measured_bps / static_cast<double>(r) - 1) * 100 : 0;
            meas.push_back(rd.measured_bps);
            err.push_back(e);
            ppm.push_back(rd.tsc_vs_mono_ppm);
            frames = rd.frames;
            std::fprintf(csv,
                         "%" PRIu64 ",%d,%.0f,%.4f,%" PRIu64 ",%.6f,%" PRIu64 ",%" PRIu64
                         ",%.1f,%.1f,%.3f,%" PRIu64 ",%" PRIu64 "\n",
                         r, i, rd.measured_bps, e, rd.frames, rd.window_s, rd.frame_len, rd.defers,
                         rd.tsc_vs_mono_ppm, rd.max_gap_us, rd.stall_pct, rd.nstalls, rd.preempted);
            gap.push_back(rd.max_gap_us);
            stall.push_back(rd.stall_pct);
        }
        const bench::Stats m = bench::stats(meas), e = bench::stats(err), t = bench::stats(ppm),
                           gp = bench::stats(gap), st = bench::stats(stall);
        if (r == 0) {
            std::printf("%12s %12.3f %9s %9s %9s %8" PRIu64 " %10.1f %10.1f %7.3f\n", "unpaced",
                        m.med / 1e9, "-", "-", "-", frames, t.med, gp.med, st.med);
            rates.push_back(static_cast<uint64_t>(m.med)); /* the path's highest rate */
        } else {
            std::printf("%12.3f %12.3f %9.3f %9.3f %9.3f %8" PRIu64 " %10.1f %10.1f %7.3f\n",
                        static_cast<double>(r) / 1e9, m.med / 1e9, e.min, e.med, e.max, frames,
                        t.med, gp.med, st.med);
        }
        std::fflush(stdout);
    }
    std::fclose(csv);
    return 0;
}
