/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The droce::DeviceConfig the device options (command line and --config) describe. Part of
 * the engine-free command-line library (droce_app_cli): the tools and the verbs library
 * (lib/verbs, which has no command line, only a configuration file) open their device
 * from the same mapping. */
#pragma once

#include <droce/droce.h>

#include "device_options.h"

namespace droce::app {

/** --dcqcn, --ecn, [dcqcn], --pfc and [pfc], --line-rate, --tx-burst, the RC pacing. */
void apply_congestion_options(const DeviceOptions &o, DeviceConfig &cfg);

/** --vlan, --gid-type, --force-dscp, --force-ttl. */
void apply_l3_options(const DeviceOptions &o, DeviceConfig &cfg);

/** The device on --dpdk-port with --ip, --ip6, --mac, --eth-mtu, the gateways, the capture
 * and everything apply_congestion_options and apply_l3_options set. */
DeviceConfig port_device_config(const DeviceOptions &o);

} // namespace droce::app
