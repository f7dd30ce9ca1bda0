/* SPDX-License-Identifier: BSD-3-Clause */
/* Flood harness (issue 15, resource exhaustion from the wire), shared by bench/bench_flood
 * and tests/unit/test_flood: one process, embedded mode, two devices A and B on a
 * net_ring pair. A carries legitimate traffic to B (64 B RDMA WRITEs on N QP pairs, every
 * WR's bytes checked in B's memory when its completion is polled) while an attacker
 * injects frames into B's RX at a rate set relative to the legitimate packet rate. The
 * attacker transmits on port A's queue (the ring a2b feeds B's RX), from its own mempool,
 * between two Engine::poll() calls of the one thread: the ring is single-producer and
 * nothing else touches it meanwhile. The flood shares the link with A's traffic, as a
 * hostile host on the same segment would.
 *
 * Per run: legitimate WRs/s, WRs completed, data errors, flood frames injected (and
 * refused by a full ring), the delta of B's drop counters, mbufs in use before/after
 * (engine pools, gauge mbufs_in_use) and the flood pool's free count. */
#pragma once

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <droce/droce.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "wire_opcode.h"
#include "wire_packet.h"

namespace droce::flood {

/* What the attacker sends. The first five are dropped by B without an answer; the PSN
 * kinds reach an established QP (forged as its peer) and provoke the responder. */
enum class Kind : uint8_t {
    Garbage,    /* B's MAC, then random bytes (ethertype included), 60..300 B */
    RoceNoise,  /* valid Ethernet/IPv4/UDP 4791 headers, random BTH and beyond */
    BadIcrc,    /* a well-formed WRITE to an established QP, one payload bit flipped */
    UnknownQpn, /* a well-formed WRITE to a QPN B does not have */
    Truncated,  /* a well-formed WRITE cut short (IP length says more than arrived) */
    PsnAhead,   /* WRITE to an established QP, PSN 2^22 ahead of the expected one */
    PsnOld,     /* WRITE to an established QP, PSN 2^22 behind (a duplicate) */
    Count_
};

inline const char *kind_name(Kind k) {
    static const char *n[] = {"garbage",   "roce_noise", "bad_icrc", "unknown_qpn",
                              "truncated", "psn_ahead",  "psn_old"};
    return n[static_cast<size_t>(k)];
}

inline bool kind_from_name(const std::string &s, Kind *k) {
    for (size_t i = 0; i < static_cast<size_t>(Kind::Count_); ++i)
        if (s == kind_name(static_cast<Kind>(i))) {
            *k = static_cast<Kind>(i);
            return true;
        }
    return false;
}

/* Kinds B must drop silently: each is counted by exactly one drop counter. */
inline bool silent(Kind k) { return k < Kind::PsnAhead; }

/* Counters that count a frame B discarded (or answered without executing): their delta
 * over a run with only well-behaved legitimate traffic is the flood's. */
inline bool is_flood_counter(const std::string &k) {
    if (k.rfind("rx_drop_", 0) == 0 || k.rfind("arp_drop_", 0) == 0 ||
        k.rfind("icmp_drop_", 0) == 0)
        return true;
    return k == "rx_qp_state_drop" || k == "rx_pkey_violation" || k == "rx_transport_drop";
}

inline std::map<std::string, uint64_t> counter_map(const Device &d) {
    std::map<std::string, uint64_t> m;
    for (const auto &[k, v] : d.counters())
        m[k] += v;
    return m;
}

constexpr uint32_t kMsg = 64;   /* legitimate WRITE size: one packet */
constexpr uint32_t kSlots = 64; /* per QP, > depth: a slot is reused only after its WR completed */
constexpr uint32_t kPsnA2B = 0x100; /* A's first request PSN */

struct Side {
    Device *dev = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<CompletionQueue> cq;
    std::vector<uint8_t> buf;
    std::unique_ptr<MemoryRegion> mr;
    std::vector<std::unique_ptr<QueuePair>> qps;
    uint64_t addr(size_t off) const { return reinterpret_cast<uint64_t>(buf.data() + off); }
    void close() {
        qps.clear();
        mr.reset();
        cq.reset();
        pd.reset();
    }
};

/* Legitimate traffic: `pairs` QP pairs A->B, `depth` signaled WRITEs outstanding per QP.
 * WR s of QP q writes kMsg bytes of pattern(q, s) into B's slot (q, s % kSlots); its
 * completion at A means B has placed it (B ACKs after placing), so the slot is compared
 * right then, before any later WR can reuse it. */
struct Legit {
    Engine *engine = nullptr;
    Side *a = nullptr, *b = nullptr;
    uint32_t depth = 16;
    std::vector<uint32_t> out;  /* outstanding per QP */
    std::vector<uint64_t> next; /* next WR sequence per QP */
    uint64_t completed = 0, errors = 0, data_errors = 0;
    std::string first_error;

    static uint8_t pattern(uint32_t q, uint64_t s, uint32_t i) {
        uint64_t x = (static_cast<uint64_t>(q) << 40) ^ (s * 0x9E3779B97F4A7C15ull) ^ i;
        x ^= x >> 29;
        x *= 0xBF58476D1CE4E5B9ull;
        return static_cast<uint8_t>(x >> 56);
    }
    size_t slot(uint32_t q, uint64_t s) const { return (q * kSlots + s % kSlots) * kMsg; }

    void init() {
        out.assign(a->qps.size(), 0);
        next.assign(a->qps.size(), 0);
    }
    /* Packets A has sent to B so far (one per WR: kMsg fits one packet). */
    uint64_t posted() const {
        uint64_t n = 0;
        for (uint64_t x : next)
            n += x;
        return n;
    }
    bool post(uint32_t q) {
        const uint64_t s = next[q];
        const size_t off = slot(q, s);
        for (uint32_t i = 0; i < kMsg; ++i)
            a->buf[off + i] = pattern(q, s, i);
        SendWr w;
        w.wr_id = (static_cast<uint64_t>(q) << 40) | s;
        w.opcode = WrOpcode::RdmaWrite;
        w.send_flags = kSendSignaled;
        w.num_sge = 1;
        w.sg_list[0] = Sge{a->addr(off), kMsg, a->mr->lkey()};
        w.remote_addr = b->addr(off);
        w.rkey = b->mr->rkey();
        Status st = a->qps[q]->post_send(w);
        if (!st) {
            if (first_error.empty())
                first_error = "post_send: " + st.message();
            ++errors;
            return false;
        }
        ++out[q];
        ++next[q];
        return true;
    }
    void top_up(bool more) {
        if (!more)
            return;
        for (uint32_t q = 0; q < out.size(); ++q)
            while (out[q] < depth && post(q)) {
            }
    }
    void reap() {
        Wc wc[64];
        const int k = a->cq->poll(wc, 64);
        for (int j = 0; j < k; ++j) {
            const uint32_t q = static_cast<uint32_t>(wc[j].wr_id >> 40);
            const uint64_t s = wc[j].wr_id & ((1ull << 40) - 1);
            if (q < out.size())
                --out[q];
            if (wc[j].status != WcStatus::Success) {
                if (first_error.empty())
                    first_error = std::string("completion ") + wc_status_str(wc[j].status);
                ++errors;
                continue;
            }
            const uint8_t *got = b->buf.data() + slot(q, s);
            for (uint32_t i = 0; i < kMsg; ++i)
                if (got[i] != pattern(q, s, i)) {
                    ++data_errors;
                    break;
                }
            ++completed;
        }
    }
    uint32_t outstanding() const {
        uint32_t n = 0;
        for (uint32_t x : out)
            n += x;
        return n;
    }
};

/* The attacker: frames of the chosen kinds, round-robin, into B's RX. */
struct Flooder {
    uint16_t port = 0; /* port A: its TX ring is B's RX */
    rte_mempool *pool = nullptr;
    uint32_t pool_size = 0;
    std::vector<Kind> kinds;
    size_t kind_cursor = 0;
    std::mt19937_64 rng{0xF100D};
    /* Addresses: B's MAC/IP as the target; A's as the forged source of valid-looking
     * frames; B's established QPNs and A's matching QPNs. */
    uint8_t mac_a[6] = {}, mac_b[6] = {};
    uint32_t ip_a = 0, ip_b = 0;
    std::vector<uint32_t> b_qpns;
    const Legit *legit = nullptr; /* for the PSN a QP expects (PSN kinds) */
    uint32_t max_qps = 0;
    uint64_t injected = 0, refused = 0, per_kind[static_cast<size_t>(Kind::Count_)] = {};

    bool own_pool = true;

    bool open(const std::string &name, uint32_t n) {
        pool = rte_pktmbuf_pool_create(name.c_str(), n, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                       SOCKET_ID_ANY);
        pool_size = n;
        return pool != nullptr;
    }
    /* Floods from the engine's own pool instead: what a NIC does, whose RX ring is filled
     * from that pool, so flood frames waiting in the ring take mbufs the engine needs for
     * its TX (data, ACKs). The pool is found by the name the engine gives it. */
    bool use_engine_pool() {
        rte_mempool *found = nullptr;
        rte_mempool_walk(
            [](rte_mempool *mp, void *arg) {
                if (std::strncmp(mp->name, "droce_pool", 10) == 0)
                    *static_cast<rte_mempool **>(arg) = mp;
            },
            &found);
        if (found == nullptr)
            return false;
        close();
        pool = found;
        own_pool = false;
        return true;
    }
    void close() {
        if (pool != nullptr && own_pool)
            rte_mempool_free(pool);
        pool = nullptr;
    }
    /* Free mbufs of the flood's own pool (0 when it floods from the engine's). */
    uint32_t pool_free() const { return own_pool ? rte_mempool_avail_count(pool) : 0; }

    /* A WRITE_ONLY of kMsg bytes from A to qpn with the given PSN and a correct ICRC. */
    size_t write_frame(uint32_t qpn, uint32_t psn, uint8_t *out, size_t cap) {
        wire::FrameSpec s{};
        std::memcpy(s.eth.dst, mac_b, 6);
        std::memcpy(s.eth.src, mac_a, 6);
        wire::gid_from_ipv4(ip_a, s.src_gid);
        wire::gid_from_ipv4(ip_b, s.dst_gid);
        s.ttl = 64;
        s.udp_sport = static_cast<uint16_t>(0xC000 | (rng() & 0x3FFF));
        s.bth.opcode = wire::kRcWriteOnly;
        s.bth.pkey = 0xFFFF;
        s.bth.dest_qp = qpn;
        s.bth.psn = psn & 0xFFFFFF;
        s.bth.ack_req = true;
        s.reth = wire::Reth{0x1000, 0x1234, kMsg};
        uint8_t payload[kMsg];
        for (auto &x : payload)
            x = static_cast<uint8_t>(rng());
        const wire::FrameSpec::Seg seg{payload, kMsg};
        s.segs = &seg;
        s.nsegs = 1;
        s.payload_len = kMsg;
        return wire::build_frame(s, out, cap);
    }
    uint32_t unknown_qpn() {
        for (;;) {
            /* Half beyond the QPN table, half inside it but not B's. */
            const uint32_t q = (rng() & 1)
                                   ? static_cast<uint32_t>(max_qps + rng() % (0xFFFFFF - max_qps))
                                   : static_cast<uint32_t>(2 + rng() % (max_qps - 2));
            if (std::find(b_qpns.begin(), b_qpns.end(), q) == b_qpns.end())
                return q;
        }
    }
    /* Writes one frame of kind k into out; returns its length. */
    size_t make(Kind k, uint8_t *out, size_t cap) {
        const size_t qi = rng() % b_qpns.size();
        switch (k) {
        case Kind::Garbage: {
            const size_t n = 60 + rng() % 241;
            std::memcpy(out, mac_b, 6);
            for (size_t i = 6; i < n; ++i)
                out[i] = static_cast<uint8_t>(rng());
            return n;
        }
        case Kind::RoceNoise: {
            size_t n = write_frame(b_qpns[qi], 0, out, cap);
            /* Everything from the BTH on (IP/UDP stay valid): opcode, QPN, lengths, ICRC. */
            for (size_t i = 14 + 20 + 8; i < n; ++i)
                out[i] = static_cast<uint8_t>(rng());
            return n;
        }
        case Kind::BadIcrc: {
            const size_t n =
                write_frame(b_qpns[qi], kPsnA2B + static_cast<uint32_t>(rng()), out, cap);
            out[n - 10] ^= static_cast<uint8_t>(1u << (rng() % 8));
            return n;
        }
        case Kind::UnknownQpn:
            return write_frame(unknown_qpn(), static_cast<uint32_t>(rng()), out, cap);
        case Kind::Truncated: {
            const size_t n = write_frame(b_qpns[qi], static_cast<uint32_t>(rng()), out, cap);
            return 14 + 20 + rng() % (n - 14 - 20 - 1); /* IPv4 header whole, the rest cut */
        }
        case Kind::PsnAhead:
        case Kind::PsnOld: {
            const uint32_t expect = kPsnA2B + static_cast<uint32_t>(legit->next[qi]);
            const uint32_t psn = k == Kind::PsnAhead ? expect + (1u << 22) : expect - (1u << 22);
            return write_frame(b_qpns[qi], psn, out, cap);
        }
        default:
            return 0;
        }
    }
    /* Frames of the silent kinds are built once (256 per kind, random): an attacker
     * replays frames; building each (random bytes, ICRC) would charge the receiver's
     * thread with the attacker's work. The PSN kinds are built per frame (the PSN a QP
     * expects moves). */
    static constexpr size_t kBank = 256;
    std::vector<std::vector<uint8_t>> bank[static_cast<size_t>(Kind::Count_)];
    size_t bank_cursor[static_cast<size_t>(Kind::Count_)] = {};
    uint64_t cycles = 0; /* TSC cycles spent in inject(): the attacker's share of the thread */

    void prepare() {
        for (Kind k : kinds) {
            auto &b = bank[static_cast<size_t>(k)];
            if (!silent(k) || !b.empty())
                continue;
            for (size_t i = 0; i < kBank; ++i) {
                std::vector<uint8_t> f(2048);
                f.resize(make(k, f.data(), f.size()));
                b.push_back(std::move(f));
            }
        }
    }
    /* Injects n frames (one burst); a full ring refuses some: counted, freed. */
    void inject(uint32_t n) {
        const uint64_t t0 = rte_rdtsc();
        inject_(n);
        cycles += rte_rdtsc() - t0;
    }
    void inject_(uint32_t n) {
        rte_mbuf *m[64];
        n = std::min<uint32_t>(n, 64);
        if (n == 0 || rte_pktmbuf_alloc_bulk(pool, m, n) != 0)
            return;
        Kind kk[64];
        for (uint32_t i = 0; i < n; ++i) {
            const Kind k = kinds[kind_cursor];
            kind_cursor = kind_cursor + 1 == kinds.size() ? 0 : kind_cursor + 1;
            kk[i] = k;
            uint8_t *p = rte_pktmbuf_mtod(m[i], uint8_t *);
            auto &b = bank[static_cast<size_t>(k)];
            size_t len;
            if (!b.empty()) {
                size_t &c = bank_cursor[static_cast<size_t>(k)];
                const auto &f = b[c];
                c = c + 1 == b.size() ? 0 : c + 1;
                std::memcpy(p, f.data(), f.size());
                len = f.size();
            } else {
                len = make(k, p, rte_pktmbuf_tailroom(m[i]));
            }
            m[i]->data_len = static_cast<uint16_t>(len);
            m[i]->pkt_len = static_cast<uint32_t>(len);
        }
        const uint16_t sent = rte_eth_tx_burst(port, 0, m, static_cast<uint16_t>(n));
        for (uint16_t i = 0; i < sent; ++i)
            ++per_kind[static_cast<size_t>(kk[i])];
        injected += sent;
        refused += n - sent;
        for (uint32_t i = sent; i < n; ++i)
            rte_pktmbuf_free(m[i]);
    }
};

inline std::string connect_qp(QueuePair &qp, const Gid &dgid, uint32_t dqpn, uint32_t rq_psn,
                              uint32_t sq_psn, uint32_t access, uint8_t timeout = 14) {
    QpAttr at;
    at.qp_state = QpState::Init;
    at.qp_access_flags = access;
    if (Status s = qp.modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags); !s)
        return "INIT: " + s.message();
    at = QpAttr{};
    at.qp_state = QpState::Rtr;
    at.path_mtu = Mtu::Mtu1024;
    at.dest_qp_num = dqpn;
    at.rq_psn = rq_psn;
    at.max_dest_rd_atomic = 4;
    at.min_rnr_timer = 12;
    at.ah_attr.dgid = dgid;
    at.ah_attr.sgid_index = 1;
    if (Status s = qp.modify(at, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                     kQpMaxDestRdAtomic | kQpMinRnrTimer);
        !s)
        return "RTR: " + s.message();
    at = QpAttr{};
    at.qp_state = QpState::Rts;
    at.sq_psn = sq_psn;
    at.timeout = timeout; /* 14, ~67 ms: a NAK-provoked go-back-N is measured, not timeouts */
    at.retry_cnt = 7;
    at.rnr_retry = 7;
    at.max_rd_atomic = 4;
    if (Status s = qp.modify(at, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                     kQpMaxQpRdAtomic);
        !s)
        return "RTS: " + s.message();
    return "";
}

/* Two devices on a ring pair, `pairs` connected QP pairs A->B. B grants REMOTE_WRITE only
 * (least privilege: the legitimate traffic is WRITEs). Returns "" or what failed. */
struct Bed {
    std::unique_ptr<Engine> engine;
    Side a, b;
    uint16_t port_a = 0;
    uint32_t max_qps = 1024;

    std::string open(std::unique_ptr<Engine> e, uint32_t pairs) {
        engine = std::move(e);
        auto ports = engine->create_ring_pair();
        if (!ports)
            return "create_ring_pair: " + ports.status().message();
        if (rte_eth_dev_get_port_by_name(ports->first.c_str(), &port_a) != 0)
            return "no port " + ports->first;
        DeviceConfig ca;
        ca.port = ports->first;
        ca.ipv4_cidr = "10.77.0.1/24";
        ca.mac = "02:00:00:00:01:01";
        ca.mtu = 1500;
        ca.max_qps = max_qps;
        DeviceConfig cb = ca;
        cb.port = ports->second;
        cb.ipv4_cidr = "10.77.0.2/24";
        cb.mac = "02:00:00:00:01:02";
        auto da = engine->open_device(ca);
        if (!da)
            return "open_device A: " + da.status().message();
        auto db = engine->open_device(cb);
        if (!db)
            return "open_device B: " + db.status().message();
        if (Status s = engine->start(); !s)
            return "start: " + s.message();
        for (Side *s : {&a, &b}) {
            s->dev = s == &a ? *da : *db;
            auto pd = s->dev->alloc_pd();
            if (!pd)
                return "alloc_pd: " + pd.status().message();
            s->pd = std::move(*pd);
            auto cq = s->dev->create_cq(4096);
            if (!cq)
                return "create_cq: " + cq.status().message();
            s->cq = std::move(*cq);
            s->buf.assign(static_cast<size_t>(pairs) * kSlots * kMsg, 0);
            const uint32_t rights =
                s == &a ? kAccessLocalWrite : kAccessLocalWrite | kAccessRemoteWrite;
            auto mr = s->pd->reg_mr(s->buf.data(), s->buf.size(), rights);
            if (!mr)
                return "reg_mr: " + mr.status().message();
            s->mr = std::move(*mr);
            for (uint32_t q = 0; q < pairs; ++q) {
                QpInitAttr at;
                at.send_cq = at.recv_cq = s->cq.get();
                at.cap.max_send_wr = 64;
                at.cap.max_recv_wr = 2;
                auto qp = s->pd->create_qp(at);
                if (!qp)
                    return "create_qp: " + qp.status().message();
                s->qps.push_back(std::move(*qp));
            }
        }
        const Gid ga = a.dev->gids().at(1).gid, gb = b.dev->gids().at(1).gid;
        for (uint32_t q = 0; q < pairs; ++q) {
            std::string e1 = connect_qp(*a.qps[q], gb, b.qps[q]->qp_num(), 0x900, kPsnA2B, 0);
            if (!e1.empty())
                return "A " + e1;
            e1 = connect_qp(*b.qps[q], ga, a.qps[q]->qp_num(), kPsnA2B, 0x900, kAccessRemoteWrite);
            if (!e1.empty())
                return "B " + e1;
        }
        return "";
    }
    void close() {
        a.close();
        b.close();
        engine.reset();
    }
};

/* One run's figures. */
struct RunResult {
    double wr_per_s = 0;    /* legitimate WRs completed per second (measured window) */
    double flood_per_s = 0; /* flood frames injected per second (measured window) */
    /* WRs per second of the thread's time not spent by the attacker building and
     * enqueueing its frames (in one process the attacker shares the receiver's core). */
    double wr_per_s_net = 0;
    uint64_t completed = 0;   /* WRs completed, whole run (warm-up and drain included) */
    uint64_t wr_errors = 0;   /* completions not Success, failed posts */
    uint64_t data_errors = 0; /* completed WRs whose bytes at B were wrong */
    uint64_t injected = 0, refused = 0;
    uint64_t flood_counted = 0;     /* delta of B's flood counters (is_flood_counter) */
    int64_t mbuf_delta = 0;         /* engine mbufs in use after - before */
    int64_t flood_pool_missing = 0; /* flood pool mbufs not back */
    std::map<std::string, uint64_t> deltas_a, deltas_b; /* non-zero counter deltas */
    bool stalled = false;
    std::string error;
};

inline std::map<std::string, uint64_t> deltas(const std::map<std::string, uint64_t> &before,
                                              const std::map<std::string, uint64_t> &after) {
    static const char *gauges[] = {"tx_queue_depth", "ready_qps", "armed_timers",      "qps",
                                   "mbufs_in_use",   "workers",   "tx_queue_depth_max"};
    std::map<std::string, uint64_t> d;
    for (const auto &[k, v] : after) {
        const std::string &key = k;
        if (std::find_if(std::begin(gauges), std::end(gauges),
                         [&](const char *g) { return key == g; }) != std::end(gauges))
            continue;
        const auto it = before.find(k);
        const uint64_t was = it == before.end() ? 0 : it->second;
        if (v != was)
            d[k] = v - was;
    }
    return d;
}

/* Engine-wide mbufs in use once B's RX ring is empty and every legitimate WR is done:
 * polls until the gauge stops moving (ACK coalescing may hold a frame a moment). */
inline uint64_t settled_mbufs(Engine &e, const Device &d) {
    uint64_t last = ~0ull;
    for (int i = 0; i < 200; ++i) {
        for (int j = 0; j < 50; ++j)
            e.poll();
        const uint64_t now = counter_map(d).at("mbufs_in_use");
        if (now == last)
            return now;
        last = now;
    }
    return last;
}

/* Runs legitimate traffic for warmup + seconds with the flood at flood_pps frames/s
 * (0: none), then stops posting, drains (every WR completes), and lets B consume the rest
 * of the flood. */
inline RunResult run(Bed &bed, Legit &lg, Flooder &fl, double flood_pps, double warmup,
                     double seconds) {
    RunResult r;
    Engine &e = *bed.engine;
    fl.prepare();
    const uint64_t mb0 = settled_mbufs(e, *bed.a.dev);
    const uint32_t pool0 = fl.pool_free();
    const auto ca0 = counter_map(*bed.a.dev), cb0 = counter_map(*bed.b.dev);
    const uint64_t c_start = lg.completed, e_start = lg.errors, d_start = lg.data_errors;
    const uint64_t inj_start = fl.injected, ref_start = fl.refused;
    const double hz = static_cast<double>(rte_get_tsc_hz());
    const uint64_t t_start = rte_rdtsc();
    const uint64_t t_meas = t_start + static_cast<uint64_t>(warmup * hz);
    const uint64_t t_end = t_meas + static_cast<uint64_t>(seconds * hz);
    uint64_t c_meas = 0, inj_meas = 0, cyc_meas = 0, last_tsc = t_start, last_progress = t_start;
    uint64_t seen = lg.completed;
    double credit = 0;
    bool measuring = false;
    for (uint64_t it = 0;; ++it) {
        lg.top_up(true);
        e.poll();
        lg.reap();
        const uint64_t now = rte_rdtsc();
        if (flood_pps > 0) {
            credit += static_cast<double>(now - last_tsc) / hz * flood_pps;
            /* A burst at most per iteration (the attacker's NIC has a TX ring too); a
             * backlog beyond it is not carried over. */
            credit = std::min(credit, 64.0);
            const uint32_t n = static_cast<uint32_t>(credit);
            if (n > 0) {
                fl.inject(n);
                credit -= n;
            }
        }
        last_tsc = now;
        if (lg.completed != seen) {
            seen = lg.completed;
            last_progress = now;
        } else if (now - last_progress > static_cast<uint64_t>(10 * hz)) {
            r.stalled = true;
            r.error = "no completion for 10 s";
            break;
        }
        if (!measuring && now >= t_meas) {
            measuring = true;
            c_meas = lg.completed;
            inj_meas = fl.injected;
            cyc_meas = fl.cycles;
        } else if (measuring && now >= t_end) {
            const double dt = static_cast<double>(now - t_meas) / hz;
            r.wr_per_s = static_cast<double>(lg.completed - c_meas) / dt;
            r.flood_per_s = static_cast<double>(fl.injected - inj_meas) / dt;
            const double net = dt - static_cast<double>(fl.cycles - cyc_meas) / hz;
            r.wr_per_s_net = net > 0 ? static_cast<double>(lg.completed - c_meas) / net : 0;
            break;
        }
    }
    /* Drain: no new WRs; every outstanding one must complete. */
    const uint64_t t_drain = rte_rdtsc();
    while (lg.outstanding() > 0 && !r.stalled) {
        e.poll();
        lg.reap();
        if (rte_rdtsc() - t_drain > static_cast<uint64_t>(10 * hz)) {
            r.stalled = true;
            r.error = "drain: " + std::to_string(lg.outstanding()) + " WRs never completed";
        }
    }
    const uint64_t mb1 = settled_mbufs(e, *bed.a.dev);
    const auto ca1 = counter_map(*bed.a.dev), cb1 = counter_map(*bed.b.dev);
    r.completed = lg.completed - c_start;
    r.wr_errors = lg.errors - e_start;
    r.data_errors = lg.data_errors - d_start;
    r.injected = fl.injected - inj_start;
    r.refused = fl.refused - ref_start;
    r.deltas_a = deltas(ca0, ca1);
    r.deltas_b = deltas(cb0, cb1);
    for (const auto &[k, v] : r.deltas_b)
        if (is_flood_counter(k))
            r.flood_counted += v;
    r.mbuf_delta = static_cast<int64_t>(mb1) - static_cast<int64_t>(mb0);
    r.flood_pool_missing = static_cast<int64_t>(pool0) - static_cast<int64_t>(fl.pool_free());
    if (r.error.empty() && !lg.first_error.empty())
        r.error = lg.first_error;
    return r;
}

/* Fills the flooder's addresses from the bed. */
inline void aim(Flooder &fl, const Bed &bed, const Legit &lg) {
    fl.port = bed.port_a;
    std::memcpy(fl.mac_a, "\x02\x00\x00\x00\x01\x01", 6);
    std::memcpy(fl.mac_b, "\x02\x00\x00\x00\x01\x02", 6);
    fl.ip_a = 0x0A4D0001;
    fl.ip_b = 0x0A4D0002;
    fl.max_qps = bed.max_qps;
    fl.b_qpns.clear();
    for (const auto &q : bed.b.qps)
        fl.b_qpns.push_back(q->qp_num());
    fl.legit = &lg;
}

} // namespace droce::flood
