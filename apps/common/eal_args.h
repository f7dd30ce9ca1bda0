/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The DPDK EAL part of the droce tools' command lines: "[EAL args] -- [options]" split at
 * the first "--", the defaults when no EAL argument is given, and the lcore check that
 * picks embedded mode when the EAL gets a single lcore. */
#pragma once

#include <string>
#include <vector>

namespace droce::app {

/** A command line split at the first "--". */
struct SplitArgs {
    /** Before "--" (empty without "--"). */
    std::vector<std::string> eal;
    /** argv[0], then everything after "--" (everything without "--"), then nullptr: the
     * tool's own options, ready for getopt_long. */
    std::vector<char *> ours;

    int ours_argc() const { return static_cast<int>(ours.size()) - 1; }
};

/** Splits argv[first..argc) at the first "--": EAL args before it, ours after it; without
 * "--" all are ours. */
SplitArgs split_at_dashdash(int argc, char **argv, int first);

/** The EAL arguments used when the command line gives none: one lcore (-l 0) in embedded
 * mode, two (-l 0,1) in worker mode; no hugepages, no PCI, and --no-shconf so that
 * several droce processes (and other DPDK users) do not fight over /var/run/dpdk/rte. */
std::vector<std::string> default_eal_args(bool embedded);

/** True when the EAL arguments name exactly one lcore (-l N, -lN, --lcores N,
 * --lcores=N and, with coremask, -c with one bit set): then there is no worker lcore and
 * embedded mode is the only one that can work. */
bool eal_single_lcore(const std::vector<std::string> &eal, bool coremask);

/** Sets "OPT VALUE" in eal (a configuration file's lcores or file prefix): replaces the
 * value of the first of aliases found ("-l 0", "-l0", "--lcores=0"), else appends. */
void set_eal_option(std::vector<std::string> &eal, const std::string &opt,
                    const std::vector<std::string> &aliases, const std::string &value);

/** argv for Engine::create: argv0 followed by the EAL arguments, nullptr-terminated. */
class EalArgv {
  public:
    EalArgv(const char *argv0, const std::vector<std::string> &eal);
    EalArgv(const EalArgv &) = delete;
    EalArgv &operator=(const EalArgv &) = delete;
    int argc() const { return static_cast<int>(argv_.size()) - 1; }
    char **argv() { return argv_.data(); }

  private:
    std::vector<std::string> strings_;
    std::vector<char *> argv_;
};

} // namespace droce::app
