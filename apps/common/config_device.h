/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * --config FILE for the droce tools that run a device (droce-perf, droce-pingpong) and
 * droce-info, which inspects such a process: the sections [eal], [engine], [port], [qp],
 * [dcqcn], [pfc] and [capture] of config/droce.conf, read into the DeviceOptions before
 * the command line is parsed, so that every flag given overrides the file. */
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config_file.h"
#include "device_options.h"

namespace droce::app {

/** A key only some tools have (e.g. [port] gid_index: perf's -x, pingpong's -g). take
 * stores the value and returns "" or what a valid value is. */
struct ToolConfigKey {
    const char *section;
    const char *key;
    std::function<std::string(const std::string &value)> take;
};

/** A section only one tool has (droce-nvmf's [nvmf]): the tool reads its entries itself.
 * repeatable names the keys that may appear more than once; take returns "" or the
 * one-line error (ConfigFile::at / bad_value name the line). */
struct ToolConfigSection {
    std::string name;
    std::vector<std::string> repeatable;
    std::function<std::string(const ConfigFile &file, const ConfigSection &section)> take;
};

/** The value of --config in a tool's own arguments (argv[1..argc), "--config FILE" or
 * "--config=FILE"): "" when absent. Returns false (with the message in err) when it is
 * given twice or without a value. */
bool find_config_option(int argc, char *const *argv, std::string &path, std::string &err);

/** Loads path into o (and the tool's own keys through tool_keys): "" or the one-line
 * error naming the file, line and key. tool names the tool in "not used by ..." errors. */
std::string apply_device_config(const std::string &path, DeviceOptions &o, const char *tool,
                                const std::vector<ToolConfigKey> &tool_keys = {},
                                const std::vector<ToolConfigSection> &tool_sections = {});

/** find_config_option + apply_device_config: "" (no --config, or the file applied) or the
 * error. Call it before getopt_long so that the command line overrides the file. */
std::string load_config_option(int argc, char *const *argv, DeviceOptions &o, const char *tool,
                               const std::vector<ToolConfigKey> &tool_keys = {},
                               const std::vector<ToolConfigSection> &tool_sections = {});


} // namespace droce::app
