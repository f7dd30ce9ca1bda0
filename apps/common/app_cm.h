/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The RDMA-CM part the CM tools share (droce-rping, droce-cmatose, droce-nvmf, droce-perf
 * -R): opening a device's CM with one error line, and printing its counters. */
#pragma once

#include <cstdint>
#include <memory>

#include <droce/cm_device.h>
#include <droce/droce.h>

#include "app_engine.h"

namespace droce::app {

/** Binds the CM to dev's QP1; on failure prints "Couldn't open the CM of DEV: why" to
 * stderr and returns nullptr. */
std::unique_ptr<CmDevice> open_cm(Engine &engine, Device &dev, const CmDeviceOptions &opt = {});
/** The same with the command line's and configuration file's CM settings
 * (--cm-stateless-per-sec, --cm-stateless-burst, [cm]) put into opt.channel. */
std::unique_ptr<CmDevice> open_cm(Engine &engine, Device &dev, const DeviceOptions &o,
                                  CmDeviceOptions opt = {});

/** How long a CM tool keeps running after its last event (librdmacm's tools exit while
 * the kernel's CM lives on; here the CM dies with the process). */
inline constexpr uint64_t kCmLingerNs = 200'000'000;

/** Keeps the engine (embedded mode) and the CM running for ns: a DREP or RTU only queued
 * when the tool decided to exit leaves, and a resent DREQ is still answered. Events that
 * arrive meanwhile stay queued, unread. */
void cm_linger(EngineRun &run, CmDevice &cm, uint64_t ns = kCmLingerNs);

/** Prints the CM's non-zero counters, one "  name value" line each (--counters). */
void print_cm_counters(const CmDevice &cm);

} // namespace droce::app
