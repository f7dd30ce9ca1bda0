/* SPDX-License-Identifier: BSD-3-Clause */
/* EAL, mbuf pools, devices, workers (engine_runtime.cpp, engine_open.cpp). */
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <droce/droce.h>
#include <rte_cycles.h>
#include <rte_spinlock.h>

#include "engine_dev.h"

struct rte_mempool;
struct rte_ring;

namespace droce::engine {

/** EAL, mbuf pool, devices, workers. */
class Runtime {
  public:
    static Result<std::unique_ptr<Runtime>> create(int argc, char **argv, int *consumed,
                                                   const EngineOptions &opts);
    ~Runtime();

    Result<Dev *> open_device(const DeviceConfig &cfg);
    /** Two net_ring ports back to back (A's TX queue i is B's RX queue i and vice versa),
     * with queues for `queues` workers: more where the ring PMD wants its workers' queues
     * spaced apart (drivers::Caps::queue_stride). */
    Result<std::pair<std::string, std::string>> create_ring_pair(uint16_t queues = 1);
    Status start();
    void stop();
    /** Embedded mode: one iteration over every device. Returns packets handled; *work
     * (optional) gets all work done including commands and WRs. */
    int poll_once(uint32_t *work = nullptr);
    /** Embedded mode: one iteration of worker w (its mailbox, then its shard of every
     * device). With several embedded workers, under that worker's lock. */
    int poll_worker(uint32_t w, uint32_t *work = nullptr);
    bool embedded() const { return opts_.embedded; }
    uint32_t workers() const { return static_cast<uint32_t>(workers_.size()); }
    bool worker_running() const { return running_.load(std::memory_order_acquire); }
    /** Runs fn on worker w (where that worker's protocol state lives) and waits; inline
     * when no worker runs. Control plane only. */
    void exec_on(uint32_t w, const std::function<void()> &fn);
    /** exec_on(0, fn). */
    void exec(const std::function<void()> &fn) { exec_on(0, fn); }
    /** Runs fn on the calling thread with every worker parked at a safe point: for state
     * every worker reads (MR table, zero-copy regions) and for whole-device snapshots. */
    void exec_all(const std::function<void()> &fn);
    /** TSC-derived nanoseconds: one TSC read, one multiply and a shift (no division, no
     * system call). Inline: every poll and every control wait reads it. */
    uint64_t now_ns() const {
        __extension__ typedef unsigned __int128 u128_t;
        return static_cast<uint64_t>((static_cast<u128_t>(rte_get_tsc_cycles()) * ns_mult_) >>
                                     kNsShift);
    }
    rte_mempool *pool() const { return pool_; }
    /** Worker w's own pool: the frames it builds and its RX queues' mbufs, so that an mbuf
     * stays on one core (pool() is worker 0's; hosted devices use the host's). */
    rte_mempool *pool(uint32_t w) const { return w < pools_.size() ? pools_[w] : pool_; }
    /** mbufs out of every pool of the engine (in rings, queues, PMDs). */
    uint64_t mbufs_in_use() const;
    /** Small mbufs for zero-copy frames: headers, external-buffer attachments, ICRC. */
    rte_mempool *zc_pool() const { return zc_pool_; }
    const std::vector<std::unique_ptr<Dev>> &devices() const { return devs_; }
    /** Lets a waiting control call move things along: one poll when nobody else polls,
     * a short sleep otherwise. */
    void wait_a_bit();
    /** Unique DPDK object names (rings, pools). */
    std::string unique_name(const char *prefix);
    /** Runs fn on worker w from a thread that is neither a worker nor the application's
     * poll thread (the telemetry thread): queued to that worker's mailbox, drained by the
     * worker or, in embedded mode, by the application's next Engine::poll(). Returns
     * false when nobody drained it within timeout_ms; fn may still run later, so it must
     * own (or share) everything it touches. */
    bool exec_detached(uint32_t w, std::function<void()> fn, uint32_t timeout_ms);
    /** Commands allocated by exec_detached and not yet freed (a leak shows here). */
    static uint64_t detached_live();

  private:
    Runtime() = default;
    /* open_device on a port the host configured and started (engine_hosted.cpp). */
    Result<Dev *> open_hosted(const DeviceConfig &cfg, uint16_t port, const std::string &name,
                              const net::Iface &ifc, const cc::CcParams &ccp);
    static int worker_main(void *arg);
    uint32_t drain_commands(uint32_t w);
    Status create_worker_pools(uint32_t nw);

    struct Command {
        const std::function<void()> *fn = nullptr;
        std::atomic<bool> done{false};
        /* exec_detached: the command owns its function and is freed by whichever of
         * the waiter and the drainer lets go last. */
        bool detached = false;
        std::function<void()> owned;
        std::atomic<int> refs{0};
        /* exec_all: the worker parks until released. */
        bool park = false;
        std::atomic<bool> parked{false};
        std::atomic<bool> release{false};
    };
    /* Aligned: workers are allocated one after another, and each poll takes its own
     * lock; two locks in one line made every iteration of each worker write the line the
     * other one writes. */
    struct alignas(64) Worker {
        Runtime *rt = nullptr;
        uint32_t index = 0;
        unsigned lcore = 0;
        rte_ring *mailbox = nullptr;
        /* Embedded mode with several workers: held by whoever runs this worker's state
         * (its poll thread for one iteration, or a control call). */
        rte_spinlock_t lock = RTE_SPINLOCK_INITIALIZER;
    };
    bool embedded_multi() const { return opts_.embedded && workers_.size() > 1; }

    EngineOptions opts_;
    rte_mempool *pool_ = nullptr;
    std::vector<rte_mempool *> pools_; /* by worker; pools_[0] == pool_ */
    rte_mempool *zc_pool_ = nullptr;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<std::unique_ptr<Dev>> devs_;
    std::vector<rte_ring *> pair_rings_;
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_{false};
    uint64_t tsc_hz_ = 0;
    /* now_ns = cycles x ns_mult_ >> kNsShift (a 128-bit product): 10^9 x 2^kNsShift / hz,
     * computed once. With 2^48, the rounding of the factor costs under 10^-13 relative
     * (well under 1 ns a day at GHz rates) and cycles x factor stays within 128 bits for
     * years of uptime. */
    static constexpr unsigned kNsShift = 48;
    uint64_t ns_mult_ = 0;
    uint32_t max_frame_ = 0;
};

} // namespace droce::engine
