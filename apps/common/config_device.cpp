/* SPDX-License-Identifier: BSD-3-Clause */
#include "config_device.h"

#include <arpa/inet.h>

#include <cstring>
#include <sstream>

#include "cli_numbers.h"

namespace droce::app {

namespace {

/** A key of the schema: take stores a valid value into o and returns "", or returns why
 * the value is not valid. tool_only keys are stored by the tool (ToolConfigKey). */
struct Key {
    const char *section;
    const char *key;
    std::function<std::string(const std::string &v, DeviceOptions &o)> take;
    bool tool_only = false;
};

const char *const kSections[] = {"eal", "engine", "port", "qp", "dcqcn", "pfc", "capture", "cm"};

std::string range(uint64_t lo, uint64_t hi) {
    return "want " + std::to_string(lo) + ".." + std::to_string(hi);
}

/** An unsigned key lo..hi stored through set. */
template <class Set> Key num(const char *sec, const char *key, uint64_t lo, uint64_t hi, Set set) {
    return {sec, key, [lo, hi, set](const std::string &v, DeviceOptions &o) -> std::string {
                uint64_t u = 0;
                if (!parse_u64(v.c_str(), UINT64_MAX, u))
                    return "not a number (" + range(lo, hi) + ")";
                if (u < lo || u > hi)
                    return "out of range (" + range(lo, hi) + ")";
                set(o, u);
                return "";
            }};
}

template <class Set> Key flag(const char *sec, const char *key, Set set) {
    return {sec, key, [set](const std::string &v, DeviceOptions &o) -> std::string {
                bool b = false;
                if (!parse_config_bool(v, b))
                    return "want on or off (yes/no, true/false, 1/0)";
                set(o, b);
                return "";
            }};
}

Key unsupported(const char *sec, const char *key, const char *why) {
    return {sec, key, [why](const std::string &, DeviceOptions &) -> std::string {
                return std::string("not supported by this build (") + why + ")";
            }};
}

/* Bounds that catch unit mistakes without refusing any real setting. */
constexpr uint64_t kMaxNs = 1'000'000'000'000ull;   /* 1000 s */
constexpr uint64_t kMaxBps = 10'000'000'000'000ull; /* 10 Tb/s */
constexpr uint64_t kU32 = UINT32_MAX;

#define DCQCN_NUM(name, lo, hi)                                                                    \
    num("dcqcn", #name, lo, hi, [](DeviceOptions &o, uint64_t u) {                                 \
        o.dcqcn_params.name = static_cast<decltype(o.dcqcn_params.name)>(u);                       \
        o.dcqcn_keys_given = true;                                                                 \
    })
#define DCQCN_FLAG(name)                                                                           \
    flag("dcqcn", #name, [](DeviceOptions &o, bool b) {                                            \
        o.dcqcn_params.name = b;                                                                   \
        o.dcqcn_keys_given = true;                                                                 \
    })

const std::vector<Key> &schema() {
    // A changed line in this table makes clang-format 14 re-indent whole entries (a
    // lambda's "-> std::string" split over dozens of lines): the table is kept as written.
    // clang-format off
    static const std::vector<Key> keys = {
        // ---- [eal]: used when the command line gives no EAL arguments ----
        {"eal", "args",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             std::istringstream in(v);
             o.config_eal.args.clear();
             for (std::string w; in >> w;)
                 o.config_eal.args.push_back(w);
             o.config_eal.args_given = true;
             return "";
         }},
        {"eal", "lcores",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             if (v.find_first_not_of("0123456789,-@()") != std::string::npos)
                 return "want an lcore list such as 0,1 or 0-3";
             o.config_eal.lcores = v;
             return "";
         }},
        {"eal", "file_prefix",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             if (v.find_first_of(" \t/") != std::string::npos)
                 return "want a name without blanks or '/'";
             o.config_eal.file_prefix = v;
             return "";
         }},
        {"eal", "vdev",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             if (v.find_first_of(" \t") != std::string::npos)
                 return "want one --vdev argument without blanks (e.g. net_memif0,role=server)";
             o.config_eal.vdevs.push_back(v);
             return "";
         }},
        // ---- [engine] ----
        {"engine", "mode",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             if (v != "embedded" && v != "worker")
                 return "want embedded or worker";
             o.embedded = o.embedded_given = v == "embedded";
             o.worker = v == "worker";
             o.mode_from_config = true;
             return "";
         }},
        {"engine", "workers", nullptr, true},
        flag("engine", "busy_poll", [](DeviceOptions &o, bool b) { o.busy_poll = b; }),
        flag("engine", "counters", [](DeviceOptions &o, bool b) { o.counters = b; }),
        {"engine", "timeout",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             if (!parse_seconds(v.c_str(), o.timeout_s))
                 return "want seconds 0..1000000 (0 = never)";
             o.timeout_given = true;
             return "";
         }},
        {"engine", "log_level",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             static const char *const levels[] = {"trace",   "debug", "info",     "warn",
                                                  "warning", "error", "critical", "off"};
             for (const char *l : levels)
                 if (v == l) {
                     o.log_level = v == "warning" ? "warn" : v;
                     return "";
                 }
             return "want trace, debug, info, warn, error or off";
         }},
        // ---- [port] ----
        {"port", "device",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             o.dpdk_port = v;
             return "";
         }},
        flag("port", "loopback", [](DeviceOptions &o, bool b) { o.loopback = b; }),
        {"port", "ip",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             unsigned a, b, c, d, p;
             char tail;
             if (std::sscanf(v.c_str(), "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &p, &tail) != 5 ||
                 a > 255 || b > 255 || c > 255 || d > 255 || p > 32)
                 return "want A.B.C.D/P";
             o.ip = v;
             return "";
         }},
        {"port", "mac",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             unsigned m[6];
             char tail;
             if (std::sscanf(v.c_str(), "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4],
                             &m[5], &tail) != 6 ||
                 v.size() != 17 || m[0] > 255 || m[1] > 255 || m[2] > 255 || m[3] > 255 ||
                 m[4] > 255 || m[5] > 255)
                 return "want xx:xx:xx:xx:xx:xx";
             o.mac = v;
             return "";
         }},
        num("port", "mtu", 576, 9600,
            [](DeviceOptions &o, uint64_t u) { o.eth_mtu = static_cast<uint32_t>(u); }),
        {"port", "gid_index", nullptr, true},
        {"port", "ip6", /* repeatable: GIDs 2.. (--ip X:Y::Z/P[@VID]) */
         [](const std::string &v, DeviceOptions &o) -> std::string {
             const size_t slash = v.find('/'), at = v.find('@');
             in6_addr a{};
             uint64_t p = 0, vid = 0;
             if (slash == std::string::npos || (at != std::string::npos && at < slash) ||
                 inet_pton(AF_INET6, v.substr(0, slash).c_str(), &a) != 1 ||
                 !parse_u64(v.substr(slash + 1, at - slash - 1).c_str(), 128, p))
                 return "want X:Y::Z/P or X:Y::Z/P@VID";
             if (at != std::string::npos && !parse_u64(v.substr(at + 1).c_str(), 4094, vid))
                 return "want a VLAN 0..4094 after '@' (0 = untagged)";
             o.ip6.push_back(v);
             return "";
         }},
        {"port", "gid_type",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             if (v != "v1" && v != "v2")
                 return "want v1 (RoCEv1 GIDs too) or v2";
             o.rocev1_gids = v == "v1";
             return "";
         }},
        {"port", "gateway",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             in6_addr a6{};
             in_addr a4{};
             if (v.find(':') != std::string::npos && inet_pton(AF_INET6, v.c_str(), &a6) == 1)
                 o.gateway6 = v;
             else if (inet_pton(AF_INET, v.c_str(), &a4) == 1)
                 o.gateway = v;
             else
                 return "want an IPv4 or IPv6 address";
             return "";
         }},
        num("port", "vlan", 1, 4094,
            [](DeviceOptions &o, uint64_t u) { o.vlan = static_cast<uint16_t>(u); }),
        {"port", "line_rate",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             if (!parse_rate_bps(v.c_str(), o.line_rate_bps))
                 return "want a rate in bit/s, suffix k, m or g (e.g. 1g)";
             return "";
         }},
        num("port", "tx_burst", 0, 4096,
            [](DeviceOptions &o, uint64_t u) { o.tx_burst = static_cast<uint32_t>(u); }),
        num("port", "queue_stride", 0, DeviceConfig::kMaxQueueStride,
            [](DeviceOptions &o, uint64_t u) { o.queue_stride = static_cast<uint16_t>(u); }),
        num("port", "force_dscp", 0, 63,
            [](DeviceOptions &o, uint64_t u) { o.force_dscp = static_cast<int>(u); }),
        num("port", "force_ttl", 1, 255,
            [](DeviceOptions &o, uint64_t u) { o.force_ttl = static_cast<int>(u); }),
        // ---- [qp]: the RC attributes the tools set at RTR/RTS ----
        num("qp", "timeout", 0, 31,
            [](DeviceOptions &o, uint64_t u) { o.qp.timeout = static_cast<uint8_t>(u); }),
        num("qp", "retry_cnt", 0, 7,
            [](DeviceOptions &o, uint64_t u) { o.qp.retry_cnt = static_cast<uint8_t>(u); }),
        num("qp", "rnr_retry", 0, 7,
            [](DeviceOptions &o, uint64_t u) { o.qp.rnr_retry = static_cast<uint8_t>(u); }),
        num("qp", "min_rnr_timer", 0, 31,
            [](DeviceOptions &o, uint64_t u) { o.qp.min_rnr_timer = static_cast<uint8_t>(u); }),
        num("qp", "dup_ack_interval_ns", 0, kMaxPacingNs,
            [](DeviceOptions &o, uint64_t u) { o.rc_pacing.dup_ack_interval_ns = u; }),
        num("qp", "seq_nak_interval_ns", 0, kMaxPacingNs,
            [](DeviceOptions &o, uint64_t u) { o.rc_pacing.seq_nak_interval_ns = u; }),
        num("qp", "seq_nak_after_run", 0, kMaxSeqNakRun,
            [](DeviceOptions &o, uint64_t u) {
                o.rc_pacing.seq_nak_after_run = static_cast<uint32_t>(u);
            }),
        unsupported("qp", "window", "the requester window is not settable through droce's API"),
        unsupported("qp", "ack_every", "ACK coalescing is not settable through droce's API"),
        // ---- [dcqcn]: DeviceConfig::dcqcn and dcqcn_params ----
        flag("dcqcn", "enabled", [](DeviceOptions &o, bool b) { o.dcqcn = b; }),
        {"dcqcn", "ecn",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             if (v == "off")
                 o.ecn = 0;
             else if (v == "ect0")
                 o.ecn = 1;
             else if (v == "ect1")
                 o.ecn = 2;
             else
                 return "want off, ect0 or ect1";
             return "";
         }},
        {"dcqcn", "profile",
         [](const std::string &v, DeviceOptions &o) -> std::string {
             /* The base the other keys change: after one of them it would undo it. */
             if (o.dcqcn_keys_given)
                 return "must come before the other [dcqcn] parameter keys (they change the "
                        "profile's values)";
             if (v == "connectx")
                 o.dcqcn_profile = DcqcnProfile::ConnectX;
             else if (v == "fair")
                 o.dcqcn_profile = DcqcnProfile::Fair;
             else
                 return "want connectx or fair";
             o.dcqcn_params = dcqcn_profile_params(o.dcqcn_profile);
             return "";
         }},
        DCQCN_FLAG(rp_enabled),
        DCQCN_FLAG(np_enabled),
        DCQCN_NUM(dce_tcp_g, 0, 1023),
        DCQCN_NUM(dce_tcp_rtt_ns, 1, kMaxNs),
        DCQCN_NUM(initial_alpha_value, 0, 1024),
        DCQCN_NUM(rpg_gd, 1, 15),
        DCQCN_NUM(rpg_min_dec_fac, 1, 100),
        DCQCN_NUM(rate_reduce_monitor_period_ns, 0, kMaxNs),
        DCQCN_NUM(rpg_time_reset_ns, 1, kMaxNs),
        DCQCN_NUM(rpg_byte_reset, 1, kU32),
        DCQCN_NUM(rpg_threshold, 1, 31),
        DCQCN_NUM(rpg_ai_rate_bps, 1, kMaxBps),
        DCQCN_NUM(rpg_hai_rate_bps, 1, kMaxBps),
        DCQCN_NUM(rpg_min_rate_bps, 1, kMaxBps),
        DCQCN_NUM(rpg_max_rate_bps, 0, kMaxBps),
        DCQCN_FLAG(clamp_tgt_rate),
        DCQCN_FLAG(clamp_tgt_rate_after_time_inc),
        DCQCN_NUM(rate_to_set_on_first_cnp_bps, 0, kMaxBps),
        DCQCN_NUM(min_time_between_cnps_ns, 0, kMaxNs),
        DCQCN_NUM(cnp_dscp, 0, 63),
        DCQCN_NUM(cnp_802p_prio, 0, 7),
        // ---- [pfc]: DeviceConfig::pfc_priority and pfc_storm_ms ----
        {"pfc", "priority",
         [](const std::string &v,
            DeviceOptions &o) -> std::
                                  string {
                                      uint64_t u = 0;
                                      if (v == "none")
                                          o.pfc = -1;
                                      else if (parse_u64(v.c_str(), 7, u))
                                          o.pfc = static_cast<int>(u);
                                      else
                                          return "want a priority 0..7 or none";
                                      return "";
                                  }},
        num("pfc", "storm_ms", 0, 3'600'000,
            [](DeviceOptions &o, uint64_t u) { o.pfc_storm_ms = static_cast<uint32_t>(u); }),
        num("pfc", "tx_xoff", 0, 65535,
            [](DeviceOptions &o, uint64_t u) { o.pfc_tx_xoff = static_cast<uint32_t>(u); }),
        num("pfc", "tx_xon", 0, 65535,
            [](DeviceOptions &o, uint64_t u) { o.pfc_tx_xon = static_cast<uint32_t>(u); }),
        // ---- [capture]: --capture and --capture-snaplen ----
        {"capture", "file",
         [](const std::string &v, DeviceOptions &o) -> std::
                                                        string {
                                                            o.capture = v;
                                                            return "";
                                                        }},
        num("capture", "snaplen", 64, 65535,
            [](DeviceOptions &o, uint64_t u) { o.capture_snaplen = static_cast<uint32_t>(u); }),
        // ---- [cm]: CmChannelConfig's stateless-answer limits ----
        num("cm", "stateless_per_sec", 0, kMaxStatelessPerSec,
            [](DeviceOptions &o, uint64_t u) {
                o.cm_stateless_per_sec = static_cast<uint32_t>(u);
            }),
        num("cm", "stateless_burst", 1, kMaxStatelessBurst,
            [](DeviceOptions &o, uint64_t u) { o.cm_stateless_burst = static_cast<uint32_t>(u); }),
    };
    // clang-format on
    return keys;
}

#undef DCQCN_NUM
#undef DCQCN_FLAG

} // namespace

bool find_config_option(int argc, char *const *argv, std::string &path, std::string &err) {
    path.clear();
    bool found = false;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *value = nullptr;
        if (std::strcmp(a, "--config") == 0) {
            if (i + 1 >= argc) {
                err = "option '--config' needs a value";
                return false;
            }
            value = argv[++i];
        } else if (std::strncmp(a, "--config=", 9) == 0) {
            value = a + 9;
        } else {
            continue;
        }
        if (found) {
            err = "--config given twice";
            return false;
        }
        if (*value == '\0') {
            err = "option '--config' needs a value";
            return false;
        }
        path = value;
        found = true;
    }
    return true;
}

std::string apply_device_config(const std::string &path, DeviceOptions &o, const char *tool,
                                const std::vector<ToolConfigKey> &tool_keys,
                                const std::vector<ToolConfigSection> &tool_sections) {
    ConfigFile cf;
    std::vector<std::string> repeatable = {"eal.vdev", "port.ip6", "port.gateway"};
    for (const auto &ts : tool_sections)
        for (const auto &k : ts.repeatable)
            repeatable.push_back(ts.name + "." + k);
    if (std::string err = load_config_file(path, cf, repeatable); !err.empty())
        return err;
    o.config_path = path;
    for (const auto &sec : cf.sections) {
        const ToolConfigSection *own = nullptr;
        for (const auto &ts : tool_sections)
            if (sec.name == ts.name)
                own = &ts;
        if (own != nullptr) { /* the tool's own section: it reads it */
            if (std::string err = own->take(cf, sec); !err.empty())
                return err;
            continue;
        }
        bool known = false;
        for (const char *s : kSections)
            known = known || sec.name == s;
        if (!known)
            return cf.at(sec.line, "unknown section [" + sec.name +
                                       "] (droce.conf has [eal] [engine] [port] [qp] [dcqcn] "
                                       "[pfc] [capture])");
        for (const auto &e : sec.entries) {
            const Key *k = nullptr;
            for (const auto &cand : schema())
                if (sec.name == cand.section && e.key == cand.key)
                    k = &cand;
            if (k == nullptr)
                return cf.at(e.line, "[" + sec.name + "] unknown key '" + e.key + "'");
            std::string why;
            if (k->tool_only) {
                const ToolConfigKey *t = nullptr;
                for (const auto &cand : tool_keys)
                    if (sec.name == cand.section && e.key == cand.key)
                        t = &cand;
                if (t == nullptr)
                    return cf.at(e.line, "[" + sec.name + "] " + e.key + ": not used by " + tool);
                why = t->take(e.value);
            } else {
                why = k->take(e.value, o);
            }
            if (!why.empty())
                return cf.bad_value(e, why);
        }
    }
    return "";
}

std::string load_config_option(int argc, char *const *argv, DeviceOptions &o, const char *tool,
                               const std::vector<ToolConfigKey> &tool_keys,
                               const std::vector<ToolConfigSection> &tool_sections) {
    std::string path, err;
    if (!find_config_option(argc, argv, path, err))
        return err;
    if (path.empty())
        return "";
    return apply_device_config(path, o, tool, tool_keys, tool_sections);
}

} // namespace droce::app
