/* SPDX-License-Identifier: BSD-3-Clause */
/* Engine micro-benchmarks, in process, embedded mode, on a net_ring pair:
 *  - PostToWire: rc post_send of one SEND + one device iteration (empty RX burst, QP
 *    scan, frame built in an mbuf, tx_burst onto the ring);
 *  - WireToCompletion: one received SEND_ONLY frame through the RX classifier, ICRC
 *    check, parse, QP lookup, responder (payload copy into the posted receive) and the
 *    completion polled from the CQ ring.
 *  - PostToWirePaced: the same with the QP's DCQCN pacer on (rate 399 Gb/s under a
 *    400 Gb/s line: every packet goes through can_send/consume/Rp::on_bytes_sent, none
 *    waits), against PostToWire's line-rate QP (one test per packet);
 *  - PacerPerPacket: that per-packet pacer path alone (lib/cc Pacer + Rp), 1 KB frames
 *    at 10 Gb/s with the clock advancing one frame time per packet.
 *  - IdlePoll: one embedded-mode iteration (Runtime::poll_once) with nothing to do.
 *  - PingPong: one round trip of 64 B SENDs between A and B, each side answering the
 *    message it received (its ACK held, Shard's ACK hold), every poll of both sides
 *    and the reposted receive included: two hops of droce's own work with a free link.
 *    Arg 0: the answer is scheduled and a poll sends it (Dev::touch, as before);
 *    Arg 1: the post sends it with the held ACK at once (Dev::posted, embedded mode).
 * Draining (ACKs, completions, reposting receives) runs with the timer paused every
 * kBatch iterations. Run with --benchmark_repetitions=5 (the default here) for
 * min/median/max. */
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_engine_setup.h"
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "engine.h"

using namespace droce;

namespace {

constexpr int kBatch = 32;
constexpr uint32_t kBuf = 1 << 20;

struct Bench {
    std::unique_ptr<engine::Runtime> rt;
    engine::Dev *a = nullptr, *b = nullptr;
    std::unique_ptr<engine::CqCtx> acq, bcq, b2cq;
    engine::QpCtx *qa = nullptr, *qb = nullptr, *qb2 = nullptr;
    std::vector<uint8_t> bufa, bufb;
    uint32_t keya = 0, keyb = 0;
    uint32_t b2_psn = 0x1000;
};
Bench *g = nullptr;

using bench::connect;
using bench::make_cq;
using bench::path;

bool setup(int argc, char **argv) {
    (void)argc;
    static const char *eal[] = {argv[0],       "--no-huge",   "-m",   "512",
                                "--no-pci",    "--no-shconf", "-l",   "0",
                                "--log-level", "*:warning",   nullptr};
    EngineOptions o;
    o.embedded = true;
    int consumed = 0;
    auto rt = engine::Runtime::create(10, const_cast<char **>(eal), &consumed, o);
    if (!rt) {
        std::fprintf(stderr, "engine: %s\n", rt.status().message().c_str());
        return false;
    }
    g = new Bench;
    g->rt = std::move(*rt);
    auto ports = g->rt->create_ring_pair();
    if (!ports)
        return false;
    DeviceConfig ca;
    ca.port = ports->first;
    ca.ipv4_cidr = "10.77.0.1/24";
    ca.mac = "02:00:00:00:01:01";
    ca.mtu = 4200; /* RoCE active MTU 4096: a 4 KiB SEND is one frame */
    DeviceConfig cb = ca;
    cb.port = ports->second;
    cb.ipv4_cidr = "10.77.0.2/24";
    cb.mac = "02:00:00:00:01:02";
    auto da = g->rt->open_device(ca);
    auto db = g->rt->open_device(cb);
    if (!da || !db)
        return false;
    g->a = *da;
    g->b = *db;
    /* A 400 Gb/s line (net_ring says 10G): PostToWirePaced's pacer never makes a packet
     * wait at the benchmark's packet rate, so it measures the pacer's cost only. */
    const cc::CcParams ccp;
    g->a->qp_defaults().set_cc(&ccp, 400'000'000'000);
    g->acq = make_cq();
    g->bcq = make_cq();
    g->b2cq = make_cq();
    g->bufa.assign(kBuf, 0x5a);
    g->bufb.assign(kBuf, 0);
    /* SENDs only: receives are written locally, nobody gets a remote right. */
    g->keya = g->a->reg_mr(1, g->bufa.data(), kBuf, kAccessLocalWrite)->key;
    g->keyb = g->b->reg_mr(1, g->bufb.data(), kBuf, kAccessLocalWrite)->key;
    QpInitAttr ia;
    ia.cap.max_send_wr = 256;
    ia.cap.max_recv_wr = 1024;
    auto na = g->a->create_qp(1, ia, g->acq.get(), g->acq.get(), nullptr, nullptr, &g->qa);
    auto nb = g->b->create_qp(1, ia, g->bcq.get(), g->bcq.get(), nullptr, nullptr, &g->qb);
    auto nb2 = g->b->create_qp(1, ia, g->b2cq.get(), g->b2cq.get(), nullptr, nullptr, &g->qb2);
    if (!na || !nb || !nb2)
        return false;
    const net::Mac ma = g->a->iface().mac, mb = g->b->iface().mac;
    /* qa <-> qb: a real connection. qb2 talks to a QP A does not have (0x3ff): the
     * benchmark plays that peer by injecting frames. */
    return connect(*g->qa->qp, path(*g->a, mb, g->b->iface().ip, *na), *nb, 0x100, 0x200, 0) &&
           connect(*g->qb->qp, path(*g->b, ma, g->a->iface().ip, *nb), *na, 0x200, 0x100, 0) &&
           connect(*g->qb2->qp, path(*g->b, ma, g->a->iface().ip, *nb2), 0x3ff, 0x300, g->b2_psn,
                   0);
}

/* Tops the receive queue up to n; every receive takes the largest message. */
void post_recvs(rc::Qp &q, int n) {
    for (int i = static_cast<int>(q.recv_queue_depth()); i < n; ++i) {
        RecvWr r;
        r.wr_id = static_cast<uint64_t>(i);
        r.sg_list[0] = Sge{reinterpret_cast<uint64_t>(g->bufb.data()), 65536, g->keyb};
        r.num_sge = 1;
        q.post_recv(r);
    }
}

/* Runs the engine until the CQ gave `want` completions. */
bool drain(engine::CqCtx &cq, int want) {
    Wc wc[64];
    int got = 0;
    for (int spins = 0; got < want && spins < 1000000; ++spins) {
        got += cq.poll(wc, 64);
        if (got < want)
            g->rt->poll_once();
    }
    return got == want;
}

void post_to_wire(benchmark::State &state) {
    const auto len = static_cast<uint32_t>(state.range(0));
    SendWr w;
    w.opcode = WrOpcode::Send;
    w.send_flags = kSendSignaled;
    w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(g->bufa.data()), len, g->keya};
    w.num_sge = 1;
    post_recvs(*g->qb->qp, kBatch);
    int n = 0;
    uint32_t work;
    for (auto _ : state) {
        if (!g->qa->qp->post_send(w).is_ok()) {
            state.SkipWithError("post_send failed");
            break;
        }
        g->a->touch(*g->qa); /* the doorbell: posted straight into the QP */
        g->a->poll(g->rt->now_ns(), &work);
        if (++n == kBatch) {
            state.PauseTiming();
            n = 0;
            if (!drain(*g->acq, kBatch) || !drain(*g->bcq, kBatch)) {
                state.SkipWithError("completions missing");
                break;
            }
            post_recvs(*g->qb->qp, kBatch);
            state.ResumeTiming();
        }
    }
    /* Leave a clean state for the next run. */
    drain(*g->acq, n);
    drain(*g->bcq, n);
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * len);
}

void BM_PostToWire(benchmark::State &state) { post_to_wire(state); }

void BM_PostToWirePaced(benchmark::State &state) {
    cc::CcParams p;
    p.rpg_max_rate_bps = 399'000'000'000;
    rc::Qp &q = *g->qa->qp;
    if (!q.set_cc_params(p, g->rt->now_ns()).is_ok() || q.cc_state().pacer_rate_bps == 0) {
        state.SkipWithError("pacer not on");
        return;
    }
    const uint64_t defers = g->a->shard(0).rcc.paced_defers;
    post_to_wire(state);
    if (g->a->shard(0).rcc.paced_defers != defers)
        state.SkipWithError("the pacer held packets: not a cost measurement");
    (void)q.set_cc_params(cc::CcParams{}, g->rt->now_ns()); /* line rate again */
}

void BM_PacerPerPacket(benchmark::State &state) {
    const cc::CcParams p;
    cc::Rp rp(p, 100'000'000'000);
    rp.on_cnp(0); /* limited: on_bytes_sent counts and byte stages run */
    cc::Pacer pacer(10'000'000'000, 2 * 1152, 0);
    const uint32_t bytes = 1024 + 58 + 24; /* 1 KB payload frame on the wire */
    uint64_t now = 1, sent = 0;
    for (auto _ : state) {
        now += 885; /* one frame time at 10 Gb/s */
        if (pacer.can_send(bytes, now)) {
            pacer.consume(bytes, now);
            rp.on_bytes_sent(bytes, now);
            if (++sent % 1024 == 0)
                rp.on_cnp(now); /* stay limited: byte stages would release it */
        }
        benchmark::DoNotOptimize(sent);
    }
    if (sent < static_cast<uint64_t>(state.iterations()) * 99 / 100)
        state.SkipWithError("pacer refused packets");
}

rte_mbuf *send_frame(uint32_t len, uint32_t psn) {
    wire::FrameSpec s{};
    std::memcpy(s.eth.dst, g->b->iface().mac.data(), 6);
    std::memcpy(s.eth.src, g->a->iface().mac.data(), 6);
    wire::gid_from_ipv4(g->a->iface().ip, s.src_gid);
    wire::gid_from_ipv4(g->b->iface().ip, s.dst_gid);
    s.ttl = 64;
    s.udp_sport = 0xC123;
    s.bth.opcode = 0x04; /* RC SEND_ONLY */
    s.bth.pkey = 0xFFFF;
    s.bth.dest_qp = g->qb2->qp->qpn();
    s.bth.psn = psn;
    const wire::FrameSpec::Seg seg{g->bufa.data(), len};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = len;
    rte_mbuf *m = rte_pktmbuf_alloc(g->rt->pool());
    const size_t n = wire::build_frame(s, rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m));
    m->data_len = static_cast<uint16_t>(n);
    m->pkt_len = static_cast<uint32_t>(n);
    return m;
}

void BM_WireToCompletion(benchmark::State &state) {
    const auto len = static_cast<uint32_t>(state.range(0));
    rc::Qp &q = *g->qb2->qp;
    rte_mbuf *frames[kBatch];
    auto refill = [&] {
        post_recvs(q, kBatch);
        for (int i = 0; i < kBatch; ++i) {
            frames[i] = send_frame(len, g->b2_psn);
            g->b2_psn = wire::psn_add(g->b2_psn, 1);
        }
    };
    refill();
    int i = 0;
    for (auto _ : state) {
        g->b->rx_one(frames[i], g->rt->now_ns());
        Wc wc;
        if (g->b2cq->poll(&wc, 1) != 1 || wc.status != WcStatus::Success) {
            state.SkipWithError("no receive completion");
            break;
        }
        if (++i == kBatch) {
            state.PauseTiming();
            i = 0;
            /* ACKs B owes go out (and A drops them: unknown QPN). */
            uint32_t work;
            g->b->poll(g->rt->now_ns(), &work);
            g->a->poll(g->rt->now_ns(), &work);
            refill();
            state.ResumeTiming();
        }
    }
    for (; i < kBatch; ++i) /* unused frames of the last batch keep the PSNs in step */
        g->b->rx_one(frames[i], g->rt->now_ns());
    Wc wc[kBatch];
    while (g->b2cq->poll(wc, kBatch) > 0) {
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * len);
}

void post_recvs_into(rc::Qp &q, int n, std::vector<uint8_t> &buf, uint32_t key) {
    for (int i = static_cast<int>(q.recv_queue_depth()); i < n; ++i) {
        RecvWr r;
        r.sg_list[0] = Sge{reinterpret_cast<uint64_t>(buf.data()), 65536, key};
        r.num_sge = 1;
        q.post_recv(r);
    }
}

/* One side of the ping-pong: polls dev until cq has the receive completion, then
 * reposts the receive and answers with a SEND from q. */
bool pong(engine::Dev &dev, engine::CqCtx &cq, engine::QpCtx &q, const SendWr &w, bool answer,
          std::vector<uint8_t> &buf, uint32_t key) {
    Wc wc[4];
    uint32_t work;
    int got = 0;
    for (int spins = 0; got == 0; ++spins) {
        if (spins == 1000000)
            return false;
        dev.poll(g->rt->now_ns(), &work);
        got = cq.poll(wc, 4);
    }
    post_recvs_into(*q.qp, 4, buf, key);
    if (!q.qp->post_send(w).is_ok())
        return false;
    if (answer) {
        dev.posted(q);
    } else {
        dev.touch(q);
        dev.poll(g->rt->now_ns(), &work);
    }
    return true;
}

void BM_PingPong(benchmark::State &state) {
    const bool answer = state.range(0) != 0;
    SendWr w;
    w.opcode = WrOpcode::Send;
    w.send_flags = 0; /* unsignaled: the CQs hold the receives only */
    w.sg_list[0] = Sge{reinterpret_cast<uint64_t>(g->bufa.data()), 64, g->keya};
    w.num_sge = 1;
    SendWr wb = w;
    wb.sg_list[0] = Sge{reinterpret_cast<uint64_t>(g->bufb.data()), 64, g->keyb};
    /* A's receives land in bufa (it has local write on it). */
    post_recvs_into(*g->qb->qp, 4, g->bufb, g->keyb);
    post_recvs_into(*g->qa->qp, 4, g->bufa, g->keya);
    uint32_t work;
    /* The first message: A starts. */
    g->qa->qp->post_send(w);
    g->a->touch(*g->qa);
    g->a->poll(g->rt->now_ns(), &work);
    for (auto _ : state) {
        if (!pong(*g->b, *g->bcq, *g->qb, wb, answer, g->bufb, g->keyb) ||
            !pong(*g->a, *g->acq, *g->qa, w, answer, g->bufa, g->keya)) {
            state.SkipWithError("ping-pong stalled");
            break;
        }
    }
    /* B answers the last message; A takes it: nothing left in flight. */
    for (int i = 0; i < 64; ++i) {
        g->rt->poll_once();
        Wc wc[8];
        g->acq->poll(wc, 8);
        g->bcq->poll(wc, 8);
    }
}

/* The fixed cost of one embedded-mode iteration with nothing to do (mailbox check, clock
 * read, both devices' empty RX bursts, timer check): what a ping-pong pays per spin while
 * it waits for the peer, so it adds to the latency and takes from small-message rates. */
void BM_IdlePoll(benchmark::State &state) {
    for (auto _ : state)
        benchmark::DoNotOptimize(g->rt->poll_once());
}

double stat_min(const std::vector<double> &v) {
    return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}
double stat_max(const std::vector<double> &v) {
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

} // namespace

int main(int argc, char **argv) {
    if (!setup(argc, argv)) {
        std::fprintf(stderr, "bench_engine: setup failed\n");
        return 1;
    }
    benchmark::RegisterBenchmark("PacerPerPacket", BM_PacerPerPacket)
        ->ComputeStatistics("min", stat_min)
        ->ComputeStatistics("max", stat_max);
    benchmark::RegisterBenchmark("IdlePoll", BM_IdlePoll)
        ->ComputeStatistics("min", stat_min)
        ->ComputeStatistics("max", stat_max);
    benchmark::RegisterBenchmark("PingPong", BM_PingPong)
        ->Arg(0)
        ->Arg(1)
        ->ComputeStatistics("min", stat_min)
        ->ComputeStatistics("max", stat_max);
    for (auto *b : {benchmark::RegisterBenchmark("PostToWire", BM_PostToWire),
                    benchmark::RegisterBenchmark("PostToWirePaced", BM_PostToWirePaced),
                    benchmark::RegisterBenchmark("WireToCompletion", BM_WireToCompletion)})
        b->Arg(64)
            ->Arg(4096)
            ->ComputeStatistics("min", stat_min)
            ->ComputeStatistics("max", stat_max);
    /* min/median/max over 5 repetitions unless told otherwise. */
    std::vector<char *> args(argv, argv + argc);
    bool reps = false;
    for (int i = 1; i < argc; ++i)
        reps |= std::strncmp(argv[i], "--benchmark_repetitions", 23) == 0;
    static char r5[] = "--benchmark_repetitions=5";
    static char agg[] = "--benchmark_report_aggregates_only=true";
    if (!reps) {
        args.push_back(r5);
        args.push_back(agg);
    }
    int n = static_cast<int>(args.size());
    benchmark::Initialize(&n, args.data());
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
