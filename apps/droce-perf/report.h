/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * perftest's output: the test banner, the address lines, the bw and lat tables (same
 * headers and row formats as perftest 4.5), and --out_json. */
#pragma once

#include <string>
#include <vector>

#include "options.h"
#include "proto.h"
#include "side.h"

namespace droce::perf {

/** perftest's banner; thread_cpus (--threads: where the posting threads run) adds a line. */
void print_banner(const Options &opt, const std::string &dev, uint32_t mtu_bytes, bool server,
                  const std::string &thread_cpus = {});
void print_dest(const char *side, const Dest &d, Verb verb);
void print_line();
void print_header(const Options &opt);
/** The bw numbers of a finished run (client, or the send_bw server). */
BwReport compute_bw(const Options &opt, const Side &s);
/** --threads: one row for several sides run over the same wall-clock window (their
 * completions summed over the window from the first start to the last end, or with full
 * stamps from the first post to the last completion; the sides share a clock origin). */
BwReport compute_bw(const Options &opt, const std::vector<const Side *> &sides);
void print_bw_row(const Options &opt, const BwReport &r);
/** Lat table row of a finished run; false when there are too few samples. */
bool print_lat_row(const Options &opt, const Side &s);
/** --out_json: appends what was printed last (bw or lat) to the JSON file at exit. */
void json_add_bw(const BwReport &r);
void json_write(const Options &opt);

} // namespace droce::perf
