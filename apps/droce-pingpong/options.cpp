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
#include "path_mtu.h"

namespace droce::pingpong {

namespace {

using app::parse_i64;
using app::parse_u64;

const app::DeviceOptionRules kDeviceRules = {
    .check_address_syntax = true,
    .loopback_addresses = " (10.0.0.1/24, 10.0.0.2/24)",
    .embedded_without_eal_args = false,
    .coremask_single_lcore = true,
};

/** The help's text column ("  -p, --port=<port>" and its padding). */
constexpr size_t kHelpColumn = 25;

/** What parsing learns beyond the settings. */
struct Given {
    bool size = false;
    uint32_t mtu_bytes = 0; /**< -m (0: not given) */
};

/** -i: ibv_rc_pingpong takes any port number; droce devices have one. */
std::string take_ib_port(const char *v, Options &opt) {
    int64_t s = 0;
    if (!parse_i64(v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max(), s))
        return "a number";
    if (s != 1)
        return "droce devices have one port: 1";
    opt.ib_port = 1;
    return "";
}

/** -g: ibv_rc_pingpong's -1 (no GID) is InfiniBand only. */
std::string take_gid_index(const char *v, Options &opt) {
    int64_t s = 0;
    if (!parse_i64(v, -1, 255, s))
        return "a GID index 0..255";
    if (s < 0)
        return "RoCE needs a GID; droce has 0 = link-local, 1 = IPv4-mapped";
    opt.gid_idx = static_cast<int>(s);
    return "";
}

/** ibv_rc_pingpong's options, as it spells them. */
std::vector<app::OptionSpec> option_table(Options &opt, Given &given) {
    using namespace app;
    return {
        uint_option("port", 'p', opt.tcp_port, 1, 65535, "<port>",
                    "listen on/connect to port <port> (default 18515)"),
        string_option("ib-dev", 'd', opt.ib_dev, "<dev>",
                      "use droce device <dev> (default the one opened)"),
        custom_option(
            "ib-port", 'i', [&opt](const char *v) { return take_ib_port(v, opt); }, "<port>",
            "use port <port> of the device (must be 1)"),
        uint_option("size", 's', opt.size, 0, 1u << 30, "<size>",
                    "size of message to exchange (default 4096)")
            .set_why("0..1073741824 bytes")
            .set_given(given.size),
        uint_option("mtu", 'm', given.mtu_bytes, 256, 4096, "<size>",
                    "path MTU: 256, 512, 1024, 2048, 4096 (default 1024)")
            .set_accept(app::is_path_mtu)
            .set_why("256, 512, 1024, 2048 or 4096"),
        uint_option("rx-depth", 'r', opt.rx_depth, 1, 1u << 20, "<dep>",
                    "number of receives to post at a time (default 500)"),
        uint_option("iters", 'n', opt.iters, 1, std::numeric_limits<int32_t>::max(), "<iters>",
                    "number of exchanges (default 1000)"),
        uint_option("sl", 'l', opt.sl, 0, 15, "<sl>", "service level value"),
        flag_option("events", 'e', opt.events,
                    "sleep on CQ events (a completion channel) instead of\n"
                    "polling the CQ (needs the worker: not --embedded)"),
        custom_option(
            "gid-idx", 'g', [&opt](const char *v) { return take_gid_index(v, opt); }, "<idx>",
            "local port gid index (default 1 = the IPv4-mapped GID,\n"
            "0 = link-local IPv6, 2.. = --ip IPv6 addresses;\n"
            "RoCE needs a GID: run the peer with -g 1 too)"),
        flag_option("chk", 'c', opt.validate,
                    "validate received buffer (as ibv_rc_pingpong; droce\n"
                    "also exits 1 when the check fails)"),
        flag_action(
            "odp", 'o', [] { return std::string("droce does not support on-demand paging"); },
            "not supported by droce (error)"),
        flag_action(
            "ts", 't', [] { return std::string("droce does not support completion timestamps"); },
            "not supported by droce (error)"),
        help_option("help", 'h', "this text"),
        help_option(nullptr, 'H', "this text").set_hidden(),
        flag_option("ud", 0, opt.ud,
                    "ibv_ud_pingpong instead: a UD QP (Q_Key 0x11111111), the\n"
                    "same flags and TCP exchange; -s defaults to 2048 and\n"
                    "must fit the active MTU"),
    };
}

ParseResult bad(const char *argv0, const std::string &msg) {
    std::fprintf(stderr, "%s: %s\n", argv0, msg.c_str());
    print_usage(argv0, stderr);
    return ParseResult::ExitError;
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
        "Options (as ibv_rc_pingpong):\n",
        argv0, argv0, argv0, argv0, argv0);
    Options scratch; /* the table's help does not depend on the values */
    Given given;
    std::fputs(app::options_help(option_table(scratch, given), kHelpColumn).c_str(), out);
    std::fputs(
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
        out);
}

namespace {

/** --config first: every flag then overrides the file. */
std::string load_config(int argc, char **argv, Options &opt) {
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
    return app::load_config_option(argc, argv, opt, "droce-pingpong", tool_keys);
}

} // namespace

ParseResult parse_command_line(int argc, char **argv, Options &opt) {
    const char *argv0 = argc > 0 ? argv[0] : "droce-pingpong";

    // Split at the first "--": EAL args before it, ours after. Without "--", all ours.
    app::SplitArgs split = app::split_at_dashdash(argc, argv, 1);
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
    if (given.mtu_bytes != 0)
        opt.mtu = app::path_mtu_of_bytes(given.mtu_bytes);
    if (opt.ud && !given.size)
        opt.size = 2048; /* ibv_ud_pingpong's default */
    if (std::string err = app::take_host_operand(r.operands, opt.servername); !err.empty())
        return bad(argv0, err);
    if (std::string err = app::finish_device_options(opt, !opt.servername.empty(), kDeviceRules);
        !err.empty())
        return bad(argv0, err);
    if (opt.events && opt.embedded)
        return bad(argv0, "-e/--events sleeps until a completion event, and in embedded mode "
                          "nothing runs the engine meanwhile: add --worker (or drop --embedded)");
    return ParseResult::Run;
}

} // namespace droce::pingpong
