/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's rte_telemetry commands and the registry of live Runtimes
 * (engine_telemetry.cpp). */
#pragma once

#include <mutex>
#include <vector>

namespace droce::engine {

class Runtime;

/** rte_telemetry commands (/droce/devices, /droce/info, /droce/counters, /droce/qps):
 * registered once per process, answered for every live Runtime's devices. */
void telemetry_attach(Runtime *rt);
void telemetry_detach(Runtime *rt);
/** Every live Runtime of the process (tests reach internals through it). */
std::vector<Runtime *> debug_runtimes();
/** Serialises Runtime::devices() changes against the telemetry thread reading them. */
std::mutex &telemetry_mutex();

} // namespace droce::engine
