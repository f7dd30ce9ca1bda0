/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-nvmf's command line: the target's options (namespaces, NQN, hosts, queue limits)
 * and droce's device options. */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device_options.h"
#include "nvmf_config.h"

namespace droce::nvmf {

struct Options : app::DeviceOptions {
    Options() : app::DeviceOptions(0) {}
    uint16_t port = 4420;
    uint64_t ram = 0;
    std::string file;
    uint64_t size = 0; /* --file: 0 = the file's size */
    std::string nqn = "nqn.2026-11.io.droce:nvmf0";
    std::string serial = "droce0000000001";
    std::vector<std::string> hosts;
    uint32_t block_size = 512;
    uint16_t io_queues = 8;
    uint32_t mdts = 128 * 1024;
    uint32_t in_capsule = 8192;
    uint32_t file_depth = 256;
    std::vector<NamespaceSpec> namespaces; /* --namespace, in order */
    bool verbose = false;
};

/** Splits argv at "--" (EAL args before, ours after), reads --config and parses the rest:
 * 0 run, 1 exit with error (message printed), 2 exit ok (--help printed). */
int parse_command_line(int argc, char **argv, Options &o);

} // namespace droce::nvmf
