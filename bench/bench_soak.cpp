/* SPDX-License-Identifier: BSD-3-Clause */
/* Soak (issue 15): a long mixed RC workload that must lose nothing. Two droce devices A
 * and B in one process (embedded engine, a net_ring pair: bench/flood.h's set-up), N QP
 * pairs, one WR outstanding per QP, each WR a random op (RDMA WRITE, RDMA READ, SEND,
 * FETCH_ADD, CMP_SWAP) of a random size (log-uniform 1 B .. --max-size; atomics 8 B),
 * every byte checked at completion:
 *   WRITE  A's source pattern must be in B's window (B ACKs after placing it);
 *   READ   B's window is filled with a fresh pattern first, A's sink must hold it;
 *   SEND   B's posted receive must hold A's pattern, with the right byte_len;
 *   atomic the returned value must be the one the driver tracks for B's 8-byte word,
 *          and the word must hold the new value afterwards.
 * Every --interval seconds one CSV row: WRs completed, data and WR errors, RSS, engine
 * mbufs in use, latency (post to completion) p50/p99 of the interval, retransmissions.
 * Exit status 1 on any data error, WR error or a WR that never completes.
 *
 *   bench_soak [--minutes=M] [--seconds=S] [--qps=1024] [--max-size=65536]
 *              [--interval=60] [--csv=FILE] [--seed=N]
 *              [--loss=P] [--dup=P] [--reorder=P] [--corrupt=P] [--ack-timeout=E]
 *              [--memif=DIR [--workers=N]] [--inflight-bytes=B]
 *
 * --inflight-bytes=B: WRs whose bytes would take the total in flight over B wait, in
 * posting order (a QP still has one WR at a time): 1,024 QPs of up to 1 MiB each would
 * otherwise keep far more in flight than a forwarder's buffer holds, and the go-back-N
 * storm that follows retries a QP out (retry exceeded) before it teaches anything.
 *
 * With any fault probability above 0 the two devices talk through bench/fault_wire.h (a
 * copying wire that loses, duplicates, reorders and corrupts frames) instead of a plain
 * net_ring pair, and the summary adds the faults injected.
 *
 * --memif=DIR: the devices are two net_memif clients (sockets DIR/a.sock and DIR/b.sock)
 * instead, joined by another process that serves both sockets (droce-fabric with its
 * --loss --dup --reorder --corrupt --delay-us: bench/soak_memif.sh), and the engine runs in
 * worker mode with --workers=N workers (default 2; lcores float over the CPUs there are,
 * idle workers sleep, as the tools' engines do), QPs spread over the workers' CQs.
 *
 * Not run by CI (./dev.sh soak [minutes]). */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "fault_wire.h"
#include "flood.h"

using namespace droce;

namespace {

enum class Op : uint8_t { Write, Read, Send, FetchAdd, CmpSwap, Count_ };
const char *op_name(Op o) {
    static const char *n[] = {"write", "read", "send", "fetch_add", "cmp_swap"};
    return n[static_cast<size_t>(o)];
}

struct Args {
    double seconds = 60;
    uint32_t qps = 1024;
    uint32_t max_size = 65536;
    double interval = 60;
    std::string csv;
    uint64_t seed = 1;
    bench::FaultProfile faults;
    std::string memif; /* socket directory: memif mode */
    uint32_t workers = 2;
    /* local ACK timeout exponent: a memif run's queues (a forwarder on cores it shares with
     * the soak) hold a QP's frames longer than an in-process wire does */
    uint8_t ack_timeout = 14;
    /* bytes of WRs in flight at most (0: no limit; one WR per QP is the only limit) */
    uint64_t inflight_bytes = 0;
};

[[noreturn]] void die(const std::string &what) {
    std::fprintf(stderr, "bench_soak: %s\n", what.c_str());
    std::exit(2);
}

uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}

uint64_t rss_kib() {
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long size = 0, res = 0;
    const int n = std::fscanf(f, "%lu %lu", &size, &res);
    std::fclose(f);
    return n == 2 ? res * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) / 1024 : 0;
}

uint64_t counter(const Device &d, const char *name) {
    uint64_t v = 0;
    for (const auto &[k, x] : d.counters())
        if (k == name)
            v += x;
    return v;
}

uint8_t pat(uint64_t seed, uint32_t i) {
    const uint64_t x = (seed * 0x9E3779B97F4A7C15ull) ^ (i * 0xBF58476D1CE4E5B9ull);
    return static_cast<uint8_t>(x >> 29);
}

/* One side's memory: per QP a window of max_size bytes (src: what this side sends or lets
 * be read, dst: what it receives or has read: the same bytes, as a QP has one WR in
 * flight at a time; two regions over them for least privilege; half the memory at 1 MiB
 * x 1,024 QPs) and 8-byte atomic words. */
struct Mem {
    std::vector<uint8_t> buf;
    uint8_t *src = nullptr, *dst = nullptr;
    std::vector<uint64_t> words;
    std::unique_ptr<MemoryRegion> mr_src, mr_dst, mr_words;
};

struct Track {
    Op op = Op::Write;
    uint32_t len = 0;
    uint64_t seed = 0;
    uint64_t posted_at = 0;
    uint64_t expect_word = 0; /* B's atomic word as the driver knows it */
    uint64_t new_word = 0;
    bool send_done = false, recv_done = false; /* SEND: both completions seen */
    bool busy = false;
};

double probability(const char *key, const char *v) {
    char *end = nullptr;
    const double p = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(p >= 0 && p <= 0.5))
        die(std::string("bad ") + key + " " + v + " (a probability, 0..0.5)");
    return p;
}

Args parse(int argc, char **argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        auto val = [&](const char *k) -> const char * {
            const size_t n = std::strlen(k);
            return s.compare(0, n, k) == 0 && s.size() > n && s[n] == '=' ? s.c_str() + n + 1
                                                                          : nullptr;
        };
        const char *v;
        if ((v = val("--minutes")))
            a.seconds = 60 * std::atof(v);
        else if ((v = val("--seconds")))
            a.seconds = std::atof(v);
        else if ((v = val("--qps")))
            a.qps = static_cast<uint32_t>(std::atoi(v));
        else if ((v = val("--max-size")))
            a.max_size = static_cast<uint32_t>(std::atoi(v));
        else if ((v = val("--interval")))
            a.interval = std::atof(v);
        else if ((v = val("--csv")))
            a.csv = v;
        else if ((v = val("--seed")))
            a.seed = std::strtoull(v, nullptr, 0);
        else if ((v = val("--loss")))
            a.faults.loss = probability("--loss", v);
        else if ((v = val("--dup")))
            a.faults.dup = probability("--dup", v);
        else if ((v = val("--reorder")))
            a.faults.reorder = probability("--reorder", v);
        else if ((v = val("--corrupt")))
            a.faults.corrupt = probability("--corrupt", v);
        else if ((v = val("--memif")))
            a.memif = v;
        else if ((v = val("--inflight-bytes")))
            a.inflight_bytes = std::strtoull(v, nullptr, 0);
        else if ((v = val("--ack-timeout")))
            a.ack_timeout = static_cast<uint8_t>(std::clamp(std::atoi(v), 1, 31));
        else if ((v = val("--workers")))
            a.workers = static_cast<uint32_t>(std::atoi(v));
        else
            die("usage: bench_soak [--minutes=M | --seconds=S] [--qps=N] [--max-size=B] "
                "[--interval=S] [--csv=FILE] [--seed=N] [--loss=P] [--dup=P] [--reorder=P] "
                "[--corrupt=P] [--memif=DIR [--workers=N]] [--ack-timeout=E] [--inflight-bytes=B]");
    }
    if (!a.memif.empty() && a.faults.any())
        die("--memif: the faults are the forwarder's (droce-fabric --loss --dup ...), not ours");
    if (a.workers < 1 || a.workers > 8)
        die("bad --workers (1..8)");
    if (a.qps == 0 || a.qps > 4096 || a.max_size < 8 || a.max_size > (1u << 20) || a.seconds <= 0 ||
        a.interval <= 0)
        die("bad argument (qps 1..4096, max-size 8..1048576)");
    return a;
}

} // namespace

int main(int argc, char **argv) {
    const Args args = parse(argc, argv);
    const bool memif = !args.memif.empty();
    std::vector<std::string> eal_s = {"bench_soak", "-l", "0"};
    if (memif) {
        /* main + workers lcores floating over every CPU: more threads than cores here */
        const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
        eal_s = {"bench_soak", "--lcores",
                 "(0-" + std::to_string(args.workers) + ")@(0-" + std::to_string(cpus - 1) + ")"};
        for (int s = 0; s < 2; ++s)
            eal_s.push_back("--vdev=net_memif" + std::to_string(s) + ",role=client,socket=" +
                            args.memif + (s ? "/b.sock" : "/a.sock") + ",socket-abstract=no");
    }
    for (const char *x : {"--no-huge", "-m", "2048", "--no-pci", "--no-shconf", "--no-telemetry",
                          "--log-level", "*:warning"})
        eal_s.emplace_back(x);
    eal_s.push_back("--file-prefix=bench_soak_" + std::to_string(getpid()));
    eal_s.emplace_back("--");
    std::vector<char *> eal;
    for (auto &x : eal_s)
        eal.push_back(x.data());
    eal.push_back(nullptr);
    EngineOptions eo;
    eo.embedded = !memif;
    eo.workers = memif ? args.workers : 1;
    /* idle workers sleep (as the tools' engines do): three busy processes share two cores */
    eo.idle_polls_before_sleep = memif ? 1000 : 0;
    eo.idle_sleep_us = 20;
    eo.mbufs = 32767;
    eo.log_level = "warn";
    int consumed = 0;
    auto er = Engine::create(static_cast<int>(eal.size() - 1), eal.data(), &consumed, eo);
    if (!er)
        die("Engine::create: " + er.status().message());
    std::unique_ptr<Engine> engine = std::move(*er);
    std::pair<std::string, std::string> ports;
    std::unique_ptr<bench::FaultWire> wire;
    if (memif) {
        ports = {"net_memif0", "net_memif1"};
    } else if (args.faults.any()) {
        wire = std::make_unique<bench::FaultWire>();
        if (std::string e = wire->open("soakwire", args.faults, args.seed); !e.empty())
            die("fault wire: " + e);
        ports = {wire->port_a(), wire->port_b()};
    } else {
        auto rp = engine->create_ring_pair();
        if (!rp)
            die("create_ring_pair: " + rp.status().message());
        ports = *rp;
    }
    DeviceConfig ca;
    ca.port = ports.first;
    ca.ipv4_cidr = "10.77.0.1/24";
    ca.mac = "02:00:00:00:01:01";
    ca.mtu = 1500;
    ca.max_qps = args.qps + args.qps / 4 + 64; /* QPNs reserved by the device too */
    DeviceConfig cb = ca;
    cb.port = ports.second;
    cb.ipv4_cidr = "10.77.0.2/24";
    cb.mac = "02:00:00:00:01:02";
    auto da = engine->open_device(ca);
    auto db = engine->open_device(cb);
    if (!da || !db)
        die("open_device: " + (da ? db.status() : da.status()).message());
    if (Status s = engine->start(); !s)
        die("start: " + s.message());
    Device *dev[2] = {*da, *db};

    const uint32_t n = args.qps, win = args.max_size;
    std::unique_ptr<ProtectionDomain> pd[2];
    const uint32_t nw = engine->workers();
    std::vector<std::unique_ptr<CompletionQueue>> cq[2]; /* one per worker */
    Mem mem[2];
    std::vector<std::unique_ptr<QueuePair>> qp[2];
    for (int s = 0; s < 2; ++s) {
        auto p = dev[s]->alloc_pd();
        if (!p)
            die("alloc_pd");
        pd[s] = std::move(*p);
        for (uint32_t w = 0; w < nw; ++w) {
            auto c = dev[s]->create_cq(2 * n + 64, static_cast<int>(w));
            if (!c)
                die("create_cq: " + c.status().message());
            cq[s].push_back(std::move(*c));
        }
        Mem &m = mem[s];
        m.buf.assign(static_cast<size_t>(n) * win, 0);
        m.src = m.dst = m.buf.data();
        m.words.assign(n, 0);
        /* Least privilege: B lets A write (dst), read (src) and do atomics (words); A
         * grants nothing remote. */
        const uint32_t lw = kAccessLocalWrite;
        auto r1 = pd[s]->reg_mr(m.src, m.buf.size(), s ? lw | kAccessRemoteRead : lw);
        auto r2 = pd[s]->reg_mr(m.dst, m.buf.size(), s ? lw | kAccessRemoteWrite : lw);
        auto r3 =
            pd[s]->reg_mr(m.words.data(), m.words.size() * 8, s ? lw | kAccessRemoteAtomic : lw);
        if (!r1 || !r2 || !r3)
            die("reg_mr");
        m.mr_src = std::move(*r1);
        m.mr_dst = std::move(*r2);
        m.mr_words = std::move(*r3);
        for (uint32_t q = 0; q < n; ++q) {
            QpInitAttr at;
            at.send_cq = at.recv_cq = cq[s][q % nw].get(); /* QP q on worker q % nw */
            at.cap.max_send_wr = 4;
            at.cap.max_recv_wr = 4;
            auto x = pd[s]->create_qp(at);
            if (!x)
                die("create_qp: " + x.status().message());
            qp[s].push_back(std::move(*x));
        }
    }
    const Gid ga = dev[0]->gids().at(1).gid, gb = dev[1]->gids().at(1).gid;
    /* RTR blocks on ARP, polling the engine but not the wire: a helper thread carries the
     * frames meanwhile (it is the wire's only pumper until it is joined; the rings are
     * single-producer/single-consumer on each side). */
    std::atomic<bool> connected{false};
    std::thread pumper;
    if (wire)
        pumper = std::thread([&] {
            while (!connected.load(std::memory_order_acquire))
                if (wire->pump() == 0)
                    std::this_thread::yield();
        });
    for (uint32_t q = 0; q < n; ++q) {
        std::string e =
            flood::connect_qp(*qp[0][q], gb, qp[1][q]->qp_num(), 0x900, 0x100, 0, args.ack_timeout);
        if (e.empty())
            e = flood::connect_qp(*qp[1][q], ga, qp[0][q]->qp_num(), 0x100, 0x900,
                                  kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic,
                                  args.ack_timeout);
        if (!e.empty())
            die("connect: " + e);
    }
    connected.store(true, std::memory_order_release);
    if (pumper.joinable())
        pumper.join();

    std::mt19937_64 rng(args.seed);
    std::vector<Track> st(n);
    uint64_t completed = 0, data_errors = 0, wr_errors = 0, by_op[5] = {}, bytes = 0;
    std::string first_error;
    auto fail = [&](uint32_t q, const std::string &why) {
        ++data_errors;
        if (first_error.empty())
            first_error = "QP " + std::to_string(q) + " " + op_name(st[q].op) + " len " +
                          std::to_string(st[q].len) + ": " + why;
    };

    /* --inflight-bytes: WRs wait in posting order until their bytes fit the budget */
    uint64_t inflight = 0;
    std::deque<uint32_t> waiting;
    std::function<void(uint32_t)> send;
    auto post = [&](uint32_t q) {
        Track &s = st[q];
        const uint64_t word = s.expect_word;
        s = Track{};
        s.expect_word = word;
        s.op = static_cast<Op>(rng() % static_cast<uint64_t>(Op::Count_));
        /* log-uniform 1 .. win */
        const double lg = std::uniform_real_distribution<double>(0, std::log2(win))(rng);
        s.len = std::clamp<uint32_t>(static_cast<uint32_t>(std::exp2(lg)), 1, win);
        if (s.op == Op::FetchAdd || s.op == Op::CmpSwap)
            s.len = 8;
        s.seed = rng();
        s.busy = true;
        if (args.inflight_bytes != 0 && inflight != 0 && inflight + s.len > args.inflight_bytes)
            waiting.push_back(q); /* sent when enough of the budget is back */
        else
            send(q);
    };
    send = [&](uint32_t q) {
        Track &s = st[q];
        inflight += s.len;
        const size_t off = static_cast<size_t>(q) * win;
        SendWr wr;
        wr.wr_id = q;
        wr.send_flags = kSendSignaled;
        wr.num_sge = 1;
        switch (s.op) {
        case Op::Write:
        case Op::Send:
            for (uint32_t i = 0; i < s.len; ++i)
                mem[0].src[off + i] = pat(s.seed, i);
            wr.opcode = s.op == Op::Write ? WrOpcode::RdmaWrite : WrOpcode::Send;
            wr.sg_list[0] = {reinterpret_cast<uint64_t>(&mem[0].src[off]), s.len,
                             mem[0].mr_src->lkey()};
            wr.remote_addr = reinterpret_cast<uint64_t>(&mem[1].dst[off]);
            wr.rkey = mem[1].mr_dst->rkey();
            if (s.op == Op::Send) {
                RecvWr rw;
                rw.wr_id = q;
                rw.num_sge = 1;
                rw.sg_list[0] = {reinterpret_cast<uint64_t>(&mem[1].dst[off]), win,
                                 mem[1].mr_dst->lkey()};
                if (!qp[1][q]->post_recv(rw))
                    die("post_recv");
            }
            break;
        case Op::Read:
            for (uint32_t i = 0; i < s.len; ++i)
                mem[1].src[off + i] = pat(s.seed, i);
            wr.opcode = WrOpcode::RdmaRead;
            wr.sg_list[0] = {reinterpret_cast<uint64_t>(&mem[0].dst[off]), s.len,
                             mem[0].mr_dst->lkey()};
            wr.remote_addr = reinterpret_cast<uint64_t>(&mem[1].src[off]);
            wr.rkey = mem[1].mr_src->rkey();
            break;
        case Op::FetchAdd:
        case Op::CmpSwap:
            s.len = 8;
            wr.sg_list[0] = {reinterpret_cast<uint64_t>(&mem[0].dst[off]), 8,
                             mem[0].mr_dst->lkey()};
            wr.remote_addr = reinterpret_cast<uint64_t>(&mem[1].words[q]);
            wr.rkey = mem[1].mr_words->rkey();
            if (s.op == Op::FetchAdd) {
                wr.opcode = WrOpcode::AtomicFetchAndAdd;
                wr.compare_add = s.seed;
                s.new_word = s.expect_word + s.seed;
            } else {
                wr.opcode = WrOpcode::AtomicCmpAndSwp;
                wr.compare_add = s.expect_word;
                wr.swap = s.seed;
                s.new_word = s.seed;
            }
            break;
        default:
            break;
        }
        s.posted_at = now_ns();
        if (!qp[0][q]->post_send(wr))
            die("post_send");
    };

    std::vector<uint64_t> lat;
    lat.reserve(1 << 20);
    auto finish = [&](uint32_t q) {
        Track &s = st[q];
        const size_t off = static_cast<size_t>(q) * win;
        switch (s.op) {
        case Op::Write:
        case Op::Send:
            for (uint32_t i = 0; i < s.len; ++i)
                if (mem[1].dst[off + i] != pat(s.seed, i)) {
                    fail(q, "byte " + std::to_string(i) + " wrong at B");
                    break;
                }
            break;
        case Op::Read:
            for (uint32_t i = 0; i < s.len; ++i)
                if (mem[0].dst[off + i] != pat(s.seed, i)) {
                    fail(q, "byte " + std::to_string(i) + " wrong at A");
                    break;
                }
            break;
        case Op::FetchAdd:
        case Op::CmpSwap: {
            uint64_t got;
            std::memcpy(&got, &mem[0].dst[off], 8);
            if (got != s.expect_word)
                fail(q, "atomic returned the wrong value");
            if (mem[1].words[q] != s.new_word)
                fail(q, "atomic word at B wrong");
            s.expect_word = mem[1].words[q];
            break;
        }
        default:
            break;
        }
        lat.push_back(now_ns() - s.posted_at);
        ++by_op[static_cast<size_t>(s.op)];
        bytes += s.len;
        ++completed;
        s.busy = false;
        inflight -= s.len;
    };

    FILE *csv = args.csv.empty() ? nullptr : std::fopen(args.csv.c_str(), "w");
    if (!args.csv.empty() && !csv)
        die("cannot write " + args.csv);
    if (csv)
        std::fprintf(csv, "t_s,wrs,wrs_per_s,data_errors,wr_errors,rss_kib,mbufs_in_use,"
                          "lat_p50_us,lat_p99_us,lat_max_us,retransmitted_packets,"
                          "timeouts\n");

    for (uint32_t q = 0; q < n; ++q)
        post(q);
    const uint64_t t0 = now_ns();
    const uint64_t end = t0 + static_cast<uint64_t>(args.seconds * 1e9);
    const uint64_t every = static_cast<uint64_t>(args.interval * 1e9);
    uint64_t next_sample = t0 + every, last_completed = 0, last_t = t0;
    std::vector<uint64_t> rss_s, mbuf_s;
    std::vector<std::pair<int, CompletionQueue *>> cqs; /* (side, CQ): all polled here */
    for (int s = 0; s < 2; ++s)
        for (auto &c : cq[s])
            cqs.emplace_back(s, c.get());
    Wc wc[64];
    bool draining = false;
    uint64_t last_progress = t0;
    for (;;) {
        if (!memif)
            engine->poll();
        if (wire)
            wire->pump();
        const uint64_t t = now_ns();
        bool idle = true;
        for (const auto &[s, c] : cqs) {
            const int got = c->poll(wc, 64);
            idle = idle && got == 0;
            for (int i = 0; i < got; ++i) {
                const uint32_t q = static_cast<uint32_t>(wc[i].wr_id);
                last_progress = t;
                if (wc[i].status != WcStatus::Success) {
                    ++wr_errors;
                    if (first_error.empty())
                        first_error = "QP " + std::to_string(q) + " " + op_name(st[q].op) +
                                      ": completion status " +
                                      std::to_string(static_cast<int>(wc[i].status));
                    st[q].busy = false;
                    inflight -= st[q].len;
                    continue;
                }
                Track &x = st[q];
                if (x.op == Op::Send) {
                    if (s == 0)
                        x.send_done = true;
                    else {
                        x.recv_done = true;
                        if (wc[i].byte_len != x.len)
                            fail(q, "byte_len " + std::to_string(wc[i].byte_len));
                    }
                    if (!(x.send_done && x.recv_done))
                        continue;
                }
                finish(q);
                if (!draining && wr_errors == 0)
                    post(q);
            }
        }
        while (!waiting.empty() &&
               (inflight == 0 || inflight + st[waiting.front()].len <= args.inflight_bytes)) {
            const uint32_t q = waiting.front();
            waiting.pop_front();
            send(q);
        }
        if (memif && idle)
            std::this_thread::sleep_for(std::chrono::microseconds(20)); /* workers do the work */
        if (t >= next_sample) {
            std::sort(lat.begin(), lat.end());
            auto pct = [&](double p) {
                return lat.empty()
                           ? 0.0
                           : lat[std::min(lat.size() - 1, static_cast<size_t>(p * lat.size()))] /
                                 1e3;
            };
            const uint64_t rss = rss_kib();
            const uint64_t mb = counter(*dev[0], "mbufs_in_use");
            rss_s.push_back(rss);
            mbuf_s.push_back(mb);
            const double el = (t - last_t) / 1e9;
            const uint64_t retx = counter(*dev[0], "retransmitted_packets") +
                                  counter(*dev[1], "retransmitted_packets");
            const uint64_t tmo = counter(*dev[0], "local_ack_timeout_err");
            std::printf("[%6.0f s] %" PRIu64 " WRs (%.0f/s), errors %" PRIu64 "/%" PRIu64
                        ", RSS %" PRIu64 " KiB, mbufs %" PRIu64 ", latency p50 %.1f p99 %.1f "
                        "max %.1f us, retx %" PRIu64 "\n",
                        (t - t0) / 1e9, completed, (completed - last_completed) / el, data_errors,
                        wr_errors, rss, mb, pct(0.5), pct(0.99), pct(1.0 - 1e-12), retx);
            std::fflush(stdout);
            if (csv) {
                std::fprintf(csv,
                             "%.1f,%" PRIu64 ",%.0f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                             ",%.2f,%.2f,%.2f,%" PRIu64 ",%" PRIu64 "\n",
                             (t - t0) / 1e9, completed, (completed - last_completed) / el,
                             data_errors, wr_errors, rss, mb, pct(0.5), pct(0.99),
                             lat.empty() ? 0.0 : lat.back() / 1e3, retx, tmo);
                std::fflush(csv);
            }
            lat.clear();
            last_completed = completed;
            last_t = t;
            next_sample += every;
        }
        if (!draining && (t >= end || wr_errors))
            draining = true;
        if (draining) {
            bool any = false;
            for (const Track &x : st)
                any |= x.busy;
            if (!any)
                break;
            if (t - last_progress > 10'000'000'000ull) {
                ++wr_errors;
                first_error = "WRs never completed (10 s without a completion)";
                break;
            }
        }
    }
    const double secs = (now_ns() - t0) / 1e9;
    std::printf("\nsoak summary: %.0f s, %u QP pairs, sizes 1..%u B, %" PRIu64 " WRs (", secs, n,
                win, completed);
    for (size_t i = 0; i < 5; ++i)
        std::printf("%s%s %" PRIu64, i ? ", " : "", op_name(static_cast<Op>(i)), by_op[i]);
    std::printf("), %.2f GB moved, data errors %" PRIu64 ", WR errors %" PRIu64
                ", retransmitted packets %" PRIu64 "\n",
                bytes / 1e9, data_errors, wr_errors,
                counter(*dev[0], "retransmitted_packets") +
                    counter(*dev[1], "retransmitted_packets"));
    if (memif)
        std::printf("memif: engine in worker mode, %u workers (rx_handoff %" PRIu64
                    "); faults: the forwarder's\n",
                    nw, counter(*dev[0], "rx_handoff") + counter(*dev[1], "rx_handoff"));
    if (wire) {
        const bench::FaultCounters &f = wire->counters();
        /* A fault asked for and never injected would make a clean run prove nothing. */
        const bench::FaultProfile &p = args.faults;
        if ((p.loss > 0 && !f.lost) || (p.dup > 0 && !f.duplicated) ||
            (p.reorder > 0 && !f.reordered) || (p.corrupt > 0 && !f.corrupted)) {
            ++wr_errors;
            first_error = "a fault kind asked for was never injected";
        }
        std::printf("faults injected: frames %" PRIu64 ", lost %" PRIu64 ", duplicated %" PRIu64
                    ", reordered %" PRIu64 ", corrupted %" PRIu64 " (wire drops: no mbuf %" PRIu64
                    ", ring full %" PRIu64 ")\n",
                    f.frames, f.lost, f.duplicated, f.reordered, f.corrupted, f.copy_failed,
                    f.ring_full);
    }
    if (!rss_s.empty()) {
        auto span = [](const std::vector<uint64_t> &v) {
            const auto [lo, hi] = std::minmax_element(v.begin() + (v.size() > 1), v.end());
            return std::make_pair(*lo, *hi);
        };
        const auto [rlo, rhi] = span(rss_s);
        const auto [mlo, mhi] = span(mbuf_s);
        std::printf("RSS %" PRIu64 "..%" PRIu64 " KiB (%+.2f%% after the first sample), mbufs in "
                    "use %" PRIu64 "..%" PRIu64 "\n",
                    rlo, rhi, rlo ? 100.0 * (double(rhi) - double(rlo)) / double(rlo) : 0.0, mlo,
                    mhi);
    }
    /* What the retransmissions and drops were: every non-zero counter of a drop, error,
     * NAK, retry or timeout, per side (a soak without faults should show why it retried). */
    for (int s = 0; s < 2; ++s) {
        std::printf("side %c:", 'A' + s);
        for (const auto &[k, x] : dev[s]->counters()) {
            static const char *const kinds[] = {"drop",    "err", "nak",      "retr",   "rnr",
                                                "timeout", "dup", "sequence", "refused"};
            if (x != 0 && std::any_of(std::begin(kinds), std::end(kinds), [&](const char *w) {
                    return k.find(w) != std::string::npos;
                }))
                std::printf(" %s=%" PRIu64, k.c_str(), x);
        }
        std::printf("\n");
    }
    if (!first_error.empty())
        std::printf("first error: %s\n", first_error.c_str());
    if (csv)
        std::fclose(csv);
    for (int s = 0; s < 2; ++s)
        qp[s].clear();
    return data_errors || wr_errors ? 1 : 0;
}
