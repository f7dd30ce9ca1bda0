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
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <droce/droce.h>

#include "app_engine.h"
#include "eal_args.h"
#include "endpoint.h"
#include "exchange.h"
#include "options.h"

using namespace droce;
using namespace droce::pingpong;
using Clock = std::chrono::steady_clock;

namespace {

/** Idle rounds before the loops back off to sleeping (see app::Backoff). */
constexpr uint32_t kBackoffSpins = 1000;

struct Run : app::EngineRun {
    const Options &opt;

    /** Keeps the engine alive a little after we are done so that our last ACKs leave
     * and a peer's retransmitted duplicates still get answered. */
    void linger(std::chrono::milliseconds d) {
        const auto until = Clock::now() + d;
        app::Backoff b(false, kBackoffSpins);
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
    c.ud = opt.ud;
    c.events = opt.events;
    c.prefix = std::move(prefix);
    return c;
}

/* -e: the loop found nothing to do, so it sleeps until a CQ's event fires (or 100 ms
 * pass, for --timeout), then takes the events and arms the CQs again. */
bool wait_for_events(std::initializer_list<PingpongEndpoint *> eps) {
    pollfd fds[2];
    nfds_t n = 0;
    for (PingpongEndpoint *ep : eps)
        if (ep->state() == PingpongEndpoint::State::Running && n < 2)
            fds[n++] = pollfd{ep->event_fd(), POLLIN, 0};
    if (n > 0 && poll(fds, n, 100) < 0 && errno != EINTR) {
        std::perror("poll");
        return false;
    }
    for (PingpongEndpoint *ep : eps)
        if (ep->state() == PingpongEndpoint::State::Running && !ep->rearm())
            return false;
    return true;
}

/** The demo: two devices on back-to-back net_ring ports, one thread drives both. */
int run_loopback(Run &run) {
    const Options &opt = run.opt;
    const auto devs =
        app::open_loopback_devices(run.engine, opt, [](const std::string &port, const Status &st) {
            std::fprintf(stderr, "Couldn't open %s: %s\n", port.c_str(), st.message().c_str());
        });
    if (!devs)
        return 1;
    Device *dev_server = devs->server;
    Device *dev_client = devs->client;
    if (!app::start_engine(run.engine))
        return 1;

    int rc = 1;
    {
        PingpongEndpoint server(endpoint_config(opt, false, "[server] "));
        PingpongEndpoint client(endpoint_config(opt, true, "[client] "));
        auto finish = [&](int code) {
            if (opt.counters) {
                app::print_device_counters(dev_server, "[server] ");
                app::print_device_counters(dev_client, "[client] ");
            }
            return code;
        };
        if (!server.setup(*dev_server, app::random_psn()) ||
            !client.setup(*dev_client, app::random_psn()))
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

        app::Backoff backoff(opt.busy_poll, kBackoffSpins);
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
            if (progress) {
                backoff.progress();
            } else if (opt.events) {
                if (!wait_for_events({&server, &client})) {
                    failed = true;
                    break;
                }
            } else {
                backoff.idle();
            }
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
    Device *dev = app::open_port_device(run.engine, opt);
    if (dev == nullptr)
        return 1;
    if (!opt.ib_dev.empty() && opt.ib_dev != dev->name()) {
        std::fprintf(stderr, "IB device %s not found (the droce device is %s)\n",
                     opt.ib_dev.c_str(), dev->name().c_str());
        return 1;
    }
    if (!app::start_engine(run.engine))
        return 1;

    PingpongEndpoint ep(endpoint_config(opt, client, ""));
    auto finish = [&](int code) {
        if (opt.counters)
            app::print_device_counters(dev, "");
        return code;
    };
    if (!ep.setup(*dev, app::random_psn()))
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

    app::Backoff backoff(opt.busy_poll, kBackoffSpins);
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
        else if (!opt.events)
            backoff.idle();
        else if (!wait_for_events({&ep}))
            return finish(1);
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
    app::seed_random_psn();

    app::EalArgv eal(argv[0], opt.eal_args);
    std::unique_ptr<Engine> engine = app::create_engine(eal, opt);
    if (!engine)
        return 1;

    Run run{{*engine, {}}, opt};
    app::arm_waiter(run, opt.timeout_s, 1);

    const int rc = opt.loopback ? run_loopback(run) : run_tcp(run);
    std::fflush(stdout);
    engine->stop();
    return rc;
}
