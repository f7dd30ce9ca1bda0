/* SPDX-License-Identifier: BSD-3-Clause */
#include "options.h"

#include <getopt.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <limits>
#include <string_view>

namespace droce::pingpong {

namespace {

/** EAL arguments used when the command line gives none. --no-shconf keeps several
 * droce processes (and other DPDK users) from fighting over /var/run/dpdk/rte. */
const char *const kDefaultEalEmbedded[] = {"-l",
                                           "0",
                                           "--no-huge",
                                           "-m",
                                           "512",
                                           "--no-pci",
                                           "--no-shconf",
                                           "--log-level=*:warning"};
const char *const kDefaultEalWorker[] = {"-l",
                                         "0,1",
                                         "--no-huge",
                                         "-m",
                                         "512",
                                         "--no-pci",
                                         "--no-shconf",
                                         "--log-level=*:warning"};

enum LongOnly : int {
    kOptDpdkPort = 1000,
    kOptIp,
    kOptMac,
    kOptEthMtu,
    kOptCounters,
    kOptEmbedded,
    kOptWorker,
    kOptLoopback,
    kOptBusyPoll,
    kOptTimeout,
    kOptLogLevel,
};

const struct option kLongOptions[] = {
    {"port", required_argument, nullptr, 'p'},
    {"ib-dev", required_argument, nullptr, 'd'},
    {"ib-port", required_argument, nullptr, 'i'},
    {"size", required_argument, nullptr, 's'},
    {"mtu", required_argument, nullptr, 'm'},
    {"rx-depth", required_argument, nullptr, 'r'},
    {"iters", required_argument, nullptr, 'n'},
    {"sl", required_argument, nullptr, 'l'},
    {"events", no_argument, nullptr, 'e'},
    {"gid-idx", required_argument, nullptr, 'g'},
    {"chk", no_argument, nullptr, 'c'},
    {"odp", no_argument, nullptr, 'o'},
    {"ts", no_argument, nullptr, 't'},
    {"help", no_argument, nullptr, 'h'},
    {"dpdk-port", required_argument, nullptr, kOptDpdkPort},
    {"ip", required_argument, nullptr, kOptIp},
    {"mac", required_argument, nullptr, kOptMac},
    {"eth-mtu", required_argument, nullptr, kOptEthMtu},
    {"counters", no_argument, nullptr, kOptCounters},
    {"embedded", no_argument, nullptr, kOptEmbedded},
    {"worker", no_argument, nullptr, kOptWorker},
    {"loopback", no_argument, nullptr, kOptLoopback},
    {"busy-poll", no_argument, nullptr, kOptBusyPoll},
    {"timeout", required_argument, nullptr, kOptTimeout},
    {"log-level", required_argument, nullptr, kOptLogLevel},
    {nullptr, 0, nullptr, 0},
};

const char kShortOptions[] = ":p:d:i:s:m:r:n:l:eg:cotHh";

/** Strict unsigned parse (decimal, 0x hex, 0 octal like strtoul(..., 0)). */
bool parse_u64(const char *s, uint64_t max, uint64_t &out) {
    if (s == nullptr || *s == '\0' || *s == '-' || *s == '+')
        return false;
    errno = 0;
    char *end = nullptr;
    const unsigned long long v = std::strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || v > max)
        return false;
    out = v;
    return true;
}

bool parse_i64(const char *s, int64_t min, int64_t max, int64_t &out) {
    if (s == nullptr || *s == '\0')
        return false;
    errno = 0;
    char *end = nullptr;
    const long long v = std::strtoll(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return false;
    out = v;
    return true;
}

/** The option as the user spelled it, for messages: "-s/--size". */
std::string option_name(int c) {
    for (const auto *o = kLongOptions; o->name != nullptr; ++o) {
        if (o->val == c) {
            if (c < 256)
                return std::string("-") + static_cast<char>(c) + "/--" + o->name;
            return std::string("--") + o->name;
        }
    }
    return std::string("-") + static_cast<char>(c);
}

ParseResult bad(const char *argv0, const std::string &msg) {
    std::fprintf(stderr, "%s: %s\n", argv0, msg.c_str());
    print_usage(argv0, stderr);
    return ParseResult::ExitError;
}

ParseResult bad_value(const char *argv0, int c, const char *value, const char *why) {
    return bad(argv0, "invalid value '" + std::string(value ? value : "") + "' for " +
                          option_name(c) + " (" + why + ")");
}

/** True when the EAL arguments name exactly one lcore (-l N, -lN, --lcores N, -c with one
 * bit): then there is no worker lcore and embedded mode is the only one that can work. */
bool eal_single_lcore(const std::vector<std::string> &eal) {
    auto single_list = [](const std::string &v) {
        return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
    };
    for (size_t i = 0; i < eal.size(); ++i) {
        const std::string &a = eal[i];
        const std::string next = i + 1 < eal.size() ? eal[i + 1] : "";
        if (a == "-l" || a == "--lcores")
            return single_list(next);
        if (a.rfind("--lcores=", 0) == 0)
            return single_list(a.substr(9));
        if (a.size() > 2 && a.rfind("-l", 0) == 0 && a[2] != '-')
            return single_list(a.substr(2));
        if (a == "-c") {
            char *end = nullptr;
            const unsigned long long m = std::strtoull(next.c_str(), &end, 16);
            return end != next.c_str() && *end == '\0' && m != 0 && (m & (m - 1)) == 0;
        }
    }
    return false;
}

} // namespace

void print_usage(const char *argv0, FILE *out) {
    std::fprintf(
        out,
        "Usage:\n"
        "  %s [EAL args] -- [options]             start a server and wait for connection\n"
        "  %s [EAL args] -- [options] <host>      connect to server at <host>\n"
        "  %s [EAL args] -- --loopback [options]  in-process demo: two devices on a\n"
        "                                         net_ring pair, server and client in one thread\n"
        "\n"
        "EAL args (before --) go to DPDK. With none, droce-pingpong uses\n"
        "  -l 0 --no-huge -m 512 --no-pci --no-shconf --file-prefix droce-<pid>\n"
        "  --log-level=*:warning\n"
        "(-l 0,1 in worker mode). No hugepages are needed: e.g.\n"
        "  %s -l 0 --no-huge -m 512 --no-pci --no-shconf -- --loopback -c\n"
        "Against a peer on a tap (the kernel keeps TCP, droce gets UDP 4791):\n"
        "  %s -l 0,1 --no-huge -m 512 --no-pci --no-shconf --vdev net_af_packet0,iface=tap0 \\\n"
        "     -- --ip 10.77.0.100/24 --mac 02:00:00:00:01:00 -g 1 10.77.0.2\n"
        "\n"
        "Options (as ibv_rc_pingpong):\n"
        "  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n"
        "  -d, --ib-dev=<dev>     use droce device <dev> (default the one opened)\n"
        "  -i, --ib-port=<port>   use port <port> of the device (must be 1)\n"
        "  -s, --size=<size>      size of message to exchange (default 4096)\n"
        "  -m, --mtu=<size>       path MTU: 256, 512, 1024, 2048, 4096 (default 1024)\n"
        "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n"
        "  -n, --iters=<iters>    number of exchanges (default 1000)\n"
        "  -l, --sl=<sl>          service level value\n"
        "  -e, --events           accepted; droce waits by polling with backoff\n"
        "  -g, --gid-idx=<idx>    local port gid index (default 1 = the IPv4-mapped GID;\n"
        "                         RoCE needs a GID: run the peer with -g 1 too)\n"
        "  -c, --chk              validate received buffer (as ibv_rc_pingpong; droce\n"
        "                         also exits 1 when the check fails)\n"
        "  -o, --odp              not supported by droce (error)\n"
        "  -t, --ts               not supported by droce (error)\n"
        "  -h, --help             this text\n"
        "\n"
        "droce options:\n"
        "  --dpdk-port=<name|id>  DPDK port to use (default the first)\n"
        "  --ip=<A.B.C.D/P>       droce's IPv4 address (required except with --loopback)\n"
        "  --mac=<MAC>            droce's MAC (default the port's)\n"
        "  --eth-mtu=<n>          Ethernet MTU (default the port's)\n"
        "  --counters             print all device counters at exit\n"
        "  --embedded             no worker lcore: this thread runs the engine's poll loop\n"
        "                         (the default with --loopback or a single EAL lcore, -l N)\n"
        "  --worker               worker-lcore mode even with --loopback (needs 2 lcores)\n"
        "  --busy-poll            never sleep while idle (lowest latency, burns a core)\n"
        "  --timeout=<sec>        give up after <sec> seconds (default 60; 0 = never)\n"
        "  --log-level=<lvl>      droce log level: trace..off (default warn)\n"
        "  --loopback             the demo: 10.0.0.1/24 (server) and 10.0.0.2/24 (client)\n"
        "                         on two back-to-back net_ring ports, no TCP\n",
        argv0, argv0, argv0, argv0, argv0);
}

ParseResult parse_command_line(int argc, char **argv, Options &opt) {
    const char *argv0 = argc > 0 ? argv[0] : "droce-pingpong";

    // Split at the first "--": EAL args before it, ours after. Without "--", all ours.
    int dashdash = -1;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--") == 0) {
            dashdash = i;
            break;
        }
    }
    std::vector<char *> ours;
    ours.push_back(argv[0]);
    if (dashdash >= 0) {
        for (int i = 1; i < dashdash; ++i)
            opt.eal_args.emplace_back(argv[i]);
        for (int i = dashdash + 1; i < argc; ++i)
            ours.push_back(argv[i]);
    } else {
        for (int i = 1; i < argc; ++i)
            ours.push_back(argv[i]);
    }
    ours.push_back(nullptr);
    const int our_argc = static_cast<int>(ours.size()) - 1;

    bool embedded_given = false;
    opterr = 0;
    optind = 1;
    while (true) {
        int longind = -1;
        const int c = getopt_long(our_argc, ours.data(), kShortOptions, kLongOptions, &longind);
        if (c == -1)
            break;
        uint64_t u = 0;
        int64_t s = 0;
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
            if (!parse_i64(optarg, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(),
                           s))
                return bad_value(argv0, c, optarg, "a number");
            if (s != 1)
                return bad_value(argv0, c, optarg, "droce devices have one port: 1");
            opt.ib_port = 1;
            break;
        case 's':
            if (!parse_u64(optarg, 1u << 30, u))
                return bad_value(argv0, c, optarg, "0..1073741824 bytes");
            opt.size = static_cast<uint32_t>(u);
            break;
        case 'm':
            if (!parse_u64(optarg, 4096, u))
                return bad_value(argv0, c, optarg, "256, 512, 1024, 2048 or 4096");
            switch (u) {
            case 256:
                opt.mtu = Mtu::Mtu256;
                break;
            case 512:
                opt.mtu = Mtu::Mtu512;
                break;
            case 1024:
                opt.mtu = Mtu::Mtu1024;
                break;
            case 2048:
                opt.mtu = Mtu::Mtu2048;
                break;
            case 4096:
                opt.mtu = Mtu::Mtu4096;
                break;
            default:
                return bad_value(argv0, c, optarg, "256, 512, 1024, 2048 or 4096");
            }
            break;
        case 'r':
            if (!parse_u64(optarg, 1u << 20, u) || u == 0)
                return bad_value(argv0, c, optarg, "1..1048576");
            opt.rx_depth = static_cast<uint32_t>(u);
            break;
        case 'n':
            if (!parse_u64(optarg, std::numeric_limits<int32_t>::max(), u) || u == 0)
                return bad_value(argv0, c, optarg, "1..2147483647");
            opt.iters = static_cast<uint32_t>(u);
            break;
        case 'l':
            if (!parse_u64(optarg, 15, u))
                return bad_value(argv0, c, optarg, "0..15");
            opt.sl = static_cast<int>(u);
            break;
        case 'e':
            opt.events = true;
            break;
        case 'g':
            if (!parse_i64(optarg, -1, 255, s))
                return bad_value(argv0, c, optarg, "a GID index 0..255");
            if (s < 0)
                return bad_value(argv0, c, optarg,
                                 "RoCE needs a GID; droce has 0 = link-local, 1 = IPv4-mapped");
            opt.gid_idx = static_cast<int>(s);
            break;
        case 'c':
            opt.validate = true;
            break;
        case 'o':
            return bad(argv0, "-o/--odp: droce does not support on-demand paging");
        case 't':
            return bad(argv0, "-t/--ts: droce does not support completion timestamps");
        case 'h':
        case 'H':
            print_usage(argv0, stdout);
            return ParseResult::ExitOk;
        case kOptDpdkPort:
            opt.dpdk_port = optarg;
            break;
        case kOptIp: {
            unsigned a, b, c2, d, p;
            char tail;
            if (std::sscanf(optarg, "%u.%u.%u.%u/%u%c", &a, &b, &c2, &d, &p, &tail) != 5 ||
                a > 255 || b > 255 || c2 > 255 || d > 255 || p > 32)
                return bad_value(argv0, c, optarg, "A.B.C.D/P");
            opt.ip = optarg;
            break;
        }
        case kOptMac: {
            unsigned m[6];
            char tail;
            if (std::sscanf(optarg, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5],
                            &tail) != 6 ||
                m[0] > 255 || m[1] > 255 || m[2] > 255 || m[3] > 255 || m[4] > 255 || m[5] > 255)
                return bad_value(argv0, c, optarg, "xx:xx:xx:xx:xx:xx");
            opt.mac = optarg;
            break;
        }
        case kOptEthMtu:
            if (!parse_u64(optarg, 9600, u) || u < 576)
                return bad_value(argv0, c, optarg, "576..9600");
            opt.eth_mtu = static_cast<uint32_t>(u);
            break;
        case kOptCounters:
            opt.counters = true;
            break;
        case kOptEmbedded:
            opt.embedded = true;
            embedded_given = true;
            break;
        case kOptWorker:
            opt.worker = true;
            break;
        case kOptLoopback:
            opt.loopback = true;
            break;
        case kOptBusyPoll:
            opt.busy_poll = true;
            break;
        case kOptTimeout: {
            errno = 0;
            char *end = nullptr;
            const double t = std::strtod(optarg, &end);
            if (errno != 0 || end == optarg || *end != '\0' || !(t >= 0) || t > 1e6)
                return bad_value(argv0, c, optarg, "seconds, 0 = never");
            opt.timeout_s = t;
            break;
        }
        case kOptLogLevel: {
            static const char *const levels[] = {"trace",   "debug", "info",     "warn",
                                                 "warning", "error", "critical", "off"};
            bool ok = false;
            for (const char *l : levels)
                ok = ok || std::strcmp(l, optarg) == 0;
            if (!ok)
                return bad_value(argv0, c, optarg, "trace, debug, info, warn, error, off");
            opt.log_level = std::strcmp(optarg, "warning") == 0 ? "warn" : optarg;
            break;
        }
        case ':': {
            const char *name = ours[optind - 1];
            return bad(argv0, std::string("option '") + name + "' needs a value");
        }
        case '?':
        default: {
            const char *arg = ours[optind - 1];
            if (std::strncmp(arg, "--", 2) == 0)
                return bad(argv0, std::string("unknown option or unexpected value '") + arg + "'");
            if (optopt > 0 && optopt < 256)
                return bad(argv0,
                           std::string("unknown option '-") + static_cast<char>(optopt) + "'");
            return bad(argv0, std::string("unknown option '") + ours[optind - 1] + "'");
        }
        }
    }

    if (optind == our_argc - 1)
        opt.servername = ours[optind];
    else if (optind < our_argc)
        return bad(argv0, std::string("unexpected argument '") + ours[optind + 1] +
                              "' (only one <host> is allowed)");

    if (opt.worker && embedded_given)
        return bad(argv0, "--worker and --embedded exclude each other");
    if (opt.loopback && !opt.servername.empty())
        return bad(argv0, "--loopback runs both sides: do not give a <host>");
    if (opt.loopback && (!opt.ip.empty() || !opt.mac.empty() || !opt.dpdk_port.empty()))
        return bad(argv0, "--loopback sets its own ports and addresses (10.0.0.1/24, "
                          "10.0.0.2/24): drop --ip/--mac/--dpdk-port");
    if (opt.loopback && !opt.worker)
        opt.embedded = true;
    if (!opt.loopback && opt.ip.empty())
        return bad(argv0, "--ip A.B.C.D/P is required (droce's own address, not the host's)");

    // Worker mode needs a second lcore: with exactly one, run embedded.
    if (!opt.worker && !opt.embedded && eal_single_lcore(opt.eal_args))
        opt.embedded = true;
    if (opt.eal_args.empty()) {
        opt.eal_defaulted = true;
        if (opt.embedded)
            opt.eal_args.assign(std::begin(kDefaultEalEmbedded), std::end(kDefaultEalEmbedded));
        else
            opt.eal_args.assign(std::begin(kDefaultEalWorker), std::end(kDefaultEalWorker));
        /* A runtime directory of our own: EAL telemetry (what droce-info asks) works
         * there with --no-shconf, and concurrent processes do not share its socket. */
        opt.eal_args.push_back("--file-prefix=droce-" + std::to_string(getpid()));
    }
    return ParseResult::Run;
}

} // namespace droce::pingpong
