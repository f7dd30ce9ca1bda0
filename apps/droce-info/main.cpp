/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-info: ibv_devinfo -v and show_gids for droce devices, plus every counter and,
 * with -q, the state of every QP.
 *
 * A droce device lives inside the process that runs the engine, so droce-info is a
 * client of that process's DPDK telemetry socket (<runtime dir>/<file prefix>/
 * dpdk_telemetry.v2) and asks the commands the engine registers: /droce/devices,
 * /droce/info,<dev>, /droce/counters,<dev>, /droce/qps,<dev>, and /droce/cm,<dev> (the
 * RDMA-CM's counters, when the process opened a CM on the device). */
#include <getopt.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <jansson.h>

#include "config_device.h"

namespace {

struct Options {
    std::string file_prefix; /* empty: every droce process found */
    std::string socket_path;
    std::string ib_dev;
    bool qps = false;
    bool cm_all = false; /* -c: every CM counter, zeros too */
    bool list = false;
    std::string config; /* --config: the droce process's configuration file */
};

/** --config FILE: the whole file is checked as droce-perf/droce-pingpong check it; the
 * process it describes is then found by its [eal] file prefix (file_prefix, or
 * --file-prefix in args) and its device by [port] device (a name, not a port id), unless
 * -f/-p/-S or -d say otherwise. Returns "" or the error. */
std::string apply_config(Options &opt) {
    droce::app::DeviceOptions d(0);
    const std::vector<droce::app::ToolConfigKey> described = {
        {"port", "gid_index", [](const std::string &) { return std::string(); }},
        {"engine", "workers", [](const std::string &) { return std::string(); }},
    };
    if (std::string err = droce::app::apply_device_config(opt.config, d, "droce-info", described);
        !err.empty())
        return err;
    std::string prefix = d.config_eal.file_prefix;
    const auto &args = d.config_eal.args;
    for (size_t i = 0; prefix.empty() && i < args.size(); ++i) {
        if (args[i] == "--file-prefix" && i + 1 < args.size())
            prefix = args[i + 1];
        else if (args[i].rfind("--file-prefix=", 0) == 0)
            prefix = args[i].substr(14);
    }
    if (opt.file_prefix.empty() && opt.socket_path.empty())
        opt.file_prefix = prefix;
    if (opt.ib_dev.empty() && !d.dpdk_port.empty() &&
        d.dpdk_port.find_first_not_of("0123456789") != std::string::npos)
        opt.ib_dev = d.dpdk_port;
    return "";
}

/** DPDK's runtime directory base: /var/run/dpdk for root, else $XDG_RUNTIME_DIR/dpdk
 * or /tmp/dpdk (as eal_create_runtime_dir). */
std::string runtime_base() {
    if (geteuid() == 0)
        return "/var/run/dpdk";
    const char *x = std::getenv("XDG_RUNTIME_DIR");
    return std::string(x && *x ? x : "/tmp") + "/dpdk";
}

/** One connection to a telemetry socket. */
class Telemetry {
  public:
    ~Telemetry() {
        if (fd_ >= 0)
            close(fd_);
    }
    bool connect_to(const std::string &path) {
        fd_ = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        if (fd_ < 0)
            return false;
        sockaddr_un sun{};
        sun.sun_family = AF_UNIX;
        if (path.size() >= sizeof sun.sun_path)
            return false;
        std::strcpy(sun.sun_path, path.c_str());
        if (connect(fd_, reinterpret_cast<sockaddr *>(&sun), sizeof sun) != 0)
            return false;
        json_t *hello = receive();
        if (hello == nullptr)
            return false;
        json_t *pid = json_object_get(hello, "pid");
        pid_ = json_is_integer(pid) ? static_cast<long>(json_integer_value(pid)) : -1;
        json_t *ml = json_object_get(hello, "max_output_len");
        if (json_is_integer(ml))
            max_len_ = static_cast<size_t>(json_integer_value(ml));
        json_decref(hello);
        return true;
    }
    long pid() const { return pid_; }
    /** The reply's value for cmd (a new reference), or nullptr. */
    json_t *ask(const std::string &cmd) {
        if (send(fd_, cmd.data(), cmd.size(), 0) < 0)
            return nullptr;
        json_t *r = receive();
        if (r == nullptr)
            return nullptr;
        const std::string key = cmd.substr(0, cmd.find(','));
        json_t *v = json_object_get(r, key.c_str());
        if (v)
            json_incref(v);
        json_decref(r);
        return v;
    }

  private:
    json_t *receive() {
        std::vector<char> buf(max_len_ + 1);
        const ssize_t n = recv(fd_, buf.data(), max_len_, 0);
        if (n <= 0)
            return nullptr;
        json_error_t err;
        return json_loadb(buf.data(), static_cast<size_t>(n), 0, &err);
    }
    int fd_ = -1;
    long pid_ = -1;
    size_t max_len_ = 16384;
};

std::string str(json_t *o, const char *k, const char *dflt = "") {
    json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : dflt;
}
long long num(json_t *o, const char *k, long long dflt = 0) {
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : dflt;
}

int mtu_enum(long long bytes) {
    for (int e = 1; e <= 5; ++e)
        if ((128ll << e) == bytes)
            return e;
    return 0;
}

/** "fe80:0000:...:0001" as inet_ntop prints it ("fe80::1", "::ffff:10.0.0.1"). */
std::string gid_short(const std::string &full) {
    in6_addr a{};
    if (inet_pton(AF_INET6, full.c_str(), &a) != 1)
        return full;
    char b[INET6_ADDRSTRLEN];
    return inet_ntop(AF_INET6, &a, b, sizeof b) ? b : full;
}

/** The IPv4 address of an IPv4-mapped GID, else "". */
std::string gid_ipv4(const std::string &full) {
    in6_addr a{};
    if (inet_pton(AF_INET6, full.c_str(), &a) != 1 || !IN6_IS_ADDR_V4MAPPED(&a))
        return "";
    char b[INET_ADDRSTRLEN];
    return inet_ntop(AF_INET, &a.s6_addr[12], b, sizeof b) ? b : "";
}

/** Prints an {"error": ...} reply and returns true, or returns false. */
bool is_error(json_t *v, const std::string &what) {
    if (v == nullptr) {
        std::fprintf(stderr, "droce-info: no reply to %s\n", what.c_str());
        return true;
    }
    json_t *e = json_object_get(v, "error");
    if (json_is_string(e)) {
        std::fprintf(stderr, "droce-info: %s: %s\n", what.c_str(), json_string_value(e));
        return true;
    }
    return false;
}

/** The CM's counters (/droce/cm): the ones that moved, or all with -c. A device without a
 * CM (a process that does not use RDMA-CM) shows nothing, unless -c asked for them. */
void show_cm(Telemetry &t, const std::string &dev, const Options &opt) {
    json_t *cm = t.ask("/droce/cm," + dev);
    json_t *e = json_object_get(cm, "error");
    if (cm == nullptr || json_is_string(e)) {
        if (opt.cm_all)
            std::printf("\t\t\tcm_counters:\t\t%s\n",
                        json_is_string(e) ? json_string_value(e) : "no reply");
        json_decref(cm);
        return;
    }
    std::printf("\t\t\tcm_counters:\t\t(as of %lld ms ago%s)\n", num(cm, "age_ms"),
                opt.cm_all ? "" : "; zeros omitted, -c shows all");
    const char *k;
    json_t *v;
    json_object_foreach(cm, k, v) {
        if (std::strcmp(k, "age_ms") == 0 || std::strcmp(k, "publishes") == 0)
            continue;
        const long long x = json_is_integer(v) ? json_integer_value(v) : 0;
        if (x != 0 || opt.cm_all)
            std::printf("\t\t\t\t%-36s %lld\n", k, x);
    }
    json_decref(cm);
}

/** ibv_devinfo -v for one device, then its counters, its CM's and (-q) QPs. */
bool show_device(Telemetry &t, const std::string &dev, const Options &opt,
                 std::vector<std::string> &gid_lines) {
    json_t *info = t.ask("/droce/info," + dev);
    if (is_error(info, "/droce/info," + dev)) {
        json_decref(info);
        return false;
    }
    const std::string guid = str(info, "node_guid");
    const bool active = str(info, "state") == "PORT_ACTIVE";
    const long long max_mtu = num(info, "max_mtu"), act_mtu = num(info, "active_mtu");
    std::printf("hca_id:\t%s\n", dev.c_str());
    std::printf("\ttransport:\t\t\tInfiniBand (0)\n");
    std::printf("\tfw_ver:\t\t\t\t0.0.0\n");
    std::printf("\tnode_guid:\t\t\t%s\n", guid.c_str());
    std::printf("\tsys_image_guid:\t\t\t%s\n", guid.c_str());
    std::printf("\tvendor_id:\t\t\t0xffffff\n");
    std::printf("\tvendor_part_id:\t\t\t0\n");
    std::printf("\thw_ver:\t\t\t\t0x0\n");
    std::printf("\tphys_port_cnt:\t\t\t1\n");
    std::printf("\tdpdk_port:\t\t\t%lld (%s)\n", num(info, "port_id"),
                str(info, "driver", "?").c_str());
    std::printf("\tprocess:\t\t\tpid %lld, %s mode\n", num(info, "pid"),
                str(info, "mode").c_str());
    std::printf("\t\tport:\t1\n");
    std::printf("\t\t\tstate:\t\t\t%s (%d)\n", active ? "PORT_ACTIVE" : "PORT_DOWN",
                active ? 4 : 1);
    std::printf("\t\t\tmax_mtu:\t\t%lld (%d)\n", max_mtu, mtu_enum(max_mtu));
    std::printf("\t\t\tactive_mtu:\t\t%lld (%d)\n", act_mtu, mtu_enum(act_mtu));
    std::printf("\t\t\tsm_lid:\t\t\t0\n");
    std::printf("\t\t\tport_lid:\t\t0\n");
    std::printf("\t\t\tport_lmc:\t\t0x00\n");
    std::printf("\t\t\tlink_layer:\t\tEthernet\n");
    std::printf("\t\t\teth_mtu:\t\t%lld\n", num(info, "eth_mtu"));
    std::printf("\t\t\tmac:\t\t\t%s\n", str(info, "mac").c_str());
    std::printf("\t\t\tpfc:\t\t\t%s\n", str(info, "pfc", "?").c_str());
    /* "on, profile fair"; a process from before the field shows "?" */
    std::printf("\t\t\tdcqcn:\t\t\t%s, profile %s\n", str(info, "dcqcn", "?").c_str(),
                str(info, "dcqcn_profile", "?").c_str());
    /* The port's adapter (drivers/): what droce relies on, and its rte_flow rules. */
    std::printf("\t\t\tadapter:\t\t%s\n", str(info, "adapter", "?").c_str());
    for (const char *key : {"capabilities", "flow_rules", "steering_errors"}) {
        json_t *a = json_object_get(info, key);
        for (size_t i = 0; json_is_array(a) && i < json_array_size(a); ++i)
            if (const char *l = json_string_value(json_array_get(a, i)))
                std::printf("\t\t\t\t%s%s\n",
                            std::strcmp(key, "capabilities") == 0 ? ""
                            : std::strcmp(key, "flow_rules") == 0 ? "flow rule: "
                                                                  : "steering error: ",
                            l);
    }
    std::printf("\t\t\tsteering:\t\t%s\n", str(info, "steering", "?").c_str());
    std::printf("\t\t\tcapture:\t\t%s\n", str(info, "capture", "?").c_str());
    std::printf("\t\t\tipv4:\t\t\t%s\n", str(info, "ipv4").c_str());
    json_t *gids = json_object_get(info, "gid");
    json_t *types = json_object_get(info, "gid_type");
    json_t *vlans = json_object_get(info, "gid_vlan");
    for (size_t i = 0; json_is_array(gids) && i < json_array_size(gids); ++i) {
        const char *g = json_string_value(json_array_get(gids, i));
        const char *ty = json_string_value(json_array_get(types, i));
        if (g == nullptr)
            continue;
        /* A GID on a VLAN (its own or the port's) says so, as ibv_devinfo's does not. */
        const json_int_t vid = json_integer_value(json_array_get(vlans, i));
        const std::string on_vlan = vid > 0 ? ", VLAN " + std::to_string(vid) : std::string();
        std::printf("\t\t\tGID[%3zu]:\t\t%s, %s%s\n", i, gid_short(g).c_str(), ty ? ty : "RoCE v2",
                    on_vlan.c_str());
        const std::string v4 = gid_ipv4(g);
        const bool v1 = ty != nullptr && std::strstr(ty, "v1") != nullptr;
        char line[256];
        std::snprintf(line, sizeof line, "%s\t1\t%zu\t%s\t%-15s\t%s\t%s", dev.c_str(), i, g,
                      v4.c_str(), v1 ? "v1" : "v2", str(info, "driver", "-").c_str());
        gid_lines.emplace_back(line);
    }
    json_decref(info);

    json_t *ctr = t.ask("/droce/counters," + dev);
    if (is_error(ctr, "/droce/counters," + dev)) {
        json_decref(ctr);
        return false;
    }
    std::printf("\t\t\thw_counters:\n");
    const char *k;
    json_t *v;
    json_object_foreach(ctr, k, v) {
        std::printf("\t\t\t\t%-36s %lld\n", k, json_is_integer(v) ? json_integer_value(v) : 0);
    }
    json_decref(ctr);
    show_cm(t, dev, opt);

    if (opt.qps) {
        json_t *qps = t.ask("/droce/qps," + dev);
        if (is_error(qps, "/droce/qps," + dev)) {
            json_decref(qps);
            return false;
        }
        std::printf("\t\t\tqps:\t\t\t%zu\n", json_object_size(qps));
        json_object_foreach(qps, k, v) {
            std::string text;
            for (size_t i = 0; json_is_array(v) && i < json_array_size(v); ++i) {
                const char *s = json_string_value(json_array_get(v, i));
                if (s) {
                    if (!text.empty())
                        text += ' ';
                    text += s;
                }
            }
            std::printf("\t\t\t\tQP %s: %s\n", k, text.c_str());
        }
        json_decref(qps);
    }
    std::printf("\n");
    return true;
}

/** Telemetry sockets of droce processes: (path, file prefix). */
std::vector<std::pair<std::string, std::string>> find_sockets(const Options &opt) {
    std::vector<std::pair<std::string, std::string>> v;
    const std::string base = runtime_base();
    if (!opt.file_prefix.empty()) {
        v.emplace_back(base + "/" + opt.file_prefix + "/dpdk_telemetry.v2", opt.file_prefix);
        return v;
    }
    DIR *d = opendir(base.c_str());
    if (d == nullptr)
        return v;
    while (dirent *e = readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        const std::string p = base + "/" + e->d_name + "/dpdk_telemetry.v2";
        if (access(p.c_str(), F_OK) == 0)
            v.emplace_back(p, e->d_name);
    }
    closedir(d);
    return v;
}

void usage(FILE *out) {
    std::fprintf(out,
                 "Usage: droce-info [options]\n"
                 "ibv_devinfo -v and show_gids for the droce devices of running droce processes,\n"
                 "with every counter; asked through the process's DPDK telemetry socket\n"
                 "(%s/<file prefix>/dpdk_telemetry.v2).\n"
                 "\n"
                 "  -f, --file-prefix=<p>  the process started with EAL --file-prefix <p>\n"
                 "                         (droce-pingpong and droce-perf default to droce-<pid>);\n"
                 "                         default: every droce process found\n"
                 "  -p, --pid=<pid>        same as --file-prefix droce-<pid>\n"
                 "  -S, --socket=<path>    this telemetry socket\n"
                 "  -d, --ib-dev=<dev>     only this device\n"
                 "  -q, --qps              also the state of every QP\n"
                 "  -c, --cm               every RDMA-CM counter (default: those not zero)\n"
                 "  -v, --verbose          accepted (the output is always ibv_devinfo -v's)\n"
                 "  -l, --list             list the droce processes found\n"
                 "      --config=<file>    the process's config file: its [eal] file prefix\n"
                 "                         and [port] device pick the process and device\n"
                 "                         (the options above override it)\n"
                 "  -h, --help             this text\n",
                 runtime_base().c_str());
}

} // namespace

int main(int argc, char **argv) {
    Options opt;
    static const option longopts[] = {
        {"file-prefix", required_argument, nullptr, 'f'}, {"pid", required_argument, nullptr, 'p'},
        {"socket", required_argument, nullptr, 'S'},      {"ib-dev", required_argument, nullptr, 'd'},
        {"qps", no_argument, nullptr, 'q'},               {"verbose", no_argument, nullptr, 'v'},
        {"list", no_argument, nullptr, 'l'},              {"help", no_argument, nullptr, 'h'},
        {"config", required_argument, nullptr, 'C'},      {"cm", no_argument, nullptr, 'c'},
        {nullptr, 0, nullptr, 0}};
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:p:S:d:qcvlh", longopts, nullptr)) != -1) {
        switch (c) {
        case 'f':
            opt.file_prefix = optarg;
            break;
        case 'p': {
            char *end = nullptr;
            const long pid = std::strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || pid <= 0) {
                std::fprintf(stderr, "droce-info: invalid value '%s' for -p/--pid\n", optarg);
                return 1;
            }
            opt.file_prefix = "droce-" + std::to_string(pid);
            break;
        }
        case 'S':
            opt.socket_path = optarg;
            break;
        case 'd':
            opt.ib_dev = optarg;
            break;
        case 'q':
            opt.qps = true;
            break;
        case 'c':
            opt.cm_all = true;
            break;
        case 'v':
            break;
        case 'C':
            if (!opt.config.empty()) {
                std::fprintf(stderr, "droce-info: --config given twice\n");
                return 1;
            }
            opt.config = optarg;
            break;
        case 'l':
            opt.list = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case ':':
            std::fprintf(stderr, "droce-info: option '%s' needs a value\n", argv[optind - 1]);
            usage(stderr);
            return 1;
        default:
            std::fprintf(stderr, "droce-info: unknown option '%s'\n", argv[optind - 1]);
            usage(stderr);
            return 1;
        }
    }
    if (optind < argc) {
        std::fprintf(stderr, "droce-info: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 1;
    }

    if (!opt.config.empty()) {
        if (std::string err = apply_config(opt); !err.empty()) {
            std::fprintf(stderr, "droce-info: %s\n", err.c_str());
            return 1;
        }
    }

    std::vector<std::pair<std::string, std::string>> socks;
    if (!opt.socket_path.empty())
        socks.emplace_back(opt.socket_path, "");
    else
        socks = find_sockets(opt);

    int processes = 0, devices = 0;
    bool failed = false;
    std::vector<std::string> gid_lines;
    for (const auto &[path, prefix] : socks) {
        Telemetry t;
        if (!t.connect_to(path))
            continue; /* stale socket of a process that is gone */
        json_t *devs = t.ask("/droce/devices");
        if (!json_is_array(devs)) {
            json_decref(devs);
            continue; /* a DPDK process, not a droce one */
        }
        ++processes;
        if (opt.list) {
            std::printf("pid %ld\tfile-prefix %s\tsocket %s\tdevices", t.pid(),
                        prefix.empty() ? "-" : prefix.c_str(), path.c_str());
            for (size_t i = 0; i < json_array_size(devs); ++i)
                std::printf(" %s", json_string_value(json_array_get(devs, i)));
            std::printf("\n");
            json_decref(devs);
            continue;
        }
        for (size_t i = 0; i < json_array_size(devs); ++i) {
            const char *name = json_string_value(json_array_get(devs, i));
            if (name == nullptr || (!opt.ib_dev.empty() && opt.ib_dev != name))
                continue;
            ++devices;
            if (!show_device(t, name, opt, gid_lines))
                failed = true;
        }
        json_decref(devs);
    }

    if (processes == 0) {
        const std::string where =
            !opt.socket_path.empty()
                ? opt.socket_path
                : runtime_base() + "/" + (opt.file_prefix.empty() ? "*" : opt.file_prefix) +
                      "/dpdk_telemetry.v2";
        std::fprintf(stderr,
                     "droce-info: no running droce process found (no telemetry socket that answers "
                     "at %s; droce processes need EAL telemetry, i.e. no --no-telemetry)\n",
                     where.c_str());
        return 1;
    }
    if (opt.list)
        return 0;
    if (devices == 0) {
        if (!opt.ib_dev.empty())
            std::fprintf(stderr, "droce-info: no droce device '%s'\n", opt.ib_dev.c_str());
        else
            std::fprintf(stderr, "droce-info: the droce process has no device open yet\n");
        return 1;
    }
    /* show_gids */
    std::printf("DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4\t\t\tVER\tDEV\n");
    std::printf("---\t----\t-----\t---\t\t\t\t\t------------\t\t---\t---\n");
    for (const auto &l : gid_lines)
        std::printf("%s\n", l.c_str());
    std::printf("n_gids_found=%zu\n", gid_lines.size());
    return failed ? 1 : 0;
}
