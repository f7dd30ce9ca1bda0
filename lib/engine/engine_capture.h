/* SPDX-License-Identifier: BSD-3-Clause */
/* Built-in capture of a device's own traffic into a pcapng file (rte_pcapng).
 *
 * The workers never touch the file: at the capture points (an RX frame accepted for a
 * QP, every frame just before rte_eth_tx_burst) they copy the frame (up to the snap
 * length) with rte_pcapng_copy into the capture's own mempool and enqueue the copies on
 * an MP/SC ring; a writer thread (a plain pthread, not an EAL lcore) dequeues them,
 * writes them with rte_pcapng_write_packets and frees them. A full ring or an empty pool
 * drops the copy, never the frame, and is counted. With capture off a shard's capture
 * pointer is null and the data path pays one branch per burst. */
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <droce/status.h>

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;
struct rte_pcapng;

namespace droce::engine {

/** A device's capture counters, kept over start/stop (any thread reads them). */
struct CaptureCounters {
    std::atomic<uint64_t> packets{0};        /* copies handed to the writer */
    std::atomic<uint64_t> drop_ring_full{0}; /* copies dropped: the writer's ring was full */
    std::atomic<uint64_t> drop_no_mbuf{0};   /* frames not copied: the capture pool was empty */
    std::atomic<uint64_t> written{0};        /* packets written to the file */
    std::atomic<uint64_t> write_errors{0};   /* packets the file refused (disk full, ...) */
};

/** One open capture file, its pool, ring and writer thread. */
class Capture {
  public:
    /** Opens (truncates) path and starts the writer. snaplen 0 = whole frames; frames
     * are at most max_frame bytes (sizes the pool's buffers). */
    static Result<std::shared_ptr<Capture>> open(const std::string &path, uint32_t snaplen,
                                                 uint32_t max_frame, const std::string &dev_name,
                                                 uint64_t now_ns, CaptureCounters &ctr);
    /** Writes what is queued, then closes the file. The workers must have let go. */
    ~Capture();
    Capture(const Capture &) = delete;
    Capture &operator=(const Capture &) = delete;

    /** Worker: a copy of m (not consumed) for the file, or nullptr (counted). now_ns:
     * Runtime::now_ns() when the frame passed. */
    rte_mbuf *copy(const rte_mbuf *m, uint16_t port, uint16_t queue, bool rx, uint64_t now_ns);
    /** Worker: hands n copies to the writer; those that do not fit are freed (counted). */
    void submit(rte_mbuf **copies, unsigned n);

    const std::string &path() const { return path_; }
    uint32_t snaplen() const { return snaplen_; }

  private:
    explicit Capture(CaptureCounters &ctr) : ctr_(ctr) {}
    void writer_main();

    CaptureCounters &ctr_;
    std::string path_;
    uint32_t snaplen_ = 0; /* as given (0 = whole frames) */
    uint32_t copy_len_ = 0;
    uint64_t epoch_offset_ = 0; /* wall-clock ns minus Runtime::now_ns() at open */
    rte_mempool *pool_ = nullptr;
    rte_ring *ring_ = nullptr;
    rte_pcapng *pcap_ = nullptr;
    std::thread writer_;
    std::atomic<bool> stop_{false};
};

} // namespace droce::engine
