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
#include "fabric_config.h"
#include "fabric_faults.h"
#include "net_pfc.h"
#include "poll_gate.h"

using droce::fabric::Bottleneck;
using droce::fabric::BottleneckParams;
using droce::fabric::DepthSample;

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
constexpr uint16_t kMaxPorts = 16;

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

struct Opts {
    std::vector<uint16_t> to{1}; /* ports whose egress is a bottleneck */
    BottleneckParams bp;
    uint64_t seed = 1;
    uint64_t sample_us = 100;
    std::string csv;
    double secs = 0;
    bool shared = false; /* one queue for all --to ports (their common upstream link) */
    int honour_pfc = -1; /* priority whose pause frames hold a bottleneck queue; -1: none */
    uint64_t idle_us = 0; /* sleep this long when a loop found nothing to do; 0: spin */
    droce::fabric::FaultParams faults; /* --dup --reorder --corrupt, toward --to ports */
    uint16_t queues = 1; /* RX/TX queues per port (a memif peer with several workers) */
};

constexpr uint16_t kFullPause = 0xFFFF; /* quanta of an XOFF */

void usage(FILE *f) {
    std::fprintf(
        f, "usage: droce-fabric [EAL args] -- [options]\n"
           "Forwards (learning switch) between every DPDK port the EAL args create; frames\n"
           "toward a --to port pass a bottleneck queue. Ports are numbered as the EAL creates\n"
           "them (the order of --vdev).\n"
           "  --to LIST          bottleneck egress ports, comma separated (default 1)\n"
           "  --shared           one bottleneck queue for all --to ports together (the link\n"
           "                     to a rack holding them: N senders to N receivers is N:1)\n"
           "  --rate-gbps R      bottleneck rate, Gb/s (default 10)\n"
           "  --buffer BYTES     queue buffer, tail drop beyond (default 2000000)\n"
           "  --kmin BYTES       RED: no marking at or below (default 5000)\n"
           "  --kmax BYTES       RED: ECT frames all marked at or above (default 200000)\n"
           "  --pmax P           RED: marking probability just below Kmax, 0..1 (default 0.05)\n"
           "  --no-ecn           no RED/ECN marking (tail drop only)\n"
           "  --red-drop         drop not-ECT frames where ECT ones would be marked\n"
           "  --mark enqueue|dequeue   RED on the depth found / left behind (default dequeue)\n"
           "  --loss P           random loss at the bottleneck, 0..1 (default 0)\n"
           "  --delay-us D       fixed delay after the queue, µs (default 0)\n"
           "  --dup P            duplicate frames toward a --to port, 0..1 (default 0)\n"
           "  --reorder P        hold a frame toward a --to port back until the next one\n"
           "                     toward that port has passed it, 0..1 (default 0)\n"
           "  --corrupt P        flip one random bit past the Ethernet header of a frame\n"
           "                     toward a --to port, 0..1 (default 0)\n"
           "  --seed N           marking/loss/fault random seed (default 1)\n"
           "  --sample-us U      queue-depth sample period, µs (default 100)\n"
           "  --csv PATH         write depth samples: t_us,port,depth_bytes,depth_frames\n"
           "  --secs S           stop after S seconds (default: run until SIGINT/SIGTERM)\n"
           "  --pfc XOFF,XON     PFC: pause an ingress port when it has XOFF bytes in a\n"
           "                     bottleneck queue, resume at XON (bytes, XON < XOFF <= buffer)\n"
           "  --honour-pfc PRIO  a bottleneck queue obeys the PFC pause frames its egress\n"
           "                     port receives for priority PRIO (0..7): it holds its\n"
           "                     frames for the pause time (one FIFO: all of them)\n"
           "  --queues N         RX and TX queues per port, 1..16 (default 1): a peer with\n"
           "                     several queues (a droce with several workers on memif)\n"
           "                     connects only with as many; all are read, queue 0 sends\n"
           "  --idle-us U        sleep U µs when a poll found no frame and none was due\n"
           "                     (default 0: spin). Coarsens departures to about U µs; for\n"
           "                     runs with more busy processes than cores\n"
           "  --config FILE      settings from a configuration file (config/fabric.conf:\n"
           "                     [eal] and [fabric]); the options given override it;\n"
           "                     'droce-fabric --config FILE' alone needs no '--'\n"
           "  --help             this text\n"
           "At exit one summary line per port (rx, tx, drops, bottleneck counters).\n");
}

[[noreturn]] void bad(const std::string &msg) {
    std::fprintf(stderr, "droce-fabric: %s (--help lists the options)\n", msg.c_str());
    std::exit(2);
}

double number(const std::string &opt, const char *v, double lo, double hi) {
    char *end = nullptr;
    const double d = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(d >= lo && d <= hi))
        bad(opt + " " + v + ": want a number in " + std::to_string(lo) + " .. " +
            std::to_string(hi));
    return d;
}

Opts parse(int argc, char **argv) {
    Opts o;
    o.bp.mark_at_dequeue = true;
    o.bp.buffer_bytes = 2'000'000;
    o.bp.pmax = 0.05;
    for (int i = 0; i < argc; ++i) {
        const std::string k = argv[i];
        auto val = [&]() -> const char * {
            if (i + 1 >= argc)
                bad(k + " needs a value");
            return argv[++i];
        };
        if (k == "--help" || k == "-h") {
            usage(stdout);
            std::exit(0);
        } else if (k == "--to") {
            o.to.clear();
            std::string s = val();
            size_t pos = 0;
            while (pos <= s.size()) {
                const size_t c = s.find(',', pos);
                const std::string t = s.substr(pos, c == std::string::npos ? s.npos : c - pos);
                o.to.push_back(static_cast<uint16_t>(number("--to", t.c_str(), 0, kMaxPorts - 1)));
                if (c == std::string::npos)
                    break;
                pos = c + 1;
            }
        } else if (k == "--rate-gbps")
            o.bp.rate_bps = static_cast<uint64_t>(number(k, val(), 0.001, 1000) * 1e9);
        else if (k == "--buffer")
            o.bp.buffer_bytes = static_cast<uint32_t>(number(k, val(), 1, 256.0 * 1024 * 1024));
        else if (k == "--kmin")
            o.bp.kmin_bytes = static_cast<uint32_t>(number(k, val(), 0, 4e9));
        else if (k == "--kmax")
            o.bp.kmax_bytes = static_cast<uint32_t>(number(k, val(), 1, 4e9));
        else if (k == "--pmax")
            o.bp.pmax = number(k, val(), 0, 1);
        else if (k == "--shared")
            o.shared = true;
        else if (k == "--no-ecn")
            o.bp.ecn = false;
        else if (k == "--red-drop")
            o.bp.red_drop = true;
        else if (k == "--mark") {
            const std::string v = val();
            if (v != "enqueue" && v != "dequeue")
                bad("--mark " + v + ": want enqueue or dequeue");
            o.bp.mark_at_dequeue = v == "dequeue";
        } else if (k == "--loss")
            o.bp.loss = number(k, val(), 0, 1);
        else if (k == "--dup")
            o.faults.dup = number(k, val(), 0, 1);
        else if (k == "--reorder")
            o.faults.reorder = number(k, val(), 0, 1);
        else if (k == "--corrupt")
            o.faults.corrupt = number(k, val(), 0, 1);
        else if (k == "--delay-us")
            o.bp.delay_ns = static_cast<uint64_t>(number(k, val(), 0, 1e7) * 1000);
        else if (k == "--seed")
            o.seed = static_cast<uint64_t>(number(k, val(), 0, 1e18));
        else if (k == "--sample-us")
            o.sample_us = static_cast<uint64_t>(number(k, val(), 1, 1e9));
        else if (k == "--csv")
            o.csv = val();
        else if (k == "--queues")
            o.queues = static_cast<uint16_t>(number(k, val(), 1, 16));
        else if (k == "--idle-us")
            o.idle_us = static_cast<uint64_t>(number(k, val(), 0, 1e6));
        else if (k == "--honour-pfc")
            o.honour_pfc = static_cast<int>(number(k, val(), 0, 7));
        else if (k == "--secs")
            o.secs = number(k, val(), 0, 1e9);
        else if (k == "--pfc") {
            const std::string v = val();
            const size_t c = v.find(',');
            if (c == std::string::npos)
                bad("--pfc " + v + ": want XOFF,XON in bytes");
            o.bp.pfc_xoff_bytes =
                static_cast<uint32_t>(number(k, v.substr(0, c).c_str(), 1, 256.0 * 1024 * 1024));
            o.bp.pfc_xon_bytes =
                static_cast<uint32_t>(number(k, v.substr(c + 1).c_str(), 0, 256.0 * 1024 * 1024));
        }
        else
            bad("unknown option " + k);
    }
    if (const char *err = droce::fabric::validate(o.bp))
        bad(err);
    if (const char *err = droce::fabric::validate(o.faults))
        bad(err);
    return o;
}

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
    bool paused = false;   /* an XOFF stands */
    uint8_t pause_prio = 0;
    uint64_t pause_sent_at = 0; /* last XOFF, for the refresh */
    uint64_t refresh_ns = 0;    /* half a full pause at the link's speed */
    uint64_t pfc_xoff = 0, pfc_xon = 0, pfc_refresh = 0, pfc_nombuf = 0;
    uint64_t paused_ns = 0;
    uint64_t speed_bps = 0;       /* 0: unknown (pause times taken at 100 Gb/s) */
    uint64_t rx_pfc_honoured = 0; /* --honour-pfc: pause frames that held our queue */
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

} // namespace

int main(int argc, char **argv) {
    int dd = argc;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--") == 0) {
            dd = i;
            break;
        }
    for (int i = 1; i < dd; ++i)
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    /* "droce-fabric --config FILE [options]": everything is ours. */
    if (dd == argc && argc > 1 && std::strncmp(argv[1], "--config", 8) == 0)
        dd = 0;
    /* --config: the file's [fabric] keys go first as options, so the options given
     * override them; its [eal] is used when no EAL argument is given. */
    std::string cfg_path, cfg_err;
    droce::fabric_app::FabricConfig cfg;
    if (!droce::app::find_config_option(argc - dd, argv + dd, cfg_path, cfg_err))
        bad(cfg_err);
    if (!cfg_path.empty()) {
        if (std::string err = droce::fabric_app::load_fabric_config(cfg_path, cfg); !err.empty()) {
            std::fprintf(stderr, "droce-fabric: %s\n", err.c_str());
            return 2;
        }
    }
    std::vector<char *> ours;
    for (auto &opt : cfg.options)
        ours.push_back(opt.data());
    for (int i = dd + 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--config") == 0) {
            ++i; /* read above */
            continue;
        }
        if (std::strncmp(argv[i], "--config=", 9) != 0)
            ours.push_back(argv[i]);
    }
    /* Our options are checked before the EAL starts: a typo costs no EAL bring-up. */
    const Opts o = parse(static_cast<int>(ours.size()), ours.data());
    std::vector<char *> eal(argv, argv + std::max(dd, 1));
    if (dd <= 1 && cfg.eal_given)
        for (auto &a : cfg.eal)
            eal.push_back(a.data());
    if (rte_eal_init(static_cast<int>(eal.size()), eal.data()) < 0) {
        std::fprintf(stderr, "droce-fabric: rte_eal_init failed\n");
        return 1;
    }
    const uint16_t nports = rte_eth_dev_count_avail();
    if (nports < 2 || nports > kMaxPorts) {
        std::fprintf(stderr, "droce-fabric: need 2..%u ports, have %u (give --vdev)\n", kMaxPorts,
                     nports);
        return 2;
    }
    for (uint16_t t : o.to)
        if (t >= nports) {
            std::fprintf(stderr, "droce-fabric: --to %u: only ports 0..%u exist\n", t, nports - 1);
            return 2;
        }
    rte_mempool *mp =
        rte_pktmbuf_pool_create("fabric_pool", kMbufs, 256, 0, kDataRoom, rte_socket_id());
    if (mp == nullptr) {
        std::fprintf(stderr, "droce-fabric: rte_pktmbuf_pool_create failed\n");
        return 1;
    }
    std::vector<Port> ports(nports);
    std::vector<std::unique_ptr<Queue>> queues;
    for (uint16_t id = 0; id < nports; ++id) {
        Port &p = ports[id];
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
            port_max = std::min<uint32_t>(port_max, info.max_rx_pktlen - RTE_ETHER_HDR_LEN -
                                                        RTE_ETHER_CRC_LEN);
        if (port_max >= 9000)
            conf.rxmode.mtu = 9000;
        uint16_t nrxd = kDescriptors, ntxd = kDescriptors;
        bool ok = rte_eth_dev_configure(id, o.queues, o.queues, &conf) == 0 &&
                  rte_eth_dev_adjust_nb_rx_tx_desc(id, &nrxd, &ntxd) == 0;
        for (uint16_t qi = 0; ok && qi < o.queues; ++qi)
            ok = rte_eth_rx_queue_setup(id, qi, nrxd, rte_socket_id(), nullptr, mp) == 0 &&
                 rte_eth_tx_queue_setup(id, qi, ntxd, rte_socket_id(), nullptr) == 0;
        if (!ok || rte_eth_dev_start(id) != 0) {
            std::fprintf(stderr, "droce-fabric: port %u set-up failed\n", id);
            return 1;
        }
        rte_eth_promiscuous_enable(id);
        rte_eth_macaddr_get(id, &p.mac);
        rte_eth_link link{};
        rte_eth_link_get_nowait(id, &link);
        const uint64_t speed =
            link.link_speed != 0 && link.link_speed != RTE_ETH_SPEED_NUM_UNKNOWN
                ? uint64_t{link.link_speed} * 1'000'000
                : 0; /* pfc_pause_ns takes 0 as 100 Gb/s, as the droce engine does */
        p.refresh_ns = droce::net::pfc_pause_ns(kFullPause, speed) / 2;
        p.speed_bps = speed;
        for (uint16_t t : o.to)
            if (t == id) {
                if (queues.empty() || !o.shared) {
                    auto q = std::make_unique<Queue>();
                    q->id = id;
                    q->q = std::make_unique<Bottleneck>(o.bp, o.seed + id);
                    q->held = std::make_unique<MbufFifo>(o.bp.buffer_bytes / 60 + 1);
                    q->delay = std::make_unique<MbufFifo>(kDelayLine);
                    q->samples.resize(kSamples);
                    queues.push_back(std::move(q));
                }
                p.q = queues.back().get();
            }
    }
    FILE *csv = nullptr;
    if (!o.csv.empty()) {
        csv = std::fopen(o.csv.c_str(), "w");
        if (!csv) {
            std::fprintf(stderr, "droce-fabric: cannot write %s\n", o.csv.c_str());
            return 2;
        }
        std::fprintf(csv, "t_us,port,depth_bytes,depth_frames\n");
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    /* the default 50 µs timer slack would stretch every idle sleep by that much */
    if (o.idle_us)
        prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    const uint64_t hz = rte_get_tsc_hz();
    const uint64_t t0 = ns_now(hz);
    const uint64_t every = o.sample_us * 1000;
    for (auto &q : queues)
        q->q->set_sampling(every, q->samples.data(), q->samples.size(), 0);
    Mac macs[kMacs];
    size_t nmacs = 0;
    uint64_t flood = 0, mac_full = 0;
    rte_mbuf *rx[kBurst];
    /* The first line out, once every port has started: the signal for its peers. Its memif
     * sockets exist from the EAL's probe on, and DPDK 22.11's memif refuses a client that
     * connects before the port starts (droce's engine tries again after 0.5 s; a plain
     * DPDK client never does). */
    std::printf("droce-fabric: %u ports, bottleneck toward", nports);
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

    /* Dup, reorder and corrupt toward the bottleneck ports (loss is the bottleneck's). */
    std::unique_ptr<droce::fabric::FaultInjector> faults;
    if (o.faults.any())
        faults = std::make_unique<droce::fabric::FaultInjector>(o.faults, o.seed);
    uint64_t iter = 0;

    /* Frame m (headers in its first segment) from port `in` into out's bottleneck. */
    auto enqueue = [&](rte_mbuf *m, Port &in, Port &out, uint64_t now) {
        const uint32_t len = m->pkt_len;
        uint8_t *bytes = rte_pktmbuf_mtod(m, uint8_t *);
        const auto d = out.q->q->enqueue(bytes, len, now, static_cast<uint8_t>(in.id));
        if (d.pfc == droce::fabric::PfcSignal::xoff) {
            in.paused = true;
            in.pause_prio = frame_prio(bytes, len);
            in.pause_sent_at = now;
            ++in.pfc_xoff;
            send_pfc(in, mp, kFullPause);
        }
        if (!d.accepted()) {
            rte_pktmbuf_free(m); /* counted by the model */
            return;
        }
        out.q->held->push(m, 0, out.id); /* the model had a slot: so has the FIFO */
    };

    /* Frame m from port `in` toward port `out`: into out's bottleneck or straight out. */
    auto forward = [&](rte_mbuf *m, Port &in, Port &out, uint64_t now) {
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
        if (!faults || rte_mbuf_refcnt_read(m) != 1) {
            enqueue(m, in, out, now);
            return;
        }
        const auto a = faults->decide(m->data_len, out.held == nullptr);
        droce::fabric::FaultInjector::corrupt(rte_pktmbuf_mtod(m, uint8_t *), a);
        rte_mbuf *dup = nullptr;
        if (a.dup && (dup = rte_pktmbuf_copy(m, mp, 0, UINT32_MAX)) == nullptr)
            faults->dup_failed(); /* only faulted frames are copied */
        if (a.hold) {
            out.held = m;
            out.held_in = in.id;
            out.held_iter = iter;
        } else {
            enqueue(m, in, out, now);
            if (out.held) {
                faults->overtaken();
                enqueue(out.held, ports[out.held_in], out, now);
                out.held = nullptr;
            }
        }
        if (dup)
            enqueue(dup, in, out, now);
    };

    /* This loop is every port's poller: it bursts only while the poll gate is open
     * (drivers/poll_gate.h), so a memif client's leaving is handled between bursts. */
    droce::drivers::PollerSlot *const gate = droce::drivers::poll_gate_join();
    if (gate != nullptr)
        droce::drivers::poll_gate_online(gate);
    while (!g_stop) {
        if (gate != nullptr)
            droce::drivers::poll_gate_pass(gate);
        ++iter;
        const uint64_t now = ns_now(hz) - t0;
        if (o.secs > 0 && static_cast<double>(now) > o.secs * 1e9)
            break;
        bool busy = false;
        for (uint16_t rxq = 0; rxq < o.queues * nports; ++rxq) {
            Port &in = ports[rxq % nports];
            const uint16_t n = rte_eth_rx_burst(in.id, rxq / nports, rx, kBurst);
            in.rx += n;
            busy = busy || n != 0;
            for (uint16_t i = 0; i < n; ++i) {
                rte_mbuf *m = rx[i];
                const auto *eth = rte_pktmbuf_mtod(m, const rte_ether_hdr *);
                if (eth->ether_type == rte_cpu_to_be_16(droce::net::kEtherTypeMacControl)) {
                    droce::net::PfcFrame pf;
                    if (o.honour_pfc >= 0 && in.q && m->data_len == m->pkt_len &&
                        droce::net::parse_pfc(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len,
                                              &pf) == droce::net::PfcResult::Ok &&
                        (pf.enable >> o.honour_pfc & 1) != 0) {
                        /* the next hop pauses our egress toward it: hold the queue (quanta
                         * 0 resumes it below) */
                        Queue &q = *in.q;
                        q.paused_until =
                            now + droce::net::pfc_pause_ns(pf.quanta[o.honour_pfc], in.speed_bps);
                        if (!q.held_by_pause) {
                            q.held_by_pause = true;
                            q.hold_since = now;
                        }
                        ++in.rx_pfc_honoured;
                        rte_pktmbuf_free(m);
                        continue;
                    }
                    /* link-local: a switch acts on or drops MAC Control, never forwards it */
                    ++in.drop_mac_ctrl;
                    rte_pktmbuf_free(m);
                    continue;
                }
                /* learn the source */
                size_t k = 0;
                while (k < nmacs && std::memcmp(macs[k].a, eth->src_addr.addr_bytes, 6) != 0)
                    ++k;
                if (k == nmacs) {
                    if (nmacs < kMacs) {
                        std::memcpy(macs[nmacs].a, eth->src_addr.addr_bytes, 6);
                        ++nmacs;
                    } else {
                        ++mac_full;
                        k = kMacs;
                    }
                }
                if (k < kMacs)
                    macs[k].port = in.id;
                /* look up the destination; unknown or group address: flood */
                int out = -1;
                if (!rte_is_multicast_ether_addr(&eth->dst_addr))
                    for (size_t j = 0; j < nmacs; ++j)
                        if (std::memcmp(macs[j].a, eth->dst_addr.addr_bytes, 6) == 0) {
                            out = macs[j].port;
                            break;
                        }
                if (out == in.id) {
                    ++in.drop_self;
                    rte_pktmbuf_free(m);
                } else if (out >= 0) {
                    forward(m, in, ports[static_cast<size_t>(out)], now);
                } else {
                    ++flood;
                    /* every other port gets the same mbuf (one reference each); a bottleneck
                     * may set CE in it, which the other copies then carry too (flooded
                     * frames are ARP and the like in practice: not ECN-capable) */
                    rte_mbuf_refcnt_update(m, static_cast<int16_t>(nports - 2));
                    for (Port &p : ports)
                        if (p.id != in.id)
                            forward(m, in, p, now);
                }
            }
        }
        for (Port &p : ports)
            if (p.held && p.held_iter != iter) { /* nothing came to pass it: let it go */
                rte_mbuf *m = p.held;
                p.held = nullptr;
                enqueue(m, ports[p.held_in], p, now);
            }
        for (auto &qp : queues) {
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
                if (d.pfc == droce::fabric::PfcSignal::xon && d.ingress < nports) {
                    Port &up = ports[d.ingress];
                    up.paused = false;
                    up.paused_ns += now - up.pause_sent_at;
                    ++up.pfc_xon;
                    send_pfc(up, mp, 0);
                }
                if (o.bp.delay_ns == 0)
                    tx_one(ports[to], m);
                else if (!q.delay->push(m, d.deliver_at, to)) {
                    ++q.drop_delay;
                    rte_pktmbuf_free(m);
                }
            }
            while (q.delay->n && q.delay->front_time() <= now) {
                tx_one(ports[q.delay->front_port()], q.delay->front());
                q.delay->pop();
            }
            if (q.q->samples() >= kSamples / 2)
                write_samples(csv, q, every);
        }
        for (Port &p : ports) {
            if (p.paused && now - p.pause_sent_at >= p.refresh_ns) {
                /* a standing XOFF is repeated before the peer's pause runs out */
                p.paused_ns += now - p.pause_sent_at;
                p.pause_sent_at = now;
                ++p.pfc_refresh;
                send_pfc(p, mp, kFullPause);
            }
            flush_tx(p);
        }
        if (!busy && o.idle_us)
            std::this_thread::sleep_for(std::chrono::microseconds(o.idle_us));
    }
    const uint64_t end = ns_now(hz) - t0;
    for (auto &q : queues) {
        q->q->flush_samples(end);
        write_samples(csv, *q, every);
    }
    for (Port &p : ports) {
        /* a shared queue's counters are reported at its first port */
        const bool own = p.q && p.q->id == p.id;
        const auto c = own ? p.q->q->counters() : droce::fabric::BottleneckCounters{};
        std::printf(
            "port %u: rx %llu tx %llu tx_full %llu drop_self %llu drop_head %llu "
            "drop_delay %llu bottleneck %s enqueued %llu marked %llu dropped_tail %llu "
            "dropped_red %llu dropped_loss %llu max_depth_bytes %llu drop_mac_ctrl %llu "
            "pfc_xoff %llu pfc_xon %llu pfc_refresh %llu pfc_nombuf %llu paused_us %llu "
            "rx_pfc_honoured %llu held_us %llu\n",
            p.id, static_cast<unsigned long long>(p.rx), static_cast<unsigned long long>(p.tx),
            static_cast<unsigned long long>(p.tx_full),
            static_cast<unsigned long long>(p.drop_self),
            static_cast<unsigned long long>(p.drop_head),
            static_cast<unsigned long long>(own ? p.q->drop_delay : 0),
            own   ? "yes"
            : p.q ? "shared"
                  : "no",
            static_cast<unsigned long long>(c.enqueued), static_cast<unsigned long long>(c.marked),
            static_cast<unsigned long long>(c.dropped_tail),
            static_cast<unsigned long long>(c.dropped_red),
            static_cast<unsigned long long>(c.dropped_loss),
            static_cast<unsigned long long>(c.max_depth_bytes),
            static_cast<unsigned long long>(p.drop_mac_ctrl),
            static_cast<unsigned long long>(p.pfc_xoff), static_cast<unsigned long long>(p.pfc_xon),
            static_cast<unsigned long long>(p.pfc_refresh),
            static_cast<unsigned long long>(p.pfc_nombuf),
            static_cast<unsigned long long>((p.paused_ns + (p.paused ? end - p.pause_sent_at : 0)) /
                                            1000),
            static_cast<unsigned long long>(p.rx_pfc_honoured),
            static_cast<unsigned long long>(
                own ? (p.q->held_ns + (p.q->held_by_pause ? end - p.q->hold_since : 0)) / 1000
                    : 0));
    }
    if (faults) {
        const auto &f = faults->counters();
        std::printf("faults duplicated %llu reordered %llu corrupted %llu dup_failed %llu\n",
                    static_cast<unsigned long long>(f.duplicated),
                    static_cast<unsigned long long>(f.reordered),
                    static_cast<unsigned long long>(f.corrupted),
                    static_cast<unsigned long long>(f.dup_failed));
    }
    const droce::drivers::PollGateStats gs = droce::drivers::poll_gate_stats();
    std::printf("poll gate: turns %llu parks %llu ack_timeouts %llu\n",
                static_cast<unsigned long long>(gs.turns),
                static_cast<unsigned long long>(gs.parks),
                static_cast<unsigned long long>(gs.ack_timeouts));
    std::printf("flooded %llu mac_table_full %llu secs %.3f\n",
                static_cast<unsigned long long>(flood), static_cast<unsigned long long>(mac_full),
                static_cast<double>(end) / 1e9);
    if (csv)
        std::fclose(csv);
    droce::drivers::poll_gate_leave(gate);
    for (Port &p : ports) {
        /* frames still held are freed with the pool at exit; a memif peer that ends at
         * the same time must not be handled beside our stop (drivers::stop_port) */
        droce::drivers::stop_port(p.id, false, p.hold_intr_on_stop);
    }
    rte_eal_cleanup();
    return 0;
}
