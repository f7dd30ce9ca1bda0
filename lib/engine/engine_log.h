/* SPDX-License-Identifier: BSD-3-Clause */
/* droce's own spdlog logger. The engine logs through it, never through spdlog's default
 * logger, so that EngineOptions::log_level sets droce's level only: a host process that
 * uses spdlog itself (a storage target, SPDK-style) keeps its own global level, pattern
 * and default logger. The logger is not registered in spdlog's registry (no name a host
 * might use is taken); it writes to the sinks the default logger has when droce first
 * logs, so droce's lines still go where the host's go. */
#pragma once

#include <spdlog/spdlog.h>

namespace droce {

/** The logger every droce library logs through. */
spdlog::logger &logger();

} // namespace droce
