/* SPDX-License-Identifier: BSD-3-Clause */
#include "nvmf_options.h"

#include <cstdio>
#include <string>
#include <vector>

#include "config_device.h"
#include "eal_args.h"
#include "option_table.h"

namespace droce::nvmf {

namespace {

const app::DeviceOptionRules kRules{};

bool is_power_of_two(uint64_t u) { return (u & (u - 1)) == 0; }

/** The target's options. */
std::vector<app::OptionSpec> option_table(Options &o, bool &hosts_given) {
    using namespace app;
    return {
        size_option("ram", 0, o.ram, 1, 1ull << 50, "SIZE",
                    "RAM disk of SIZE bytes (K/M/G suffixes)"),
        string_option("file", 0, o.file, "PATH",
                      "file or block device, O_DIRECT on a worker thread"),
        size_option("size", 0, o.size, 0, 1ull << 50, "SIZE",
                    "--file: its size (a shorter regular file is extended)"),
        custom_option(
            "namespace", 0,
            [&o](const char *v) {
                NamespaceSpec ns;
                std::string why = parse_namespace_spec(v, ns);
                if (why.empty())
                    o.namespaces.push_back(ns);
                return why;
            },
            "SPEC",
            "one more namespace: ram:SIZE or file:PATH[,size=SIZE]\n"
            "(repeatable; any of these replace the --config file's)"),
        uint_option("port", 'p', o.port, 1, 65535, "N", "RDMA-CM port (default 4420)"),
        string_option("nqn", 0, o.nqn, "NQN", "subsystem NQN (default nqn.2026-11.io.droce:nvmf0)"),
        string_option("serial", 0, o.serial, "S", "serial number"),
        list_option("host", 0, o.hosts, "NQN", "allow this host NQN (repeatable; none: any host)")
            .set_given(hosts_given),
        uint_option("block-size", 0, o.block_size, 512, 4096, "N", "512 or 4096 (default 512)")
            .set_accept([](uint64_t u) { return u == 512 || u == 4096; })
            .set_why("512 or 4096"),
        uint_option("io-queues", 0, o.io_queues, 1, 64, "N",
                    "I/O queues per controller (default 8)"),
        uint_option("mdts", 0, o.mdts, 4096, 1u << 20, "BYTES",
                    "largest transfer, power of two (default 131072)")
            .set_accept(is_power_of_two)
            .set_why("power of two, 4096..1M"),
        uint_option("in-capsule", 0, o.in_capsule, 0, 65536, "BYTES",
                    "in-capsule data per command (default 8192)")
            .set_accept([](uint64_t u) { return u % 16 == 0; })
            .set_why("multiple of 16, <= 65536"),
        flag_option(nullptr, 'v', o.verbose, "log connections"),
        help_option("help", 'h', "this text"),
    };
}

void usage(const char *argv0, FILE *f) {
    std::fprintf(f,
                 "Usage: %s [EAL args --] (--ram SIZE | --file PATH [--size SIZE] | --namespace "
                 "SPEC...)\n"
                 "       [options]   (namespaces: --ram, then --file, then each --namespace: "
                 "NSID 1, 2..)\n",
                 argv0);
    Options scratch; /* the table's help does not depend on the values */
    bool given = false;
    std::fputs(app::options_help(option_table(scratch, given)).c_str(), f);
    std::fputs(
        "droce device options: --dpdk-port NAME|ID --ip A.B.C.D/P [--mac M] [--eth-mtu N]\n"
        "  [--embedded|--worker] [--timeout S] [--counters] [--log-level L] [--config F]\n"
        "--config F: droce.conf's sections plus [nvmf] (nqn, serial, host, namespace, port)\n",
        f);
}

/** The namespaces in NSID order: the command line's (--ram, then --file, then each
 * --namespace) replace the file's. "" or the error. */
std::string settle_namespaces(Options &o, const NvmfSettings &file) {
    std::vector<NamespaceSpec> cl;
    if (o.ram)
        cl.push_back({true, o.ram, ""});
    if (!o.file.empty())
        cl.push_back({false, o.size, o.file});
    cl.insert(cl.end(), o.namespaces.begin(), o.namespaces.end());
    o.namespaces = cl.empty() ? file.namespaces : cl;
    if (o.namespaces.empty())
        return "no namespace: give --ram SIZE, --file PATH, --namespace SPEC or [nvmf] "
               "namespace in --config";
    if (o.namespaces.size() > kMaxNamespaces)
        return app::concat("at most ", std::to_string(kMaxNamespaces), " namespaces");
    return "";
}

} // namespace

int parse_command_line(int argc, char **argv, Options &o) {
    const char *argv0 = argv[0];
    app::SplitArgs split = app::split_at_dashdash(argc, argv, 1);
    o.eal_args = std::move(split.eal);
    /* --config first (its [nvmf] section too): the command line then overrides it. */
    NvmfSettings file;
    if (std::string err = app::load_config_option(split.ours_argc(), split.ours.data(), o,
                                                  "droce-nvmf", {}, {nvmf_config_section(file)});
        !err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return 1;
    }
    o.nqn = file.nqn;
    o.serial = file.serial;
    o.port = file.port;
    bool hosts_given = false;
    const app::ExtraOptions device = app::device_option_extras(o, kRules);
    const app::ParseOutcome r = app::parse_options(option_table(o, hosts_given), split.ours_argc(),
                                                   split.ours.data(), &device);
    if (r.status == app::ParseStatus::Help) {
        usage(argv0, stdout);
        return 2;
    }
    std::string err = r.message;
    if (err.empty() && !r.operands.empty())
        err = app::concat("unexpected argument '", r.operands[0],
                          "' (droce-nvmf takes options only)");
    if (!err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        usage(argv0, stderr);
        return 1;
    }
    if (!hosts_given)
        o.hosts = file.hosts;
    if (err = settle_namespaces(o, file); err.empty() && o.loopback)
        err = "--loopback is not supported";
    if (err.empty())
        err = app::finish_device_options(o, false, kRules);
    if (!err.empty()) {
        std::fprintf(stderr, "%s: %s\n", argv0, err.c_str());
        return 1;
    }
    return 0;
}

} // namespace droce::nvmf
