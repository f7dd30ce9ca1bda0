/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-fabric's command line: EAL arguments before "--", the bottleneck's options after
 * it, a --config file's [fabric] keys ahead of them (so that the options given override
 * the file) and its [eal] when the command line gives none. */
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_options.h"
#include "fabric_bottleneck.h"
#include "fabric_faults.h"

namespace droce::fabric_app {

constexpr uint16_t kMaxPorts = 16;

struct Opts {
    /** droce-fabric's defaults where they differ from the model's. */
    Opts() {
        bp.mark_at_dequeue = true;
        bp.buffer_bytes = 2'000'000;
        bp.pmax = 0.05;
    }
    std::vector<uint16_t> to{1}; /* ports whose egress is a bottleneck */
    droce::fabric::BottleneckParams bp;
    uint64_t seed = 1;
    uint64_t sample_us = 100;
    std::string csv;
    double secs = 0;
    bool shared = false;  /* one queue for all --to ports (their common upstream link) */
    int honour_pfc = -1;  /* priority whose pause frames hold a bottleneck queue; -1: none */
    uint64_t idle_us = 0; /* sleep this long when a loop found nothing to do; 0: spin */
    droce::fabric::FaultParams faults; /* --dup --reorder --corrupt, toward --to ports */
    uint16_t queues = 1; /* RX/TX queues per port (a memif peer with several workers) */
};

struct CommandLine {
    Opts opts;
    std::vector<std::string> eal; /**< argv[0] and the EAL arguments */
};

void usage(FILE *f);

/** Reads argv into cl: Run, or ExitOk (--help printed) or ExitError (message printed;
 * droce-fabric exits 2). */
app::ParseResult parse_command_line(int argc, char **argv, CommandLine &cl);

} // namespace droce::fabric_app
