/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The RDMA-CM part the CM tools share (droce-rping, droce-cmatose, droce-nvmf, droce-perf
 * -R): opening a device's CM with one error line, and printing its counters. */
#pragma once

#include <memory>

#include <droce/cm_device.h>
#include <droce/droce.h>

namespace droce::app {

/** Binds the CM to dev's QP1; on failure prints "Couldn't open the CM of DEV: why" to
 * stderr and returns nullptr. */
std::unique_ptr<CmDevice> open_cm(Engine &engine, Device &dev, const CmDeviceOptions &opt = {});

/** Prints the CM's non-zero counters, one "  name value" line each (--counters). */
void print_cm_counters(const CmDevice &cm);

} // namespace droce::app
