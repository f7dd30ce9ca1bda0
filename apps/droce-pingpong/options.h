/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Command line of droce-pingpong: ibv_rc_pingpong's options plus droce's own. */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <droce/verbs.h>

#include "cli_options.h"
#include "device_options.h"

namespace droce::pingpong {

/** ibv_rc_pingpong's options; droce's own (--ip, --loopback, ..., the EAL arguments) are
 * the DeviceOptions (--timeout defaults to 60 s). */
struct Options : app::DeviceOptions {
    Options() : app::DeviceOptions(60.0) {}

    // ---- ibv_rc_pingpong's options ----
    int tcp_port = 18515;    /**< -p */
    std::string ib_dev;      /**< -d (checked against the droce device name) */
    int ib_port = 1;         /**< -i (droce devices have one port: must be 1) */
    uint32_t size = 4096;    /**< -s */
    Mtu mtu = Mtu::Mtu1024;  /**< -m */
    uint32_t rx_depth = 500; /**< -r */
    uint32_t iters = 1000;   /**< -n */
    int sl = 0;              /**< -l */
    bool events = false;     /**< -e: wait on completion events */
    int gid_idx = 1;         /**< -g (default 1: the IPv4-mapped GID) */
    bool validate = false;   /**< -c */
    std::string servername;  /**< positional: client mode when set */
    /** --ud: ibv_ud_pingpong instead (UD QP, Q_Key 0x11111111, 40-byte GRH in front of
     * each receive; -s defaults to 2048 and must fit the active MTU; -m and -c unused). */
    bool ud = false;
};

using app::ParseResult;

/** Splits argv at "--" (EAL args before, ours after; no "--" means all ours) and
 * parses our part. On error prints one line plus the usage to stderr. */
ParseResult parse_command_line(int argc, char **argv, Options &opt);

void print_usage(const char *argv0, FILE *out);

} // namespace droce::pingpong
