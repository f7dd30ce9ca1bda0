/* SPDX-License-Identifier: BSD-3-Clause */
#include "fabric_options.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "config_device.h"
#include "fabric_config.h"
#include "option_table.h"

namespace droce::fabric_app {

namespace {

constexpr double kMaxBufferBytes = 256.0 * 1024 * 1024;
/** The help's text column (a wider option head gets its text on the next line). */
constexpr size_t kHelpColumn = 24;

/** A number lo..hi as the options take it (strtod's syntax, the whole argument). */
bool number(const std::string &v, double lo, double hi, double &out) {
    char *end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(d >= lo && d <= hi))
        return false;
    out = d;
    return true;
}

/** --to LIST: bottleneck egress ports, comma separated (replaces the default 1). */
std::string take_ports(const char *v, std::vector<uint16_t> &to) {
    static const std::string kWant =
        app::concat("port numbers 0..", std::to_string(kMaxPorts - 1), ", comma separated");
    to.clear();
    const std::string s = v;
    for (size_t pos = 0;;) {
        const size_t c = s.find(',', pos);
        double d = 0;
        if (!number(s.substr(pos, c == std::string::npos ? s.npos : c - pos), 0, kMaxPorts - 1, d))
            return kWant;
        to.push_back(static_cast<uint16_t>(d));
        if (c == std::string::npos)
            return "";
        pos = c + 1;
    }
}

/** --pfc XOFF,XON: bytes an ingress port has in a queue to pause it, and to resume. */
std::string take_pfc(const char *v, droce::fabric::BottleneckParams &bp) {
    const std::string s = v;
    const size_t c = s.find(',');
    double xoff = 0, xon = 0;
    if (c == std::string::npos || !number(s.substr(0, c), 1, kMaxBufferBytes, xoff) ||
        !number(s.substr(c + 1), 0, kMaxBufferBytes, xon))
        return app::concat("XOFF,XON in bytes, 1..",
                           std::to_string(static_cast<uint64_t>(kMaxBufferBytes)));
    bp.pfc_xoff_bytes = static_cast<uint32_t>(xoff);
    bp.pfc_xon_bytes = static_cast<uint32_t>(xon);
    return "";
}

/** The bottleneck queue: rate, buffer, RED/ECN, loss and delay. */
std::vector<app::OptionSpec> queue_table(Opts &o) {
    using namespace app;
    auto &bp = o.bp;
    return {
        custom_option(
            "to", 0, [&o](const char *v) { return take_ports(v, o.to); }, "LIST",
            "bottleneck egress ports, comma separated (default 1)"),
        flag_option("shared", 0, o.shared,
                    "one bottleneck queue for all --to ports together (the link\n"
                    "to a rack holding them: N senders to N receivers is N:1)"),
        real_option("rate-gbps", 0, bp.rate_bps, 0.001, 1000, 1e9, "R",
                    "bottleneck rate, Gb/s (default 10)"),
        real_option("buffer", 0, bp.buffer_bytes, 1, kMaxBufferBytes, 1, "BYTES",
                    "queue buffer, tail drop beyond (default 2000000)"),
        real_option("kmin", 0, bp.kmin_bytes, 0, 4e9, 1, "BYTES",
                    "RED: no marking at or below (default 5000)"),
        real_option("kmax", 0, bp.kmax_bytes, 1, 4e9, 1, "BYTES",
                    "RED: ECT frames all marked at or above (default 200000)"),
        real_option("pmax", 0, bp.pmax, 0, 1, 1, "P",
                    "RED: marking probability just below Kmax, 0..1 (default 0.05)"),
        flag_action(
            "no-ecn", 0,
            [&bp] {
                bp.ecn = false;
                return std::string();
            },
            "no RED/ECN marking (tail drop only)"),
        flag_option("red-drop", 0, bp.red_drop,
                    "drop not-ECT frames where ECT ones would be marked"),
        enum_option("mark", 0, bp.mark_at_dequeue, {{"enqueue", 0}, {"dequeue", 1}},
                    "RED on the depth found / left behind (default dequeue)"),
        real_option("loss", 0, bp.loss, 0, 1, 1, "P",
                    "random loss at the bottleneck, 0..1 (default 0)"),
        real_option("delay-us", 0, bp.delay_ns, 0, 1e7, 1000, "D",
                    "fixed delay after the queue, µs (default 0)"),
    };
}

/** Faults, PFC, sampling and the run itself. */
std::vector<app::OptionSpec> run_table(Opts &o) {
    using namespace app;
    return {
        real_option("dup", 0, o.faults.dup, 0, 1, 1, "P",
                    "duplicate frames toward a --to port, 0..1 (default 0)"),
        real_option("reorder", 0, o.faults.reorder, 0, 1, 1, "P",
                    "hold a frame toward a --to port back until the next one\n"
                    "toward that port has passed it, 0..1 (default 0)"),
        real_option("corrupt", 0, o.faults.corrupt, 0, 1, 1, "P",
                    "flip one random bit past the Ethernet header of a frame\n"
                    "toward a --to port, 0..1 (default 0)"),
        real_option("seed", 0, o.seed, 0, 1e18, 1, "N",
                    "marking/loss/fault random seed (default 1)"),
        real_option("sample-us", 0, o.sample_us, 1, 1e9, 1, "U",
                    "queue-depth sample period, µs (default 100)"),
        string_option("csv", 0, o.csv, "PATH",
                      "write depth samples: t_us,port,depth_bytes,depth_frames"),
        real_option("secs", 0, o.secs, 0, 1e9, 1, "S",
                    "stop after S seconds (default: run until SIGINT/SIGTERM)"),
        custom_option(
            "pfc", 0, [&o](const char *v) { return take_pfc(v, o.bp); }, "XOFF,XON",
            "PFC: pause an ingress port when it has XOFF bytes in a\n"
            "bottleneck queue, resume at XON (bytes, XON < XOFF <= buffer)"),
        real_option("honour-pfc", 0, o.honour_pfc, 0, 7, 1, "PRIO",
                    "a bottleneck queue obeys the PFC pause frames its egress\n"
                    "port receives for priority PRIO (0..7): it holds its\n"
                    "frames for the pause time (one FIFO: all of them)"),
        real_option("queues", 0, o.queues, 1, 16, 1, "N",
                    "RX and TX queues per port, 1..16 (default 1): a peer with\n"
                    "several queues (a droce with several workers on memif)\n"
                    "connects only with as many; all are read, queue 0 sends"),
        real_option("idle-us", 0, o.idle_us, 0, 1e6, 1, "U",
                    "sleep U µs when a poll found no frame and none was due\n"
                    "(default 0: spin). Coarsens departures to about U µs; for\n"
                    "runs with more busy processes than cores"),
        help_option("help", 'h', "this text"),
    };
}

std::vector<app::OptionSpec> option_table(Opts &o) {
    std::vector<app::OptionSpec> t = queue_table(o);
    std::vector<app::OptionSpec> r = run_table(o);
    t.insert(t.end(), r.begin(), r.end());
    return t;
}

void report(const std::string &msg) {
    std::fprintf(stderr, "droce-fabric: %s (--help lists the options)\n", msg.c_str());
}

} // namespace

void usage(FILE *f) {
    std::fputs("usage: droce-fabric [EAL args] -- [options]\n"
               "Forwards (learning switch) between every DPDK port the EAL args create; frames\n"
               "toward a --to port pass a bottleneck queue. Ports are numbered as the EAL "
               "creates\n"
               "them (the order of --vdev).\n",
               f);
    Opts scratch; /* the table's help does not depend on the values */
    std::fputs(app::options_help(option_table(scratch), kHelpColumn).c_str(), f);
    std::fputs("      --config=FILE     settings from a configuration file (config/fabric.conf:\n"
               "                        [eal] and [fabric]); the options given override it;\n"
               "                        'droce-fabric --config FILE' alone needs no '--'\n"
               "At exit one summary line per port (rx, tx, drops, bottleneck counters).\n",
               f);
}

namespace {

/** argv's "--" (argc when none; 0 for "droce-fabric --config FILE [options]", where
 * everything is ours). */
int find_dashdash(int argc, char **argv) {
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--") == 0)
            return i;
    return argc > 1 && std::strncmp(argv[1], "--config", 8) == 0 ? 0 : argc;
}

/** Our options for the table: argv[0], the file's [fabric] keys first (so that the options
 * given override them), then the options after "--" less the --config read already. */
std::vector<char *> our_arguments(int argc, char **argv, int dd, FabricConfig &cfg) {
    std::vector<char *> ours{argv[0]};
    for (auto &opt : cfg.options)
        ours.push_back(opt.data());
    for (int i = dd + 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--config") == 0) {
            ++i; /* read already */
            continue;
        }
        if (std::strncmp(argv[i], "--config=", 9) != 0)
            ours.push_back(argv[i]);
    }
    return ours;
}

/** The table's parse, then the checks across options (lib/fabric's validate). */
app::ParseResult parse_ours(std::vector<char *> &ours, Opts &o) {
    const app::ParseOutcome r =
        app::parse_options(option_table(o), static_cast<int>(ours.size()), ours.data());
    if (r.status == app::ParseStatus::Help) {
        usage(stdout);
        return app::ParseResult::ExitOk;
    }
    std::string err = r.message;
    if (err.empty() && !r.operands.empty())
        err = app::concat("unexpected argument '", r.operands[0], "'");
    if (const char *v = droce::fabric::validate(o.bp); err.empty() && v != nullptr)
        err = v;
    if (const char *v = droce::fabric::validate(o.faults); err.empty() && v != nullptr)
        err = v;
    if (!err.empty()) {
        report(err);
        return app::ParseResult::ExitError;
    }
    return app::ParseResult::Run;
}

} // namespace

app::ParseResult parse_command_line(int argc, char **argv, CommandLine &cl) {
    int dd = find_dashdash(argc, argv);
    for (int i = 1; i < dd; ++i)
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return app::ParseResult::ExitOk;
        }
    /* --config: its [fabric] keys become options; its [eal] is used when no EAL argument
     * is given. */
    std::string cfg_path, cfg_err;
    FabricConfig cfg;
    if (!app::find_config_option(argc - dd, argv + dd, cfg_path, cfg_err)) {
        report(cfg_err);
        return app::ParseResult::ExitError;
    }
    if (!cfg_path.empty()) {
        if (std::string err = load_fabric_config(cfg_path, cfg); !err.empty()) {
            std::fprintf(stderr, "droce-fabric: %s\n", err.c_str());
            return app::ParseResult::ExitError;
        }
    }
    /* Our options are checked before the EAL starts: a typo costs no EAL bring-up. */
    std::vector<char *> ours = our_arguments(argc, argv, dd, cfg);
    cl.opts = Opts{};
    if (const app::ParseResult r = parse_ours(ours, cl.opts); r != app::ParseResult::Run)
        return r;
    cl.eal.assign(argv, argv + std::max(dd, 1));
    if (dd <= 1 && cfg.eal_given)
        cl.eal.insert(cl.eal.end(), cfg.eal.begin(), cfg.eal.end());
    return app::ParseResult::Run;
}

} // namespace droce::fabric_app
