/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Engine bring-up as the droce tools do it: Engine::create from the EAL arguments and the
 * device options, the run's deadline (--timeout) and pump, the device on --dpdk-port or
 * the two devices of --loopback's net_ring pair, Engine::start, the idle backoff of the
 * tools' loops, random PSNs and the --counters dump. Errors are printed to stderr in the
 * words both tools use. */
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <droce/droce.h>

#include "device_options.h"
#include "eal_args.h"
#include "tcp_channel.h"

namespace droce::app {

/** Spin while there is work, then back off to 20 us sleeps after `spins` idle rounds: on
 * a shared 2-core machine an idle busy loop starves everyone else. --busy-poll (busy)
 * never sleeps. */
class Backoff {
  public:
    Backoff(bool busy, uint32_t spins) : busy_(busy), spins_(spins) {}
    void progress() { idle_ = 0; }
    void idle();

  private:
    bool busy_;
    uint32_t spins_;
    uint32_t idle_ = 0;
};

/** Engine::create with the EAL argv (from o.eal_args; keep it alive as long as the
 * engine: DPDK may keep pointers into it) and o's engine mode, idle policy and log level,
 * with `workers` worker lcores (EngineOptions::workers; 0 = one per EAL worker lcore).
 * Prints "Couldn't start droce (EAL args: ...): why" and returns nullptr on failure. */
std::unique_ptr<Engine> create_engine(EalArgv &eal, const DeviceOptions &o, uint32_t workers = 1);

/** -e of the tools: a completion channel whose descriptor is non-blocking (the loops wait
 * with poll() and then take every event that fired). "Couldn't ...: why" on failure. */
Result<std::unique_ptr<CompletionChannel>> open_event_channel(Device &dev);

/** The engine of a run and the run's deadline. */
struct EngineRun {
    Engine &engine;
    Waiter waiter;

    /** One iteration of the engine in embedded mode; returns packets handled. */
    int pump() { return engine.embedded() ? engine.poll() : 0; }
    bool timed_out() const { return waiter.expired(); }
};

/** Sets the run's deadline (timeout_s from now; 0 = none) and, in embedded mode, makes
 * the waiter pump the engine with pump_slice_ms between polls. run must not move. */
void arm_waiter(EngineRun &run, double timeout_s, int pump_slice_ms);

/** Opens the device on --dpdk-port with --ip, --mac and --eth-mtu. Prints "Couldn't open
 * DPDK port 'P': why" and returns nullptr on failure. */
Device *open_port_device(Engine &engine, const DeviceOptions &o);

/** Engine::start; prints "Couldn't start the engine: why" on failure. */
bool start_engine(Engine &engine);

/** --loopback's two devices: 10.0.0.1/24 (the server) and 10.0.0.2/24 (the client) on
 * the two ports of a net_ring pair. */
struct LoopbackDevices {
    Device *server = nullptr;
    Device *client = nullptr;
};

/** Creates the net_ring pair with `queues` RX/TX queue pairs per port (one per worker;
 * printing "Couldn't create the net_ring pair: why" on failure) and opens the server's then the
 * client's device with o's Ethernet MTU and congestion options; when one does not open, calls
 * open_failed(port, status) (the tools word it differently) and returns nothing. */
std::optional<LoopbackDevices>
open_loopback_devices(Engine &engine, const DeviceOptions &o,
                      const std::function<void(const std::string &, const Status &)> &open_failed,
                      uint16_t queues = 1);

/** Seeds random_psn() from the pid and the time. */
void seed_random_psn();
/** A random 24-bit PSN (lrand48, as the rdma-core and perftest tools). */
uint32_t random_psn();

/** --counters: "PREFIXdevice NAME counters:" then one "PREFIX  NAME VALUE" line each. */
void print_device_counters(const Device *dev, const char *prefix);

} // namespace droce::app
