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
#include "nvmf_options.h"
#include "nvmf_rdma.h"

using namespace droce;

namespace {

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
    nvmf::Options o;
    switch (nvmf::parse_command_line(argc, argv, o)) {
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
