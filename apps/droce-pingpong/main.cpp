/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-pingpong: ibv_rc_pingpong on droce.
 *
 *   droce-pingpong [EAL args] -- [options] [servername]
 *
 * Same options, same TCP exchange (port 18515), same QP setup and ping-pong loop, same
 * output as rdma-core's ibv_rc_pingpong, so either side can be the real tool (e.g. on
 * Linux Soft-RoCE). --loopback is the in-process demo: two devices on a net_ring pair,
 * server and client driven by one thread, no TCP. */
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <droce/droce.h>

#include "endpoint.h"
#include "exchange.h"
#include "options.h"

using namespace droce;
using namespace droce::pingpong;
using Clock = std::chrono::steady_clock;

namespace {

/** Spin while there is work, then back off to short sleeps: on a shared 2-core machine
 * an idle busy loop starves everyone else. --busy-poll never sleeps. */
class Backoff {
  public:
    explicit Backoff(bool busy) : busy_(busy) {}
    void progress() { idle_ = 0; }
    void idle() {
        if (busy_)
            return;
        if (++idle_ < kSpins)
            return;
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }

  private:
    static constexpr uint32_t kSpins = 1000;
    bool busy_;
    uint32_t idle_ = 0;
};

struct Run {
    const Options &opt;
    Engine &engine;
    Waiter waiter;

    /** One iteration of the engine in embedded mode; returns packets handled. */
    int pump() { return engine.embedded() ? engine.poll() : 0; }

    bool timed_out() const { return waiter.expired(); }

    /** Keeps the engine alive a little after we are done so that our last ACKs leave
     * and a peer's retransmitted duplicates still get answered. */
    void linger(std::chrono::milliseconds d) {
        const auto until = Clock::now() + d;
        Backoff b(false);
        while (Clock::now() < until) {
            if (pump() > 0)
                b.progress();
            else if (engine.embedded())
                b.idle();
            else
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
};

void print_counters(const Device *dev, const char *prefix) {
    if (dev == nullptr)
        return;
    std::printf("%sdevice %s counters:\n", prefix, dev->name().c_str());
    for (const auto &[name, value] : dev->counters())
        std::printf("%s  %-40s %llu\n", prefix, name.c_str(),
                    static_cast<unsigned long long>(value));
    std::fflush(stdout);
}

void print_timeout(const Options &opt, const PingpongEndpoint &ep) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "%sTimed out after %.0f s (--timeout): %u/%u receives, %u/%u sends "
                 "completed\n",
                 ep.prefix().c_str(), opt.timeout_s, ep.rcnt(), opt.iters, ep.scnt(), opt.iters);
}

EndpointConfig endpoint_config(const Options &opt, bool client, std::string prefix) {
    EndpointConfig c;
    c.is_client = client;
    c.size = opt.size;
    c.rx_depth = opt.rx_depth;
    c.iters = opt.iters;
    c.mtu = opt.mtu;
    c.sl = opt.sl;
    c.gid_idx = opt.gid_idx;
    c.ib_port = opt.ib_port;
    c.validate = opt.validate;
    c.prefix = std::move(prefix);
    return c;
}

uint32_t random_psn() { return static_cast<uint32_t>(lrand48()) & 0xffffff; }

/** The demo: two devices on back-to-back net_ring ports, one thread drives both. */
int run_loopback(Run &run) {
    const Options &opt = run.opt;
    auto ports = run.engine.create_ring_pair();
    if (!ports) {
        std::fprintf(stderr, "Couldn't create the net_ring pair: %s\n",
                     ports.status().message().c_str());
        return 1;
    }
    const auto &[port_a, port_b] = ports.value();

    DeviceConfig ca;
    ca.port = port_a;
    ca.ipv4_cidr = "10.0.0.1/24";
    ca.mac = "02:00:0a:00:00:01";
    ca.mtu = opt.eth_mtu;
    DeviceConfig cb = ca;
    cb.port = port_b;
    cb.ipv4_cidr = "10.0.0.2/24";
    cb.mac = "02:00:0a:00:00:02";

    auto da = run.engine.open_device(ca);
    if (!da) {
        std::fprintf(stderr, "Couldn't open %s: %s\n", port_a.c_str(),
                     da.status().message().c_str());
        return 1;
    }
    auto db = run.engine.open_device(cb);
    if (!db) {
        std::fprintf(stderr, "Couldn't open %s: %s\n", port_b.c_str(),
                     db.status().message().c_str());
        return 1;
    }
    Device *dev_server = da.value();
    Device *dev_client = db.value();
    if (Status st = run.engine.start(); !st) {
        std::fprintf(stderr, "Couldn't start the engine: %s\n", st.message().c_str());
        return 1;
    }

    int rc = 1;
    {
        PingpongEndpoint server(endpoint_config(opt, false, "[server] "));
        PingpongEndpoint client(endpoint_config(opt, true, "[client] "));
        auto finish = [&](int code) {
            if (opt.counters) {
                print_counters(dev_server, "[server] ");
                print_counters(dev_client, "[client] ");
            }
            return code;
        };
        if (!server.setup(*dev_server, random_psn()) || !client.setup(*dev_client, random_psn()))
            return finish(1);
        server.print_local();
        client.print_local();
        // The exchange ibv_rc_pingpong does over TCP, in memory: the server connects
        // first (it answers only once its QP is in RTS), then the client.
        if (!server.connect(client.local())) {
            std::fprintf(stderr, "[server] Couldn't connect to remote QP\n");
            return finish(1);
        }
        server.print_remote(client.local());
        client.print_remote(server.local());
        if (!client.connect(server.local()))
            return finish(1);
        if (!server.start() || !client.start())
            return finish(1);

        Backoff backoff(opt.busy_poll);
        bool failed = false;
        while (true) {
            bool progress = run.pump() > 0;
            const auto s = server.step();
            const auto c = client.step();
            if (s == PingpongEndpoint::Step::Failed || c == PingpongEndpoint::Step::Failed) {
                failed = true;
                break;
            }
            if (s == PingpongEndpoint::Step::Done && c == PingpongEndpoint::Step::Done)
                break;
            progress = progress || s == PingpongEndpoint::Step::Progress ||
                       c == PingpongEndpoint::Step::Progress;
            if (run.timed_out()) {
                if (server.state() != PingpongEndpoint::State::Done)
                    print_timeout(opt, server);
                if (client.state() != PingpongEndpoint::State::Done)
                    print_timeout(opt, client);
                failed = true;
                break;
            }
            if (progress)
                backoff.progress();
            else
                backoff.idle();
        }
        if (failed)
            return finish(1);
        const bool ok_s = server.report();
        const bool ok_c = client.report();
        rc = finish(ok_s && ok_c ? 0 : 1);
    }
    return rc;
}

/** ibv_rc_pingpong proper: one side here, the peer elsewhere, TCP for the exchange. */
int run_tcp(Run &run) {
    const Options &opt = run.opt;
    const bool client = !opt.servername.empty();
    DeviceConfig cfg;
    cfg.port = opt.dpdk_port;
    cfg.ipv4_cidr = opt.ip;
    cfg.mac = opt.mac;
    cfg.mtu = opt.eth_mtu;
    auto d = run.engine.open_device(cfg);
    if (!d) {
        std::fprintf(stderr, "Couldn't open DPDK port '%s': %s\n",
                     opt.dpdk_port.empty() ? "(first)" : opt.dpdk_port.c_str(),
                     d.status().message().c_str());
        return 1;
    }
    Device *dev = d.value();
    if (!opt.ib_dev.empty() && opt.ib_dev != dev->name()) {
        std::fprintf(stderr, "IB device %s not found (the droce device is %s)\n",
                     opt.ib_dev.c_str(), dev->name().c_str());
        return 1;
    }
    if (Status st = run.engine.start(); !st) {
        std::fprintf(stderr, "Couldn't start the engine: %s\n", st.message().c_str());
        return 1;
    }

    PingpongEndpoint ep(endpoint_config(opt, client, ""));
    auto finish = [&](int code) {
        if (opt.counters)
            print_counters(dev, "");
        return code;
    };
    if (!ep.setup(*dev, random_psn()))
        return finish(1);
    ep.print_local();
    std::fflush(stdout);

    Dest remote;
    if (client) {
        if (!client_exchange(opt.servername, opt.tcp_port, ep.local(), remote, run.waiter))
            return finish(1);
    } else {
        if (!server_exchange(
                opt.tcp_port, ep.local(), remote, [&](const Dest &r) { return ep.connect(r); },
                run.waiter))
            return finish(1);
    }
    ep.print_remote(remote);
    std::fflush(stdout);
    if (client && !ep.connect(remote))
        return finish(1);
    if (!ep.start())
        return finish(1);

    Backoff backoff(opt.busy_poll);
    while (true) {
        bool progress = run.pump() > 0;
        const auto s = ep.step();
        if (s == PingpongEndpoint::Step::Failed)
            return finish(1);
        if (s == PingpongEndpoint::Step::Done)
            break;
        if (run.timed_out()) {
            print_timeout(opt, ep);
            return finish(1);
        }
        if (progress || s == PingpongEndpoint::Step::Progress)
            backoff.progress();
        else
            backoff.idle();
    }
    run.linger(std::chrono::milliseconds(100));
    return finish(ep.report() ? 0 : 1);
}

} // namespace

int main(int argc, char **argv) {
    Options opt;
    switch (parse_command_line(argc, argv, opt)) {
    case ParseResult::ExitOk:
        return 0;
    case ParseResult::ExitError:
        return 1;
    case ParseResult::Run:
        break;
    }
    srand48(static_cast<long>(getpid()) * static_cast<long>(time(nullptr)));

    std::vector<std::string> eal_strings;
    eal_strings.emplace_back(argv[0]);
    for (const auto &a : opt.eal_args)
        eal_strings.push_back(a);
    std::vector<char *> eal_argv;
    for (auto &s : eal_strings)
        eal_argv.push_back(s.data());
    eal_argv.push_back(nullptr);

    EngineOptions eo;
    eo.embedded = opt.embedded;
    eo.idle_polls_before_sleep = opt.busy_poll ? 0 : 1000;
    eo.idle_sleep_us = 20;
    eo.log_level = opt.log_level;
    int consumed = 0;
    auto engine =
        Engine::create(static_cast<int>(eal_argv.size()) - 1, eal_argv.data(), &consumed, eo);
    if (!engine) {
        std::fprintf(stderr, "Couldn't start droce (EAL args:");
        for (const auto &a : opt.eal_args)
            std::fprintf(stderr, " %s", a.c_str());
        std::fprintf(stderr, "): %s\n", engine.status().message().c_str());
        return 1;
    }

    Run run{opt, *engine.value(), {}};
    if (opt.timeout_s > 0) {
        run.waiter.has_deadline = true;
        run.waiter.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(opt.timeout_s));
    }
    if (engine.value()->embedded())
        run.waiter.pump = [&run] { run.pump(); };

    const int rc = opt.loopback ? run_loopback(run) : run_tcp(run);
    std::fflush(stdout);
    engine.value()->stop();
    return rc;
}
