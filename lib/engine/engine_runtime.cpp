/* SPDX-License-Identifier: BSD-3-Clause */
/* EAL and port bring-up, the worker loop and the command mailbox. */
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <spdlog/spdlog.h>

#include "engine.h"

namespace droce::engine {

namespace {

/* Frames up to 9216 bytes (jumbo): a RoCE path MTU of 4096 needs an Ethernet MTU of
 * about 4200, and the transport builds single-segment frames. */
constexpr uint32_t kMaxFrame = 9216;
constexpr uint16_t kDescriptors = 1024;
constexpr unsigned kPairRingSize = 1024;
constexpr unsigned kMailboxSize = 64;
/* Zero-copy frames: headers (<= 94 bytes), external-buffer attachments (no data room
 * used) and the pad + ICRC tail all come from one pool of small mbufs. */
constexpr uint16_t kZcDataRoom = RTE_PKTMBUF_HEADROOM + 128;
/* Payloads below this are copied even with zero-copy on: measured with bench_zero_copy
 * (BM_WriteSize, single-packet WRITEs, zero-copy vs copy) on the development machine. */
constexpr uint32_t kZeroCopyMinBytesDefault = 1024;

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

} // namespace

std::string Runtime::unique_name(const char *prefix) {
    /* DPDK object names are global and at most RTE_RING_NAMESIZE-1 chars. */
    return std::string(prefix) + std::to_string(g_name_seq.fetch_add(1));
}

Result<std::unique_ptr<Runtime>> Runtime::create(int argc, char **argv, int *consumed,
                                                 const EngineOptions &opts) {
    spdlog::set_level(spdlog::level::from_str(opts.log_level));
    if (opts.workers != 1)
        return Status(EINVAL, "EngineOptions::workers: only 1 worker is supported yet");
    int used = 0;
    if (!g_eal_ready.load()) {
        static std::once_flag cleanup_once;
        std::call_once(cleanup_once, [] { std::atexit(remove_own_runtime_dir); });
        used = rte_eal_init(argc, argv);
        if (used >= 0)
            ++used; /* rte_eal_init does not count argv[0] */
        if (used < 0)
            return Status(rte_errno ? rte_errno : EINVAL,
                          "rte_eal_init failed: " + errstr(rte_errno) +
                              " (check the EAL arguments before '--')");
        g_eal_ready = true;
    } else {
        /* Already up: skip the EAL arguments the way rte_eal_init would have. */
        for (used = 1; used < argc; ++used)
            if (std::strcmp(argv[used], "--") == 0)
                break;
        if (used < argc)
            ++used;
        spdlog::info("EAL already initialised in this process; reusing it");
    }
    if (consumed)
        *consumed = used;

    std::unique_ptr<Runtime> rt(new Runtime());
    rt->opts_ = opts;
    rt->tsc_hz_ = rte_get_tsc_hz();
    rt->max_frame_ = kMaxFrame;
    const std::string pool_name = rt->unique_name("droce_pool");
    rt->pool_ = rte_pktmbuf_pool_create(pool_name.c_str(), opts.mbufs, 256, 0,
                                        RTE_PKTMBUF_HEADROOM + kMaxFrame, rte_socket_id());
    if (rt->pool_ == nullptr)
        return Status(ENOMEM, "rte_pktmbuf_pool_create(" + std::to_string(opts.mbufs) +
                                  " mbufs): " + errstr(rte_errno));
    const std::string zp = rt->unique_name("droce_zc");
    /* A region's refcount is 16 bits: keep the mbufs that can be attached well below. */
    const uint32_t zc_n = std::min<uint32_t>(opts.mbufs * 2 + 1, 32767);
    rt->zc_pool_ = rte_pktmbuf_pool_create(zp.c_str(), zc_n, 256, 0, kZcDataRoom, rte_socket_id());
    if (rt->zc_pool_ == nullptr)
        return Status(ENOMEM, "rte_pktmbuf_pool_create(" + std::to_string(zc_n) +
                                  " small mbufs): " + errstr(rte_errno));
    const std::string mb = rt->unique_name("droce_cmd");
    /* Many application threads may issue control calls; one worker consumes. */
    rt->mailbox_ = rte_ring_create(mb.c_str(), kMailboxSize, rte_socket_id(), RING_F_SC_DEQ);
    if (rt->mailbox_ == nullptr)
        return Status(ENOMEM, "mailbox ring: " + errstr(rte_errno));

    if (!opts.embedded) {
        if (opts.worker_lcore >= 0) {
            if (!rte_lcore_is_enabled(static_cast<unsigned>(opts.worker_lcore)) ||
                static_cast<unsigned>(opts.worker_lcore) == rte_get_main_lcore())
                return Status(EINVAL, "worker_lcore " + std::to_string(opts.worker_lcore) +
                                          " is not a worker lcore of the EAL (-l)");
            rt->worker_lcore_ = static_cast<unsigned>(opts.worker_lcore);
        } else {
            const unsigned l = rte_get_next_lcore(-1, 1, 0);
            if (l >= RTE_MAX_LCORE)
                return Status(EINVAL, "worker mode needs a worker lcore: give the EAL two "
                                      "lcores (e.g. -l 0-1) or use embedded mode");
            rt->worker_lcore_ = l;
        }
    }
    telemetry_attach(rt.get());
    spdlog::info("droce engine: {} mode, TSC {} Hz, {} mbufs",
                 opts.embedded ? "embedded" : "worker lcore " + std::to_string(rt->worker_lcore_),
                 rt->tsc_hz_, opts.mbufs);
    return rt;
}

Runtime::~Runtime() {
    telemetry_detach(this);
    stop();
    {
        std::lock_guard<std::mutex> lk(telemetry_mutex());
        devs_.clear(); /* stops and closes the ports */
    }
    for (rte_ring *r : pair_rings_)
        rte_ring_free(r);
    rte_ring_free(mailbox_);
    rte_mempool_free(pool_);
    rte_mempool_free(zc_pool_);
    /* rte_eal_cleanup() is deliberately not called: the EAL cannot be initialised twice
     * in a process, and another engine may follow. */
}

uint64_t Runtime::now_ns() const {
    const uint64_t c = rte_get_tsc_cycles();
    /* Split to stay within 64 bits: (c / hz) s + (c % hz) cycles. */
    return c / tsc_hz_ * 1'000'000'000ull + (c % tsc_hz_) * 1'000'000'000ull / tsc_hz_;
}

Result<std::pair<std::string, std::string>> Runtime::create_ring_pair() {
    const std::string a2b = unique_name("droce_r");
    const std::string b2a = unique_name("droce_r");
    rte_ring *r1 =
        rte_ring_create(a2b.c_str(), kPairRingSize, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
    rte_ring *r2 =
        rte_ring_create(b2a.c_str(), kPairRingSize, rte_socket_id(), RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (r1 == nullptr || r2 == nullptr) {
        rte_ring_free(r1);
        rte_ring_free(r2);
        return Status(ENOMEM, "ring pair: rte_ring_create: " + errstr(rte_errno));
    }
    const std::string id = std::to_string(g_name_seq.fetch_add(1));
    /* The ring PMD prefixes "net_ring_" to the name it is given. */
    const std::string ga = "droce" + id + "a", gb = "droce" + id + "b";
    /* A transmits into r1 and receives from r2; B the other way round. */
    rte_ring *const a_rx[] = {r2}, *const a_tx[] = {r1};
    rte_ring *const b_rx[] = {r1}, *const b_tx[] = {r2};
    const int pa = rte_eth_from_rings(ga.c_str(), a_rx, 1, a_tx, 1, rte_socket_id());
    const int pb = pa < 0 ? -1 : rte_eth_from_rings(gb.c_str(), b_rx, 1, b_tx, 1, rte_socket_id());
    if (pa < 0 || pb < 0) {
        rte_ring_free(r1);
        rte_ring_free(r2);
        return Status(EIO, "ring pair: rte_eth_from_rings: " + errstr(rte_errno));
    }
    char na[RTE_ETH_NAME_MAX_LEN] = {}, nb[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(static_cast<uint16_t>(pa), na);
    rte_eth_dev_get_name_by_port(static_cast<uint16_t>(pb), nb);
    pair_rings_.push_back(r1);
    pair_rings_.push_back(r2);
    spdlog::info("ring pair: {} <-> {}", na, nb);
    return std::make_pair(std::string(na), std::string(nb));
}

Result<Dev *> Runtime::open_device(const DeviceConfig &cfg) {
    if (cfg.pkeys.empty() || cfg.pkeys.size() > 0x10000)
        return Status(EINVAL, "open_device: the P_Key table needs 1..65536 entries");
    if (worker_running())
        return Status(EBUSY, "open_device: open devices before start()");
    /* Which port. */
    uint16_t port = RTE_MAX_ETHPORTS;
    if (cfg.port.empty()) {
        uint16_t p;
        RTE_ETH_FOREACH_DEV(p) {
            bool taken = false;
            for (const auto &d : devs_)
                taken |= d->port_id() == p;
            if (!taken) {
                port = p;
                break;
            }
        }
        if (port == RTE_MAX_ETHPORTS)
            return Status(ENODEV, "open_device: no free DPDK port (give one with -a/--vdev)");
    } else if (cfg.port.find_first_not_of("0123456789") == std::string::npos) {
        port = static_cast<uint16_t>(std::stoul(cfg.port));
        if (!rte_eth_dev_is_valid_port(port))
            return Status(ENODEV, "open_device: no DPDK port " + cfg.port);
    } else if (rte_eth_dev_get_port_by_name(cfg.port.c_str(), &port) != 0) {
        return Status(ENODEV, "open_device: no DPDK port named '" + cfg.port + "'");
    }
    for (const auto &d : devs_)
        if (d->port_id() == port)
            return Status(EBUSY, "open_device: port " + std::to_string(port) + " already open");

    net::Iface ifc;
    if (cfg.ipv4_cidr.empty())
        return Status(EINVAL, "open_device: ipv4_cidr is required (e.g. 10.77.0.100/24)");
    if (Status s = net::parse_ipv4_cidr(cfg.ipv4_cidr, &ifc.ip, &ifc.prefix_len); !s)
        return Status(EINVAL, "open_device: " + s.message());

    char pname[RTE_ETH_NAME_MAX_LEN] = {};
    rte_eth_dev_get_name_by_port(port, pname);
    const std::string name = pname;
    rte_eth_dev_info info{};
    if (int rc = rte_eth_dev_info_get(port, &info); rc != 0)
        return Status(EIO, name + ": rte_eth_dev_info_get: " + errstr(rc));

    rte_eth_conf conf{};
    bool port_sets_mtu = true;
    if (cfg.mtu) {
        if (cfg.mtu + RTE_ETHER_HDR_LEN + 4 > max_frame_)
            return Status(EINVAL, name + ": MTU " + std::to_string(cfg.mtu) + " above " +
                                      std::to_string(max_frame_ - RTE_ETHER_HDR_LEN - 4) +
                                      " (mbuf data room)");
        uint32_t port_max = info.max_mtu != 0 ? info.max_mtu : UINT16_MAX;
        if (info.max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN)
            port_max = std::min<uint32_t>(port_max, info.max_rx_pktlen - RTE_ETHER_HDR_LEN -
                                                        RTE_ETHER_CRC_LEN);
        if (cfg.mtu > port_max) {
            /* Some virtual ports report a maximum they do not enforce: net_af_packet says
             * 1500 whatever its tap and framesz carry. The user asked for this MTU, so it
             * becomes droce's own; a frame the port truncates anyway is still refused by
             * the parser and counted (rx_drop_too_short / rx_drop_bad_udp_length). */
            spdlog::warn("{}: port reports max MTU {}; using {} as droce's own MTU without "
                         "setting the port's",
                         name, port_max, cfg.mtu);
            port_sets_mtu = false;
        } else {
            conf.rxmode.mtu = cfg.mtu;
        }
    }
    /* Zero-copy TX needs a port that takes chained mbufs: one that says so, or net_ring
     * (passes mbuf pointers through, never looks at the data). Ports that copy from
     * virtual addresses (net_ring, net_af_packet) need no DMA mapping of the regions. */
    const std::string drv = info.driver_name ? info.driver_name : "";
    const bool multi_seg = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) != 0;
    const bool zc = opts_.zero_copy && (multi_seg || drv == "net_ring");
    const bool needs_dma = !(drv == "net_ring" || drv == "net_af_packet");
    if (multi_seg)
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    if (int rc = rte_eth_dev_configure(port, 1, 1, &conf); rc != 0)
        return Status(EIO, name + ": rte_eth_dev_configure: " + errstr(rc));
    uint16_t nrxd = kDescriptors, ntxd = kDescriptors;
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrxd, &ntxd);
    int socket = rte_eth_dev_socket_id(port);
    if (socket < 0)
        socket = static_cast<int>(rte_socket_id());
    if (int rc =
            rte_eth_rx_queue_setup(port, 0, nrxd, static_cast<unsigned>(socket), nullptr, pool_);
        rc != 0)
        return Status(EIO, name + ": rte_eth_rx_queue_setup: " + errstr(rc));
    if (int rc = rte_eth_tx_queue_setup(port, 0, ntxd, static_cast<unsigned>(socket), nullptr);
        rc != 0)
        return Status(EIO, name + ": rte_eth_tx_queue_setup: " + errstr(rc));

    uint32_t mtu = 0;
    if (cfg.mtu) {
        const int rc =
            port_sets_mtu ? rte_eth_dev_set_mtu(port, static_cast<uint16_t>(cfg.mtu)) : 0;
        if (rc == -ENOTSUP) {
            /* Virtual ports (net_ring) have no MTU of their own: ours is the limit. */
            spdlog::info("{}: port cannot set its MTU; using {} as droce's own", name, cfg.mtu);
        } else if (rc != 0) {
            return Status(EINVAL, name + ": rte_eth_dev_set_mtu(" + std::to_string(cfg.mtu) +
                                      "): " + errstr(rc));
        }
        mtu = cfg.mtu;
    } else {
        uint16_t m = RTE_ETHER_MTU;
        rte_eth_dev_get_mtu(port, &m);
        mtu = m;
    }

    rte_ether_addr port_mac{};
    rte_eth_macaddr_get(port, &port_mac);
    net::Mac pm;
    std::memcpy(pm.data(), port_mac.addr_bytes, 6);
    if (cfg.mac.empty()) {
        ifc.mac = pm;
    } else if (!net::parse_mac(cfg.mac, &ifc.mac)) {
        return Status(EINVAL, "open_device: bad MAC '" + cfg.mac + "'");
    }

    if (int rc = rte_eth_dev_start(port); rc != 0)
        return Status(EIO, name + ": rte_eth_dev_start: " + errstr(rc));
    if (ifc.mac != pm) {
        /* Our MAC is not the port's (e.g. af_packet on a tap): receive everything and
         * filter in software (rx_drop_not_our_mac). */
        const int rc = rte_eth_promiscuous_enable(port);
        if (rc != 0 && rc != -ENOTSUP)
            spdlog::warn("{}: promiscuous mode: {}", name, errstr(rc));
    }
    auto dev = std::make_unique<Dev>(*this, port, name, ifc, mtu, cfg.arp_timeout_ms);
    dev->set_pkeys(cfg.pkeys);
    dev->set_worker_rings(!opts_.embedded);
    dev->set_zero_copy(zc, needs_dma,
                       opts_.zero_copy_min_bytes ? opts_.zero_copy_min_bytes
                                                 : kZeroCopyMinBytesDefault);
    spdlog::info("{}: zero-copy TX {}{}", name, zc ? "on" : "off",
                 zc && needs_dma ? " (regions need a DMA mapping)" : "");
    spdlog::info("{}: port {} driver {} MAC {} IP {}/{} MTU {} (RoCE active MTU {})", name, port,
                 info.driver_name ? info.driver_name : "?", net::mac_str(ifc.mac),
                 net::ipv4_str(ifc.ip), ifc.prefix_len, mtu, dev->active_mtu());
    Dev *d = dev.get();
    std::lock_guard<std::mutex> lk(telemetry_mutex());
    devs_.push_back(std::move(dev));
    return d;
}

Status Runtime::start() {
    if (opts_.embedded || worker_running())
        return {};
    stop_.store(false);
    running_.store(true, std::memory_order_release);
    const int rc = rte_eal_remote_launch(&Runtime::worker_main, this, worker_lcore_);
    if (rc != 0) {
        running_.store(false);
        return Status(EBUSY, "rte_eal_remote_launch on lcore " + std::to_string(worker_lcore_) +
                                 ": " + errstr(rc));
    }
    spdlog::info("worker started on lcore {}", worker_lcore_);
    return {};
}

void Runtime::stop() {
    if (!worker_running())
        return;
    stop_.store(true, std::memory_order_release);
    rte_eal_wait_lcore(worker_lcore_);
    /* Commands queued after the worker left run here, inline. */
    drain_commands();
    running_.store(false, std::memory_order_release);
    spdlog::info("worker stopped");
}

int Runtime::worker_main(void *arg) {
    auto *rt = static_cast<Runtime *>(arg);
    uint32_t idle = 0;
    const uint32_t idle_limit = rt->opts_.idle_polls_before_sleep;
    while (!rt->stop_.load(std::memory_order_acquire)) {
        uint32_t work = 0;
        rt->poll_once(&work);
        if (work != 0) {
            idle = 0;
        } else if (idle_limit != 0 && ++idle >= idle_limit) {
            /* Give the core back (shared machines, CI with a VM on the same cores). */
            rte_delay_us_sleep(rt->opts_.idle_sleep_us);
        }
    }
    return 0;
}

uint32_t Runtime::drain_commands() {
    void *objs[8];
    uint32_t n = 0;
    unsigned k;
    while ((k = rte_ring_sc_dequeue_burst(mailbox_, objs, 8, nullptr)) != 0) {
        for (unsigned i = 0; i < k; ++i) {
            auto *c = static_cast<Command *>(objs[i]);
            (*c->fn)();
            c->done.store(true, std::memory_order_release);
        }
        n += k;
    }
    return n;
}

int Runtime::poll_once(uint32_t *work) {
    uint32_t w = drain_commands();
    uint32_t pkts = 0;
    const uint64_t now = now_ns();
    for (const auto &d : devs_) {
        uint32_t dw = 0;
        pkts += d->poll(now, &dw);
        w += dw;
    }
    if (work)
        *work = w;
    return static_cast<int>(pkts);
}

void Runtime::exec(const std::function<void()> &fn) {
    if (!worker_running()) {
        fn();
        return;
    }
    Command c;
    c.fn = &fn;
    while (rte_ring_mp_enqueue(mailbox_, &c) != 0)
        std::this_thread::sleep_for(std::chrono::microseconds(10));
    /* Control plane: a short spin, then sleep so the caller does not steal the
     * worker's core on a small machine. */
    for (int i = 0; i < 1000 && !c.done.load(std::memory_order_acquire); ++i)
        rte_pause();
    while (!c.done.load(std::memory_order_acquire))
        std::this_thread::sleep_for(std::chrono::microseconds(20));
}

bool Runtime::exec_detached(std::function<void()> fn, uint32_t timeout_ms) {
    auto *c = new Command;
    c->detached = true;
    c->owned = std::move(fn);
    c->fn = &c->owned;
    c->refs.store(2, std::memory_order_relaxed);
    if (rte_ring_mp_enqueue(mailbox_, c) != 0) {
        delete c;
        return false;
    }
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    bool done = false;
    while (!(done = c->done.load(std::memory_order_acquire)) &&
           std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (c->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
        delete c;
    return done;
}

void Runtime::wait_a_bit() {
    if (worker_running())
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    else
        poll_once();
}

} // namespace droce::engine
