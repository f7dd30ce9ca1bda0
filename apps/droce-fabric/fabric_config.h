/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-fabric --config FILE (config/fabric.conf): [eal] (args, lcores, file_prefix, vdev)
 * and [fabric], whose keys are the command-line options (rate_gbps is --rate-gbps). Each
 * value is checked here against the option's range, with the file and line in the error,
 * then handed to the command-line parser as the option it names, ahead of the options
 * given, so that those override the file. */
#pragma once

#include <string>
#include <vector>

namespace droce::fabric_app {

struct FabricConfig {
    /** EAL arguments from [eal] (used when the command line gives none). */
    std::vector<std::string> eal;
    bool eal_given = false;
    /** The [fabric] keys as command-line options ("--rate-gbps", "10", "--shared", ...). */
    std::vector<std::string> options;
};

/** Loads path: "" or the one-line error naming the file, line and key. */
std::string load_fabric_config(const std::string &path, FabricConfig &out);

} // namespace droce::fabric_app
