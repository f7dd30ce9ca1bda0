/* SPDX-License-Identifier: BSD-3-Clause */
/* Scale benchmarks of issue 8, through the public API only: one process, two devices on
 * a net_ring pair, embedded mode (the benchmark's threads are the workers).
 *
 *   bench_scale qps     64 B RDMA WRITE message rate with N connected QP pairs. The
 *                       largest N is connected once; smaller N run on the first N of
 *                       those QPs while the others sit idle (connected, in RTS). A fixed
 *                       total window of signaled WRITEs is spread round-robin over the N
 *                       QPs. Also the process RSS per idle and per active QP.
 *   bench_scale idle    write_lat-style ping-pong (perftest's write_lat: each side polls
 *                       the last byte of its buffer) on one QP pair, with 0 vs K idle
 *                       connected QP pairs alongside; K pairs are created and connected
 *                       for their rounds and destroyed after.
 *   bench_scale workers 64 B WRITE message rate with W embedded workers for each W of a
 *                       list (default 1,2), P QP pairs per worker (weak scaling) or N
 *                       pairs in all, spread over the workers (strong scaling); thread
 *                       w, pinned to CPU w, polls worker w and drives the QPs of its CQs;
 *                       ring pair with max(2, W) queues; a fresh Engine per round. Per-
 *                       worker rates, ratios to the list's first W in the same round, and
 *                       the handoff counters (work crossing between workers) per WR.
 *
 * Settings alternate within each round (r = 1..rounds: for each setting), so drift on
 * a shared machine hits them alike. Results: a table (min/median/max over rounds) and
 * CSV rows (--csv FILE appends them) for bench/plot_qp_scale.py.
 *
 * Not a Google Benchmark: rounds must interleave settings, and the setting (65,536
 * connected QPs) is far too costly to rebuild per benchmark. Not run by CI. */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <droce/droce.h>
#include <rte_lcore.h>

#include "bench_stats.h"

using namespace droce;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kRights =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr uint32_t kMsg = 64;
constexpr uint32_t kSlots = 256; /* kMsg-byte slots of a Side's buffer the drivers write */

struct Args {
    std::string mode;
    std::vector<uint32_t> qps = {1, 16, 256, 1024, 16384, 65536};
    uint32_t window = 128; /* qps: total outstanding WRs; workers: per QP */
    uint32_t depth = 2;    /* qps: max_send_wr of QPs beyond the window */
    uint32_t per_qp = 0;   /* qps: 0 = `window` WRs in total over N QPs; D = perftest's
                              -q N -t D: every QP keeps D (at least window/N) outstanding */
    uint32_t rounds = 5;
    double seconds = 1.0;                   /* per measured setting */
    uint32_t idle = 65536;                  /* idle: idle QP pairs */
    uint32_t iters = 20000;                 /* idle: ping-pongs per round */
    bool register_threads = true;           /* workers: threads 1.. become EAL threads */
    std::vector<uint32_t> workers = {1, 2}; /* workers: worker counts (rounds alternate) */
    uint32_t pairs = 2;                     /* workers: QP pairs per worker (weak scaling) */
    uint32_t total_pairs = 0; /* workers: QP pairs in all (strong scaling); 0: weak scaling */
    std::vector<uint32_t> cpus;             /* workers: worker w on cpus[w] (default CPU w) */
    uint16_t queue_stride = 0; /* workers: DeviceConfig::queue_stride (0: the adapter's) */
    bool counters = false;                  /* print device counters per message (first round) */
    std::string csv;
};

double now_s() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

uint64_t rss_bytes() {
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr)
        return 0;
    unsigned long size = 0, res = 0;
    if (std::fscanf(f, "%lu %lu", &size, &res) != 2)
        res = 0;
    std::fclose(f);
    return static_cast<uint64_t>(res) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "bench_scale: %s\n", what.c_str());
    std::exit(1);
}

template <typename T> T must(Result<T> r, const char *what) {
    if (!r)
        die(std::string(what) + ": " + r.status().message());
    return std::move(*r);
}

void must(const Status &s, const char *what) {
    if (!s)
        die(std::string(what) + ": " + s.message());
}

std::vector<std::pair<std::string, uint64_t>> snapshot(const Device &d) { return d.counters(); }

/* Counter deltas per completed WR: where the per-message cost goes (ACKs per WRITE, TX
 * bursts, ...). Gauges (depths, counts of objects) are shown as they are. */
void print_deltas(const char *side, const std::vector<std::pair<std::string, uint64_t>> &before,
                  const Device &d, uint64_t msgs) {
    const auto after = d.counters();
    for (size_t i = 0; i < after.size() && i < before.size(); ++i) {
        const uint64_t delta = after[i].second - before[i].second;
        if (delta != 0 && msgs != 0)
            std::printf("    %s %-28s %12" PRIu64 "  %.3f per WR\n", side, after[i].first.c_str(),
                        delta, static_cast<double>(delta) / static_cast<double>(msgs));
    }
}

void print_counters(const Device &d) {
    for (const auto &[k, v] : d.counters())
        if (v != 0)
            std::fprintf(stderr, "  %s %s = %" PRIu64 "\n", d.name().c_str(), k.c_str(), v);
}

/* ---- set-up -------------------------------------------------------------------- */

std::unique_ptr<Engine> make_engine(uint32_t workers) {
    /* EAL arguments are used by the first Engine only (the EAL stays up). */
    static std::string prefix = "--file-prefix=bench_scale_" + std::to_string(getpid());
    static const char *args[] = {
        "bench_scale", "-l",        "0",           "--no-huge",      "-m",
        "2048",        "--no-pci",  "--no-shconf", "--no-telemetry", prefix.c_str(),
        "--log-level", "*:warning", "--",          nullptr};
    EngineOptions o;
    o.embedded = true;
    o.workers = workers;
    o.log_level = "warn";
    int consumed = 0;
    return must(Engine::create(13, const_cast<char **>(args), &consumed, o), "Engine::create");
}

struct Side {
    Device *dev = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    static constexpr size_t kBufBytes = 1 << 16;
    struct Free {
        void operator()(uint8_t *p) const { std::free(p); }
    };
    std::unique_ptr<uint8_t[], Free> base; /* kBufBytes, page-aligned, registered */
    std::unique_ptr<MemoryRegion> mr;
    std::vector<std::unique_ptr<CompletionQueue>> cqs; /* one per worker */

    void init(Device *d, uint32_t workers, uint32_t cqe) {
        dev = d;
        pd = must(d->alloc_pd(), "alloc_pd");
        /* Page-aligned as perftest's buffers: on a heap address the message slots would
         * straddle cache lines, and two workers' slots would share one. */
        base.reset(static_cast<uint8_t *>(std::aligned_alloc(4096, kBufBytes)));
        if (!base)
            die("out of memory for the buffer");
        std::memset(base.get(), 0, kBufBytes);
        mr = must(pd->reg_mr(base.get(), kBufBytes, kRights), "reg_mr");
        for (uint32_t w = 0; w < workers; ++w)
            cqs.push_back(must(d->create_cq(cqe, static_cast<int>(w)), "create_cq"));
    }
    uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(base.get() + off); }
    void close() {
        mr.reset();
        cqs.clear();
        pd.reset();
    }
};

struct Bed {
    std::unique_ptr<Engine> engine;
    Side a, b;
    void open(uint32_t workers, uint16_t queues, uint32_t max_qps, uint32_t cqe,
              uint16_t queue_stride = 0) {
        engine = make_engine(workers);
        auto ports = must(engine->create_ring_pair(queues), "create_ring_pair");
        DeviceConfig ca;
        ca.port = ports.first;
        ca.ipv4_cidr = "10.77.0.1/24";
        ca.mac = "02:00:00:00:01:01";
        ca.mtu = 1500;
        ca.max_qps = max_qps;
        ca.queue_stride = queue_stride;
        DeviceConfig cb = ca;
        cb.port = ports.second;
        cb.ipv4_cidr = "10.77.0.2/24";
        cb.mac = "02:00:00:00:01:02";
        Device *da = must(engine->open_device(ca), "open_device A");
        Device *db = must(engine->open_device(cb), "open_device B");
        must(engine->start(), "start");
        a.init(da, workers, cqe);
        b.init(db, workers, cqe);
    }
    void close() {
        a.close();
        b.close();
        engine.reset();
    }
};

std::unique_ptr<QueuePair> make_qp(Side &s, uint32_t worker, uint32_t depth) {
    QpInitAttr a;
    a.send_cq = a.recv_cq = s.cqs.at(worker).get();
    a.cap.max_send_wr = depth;
    a.cap.max_recv_wr = 2;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    for (int tries = 0;; ++tries) {
        auto q = s.pd->create_qp(a);
        if (q)
            return std::move(*q);
        /* Freed QPNs come back after a quarantine (~1 s): wait for them. */
        if (q.status().code() != ENOSPC || tries > 30)
            die("create_qp: " + q.status().message());
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

void connect(QueuePair &qp, const Side &peer, uint32_t dqpn, uint32_t rq_psn, uint32_t sq_psn) {
    QpAttr a;
    a.qp_state = QpState::Init;
    a.qp_access_flags = kRights;
    must(qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags), "modify INIT");
    a = QpAttr{};
    a.qp_state = QpState::Rtr;
    a.path_mtu = Mtu::Mtu1024;
    a.dest_qp_num = dqpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.ah_attr.dgid = peer.dev->gids().at(1).gid;
    a.ah_attr.sgid_index = 1;
    must(qp.modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic |
                          kQpMinRnrTimer),
         "modify RTR");
    a = QpAttr{};
    a.qp_state = QpState::Rts;
    a.sq_psn = sq_psn;
    a.timeout = 14; /* ~67 ms */
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    must(qp.modify(a,
                   kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic),
         "modify RTS");
}

/* QP pairs a[i] <-> b[i]. */
struct Pairs {
    std::vector<std::unique_ptr<QueuePair>> a, b;
    void add(Bed &bed, uint32_t worker, uint32_t depth) {
        a.push_back(make_qp(bed.a, worker, depth));
        b.push_back(make_qp(bed.b, worker, depth));
        connect(*a.back(), bed.b, b.back()->qp_num(), 0x100, 0x200);
        connect(*b.back(), bed.a, a.back()->qp_num(), 0x200, 0x100);
    }
    void clear() {
        a.clear();
        b.clear();
    }
};

using droce::bench::Stats;
using droce::bench::stats;

FILE *open_csv(const Args &args) {
    if (args.csv.empty())
        return nullptr;
    FILE *f = std::fopen(args.csv.c_str(), "a");
    if (f == nullptr)
        die("cannot open " + args.csv);
    return f;
}

/* Emits one CSV row to stdout and to the --csv file. */
void csv_row(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void csv_row(FILE *f, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    std::printf("csv,%s\n", line);
    if (f != nullptr)
        std::fprintf(f, "%s\n", line);
}

/* ---- message-rate driver ------------------------------------------------------- */

/* Keeps `window` signaled 64 B WRITEs outstanding over qps[0..n), posting each new WR to
 * the next QP round-robin that has room, and counts completions. One thread, polling
 * `worker` (or the whole engine with worker < 0). */
/* Cache-line aligned: the workers' drivers sit side by side and must not share a line. */
struct alignas(64) Driver {
    Driver(Engine *e, int w, CompletionQueue *c, const Side *s, const Side *d, uint32_t win)
        : engine(e), worker(w), cq(c), src(s), dst(d), window(win) {}
    Engine *engine;
    int worker;
    std::vector<QueuePair *> qps;
    std::vector<uint32_t> depth;
    CompletionQueue *cq;
    const Side *src, *dst;
    uint32_t window;
    bool fill = false; /* perftest's order: fill a QP to its depth, then the next */
    /* The buffer slot of qps[0]; QP i writes slot slot0 + i. Drivers of different workers
     * get disjoint slots, so no two workers write one destination line (sharing that the
     * engine would be blamed for). */
    uint32_t slot0 = 0;
    std::vector<uint32_t> out; /* outstanding per QP */
    uint32_t outstanding = 0;
    uint64_t completed = 0;
    uint64_t posted = 0;

    void poll_engine() {
        if (worker < 0)
            engine->poll();
        else
            engine->poll(static_cast<uint32_t>(worker));
    }

    /* QPs with room for another WR, in round-robin order, each at most once: a post
     * never scans QPs that are full (at 65,536 QPs a scan would cost more than the
     * engine). */
    std::vector<uint32_t> room;
    std::vector<uint8_t> queued;
    size_t room_head = 0, room_count = 0;

    void room_push(uint32_t i) {
        if (queued[i] || out[i] >= depth[i])
            return;
        queued[i] = 1;
        room[(room_head + room_count++) % room.size()] = i;
    }

    void reset() {
        out.assign(qps.size(), 0);
        queued.assign(qps.size(), 0);
        room.assign(qps.size(), 0);
        room_head = room_count = 0;
        outstanding = 0;
        for (uint32_t i = 0; i < qps.size(); ++i)
            room_push(i);
    }

    void post_to(uint32_t i) {
        SendWr w;
        w.wr_id = i;
        w.opcode = WrOpcode::RdmaWrite;
        w.send_flags = kSendSignaled;
        w.num_sge = 1;
        const size_t off = ((slot0 + i) % kSlots) * kMsg;
        w.sg_list[0] = Sge{src->addr(off), kMsg, src->mr->lkey()};
        w.remote_addr = dst->addr(off);
        w.rkey = dst->mr->rkey();
        Status s = qps[i]->post_send(w);
        if (!s)
            die("post_send on QP " + std::to_string(qps[i]->qp_num()) + ": " + s.message());
        ++out[i];
        ++outstanding;
        ++posted;
    }

    /* Posts one WR to the next QP with room (fill: as many as the QP and the window
     * take, as perftest fills each QP to its depth). False when no QP has room. */
    bool post_one() {
        if (room_count == 0)
            return false;
        const uint32_t i = room[room_head];
        room_head = room_head + 1 == room.size() ? 0 : room_head + 1;
        --room_count;
        queued[i] = 0;
        do
            post_to(i);
        while (fill && out[i] < depth[i] && outstanding < window);
        room_push(i);
        return true;
    }

    void reap(const Wc *wc, int k) {
        for (int j = 0; j < k; ++j) {
            if (wc[j].status != WcStatus::Success)
                die("completion " + std::string(wc_status_str(wc[j].status)) + " on QP " +
                    std::to_string(wc[j].qp_num));
            --out[wc[j].wr_id];
            room_push(static_cast<uint32_t>(wc[j].wr_id));
        }
        outstanding -= static_cast<uint32_t>(k);
        completed += static_cast<uint64_t>(k);
    }

    /* One loop iteration: top the window up, poll, reap. */
    void step() {
        while (outstanding < window && post_one()) {
        }
        poll_engine();
        Wc wc[64];
        reap(wc, cq->poll(wc, 64));
    }

    /* Runs for `seconds` after `warmup` seconds; returns messages per second. A stall of
     * 10 s (no completion) is an engine bug: report and exit. */
    double run(double warmup, double seconds, const Device *da, const Device *db) {
        reset();
        const double t_start = now_s();
        double t0 = 0, last_progress = t_start;
        uint64_t c0 = 0, seen = 0;
        bool measuring = false;
        for (uint64_t it = 0;; ++it) {
            step();
            if ((it & 63) != 0)
                continue;
            const double t = now_s();
            if (completed != seen) {
                seen = completed;
                last_progress = t;
            } else if (t - last_progress > 10) {
                std::fprintf(stderr,
                             "bench_scale: no completion for 10 s (%u outstanding on %zu QPs, "
                             "%" PRIu64 " done): engine stall\n",
                             outstanding, qps.size(), completed);
                print_counters(*da);
                print_counters(*db);
                std::exit(2);
            }
            if (!measuring && t - t_start >= warmup) {
                measuring = true;
                t0 = t;
                c0 = completed;
            } else if (measuring && t - t0 >= seconds) {
                const double rate = static_cast<double>(completed - c0) / (t - t0);
                drain(da, db);
                return rate;
            }
        }
    }

    void drain(const Device *da, const Device *db) {
        const double t0 = now_s();
        while (outstanding > 0) {
            poll_engine();
            Wc wc[64];
            reap(wc, cq->poll(wc, 64));
            if (now_s() - t0 > 10) {
                std::fprintf(stderr, "bench_scale: drain stuck with %u outstanding\n", outstanding);
                print_counters(*da);
                print_counters(*db);
                std::exit(2);
            }
        }
    }
};

/* ---- qps ----------------------------------------------------------------------- */

int run_qps(const Args &args) {
    const uint32_t nmax = *std::max_element(args.qps.begin(), args.qps.end());
    Bed bed;
    /* QPNs 0x11 .. max_qps-1: room for nmax plus the reserved low numbers. */
    uint32_t max_qps = 1024;
    while (max_qps < nmax + 0x11)
        max_qps *= 2;
    const uint32_t qp_depth = std::max(args.depth, args.per_qp);
    /* The CQ holds every outstanding WR's completion (droce caps a CQ at 2^20 entries). */
    bed.open(
        1, 1, max_qps,
        std::min<uint32_t>(
            std::max<uint32_t>(2 * args.window, args.per_qp ? nmax * qp_depth : 0) + 64, 1u << 20));
    FILE *csv = open_csv(args);

    const uint64_t rss0 = rss_bytes();
    Pairs p;
    p.a.reserve(nmax);
    p.b.reserve(nmax);
    const double t0 = now_s();
    for (uint32_t i = 0; i < nmax; ++i)
        /* The first `window` QPs also serve the small N, where one QP holds up to the
         * whole window; the rest need room for one or two. */
        p.add(bed, 0, i < args.window ? args.window : qp_depth);
    const double t_connect = now_s() - t0;
    const uint64_t rss1 = rss_bytes();
    const double idle_per_qp = static_cast<double>(rss1 - rss0) / (2.0 * static_cast<double>(nmax));
    std::printf("connected %u QP pairs (%u QPs) in %.1f s (%.0f QPs/s); RSS +%.1f MiB = %.0f "
                "B per idle connected QP (depth %u/%u, both sides counted)\n",
                nmax, 2 * nmax, t_connect, 2.0 * nmax / t_connect,
                static_cast<double>(rss1 - rss0) / (1 << 20), idle_per_qp, qp_depth, 2u);
    std::fflush(stdout);

    std::vector<std::vector<double>> rate(args.qps.size());
    uint64_t rss_active = 0;
    for (uint32_t r = 0; r < args.rounds; ++r) {
        for (size_t k = 0; k < args.qps.size(); ++k) {
            const uint32_t n = args.qps[k];
            /* per_qp: each QP keeps its own depth outstanding, as ib_write_bw -q N does. */
            const uint32_t each =
                args.per_qp ? std::max(args.per_qp, (args.window + n - 1) / n) : 0;
            Driver d(bed.engine.get(), -1, bed.a.cqs[0].get(), &bed.a, &bed.b,
                     args.per_qp ? std::min(n * each, n == 1 ? args.window : ~0u) : args.window);
            d.fill = args.per_qp != 0;
            for (uint32_t i = 0; i < n; ++i) {
                d.qps.push_back(p.a[i].get());
                d.depth.push_back(args.per_qp
                                      ? std::min(each, i < args.window ? args.window : qp_depth)
                                  : i < args.window ? args.window
                                                    : args.depth);
            }
            /* Warm-up: at least one pass over every QP (first touch of its state). */
            const double warm = 0.2 + (n > 4096 ? 0.3 : 0.0);
            const bool count = args.counters && r == 0;
            const auto ca = count ? snapshot(*bed.a.dev) : decltype(snapshot(*bed.a.dev)){};
            const auto cb = count ? snapshot(*bed.b.dev) : decltype(ca){};
            const double mpps = d.run(warm, args.seconds, bed.a.dev, bed.b.dev) / 1e6;
            if (count) {
                std::printf("  counters N=%u, %" PRIu64 " WRs:\n", n, d.completed);
                print_deltas("A", ca, *bed.a.dev, d.completed);
                print_deltas("B", cb, *bed.b.dev, d.completed);
            }
            rate[k].push_back(mpps);
            std::printf("round %u N=%u: %.3f Mpps (%u idle QP pairs alongside)\n", r + 1, n, mpps,
                        nmax - n);
            std::fflush(stdout);
            /* Transport label: "loopback", or "loopback-tD" for perftest's -t D per QP. */
            csv_row(csv, "qps,loopback%s,%u,%u,%.4f",
                    args.per_qp ? ("-t" + std::to_string(args.per_qp)).c_str() : "", n, r + 1,
                    mpps);
            if (n == nmax && rss_active == 0)
                rss_active = rss_bytes();
        }
    }
    const double active_extra = rss_active > rss1 ? static_cast<double>(rss_active - rss1) /
                                                        (2.0 * static_cast<double>(nmax))
                                                  : 0.0;

    if (args.per_qp)
        std::printf("\n64 B RDMA WRITE, %u WRs outstanding per QP (at least %u in total; "
                    "ib_write_bw -q N -t %u), loopback (net_ring), 1 worker, %u rounds x %.1f s\n",
                    args.per_qp, args.window, args.per_qp, args.rounds, args.seconds);
    else
        std::printf("\n64 B RDMA WRITE, window %u WRs over N QPs, loopback (net_ring), 1 worker, "
                    "%u rounds x %.1f s\n",
                    args.window, args.rounds, args.seconds);
    /* Ratios are taken within each round (same-run), then summarised: a round slowed by
     * another job on the machine slows its 1-QP setting as well. */
    size_t base = args.qps.size();
    for (size_t k = 0; k < args.qps.size(); ++k)
        if (args.qps[k] == 1)
            base = k;
    std::printf("| QPs   | Mpps min | Mpps median | Mpps max | ratio to 1 QP, same round: "
                "min / median / max |\n");
    std::printf("|-------|----------|-------------|----------|-------------------------------"
                "-----------|\n");
    for (size_t k = 0; k < args.qps.size(); ++k) {
        const Stats s = stats(rate[k]);
        std::string ratio = "-";
        if (base < args.qps.size()) {
            std::vector<double> rr;
            for (size_t r = 0; r < rate[k].size(); ++r)
                rr.push_back(rate[k][r] / rate[base][r]);
            const Stats q = stats(rr);
            char b[64];
            std::snprintf(b, sizeof b, "%.2f / %.2f / %.2f", q.min, q.med, q.max);
            ratio = b;
        }
        std::printf("| %5u | %8.3f | %11.3f | %8.3f | %40s |\n", args.qps[k], s.min, s.med, s.max,
                    ratio.c_str());
    }
    std::printf("\nRSS per idle connected QP: %.0f B; extra per QP once active (all %u pairs "
                "carried traffic): %.0f B; per active QP: %.0f B\n",
                idle_per_qp, nmax, active_extra, idle_per_qp + active_extra);
    csv_row(csv, "rss,loopback,idle_bytes_per_qp,%u,%.0f", nmax, idle_per_qp);
    csv_row(csv, "rss,loopback,active_bytes_per_qp,%u,%.0f", nmax, idle_per_qp + active_extra);
    std::fflush(stdout);
    if (csv != nullptr)
        std::fclose(csv);
    p.clear();
    bed.close();
    return 0;
}

/* ---- idle ---------------------------------------------------------------------- */

/* One write_lat ping-pong: A writes 64 B into B whose last byte is the iteration's tag;
 * B, seeing it, writes back; A sees its own last byte change. Returns RTT/2 in ns. */
struct PingPong {
    Engine *engine;
    QueuePair *qa, *qb;
    CompletionQueue *ca, *cb;
    Side *a, *b;
    uint32_t unreaped_a = 0, unreaped_b = 0;
    static constexpr size_t kDst = 0, kSrc = 4096;

    void post(QueuePair *qp, Side *from, Side *to, uint8_t tag) {
        from->base[kSrc + kMsg - 1] = tag;
        SendWr w;
        w.opcode = WrOpcode::RdmaWrite;
        w.send_flags = kSendSignaled;
        w.num_sge = 1;
        w.sg_list[0] = Sge{from->addr(kSrc), kMsg, from->mr->lkey()};
        w.remote_addr = to->addr(kDst);
        w.rkey = to->mr->rkey();
        Status s = qp->post_send(w);
        if (!s)
            die("ping-pong post_send: " + s.message());
    }
    void reap() {
        Wc wc[16];
        for (CompletionQueue *cq : {ca, cb}) {
            const int k = cq->poll(wc, 16);
            for (int j = 0; j < k; ++j)
                if (wc[j].status != WcStatus::Success)
                    die("ping-pong completion: " + std::string(wc_status_str(wc[j].status)));
        }
    }
    void wait_byte(const Side *s, uint8_t tag) {
        const volatile uint8_t *p = s->base.get() + kDst + kMsg - 1;
        const double t0 = now_s();
        uint32_t spins = 0;
        while (*p != tag) {
            engine->poll();
            reap();
            if (++spins % 4096 == 0 && now_s() - t0 > 10) {
                std::fprintf(stderr, "bench_scale: ping-pong stuck\n");
                print_counters(*a->dev);
                print_counters(*b->dev);
                std::exit(2);
            }
        }
    }
    double once(uint32_t i) {
        const uint8_t tag = static_cast<uint8_t>(i % 255 + 1);
        const auto t0 = Clock::now();
        post(qa, a, b, tag);
        wait_byte(b, tag);
        post(qb, b, a, tag);
        wait_byte(a, tag);
        const auto t1 = Clock::now();
        reap();
        return std::chrono::duration<double, std::nano>(t1 - t0).count() / 2;
    }
};

int run_idle(const Args &args) {
    Bed bed;
    /* Room for the idle set twice over: a destroyed set's QPNs sit in quarantine. */
    uint32_t max_qps = 1024;
    while (max_qps < 2 * args.idle + 64)
        max_qps *= 2;
    bed.open(1, 1, max_qps, 64);
    FILE *csv = open_csv(args);
    Pairs pp;
    pp.add(bed, 0, 16);
    PingPong ping{bed.engine.get(),   pp.a[0].get(), pp.b[0].get(), bed.a.cqs[0].get(),
                  bed.b.cqs[0].get(), &bed.a,        &bed.b};
    for (uint32_t i = 0; i < 2000; ++i)
        ping.once(i);

    const uint32_t settings[2] = {0, args.idle};
    std::vector<double> med[2], p99[2];
    for (uint32_t r = 0; r < args.rounds; ++r) {
        /* ABBA: 0 then K on odd rounds, K then 0 on even ones. */
        for (int k0 = 0; k0 < 2; ++k0) {
            const int k = r % 2 == 0 ? k0 : 1 - k0;
            Pairs idle;
            if (settings[k] != 0) {
                const uint64_t rss0 = rss_bytes();
                const double t0 = now_s();
                idle.a.reserve(settings[k]);
                idle.b.reserve(settings[k]);
                for (uint32_t i = 0; i < settings[k]; ++i)
                    idle.add(bed, 0, 2);
                std::printf("round %u: %u idle QP pairs connected in %.1f s, RSS +%.1f MiB\n",
                            r + 1, settings[k], now_s() - t0,
                            static_cast<double>(rss_bytes() - rss0) / (1 << 20));
            }
            for (uint32_t i = 0; i < 1000; ++i) /* warm-up */
                ping.once(i);
            std::vector<double> lat(args.iters);
            for (uint32_t i = 0; i < args.iters; ++i)
                lat[i] = ping.once(i);
            std::sort(lat.begin(), lat.end());
            const double m = lat[lat.size() / 2], q99 = lat[lat.size() * 99 / 100];
            med[k].push_back(m);
            p99[k].push_back(q99);
            std::printf("round %u idle=%u: typical %.2f us, p99 %.2f us\n", r + 1, settings[k],
                        m / 1000, q99 / 1000);
            std::fflush(stdout);
            csv_row(csv, "idle,loopback,%u,%u,%.1f,%.1f", settings[k], r + 1, m, q99);
            idle.clear();
        }
    }
    const Stats s0 = stats(med[0]), s1 = stats(med[1]);
    std::printf("\n64 B write_lat (poll on last byte), 1 QP pair, %u iterations per round, "
                "%u rounds, typical = median of RTT/2\n",
                args.iters, args.rounds);
    std::vector<double> rr;
    for (size_t r = 0; r < med[0].size() && r < med[1].size(); ++r)
        rr.push_back(med[1][r] / med[0][r]);
    const Stats q = stats(rr);
    std::printf("| idle QP pairs | typical us min | median | max | ratio to 0 idle, same round: "
                "min / median / max |\n");
    std::printf("|---------------|----------------|--------|-----|-------------------------------"
                "---------------|\n");
    std::printf("| %u | %.3f | %.3f | %.3f | 1 |\n", 0u, s0.min / 1e3, s0.med / 1e3, s0.max / 1e3);
    std::printf("| %u | %.3f | %.3f | %.3f | %.3f / %.3f / %.3f |\n", args.idle, s1.min / 1e3,
                s1.med / 1e3, s1.max / 1e3, q.min, q.med, q.max);
    std::fflush(stdout);
    if (csv != nullptr)
        std::fclose(csv);
    pp.clear();
    bed.close();
    return 0;
}

/* ---- workers ------------------------------------------------------------------- */

/* Worker w runs on CPU w (mod the CPUs there are): a run that moved threads around would
 * measure the scheduler, not the engine. */
void pin_to_cpu(unsigned cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % std::max(1u, std::thread::hardware_concurrency()), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

struct alignas(64) WorkerResult {
    double mpps = 0;
};

/* Counters that show work crossing between workers: frames handed to another worker's
 * RX or TX queue, and frames freed by a worker whose pool did not build them. Zero when
 * every QP's traffic stays on its worker (an engine without a counter reads 0). */
constexpr const char *kSharingCounters[] = {"rx_handoff", "tx_handoff", "rx_foreign_pool"};

uint64_t counter_sum(const Device &a, const Device &b, const char *name) {
    uint64_t v = 0;
    for (const Device *d : {&a, &b})
        for (const auto &[k, x] : d->counters())
            if (k == name)
                v += x;
    return v;
}

struct WorkersRound {
    double mpps = 0;
    std::vector<double> per_worker;
    std::vector<uint64_t> sharing; /* kSharingCounters' deltas over the round */
    uint64_t completed = 0;
};

/* QP pairs of a round with nw workers: args.pairs on each (weak scaling), or
 * args.total_pairs over them all (strong scaling). */
uint32_t round_pairs(const Args &args, uint32_t nw) {
    return args.total_pairs != 0 ? args.total_pairs : nw * args.pairs;
}

/* nw workers, round_pairs() QP pairs (pair q on worker q % nw, both sides), one thread
 * per worker polling it and driving the QPs of its CQ. */
WorkersRound run_workers_round(const Args &args, uint32_t nw) {
    const uint32_t n = round_pairs(args, nw);
    const uint32_t most = (n + nw - 1) / nw; /* pairs of the busiest worker */
    Bed bed;
    bed.open(nw, static_cast<uint16_t>(std::max(2u, nw)), 4096, 4 * args.window * most + 64,
             args.queue_stride);
    Pairs p;
    for (uint32_t q = 0; q < n; ++q)
        p.add(bed, q % nw, args.window);
    std::vector<Driver> drivers;
    for (uint32_t w = 0; w < nw; ++w) {
        Driver d(bed.engine.get(), nw > 1 ? static_cast<int>(w) : -1, bed.a.cqs[w].get(), &bed.a,
                 &bed.b, 0);
        d.slot0 = w * most;
        for (uint32_t q = w; q < n; q += nw) {
            d.qps.push_back(p.a[q].get());
            d.depth.push_back(args.window);
            d.window += args.window;
        }
        drivers.push_back(std::move(d));
    }
    WorkersRound out;
    for (const char *c : kSharingCounters)
        out.sharing.push_back(counter_sum(*bed.a.dev, *bed.b.dev, c));
    std::vector<WorkerResult> res(nw);
    std::atomic<uint32_t> ready{0};
    auto body = [&](uint32_t w) {
        pin_to_cpu(w < args.cpus.size() ? args.cpus[w] : w);
        if (w != 0 && args.register_threads && rte_thread_register() != 0)
            die("rte_thread_register failed");
        ready.fetch_add(1);
        while (ready.load() < nw)
            ;
        res[w].mpps = drivers[w].run(0.3, args.seconds, bed.a.dev, bed.b.dev) / 1e6;
        if (w != 0 && args.register_threads)
            rte_thread_unregister();
    };
    std::vector<std::thread> th;
    for (uint32_t w = 1; w < nw; ++w)
        th.emplace_back(body, w);
    body(0);
    for (auto &t : th)
        t.join();
    for (size_t i = 0; i < out.sharing.size(); ++i)
        out.sharing[i] = counter_sum(*bed.a.dev, *bed.b.dev, kSharingCounters[i]) - out.sharing[i];
    for (uint32_t w = 0; w < nw; ++w) {
        out.mpps += res[w].mpps;
        out.per_worker.push_back(res[w].mpps);
        out.completed += drivers[w].completed;
    }
    p.clear();
    bed.close();
    return out;
}

void print_workers_round(uint32_t r, uint32_t nw, const WorkersRound &w) {
    std::printf("round %u W=%u: %.3f Mpps (per worker:", r + 1, nw, w.mpps);
    for (size_t i = 0; i < w.per_worker.size(); ++i)
        std::printf(" %.3f", w.per_worker[i]);
    std::printf(")");
    for (size_t i = 0; i < w.sharing.size(); ++i)
        std::printf(" %s %.4f/WR", kSharingCounters[i],
                    w.completed ? static_cast<double>(w.sharing[i]) / w.completed : 0.0);
    std::printf("\n");
    std::fflush(stdout);
}

int run_workers(const Args &args) {
    FILE *csv = open_csv(args);
    /* The kind of the CSV rows (bench/plot_workers.py): the spacing asked for, if any. */
    std::string kind = args.total_pairs != 0 ? "workers_strong" : "workers";
    if (args.queue_stride != 0)
        kind += "_stride" + std::to_string(args.queue_stride);
    const std::vector<uint32_t> &ws = args.workers;
    std::vector<std::vector<double>> rate(ws.size()), per_worker(ws.size()), ratio(ws.size());
    for (uint32_t r = 0; r < args.rounds; ++r) {
        std::vector<double> this_round(ws.size());
        for (size_t k0 = 0; k0 < ws.size(); ++k0) {
            const size_t k = r % 2 == 0 ? k0 : ws.size() - 1 - k0; /* ABBA over the list */
            const WorkersRound w = run_workers_round(args, ws[k]);
            print_workers_round(r, ws[k], w);
            this_round[k] = w.mpps;
            rate[k].push_back(w.mpps);
            for (double x : w.per_worker)
                per_worker[k].push_back(x);
            csv_row(csv, "%s,loopback,%u,%u,%.4f", kind.c_str(), ws[k], r + 1, w.mpps);
        }
        for (size_t k = 0; k < ws.size(); ++k)
            ratio[k].push_back(this_round[k] / this_round[0]);
    }
    const std::string pairs = args.total_pairs != 0
                                  ? std::to_string(args.total_pairs) + " QP pairs in all"
                                  : std::to_string(args.pairs) + " QP pairs per worker";
    const std::string stride =
        args.queue_stride != 0 ? std::to_string(args.queue_stride) : std::string("the adapter's");
    std::printf("\n64 B RDMA WRITE, %s, window %u per QP, embedded workers "
                "(worker w on CPU w), ring pair for max(2, W) workers, queue stride %s, %u "
                "rounds x %.1f s%s\n",
                pairs.c_str(), args.window, stride.c_str(), args.rounds, args.seconds,
                args.register_threads ? "" : ", worker threads NOT EAL threads");
    std::printf("| workers | Mpps min | Mpps median | Mpps max | x W=%u, same round: min / median "
                "/ max | per worker median (min-max) |\n",
                ws[0]);
    std::printf("|---|---|---|---|---|---|\n");
    for (size_t k = 0; k < ws.size(); ++k) {
        const Stats s = stats(rate[k]), q = stats(ratio[k]), pw = stats(per_worker[k]);
        std::printf("| %u | %.3f | %.3f | %.3f | %.2f / %.2f / %.2f | %.3f (%.3f-%.3f) |\n", ws[k],
                    s.min, s.med, s.max, q.min, q.med, q.max, pw.med, pw.min, pw.max);
    }
    if (csv != nullptr)
        std::fclose(csv);
    return 0;
}

/* opt's value: a comma-separated list of numbers in [lo, hi]. */
std::vector<uint32_t> parse_list(const char *opt, const char *s, unsigned long lo = 1,
                                 unsigned long hi = 1u << 23) {
    std::vector<uint32_t> v;
    for (const char *p = s;;) {
        char *end = nullptr;
        const unsigned long x = std::strtoul(p, &end, 10);
        if (end == p || *p == '-' || x < lo || x > hi || (*end != ',' && *end != '\0'))
            die(std::string(opt) + ": '" + s + "' is not a comma-separated list of numbers in " +
                std::to_string(lo) + ".." + std::to_string(hi));
        v.push_back(static_cast<uint32_t>(x));
        if (*end == '\0')
            return v;
        p = end + 1;
    }
}

/* opt's value: one number in [lo, hi]. */
uint32_t parse_count(const char *opt, const char *s, unsigned long lo = 1,
                     unsigned long hi = 1u << 23) {
    char *end = nullptr;
    const unsigned long x = std::strtoul(s, &end, 10);
    if (end == s || *s == '-' || *end != '\0' || x < lo || x > hi)
        die(std::string(opt) + ": '" + s + "' is not a number in " + std::to_string(lo) + ".." +
            std::to_string(hi));
    return static_cast<uint32_t>(x);
}

/* opt's value: a positive number of seconds. */
double parse_seconds(const char *opt, const char *s) {
    char *end = nullptr;
    const double x = std::strtod(s, &end);
    if (end == s || *end != '\0' || !(x > 0) || x > 3600)
        die(std::string(opt) + ": '" + s + "' is not a number of seconds in (0, 3600]");
    return x;
}

void usage() {
    std::printf(
        "usage: bench_scale qps|idle|workers [options]\n"
        "  --qps=LIST        qps: QP pair counts (default 1,16,256,1024,16384,65536)\n"
        "  --window=N        qps: total outstanding WRs (default 128); workers: per QP (64)\n"
        "  --depth=N         qps: max_send_wr of QPs beyond the first window (default 2)\n"
        "  --per-qp=D        qps: every QP keeps D WRs outstanding (at least window/N), filled\n"
        "                    QP by QP as ib_write_bw -q N -t D does (default 0: window in total)\n"
        "  --idle=N          idle: idle connected QP pairs (default 65536)\n"
        "  --iters=N         idle: ping-pongs per round (default 20000)\n"
        "  --rounds=N        rounds (default 5)\n"
        "  --seconds=S       measured seconds per setting and round (default 1)\n"
        "  --counters        print device counter deltas per completed WR (first round)\n"
        "  --workers=LIST    workers: worker counts (default 1,2; the first is the ratios' base)\n"
        "  --pairs=P         workers: QP pairs per worker (default 2; weak scaling)\n"
        "  --total-pairs=N   workers: N QP pairs in all, pair q on worker q %% W (strong\n"
        "                    scaling; N at least the largest W)\n"
        "  --cpus=LIST       workers: worker w runs on the w-th CPU of LIST, CPUs of this machine\n"
        "                    (default: CPU w; --workers=1 --cpus=1 tells a slow CPU from a slow\n"
        "                    second worker)\n"
        "  --queue-stride=N  workers: worker w on queue w x N of the ring pair (1..16; default:\n"
        "                    the adapter's, 4 for net_ring as the queues allow; 1 = neighbours)\n"
        "  --no-register     workers: leave threads 1.. non-EAL threads (no mempool cache)\n"
        "  --csv=FILE        also append CSV rows to FILE\n");
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2) {
        usage();
        return 1;
    }
    Args args;
    args.mode = argv[1];
    bool window_given = false;
    for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        auto val = [&](const char *name) -> const char * {
            const std::string pre = std::string(name) + "=";
            return a.rfind(pre, 0) == 0 ? argv[i] + pre.size() : nullptr;
        };
        const char *v;
        if ((v = val("--qps")))
            args.qps = parse_list("--qps", v);
        else if ((v = val("--window")))
            args.window = parse_count("--window", v), window_given = true;
        else if ((v = val("--per-qp")))
            args.per_qp = parse_count("--per-qp", v, 0);
        else if ((v = val("--depth")))
            args.depth = parse_count("--depth", v);
        else if ((v = val("--idle")))
            args.idle = parse_count("--idle", v, 0);
        else if ((v = val("--iters")))
            args.iters = parse_count("--iters", v);
        else if ((v = val("--rounds")))
            args.rounds = parse_count("--rounds", v);
        else if ((v = val("--seconds")))
            args.seconds = parse_seconds("--seconds", v);
        else if ((v = val("--workers")))
            args.workers = parse_list("--workers", v);
        else if ((v = val("--pairs")))
            args.pairs = parse_count("--pairs", v);
        else if ((v = val("--total-pairs")))
            args.total_pairs = parse_count("--total-pairs", v);
        else if ((v = val("--cpus")))
            args.cpus =
                parse_list("--cpus", v, 0, std::max(1u, std::thread::hardware_concurrency()) - 1);
        else if ((v = val("--queue-stride")))
            args.queue_stride = static_cast<uint16_t>(parse_count("--queue-stride", v, 1, 16));
        else if ((v = val("--csv")))
            args.csv = v;
        else if (a == "--counters")
            args.counters = true;
        else if (a == "--no-register")
            args.register_threads = false;
        else {
            usage();
            return 1;
        }
    }
    if (args.window == 0 || args.depth == 0 || args.rounds == 0 || args.iters == 0 ||
        args.pairs == 0 || args.seconds <= 0)
        die("window, depth, rounds, iters, pairs and seconds must be positive");
    for (uint32_t w : args.workers) {
        if (w > 16)
            die("at most 16 workers (kMaxWorkers)");
        if (args.total_pairs != 0 && args.total_pairs < w)
            die("--total-pairs must be at least the largest worker count (a worker without "
                "QPs measures nothing)");
    }
    if (args.queue_stride != 0 && args.mode != "workers")
        die("--queue-stride is for the workers mode (one worker has nothing to space)");
    if (args.mode == "qps")
        return run_qps(args);
    if (args.mode == "idle")
        return run_idle(args);
    if (args.mode == "workers") {
        if (!window_given)
            args.window = 64;
        return run_workers(args);
    }
    usage();
    return 1;
}
