/* SPDX-License-Identifier: BSD-3-Clause */
/* EAL and port bring-up, the worker loop and the command mailbox. */
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

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
#include "engine_pfc_port.h"
#include "engine_rss.h"
#include "poll_gate.h"

namespace droce::engine {

namespace {
/* GCC's 128-bit integer (one MUL on x86-64); __extension__ keeps -Wpedantic quiet. */
__extension__ typedef unsigned __int128 u128;

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

/** The adapter's answer to what memory a port's TX can take (drivers::Reach). */
ZcReach zc_reach_of(drivers::Reach r) {
    switch (r) {
    case drivers::Reach::VirtAddr:
        return ZcReach::VirtAddr;
    case drivers::Reach::DpdkFd:
        return ZcReach::DpdkFd;
    case drivers::Reach::DmaMapped:
        return ZcReach::DmaMapped;
    case drivers::Reach::Copy:
        break;
    }
    return ZcReach::Copy;
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
        std::call_once(cleanup_once, [] { std::atexit(remove_own_runtime_dir); });
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

namespace {

/* Asks the PMD to make `prio` lossless (PFC) and returns what happened, said once at
 * start-up and shown by droce-info, naming the DPDK API that applied
 * (engine_pfc_port.cpp: the queue-based one where the PMD has it, else the port-wide
 * one). */
std::string pfc_enable(uint16_t port, const std::string &name, const char *drv, int prio,
                       uint16_t nrxq, uint16_t ntxq) {
    if (prio < 0) {
        logger().info("{}: PFC not requested; PFC frames the port hands up are honoured in "
                      "software",
                      name);
        return "not requested (received PFC honoured in software)";
    }
    const PfcPortResult r = pfc_port_enable(port, prio, nrxq, ntxq);
    std::string s;
    if (r.rc == 0) {
        s = "on for priority " + std::to_string(prio) + " via " + pfc_api_name(r.api) +
            (r.detail.empty() ? "" : " (" + r.detail + ")") + " (PMD " + drv + ")";
        logger().info("{}: PFC {}", name, s);
    } else if (r.api == PfcApi::None) {
        s = "not enabled: PMD " + std::string(drv) + " " + r.detail + "; priority " +
            std::to_string(prio) +
            " is lossless only if the switch and NIC (kernel DCB) say so; received PFC "
            "honoured in software";
        logger().warn("{}: PFC {}", name, s);
    } else {
        s = "not enabled: " + std::string(pfc_api_name(r.api)) + "(priority " +
            std::to_string(prio) + ") failed: " + r.detail;
        logger().warn("{}: PFC {}", name, s);
    }
    return s;
}

} // namespace

Result<Dev *> Runtime::open_device(const DeviceConfig &cfg) {
    if (cfg.max_qps <= kFirstQpn || cfg.max_qps > kMaxQpn)
        return Status(EINVAL, "open_device: max_qps must be " + std::to_string(kFirstQpn + 1) +
                                  ".." + std::to_string(kMaxQpn) + " (the 24-bit QPN space)");
    if (cfg.pkeys.empty() || cfg.pkeys.size() > 0x10000)
        return Status(EINVAL, "open_device: the P_Key table needs 1..65536 entries");
    const cc::CcParams ccp = cc::params_from(cfg.dcqcn_params);
    if (const char *e = cc::validate(ccp))
        return Status(EINVAL, std::string("open_device: DCQCN parameter ") + e);
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
            /* A bonding port goes before its members (which come first in port order
             * and must not be opened themselves): the first free bond, else the first
             * free port. */
            if (!taken && (port == RTE_MAX_ETHPORTS || is_bond_port(p))) {
                port = p;
                if (is_bond_port(p))
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
    if (const int bond = bond_of_member(port); bond >= 0)
        return Status(EBUSY, "open_device: port " + std::to_string(port) +
                                 " is a member of bonding port " + std::to_string(bond) +
                                 " (open the bond)");

    if (cfg.pfc_priority > 7 || cfg.pfc_priority < -1)
        return Status(EINVAL, "open_device: pfc_priority must be 0..7 (or -1: none)");
    if (cfg.pfc_tx_xoff != 0 && cfg.pfc_priority < 0)
        return Status(EINVAL, "open_device: pfc_tx_xoff needs pfc_priority (the priority to "
                              "pause)");
    if (cfg.pfc_tx_xoff != 0 && cfg.pfc_tx_xon >= cfg.pfc_tx_xoff)
        return Status(EINVAL, "open_device: pfc_tx_xon must be below pfc_tx_xoff");
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

    if (cfg.host_mempool != nullptr)
        return open_hosted(cfg, port, name, ifc, ccp); /* the host's port, as it is */
    if (pool_ == nullptr)
        return Status(EINVAL, name + ": the engine has no mbuf pool (EngineOptions::mbufs 0): "
                                     "hand the port over with DeviceConfig::host_mempool");
    /* What droce may rely on for this port: its PMD family's adapter (drivers/). */
    drivers::Caps caps = drivers::probe(port, info);
    for (const std::string &l : caps.lines())
        logger().info("{}: adapter {}: {}", name, caps.adapter, l);
    rte_eth_conf conf{};
    bool port_sets_mtu = true;
    /* --eth-mtu is an override: without it, a port whose PMD hides the kernel
     * interface's MTU (af_packet says 1500) uses the interface's, read once here. */
    uint32_t want_mtu = cfg.mtu;
    if (want_mtu == 0 && caps.auto_mtu() != 0) {
        want_mtu = std::min<uint32_t>(caps.auto_mtu(), max_frame_ - RTE_ETHER_HDR_LEN - 4);
        port_sets_mtu = false;
        logger().info("{}: MTU {} from kernel interface {} (the PMD does not report it)", name,
                      want_mtu, caps.kernel_if);
    }
    if (cfg.mtu) {
        if (cfg.mtu + RTE_ETHER_HDR_LEN + 4 > max_frame_)
            return Status(EINVAL, name + ": MTU " + std::to_string(cfg.mtu) + " above " +
                                      std::to_string(max_frame_ - RTE_ETHER_HDR_LEN - 4) +
                                      " (mbuf data room)");
        const uint32_t port_max = caps.max_mtu != 0 ? caps.max_mtu : UINT16_MAX;
        if (caps.mtu_hidden) {
            port_sets_mtu = false; /* the PMD's MTU is not the interface's: droce's own */
        } else if (cfg.mtu > port_max) {
            /* Some virtual ports report a maximum they do not enforce (the adapters of
             * those known to hide it say mtu_hidden). The user asked for this MTU, so it
             * becomes droce's own; a frame the port truncates anyway is still refused by
             * the parser and counted (rx_drop_too_short / rx_drop_bad_udp_length). */
            logger().warn("{}: port reports max MTU {}; using {} as droce's own MTU without "
                          "setting the port's",
                          name, port_max, cfg.mtu);
            port_sets_mtu = false;
        } else {
            conf.rxmode.mtu = cfg.mtu;
        }
    }
    const std::string drv = caps.driver;
    const bool multi_seg = caps.multi_seg_tx;
    /* One RX and one TX queue per worker where the port has them. A port with fewer
     * RX queues is read by worker 0, which hands each packet to its QP's worker; with
     * fewer TX queues, the workers without one hand their frames to worker 0. */
    const uint32_t nw = workers();
    const uint16_t nrxq =
        static_cast<uint16_t>(std::min<uint32_t>(nw, std::max<uint16_t>(1, info.max_rx_queues)));
    const uint16_t ntxq =
        static_cast<uint16_t>(std::min<uint32_t>(nw, std::max<uint16_t>(1, info.max_tx_queues)));
    if (nrxq > 1 && caps.rss_udp) {
        /* Spread RoCE flows over the RX queues by IP/UDP: droce picks its QPs' UDP source
         * ports so that droce<->droce traffic lands on the owning worker. */
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        if (info.hash_key_size == sizeof(kDroceRssKey)) {
            conf.rx_adv_conf.rss_conf.rss_key = const_cast<uint8_t *>(kDroceRssKey);
            conf.rx_adv_conf.rss_conf.rss_key_len = sizeof(kDroceRssKey);
        }
        conf.rx_adv_conf.rss_conf.rss_hf =
            (RTE_ETH_RSS_NONFRAG_IPV4_UDP | RTE_ETH_RSS_NONFRAG_IPV6_UDP) &
            info.flow_type_rss_offloads;
    }
    /* Zero-copy attaches mbufs whose refcount only the attaching worker may touch: not
     * where another thread frees them (net_ring: the peer's RX; a TX queue shared
     * through worker 0). It needs a port that takes chained mbufs (one that says so, or
     * net_ring, which passes mbuf pointers through); then what memory it can take
     * depends on how its PMD reaches the data (zc_reach_of). */
    const bool zc_ok = opts_.zero_copy && (multi_seg || caps.tx_passes_mbufs) &&
                       (nw == 1 || (!caps.tx_passes_mbufs && ntxq == nw));
    const ZcReach reach = zc_ok ? zc_reach_of(caps.reach) : ZcReach::Copy;
    if (multi_seg)
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
    /* Bifurcated steering: isolation must be asked before the port is configured. */
    drivers::SteerReport steer;
    const bool steer_on = cfg.flow_steering == 1 || (cfg.flow_steering < 0 && caps.steer_default);
    if (steer_on && !caps.can_steer) {
        steer.errors.push_back("flow steering asked, but the " + caps.adapter +
                               " adapter does not steer");
    } else if (steer_on && !drivers::steer_isolate(port, &steer)) {
        logger().warn("{}: rte_flow steering: {}; droce takes the whole port", name,
                      steer.errors.back());
    }
    if (int rc = rte_eth_dev_configure(port, nrxq, ntxq, &conf); rc != 0)
        return Status(EIO, name + ": rte_eth_dev_configure: " + errstr(rc));
    uint16_t nrxd = kDescriptors, ntxd = kDescriptors;
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrxd, &ntxd);
    int socket = rte_eth_dev_socket_id(port);
    if (socket < 0)
        socket = static_cast<int>(rte_socket_id());
    for (uint16_t q = 0; q < nrxq; ++q)
        if (int rc = rte_eth_rx_queue_setup(port, q, nrxd, static_cast<unsigned>(socket), nullptr,
                                            pool(q)); /* queue q is worker q's */
            rc != 0)
            return Status(EIO, name + ": rte_eth_rx_queue_setup(" + std::to_string(q) +
                                   "): " + errstr(rc));
    for (uint16_t q = 0; q < ntxq; ++q)
        if (int rc = rte_eth_tx_queue_setup(port, q, ntxd, static_cast<unsigned>(socket), nullptr);
            rc != 0)
            return Status(EIO, name + ": rte_eth_tx_queue_setup(" + std::to_string(q) +
                                   "): " + errstr(rc));

    uint32_t mtu = 0;
    /* A bond passes the MTU on to its members, which it configures only when it starts:
     * its MTU is set after rte_eth_dev_start (rte_eth_dev_set_mtu refuses before). */
    const bool bond = is_bond_port(port);
    if (want_mtu) {
        const int rc =
            port_sets_mtu && !bond ? rte_eth_dev_set_mtu(port, static_cast<uint16_t>(want_mtu)) : 0;
        if (rc == -ENOTSUP) {
            /* Virtual ports (net_ring) have no MTU of their own: ours is the limit. */
            logger().info("{}: port cannot set its MTU; using {} as droce's own", name, want_mtu);
        } else if (rc != 0) {
            return Status(EINVAL, name + ": rte_eth_dev_set_mtu(" + std::to_string(want_mtu) +
                                      "): " + errstr(rc));
        }
        mtu = want_mtu;
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

    /* Before the start: a memif port's peer may connect, and leave, from then on. */
    if (caps.control_on_intr_thread)
        drivers::poll_gate_add_port(port);
    if (int rc = rte_eth_dev_start(port); rc != 0) {
        drivers::poll_gate_remove_port(port);
        return Status(EIO, name + ": rte_eth_dev_start: " + errstr(rc) +
                               (caps.reconnect_by_restart
                                    ? " (a memif client connects when its port starts: is its "
                                      "server running, and is its socket= path right?)"
                                    : ""));
    }
    if (bond && want_mtu && port_sets_mtu) {
        const int rc = rte_eth_dev_set_mtu(port, static_cast<uint16_t>(want_mtu));
        if (rc != 0 && rc != -ENOTSUP) {
            drivers::stop_port(port, false, caps.control_on_intr_thread);
            return Status(EINVAL, name + ": rte_eth_dev_set_mtu(" + std::to_string(want_mtu) +
                                      ") on the bond's members: " + errstr(rc));
        }
    }
    if (steer.mode == "isolating") {
        drivers::SteerSpec ss;
        ss.ipv4_be = rte_cpu_to_be_32(ifc.ip);
        ss.rx_queues = nrxq;
        ss.rss_key = conf.rx_adv_conf.rss_conf.rss_key;
        drivers::steer_install(port, ss, &steer);
        for (const std::string &r : steer.rules)
            logger().info("{}: rte_flow rule: {}", name, r);
        if (steer.mode != "isolated")
            logger().warn("{}: rte_flow steering failed ({}); droce takes the whole port", name,
                          steer.errors.empty() ? "?" : steer.errors.back());
    }
    if (ifc.mac != pm) {
        /* Our MAC is not the port's (e.g. af_packet on a tap): receive everything and
         * filter in software (rx_drop_not_our_mac). */
        const int rc = rte_eth_promiscuous_enable(port);
        if (rc != 0 && rc != -ENOTSUP)
            logger().warn("{}: promiscuous mode: {}", name, errstr(rc));
    }
    /* The reaction point's maximum: the configured line rate, else the link's. The link
     * may still be coming up: a speed not known yet is taken as 100 Gb/s
     * (line_rate_from_link). */
    rte_eth_link link{};
    rte_eth_link_get_nowait(port, &link);
    const uint64_t line =
        cfg.line_rate_bps != 0 ? cfg.line_rate_bps : line_rate_from_link(link.link_speed);
    if (const char *e = cc::validate(ccp, line)) {
        drivers::stop_port(port, false, caps.control_on_intr_thread);
        return Status(EINVAL, name + ": DCQCN parameter " + e + " (link " +
                                  std::to_string(line / 1'000'000) + " Mb/s)");
    }
    std::unique_ptr<Dev> dev;
    try {
        dev = std::make_unique<Dev>(*this, port, name, ifc, mtu, cfg.arp_timeout_ms, cfg.max_qps,
                                    nw, nrxq, ntxq);
    } catch (const std::bad_alloc &) {
        drivers::stop_port(port, false, caps.control_on_intr_thread);
        return Status(ENOMEM, name + ": no memory for " + std::to_string(cfg.max_qps) +
                                  " QPNs over " + std::to_string(nw) + " worker(s)");
    }
    if (Status s = dev->set_l3(cfg); !s) {
        drivers::stop_port(port, false, caps.control_on_intr_thread);
        return s;
    }
    /* Neighbour solicitations go to solicited-node multicast groups. */
    if (const int rc = rte_eth_allmulticast_enable(port); rc != 0 && rc != -ENOTSUP)
        logger().warn("{}: all-multicast mode: {}", name, errstr(rc));
    dev->set_pkeys(cfg.pkeys);
    dev->set_port_info(std::move(caps), std::move(steer));
    std::string pfc_status = pfc_enable(port, name, info.driver_name ? info.driver_name : "?",
                                        cfg.pfc_priority, nrxq, ntxq);
    if (cfg.pfc_tx_xoff != 0) {
        /* -ENOTSUP: the PMD cannot count its RX ring; the burst's fill stands in */
        const bool count = rte_eth_rx_queue_count(port, 0) >= 0;
        const std::string tx = "; droce sends PFC for priority " +
                               std::to_string(cfg.pfc_priority) + " at " +
                               std::to_string(cfg.pfc_tx_xoff) + " frames in an RX queue, " +
                               "resumes at " + std::to_string(cfg.pfc_tx_xon) + " (" +
                               (count ? "rte_eth_rx_queue_count"
                                      : "burst fill: the PMD has no "
                                        "rx_queue_count") +
                               ")";
        logger().info("{}: PFC{}", name, tx);
        pfc_status += tx;
        dev->set_pfc_tx(cfg.pfc_tx_xoff, cfg.pfc_tx_xon, count);
    }
    dev->set_pfc(cfg.pfc_priority, uint64_t{cfg.pfc_storm_ms} * 1'000'000, std::move(pfc_status));
    dev->set_cc(cfg.dcqcn ? &ccp : nullptr, line);
    dev->set_tx_burst(cfg.tx_burst_frames);
    dev->set_rc_pacing(cfg.rc_pacing);
    dev->set_rtr_nonblocking(cfg.rtr_nonblocking);
    logger().info("{}: DCQCN {} (line rate {} Mb/s{}, data ECN {}, TX burst {})", name,
                  cfg.dcqcn ? "on" : "off", line / 1'000'000,
                  cfg.line_rate_bps != 0 ? " as configured" : "",
                  cfg.dcqcn ? static_cast<int>(cc::ecn_bits(ccp.ecn_mode)) : 0,
                  cfg.tx_burst_frames != 0 ? std::to_string(cfg.tx_burst_frames) + " frames"
                                           : std::string("unlimited"));
    if (conf.rxmode.mq_mode == RTE_ETH_MQ_RX_RSS) {
        /* The key the port really uses (a PMD may keep its own). */
        uint8_t key[64] = {};
        rte_eth_rss_conf rc{};
        rc.rss_key = key;
        rc.rss_key_len = sizeof key;
        if (rte_eth_dev_rss_hash_conf_get(port, &rc) == 0 && rc.rss_key_len == 40 &&
            info.reta_size != 0) {
            dev->set_rss(key, info.reta_size);
            logger().info("{}: RSS over {} RX queues (redirection table {}): QPs pick their UDP "
                          "source port for the peer's owning worker",
                          name, nrxq, info.reta_size);
        } else {
            logger().warn("{}: RSS configured but its key could not be read; UDP source ports "
                          "are not steered (packets may land on other workers: rx_handoff)",
                          name);
        }
    }
    dev->set_worker_rings(!opts_.embedded);
    dev->set_zero_copy(reach, opts_.zero_copy_min_bytes ? opts_.zero_copy_min_bytes
                              : caps.zc_min_bytes       ? caps.zc_min_bytes
                                                        : kZeroCopyMinBytesDefault);
    logger().info("{}: zero-copy TX: {} (driver {}{})", name, zc_reach_str(reach), drv,
                  !opts_.zero_copy ? ", off by option"
                  : !zc_ok         ? ", no chained mbufs for this port and worker layout"
                                   : "");
    logger().info("{}: port {} driver {} MAC {} IP {}/{} MTU {} (RoCE active MTU {}), {} RX / {} "
                  "TX queue(s) for {} worker(s), {} QPNs",
                  name, port, info.driver_name ? info.driver_name : "?", net::mac_str(ifc.mac),
                  net::ipv4_str(ifc.ip), ifc.prefix_len, mtu, dev->active_mtu(), nrxq, ntxq, nw,
                  cfg.max_qps);
    if (!cfg.capture.empty())
        if (Status s = dev->capture_at_open(cfg.capture, cfg.capture_snaplen); !s)
            return s;
    dev->watch_link();
    {
        const net::Iface6 &f6 = dev->iface6();
        std::string v6;
        for (uint32_t i = 0; i < f6.naddrs; ++i)
            v6 += (i ? " " : "") + net::ipv6_str(f6.addrs[i].addr.data()) + "/" +
                  std::to_string(f6.addrs[i].prefix_len);
        logger().info("{}: IPv6 {}{}{}", name, v6,
                      cfg.vlan ? ", VLAN " + std::to_string(cfg.vlan) : std::string(),
                      f6.has_gateway() ? ", gateway " + net::ipv6_str(f6.gateway.data())
                                       : std::string());
    }
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
