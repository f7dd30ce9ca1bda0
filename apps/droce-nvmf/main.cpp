/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-nvmf: an NVMe-over-Fabrics RDMA target on droce. One subsystem with one or more
 * namespaces (RAM disks or O_DIRECT files/block devices; --namespace or a --config file's
 * [nvmf] section, see config/nvmf.conf) plus the discovery subsystem, on one
 * port (4420 unless -p). The Linux initiator finds and mounts it with
 *   nvme discover -t rdma -a IP -s 4420; nvme connect -t rdma -a IP -s 4420 -n NQN
 * One thread runs the engine (embedded mode), the CM, the RDMA glue and the target core in
 * one non-blocking loop. SIGINT/SIGTERM: disconnect every host, print the counters with
 * --counters, exit 0. */
#include <arpa/inet.h>
#include <getopt.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <droce/cm_device.h>
#include <droce/droce.h>

#include "app_cm.h"
#include "app_engine.h"
#include "cli_numbers.h"
#include "device_options.h"
#include "eal_args.h"
#include "nvmf.h"
#include "nvmf_bdev.h"
#include "nvmf_config.h"
#include "nvmf_rdma.h"

using namespace droce;

namespace {

enum ToolOption : int {
    kOptRam = app::kFirstToolOption,
    kOptFile,
    kOptSize,
    kOptNqn,
    kOptSerial,
    kOptHost,
    kOptBlockSize,
    kOptIoQueues,
    kOptMdts,
    kOptInCapsule,
    kOptFileDepth,
    kOptNamespace,
};

struct Options : app::DeviceOptions {
    Options() : app::DeviceOptions(0) {}
    uint16_t port = 4420;
    uint64_t ram = 0;
    std::string file;
    uint64_t size = 0; /* --file: 0 = the file's size */
    std::string nqn = "nqn.2026-11.io.droce:nvmf0";
    std::string serial = "droce0000000001";
    std::vector<std::string> hosts;
    uint32_t block_size = 512;
    uint16_t io_queues = 8;
    uint32_t mdts = 128 * 1024;
    uint32_t in_capsule = 8192;
    uint32_t file_depth = 256;
    std::vector<nvmf::NamespaceSpec> namespaces; /* --namespace, in order */
    bool verbose = false;
};

const app::DeviceOptionRules kRules{};

void usage(const char *argv0, FILE *f) {
    std::fprintf(
        f,
        "Usage: %s [EAL args --] (--ram SIZE | --file PATH [--size SIZE] | --namespace SPEC...)\n"
        "       [options]   (namespaces: --ram, then --file, then each --namespace: NSID 1, 2..)\n"
        "  --ram SIZE          RAM disk of SIZE bytes (K/M/G suffixes)\n"
        "  --file PATH         file or block device, O_DIRECT on a worker thread\n"
        "  --size SIZE         --file: its size (a shorter regular file is extended)\n"
        "  --namespace SPEC    one more namespace: ram:SIZE or file:PATH[,size=SIZE]\n"
        "                      (repeatable; any of these replace the --config file's)\n"
        "  -p, --port N        RDMA-CM port (default 4420)\n"
        "  --nqn NQN           subsystem NQN (default nqn.2026-11.io.droce:nvmf0)\n"
        "  --serial S          serial number\n"
        "  --host NQN          allow this host NQN (repeatable; none: any host)\n"
        "  --block-size N      512 or 4096 (default 512)\n"
        "  --io-queues N       I/O queues per controller (default 8)\n"
        "  --mdts BYTES        largest transfer, power of two (default 131072)\n"
        "  --in-capsule BYTES  in-capsule data per command (default 8192)\n"
        "  -v                  log connections\n"
        "droce device options: --dpdk-port NAME|ID --ip A.B.C.D/P [--mac M] [--eth-mtu N]\n"
        "  [--embedded|--worker] [--timeout S] [--counters] [--log-level L] [--config F]\n"
        "--config F: droce.conf's sections plus [nvmf] (nqn, serial, host, namespace, port)\n",
        argv0);
}

/* 0: run, 1: exit with error, 2: exit ok. */
int parse(int argc, char **argv, Options &o) {
    const char *argv0 = argv[0];
    app::SplitArgs split = app::split_at_dashdash(argc, argv, 1);
    o.eal_args = std::move(split.eal);
    std::vector<char *> &ours = split.ours;
    const std::vector<struct option> longs = app::with_device_options({
        {"help", no_argument, nullptr, 'h'},
        {"port", required_argument, nullptr, 'p'},
        {"ram", required_argument, nullptr, kOptRam},
        {"file", required_argument, nullptr, kOptFile},
        {"size", required_argument, nullptr, kOptSize},
        {"nqn", required_argument, nullptr, kOptNqn},
        {"serial", required_argument, nullptr, kOptSerial},
        {"host", required_argument, nullptr, kOptHost},
        {"block-size", required_argument, nullptr, kOptBlockSize},
        {"io-queues", required_argument, nullptr, kOptIoQueues},
        {"mdts", required_argument, nullptr, kOptMdts},
        {"in-capsule", required_argument, nullptr, kOptInCapsule},
        {"namespace", required_argument, nullptr, kOptNamespace},
    });
    /* --config first (its [nvmf] section too): the command line then overrides it. */
    nvmf::NvmfSettings file;
    if (std::string err = app::load_config_option(split.ours_argc(), ours.data(), o, "droce-nvmf",
                                                  {}, {nvmf::nvmf_config_section(file)});
        !err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return 1;
    }
    o.nqn = file.nqn;
    o.serial = file.serial;
    o.port = file.port;
    bool hosts_given = false;
    opterr = 0;
    optind = 1;
    for (;;) {
        const int c = getopt_long(split.ours_argc(), ours.data(), ":p:vh", longs.data(), nullptr);
        if (c == -1)
            break;
        uint64_t u = 0;
        auto bad = [&](const char *what) {
            std::fprintf(stderr, "%s: invalid %s '%s'\n", argv0, what, optarg);
            return 1;
        };
        switch (c) {
        case 'p':
            if (!app::parse_u64(optarg, 65535, u) || u == 0)
                return bad("port");
            o.port = static_cast<uint16_t>(u);
            break;
        case kOptRam:
            if (!nvmf::parse_size(optarg, o.ram) || o.ram == 0)
                return bad("--ram size");
            break;
        case kOptFile:
            o.file = optarg;
            break;
        case kOptSize:
            if (!nvmf::parse_size(optarg, o.size))
                return bad("--size");
            break;
        case kOptNqn:
            o.nqn = optarg;
            break;
        case kOptSerial:
            o.serial = optarg;
            break;
        case kOptHost:
            hosts_given = true;
            o.hosts.emplace_back(optarg);
            break;
        case kOptNamespace: {
            nvmf::NamespaceSpec ns;
            if (std::string why = nvmf::parse_namespace_spec(optarg, ns); !why.empty()) {
                std::fprintf(stderr, "%s: invalid --namespace '%s': %s\n", argv0, optarg,
                             why.c_str());
                return 1;
            }
            o.namespaces.push_back(ns);
            break;
        }
        case kOptBlockSize:
            if (!app::parse_u64(optarg, 4096, u) || (u != 512 && u != 4096))
                return bad("--block-size (512 or 4096)");
            o.block_size = static_cast<uint32_t>(u);
            break;
        case kOptIoQueues:
            if (!app::parse_u64(optarg, 64, u) || u == 0)
                return bad("--io-queues (1..64)");
            o.io_queues = static_cast<uint16_t>(u);
            break;
        case kOptMdts:
            if (!app::parse_u64(optarg, 1u << 20, u) || u < 4096 || (u & (u - 1)))
                return bad("--mdts (power of two, 4096..1M)");
            o.mdts = static_cast<uint32_t>(u);
            break;
        case kOptInCapsule:
            if (!app::parse_u64(optarg, 65536, u) || u % 16)
                return bad("--in-capsule (multiple of 16, <= 65536)");
            o.in_capsule = static_cast<uint32_t>(u);
            break;
        case 'v':
            o.verbose = true;
            break;
        case 'h':
            usage(argv0, stdout);
            return 2;
        default:
            if (std::string err =
                    app::take_device_option(c, optarg, ours.data(), longs.data(), o, kRules);
                !err.empty()) {
                std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
                usage(argv0, stderr);
                return 1;
            }
        }
    }
    if (!hosts_given)
        o.hosts = file.hosts;
    /* The command line's namespaces (--ram, --file, --namespace) replace the file's. */
    std::vector<nvmf::NamespaceSpec> cl;
    if (o.ram)
        cl.push_back({true, o.ram, ""});
    if (!o.file.empty())
        cl.push_back({false, o.size, o.file});
    cl.insert(cl.end(), o.namespaces.begin(), o.namespaces.end());
    o.namespaces = cl.empty() ? file.namespaces : cl;
    if (o.namespaces.empty()) {
        std::fprintf(stderr,
                     "%s: no namespace: give --ram SIZE, --file PATH, --namespace SPEC "
                     "or [nvmf] namespace in --config\n",
                     argv0);
        return 1;
    }
    if (o.namespaces.size() > nvmf::kMaxNamespaces) {
        std::fprintf(stderr, "%s: at most %zu namespaces\n", argv0, nvmf::kMaxNamespaces);
        return 1;
    }
    if (o.loopback) {
        std::fprintf(stderr, "%s: --loopback is not supported\n", argv0);
        return 1;
    }
    if (std::string err = app::finish_device_options(o, false, kRules); !err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return 1;
    }
    return 0;
}

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop.store(true); }

void print_counters(const nvmf::Counters &c, const nvmf::RdmaCounters &r) {
    const std::pair<const char *, uint64_t> v[] = {
        {"capsules", c.capsules},
        {"responses", c.responses},
        {"capsule_too_short", c.capsule_too_short},
        {"capsule_no_slot", c.capsule_no_slot},
        {"capsule_dead_queue", c.capsule_dead_queue},
        {"st_invalid_opcode", c.st_invalid_opcode},
        {"st_invalid_field", c.st_invalid_field},
        {"st_invalid_ns", c.st_invalid_ns},
        {"st_cmd_seq", c.st_cmd_seq},
        {"st_sgl_len", c.st_sgl_len},
        {"st_sgl_type", c.st_sgl_type},
        {"st_sgl_offset", c.st_sgl_offset},
        {"st_lba_range", c.st_lba_range},
        {"st_connect_invalid", c.st_connect_invalid},
        {"st_connect_host", c.st_connect_host},
        {"st_internal", c.st_internal},
        {"st_xfer", c.st_xfer},
        {"st_other", c.st_other},
        {"connect_unknown_subsys", c.connect_unknown_subsys},
        {"connect_in_flight", c.connect_in_flight},
        {"cm_accepts", c.cm_accepts},
        {"cm_rejects", c.cm_rejects},
        {"read_failures", c.read_failures},
        {"post_failures", c.post_failures},
        {"bdev_busy", c.bdev_busy},
        {"bdev_errors", c.bdev_errors},
        {"kato_expired", c.kato_expired},
        {"rdma_connect_requests", r.connect_requests},
        {"rdma_accepted", r.accepted},
        {"rdma_rejected", r.rejected},
        {"rdma_established", r.established},
        {"rdma_disconnected", r.disconnected},
        {"rdma_rejected_by_peer", r.rejected_by_peer},
        {"rdma_queues_freed", r.queues_freed},
        {"rdma_setup_failures", r.setup_failures},
        {"rdma_accept_failures", r.accept_failures},
        {"rdma_wc_errors", r.wc_errors},
        {"rdma_read_errors", r.read_errors},
        {"rdma_wc_flushed", r.wc_flushed},
        {"rdma_wc_unexpected", r.wc_unexpected},
        {"rdma_recv_repost_failures", r.recv_repost_failures},
        {"rdma_capsules_dropped", r.capsules_dropped},
        {"rdma_post_failures", r.post_failures},
        {"rdma_disconnects_asked", r.disconnects_asked},
    };
    std::printf("nvmf counters:\n");
    for (const auto &[n, x] : v)
        std::printf("  %s %" PRIu64 "\n", n, x);
}

} // namespace

int main(int argc, char **argv) {
    Options o;
    switch (parse(argc, argv, o)) {
    case 1:
        return 1;
    case 2:
        return 0;
    default:
        break;
    }
    std::vector<std::unique_ptr<nvmf::Bdev>> bdevs;
    std::string desc; /* "RAM", "PATH", ... for the listening line */
    for (const nvmf::NamespaceSpec &ns : o.namespaces) {
        if (ns.ram) {
            if (ns.size % o.block_size) {
                std::fprintf(stderr, "a RAM namespace must be a multiple of the block size\n");
                return 1;
            }
            bdevs.push_back(nvmf::make_ram_bdev(ns.size, o.block_size));
        } else {
            std::string err;
            bdevs.push_back(
                nvmf::make_file_bdev(ns.path, ns.size, o.block_size, o.file_depth, err));
            if (!bdevs.back()) {
                std::fprintf(stderr, "%s: %s\n", ns.path.c_str(), err.c_str());
                return 1;
            }
        }
        desc += (desc.empty() ? "" : ", ") + std::to_string(bdevs.back()->size_bytes()) +
                " bytes (" + (ns.ram ? std::string("RAM") : ns.path) + ")";
    }
    nvmf::TargetConfig tc;
    tc.traddr = o.ip.substr(0, o.ip.find('/'));
    tc.trsvcid = std::to_string(o.port);
    tc.max_io_queues = o.io_queues;
    tc.max_io_bytes = o.mdts;
    tc.in_capsule_bytes = o.in_capsule;
    nvmf::SubsystemConfig sc;
    sc.nqn = o.nqn;
    sc.serial = o.serial;
    sc.allowed_hosts = o.hosts;
    sc.allow_any_host = o.hosts.empty();
    for (size_t i = 0; i < bdevs.size(); ++i) {
        nvmf::NamespaceConfig nc;
        nc.nsid = static_cast<uint32_t>(i + 1);
        nc.bdev = bdevs[i].get();
        sc.namespaces.push_back(nc);
    }
    tc.subsystems.push_back(sc);
    std::string err;
    std::unique_ptr<nvmf::Target> target = nvmf::Target::create(tc, err);
    if (!target) {
        std::fprintf(stderr, "target: %s\n", err.c_str());
        return 1;
    }

    app::seed_random_psn();
    app::EalArgv eal(argv[0], o.eal_args);
    std::unique_ptr<Engine> engine = app::create_engine(eal, o);
    if (!engine)
        return 1;
    app::EngineRun run{*engine, {}};
    app::arm_waiter(run, o.timeout_s, 1);
    /* The CM's accept moves QPs to RTR inside the poll loop: never wait for ARP there. */
    o.rtr_nonblocking = true;
    Device *dev = app::open_port_device(*engine, o);
    if (dev == nullptr || !app::start_engine(*engine))
        return 1;
    CmDeviceOptions cmo;
    cmo.access_flags = kAccessLocalWrite; /* QP1's hook: no remote rights either */
    auto cm = app::open_cm(*engine, *dev, o, cmo);
    if (!cm)
        return 1;
    int rc = 0;
    {
        nvmf::RdmaOptions ro;
        ro.port = o.port;
        nvmf::RdmaTransport rt(*dev, *cm, *target, ro);
        if (!rt.start(err)) {
            std::fprintf(stderr, "%s\n", err.c_str());
            return 1;
        }
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        std::printf("listening on %s port %u, subsystem %s, %zu namespace%s: %s\n",
                    tc.traddr.c_str(), o.port, o.nqn.c_str(), bdevs.size(),
                    bdevs.size() == 1 ? "" : "s", desc.c_str());
        std::fflush(stdout);
        app::Backoff backoff(o.busy_poll, 2000);
        bool stopping = false;
        auto stop_deadline = std::chrono::steady_clock::now();
        size_t last_conns = 0;
        for (;;) {
            bool busy = run.pump() > 0;
            busy |= rt.poll() > 0;
            if (o.verbose && rt.connections() != last_conns) {
                last_conns = rt.connections();
                std::printf("connections: %zu\n", last_conns);
                std::fflush(stdout);
            }
            if (!stopping && (g_stop.load() || run.timed_out())) {
                if (run.timed_out()) {
                    std::fprintf(stderr, "timed out\n");
                    rc = 1;
                }
                stopping = true;
                rt.disconnect_all();
                stop_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            }
            if (stopping &&
                (rt.connections() == 0 || std::chrono::steady_clock::now() >= stop_deadline))
                break;
            busy ? backoff.progress() : backoff.idle();
        }
        if (rt.connections() != 0) {
            std::fprintf(stderr, "%zu connections did not close\n", rt.connections());
            rc = 1;
        }
        if (o.counters)
            print_counters(target->counters(), rt.counters());
    }
    if (o.counters) {
        app::print_cm_counters(*cm);
        app::print_device_counters(dev, "");
    }
    std::fflush(stdout);
    cm.reset();
    engine->stop();
    return rc;
}
