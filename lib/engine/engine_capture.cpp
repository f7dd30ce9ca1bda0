/* SPDX-License-Identifier: BSD-3-Clause */
/* Built-in capture (see engine_capture.h): the Capture object, the shards' capture
 * points and the device's start/stop. */
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API /* rte_pcapng is experimental in DPDK 22.11 */
#endif
#include "engine_capture.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_pcapng.h>
#include <rte_ring.h>

#include "engine_log.h"
#include "engine_runtime.h"

namespace droce::engine {

namespace {
/* The writer's queue: 4096 copies absorb a burst of several ms at 10 Gb/s of MTU
 * frames while the writer is descheduled; the pool holds that plus the workers'
 * mempool caches and the writer's batch in hand. */
constexpr unsigned kRingSize = 4096;
constexpr unsigned kPoolSize = 8191;
constexpr unsigned kPoolCache = 128;
constexpr unsigned kWriteBurst = 64;
std::atomic<uint32_t> g_capture_seq{0};
} // namespace

Result<std::shared_ptr<Capture>> Capture::open(const std::string &path, uint32_t snaplen,
                                               uint32_t max_frame, const std::string &dev_name,
                                               uint64_t now_ns, CaptureCounters &ctr) {
    if (path.empty())
        return Status(EINVAL, "capture: no file name");
    if (snaplen != 0 && snaplen < 14)
        return Status(EINVAL, "capture: snap length " + std::to_string(snaplen) +
                                  " shorter than an Ethernet header (0 = whole frames)");
    std::shared_ptr<Capture> c(new Capture(ctr));
    c->path_ = path;
    c->snaplen_ = snaplen;
    c->copy_len_ = snaplen == 0 ? max_frame : std::min(snaplen, max_frame);
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    c->epoch_offset_ = static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u +
                       static_cast<uint64_t>(ts.tv_nsec) - now_ns;
    /* DPDK object names are process-wide (and short): a sequence number. */
    const uint32_t seq = g_capture_seq.fetch_add(1);
    const std::string pn = "dcap_pool" + std::to_string(seq);
    const std::string rn = "dcap_ring" + std::to_string(seq);
    /* One buffer holds a whole copy plus the pcapng block header and options. */
    const uint32_t room = rte_pcapng_mbuf_size(c->copy_len_);
    if (room > UINT16_MAX)
        return Status(EINVAL, "capture: frames of " + std::to_string(c->copy_len_) +
                                  " bytes do not fit one mbuf: give a smaller snap length");
    c->pool_ = rte_pktmbuf_pool_create(pn.c_str(), kPoolSize, kPoolCache, 0,
                                       static_cast<uint16_t>(room), SOCKET_ID_ANY);
    if (c->pool_ == nullptr)
        return Status(ENOMEM, "capture: mempool of " + std::to_string(kPoolSize) + " x " +
                                  std::to_string(room) + " bytes: " + rte_strerror(rte_errno));
    /* Several workers produce, the writer alone consumes. */
    c->ring_ = rte_ring_create(rn.c_str(), kRingSize, SOCKET_ID_ANY, RING_F_SC_DEQ);
    if (c->ring_ == nullptr)
        return Status(ENOMEM, std::string("capture: ring: ") + rte_strerror(rte_errno));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return Status(errno, "capture: " + path + ": " + std::strerror(errno));
    utsname u{};
    std::string os = "Linux";
    if (uname(&u) == 0)
        os = std::string(u.sysname) + " " + u.release;
    const std::string comment = "droce device " + dev_name;
    c->pcap_ = rte_pcapng_fdopen(fd, os.c_str(), nullptr, "droce", comment.c_str());
    if (c->pcap_ == nullptr) {
        const int e = rte_errno;
        ::close(fd);
        return Status(EIO, "capture: " + path + ": rte_pcapng_fdopen: " + rte_strerror(e));
    }
    c->writer_ = std::thread([p = c.get()] { p->writer_main(); });
    logger().info("{}: capturing to {} (snap length {})", dev_name, path,
                  snaplen == 0 ? std::string("whole frames") : std::to_string(snaplen));
    return c;
}

Capture::~Capture() {
    stop_.store(true, std::memory_order_release);
    if (writer_.joinable())
        writer_.join();
    if (pcap_ != nullptr)
        rte_pcapng_close(pcap_); /* closes the fd too */
    rte_ring_free(ring_);
    rte_mempool_free(pool_);
}

void Capture::writer_main() {
    rte_mbuf *batch[kWriteBurst];
    for (;;) {
        const unsigned n = rte_ring_sc_dequeue_burst(ring_, reinterpret_cast<void **>(batch),
                                                     kWriteBurst, nullptr);
        if (n == 0) {
            /* stop_ is set once the workers have let go: what is left is all there is. */
            if (stop_.load(std::memory_order_acquire) && rte_ring_empty(ring_))
                return;
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            continue;
        }
        if (rte_pcapng_write_packets(pcap_, batch, static_cast<uint16_t>(n)) < 0)
            ctr_.write_errors.fetch_add(n, std::memory_order_relaxed);
        else
            ctr_.written.fetch_add(n, std::memory_order_relaxed);
        rte_pktmbuf_free_bulk(batch, n);
    }
}

rte_mbuf *Capture::copy(const rte_mbuf *m, uint16_t port, uint16_t queue, bool rx,
                        uint64_t now_ns) {
    rte_mbuf *c = rte_pcapng_copy(port, queue, m, pool_, copy_len_, rte_get_tsc_cycles(),
                                  rx ? RTE_PCAPNG_DIRECTION_IN : RTE_PCAPNG_DIRECTION_OUT);
    if (c == nullptr) [[unlikely]] {
        ctr_.drop_no_mbuf.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
    }
    /* DPDK 22.11 converts the TSC to a timestamp with state initialised before the EAL
     * knows the TSC rate (files dated centuries ahead), and not safely from several
     * threads: the block's timestamp (bytes 12..19 of the Enhanced Packet Block, high
     * word first, in host order like the rest of the file) is set here instead. */
    const uint64_t ts = now_ns + epoch_offset_;
    const uint32_t hi = static_cast<uint32_t>(ts >> 32), lo = static_cast<uint32_t>(ts);
    uint8_t *epb = rte_pktmbuf_mtod(c, uint8_t *);
    std::memcpy(epb + 12, &hi, sizeof hi);
    std::memcpy(epb + 16, &lo, sizeof lo);
    return c;
}

void Capture::submit(rte_mbuf **copies, unsigned n) {
    if (n == 0)
        return;
    const unsigned k =
        rte_ring_mp_enqueue_burst(ring_, reinterpret_cast<void **>(copies), n, nullptr);
    ctr_.packets.fetch_add(k, std::memory_order_relaxed);
    if (k < n) [[unlikely]] {
        ctr_.drop_ring_full.fetch_add(n - k, std::memory_order_relaxed);
        rte_pktmbuf_free_bulk(copies + k, n - k);
    }
}

/* ---- the shards' capture points (the worker's thread) ---- */

void Shard::capture_rx(const rte_mbuf *m) {
    if (rte_mbuf *c =
            cap_->copy(m, dev_.port_, rxq_ == UINT16_MAX ? 0 : rxq_, true, dev_.rt_.now_ns()))
        cap_rx_[ncap_rx_++] = c;
    if (ncap_rx_ == kRxBurst)
        capture_rx_flush();
}

void Shard::capture_rx_flush() {
    cap_->submit(cap_rx_, ncap_rx_);
    ncap_rx_ = 0;
}

void Shard::rx_burst_captured(rte_mbuf **rx, uint16_t n, uint64_t now) {
    /* No prefetch pipeline here: with capture on, the copies cost more than the misses. */
    for (uint16_t i = 0; i < n; ++i)
        rx_one_t<true>(rx[i], now);
    finish_rx();
    capture_rx_flush();
}

void Shard::capture_tx() {
    /* Frames the port refused stay queued and are offered again: those were captured
     * already. cap_tx_mark_ is the port_xmit_packets value at which every frame queued
     * at the last capture will have gone, so mark - sent-so-far of them are still at
     * the head of the queue. */
    const uint64_t done = ec.port_xmit_packets;
    uint16_t from = 0;
    if (cap_tx_mark_ > done)
        from = static_cast<uint16_t>(std::min<uint64_t>(cap_tx_mark_ - done, tx_.size()));
    rte_mbuf *copies[kTxBurst];
    unsigned nc = 0;
    const uint64_t now = dev_.rt_.now_ns();
    for (uint16_t i = from; i < tx_.size(); ++i) {
        if (rte_mbuf *c = cap_->copy(tx_.at(i), dev_.port_, txq_, false, now))
            copies[nc++] = c;
        if (nc == kTxBurst) {
            cap_->submit(copies, nc);
            nc = 0;
        }
    }
    cap_->submit(copies, nc);
    cap_tx_mark_ = done + tx_.size();
}

/* ---- the device's start/stop ---- */

Status Dev::capture_at_open(const std::string &path, uint32_t snaplen) {
    const Status s = capture_start(path, snaplen, [](uint32_t, const std::function<void()> &fn) {
        fn();
        return true;
    });
    return s ? s : Status(s.code(), "open_device: " + s.message());
}

Status Dev::capture_start(const std::string &path, uint32_t snaplen, const RunOn &run_on) {
    std::lock_guard<std::mutex> lk(capture_mu_);
    if (capture_)
        return Status(EBUSY, name_ + ": already capturing to " + capture_->path());
    /* Frames are at most the MTU plus Ethernet and one VLAN tag (no FCS). */
    auto c = Capture::open(path, snaplen, eth_mtu_ + 18, name_, rt_.now_ns(), capture_ctr_);
    if (!c)
        return c.status();
    capture_ = c.value();
    Capture *p = capture_.get();
    bool all = true;
    for (uint32_t w = 0; w < workers(); ++w) {
        Shard *s = shards_[w].get();
        /* On the shard's worker: from its next poll on, it copies. Frames already
         * queued for TX are captured with the next flush. */
        all &= run_on(w, [s, p, keep = capture_] {
            s->cap_tx_mark_ = s->ec.port_xmit_packets;
            s->ncap_rx_ = 0;
            s->cap_ = p;
        });
    }
    if (!all)
        return Status(ETIMEDOUT, name_ + ": a worker did not answer: capture starts when it "
                                         "polls again");
    return {};
}

Status Dev::capture_stop(const RunOn &run_on) {
    std::lock_guard<std::mutex> lk(capture_mu_);
    if (!capture_)
        return Status(ENOENT, name_ + ": not capturing");
    bool all = true;
    for (uint32_t w = 0; w < workers(); ++w) {
        Shard *s = shards_[w].get();
        /* The command keeps the capture alive until the worker has let go of it. */
        all &= run_on(w, [s, keep = capture_] { s->cap_ = nullptr; });
    }
    /* Whoever drops the last reference (here, or a late command) closes the file. */
    capture_.reset();
    if (!all)
        return Status(ETIMEDOUT, name_ + ": a worker did not answer: the file is closed "
                                         "when it polls again");
    return {};
}

std::string Dev::capture_path() const {
    std::lock_guard<std::mutex> lk(capture_mu_);
    return capture_ ? capture_->path() : std::string();
}

void Dev::capture_counters(std::vector<std::pair<std::string, uint64_t>> &v) const {
    v.emplace_back("capture_active", capture_path().empty() ? 0 : 1);
    v.emplace_back("capture_packets", capture_ctr_.packets.load(std::memory_order_relaxed));
    v.emplace_back("capture_written", capture_ctr_.written.load(std::memory_order_relaxed));
    v.emplace_back("capture_drop_ring_full",
                   capture_ctr_.drop_ring_full.load(std::memory_order_relaxed));
    v.emplace_back("capture_drop_no_mbuf",
                   capture_ctr_.drop_no_mbuf.load(std::memory_order_relaxed));
    v.emplace_back("capture_write_errors",
                   capture_ctr_.write_errors.load(std::memory_order_relaxed));
}

} // namespace droce::engine
