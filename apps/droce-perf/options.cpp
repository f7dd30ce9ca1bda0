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
/** More workers than this is a typo on any machine droce runs on (RTE_MAX_LCORE is 128). */
constexpr uint64_t kMaxWorkers = 128;

enum LongOnly : int {
    kOptReportGbits = app::kFirstToolOption,
    kOptOutJson,
    kOptOutJsonFile,
    kOptRunInfinitely,
    kOptWorkers,
    kOptCmResponseTimeout,
    kOptCmRetries,
    kOptBufMalloc,
};

const std::vector<struct option> kLongOptions = app::with_device_options({
    {"port", required_argument, nullptr, 'p'},
    {"ib-dev", required_argument, nullptr, 'd'},
    {"ib-port", required_argument, nullptr, 'i'},
    {"size", required_argument, nullptr, 's'},
    {"all", no_argument, nullptr, 'a'},
    {"iters", required_argument, nullptr, 'n'},
    {"duration", required_argument, nullptr, 'D'},
    {"qp", required_argument, nullptr, 'q'},
    {"mtu", required_argument, nullptr, 'm'},
    {"gid-index", required_argument, nullptr, 'x'},
    {"sl", required_argument, nullptr, 'S'},
    {"CPU-freq", no_argument, nullptr, 'F'},
    {"tx-depth", required_argument, nullptr, 't'},
    {"rx-depth", required_argument, nullptr, 'r'},
    {"post_list", required_argument, nullptr, 'l'},
    {"cq-mod", required_argument, nullptr, 'Q'},
    {"connection", required_argument, nullptr, 'c'},
    {"rdma_cm", no_argument, nullptr, 'R'},
    {"events", no_argument, nullptr, 'e'},
    {"atomic_type", required_argument, nullptr, 'A'},
    {"outs", required_argument, nullptr, 'o'},
    {"qp-timeout", required_argument, nullptr, 'u'},
    {"help", no_argument, nullptr, 'h'},
    {"report_gbits", no_argument, nullptr, kOptReportGbits},
    {"out_json", no_argument, nullptr, kOptOutJson},
    {"out_json_file", required_argument, nullptr, kOptOutJsonFile},
    {"run_infinitely", no_argument, nullptr, kOptRunInfinitely},
    {"workers", required_argument, nullptr, kOptWorkers},
    {"cm-response-timeout", required_argument, nullptr, kOptCmResponseTimeout},
    {"cm-retries", required_argument, nullptr, kOptCmRetries},
    {"buf-malloc", no_argument, nullptr, kOptBufMalloc},
});

const char kShortOptions[] = ":p:d:i:s:an:D:q:m:x:S:Ft:r:l:Q:c:RA:eo:u:h";

ParseResult bad(const char *argv0, const std::string &msg) {
    std::fprintf(stderr, "%s: %s (see %s --help)\n", argv0, msg.c_str(), argv0);
    return ParseResult::ExitError;
}

ParseResult bad_value(const char *argv0, int c, const char *value, const char *why) {
    return bad(argv0, app::invalid_value_message(kLongOptions.data(), c, value, why));
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
        "\n"
        "perftest options:\n"
        "  -p, --port=<port>        TCP port of the exchange (default 18515)\n"
        "  -d, --ib-dev=<dev>       droce device name (checked; default the one opened)\n"
        "  -i, --ib-port=<port>     must be 1\n"
        "  -s, --size=<size>        message size (default 65536; lat 2; atomic 8), 1..8388608\n"
        "  -a, --all                run sizes 2..2^23 (not atomics)\n"
        "  -n, --iters=<iters>      iterations (default bw 5000, lat 1000)\n"
        "  -D, --duration=<sec>     run for <sec> seconds instead of -n\n"
        "  -q, --qp=<num>           bw tests: number of QPs, 1..16384 (default 1); each QP\n"
        "                           runs -n iterations, the row counts all QPs' messages\n"
        "  -m, --mtu=<mtu>          path MTU 256..4096 (default the port's active MTU)\n"
        "  -x, --gid-index=<idx>    GID index (default 1: the IPv4-mapped GID; 0 link-local\n"
        "                           IPv6, 2.. the --ip IPv6 addresses)\n"
        "  -S, --sl=<sl>            service level 0..15 (on a --vlan the PCP is SL & 7)\n"
        "  -F, --CPU-freq           accepted (droce-perf times with the steady clock)\n"
        "  -t, --tx-depth=<n>       send queue depth (default bw 128, lat 1)\n"
        "  -r, --rx-depth=<n>       receive queue depth for send tests (default 512)\n"
        "  -l, --post_list=<n>      bw tests: post WRs in lists of <n> (one post_send call\n"
        "                           each); -Q defaults to <n> and must divide it; -n a\n"
        "                           multiple of <n>; at most -t\n"
        "  -Q, --cq-mod=<n>         bw tests: a completion every <n> WRs per QP (at most -t;\n"
        "                           default perftest's 100 but at most -t/4; lat: every WR)\n"
        "  -c, --connection=RC|UD   connection type (UD: send_bw and send_lat, messages of\n"
        "                           at most the MTU, as perftest)\n"
        "  -R, --rdma_cm            connect the QPs through RDMA-CM and exchange perftest's\n"
        "                           records over an RDMA-CM control connection to -p (no TCP;\n"
        "                           the server is given by its IPv4 address)\n"
        "  -e, --events             accepted (droce-perf polls)\n"
        "  -A, --atomic_type=<t>    FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
        "  -o, --outs=<n>           outstanding reads/atomics (default 16, max 16)\n"
        "  -u, --qp-timeout=<t>     RC retransmission timeout, 4.096 us x 2^t, 0..31\n"
        "                           (default 14; 0 = none; overrides --config's [qp])\n"
        "      --report_gbits       report Gb/sec instead of MB/sec\n"
        "      --out_json           also write the results to a JSON file\n"
        "      --out_json_file=<f>  its name (default perftest_out.json)\n"
        "      --run_infinitely     bw tests: report every -D seconds (default 5) until\n"
        "                           interrupted (Ctrl-C) or --timeout\n"
        "  -h, --help               this text\n"
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
        "  --busy-poll              never sleep while idle\n"
        "  --workers=<n>            worker lcores (default 1; 0 = one per EAL worker lcore);\n"
        "                           n != 1 runs in worker mode and needs n worker lcores in\n"
        "                           -l; QP i and its CQ live on worker i %% n\n"
        "  --cm-response-timeout=<n> -R: the CM's response timeout, 4.096 us x 2^n (default\n"
        "                           20: ~4.3 s, as Linux rdma_cm)\n"
        "  --cm-retries=<n>         -R: CM MAD retries before giving up (default 15)\n"
        "  --buf-malloc             work buffer from aligned_alloc, not droce::alloc_buf's\n"
        "                           DPDK memory (virtio_user then copies every payload)\n"
        "  --timeout=<sec>          give up after <sec> seconds (default 120; 0 = never)\n"
        "  --log-level=<lvl>        droce log level: trace..off (default warn)\n"
        "  --config=<file>          settings from a configuration file (config/droce.conf);\n"
        "                           the flags given override it\n",
        argv0, argv0, argv0, argv0);
}

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
    opt.mode = argv[1];
    bool found = false;
    for (const auto &m : kModes) {
        if (opt.mode == m.name) {
            opt.verb = m.verb;
            opt.kind = m.kind;
            found = true;
        }
    }
    if (!found)
        return bad(argv0, "unknown MODE '" + opt.mode +
                              "' (write_bw write_lat read_bw read_lat send_bw send_lat "
                              "atomic_bw atomic_lat)");

    app::SplitArgs split = app::split_at_dashdash(argc, argv, 2);
    opt.eal_args = std::move(split.eal);
    std::vector<char *> &ours = split.ours;
    const int our_argc = split.ours_argc();

    /* --config first: every flag then overrides the file. */
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
    if (std::string err =
            app::load_config_option(our_argc, ours.data(), opt, "droce-perf", tool_keys);
        !err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return ParseResult::ExitError;
    }

    bool tx_given = false;
    bool cq_mod_given = false;
    opterr = 0;
    optind = 1;
    while (true) {
        int longind = -1;
        const int c =
            getopt_long(our_argc, ours.data(), kShortOptions, kLongOptions.data(), &longind);
        if (c == -1)
            break;
        uint64_t u = 0;
        switch (c) {
        case 'p':
            if (!parse_u64(optarg, 65535, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..65535");
            opt.tcp_port = static_cast<int>(u);
            break;
        case 'd':
            opt.ib_dev = optarg;
            break;
        case 'i':
            if (!parse_u64(optarg, 1000, u) || u != 1)
                return bad_value(argv0, c, optarg, "droce devices have one port: 1");
            break;
        case 's':
            if (!parse_u64(optarg, kMaxSize, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..8388608 bytes");
            opt.size = u;
            opt.size_given = true;
            break;
        case 'a':
            opt.all_sizes = true;
            break;
        case 'n':
            if (!parse_u64(optarg, 100000000, u) || u < 5)
                return bad_value(argv0, c, optarg, "5..100000000");
            opt.iters = static_cast<uint32_t>(u);
            break;
        case 'D':
            if (!parse_u64(optarg, 86400, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..86400 seconds");
            opt.duration_s = static_cast<double>(u);
            break;
        case 'q':
            if (!parse_u64(optarg, kMaxQps, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..16384");
            if (opt.kind != Kind::Bw && u != 1)
                return bad(argv0, "-q: multiple QPs only available on bw tests");
            opt.num_qps = static_cast<uint32_t>(u);
            break;
        case 'm':
            if (!parse_u64(optarg, 4096, u) ||
                (u != 256 && u != 512 && u != 1024 && u != 2048 && u != 4096))
                return bad_value(argv0, c, optarg, "256, 512, 1024, 2048 or 4096");
            opt.mtu = static_cast<uint32_t>(u);
            break;
        case 'x':
            if (!parse_u64(optarg, 255, u))
                return bad_value(argv0, c, optarg, "0..255");
            opt.gid_idx = static_cast<int>(u);
            break;
        case 'S':
            if (!parse_u64(optarg, 15, u))
                return bad_value(argv0, c, optarg, "0..15");
            opt.sl = static_cast<uint8_t>(u);
            break;
        case 'F':
        case 'e':
            break;
        case 'R':
            opt.rdma_cm = true;
            break;
        case 't':
            if (!parse_u64(optarg, 16384, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..16384");
            opt.tx_depth = static_cast<uint32_t>(u);
            tx_given = true;
            break;
        case 'r':
            if (!parse_u64(optarg, 16384, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..16384");
            opt.rx_depth = static_cast<uint32_t>(u);
            break;
        case 'l':
            if (!parse_u64(optarg, 16384, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..16384");
            opt.post_list = static_cast<uint32_t>(u);
            break;
        case 'Q':
            if (!parse_u64(optarg, 16384, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..16384");
            opt.cq_mod = static_cast<uint32_t>(u);
            cq_mod_given = true;
            break;
        case 'c':
            if (std::strcmp(optarg, "RC") == 0)
                opt.ud = false;
            else if (std::strcmp(optarg, "UD") == 0)
                opt.ud = true;
            else
                return bad_value(argv0, c, optarg, "RC, or UD for send_bw/send_lat");
            break;
        case 'A':
            if (std::strcmp(optarg, "FETCH_AND_ADD") == 0)
                opt.atomic_cas = false;
            else if (std::strcmp(optarg, "CMP_AND_SWAP") == 0)
                opt.atomic_cas = true;
            else
                return bad_value(argv0, c, optarg, "FETCH_AND_ADD or CMP_AND_SWAP");
            break;
        case 'o':
            if (!parse_u64(optarg, 16, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..16");
            opt.out_reads = static_cast<uint32_t>(u);
            break;
        case 'u':
            if (!parse_u64(optarg, 31, u))
                return bad_value(argv0, c, optarg, "0..31");
            opt.qp.timeout = static_cast<uint8_t>(u);
            break;
        case 'h':
            print_usage(argv0, stdout);
            return ParseResult::ExitOk;
        case kOptReportGbits:
            opt.report_gbits = true;
            break;
        case kOptOutJson:
            opt.out_json = true;
            break;
        case kOptOutJsonFile:
            opt.out_json = true;
            opt.out_json_file = optarg;
            break;
        case kOptRunInfinitely:
            opt.run_infinitely = true;
            break;
        case kOptCmResponseTimeout:
            if (!parse_u64(optarg, 31, u))
                return bad_value(argv0, c, optarg, "0..31 (4.096 us x 2^n)");
            opt.cm_response_timeout = static_cast<uint8_t>(u);
            break;
        case kOptCmRetries:
            if (!parse_u64(optarg, 15, u))
                return bad_value(argv0, c, optarg, "0..15");
            opt.cm_retries = static_cast<uint8_t>(u);
            break;
        case kOptBufMalloc:
            opt.buf_malloc = true;
            break;
        case kOptWorkers:
            if (!parse_u64(optarg, kMaxWorkers, u))
                return bad_value(argv0, c, optarg, "0..128 (0 = one per EAL worker lcore)");
            opt.workers = static_cast<uint32_t>(u);
            break;
        default:
            if (std::string err = app::take_device_option(c, optarg, ours.data(),
                                                          kLongOptions.data(), opt, kDeviceRules);
                !err.empty())
                return bad(argv0, err);
            break;
        }
    }
    if (std::string err = app::take_host_operand(our_argc, ours.data(), opt.servername);
        !err.empty())
        return bad(argv0, err);

    // perftest's per-test defaults.
    if (opt.verb == Verb::Atomic) {
        if (opt.size_given && opt.size != 8)
            return bad(argv0, "atomic tests use 8-byte messages: drop -s or give -s 8");
        if (opt.all_sizes)
            return bad(argv0, "-a (all sizes) does not apply to atomic tests");
        opt.size = 8;
    } else if (!opt.size_given) {
        opt.size = opt.kind == Kind::Lat ? 2 : 65536;
    }
    if (opt.ud && opt.verb != Verb::Send)
        return bad(argv0, "-c UD applies to send_bw and send_lat only (UD has no RDMA)");
    if (opt.rdma_cm && opt.ud)
        return bad(argv0, "-R with -c UD is not supported (RC QPs only)");
    if (opt.rdma_cm && opt.loopback)
        return bad(argv0, "-R and --loopback exclude each other");
    if (opt.iters == 0)
        opt.iters = opt.kind == Kind::Lat ? 1000 : 5000;
    if (opt.kind == Kind::Lat && !tx_given)
        opt.tx_depth = 1;
    /* perftest: the latency tests signal every WR; cq_mod is capped at the send depth
     * (a QP could never post past an unsignaled window). Unless given, also at a quarter
     * of it: a QP refills only when a signaled WR completes, so perftest's 100 of 128
     * leaves 28 WRs in flight per refill, which starves a software peer (64 B write_bw
     * over net_memif: 3.7 M msgs/s at 100, 6.3 at 32, 5.8 at 1). */
    if (opt.kind == Kind::Lat)
        opt.cq_mod = 1;
    else if (!cq_mod_given)
        opt.cq_mod = std::max(1u, std::min(opt.cq_mod, opt.tx_depth / 4));
    else
        opt.cq_mod = std::min(opt.cq_mod, opt.tx_depth);
    /* perftest's post list: BW tests only, whole lists (-n a multiple of the list), the
     * CQ moderation the list's size unless given, and then a divisor of it (every list
     * ends on a signaled WR). A list must also fit in the send queue. */
    if (opt.post_list > 1) {
        if (opt.kind != Kind::Bw)
            return bad(argv0, "-l/--post_list applies to bw tests only");
        if (opt.duration_s == 0 && !opt.run_infinitely && opt.iters % opt.post_list != 0)
            return bad(argv0, "-n (" + std::to_string(opt.iters) +
                                  ") must be a multiple of -l/--post_list (" +
                                  std::to_string(opt.post_list) + ")");
        if (opt.post_list > opt.tx_depth)
            return bad(argv0, "-l/--post_list (" + std::to_string(opt.post_list) +
                                  ") above -t/--tx-depth (" + std::to_string(opt.tx_depth) +
                                  "): a list must fit in the send queue");
        if (!cq_mod_given) {
            opt.cq_mod = opt.post_list;
            opt.cq_mod_from_post_list = true;
        } else if (opt.post_list % opt.cq_mod != 0) {
            return bad(argv0, "-l/--post_list (" + std::to_string(opt.post_list) +
                                  ") must be a multiple of -Q/--cq-mod (" +
                                  std::to_string(opt.cq_mod) + ")");
        }
    }
    if (opt.run_infinitely) {
        if (opt.kind != Kind::Bw)
            return bad(argv0, "--run_infinitely applies to bw tests only");
        if (opt.duration_s == 0)
            opt.duration_s = 5;
        if (!opt.timeout_given)
            opt.timeout_s = 0;
    }
    if (opt.duration_s > 0 && opt.all_sizes)
        return bad(argv0, "-D and -a exclude each other");
    if (opt.duration_s > 0 && opt.timeout_given && opt.timeout_s > 0 &&
        opt.timeout_s < opt.duration_s && !opt.run_infinitely)
        return bad(argv0, "--timeout is shorter than -D");
    if (opt.duration_s > 0 && !opt.timeout_given)
        opt.timeout_s = opt.duration_s + 120;

    // Embedded mode has exactly one worker (the application's loop): more need lcores.
    if (opt.workers != 1) {
        if (opt.embedded_given)
            return bad(argv0, "--workers other than 1 needs worker mode: drop --embedded");
        opt.worker = true;
    }
    if (std::string err = app::finish_device_options(opt, !opt.servername.empty(), kDeviceRules);
        !err.empty())
        return bad(argv0, err);
    if (opt.eal_defaulted && opt.workers > 1) {
        /* Default EAL arguments and several workers: one lcore per worker plus the main
         * one, mapped round-robin onto the CPUs there are (lcore i on CPU i % CPUs). */
        const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
        std::string map;
        for (uint32_t l = 0; l <= opt.workers; ++l) {
            /* Appended piece by piece: GCC 12 flags `"," + std::string&&` here with a
             * false -Wrestrict once this function's inlining changes. */
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
    return ParseResult::Run;
}

} // namespace droce::perf
