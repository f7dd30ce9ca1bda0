/* SPDX-License-Identifier: BSD-3-Clause */
#include "options.h"

#include <getopt.h>

#include <cstdio>
#include <limits>

#include "cli_numbers.h"
#include "cli_options.h"
#include "config_device.h"
#include "device_options.h"
#include "eal_args.h"

namespace droce::pingpong {

namespace {

using app::parse_i64;
using app::parse_u64;

constexpr int kOptUd = 2000; /* past the shared device options' values */

const app::DeviceOptionRules kDeviceRules = {
    .check_address_syntax = true,
    .loopback_addresses = " (10.0.0.1/24, 10.0.0.2/24)",
    .embedded_without_eal_args = false,
    .coremask_single_lcore = true,
};

const std::vector<struct option> kLongOptions = app::with_device_options({
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
    {"ud", no_argument, nullptr, kOptUd},
});

const char kShortOptions[] = ":p:d:i:s:m:r:n:l:eg:cotHh";

ParseResult bad(const char *argv0, const std::string &msg) {
    std::fprintf(stderr, "%s: %s\n", argv0, msg.c_str());
    print_usage(argv0, stderr);
    return ParseResult::ExitError;
}

ParseResult bad_value(const char *argv0, int c, const char *value, const char *why) {
    return bad(argv0, app::invalid_value_message(kLongOptions.data(), c, value, why));
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
        "  -l 0 --no-huge -m 512 --no-pci --no-shconf --file-prefix=droce-<pid> "
        "--log-level=*:warning\n"
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
        "  -g, --gid-idx=<idx>    local port gid index (default 1 = the IPv4-mapped GID,\n"
        "                         0 = link-local IPv6, 2.. = --ip IPv6 addresses;\n"
        "                         RoCE needs a GID: run the peer with -g 1 too)\n"
        "  -c, --chk              validate received buffer (as ibv_rc_pingpong; droce\n"
        "                         also exits 1 when the check fails)\n"
        "  -o, --odp              not supported by droce (error)\n"
        "  -t, --ts               not supported by droce (error)\n"
        "  -h, --help             this text\n"
        "  --ud                   ibv_ud_pingpong instead: a UD QP (Q_Key 0x11111111), the\n"
        "                         same flags and TCP exchange; -s defaults to 2048 and\n"
        "                         must fit the active MTU\n"
        "\n"
        "droce options:\n"
        "  --dpdk-port=<name|id>  DPDK port to use (default the first)\n"
        "  --ip=<A.B.C.D/P>       droce's IPv4 address (required except with --loopback)\n"
        "  --ip=<X:Y::Z/P>        an IPv6 address too (repeatable): GIDs 2.. (GID 0 is the\n"
        "                         link-local fe80:: one); -g picks the GID and so IPv4/IPv6\n"
        "                         (X:Y::Z/P@VID: on its own VLAN, a VLAN per GID)\n"
        "  --gid-type=v1|v2       v1: RoCEv1 GIDs too, after the v2 ones (droce only)\n"
        "  --gateway=<addr>       IPv4 or IPv6 default gateway for peers off the subnet\n"
        "  --vlan=<vid>           802.1Q VLAN of RoCE traffic; PCP = SL & 7 (-l)\n"
        "  --force-dscp=<d>       DSCP of every QP's packets (device-wide)\n"
        "  --force-ttl=<n>        TTL / hop limit of every QP's packets (device-wide)\n"
        "  --mac=<MAC>            droce's MAC (default the port's)\n"
        "  --eth-mtu=<n>          Ethernet MTU (default the port's)\n"
        "  --dcqcn=on|off         DCQCN congestion control (default on)\n"
        "  --dcqcn-profile=connectx|fair  DCQCN parameter set (default connectx)\n"
        "  --ecn=off|ect0|ect1    ECN field of RoCE data sent (default ect0)\n"
        "  --pfc=PRIO             PFC: ask the PMD to make priority PRIO lossless\n"
        "  --pfc-tx=XOFF,XON      send PFC for PRIO at XOFF frames in an RX queue,\n"
        "                         resume at XON (default off)\n"
        "  --dup-ack-interval-ns=N, --seq-nak-interval-ns=N, --seq-nak-after-run=N\n"
        "                         responder re-ACK / sequence-NAK pacing (defaults 50000,\n"
        "                         1000000, 3; config [qp] keys of the same names)\n"
        "  --capture=FILE.pcapng  write droce's RoCE traffic (both directions) to FILE\n"
        "  --capture-snaplen=N    bytes kept per captured frame (default whole frames)\n"
        "  --counters             print all device counters at exit\n"
        "  --embedded             no worker lcore: this thread runs the engine's poll loop\n"
        "                         (the default with --loopback or a single EAL lcore, -l N)\n"
        "  --worker               worker-lcore mode even with --loopback (needs 2 lcores)\n"
        "  --busy-poll            never sleep while idle (lowest latency, burns a core)\n"
        "  --timeout=<sec>        give up after <sec> seconds (default 60; 0 = never)\n"
        "  --log-level=<lvl>      droce log level: trace..off (default warn)\n"
        "  --config=<file>        settings from a configuration file (config/droce.conf);\n"
        "                         the flags given override it\n"
        "  --loopback             the demo: 10.0.0.1/24 (server) and 10.0.0.2/24 (client)\n"
        "                         on two back-to-back net_ring ports, no TCP\n",
        argv0, argv0, argv0, argv0, argv0);
}

ParseResult parse_command_line(int argc, char **argv, Options &opt) {
    const char *argv0 = argc > 0 ? argv[0] : "droce-pingpong";

    // Split at the first "--": EAL args before it, ours after. Without "--", all ours.
    app::SplitArgs split = app::split_at_dashdash(argc, argv, 1);
    opt.eal_args = std::move(split.eal);
    std::vector<char *> &ours = split.ours;
    const int our_argc = split.ours_argc();

    /* --config first: every flag then overrides the file. */
    const std::vector<app::ToolConfigKey> tool_keys = {
        {"port", "gid_index",
         [&opt](const std::string &v) -> std::string {
             uint64_t u = 0;
             if (!parse_u64(v.c_str(), 255, u))
                 return "want a GID index 0..255 (as -g)";
             opt.gid_idx = static_cast<int>(u);
             return "";
         }},
    };
    if (std::string err =
            app::load_config_option(our_argc, ours.data(), opt, "droce-pingpong", tool_keys);
        !err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return ParseResult::ExitError;
    }

    opterr = 0;
    optind = 1;
    bool size_given = false;
    while (true) {
        int longind = -1;
        const int c =
            getopt_long(our_argc, ours.data(), kShortOptions, kLongOptions.data(), &longind);
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
            size_given = true;
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
        case kOptUd:
            opt.ud = true;
            break;
        case 'h':
        case 'H':
            print_usage(argv0, stdout);
            return ParseResult::ExitOk;
        default:
            if (std::string err = app::take_device_option(c, optarg, ours.data(),
                                                          kLongOptions.data(), opt, kDeviceRules);
                !err.empty())
                return bad(argv0, err);
            break;
        }
    }

    if (opt.ud && !size_given)
        opt.size = 2048; /* ibv_ud_pingpong's default */
    if (std::string err = app::take_host_operand(our_argc, ours.data(), opt.servername);
        !err.empty())
        return bad(argv0, err);
    if (std::string err = app::finish_device_options(opt, !opt.servername.empty(), kDeviceRules);
        !err.empty())
        return bad(argv0, err);
    return ParseResult::Run;
}

} // namespace droce::pingpong
