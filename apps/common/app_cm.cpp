/* SPDX-License-Identifier: BSD-3-Clause */
#include "app_cm.h"

#include <cinttypes>
#include <cstdio>
#include <thread>

namespace droce::app {

std::unique_ptr<CmDevice> open_cm(Engine &engine, Device &dev, const CmDeviceOptions &opt) {
    auto cm = CmDevice::open(engine, dev, opt);
    if (!cm) {
        std::fprintf(stderr, "Couldn't open the CM of %s: %s\n", dev.name().c_str(),
                     cm.status().message().c_str());
        return nullptr;
    }
    return std::move(*cm);
}

std::unique_ptr<CmDevice> open_cm(Engine &engine, Device &dev, const DeviceOptions &o,
                                  CmDeviceOptions opt) {
    opt.channel.stateless_per_sec = o.cm_stateless_per_sec;
    opt.channel.stateless_burst = o.cm_stateless_burst;
    return open_cm(engine, dev, opt);
}

void cm_linger(EngineRun &run, CmDevice &cm, uint64_t ns) {
    const uint64_t until = cm.now_ns() + ns;
    while (cm.now_ns() < until) {
        const bool busy = run.pump() + cm.poll() > 0;
        /* Control-plane leftovers only: no need to spin a core on them in worker mode. */
        if (!busy && !run.engine.embedded())
            std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
}

void print_cm_counters(const CmDevice &cm) {
    const char *n;
    uint64_t v;
    for (size_t i = 0; cm.counter(i, n, v); ++i)
        if (v)
            std::printf("  %s %" PRIu64 "\n", n, v);
}

} // namespace droce::app
