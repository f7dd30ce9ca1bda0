/* SPDX-License-Identifier: BSD-3-Clause */
#include "engine_log.h"

#include <memory>

namespace droce {

spdlog::logger &logger() {
    /* Made once, on first use (thread-safe static). spdlog's own default level (info)
     * until an engine sets EngineOptions::log_level. */
    static const std::shared_ptr<spdlog::logger> l = [] {
        const auto &sinks = spdlog::default_logger_raw()->sinks();
        auto lg = std::make_shared<spdlog::logger>("droce", sinks.begin(), sinks.end());
        lg->set_level(spdlog::level::info);
        return lg;
    }();
    return *l;
}

} // namespace droce
