/* SPDX-License-Identifier: BSD-3-Clause */
#include "options.h"

#include <getopt.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "cli_numbers.h"
#include "cli_options.h"
#include "config_device.h"
#include "device_options.h"
#include "eal_args.h"
#include "path_mtu.h"

namespace droce::perf {

namespace {

using app::parse_u64;

const app::DeviceOptionRules kDeviceRules = {
    .check_address_syntax = false,
    .loopback_addresses = "",
    .embedded_without_eal_args = true,
    .coremask_single_lcore = false,
};

/** Largest message: perftest's -a goes up to 2^23. */
constexpr uint64_t kMaxSize = 1ull << 23;
/** perftest's MAX_QP_NUM. */
constexpr uint64_t kMaxQps = 16384;
/** The help's text column ("  -p, --port=<port>" and its padding). */
constexpr size_t kHelpColumn = 27;
/** More workers than this is a typo on any machine droce runs on (RTE_MAX_LCORE is 128). */
constexpr uint64_t kMaxWorkers = 128;

ParseResult bad(const char *argv0, const std::string &msg) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", argv0, msg.c_str(), argv0);
    return ParseResult::ExitError;
}

/** What parsing learns beyond the settings: which per-test defaults the flags replaced. */
struct Given {
    bool tx_depth = false;
    bool cq_mod = false;
};

/** perftest's options, as its ib_*_bw / ib_*_lat spell them. */
std::vector<app::OptionSpec> perftest_table(Options &opt, Given &given) {
    using namespace app;
    /* perftest's flags that change nothing in droce-perf, accepted so that its command
     * lines run unchanged (the help says so) */
    auto accepted = [] { return std::string(); };
    return {
        uint_option("port", 'p', opt.tcp_port, 1, 65535, "<port>",
                    "TCP port of the exchange (default 18515)"),
        string_option("ib-dev", 'd', opt.ib_dev, "<dev>",
                      "droce device name (checked; default the one opened)"),
        uint_option("ib-port", 'i', opt.ib_port, 1, 1, "<port>", "must be 1")
            .set_why("droce devices have one port: 1"),
        uint_option("size", 's', opt.size, 1, kMaxSize, "<size>",
                    "message size (default 65536; lat 2; atomic 8), 1..8388608")
            .set_why("1..8388608 bytes")
            .set_given(opt.size_given),
        flag_option("all", 'a', opt.all_sizes, "run sizes 2..2^23 (not atomics)"),
        uint_option("iters", 'n', opt.iters, 5, 100000000, "<iters>",
                    "iterations (default bw 5000, lat 1000)"),
        uint_option("duration", 'D', opt.duration_s, 1, 86400, "<sec>",
                    "run for <sec> seconds instead of -n")
            .set_why("1..86400 seconds"),
        uint_option("qp", 'q', opt.num_qps, 1, kMaxQps, "<num>",
                    "bw tests: number of QPs, 1..16384 (default 1); each QP\n"
                    "runs -n iterations, the row counts all QPs' messages"),
        uint_option("mtu", 'm', opt.mtu, 256, 4096, "<mtu>",
                    "path MTU 256..4096 (default the port's active MTU)")
            .set_accept(app::is_path_mtu)
            .set_why("256, 512, 1024, 2048 or 4096"),
        uint_option("gid-index", 'x', opt.gid_idx, 0, 255, "<idx>",
                    "GID index (default 1: the IPv4-mapped GID; 0 link-local\n"
                    "IPv6, 2.. the --ip IPv6 addresses)"),
        uint_option("sl", 'S', opt.sl, 0, 15, "<sl>",
                    "service level 0..15 (on a --vlan the PCP is SL & 7)"),
        flag_action("CPU-freq", 'F', accepted, "accepted (droce-perf times with the steady clock)"),
        uint_option("tx-depth", 't', opt.tx_depth, 1, 16384, "<n>",
                    "send queue depth (default bw 128, lat 1)")
            .set_given(given.tx_depth),
        uint_option("rx-depth", 'r', opt.rx_depth, 1, 16384, "<n>",
                    "receive queue depth for send tests (default 512)"),
        uint_option("post_list", 'l', opt.post_list, 1, 16384, "<n>",
                    "bw tests: post WRs in lists of <n> (one post_send call\n"
                    "each); -Q defaults to <n> and must divide it; -n a\n"
                    "multiple of <n>; at most -t"),
        uint_option("cq-mod", 'Q', opt.cq_mod, 1, 16384, "<n>",
                    "bw tests: a completion every <n> WRs per QP (at most -t;\n"
                    "default perftest's 100 but at most -t/4; lat: every WR)")
            .set_given(given.cq_mod),
        enum_option("connection", 'c', opt.ud, {{"RC", 0}, {"UD", 1}},
                    "connection type (UD: send_bw and send_lat, messages of\n"
                    "at most the MTU, as perftest)")
            .set_why("RC, or UD for send_bw/send_lat"),
        flag_option("rdma_cm", 'R', opt.rdma_cm,
                    "connect the QPs through RDMA-CM and exchange perftest's\n"
                    "records over an RDMA-CM control connection to -p (no TCP;\n"
                    "the server is given by its IPv4 address)"),
        flag_option("events", 'e', opt.events,
                    "sleep on CQ events (a completion channel) instead of\n"
                    "polling the CQs (worker mode; not write_lat, -D or\n"
                    "--run_infinitely, as perftest)"),
        enum_option("atomic_type", 'A', opt.atomic_cas, {{"FETCH_AND_ADD", 0}, {"CMP_AND_SWAP", 1}},
                    "FETCH_AND_ADD (default) or CMP_AND_SWAP"),
        uint_option("outs", 'o', opt.out_reads, 1, 16, "<n>",
                    "outstanding reads/atomics (default 16, max 16)"),
        uint_option("qp-timeout", 'u', opt.qp.timeout, 0, 31, "<t>",
                    "RC retransmission timeout, 4.096 us x 2^t, 0..31\n"
                    "(default 14; 0 = none; overrides --config's [qp])"),
        flag_option("report_gbits", 0, opt.report_gbits, "report Gb/sec instead of MB/sec"),
        flag_option("noPeak", 'N', opt.no_peak,
                    "bw tests: no peak bandwidth (BW peak prints 0.00, as\n"
                    "perftest's): only the first post and the last completion\n"
                    "are timed"),
        flag_option("out_json", 0, opt.out_json, "also write the results to a JSON file"),
        string_option("out_json_file", 0, opt.out_json_file, "<f>",
                      "its name (default perftest_out.json)")
            .set_given(opt.out_json),
        flag_option("run_infinitely", 0, opt.run_infinitely,
                    "bw tests: report every -D seconds (default 5) until\n"
                    "interrupted (Ctrl-C) or --timeout"),
        help_option("help", 'h', "this text"),
    };
}

/** droce-perf's own options beyond the device options. */
std::vector<app::OptionSpec> droce_table(Options &opt) {
    using namespace app;
    return {
        uint_option("workers", 0, opt.workers, 0, kMaxWorkers, "<n>",
                    "worker lcores (default 1; 0 = one per EAL worker lcore);\n"
                    "n != 1 runs in worker mode and needs n worker lcores in\n"
                    "-l; QP i and its CQ live on worker i % n")
            .set_why("0..128 (0 = one per EAL worker lcore)"),
        uint_option("threads", 0, opt.threads, 1, kMaxQps, "<n>",
                    "bw tests in worker mode: n posting threads (default 1);\n"
                    "thread t takes a contiguous block of the -q QPs (q/n\n"
                    "each, the first q%n threads one more), their CQ on\n"
                    "worker t % workers; the row sums all threads; thread t\n"
                    "runs alone on the t-th CPU that no worker lcore takes\n"
                    "(shared when too few; the banner says where)")
            .set_why("1..16384 and at most -q"),
        uint_option("cm-response-timeout", 0, opt.cm_response_timeout, 0, 31, "<n>",
                    "-R: the CM's response timeout, 4.096 us x 2^n (default\n"
                    "20: ~4.3 s, as Linux rdma_cm)")
            .set_why("0..31 (4.096 us x 2^n)"),
        uint_option("cm-retries", 0, opt.cm_retries, 0, 15, "<n>",
                    "-R: CM MAD retries before giving up (default 15)"),
        flag_option("buf-malloc", 0, opt.buf_malloc,
                    "work buffer from aligned_alloc, not droce::alloc_buf's\n"
                    "DPDK memory (virtio_user then copies every payload)"),
    };
}

/** Both tables: one parse, one help. */
std::vector<app::OptionSpec> option_table(Options &opt, Given &given) {
    std::vector<app::OptionSpec> t = perftest_table(opt, given);
    std::vector<app::OptionSpec> d = droce_table(opt);
    t.insert(t.end(), d.begin(), d.end());
    return t;
}

struct ModeEntry {
    const char *name;
    Verb verb;
    Kind kind;
};
const ModeEntry kModes[] = {
    {"write_bw", Verb::Write, Kind::Bw},   {"write_lat", Verb::Write, Kind::Lat},
    {"read_bw", Verb::Read, Kind::Bw},     {"read_lat", Verb::Read, Kind::Lat},
    {"send_bw", Verb::Send, Kind::Bw},     {"send_lat", Verb::Send, Kind::Lat},
    {"atomic_bw", Verb::Atomic, Kind::Bw}, {"atomic_lat", Verb::Atomic, Kind::Lat},
};

} // namespace

const char *verb_name(Verb v) {
    switch (v) {
    case Verb::Write:
        return "RDMA_Write";
    case Verb::Read:
        return "RDMA_Read";
    case Verb::Send:
        return "Send";
    case Verb::Atomic:
        return "Atomic";
    }
    return "?";
}

void print_usage(const char *argv0, FILE *out) {
    std::fprintf(
        out,
        "Usage:\n"
        "  %s MODE [EAL args] -- [options]             server: wait for a client on TCP 18515\n"
        "  %s MODE [EAL args] -- [options] <host>      client: connect to the server at <host>\n"
        "  %s MODE [EAL args] -- --loopback [options]  both sides in this process, over a\n"
        "                                              net_ring pair (no TCP, no NIC)\n"
        "MODE: write_bw write_lat read_bw read_lat send_bw send_lat atomic_bw atomic_lat\n"
        "      (as perftest's ib_write_bw ... ib_atomic_lat; the TCP exchange is perftest's,\n"
        "      so either side may be the real perftest tool)\n"
        "\n"
        "EAL args (before --) go to DPDK. With none: -l 0 --no-huge -m 512 --no-pci --no-shconf\n"
        "--file-prefix droce-<pid> --log-level=*:warning (one lcore: embedded mode). Example "
        "against a\n"
        "Soft-RoCE peer on a tap (the kernel keeps TCP, droce owns 10.77.0.100 and UDP 4791):\n"
        "  %s write_bw -l 0 --no-huge -m 512 --no-pci --no-shconf \\\n"
        "     --vdev net_af_packet0,iface=tap0,qdisc_bypass=0 -- --ip 10.77.0.100/24 \\\n"
        "     --mac 02:00:00:00:01:00 -x 1 -s 65536 -n 1000 -F 10.77.0.2\n"
        "On a real NIC give its PCI address instead of --vdev: -a 0000:03:00.0\n"
        "\n",
        argv0, argv0, argv0, argv0);
    Options scratch; /* the tables' help does not depend on the values */
    Given given;
    std::fputs("perftest options:\n", out);
    std::fputs(app::options_help(perftest_table(scratch, given), kHelpColumn).c_str(), out);
    std::fputs(
        "\n"
        "droce options:\n"
        "  --ip=<A.B.C.D/P>         droce's IPv4 address (required except with --loopback)\n"
        "  --ip=<X:Y::Z/P>          an IPv6 address too (repeatable): GIDs 2.., -x 2\n"
        "                           (X:Y::Z/P@VID: on its own VLAN, a VLAN per GID)\n"
        "  --gid-type=v1|v2         v1: RoCEv1 GIDs too, after the v2 ones (droce only)\n"
        "  --gateway=<addr>         IPv4 or IPv6 default gateway for peers off the subnet\n"
        "  --vlan=<vid>             802.1Q VLAN of RoCE traffic (PCP = SL & 7)\n"
        "  --force-dscp=<d>         DSCP of every QP's packets (device-wide)\n"
        "  --force-ttl=<n>          TTL / hop limit of every QP's packets (device-wide)\n"
        "  --mac=<MAC>              droce's MAC (default the port's)\n"
        "  --dpdk-port=<name|id>    DPDK port (default the first)\n"
        "  --eth-mtu=<n>            Ethernet MTU (default the port's)\n"
        "  --dcqcn=on|off           DCQCN congestion control (default on)\n"
        "  --dcqcn-profile=connectx|fair  DCQCN parameter set (default connectx)\n"
        "  --ecn=off|ect0|ect1      ECN field of RoCE data sent (default ect0)\n"
        "  --pfc=PRIO               PFC: ask the PMD to make priority PRIO lossless\n"
        "  --pfc-tx=XOFF,XON        send PFC for PRIO at XOFF frames in an RX queue,\n"
        "                           resume at XON (default off)\n"
        "  --line-rate=RATE         the port's rate in bit/s, e.g. 1g (default the link's;\n"
        "                           100g when the PMD reports none, as memif does)\n"
        "  --tx-burst=N             hold every QP to the line rate with bursts of at most\n"
        "                           N frames (for ports with no wire of their own: memif)\n"
        "  --queue-stride=N         with --workers, worker w on RX/TX queue w x N (default 0:\n"
        "                           the port's adapter's; 1 = neighbouring queues)\n"
        "  --dup-ack-interval-ns=N  re-ACK duplicates at most once per N ns (default 50000)\n"
        "  --seq-nak-interval-ns=N  NAK a lone ahead PSN at most once per N ns (default\n"
        "                           1000000); --seq-nak-after-run=N: N ahead PSNs in a row\n"
        "                           are a run, NAKed at the duplicate interval (default 3)\n"
        "  --cm-stateless-per-sec=N, --cm-stateless-burst=B   -R: stateless REJ/DREP at\n"
        "                           most N/s on average, B at once (default 1000, 64)\n"
        "  --capture=FILE.pcapng    write droce's RoCE traffic (both directions) to FILE\n"
        "  --capture-snaplen=N      bytes kept per captured frame (default whole frames)\n"
        "  --loopback               both sides in one process over a net_ring pair\n"
        "  --counters               print the device counters at exit\n"
        "  --embedded / --worker    poll loop on this thread (default with one lcore) / on a\n"
        "                           worker lcore (needs -l 0,1)\n"
        "  --busy-poll              never sleep while idle\n",
        out);
    std::fputs(app::options_help(droce_table(scratch), kHelpColumn).c_str(), out);
    std::fputs(
        "  --timeout=<sec>          give up after <sec> seconds (default 120; 0 = never)\n"
        "  --log-level=<lvl>        droce log level: trace..off (default warn)\n"
        "  --config=<file>          settings from a configuration file (config/droce.conf);\n"
        "                           the flags given override it\n",
        out);
}

namespace {

/** MODE (argv[1]): the verb and the kind of test. */
bool take_mode(const char *mode, Options &opt) {
    opt.mode = mode;
    for (const auto &m : kModes)
        if (opt.mode == m.name) {
            opt.verb = m.verb;
            opt.kind = m.kind;
            return true;
        }
    return false;
}

/** --config first: every flag then overrides the file. */
std::string load_config(int argc, char **argv, Options &opt) {
    const std::vector<app::ToolConfigKey> tool_keys = {
        {"port", "gid_index",
         [&opt](const std::string &v) -> std::string {
             uint64_t u = 0;
             if (!parse_u64(v.c_str(), 255, u))
                 return "want a GID index 0..255 (as -x)";
             opt.gid_idx = static_cast<int>(u);
             return "";
         }},
        {"engine", "workers",
         [&opt](const std::string &v) -> std::string {
             uint64_t u = 0;
             if (!parse_u64(v.c_str(), kMaxWorkers, u))
                 return "want 0..128 (0 = one per EAL worker lcore; as --workers)";
             opt.workers = static_cast<uint32_t>(u);
             return "";
         }},
    };
    return app::load_config_option(argc, argv, opt, "droce-perf", tool_keys);
}

/** perftest's per-test defaults and the rules between its flags: "" or the error. */
std::string apply_perftest_rules(Options &opt, const Given &given) {
    if (opt.kind != Kind::Bw && opt.num_qps != 1)
        return "-q: multiple QPs only available on bw tests";
    if (opt.verb == Verb::Atomic) {
        if (opt.size_given && opt.size != 8)
            return "atomic tests use 8-byte messages: drop -s or give -s 8";
        if (opt.all_sizes)
            return "-a (all sizes) does not apply to atomic tests";
        opt.size = 8;
    } else if (!opt.size_given) {
        opt.size = opt.kind == Kind::Lat ? 2 : 65536;
    }
    if (opt.ud && opt.verb != Verb::Send)
        return "-c UD applies to send_bw and send_lat only (UD has no RDMA)";
    if (opt.rdma_cm && opt.ud)
        return "-R with -c UD is not supported (RC QPs only)";
    if (opt.rdma_cm && opt.loopback)
        return "-R and --loopback exclude each other";
    if (opt.iters == 0)
        opt.iters = opt.kind == Kind::Lat ? 1000 : 5000;
    if (opt.kind == Kind::Lat && !given.tx_depth)
        opt.tx_depth = 1;
    /* perftest: the latency tests signal every WR; cq_mod is capped at the send depth
     * (a QP could never post past an unsignaled window). Unless given, also at a quarter
     * of it: a QP refills only when a signaled WR completes, so perftest's 100 of 128
     * leaves 28 WRs in flight per refill, which starves a software peer (64 B write_bw
     * over net_memif: 3.7 M msgs/s at 100, 6.3 at 32, 5.8 at 1). */
    if (opt.kind == Kind::Lat)
        opt.cq_mod = 1;
    else if (!given.cq_mod)
        opt.cq_mod = std::max(1u, std::min(opt.cq_mod, opt.tx_depth / 4));
    else
        opt.cq_mod = std::min(opt.cq_mod, opt.tx_depth);
    return "";
}

/** perftest's post list: BW tests only, whole lists (-n a multiple of the list), the CQ
 * moderation the list's size unless given, and then a divisor of it (every list ends on
 * a signaled WR). A list must also fit in the send queue. */
std::string apply_post_list_rules(Options &opt, const Given &given) {
    if (opt.post_list <= 1)
        return "";
    if (opt.kind != Kind::Bw)
        return "-l/--post_list applies to bw tests only";
    if (opt.duration_s == 0 && !opt.run_infinitely && opt.iters % opt.post_list != 0)
        return "-n (" + std::to_string(opt.iters) + ") must be a multiple of -l/--post_list (" +
               std::to_string(opt.post_list) + ")";
    if (opt.post_list > opt.tx_depth)
        return "-l/--post_list (" + std::to_string(opt.post_list) + ") above -t/--tx-depth (" +
               std::to_string(opt.tx_depth) + "): a list must fit in the send queue";
    if (!given.cq_mod) {
        opt.cq_mod = opt.post_list;
        opt.cq_mod_from_post_list = true;
    } else if (opt.post_list % opt.cq_mod != 0) {
        return "-l/--post_list (" + std::to_string(opt.post_list) +
               ") must be a multiple of -Q/--cq-mod (" + std::to_string(opt.cq_mod) + ")";
    }
    return "";
}

/** -D, --run_infinitely and --timeout together: "" or the error. */
std::string apply_duration_rules(Options &opt) {
    if (opt.run_infinitely) {
        if (opt.kind != Kind::Bw)
            return "--run_infinitely applies to bw tests only";
        if (opt.duration_s == 0)
            opt.duration_s = 5;
        if (!opt.timeout_given)
            opt.timeout_s = 0;
    }
    if (opt.duration_s > 0 && opt.all_sizes)
        return "-D and -a exclude each other";
    if (opt.duration_s > 0 && opt.timeout_given && opt.timeout_s > 0 &&
        opt.timeout_s < opt.duration_s && !opt.run_infinitely)
        return "--timeout is shorter than -D";
    if (opt.duration_s > 0 && !opt.timeout_given)
        opt.timeout_s = opt.duration_s + 120;
    return "";
}

/** -e: perftest's refusals (write_lat waits on memory, not on a CQ; timed modes end on
 * the clock, which an event does not wake for), and droce's own: in embedded mode nothing
 * would run the engine while the program sleeps. Checked once the engine mode is known. */
std::string apply_event_rules(const Options &opt) {
    if (!opt.events)
        return "";
    if (opt.verb == Verb::Write && opt.kind == Kind::Lat)
        return "-e: Events feature not available on WRITE verb (write_lat)";
    if (opt.run_infinitely)
        return "-e: run_infinitely does not support events feature yet";
    if (opt.duration_s > 0)
        return "-e: Duration mode doesn't work with events";
    if (opt.embedded)
        return "-e sleeps until a completion event, and in embedded mode nothing runs the "
               "engine meanwhile: add --worker";
    return "";
}

/** --threads: several posting threads need a bw test, worker mode (an embedded engine
 * is polled by the one application loop) and a QP each; -R's control loop, -e's sleeps
 * and --run_infinitely's periodic rows run on one thread. Checked once the engine mode is
 * known. */
std::string apply_thread_rules(const Options &opt) {
    if (opt.threads == 1)
        return "";
    if (opt.kind != Kind::Bw)
        return "--threads applies to bw tests only";
    if (opt.threads > opt.num_qps)
        return "--threads (" + std::to_string(opt.threads) + ") above -q (" +
               std::to_string(opt.num_qps) + "): every thread needs a QP";
    if (opt.embedded)
        return opt.embedded_given ? "--threads needs worker mode: drop --embedded"
                                  : "--threads needs worker mode: add --worker or --workers N "
                                    "(and -l with worker lcores)";
    if (opt.rdma_cm)
        return "--threads is not supported with -R (rdma_cm)";
    if (opt.events)
        return "--threads is not supported with -e (events)";
    if (opt.run_infinitely)
        return "--threads is not supported with --run_infinitely";
    return "";
}

/** Default EAL arguments and several workers: one lcore per worker plus the main one,
 * mapped round-robin onto the CPUs there are (lcore i on CPU i % CPUs). */
void map_worker_lcores(Options &opt) {
    if (!opt.eal_defaulted || opt.workers <= 1)
        return;
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    std::string map;
    for (uint32_t l = 0; l <= opt.workers; ++l) {
        /* Appended piece by piece: GCC 12 flags `"," + std::string&&` here with a false
         * -Wrestrict once this function's inlining changes. */
        if (l != 0)
            map += ',';
        map += std::to_string(l);
        map += '@';
        map += std::to_string(l % cpus);
    }
    for (size_t i = 0; i + 1 < opt.eal_args.size(); ++i)
        if (opt.eal_args[i] == "-l") {
            opt.eal_args[i] = "--lcores";
            opt.eal_args[i + 1] = map;
        }
}

/** Every rule once the flags are read, then the device options' own: "" or the error. */
std::string finish(Options &opt, const Given &given) {
    for (auto rule : {apply_perftest_rules, apply_post_list_rules})
        if (std::string err = rule(opt, given); !err.empty())
            return err;
    if (std::string err = apply_duration_rules(opt); !err.empty())
        return err;
    if (opt.no_peak && opt.kind != Kind::Bw)
        return "-N/--noPeak applies to bw tests only";
    // Embedded mode has exactly one worker (the application's loop): more need lcores.
    if (opt.workers != 1) {
        if (opt.embedded_given)
            return "--workers other than 1 needs worker mode: drop --embedded";
        opt.worker = true;
    }
    if (std::string err = app::finish_device_options(opt, !opt.servername.empty(), kDeviceRules);
        !err.empty())
        return err;
    if (std::string err = apply_event_rules(opt); !err.empty())
        return err;
    if (std::string err = apply_thread_rules(opt); !err.empty())
        return err;
    map_worker_lcores(opt);
    return "";
}

} // namespace

ParseResult parse_command_line(int argc, char **argv, Options &opt) {
    const char *argv0 = argc > 0 ? argv[0] : "droce-perf";
    if (argc < 2) {
        std::fprintf(stderr, "%s: missing MODE (see %s --help)\n", argv0, argv0);
        return ParseResult::ExitError;
    }
    if (std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
        print_usage(argv0, stdout);
        return ParseResult::ExitOk;
    }
    if (!take_mode(argv[1], opt))
        return bad(argv0, "unknown MODE '" + opt.mode +
                              "' (write_bw write_lat read_bw read_lat send_bw send_lat "
                              "atomic_bw atomic_lat)");
    app::SplitArgs split = app::split_at_dashdash(argc, argv, 2);
    opt.eal_args = std::move(split.eal);
    if (std::string err = load_config(split.ours_argc(), split.ours.data(), opt); !err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return ParseResult::ExitError;
    }
    Given given;
    const app::ExtraOptions device = app::device_option_extras(opt, kDeviceRules);
    const app::ParseOutcome r =
        app::parse_options(option_table(opt, given), split.ours_argc(), split.ours.data(), &device);
    if (r.status == app::ParseStatus::Help) {
        print_usage(argv0, stdout);
        return ParseResult::ExitOk;
    }
    if (r.status == app::ParseStatus::Error)
        return bad(argv0, r.message);
    if (std::string err = app::take_host_operand(r.operands, opt.servername); !err.empty())
        return bad(argv0, err);
    if (std::string err = finish(opt, given); !err.empty())
        return bad(argv0, err);
    return ParseResult::Run;
}

} // namespace droce::perf
