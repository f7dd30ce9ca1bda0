/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Command line of droce-perf: MODE, then [EAL args] -- [perftest flags] [server]. */
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_options.h"
#include "device_options.h"

namespace droce::perf {

enum class Verb { Write, Read, Send, Atomic };
enum class Kind { Bw, Lat };

/** perftest's mode and flags; droce's own (--ip, --loopback, ..., the EAL arguments) are
 * the DeviceOptions (--timeout defaults to 120 s). */
struct Options : app::DeviceOptions {
    Options() : app::DeviceOptions(120.0) {}

    // ---- the mode ----
    std::string mode; /**< write_bw, read_lat, ... */
    Verb verb = Verb::Write;
    Kind kind = Kind::Bw;

    // ---- perftest's flags ----
    int tcp_port = 18515;  /**< -p */
    std::string ib_dev;    /**< -d */
    int ib_port = 1;       /**< -i */
    uint64_t size = 65536; /**< -s (bw default 65536, lat 2, atomic 8) */
    bool size_given = false;
    bool all_sizes = false;  /**< -a */
    uint32_t iters = 0;      /**< -n (0 = default: bw 5000, lat 1000) */
    double duration_s = 0;   /**< -D (0 = iterations mode) */
    uint32_t num_qps = 1;    /**< -q (bw tests; 1..16384 as perftest) */
    uint32_t mtu = 0;        /**< -m bytes; 0 = the port's active MTU */
    int gid_idx = 1;         /**< -x (default 1: the IPv4-mapped GID) */
    uint8_t sl = 0;          /**< -S: service level; on a VLAN it is the PCP (SL & 7) */
    uint32_t tx_depth = 128; /**< -t */
    uint32_t rx_depth = 512; /**< -r */
    /** -l: bw clients post their WRs in lists of this many, one post_send call each
     * (ibv_post_send with a chain); the CQ moderation becomes the list's size unless -Q
     * is given, which must then divide it (perftest's rules). */
    uint32_t post_list = 1;
    uint32_t cq_mod = 100;     /**< -Q: bw tests signal every cq_mod-th WR (perftest's default) */
    bool report_gbits = false; /**< --report_gbits */
    bool no_peak = false;      /**< -N/--noPeak: bw tests print no peak (0.00, as perftest) */
    bool out_json = false;     /**< --out_json */
    std::string out_json_file = "perftest_out.json"; /**< --out_json_file */
    bool run_infinitely = false;                     /**< --run_infinitely */
    bool atomic_cas = false;                         /**< -A CMP_AND_SWAP (default FETCH_AND_ADD) */
    uint32_t out_reads = 16;                         /**< -o */
    bool ud = false;      /**< -c UD (send_bw, send_lat): messages of at most the MTU */
    bool rdma_cm = false; /**< -R: connect (and exchange) through RDMA-CM (cm_run.h) */
    bool cq_mod_from_post_list = false; /**< -l without -Q: perftest says so in its banner */
    /** -e: the CQs report on a completion channel and idle loops sleep on it instead of
     * polling (perftest's use_event; worker mode only). */
    bool events = false;

    // ---- droce's own (beyond the DeviceOptions) ----
    /** --workers: EngineOptions::workers (0 = one per EAL worker lcore); != 1 means
     * worker mode. QP i runs on worker i % workers (its CQ is created there). */
    uint32_t workers = 1;
    /** --threads: application threads of a bw test (worker mode). Thread t takes a
     * contiguous block of the QPs (q / T each, the first q % T threads one more) with
     * their CQ on worker t % workers, and steps only its own; the row sums all threads
     * over one wall-clock window. 1: one thread steps every QP (QP i on worker i % workers). */
    uint32_t threads = 1;
    /** -R: the CM's response timeout exponent and retries (--cm-response-timeout,
     * --cm-retries; Linux rdma_cm's 20 and 15 by default). */
    uint8_t cm_response_timeout = 20;
    uint8_t cm_retries = 15;
    /** --buf-malloc: the work buffer from ordinary memory (aligned_alloc) instead of
     * droce::alloc_buf's DPDK memory: copied on TX on virtio_user (an A/B switch). */
    bool buf_malloc = false;

    std::string servername;
};

using app::ParseResult;

ParseResult parse_command_line(int argc, char **argv, Options &opt);
void print_usage(const char *argv0, FILE *out);
const char *verb_name(Verb v);

} // namespace droce::perf
