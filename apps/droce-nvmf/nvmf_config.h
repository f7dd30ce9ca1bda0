/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-nvmf's own settings and its [nvmf] section of a --config file: the subsystem NQN,
 * serial, allowed hosts and namespaces (config/nvmf.conf documents every key). The
 * command line overrides the file: --nqn/--serial replace the file's, --host and
 * --namespace/--ram/--file given on the command line replace the file's lists whole. */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config_device.h"

namespace droce::nvmf {

/** One namespace's backend: "ram:SIZE" or "file:PATH[,size=SIZE]" (size 0: the file's). */
struct NamespaceSpec {
    bool ram = false;
    uint64_t size = 0;
    std::string path;
};

/** What the [nvmf] section may set. */
struct NvmfSettings {
    std::string nqn = "nqn.2026-11.io.droce:nvmf0";
    std::string serial = "droce0000000001";
    std::vector<std::string> hosts;
    std::vector<NamespaceSpec> namespaces; /* NSID i + 1 */
    uint16_t port = 4420;
};

/** Most namespaces one subsystem gets (NSIDs 1..kMaxNamespaces). */
inline constexpr size_t kMaxNamespaces = 32;

/** "4096", "64K", "64M", "1G" -> bytes; false when not a number or past 2^50. */
bool parse_size(const std::string &s, uint64_t &out);

/** "ram:SIZE" / "file:PATH[,size=SIZE]" -> spec: "" or what a valid value is. */
std::string parse_namespace_spec(const std::string &v, NamespaceSpec &out);

/** An NQN as NVMe-oF allows it (starts "nqn.", at most 223 bytes, printable ASCII):
 * "" or why not. */
std::string check_nqn(const std::string &nqn);

/** The [nvmf] section reader for load_config_option, storing into s. */
app::ToolConfigSection nvmf_config_section(NvmfSettings &s);

} // namespace droce::nvmf
