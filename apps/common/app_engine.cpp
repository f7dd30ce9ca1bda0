/* SPDX-License-Identifier: BSD-3-Clause */
#include "app_engine.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <thread>

#include "port_config.h"
#include "qp_resources.h"

namespace droce::app {

void Backoff::idle() {
    if (busy_ || ++idle_ < spins_)
        return;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
}

std::unique_ptr<Engine> create_engine(EalArgv &eal, const DeviceOptions &o, uint32_t workers) {
    set_qp_defaults(o.qp); /* before any QP: --config's [qp] */
    EngineOptions eo;
    eo.embedded = o.embedded;
    eo.workers = workers;
    eo.idle_polls_before_sleep = o.busy_poll ? 0 : 1000;
    eo.idle_sleep_us = 20;
    eo.log_level = o.log_level;
    int consumed = 0;
    auto engine = Engine::create(eal.argc(), eal.argv(), &consumed, eo);
    if (!engine) {
        std::fprintf(stderr, "Couldn't start droce (EAL args:");
        for (const auto &a : o.eal_args)
            std::fprintf(stderr, " %s", a.c_str());
        std::fprintf(stderr, "): %s\n", engine.status().message().c_str());
        return nullptr;
    }
    return std::move(engine.value());
}

void arm_waiter(EngineRun &run, double timeout_s, int pump_slice_ms) {
    using Clock = std::chrono::steady_clock;
    if (timeout_s > 0) {
        run.waiter.has_deadline = true;
        run.waiter.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(timeout_s));
    }
    if (run.engine.embedded())
        run.waiter.pump = [&run] { run.pump(); };
    run.waiter.pump_slice_ms = pump_slice_ms;
}

Device *open_port_device(Engine &engine, const DeviceOptions &o) {
    const DeviceConfig cfg = port_device_config(o);
    auto d = engine.open_device(cfg);
    if (!d) {
        std::fprintf(stderr, "Couldn't open DPDK port '%s': %s\n",
                     o.dpdk_port.empty() ? "(first)" : o.dpdk_port.c_str(),
                     d.status().message().c_str());
        return nullptr;
    }
    return d.value();
}

bool start_engine(Engine &engine) {
    if (Status st = engine.start(); !st) {
        std::fprintf(stderr, "Couldn't start the engine: %s\n", st.message().c_str());
        return false;
    }
    return true;
}

std::optional<LoopbackDevices>
open_loopback_devices(Engine &engine, const DeviceOptions &o,
                      const std::function<void(const std::string &, const Status &)> &open_failed,
                      uint16_t queues) {
    // One queue asks for the plain pair, so single-worker runs never depend on the
    // multi-queue variant.
    auto ports = queues > 1 ? engine.create_ring_pair(queues) : engine.create_ring_pair();
    if (!ports) {
        std::fprintf(stderr, "Couldn't create the net_ring pair: %s\n",
                     ports.status().message().c_str());
        return std::nullopt;
    }
    const auto &[port_a, port_b] = ports.value();

    DeviceConfig ca;
    ca.port = port_a;
    ca.ipv4_cidr = "10.0.0.1/24";
    ca.ipv6_cidrs = {"fd00::1/64"}; /* GID 2, for -g 2 / -x 2 */
    ca.mac = "02:00:0a:00:00:01";
    ca.mtu = o.eth_mtu;
    apply_congestion_options(o, ca);
    apply_l3_options(o, ca);
    ca.queue_stride = o.queue_stride;
    DeviceConfig cb = ca;
    cb.port = port_b;
    cb.ipv4_cidr = "10.0.0.2/24";
    cb.ipv6_cidrs = {"fd00::2/64"};
    cb.mac = "02:00:0a:00:00:02";
    /* One file: A's two directions are all the traffic there is. */
    ca.capture = o.capture;
    ca.capture_snaplen = o.capture_snaplen;

    auto da = engine.open_device(ca);
    if (!da) {
        open_failed(port_a, da.status());
        return std::nullopt;
    }
    auto db = engine.open_device(cb);
    if (!db) {
        open_failed(port_b, db.status());
        return std::nullopt;
    }
    return LoopbackDevices{da.value(), db.value()};
}

void seed_random_psn() { srand48(static_cast<long>(getpid()) * static_cast<long>(time(nullptr))); }

uint32_t random_psn() { return static_cast<uint32_t>(lrand48()) & 0xffffff; }

void print_device_counters(const Device *dev, const char *prefix) {
    if (dev == nullptr)
        return;
    std::printf("%sdevice %s counters:\n", prefix, dev->name().c_str());
    for (const auto &[name, value] : dev->counters())
        std::printf("%s  %-40s %llu\n", prefix, name.c_str(),
                    static_cast<unsigned long long>(value));
    std::fflush(stdout);
}

Result<std::unique_ptr<CompletionChannel>> open_event_channel(Device &dev) {
    auto ch = dev.create_comp_channel();
    if (!ch)
        return Status(ch.status().code(),
                      "Couldn't create completion channel: " + ch.status().message());
    const int fd = ch.value()->fd();
    const int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return Status(errno, std::string("Couldn't make the completion channel non-blocking: ") +
                                 std::strerror(errno));
    return std::move(ch.value());
}

} // namespace droce::app
