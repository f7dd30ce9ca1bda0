/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Raw-link reference for the end-to-end comparison (issue 9, bench/e2e.py): what the DPDK
 * link between two processes carries when nothing but the PMD runs, with frames of droce's
 * own sizes. Four roles, one process each:
 *
 *   gen   sends one "message" after another, a message being a fixed list of frame sizes
 *         (e.g. 4170,4154x15 = a 64 KiB RDMA WRITE at path MTU 4096), for --secs seconds,
 *         retrying what the port did not take (so the rate is what the link delivers);
 *         drains and frees whatever comes back (the sink's ACK-sized replies).
 *   sink  counts frames; sends one --reply-byte frame per --every frames received (droce's
 *         one ACK per message); reports frames/s, messages/s and Gb/s between the first and
 *         the last frame received, after --idle-ms without traffic.
 *   ping  sends one frame (or every frame of --frames, in one burst), waits for as many
 *         back, --iters times (after --warmup); reports RTT/2 percentiles (the same
 *         convention as droce-perf's write_lat).
 *   pong  answers every frame with one of the same size.
 *
 * The frames carry Ethernet + IPv4 + UDP headers to port 4791 (the size is what matters,
 * the content is zeros beyond them). One JSON object on stdout at the end.
 *
 * --touch 1 (gen and sink) makes the reference move data as an application does, with no
 * protocol at all: the generator builds every frame in a fresh mbuf, headers from the
 * template and the payload copied from a source buffer (one message's worth, as
 * droce-perf's write_bw cycles over one buffer), and the sink copies every payload into a
 * destination buffer of one message (give it the same --frames) before it frees the frame. Without
 * it the generator resends the same refcounted frames and the sink frees them unread, so no payload
 * byte ever crosses between the cores: the link's ceiling, but not what any data mover can reach.
 *
 * Usage: raw_link ROLE [EAL args] -- [--frames LIST] [--every N] [--reply-bytes B]
 *                                  [--secs S] [--iters N] [--warmup N] [--idle-ms MS]
 *                                  [--touch 0|1]
 * A number in LIST may be written FxN (N frames of F bytes). */
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint16_t kBurst = 32;
constexpr uint16_t kDescriptors = 1024;
/** Largest frame droce sends at path MTU 4096 is 4170 B; leave room for any reply. */
constexpr uint16_t kDataRoom = RTE_PKTMBUF_HEADROOM + 9216;
constexpr uint32_t kMbufs = 8191;

struct Args {
    std::string role;
    std::vector<uint16_t> frames{138};
    uint32_t every = 1;
    uint16_t reply_bytes = 0;
    double secs = 2;
    uint32_t iters = 100000;
    uint32_t warmup = 1000;
    uint32_t idle_ms = 300;
    bool touch = false;
};

/** Ethernet + IPv4 + UDP: what the templates carry before the "payload". */
constexpr uint16_t kHeaderBytes = 42;

[[noreturn]] void die(const char *msg) {
    std::fprintf(stderr, "raw_link: %s\n", msg);
    std::exit(1);
}

std::vector<uint16_t> parse_frames(const char *s) {
    std::vector<uint16_t> out;
    std::string str(s);
    size_t pos = 0;
    while (pos <= str.size()) {
        size_t comma = str.find(',', pos);
        std::string tok =
            str.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
        unsigned long f = 0, n = 1;
        if (size_t x = tok.find('x'); x != std::string::npos) {
            f = std::strtoul(tok.substr(0, x).c_str(), nullptr, 10);
            n = std::strtoul(tok.substr(x + 1).c_str(), nullptr, 10);
        } else {
            f = std::strtoul(tok.c_str(), nullptr, 10);
        }
        if (f < 60 || f > 9216 || n == 0 || n > 4096)
            die("--frames: sizes 60..9216, counts 1..4096");
        out.insert(out.end(), n, static_cast<uint16_t>(f));
        if (comma == std::string::npos)
            break;
        pos = comma + 1;
    }
    return out;
}

Args parse(int argc, char **argv) {
    Args a;
    a.role = argv[0];
    for (int i = 1; i < argc; ++i) {
        std::string k = argv[i];
        if (i + 1 >= argc)
            die(("missing value for " + k).c_str());
        const char *v = argv[++i];
        if (k == "--frames")
            a.frames = parse_frames(v);
        else if (k == "--every")
            a.every = static_cast<uint32_t>(std::max(1L, std::strtol(v, nullptr, 10)));
        else if (k == "--reply-bytes")
            a.reply_bytes = static_cast<uint16_t>(std::strtoul(v, nullptr, 10));
        else if (k == "--secs")
            a.secs = std::strtod(v, nullptr);
        else if (k == "--iters")
            a.iters = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
        else if (k == "--warmup")
            a.warmup = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
        else if (k == "--idle-ms")
            a.idle_ms = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
        else if (k == "--touch" && (std::strcmp(v, "0") == 0 || std::strcmp(v, "1") == 0))
            a.touch = v[0] == '1';
        else if (k == "--touch")
            die("--touch takes 0 or 1");
        else
            die(("unknown option " + k).c_str());
    }
    return a;
}

/** A frame of `len` bytes: Ethernet, IPv4 and UDP (to 4791) headers, then zeros. */
rte_mbuf *make_frame(rte_mempool *mp, uint16_t len) {
    rte_mbuf *m = rte_pktmbuf_alloc(mp);
    if (m == nullptr)
        return nullptr;
    auto *p = rte_pktmbuf_mtod(m, uint8_t *);
    std::memset(p, 0, len);
    auto *eth = reinterpret_cast<rte_ether_hdr *>(p);
    std::memset(&eth->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
    eth->src_addr.addr_bytes[0] = 0x02;
    eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
    auto *ip = reinterpret_cast<rte_ipv4_hdr *>(eth + 1);
    ip->version_ihl = 0x45;
    ip->time_to_live = 64;
    ip->next_proto_id = IPPROTO_UDP;
    ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(len - RTE_ETHER_HDR_LEN));
    auto *udp = reinterpret_cast<rte_udp_hdr *>(ip + 1);
    udp->dst_port = rte_cpu_to_be_16(4791);
    udp->dgram_len =
        rte_cpu_to_be_16(static_cast<uint16_t>(len - RTE_ETHER_HDR_LEN - sizeof(rte_ipv4_hdr)));
    m->data_len = len;
    m->pkt_len = len;
    return m;
}

/** Frames are built once and sent again and again: a reference count held here keeps each
 * template alive while the PMD frees the copies it was given (rte_mbuf_refcnt_update). */
struct Templates {
    std::vector<rte_mbuf *> m;
    void build(rte_mempool *mp, const std::vector<uint16_t> &sizes) {
        for (uint16_t s : sizes) {
            rte_mbuf *f = make_frame(mp, s);
            if (f == nullptr)
                die("mbuf pool exhausted building templates");
            m.push_back(f);
        }
    }
};

/** Hands burst[0..n) to the port, retrying until all are taken. */
void send_burst(uint16_t port, rte_mbuf **burst, uint16_t n) {
    uint16_t sent = 0;
    uint64_t t0 = 0;
    while (sent < n) {
        const uint16_t k = rte_eth_tx_burst(port, 0, burst + sent, static_cast<uint16_t>(n - sent));
        sent = static_cast<uint16_t>(sent + k);
        if (k != 0) {
            t0 = 0;
        } else if (t0 == 0) {
            t0 = rte_rdtsc();
        } else if (rte_rdtsc() - t0 > rte_get_tsc_hz()) {
            // The peer is gone (1 s without room): drop the rest rather than spin forever.
            rte_pktmbuf_free_bulk(burst + sent, static_cast<unsigned>(n - sent));
            return;
        }
    }
}

/** Sends n frames of `tpl`, starting at index *next, cycling; retries until all are taken.
 * Each send takes a reference: the PMD's free drops it, the template stays. */
void send_frames(uint16_t port, const std::vector<rte_mbuf *> &tpl, size_t &next, uint16_t n) {
    rte_mbuf *burst[kBurst];
    for (uint16_t i = 0; i < n; ++i) {
        burst[i] = tpl[next];
        rte_mbuf_refcnt_update(burst[i], 1);
        next = next + 1 == tpl.size() ? 0 : next + 1;
    }
    send_burst(port, burst, n);
}

/** --touch: the payload a message carries, cycled over as droce-perf cycles over its
 * buffer; each frame takes the next slice. */
struct PayloadBuffer {
    std::vector<uint8_t> bytes;
    size_t off = 0;
    explicit PayloadBuffer(const std::vector<uint16_t> &frames) {
        size_t total = 0;
        for (uint16_t f : frames)
            total += f - kHeaderBytes;
        bytes.resize(total);
        for (size_t i = 0; i < total; ++i)
            bytes[i] = static_cast<uint8_t>(i * 131 + 7);
    }
    uint8_t *take(size_t len) {
        if (off + len > bytes.size())
            off = 0;
        uint8_t *p = bytes.data() + off;
        off += len;
        return p;
    }
};

/** --touch generator: n new frames, headers from the template and payload from `src`. */
bool send_built(uint16_t port, rte_mempool *mp, const std::vector<rte_mbuf *> &tpl,
                PayloadBuffer &src, size_t &next, uint16_t n) {
    rte_mbuf *burst[kBurst];
    if (rte_pktmbuf_alloc_bulk(mp, burst, n) != 0)
        return false;
    for (uint16_t i = 0; i < n; ++i) {
        const rte_mbuf *t = tpl[next];
        const uint16_t len = t->data_len;
        auto *p = rte_pktmbuf_mtod(burst[i], uint8_t *);
        std::memcpy(p, rte_pktmbuf_mtod(t, const uint8_t *), kHeaderBytes);
        std::memcpy(p + kHeaderBytes, src.take(len - kHeaderBytes), len - kHeaderBytes);
        burst[i]->data_len = len;
        burst[i]->pkt_len = len;
        next = next + 1 == tpl.size() ? 0 : next + 1;
    }
    send_burst(port, burst, n);
    return true;
}

/** --touch sink: every payload byte read and placed, as a receiver of data must. */
void place_payload(const rte_mbuf *m, PayloadBuffer &dst) {
    uint32_t skip = kHeaderBytes;
    for (const rte_mbuf *seg = m; seg != nullptr; seg = seg->next) {
        const uint32_t len = seg->data_len;
        if (len <= skip) {
            skip -= len;
            continue;
        }
        std::memcpy(dst.take(len - skip), rte_pktmbuf_mtod_offset(seg, const uint8_t *, skip),
                    len - skip);
        skip = 0;
    }
}

void wait_link(uint16_t port) {
    const uint64_t hz = rte_get_tsc_hz();
    const uint64_t end = rte_rdtsc() + 60 * hz;
    rte_eth_link link{};
    while (rte_rdtsc() < end) {
        rte_eth_link_get_nowait(port, &link);
        if (link.link_status == RTE_ETH_LINK_UP)
            return;
        rte_delay_ms(10);
    }
    die("link did not come up in 60 s");
}

double pct(std::vector<double> &v, double p) {
    size_t i = static_cast<size_t>(static_cast<double>(v.size()) * p);
    return v[std::min(i, v.size() - 1)];
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 2)
        die("usage: raw_link gen|sink|ping|pong [EAL args] -- [options]");
    const std::string role = argv[1];
    int dd = argc;
    for (int i = 2; i < argc; ++i)
        if (std::strcmp(argv[i], "--") == 0) {
            dd = i;
            break;
        }
    std::vector<char *> eal{argv[0]};
    for (int i = 2; i < dd; ++i)
        eal.push_back(argv[i]);
    if (rte_eal_init(static_cast<int>(eal.size()), eal.data()) < 0)
        die("rte_eal_init failed");
    std::vector<char *> ours{argv[1]};
    for (int i = dd + 1; i < argc; ++i)
        ours.push_back(argv[i]);
    Args a = parse(static_cast<int>(ours.size()), ours.data());
    if (role != "gen" && role != "sink" && role != "ping" && role != "pong")
        die("role must be gen, sink, ping or pong");

    if (rte_eth_dev_count_avail() < 1)
        die("no DPDK port (give --vdev)");
    const uint16_t port = 0;
    rte_mempool *mp =
        rte_pktmbuf_pool_create("raw_pool", kMbufs, 256, 0, kDataRoom, rte_socket_id());
    if (mp == nullptr)
        die("rte_pktmbuf_pool_create failed");
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(port, &info);
    rte_eth_conf conf{};
    // As droce does: a port whose reported limit is below 9000 (memif says 1518-B frames
    // but carries any size in chained buffers) keeps its default and is not asked.
    uint32_t port_max = info.max_mtu != 0 ? info.max_mtu : UINT16_MAX;
    if (info.max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN)
        port_max = std::min<uint32_t>(port_max,
                                      info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN);
    if (port_max >= 9000)
        conf.rxmode.mtu = 9000;
    if (rte_eth_dev_configure(port, 1, 1, &conf) != 0)
        die("rte_eth_dev_configure failed");
    uint16_t nrxd = kDescriptors, ntxd = kDescriptors;
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrxd, &ntxd);
    if (rte_eth_rx_queue_setup(port, 0, nrxd, rte_socket_id(), nullptr, mp) != 0 ||
        rte_eth_tx_queue_setup(port, 0, ntxd, rte_socket_id(), nullptr) != 0)
        die("queue setup failed");
    if (rte_eth_dev_start(port) != 0)
        die("rte_eth_dev_start failed");
    wait_link(port);

    const uint64_t hz = rte_get_tsc_hz();
    rte_mbuf *rx[kBurst];
    Templates tpl;
    std::string json;
    char b[1024];

    if (role == "gen") {
        tpl.build(mp, a.frames);
        size_t next = 0;
        uint64_t frames = 0, bytes_per_msg = 0;
        for (uint16_t f : a.frames)
            bytes_per_msg += f;
        PayloadBuffer src(a.frames);
        uint64_t alloc_failed = 0;
        const uint64_t t0 = rte_rdtsc();
        const uint64_t end = t0 + static_cast<uint64_t>(a.secs * static_cast<double>(hz));
        uint64_t now = t0;
        while (now < end) {
            if (!a.touch) {
                send_frames(port, tpl.m, next, kBurst);
                frames += kBurst;
            } else if (send_built(port, mp, tpl.m, src, next, kBurst)) {
                frames += kBurst;
            } else {
                ++alloc_failed; // the PMD still holds them all: poll, then try again
            }
            const uint16_t n = rte_eth_rx_burst(port, 0, rx, kBurst);
            rte_pktmbuf_free_bulk(rx, n);
            now = rte_rdtsc();
        }
        const double secs = static_cast<double>(now - t0) / static_cast<double>(hz);
        std::snprintf(b, sizeof b,
                      "{\"role\":\"gen\",\"frames\":%lu,\"secs\":%.6f,\"tx_pps\":%.1f,"
                      "\"frames_per_msg\":%zu,\"bytes_per_msg\":%lu,\"touch\":%d,"
                      "\"alloc_failed\":%lu}",
                      static_cast<unsigned long>(frames), secs, static_cast<double>(frames) / secs,
                      a.frames.size(), static_cast<unsigned long>(bytes_per_msg), a.touch ? 1 : 0,
                      static_cast<unsigned long>(alloc_failed));
        json = b;
    } else if (role == "sink") {
        if (a.reply_bytes)
            tpl.build(mp, {a.reply_bytes});
        // The destination is one message's payload (--frames, as the generator's), written
        // over and over as droce-perf's write_bw target is.
        PayloadBuffer dst(a.frames);
        uint64_t frames = 0, bytes = 0, first = 0, last = 0, since_reply = 0, replies = 0,
                 reply_drops = 0;
        const uint64_t idle = a.idle_ms * hz / 1000;
        const uint64_t give_up = rte_rdtsc() + 120 * hz;
        for (;;) {
            const uint16_t n = rte_eth_rx_burst(port, 0, rx, kBurst);
            const uint64_t now = rte_rdtsc();
            if (n == 0) {
                if ((frames && now - last > idle) || (!frames && now > give_up))
                    break;
                continue;
            }
            if (frames == 0)
                first = now;
            last = now;
            frames += n;
            for (uint16_t i = 0; i < n; ++i) {
                bytes += rx[i]->pkt_len;
                if (a.touch)
                    place_payload(rx[i], dst);
            }
            rte_pktmbuf_free_bulk(rx, n);
            if (a.reply_bytes) {
                since_reply += n;
                uint16_t want =
                    static_cast<uint16_t>(std::min<uint64_t>(since_reply / a.every, kBurst));
                if (want) {
                    // Best effort, one try: a reply ring the generator no longer drains
                    // (it has stopped) must not stall the count (dropped replies counted).
                    rte_mbuf *rb[kBurst];
                    for (uint16_t i = 0; i < want; ++i) {
                        rb[i] = tpl.m[0];
                        rte_mbuf_refcnt_update(rb[i], 1);
                    }
                    const uint16_t k = rte_eth_tx_burst(port, 0, rb, want);
                    if (k < want)
                        rte_pktmbuf_free_bulk(rb + k, static_cast<unsigned>(want - k));
                    since_reply -= uint64_t{want} * a.every;
                    replies += k;
                    reply_drops += want - k;
                }
            }
        }
        const double secs = static_cast<double>(last - first) / static_cast<double>(hz);
        const double s = secs > 0 ? secs : 1e-9;
        const double pps = static_cast<double>(frames) / s;
        std::snprintf(b, sizeof b,
                      "{\"role\":\"sink\",\"frames\":%lu,\"bytes\":%lu,\"secs\":%.6f,\"pps\":%.1f,"
                      "\"mpps\":%.4f,\"gbps\":%.4f,\"msgs_per_s\":%.1f,\"replies\":%lu,"
                      "\"reply_drops\":%lu}",
                      static_cast<unsigned long>(frames), static_cast<unsigned long>(bytes), secs,
                      pps, pps / 1e6, static_cast<double>(bytes) * 8 / s / 1e9,
                      pps / static_cast<double>(a.every), static_cast<unsigned long>(replies),
                      static_cast<unsigned long>(reply_drops));
        json = b;
    } else if (role == "pong") {
        const uint64_t idle = a.idle_ms * hz / 1000;
        const uint64_t give_up = rte_rdtsc() + 120 * hz;
        uint64_t n_total = 0, last = 0;
        for (;;) {
            const uint16_t n = rte_eth_rx_burst(port, 0, rx, kBurst);
            const uint64_t now = rte_rdtsc();
            if (n == 0) {
                if ((n_total && now - last > idle) || (!n_total && now > give_up))
                    break;
                continue;
            }
            last = now;
            n_total += n;
            // The received frame goes straight back: same size, no copy.
            uint16_t sent = 0;
            while (sent < n)
                sent += rte_eth_tx_burst(port, 0, rx + sent, static_cast<uint16_t>(n - sent));
        }
        std::snprintf(b, sizeof b, "{\"role\":\"pong\",\"frames\":%lu}",
                      static_cast<unsigned long>(n_total));
        json = b;
    } else { // ping
        // Every frame of --frames leaves in one burst each way (the pong returns what it
        // gets): "62,138" is a hop of RoCE's write_lat, the reply and the ACK of the last.
        if (a.frames.size() > kBurst)
            die("ping: at most 32 frames per hop");
        tpl.build(mp, a.frames);
        const auto per_hop = static_cast<uint16_t>(a.frames.size());
        size_t next = 0;
        std::vector<double> half;
        half.reserve(a.iters);
        const uint64_t timeout = hz; // a lost frame ends the run (1 s)
        for (uint32_t i = 0; i < a.warmup + a.iters; ++i) {
            const uint64_t t0 = rte_rdtsc();
            send_frames(port, tpl.m, next, per_hop);
            uint16_t got = 0;
            uint64_t t1 = t0;
            while (got < per_hop) {
                const uint16_t n =
                    rte_eth_rx_burst(port, 0, rx, static_cast<uint16_t>(per_hop - got));
                rte_pktmbuf_free_bulk(rx, n);
                got = static_cast<uint16_t>(got + n);
                t1 = rte_rdtsc();
                if (got < per_hop && t1 - t0 > timeout)
                    die("ping: no answer within 1 s");
            }
            if (i >= a.warmup)
                half.push_back(static_cast<double>(t1 - t0) * 1e6 / static_cast<double>(hz) / 2);
        }
        std::sort(half.begin(), half.end());
        double sum = 0;
        for (double x : half)
            sum += x;
        std::snprintf(b, sizeof b,
                      "{\"role\":\"ping\",\"iters\":%zu,\"frame\":%u,\"frames_per_hop\":%u,"
                      "\"t_min\":%.3f,\"t_typical\":%.3f,"
                      "\"t_avg\":%.3f,\"p99\":%.3f,\"p99_9\":%.3f,\"t_max\":%.3f}",
                      half.size(), a.frames[0], per_hop, half.front(), pct(half, 0.5),
                      sum / static_cast<double>(half.size()), pct(half, 0.99), pct(half, 0.999),
                      half.back());
        json = b;
        // Let the pong see the end: it stops after its idle timeout.
    }
    std::printf("%s\n", json.c_str());
    std::fflush(stdout);
    if (role == "gen" || role == "ping") {
        // Outlive the peer's idle timeout without polling: a memif peer that vanishes
        // while the other side is inside rx_burst can take it down with it (the regions
        // are unmapped by the disconnect), so the side that polls last must close first.
        rte_delay_ms(a.idle_ms + 700);
    }
    rte_eth_dev_stop(port);
    rte_eth_dev_close(port);
    rte_eal_cleanup();
    return 0;
}
