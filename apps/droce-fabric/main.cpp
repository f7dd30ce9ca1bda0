/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-fabric: a congestion point you can run (issue 10). A learning Ethernet switch
 * between two or more DPDK ports (the same vdevs the droce processes use: net_memif
 * servers, net_vhost, ...) whose egress toward chosen ports passes a lib/fabric bottleneck:
 * rate, buffer, RED/ECN marking (Kmin, Kmax, Pmax; ECT frames get CE, the IPv4 checksum is
 * fixed, the RoCE ICRC masks those bits), tail drop, optional loss and delay, and queue
 * depth sampled to a CSV. The same model drives the simulator's experiments.
 * With --pfc XOFF,XON the queue also sends IEEE 802.1Qbb pause frames upstream: per ingress
 * port, as switches account it, an XOFF (full pause time, refreshed at half of it) when the
 * port's bytes in the queue reach XOFF and an XON (pause time 0) when they fall to XON, for
 * the priority of the frame that crossed XOFF (PCP if tagged, else DSCP >> 3: a switch that
 * trusts DSCP). MAC Control frames are never forwarded (counted as drop_mac_ctrl).
 * With --honour-pfc PRIO a bottleneck queue also obeys the pause frames its egress port
 * receives for PRIO (a leaf switch whose uplink the next hop pauses): the queue holds
 * its frames for the pause time and resumes at its rate, so with --pfc too the pause
 * spreads upstream to every sender sharing that link (head-of-line blocking).
 *
 * One lcore polls every port. Frames toward a port without a bottleneck leave at once.
 * Usage: droce-fabric [EAL args] -- [options]   (--help lists them)
 */
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <sys/prctl.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config_device.h"
#include "drivers.h"
#include "fabric_bottleneck.h"
#include "fabric_faults.h"
#include "fabric_options.h"
#include "net_pfc.h"
#include "poll_gate.h"

using droce::fabric::Bottleneck;
using droce::fabric::BottleneckParams;
using droce::fabric::DepthSample;
using droce::fabric_app::kMaxPorts;
using droce::fabric_app::Opts;

namespace {

constexpr uint16_t kBurst = 32;
constexpr uint16_t kDescriptors = 1024;
/* 2 KB buffers: larger frames arrive chained (the model needs only the headers in the
 * first segment); 32 K of them hold a 2 MB queue of small frames with room to spare. */
constexpr uint16_t kDataRoom = RTE_MBUF_DEFAULT_BUF_SIZE;
constexpr uint32_t kMbufs = 32767;
constexpr size_t kMacs = 256;           /* learned addresses */
constexpr size_t kSamples = 1u << 16;   /* depth samples buffered between CSV writes */
constexpr size_t kDelayLine = 1u << 16; /* frames in the fixed delay after a queue */

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

constexpr uint16_t kFullPause = 0xFFFF; /* quanta of an XOFF */

/* A fixed-size FIFO of mbufs with a time each (no allocation after construction). */
struct MbufFifo {
    explicit MbufFifo(size_t cap) : m(cap), t(cap), port(cap) {}
    bool push(rte_mbuf *x, uint64_t at, uint16_t to) {
        if (n == m.size())
            return false;
        const size_t i = (h + n) % m.size();
        m[i] = x;
        t[i] = at;
        port[i] = to;
        ++n;
        return true;
    }
    rte_mbuf *front() const { return m[h]; }
    uint64_t front_time() const { return t[h]; }
    uint16_t front_port() const { return port[h]; }
    void pop() {
        h = (h + 1) % m.size();
        --n;
    }
    std::vector<rte_mbuf *> m;
    std::vector<uint64_t> t;
    std::vector<uint16_t> port; /* egress port of each frame */
    size_t h = 0, n = 0;
};

/* One bottleneck: the model, the frames it holds (with their egress port), the delay line
 * after it and its depth samples. */
struct Queue {
    uint16_t id = 0; /* the CSV's port column: the first port it serves */
    std::unique_ptr<Bottleneck> q;
    std::unique_ptr<MbufFifo> held;  /* frames in q, in q's order */
    std::unique_ptr<MbufFifo> delay; /* departed, waiting for delay_ns */
    std::vector<DepthSample> samples;
    uint64_t next_sample = 0;
    uint64_t drop_delay = 0;
    /* --honour-pfc: held by a pause from the next hop until paused_until */
    bool held_by_pause = false;
    uint64_t paused_until = 0, hold_since = 0, held_ns = 0;
};

struct Port {
    uint16_t id = 0;
    Queue *q = nullptr; /* no bottleneck toward this port */
    rte_mbuf *txb[kBurst];
    uint16_t ntx = 0;
    uint64_t rx = 0, tx = 0, tx_full = 0, drop_self = 0, drop_head = 0, drop_mac_ctrl = 0;
    /* PFC toward this port's sender (this port as an ingress port) */
    rte_ether_addr mac{};
    bool paused = false; /* an XOFF stands */
    uint8_t pause_prio = 0;
    uint64_t pause_sent_at = 0; /* last XOFF, for the refresh */
    uint64_t refresh_ns = 0;    /* half a full pause at the link's speed */
    uint64_t pfc_xoff = 0, pfc_xon = 0, pfc_refresh = 0, pfc_nombuf = 0;
    uint64_t paused_ns = 0;
    uint64_t speed_bps = 0;         /* 0: unknown (pause times taken at 100 Gb/s) */
    uint64_t rx_pfc_honoured = 0;   /* --honour-pfc: pause frames that held our queue */
    bool hold_intr_on_stop = false; /* drivers::Caps::control_on_intr_thread */
    /* --reorder: the frame held back toward this port, its ingress port and the loop
     * iteration it was held in (released when the next frame passes it, or at the end of
     * the next iteration when none came) */
    rte_mbuf *held = nullptr;
    uint16_t held_in = 0;
    uint64_t held_iter = 0;
};

struct Mac {
    uint8_t a[6];
    uint16_t port;
};

uint64_t ns_now(uint64_t hz) {
    const uint64_t c = rte_rdtsc();
    /* split so nothing overflows: (c % hz) · 10^9 < hz · 10^9 < 2^64 below 18 GHz */
    return c / hz * 1'000'000'000u + (c % hz) * 1'000'000'000u / hz;
}

void flush_tx(Port &p) {
    if (p.ntx == 0)
        return;
    const uint16_t k = rte_eth_tx_burst(p.id, 0, p.txb, p.ntx);
    p.tx += k;
    if (k < p.ntx) {
        /* the peer's ring is full: the frame is lost as on a wire with no one listening */
        p.tx_full += p.ntx - k;
        rte_pktmbuf_free_bulk(p.txb + k, static_cast<unsigned>(p.ntx - k));
    }
    p.ntx = 0;
}

void tx_one(Port &p, rte_mbuf *m) {
    p.txb[p.ntx++] = m;
    if (p.ntx == kBurst)
        flush_tx(p);
}

/* The priority a switch trusting DSCP gives a frame: PCP if tagged, else DSCP >> 3 (as the
 * droce engine reads it, lib/engine Shard::frame_prio). */
uint8_t frame_prio(const uint8_t *f, uint32_t len) {
    if (len >= 18 && f[12] == 0x81 && f[13] == 0x00)
        return static_cast<uint8_t>(f[14] >> 5);
    if (len >= 16 && f[12] == 0x08 && f[13] == 0x00)
        return static_cast<uint8_t>(f[15] >> 5); /* IPv4 TOS */
    if (len >= 16 && f[12] == 0x86 && f[13] == 0xDD)
        return static_cast<uint8_t>((f[14] & 0x0F) >> 1); /* IPv6 traffic class bits 7:5 */
    return 0;
}

/* Sends a PFC frame for p.pause_prio out of port p (toward its sender). */
void send_pfc(Port &p, rte_mempool *mp, uint16_t quanta) {
    rte_mbuf *m = rte_pktmbuf_alloc(mp);
    if (m == nullptr) {
        ++p.pfc_nombuf;
        return;
    }
    droce::net::PfcFrame f;
    f.enable = static_cast<uint8_t>(1u << p.pause_prio);
    f.quanta[p.pause_prio] = quanta;
    droce::net::Mac src;
    std::memcpy(src.data(), p.mac.addr_bytes, 6);
    char *d = rte_pktmbuf_append(m, 60);
    const size_t n = d ? droce::net::build_pfc(src, f, reinterpret_cast<uint8_t *>(d), 60) : 0;
    if (n == 0) {
        ++p.pfc_nombuf;
        rte_pktmbuf_free(m);
        return;
    }
    tx_one(p, m);
}

void write_samples(FILE *f, Queue &p, uint64_t every) {
    const size_t n = p.q->samples();
    if (f)
        for (size_t i = 0; i < n; ++i)
            std::fprintf(f, "%.3f,%u,%u,%u\n", static_cast<double>(p.samples[i].t) / 1e3, p.id,
                         p.samples[i].bytes, p.samples[i].frames);
    const uint64_t next = n ? p.samples[n - 1].t + every : p.next_sample;
    p.q->set_sampling(every, p.samples.data(), p.samples.size(), next);
    p.next_sample = next;
}

/* The switch: its ports, bottleneck queues, learned addresses and fault injector. Every
 * container is sized at set-up; the loop allocates nothing but mbufs. */
struct Fabric {
    explicit Fabric(const Opts &opts) : o(opts) {}
    const Opts &o;
    rte_mempool *mp = nullptr;
    uint16_t nports = 0;
    std::vector<Port> ports;
    std::vector<std::unique_ptr<Queue>> queues;
    FILE *csv = nullptr;
    Mac macs[kMacs];
    size_t nmacs = 0;
    uint64_t flood = 0, mac_full = 0;
    /* Dup, reorder and corrupt toward the bottleneck ports (loss is the bottleneck's). */
    std::unique_ptr<droce::fabric::FaultInjector> faults;
    uint64_t iter = 0;
    uint64_t hz = 0, t0 = 0, every = 0;
};

// ---------------------------------------------------------------- set-up

/* Configures and starts port id with o.queues RX/TX queues (jumbo frames where the port
 * allows them) and reads what PFC needs: its MAC and link speed. */
bool set_up_port(Fabric &f, uint16_t id) {
    Port &p = f.ports[id];
    p.id = id;
    rte_eth_conf conf{};
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(id, &info);
    p.hold_intr_on_stop = droce::drivers::probe(id, info).control_on_intr_thread;
    /* memif: a client that leaves must not unmap the rings under our bursts */
    if (p.hold_intr_on_stop)
        droce::drivers::poll_gate_add_port(id);
    uint32_t port_max = info.max_mtu != 0 ? info.max_mtu : UINT16_MAX;
    if (info.max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN)
        port_max = std::min<uint32_t>(port_max,
                                      info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN);
    if (port_max >= 9000)
        conf.rxmode.mtu = 9000;
    uint16_t nrxd = kDescriptors, ntxd = kDescriptors;
    const uint16_t nq = f.o.queues;
    bool ok = rte_eth_dev_configure(id, nq, nq, &conf) == 0 &&
              rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrxd, &ntxd) == 0;
    for (uint16_t qi = 0; ok && qi < nq; ++qi)
        ok = rte_eth_rx_queue_setup(id, qi, nrxd, rte_socket_id(), nullptr, f.mp) == 0 &&
             rte_eth_tx_queue_setup(id, qi, ntxd, rte_socket_id(), nullptr) == 0;
    if (!ok || rte_eth_dev_start(id) != 0) {
        std::fprintf(stderr, "droce-fabric: port %u set-up failed\n", id);
        return false;
    }
    rte_eth_promiscuous_enable(id);
    rte_eth_macaddr_get(id, &p.mac);
    rte_eth_link link{};
    rte_eth_link_get_nowait(id, &link);
    const uint64_t speed = link.link_speed != 0 && link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN
                               ? uint64_t{link.link_speed} * 1'000'000
                               : 0; /* pfc_pause_ns takes 0 as 100 Gb/s, as the engine does */
    p.refresh_ns = droce::net::pfc_pause_ns(kFullPause, speed) / 2;
    p.speed_bps = speed;
    return true;
}

/* A --to port's bottleneck: its own, or with --shared the one queue of them all. */
void attach_queue(Fabric &f, Port &p) {
    for (uint16_t t : f.o.to)
        if (t == p.id) {
            if (f.queues.empty() || !f.o.shared) {
                auto q = std::make_unique<Queue>();
                q->id = p.id;
                q->q = std::make_unique<Bottleneck>(f.o.bp, f.o.seed + p.id);
                q->held = std::make_unique<MbufFifo>(f.o.bp.buffer_bytes / 60 + 1);
                q->delay = std::make_unique<MbufFifo>(kDelayLine);
                q->samples.resize(kSamples);
                f.queues.push_back(std::move(q));
            }
            p.q = f.queues.back().get();
        }
}

/* The mbuf pool, every port, the bottlenecks, the CSV and the clocks: 0, or the exit
 * status (1 for DPDK failures, 2 for the command line's). */
int set_up(Fabric &f) {
    f.nports = rte_eth_dev_count_avail();
    if (f.nports < 2 || f.nports > kMaxPorts) {
        std::fprintf(stderr, "droce-fabric: need 2..%u ports, have %u (give --vdev)\n", kMaxPorts,
                     f.nports);
        return 2;
    }
    for (uint16_t t : f.o.to)
        if (t >= f.nports) {
            std::fprintf(stderr, "droce-fabric: --to %u: only ports 0..%u exist\n", t,
                         f.nports - 1);
            return 2;
        }
    f.mp = rte_pktmbuf_pool_create("fabric_pool", kMbufs, 256, 0, kDataRoom, rte_socket_id());
    if (f.mp == nullptr) {
        std::fprintf(stderr, "droce-fabric: rte_pktmbuf_pool_create failed\n");
        return 1;
    }
    f.ports.resize(f.nports);
    for (uint16_t id = 0; id < f.nports; ++id) {
        if (!set_up_port(f, id))
            return 1;
        attach_queue(f, f.ports[id]);
    }
    if (!f.o.csv.empty()) {
        f.csv = std::fopen(f.o.csv.c_str(), "w");
        if (!f.csv) {
            std::fprintf(stderr, "droce-fabric: cannot write %s\n", f.o.csv.c_str());
            return 2;
        }
        std::fprintf(f.csv, "t_us,port,depth_bytes,depth_frames\n");
    }
    if (f.o.faults.any())
        f.faults = std::make_unique<droce::fabric::FaultInjector>(f.o.faults, f.o.seed);
    f.hz = rte_get_tsc_hz();
    f.t0 = ns_now(f.hz);
    f.every = f.o.sample_us * 1000;
    for (auto &q : f.queues)
        q->q->set_sampling(f.every, q->samples.data(), q->samples.size(), 0);
    return 0;
}

/* The first line out, once every port has started: the signal for its peers. Its memif
 * sockets exist from the EAL's probe on, and DPDK 22.11's memif refuses a client that
 * connects before the port starts (droce's engine tries again after 0.5 s; a plain DPDK
 * client never does). */
void print_banner(const Fabric &f) {
    const Opts &o = f.o;
    std::printf("droce-fabric: %u ports, bottleneck toward", f.nports);
    for (uint16_t t : o.to)
        std::printf(" %u", t);
    std::printf(": %.3f Gb/s, buffer %u B, ECN %s Kmin %u Kmax %u Pmax %.3f at %s, loss %g, "
                "delay %llu ns\n",
                static_cast<double>(o.bp.rate_bps) / 1e9, o.bp.buffer_bytes,
                o.bp.ecn ? "on" : "off", o.bp.kmin_bytes, o.bp.kmax_bytes, o.bp.pmax,
                o.bp.mark_at_dequeue ? "dequeue" : "enqueue", o.bp.loss,
                static_cast<unsigned long long>(o.bp.delay_ns));
    if (o.bp.pfc_xoff_bytes)
        std::printf("droce-fabric: PFC XOFF %u B XON %u B per ingress port\n", o.bp.pfc_xoff_bytes,
                    o.bp.pfc_xon_bytes);
    if (o.faults.any())
        std::printf("droce-fabric: faults toward the bottleneck ports: dup %g reorder %g "
                    "corrupt %g\n",
                    o.faults.dup, o.faults.reorder, o.faults.corrupt);
    if (o.honour_pfc >= 0)
        std::printf("droce-fabric: bottleneck queues obey pause frames for priority %d\n",
                    o.honour_pfc);
    std::fflush(stdout);
}

// ---------------------------------------------------------------- the frames' path

/* Frame m (headers in its first segment) from port `in` into out's bottleneck. */
void enqueue(Fabric &f, rte_mbuf *m, Port &in, Port &out, uint64_t now) {
    const uint32_t len = m->pkt_len;
    uint8_t *bytes = rte_pktmbuf_mtod(m, uint8_t *);
    const auto d = out.q->q->enqueue(bytes, len, now, static_cast<uint8_t>(in.id));
    if (d.pfc == droce::fabric::PfcSignal::xoff) {
        in.paused = true;
        in.pause_prio = frame_prio(bytes, len);
        in.pause_sent_at = now;
        ++in.pfc_xoff;
        send_pfc(in, f.mp, kFullPause);
    }
    if (!d.accepted()) {
        rte_pktmbuf_free(m); /* counted by the model */
        return;
    }
    out.q->held->push(m, 0, out.id); /* the model had a slot: so has the FIFO */
}

/* Frame m from port `in` toward port `out`: into out's bottleneck or straight out. */
void forward(Fabric &f, rte_mbuf *m, Port &in, Port &out, uint64_t now) {
    if (!out.q) {
        tx_one(out, m);
        return;
    }
    /* The model reads the headers in place: they must be in the first segment. */
    if (m->data_len < std::min<uint32_t>(m->pkt_len, 128)) {
        ++out.drop_head;
        rte_pktmbuf_free(m);
        return;
    }
    /* A flooded frame is shared by every port it goes to: left alone. */
    if (!f.faults || rte_mbuf_refcnt_read(m) != 1) {
        enqueue(f, m, in, out, now);
        return;
    }
    const auto a = f.faults->decide(m->data_len, out.held == nullptr);
    droce::fabric::FaultInjector::corrupt(rte_pktmbuf_mtod(m, uint8_t *), a);
    rte_mbuf *dup = nullptr;
    if (a.dup && (dup = rte_pktmbuf_copy(m, f.mp, 0, UINT32_MAX)) == nullptr)
        f.faults->dup_failed(); /* only faulted frames are copied */
    if (a.hold) {
        out.held = m;
        out.held_in = in.id;
        out.held_iter = f.iter;
    } else {
        enqueue(f, m, in, out, now);
        if (out.held) {
            f.faults->overtaken();
            enqueue(f, out.held, f.ports[out.held_in], out, now);
            out.held = nullptr;
        }
    }
    if (dup)
        enqueue(f, dup, in, out, now);
}

/* A MAC Control frame from port `in`: a pause for --honour-pfc holds in's queue; any
 * other is dropped (link-local: a switch acts on or drops MAC Control, never forwards). */
void on_mac_control(Fabric &f, rte_mbuf *m, Port &in, uint64_t now) {
    const int prio = f.o.honour_pfc;
    droce::net::PfcFrame pf;
    if (prio >= 0 && in.q && m->data_len == m->pkt_len &&
        droce::net::parse_pfc(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len, &pf) ==
            droce::net::PfcResult::Ok &&
        (pf.enable >> prio & 1) != 0) {
        /* the next hop pauses our egress toward it: hold the queue (quanta 0 resumes it
         * in drain_queues) */
        Queue &q = *in.q;
        q.paused_until = now + droce::net::pfc_pause_ns(pf.quanta[prio], in.speed_bps);
        if (!q.held_by_pause) {
            q.held_by_pause = true;
            q.hold_since = now;
        }
        ++in.rx_pfc_honoured;
    } else {
        ++in.drop_mac_ctrl;
    }
    rte_pktmbuf_free(m);
}

/* Learns eth's source on port `in`; returns the port its destination was learnt on, or
 * -1 (unknown or a group address: flood). */
int learn_and_look_up(Fabric &f, const rte_ether_hdr *eth, const Port &in) {
    size_t k = 0;
    while (k < f.nmacs && std::memcmp(f.macs[k].a, eth->src_addr.addr_bytes, 6) != 0)
        ++k;
    if (k == f.nmacs) {
        if (f.nmacs < kMacs) {
            std::memcpy(f.macs[f.nmacs].a, eth->src_addr.addr_bytes, 6);
            ++f.nmacs;
        } else {
            ++f.mac_full;
            k = kMacs;
        }
    }
    if (k < kMacs)
        f.macs[k].port = in.id;
    if (rte_is_multicast_ether_addr(&eth->dst_addr))
        return -1;
    for (size_t j = 0; j < f.nmacs; ++j)
        if (std::memcmp(f.macs[j].a, eth->dst_addr.addr_bytes, 6) == 0)
            return f.macs[j].port;
    return -1;
}

/* One received frame: MAC Control, back where it came from, to its port, or flooded. */
void on_frame(Fabric &f, rte_mbuf *m, Port &in, uint64_t now) {
    const auto *eth = rte_pktmbuf_mtod(m, const rte_ether_hdr *);
    if (eth->ether_type == rte_cpu_to_be_16(droce::net::kEtherTypeMacControl)) {
        on_mac_control(f, m, in, now);
        return;
    }
    const int out = learn_and_look_up(f, eth, in);
    if (out == in.id) {
        ++in.drop_self;
        rte_pktmbuf_free(m);
    } else if (out >= 0) {
        forward(f, m, in, f.ports[static_cast<size_t>(out)], now);
    } else {
        ++f.flood;
        /* every other port gets the same mbuf (one reference each); a bottleneck may set
         * CE in it, which the other copies then carry too (flooded frames are ARP and the
         * like in practice: not ECN-capable) */
        rte_mbuf_refcnt_update(m, static_cast<int16_t>(f.nports - 2));
        for (Port &p : f.ports)
            if (p.id != in.id)
                forward(f, m, in, p, now);
    }
}

/* Every port's every RX queue once: true when a frame came. */
bool receive(Fabric &f, uint64_t now) {
    rte_mbuf *rx[kBurst];
    bool busy = false;
    for (uint16_t rxq = 0; rxq < f.o.queues * f.nports; ++rxq) {
        Port &in = f.ports[rxq % f.nports];
        const uint16_t n = rte_eth_rx_burst(in.id, rxq / f.nports, rx, kBurst);
        in.rx += n;
        busy = busy || n != 0;
        for (uint16_t i = 0; i < n; ++i)
            on_frame(f, rx[i], in, now);
    }
    return busy;
}

/* Each queue: the end of a pause, the departures due (an XON upstream where one is due),
 * the delay line, the depth samples. True when a frame departed. */
bool drain_queues(Fabric &f, uint64_t now) {
    bool busy = false;
    for (auto &qp : f.queues) {
        Queue &q = *qp;
        if (q.held_by_pause && now >= q.paused_until) {
            q.held_by_pause = false;
            q.held_ns += now - q.hold_since;
            q.q->restart(now);
        }
        while (!q.held_by_pause && q.q->next_departure() <= now) {
            busy = true;
            rte_mbuf *m = q.held->front();
            const uint16_t to = q.held->front_port();
            const auto d = q.q->dequeue(now, rte_pktmbuf_mtod(m, uint8_t *));
            q.held->pop();
            if (d.pfc == droce::fabric::PfcSignal::xon && d.ingress < f.nports) {
                Port &up = f.ports[d.ingress];
                up.paused = false;
                up.paused_ns += now - up.pause_sent_at;
                ++up.pfc_xon;
                send_pfc(up, f.mp, 0);
            }
            if (f.o.bp.delay_ns == 0)
                tx_one(f.ports[to], m);
            else if (!q.delay->push(m, d.deliver_at, to)) {
                ++q.drop_delay;
                rte_pktmbuf_free(m);
            }
        }
        while (q.delay->n && q.delay->front_time() <= now) {
            tx_one(f.ports[q.delay->front_port()], q.delay->front());
            q.delay->pop();
        }
        if (q.q->samples() >= kSamples / 2)
            write_samples(f.csv, q, f.every);
    }
    return busy;
}

/* The loop: receive, release reordered frames nothing passed, drain the queues, refresh
 * standing pauses, flush; until SIGINT/SIGTERM or --secs. Returns the run's length (ns).
 * This loop is every port's poller: it bursts only while the poll gate is open
 * (drivers/poll_gate.h), so a memif client's leaving is handled between bursts. */
uint64_t run(Fabric &f, droce::drivers::PollerSlot *gate) {
    while (!g_stop) {
        if (gate != nullptr)
            droce::drivers::poll_gate_pass(gate);
        ++f.iter;
        const uint64_t now = ns_now(f.hz) - f.t0;
        if (f.o.secs > 0 && static_cast<double>(now) > f.o.secs * 1e9)
            break;
        bool busy = receive(f, now);
        for (Port &p : f.ports)
            if (p.held && p.held_iter != f.iter) { /* nothing came to pass it: let it go */
                rte_mbuf *m = p.held;
                p.held = nullptr;
                enqueue(f, m, f.ports[p.held_in], p, now);
            }
        busy = drain_queues(f, now) || busy;
        for (Port &p : f.ports) {
            if (p.paused && now - p.pause_sent_at >= p.refresh_ns) {
                /* a standing XOFF is repeated before the peer's pause runs out */
                p.paused_ns += now - p.pause_sent_at;
                p.pause_sent_at = now;
                ++p.pfc_refresh;
                send_pfc(p, f.mp, kFullPause);
            }
            flush_tx(p);
        }
        if (!busy && f.o.idle_us)
            std::this_thread::sleep_for(std::chrono::microseconds(f.o.idle_us));
    }
    return ns_now(f.hz) - f.t0;
}

// ---------------------------------------------------------------- the report

/* One line per port (a shared queue's counters at its first port). */
void report_port(const Port &p, uint64_t end) {
    using ull = unsigned long long;
    const bool own = p.q && p.q->id == p.id;
    const auto c = own ? p.q->q->counters() : droce::fabric::BottleneckCounters{};
    const uint64_t paused_ns = p.paused_ns + (p.paused ? end - p.pause_sent_at : 0);
    const uint64_t held_ns =
        own ? p.q->held_ns + (p.q->held_by_pause ? end - p.q->hold_since : 0) : 0;
    std::printf("port %u: rx %llu tx %llu tx_full %llu drop_self %llu drop_head %llu "
                "drop_delay %llu bottleneck %s enqueued %llu marked %llu dropped_tail %llu "
                "dropped_red %llu dropped_loss %llu max_depth_bytes %llu drop_mac_ctrl %llu "
                "pfc_xoff %llu pfc_xon %llu pfc_refresh %llu pfc_nombuf %llu paused_us %llu "
                "rx_pfc_honoured %llu held_us %llu\n",
                p.id, ull{p.rx}, ull{p.tx}, ull{p.tx_full}, ull{p.drop_self}, ull{p.drop_head},
                ull{own ? p.q->drop_delay : 0},
                own   ? "yes"
                : p.q ? "shared"
                      : "no",
                ull{c.enqueued}, ull{c.marked}, ull{c.dropped_tail}, ull{c.dropped_red},
                ull{c.dropped_loss}, ull{c.max_depth_bytes}, ull{p.drop_mac_ctrl}, ull{p.pfc_xoff},
                ull{p.pfc_xon}, ull{p.pfc_refresh}, ull{p.pfc_nombuf}, ull{paused_ns / 1000},
                ull{p.rx_pfc_honoured}, ull{held_ns / 1000});
}

/* The last samples to the CSV, then the per-port lines, the faults, the poll gate and the
 * switch's own counters. */
void report(Fabric &f, uint64_t end) {
    using ull = unsigned long long;
    for (auto &q : f.queues) {
        q->q->flush_samples(end);
        write_samples(f.csv, *q, f.every);
    }
    for (const Port &p : f.ports)
        report_port(p, end);
    if (f.faults) {
        const auto &c = f.faults->counters();
        std::printf("faults duplicated %llu reordered %llu corrupted %llu dup_failed %llu\n",
                    ull{c.duplicated}, ull{c.reordered}, ull{c.corrupted}, ull{c.dup_failed});
    }
    const droce::drivers::PollGateStats gs = droce::drivers::poll_gate_stats();
    std::printf("poll gate: turns %llu parks %llu ack_timeouts %llu\n", ull{gs.turns},
                ull{gs.parks}, ull{gs.ack_timeouts});
    std::printf("flooded %llu mac_table_full %llu secs %.3f\n", ull{f.flood}, ull{f.mac_full},
                static_cast<double>(end) / 1e9);
}

} // namespace

int main(int argc, char **argv) {
    droce::fabric_app::CommandLine cl;
    switch (droce::fabric_app::parse_command_line(argc, argv, cl)) {
    case droce::app::ParseResult::ExitOk:
        return 0;
    case droce::app::ParseResult::ExitError:
        return 2;
    case droce::app::ParseResult::Run:
        break;
    }
    std::vector<char *> eal;
    for (auto &a : cl.eal)
        eal.push_back(a.data());
    if (rte_eal_init(static_cast<int>(eal.size()), eal.data()) < 0) {
        std::fprintf(stderr, "droce-fabric: rte_eal_init failed\n");
        return 1;
    }
    Fabric f(cl.opts);
    if (const int rc = set_up(f); rc != 0)
        return rc;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    /* the default 50 µs timer slack would stretch every idle sleep by that much */
    if (f.o.idle_us)
        prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    print_banner(f);

    droce::drivers::PollerSlot *const gate = droce::drivers::poll_gate_join();
    if (gate != nullptr)
        droce::drivers::poll_gate_online(gate);
    const uint64_t end = run(f, gate);
    report(f, end);
    if (f.csv)
        std::fclose(f.csv);
    droce::drivers::poll_gate_leave(gate);
    for (Port &p : f.ports) {
        /* Stopped and closed, the interrupt thread held: a memif peer that ends at the
         * same time must not be handled beside our stop (drivers::stop_port). Closed, not
         * only stopped: a memif server's listening socket stays registered with the
         * interrupt thread until its port closes, and its interrupt handle lives in the
         * EAL's memory, which rte_eal_cleanup unmaps while that thread still runs (it
         * crashed reading that handle: rte_intr_fd_get). Frames still held are freed
         * with the pool at exit. */
        droce::drivers::stop_port(p.id, true, p.hold_intr_on_stop);
    }
    rte_eal_cleanup();
    return 0;
}
