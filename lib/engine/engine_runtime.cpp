/* SPDX-License-Identifier: BSD-3-Clause */
/* EAL and port bring-up, the worker loop and the command mailbox. */
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_cycles.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "engine.h"
#include "engine_log.h"
#include "poll_gate.h"

namespace droce::engine {

namespace {
/* GCC's 128-bit integer (one MUL on x86-64); __extension__ keeps -Wpedantic quiet. */
__extension__ typedef unsigned __int128 u128;

/* Frames up to 9216 bytes (jumbo): a RoCE path MTU of 4096 needs an Ethernet MTU of
 * about 4200, and the transport builds single-segment frames. */
constexpr uint32_t kMaxFrame = 9216;
constexpr unsigned kPairRingSize = 1024;
constexpr unsigned kMailboxSize = 64;
/* Zero-copy frames: headers (<= 94 bytes), external-buffer attachments (no data room
 * used) and the pad + ICRC tail all come from one pool of small mbufs. */
constexpr uint16_t kZcDataRoom = RTE_PKTMBUF_HEADROOM + 128;

/* The EAL can be initialised once per process; later engines (tests, a restarted
 * application) reuse it. */
std::atomic<bool> g_eal_ready{false};
std::atomic<uint32_t> g_name_seq{0};

std::string errstr(int e) { return rte_strerror(e < 0 ? -e : e); }

/* droce's tools give every process its own EAL runtime directory, --file-prefix
 * droce-<pid> (its telemetry socket is how droce-info reaches it). With --no-shconf the
 * EAL leaves only that socket there, and leaves the directory behind at exit: remove
 * both. Registered before rte_eal_init so that it runs after the EAL's own atexit
 * handlers; a directory of another name is never touched. */
void remove_own_runtime_dir() {
    const std::string dir = rte_eal_get_runtime_dir();
    const std::string own = "/droce-" + std::to_string(getpid());
    if (dir.size() <= own.size() || dir.compare(dir.size() - own.size(), own.size(), own) != 0)
        return;
    unlink((dir + "/dpdk_telemetry.v2").c_str());
    rmdir(dir.c_str()); /* fails, harmlessly, if anything else is left in it */
}

/* The same directories of processes that died without their exit handlers (SIGKILL, a
 * crash): removed by the next droce process that starts. Only droce-<pid> names whose
 * process is gone, and in them only what --no-shconf leaves (the telemetry socket). The
 * EAL's base is /var/run/dpdk for root, else $XDG_RUNTIME_DIR/dpdk (or /tmp/dpdk). */
void remove_stale_runtime_dirs() {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    const std::string base =
        getuid() == 0 ? "/var/run/dpdk" : std::string(xdg != nullptr ? xdg : "/tmp") + "/dpdk";
    DIR *d = opendir(base.c_str());
    if (d == nullptr)
        return;
    while (const dirent *e = readdir(d)) {
        char *end = nullptr;
        if (std::strncmp(e->d_name, "droce-", 6) != 0)
            continue;
        const long pid = std::strtol(e->d_name + 6, &end, 10);
        if (end == e->d_name + 6 || *end != '\0' || pid <= 0 || pid == getpid())
            continue;
        if (kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)
            continue; /* alive (or not ours to ask about) */
        const std::string dir = base + "/" + e->d_name;
        unlink((dir + "/dpdk_telemetry.v2").c_str());
        rmdir(dir.c_str());
    }
    closedir(d);
}

} // namespace

std::string Runtime::unique_name(const char *prefix) {
    /* DPDK object names are global and at most RTE_RING_NAMESIZE-1 chars. */
    return std::string(prefix) + std::to_string(g_name_seq.fetch_add(1));
}

namespace {

/* The telemetry socket is the control surface (droce-info; whatever commands get
 * registered there later): owner only. DPDK makes the runtime directory 0700 when it
 * creates it, but binds the socket under the process umask (0755 under the usual 022),
 * and a directory that already existed keeps its mode. Both are set here, once the EAL
 * is up (for every embedding, not only droce's tools); a missing socket (--no-telemetry) is not an
 * error. */
void restrict_control_surface() {
    const std::string dir = rte_eal_get_runtime_dir();
    if (dir.empty())
        return;
    chmod(dir.c_str(), 0700);
    chmod((dir + "/dpdk_telemetry.v2").c_str(), 0600);
}

} // namespace

Result<std::unique_ptr<Runtime>> Runtime::create(int argc, char **argv, int *consumed,
                                                 const EngineOptions &opts) {
    /* droce's own logger: the process's spdlog level is the host's (engine_log.h). */
    logger().set_level(spdlog::level::from_str(opts.log_level));
    int used = 0;
    /* An EAL up before droce's first engine was started by the host (rte_lcore_count()
     * is 0 until rte_eal_init has run): rte_eal_init would refuse (EALREADY). Take it as
     * it is, and change nothing process-wide behind the host's back: no atexit handler,
     * no mode change of the EAL's runtime directory. */
    const bool host_eal = opts.host_eal || (!g_eal_ready.load() && rte_lcore_count() != 0);
    if (host_eal) {
        if (rte_lcore_count() == 0)
            return Status(EINVAL, "EngineOptions::host_eal: the EAL is not initialised "
                                  "(call rte_eal_init first)");
        used = 0;
        logger().info("EAL initialised by the host; droce attaches to it");
    } else if (!g_eal_ready.load()) {
        static std::once_flag cleanup_once;
        std::call_once(cleanup_once, [] {
            remove_stale_runtime_dirs();
            std::atexit(remove_own_runtime_dir);
        });
        used = rte_eal_init(argc, argv);
        if (used >= 0)
            ++used; /* rte_eal_init does not count argv[0] */
        if (used < 0)
            return Status(rte_errno ? rte_errno : EINVAL,
                          "rte_eal_init failed: " + errstr(rte_errno) +
                              " (check the EAL arguments before '--')");
        g_eal_ready = true;
        restrict_control_surface();
    } else {
        /* Already up: skip the EAL arguments the way rte_eal_init would have. */
        for (used = 1; used < argc; ++used)
            if (std::strcmp(argv[used], "--") == 0)
                break;
        if (used < argc)
            ++used;
        logger().info("EAL already initialised in this process; reusing it");
    }
    if (consumed)
        *consumed = used;

    std::unique_ptr<Runtime> rt(new Runtime());
    rt->opts_ = opts;
    rt->tsc_hz_ = rte_get_tsc_hz();
    if (rt->tsc_hz_ < 1'000'000)
        return Status(EIO, "the EAL reports a TSC of " + std::to_string(rt->tsc_hz_) + " Hz");
    rt->ns_mult_ = static_cast<uint64_t>(
        ((static_cast<u128>(1'000'000'000ull) << kNsShift) + rt->tsc_hz_ / 2) / rt->tsc_hz_);
    rt->max_frame_ = kMaxFrame;
    /* mbufs 0: no pools of droce's own; every device is on a port the host hands over
     * with its mempool (DeviceConfig::host_mempool). */
    if (opts.mbufs != 0) {
        const std::string pool_name = rt->unique_name("droce_pool");
        rt->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), opts.mbufs, 256, 0,
                                            RTE_PKTMBUF_HEADROOM + kMaxFrame, rte_socket_id());
        if (rt->pool_ == nullptr)
            return Status(ENOMEM, "rte_pktmbuf_pool_create(" + std::to_string(opts.mbufs) +
                                      " mbufs): " + errstr(rte_errno));
        const std::string zp = rt->unique_name("droce_zc");
        /* A region's refcount is 16 bits: keep the mbufs that can be attached well below. */
        const uint32_t zc_n = std::min<uint32_t>(opts.mbufs * 2 + 1, 32767);
        rt->zc_pool_ =
            rte_pktmbuf_pool_create(zp.c_str(), zc_n, 256, 0, kZcDataRoom, rte_socket_id());
        if (rt->zc_pool_ == nullptr)
            return Status(ENOMEM, "rte_pktmbuf_pool_create(" + std::to_string(zc_n) +
                                      " small mbufs): " + errstr(rte_errno));
    }
    /* Workers: embedded mode is one (the application's loop); else the EAL's worker
     * lcores in -l order from worker_lcore (or the first). */
    uint32_t nw = 1;
    std::vector<unsigned> lcores;
    if (!opts.embedded) {
        unsigned first = RTE_MAX_LCORE;
        if (opts.worker_lcore >= 0) {
            if (!rte_lcore_is_enabled(static_cast<unsigned>(opts.worker_lcore)) ||
                static_cast<unsigned>(opts.worker_lcore) == rte_get_main_lcore())
                return Status(EINVAL, "worker_lcore " + std::to_string(opts.worker_lcore) +
                                          " is not a worker lcore of the EAL (-l)");
            first = static_cast<unsigned>(opts.worker_lcore);
        }
        unsigned l;
        RTE_LCORE_FOREACH_WORKER(l) {
            if (first != RTE_MAX_LCORE && l < first)
                continue;
            lcores.push_back(l);
        }
        if (lcores.empty())
            return Status(EINVAL, "worker mode needs a worker lcore: give the EAL two "
                                  "lcores (e.g. -l 0-1) or use embedded mode");
        nw = opts.workers == 0 ? static_cast<uint32_t>(lcores.size()) : opts.workers;
        if (nw > lcores.size())
            return Status(EINVAL, std::to_string(nw) + " workers need " + std::to_string(nw) +
                                      " worker lcores; the EAL gave " +
                                      std::to_string(lcores.size()) +
                                      " (give more with -l, e.g. -l 0-" + std::to_string(nw) + ")");
    } else {
        nw = opts.workers == 0 ? 1 : opts.workers;
    }
    if (nw > kMaxWorkers)
        return Status(EINVAL, "at most " + std::to_string(kMaxWorkers) + " workers");
    for (uint32_t i = 0; i < nw; ++i) {
        auto w = std::make_unique<Worker>();
        w->rt = rt.get();
        w->index = i;
        w->lcore = opts.embedded ? rte_lcore_id() : lcores[i];
        const std::string mb = rt->unique_name("droce_cmd");
        /* Many application threads may issue control calls; one worker consumes. */
        w->mailbox = rte_ring_create(mb.c_str(), kMailboxSize, rte_socket_id(), RING_F_SC_DEQ);
        if (w->mailbox == nullptr)
            return Status(ENOMEM, "mailbox ring: " + errstr(rte_errno));
        rt->workers_.push_back(std::move(w));
    }
    if (Status s = rt->create_worker_pools(nw); !s)
        return s;
    telemetry_attach(rt.get());
    logger().info("droce engine: {} mode, TSC {} Hz, {} mbufs per worker",
                  opts.embedded ? std::string("embedded")
                                : std::to_string(nw) + " worker(s) from lcore " +
                                      std::to_string(rt->workers_[0]->lcore),
                  rt->tsc_hz_, opts.mbufs);
    return rt;
}

/* One pool per worker, as large as the engine's: a worker allocates its frames and its
 * RX queues' mbufs from its own, so an mbuf is written on one core only, and a pool's
 * common ring is touched by one core (one shared pool moved mbufs between the workers'
 * caches whenever the frames in flight outgrew a cache). */
Status Runtime::create_worker_pools(uint32_t nw) {
    pools_.assign(1, pool_);
    if (pool_ == nullptr)
        return Status::ok(); /* hosted ports only: the host's pools */
    for (uint32_t w = 1; w < nw; ++w) {
        const std::string name = unique_name("droce_pool");
        rte_mempool *p = rte_pktmbuf_pool_create(name.c_str(), opts_.mbufs, 256, 0,
                                                 RTE_PKTMBUF_HEADROOM + kMaxFrame, rte_socket_id());
        if (p == nullptr)
            return Status(ENOMEM, "rte_pktmbuf_pool_create(" + std::to_string(opts_.mbufs) +
                                      " mbufs) for worker " + std::to_string(w) + ": " +
                                      errstr(rte_errno));
        pools_.push_back(p);
    }
    return Status::ok();
}

uint64_t Runtime::mbufs_in_use() const {
    uint64_t n = zc_pool_ ? rte_mempool_in_use_count(zc_pool_) : 0;
    for (rte_mempool *p : pools_)
        if (p != nullptr)
            n += rte_mempool_in_use_count(p);
    return n;
}

namespace {
/* Commands allocated by exec_detached and not yet freed (Runtime::detached_live). */
std::atomic<uint64_t> g_detached_live{0};
} // namespace

Runtime::~Runtime() {
    telemetry_detach(this);
    stop();
    {
        std::lock_guard<std::mutex> lk(telemetry_mutex());
        devs_.clear(); /* stops and closes the ports */
    }
    /* Detached commands still queued were sent after the last drain (a link watch's
     * gratuitous-ARP request, a telemetry read that timed out): freed unrun, their device
     * and worker are gone. Waited-for commands cannot be here: their callers wait. */
    for (auto &w : workers_) {
        void *obj = nullptr;
        while (rte_ring_sc_dequeue(w->mailbox, &obj) == 0) {
            auto *c = static_cast<Command *>(obj);
            if (c->detached && c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                delete c;
                g_detached_live.fetch_sub(1);
            }
        }
    }
    for (rte_ring *r : pair_rings_)
        rte_ring_free(r);
    for (auto &w : workers_)
        rte_ring_free(w->mailbox);
    for (rte_mempool *p : pools_)
        if (p != pool_)
            rte_mempool_free(p);
    rte_mempool_free(pool_);
    rte_mempool_free(zc_pool_);
    /* rte_eal_cleanup() is deliberately not called: the EAL cannot be initialised twice
     * in a process, and another engine may follow. */
}

Result<std::pair<std::string, std::string>> Runtime::create_ring_pair(uint16_t queues) {
    if (queues == 0 || queues > kMaxWorkers)
        return Status(EINVAL, "ring pair: 1.." + std::to_string(kMaxWorkers) + " queues");
    /* Room for `queues` workers' queues as far apart as the ring PMD wants them
     * (drivers::Caps::queue_stride), as far as it takes queues: the queues between stay
     * idle. */
    const uint32_t spread = drivers::queues_for(queues, drivers::kRingQueueStride);
    queues = static_cast<uint16_t>(
        std::min<uint32_t>(spread, std::min(RTE_PMD_RING_MAX_RX_RINGS, RTE_PMD_RING_MAX_TX_RINGS)));
    std::vector<rte_ring *> a2b, b2a;
    auto cleanup = [&] {
        for (rte_ring *r : a2b)
            rte_ring_free(r);
        for (rte_ring *r : b2a)
            rte_ring_free(r);
    };
    for (uint16_t i = 0; i < queues; ++i) {
        const std::string n1 = unique_name("droce_r"), n2 = unique_name("droce_r");
        a2b.push_back(rte_ring_create(n1.c_str(), kPairRingSize, rte_socket_id(),
                                      RING_F_SP_ENQ | RING_F_SC_DEQ));
        b2a.push_back(rte_ring_create(n2.c_str(), kPairRingSize, rte_socket_id(),
                                      RING_F_SP_ENQ | RING_F_SC_DEQ));
        if (a2b.back() == nullptr || b2a.back() == nullptr) {
            cleanup();
            return Status(ENOMEM, "ring pair: rte_ring_create: " + errstr(rte_errno));
        }
    }
    const std::string id = std::to_string(g_name_seq.fetch_add(1));
    /* The ring PMD prefixes "net_ring_" to the name it is given. */
    const std::string ga = "droce" + id + "a", gb = "droce" + id + "b";
    /* A transmits on queue i into a2b[i] and receives on queue i from b2a[i]; B the
     * other way round: queue i of one side feeds queue i of the other. */
    const int pa =
        rte_eth_from_rings(ga.c_str(), b2a.data(), queues, a2b.data(), queues, rte_socket_id());
    const int pb = pa < 0 ? -1
                          : rte_eth_from_rings(gb.c_str(), a2b.data(), queues, b2a.data(), queues,
                                               rte_socket_id());
    if (pa < 0 || pb < 0) {
        cleanup();
        return Status(EIO, "ring pair: rte_eth_from_rings: " + errstr(rte_errno));
    }
    char na[RTE_ETH_NAME_MAX_LEN] = {}, nb[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(static_cast<uint16_t>(pa), na);
    rte_eth_dev_get_name_by_port(static_cast<uint16_t>(pb), nb);
    for (rte_ring *r : a2b)
        pair_rings_.push_back(r);
    for (rte_ring *r : b2a)
        pair_rings_.push_back(r);
    logger().info("ring pair: {} <-> {} ({} queue(s))", na, nb, queues);
    return std::make_pair(std::string(na), std::string(nb));
}

Status Runtime::start() {
    if (opts_.embedded || worker_running())
        return {};
    stop_.store(false);
    running_.store(true, std::memory_order_release);
    for (size_t i = 0; i < workers_.size(); ++i) {
        Worker &w = *workers_[i];
        const int rc = rte_eal_remote_launch(&Runtime::worker_main, &w, w.lcore);
        if (rc != 0) {
            stop_.store(true, std::memory_order_release);
            for (size_t j = 0; j < i; ++j)
                rte_eal_wait_lcore(workers_[j]->lcore);
            running_.store(false);
            return Status(EBUSY, "rte_eal_remote_launch on lcore " + std::to_string(w.lcore) +
                                     ": " + errstr(rc));
        }
    }
    logger().info("{} worker(s) started", workers_.size());
    return {};
}

void Runtime::stop() {
    if (!worker_running())
        return;
    stop_.store(true, std::memory_order_release);
    for (auto &w : workers_)
        rte_eal_wait_lcore(w->lcore);
    running_.store(false, std::memory_order_release);
    /* Commands queued after the workers left run here, inline. */
    drivers::PollSection gate;
    for (uint32_t i = 0; i < workers_.size(); ++i)
        drain_commands(i);
    logger().info("workers stopped");
}

int Runtime::worker_main(void *arg) {
    auto *self = static_cast<Worker *>(arg);
    Runtime *rt = self->rt;
    const uint32_t wi = self->index;
    uint32_t idle = 0;
    const uint32_t idle_limit = rt->opts_.idle_polls_before_sleep;
    rte_ring *const mb = self->mailbox;
    /* A memif peer's disconnect unmaps the rings on the interrupt thread: this worker
     * bursts only while the poll gate is open (drivers/poll_gate.h). */
    drivers::PollerSlot *const gate = drivers::poll_gate_join();
    if (gate != nullptr)
        drivers::poll_gate_online(gate);
    while (!rt->stop_.load(std::memory_order_acquire)) {
        if (gate != nullptr)
            drivers::poll_gate_pass(gate);
        /* Commands are rare: an empty mailbox costs two loads, not a call. */
        uint32_t work = rte_ring_empty(mb) ? 0 : rt->drain_commands(wi);
        const uint64_t now = rt->now_ns();
        uint32_t paced = 0;
        for (const auto &d : rt->devs_) {
            uint32_t dw = 0;
            d->shard(wi).poll(now, &dw);
            work += dw;
            paced += d->shard(wi).pacer_holding();
        }
        if (work != 0 || paced != 0) {
            idle = 0;
        } else if (idle_limit != 0 && ++idle >= idle_limit) {
            /* Give the core back (shared machines, CI with a VM on the same cores). */
            drivers::PollOffline offline;
            rte_delay_us_sleep(rt->opts_.idle_sleep_us);
        }
    }
    drivers::poll_gate_leave(gate);
    return 0;
}

uint64_t Runtime::detached_live() { return g_detached_live.load(); }

uint32_t Runtime::drain_commands(uint32_t w) {
    void *objs[8];
    uint32_t n = 0;
    unsigned k;
    while ((k = rte_ring_sc_dequeue_burst(workers_[w]->mailbox, objs, 8, nullptr)) != 0) {
        for (unsigned i = 0; i < k; ++i) {
            auto *c = static_cast<Command *>(objs[i]);
            if (c->park) {
                /* exec_all: stay here, touching nothing, until the caller is done (which
                 * may stop a port, waiting for the interrupt thread: offline). */
                drivers::PollOffline offline;
                c->parked.store(true, std::memory_order_release);
                while (!c->release.load(std::memory_order_acquire))
                    rte_pause();
                c->done.store(true, std::memory_order_release);
                continue;
            }
            /* Read before done is set: a waited-for command lives on its caller's stack
             * and may be gone right after. */
            const bool detached = c->detached;
            (*c->fn)();
            if (!detached) {
                c->done.store(true, std::memory_order_release);
                continue;
            }
            c->done.store(true, std::memory_order_release);
            /* Whichever of the waiter and the drainer lets go last frees it. */
            if (c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                delete c;
                g_detached_live.fetch_sub(1);
            }
        }
        n += k;
    }
    return n;
}

int Runtime::poll_worker(uint32_t i, uint32_t *work) {
    const bool lock = embedded_multi();
    if (lock)
        rte_spinlock_lock(&workers_[i]->lock);
    /* The application's thread bursts here, and only here (and in an inline ACK answer):
     * online for the poll alone, so that it may block anywhere else. */
    drivers::PollSection gate;
    uint32_t w = rte_ring_empty(workers_[i]->mailbox) ? 0 : drain_commands(i);
    uint32_t pkts = 0;
    const uint64_t now = now_ns();
    for (const auto &d : devs_) {
        uint32_t dw = 0;
        pkts += d->shard(i).poll(now, &dw);
        w += dw;
    }
    if (lock)
        rte_spinlock_unlock(&workers_[i]->lock);
    if (work)
        *work = w;
    return static_cast<int>(pkts);
}

int Runtime::poll_once(uint32_t *work) {
    uint32_t w = 0;
    int pkts = 0;
    for (uint32_t i = 0; i < workers_.size(); ++i) {
        uint32_t ww = 0;
        pkts += poll_worker(i, &ww);
        w += ww;
    }
    if (work)
        *work = w;
    return pkts;
}

void Runtime::exec_on(uint32_t w, const std::function<void()> &fn) {
    if (embedded_multi()) {
        /* The worker's poll thread may be in an iteration: wait for it. */
        rte_spinlock_lock(&workers_[w]->lock);
        fn();
        rte_spinlock_unlock(&workers_[w]->lock);
        return;
    }
    if (!worker_running()) {
        fn();
        return;
    }
    Command c;
    c.fn = &fn;
    rte_ring *mb = workers_[w]->mailbox;
    while (rte_ring_mp_enqueue(mb, &c) != 0)
        std::this_thread::sleep_for(std::chrono::microseconds(10));
    /* Control plane: a short spin, then sleep so the caller does not steal the
     * worker's core on a small machine. */
    for (int i = 0; i < 1000 && !c.done.load(std::memory_order_acquire); ++i)
        rte_pause();
    while (!c.done.load(std::memory_order_acquire))
        std::this_thread::sleep_for(std::chrono::microseconds(20));
}

void Runtime::exec_all(const std::function<void()> &fn) {
    if (embedded_multi()) {
        for (auto &w : workers_) /* in order: no two callers deadlock */
            rte_spinlock_lock(&w->lock);
        fn();
        for (auto &w : workers_)
            rte_spinlock_unlock(&w->lock);
        return;
    }
    if (!worker_running()) {
        fn();
        return;
    }
    std::vector<Command> parks(workers_.size());
    for (size_t i = 0; i < workers_.size(); ++i) {
        parks[i].park = true;
        while (rte_ring_mp_enqueue(workers_[i]->mailbox, &parks[i]) != 0)
            std::this_thread::sleep_for(std::chrono::microseconds(10));
    }
    for (auto &p : parks)
        while (!p.parked.load(std::memory_order_acquire))
            std::this_thread::sleep_for(std::chrono::microseconds(5));
    fn();
    for (auto &p : parks)
        p.release.store(true, std::memory_order_release);
    for (auto &p : parks)
        while (!p.done.load(std::memory_order_acquire))
            rte_pause();
}

bool Runtime::exec_detached(uint32_t w, std::function<void()> fn, uint32_t timeout_ms) {
    if (w >= workers_.size())
        return false;
    auto *c = new Command;
    g_detached_live.fetch_add(1);
    c->detached = true;
    c->owned = std::move(fn);
    c->fn = &c->owned;
    c->refs.store(2, std::memory_order_relaxed);
    if (rte_ring_mp_enqueue(workers_[w]->mailbox, c) != 0) {
        delete c;
        g_detached_live.fetch_sub(1);
        return false;
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    bool done = false;
    while (!(done = c->done.load(std::memory_order_acquire)) &&
           std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        delete c;
        g_detached_live.fetch_sub(1);
    }
    return done;
}

void Runtime::wait_a_bit() {
    if (worker_running())
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    else
        poll_once();
}

} // namespace droce::engine
