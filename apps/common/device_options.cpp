/* SPDX-License-Identifier: BSD-3-Clause */
#include "device_options.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli_numbers.h"
#include "cli_options.h"
#include "eal_args.h"

namespace droce::app {

namespace {

const struct option kDeviceLongOptions[] = {
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
    {"dcqcn", required_argument, nullptr, kOptDcqcn},
    {"ecn", required_argument, nullptr, kOptEcn},
    {"dcqcn-profile", required_argument, nullptr, kOptDcqcnProfile},
    {"pfc", required_argument, nullptr, kOptPfc},
    {"pfc-tx", required_argument, nullptr, kOptPfcTx},
    {"config", required_argument, nullptr, kOptConfig},
    {"capture", required_argument, nullptr, kOptCapture},
    {"capture-snaplen", required_argument, nullptr, kOptCaptureSnaplen},
    {"vlan", required_argument, nullptr, kOptVlan},
    {"gateway", required_argument, nullptr, kOptGateway},
    {"force-dscp", required_argument, nullptr, kOptForceDscp},
    {"force-ttl", required_argument, nullptr, kOptForceTtl},
    {"line-rate", required_argument, nullptr, kOptLineRate},
    {"tx-burst", required_argument, nullptr, kOptTxBurst},
    {"queue-stride", required_argument, nullptr, kOptQueueStride},
    {"gid-type", required_argument, nullptr, kOptGidType},
    {"dup-ack-interval-ns", required_argument, nullptr, kOptDupAckInterval},
    {"seq-nak-interval-ns", required_argument, nullptr, kOptSeqNakInterval},
    {"seq-nak-after-run", required_argument, nullptr, kOptSeqNakAfterRun},
    {"cm-stateless-per-sec", required_argument, nullptr, kOptCmStatelessRate},
    {"cm-stateless-burst", required_argument, nullptr, kOptCmStatelessBurst},
};

bool valid_ipv4_cidr(const char *s) {
    unsigned a, b, c, d, p;
    char tail;
    return std::sscanf(s, "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &p, &tail) == 5 && a <= 255 &&
           b <= 255 && c <= 255 && d <= 255 && p <= 32;
}

/* X:Y::Z/P[@VID]; the engine checks the address itself (unicast, not link-local). */
bool valid_ipv6_cidr(const char *s) {
    const char *slash = std::strchr(s, '/');
    if (slash == nullptr || std::strchr(s, ':') == nullptr || slash[1] == '\0')
        return false;
    const std::string addr(s, slash);
    in6_addr a{};
    char *end = nullptr;
    const unsigned long p = std::strtoul(slash + 1, &end, 10);
    if (inet_pton(AF_INET6, addr.c_str(), &a) != 1 || end == slash + 1 || p > 128)
        return false;
    if (*end == '\0')
        return true;
    /* "@VID": the address on its own VLAN (0 = untagged). */
    uint64_t vid = 0;
    return *end == '@' && parse_u64(end + 1, 4094, vid);
}

bool valid_mac(const char *s) {
    unsigned m[6];
    char tail;
    return std::sscanf(s, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &tail) ==
               6 &&
           m[0] <= 255 && m[1] <= 255 && m[2] <= 255 && m[3] <= 255 && m[4] <= 255 && m[5] <= 255;
}

/** --embedded or --worker on the command line overrides the file's [engine] mode. */
void drop_config_mode(DeviceOptions &o) {
    if (!o.mode_from_config)
        return;
    o.mode_from_config = false;
    o.embedded = o.embedded_given = o.worker = false;
}

/** Takes a device option into o: "" or what a valid value is; nullptr when c is not a
 * device option. */
const char *take(int c, const char *arg, DeviceOptions &o, const DeviceOptionRules &rules) {
    uint64_t u = 0;
    switch (c) {
    case kOptDpdkPort:
        o.dpdk_port = arg;
        return "";
    case kOptIp:
        /* Repeatable: one IPv4 address (GID 1) and IPv6 ones (GIDs 2..). */
        if (std::strchr(arg, ':') != nullptr) {
            if (!valid_ipv6_cidr(arg))
                return "A.B.C.D/P or X:Y::Z/P[@VID]";
            o.ip6.emplace_back(arg);
            return "";
        }
        if (rules.check_address_syntax && !valid_ipv4_cidr(arg))
            return "A.B.C.D/P or X:Y::Z/P";
        o.ip = arg;
        return "";
    case kOptVlan:
        if (!parse_u64(arg, 4094, u) || u == 0)
            return "a VLAN ID 1..4094";
        o.vlan = static_cast<uint16_t>(u);
        return "";
    case kOptGidType:
        if (std::strcmp(arg, "v1") != 0 && std::strcmp(arg, "v2") != 0)
            return "v1 (RoCEv1 GIDs too, after the RoCE v2 ones) or v2";
        o.rocev1_gids = std::strcmp(arg, "v1") == 0;
        return "";
    case kOptGateway:
        if (std::strchr(arg, ':') != nullptr) {
            in6_addr a{};
            if (inet_pton(AF_INET6, arg, &a) != 1)
                return "an IPv4 or IPv6 address";
            o.gateway6 = arg;
        } else {
            in_addr a{};
            if (inet_pton(AF_INET, arg, &a) != 1)
                return "an IPv4 or IPv6 address";
            o.gateway = arg;
        }
        return "";
    case kOptForceDscp:
        if (!parse_u64(arg, 63, u))
            return "a DSCP 0..63";
        o.force_dscp = static_cast<int>(u);
        return "";
    case kOptForceTtl:
        if (!parse_u64(arg, 255, u) || u == 0)
            return "a TTL / hop limit 1..255";
        o.force_ttl = static_cast<int>(u);
        return "";
    case kOptMac:
        if (rules.check_address_syntax && !valid_mac(arg))
            return "xx:xx:xx:xx:xx:xx";
        o.mac = arg;
        return "";
    case kOptEthMtu:
        if (!parse_u64(arg, 9600, u) || u < 576)
            return "576..9600";
        o.eth_mtu = static_cast<uint32_t>(u);
        return "";
    case kOptCounters:
        o.counters = true;
        return "";
    case kOptDcqcn:
        if (std::strcmp(arg, "on") != 0 && std::strcmp(arg, "off") != 0)
            return "on or off";
        o.dcqcn = std::strcmp(arg, "on") == 0;
        return "";
    case kOptDcqcnProfile:
        /* The command line overrides the file: every [dcqcn] parameter key too. */
        if (std::strcmp(arg, "connectx") == 0)
            o.dcqcn_profile = DcqcnProfile::ConnectX;
        else if (std::strcmp(arg, "fair") == 0)
            o.dcqcn_profile = DcqcnProfile::Fair;
        else
            return "connectx or fair";
        o.dcqcn_params = dcqcn_profile_params(o.dcqcn_profile);
        return "";
    case kOptEcn:
        if (std::strcmp(arg, "off") == 0)
            o.ecn = 0;
        else if (std::strcmp(arg, "ect0") == 0)
            o.ecn = 1;
        else if (std::strcmp(arg, "ect1") == 0)
            o.ecn = 2;
        else
            return "off, ect0 or ect1";
        return "";
    case kOptPfc:
        if (!parse_u64(arg, 7, u))
            return "a priority 0..7";
        o.pfc = static_cast<int>(u);
        return "";
    case kOptPfcTx: {
        const char *c = std::strchr(arg, ',');
        uint64_t xon = 0;
        if (c == nullptr || !parse_u64(std::string(arg, c).c_str(), 65535, u) || u == 0 ||
            !parse_u64(c + 1, 65535, xon) || xon >= u)
            return "XOFF,XON frames, 0 < XON < XOFF <= 65535 (e.g. 32,8)";
        o.pfc_tx_xoff = static_cast<uint32_t>(u);
        o.pfc_tx_xon = static_cast<uint32_t>(xon);
        return "";
    }
    case kOptLineRate:
        if (!parse_rate_bps(arg, o.line_rate_bps))
            return "a rate in bit/s, suffix k, m or g (e.g. 1g)";
        return "";
    case kOptTxBurst:
        if (!parse_u64(arg, 4096, u))
            return "frames 0..4096 (0 = off)";
        o.tx_burst = static_cast<uint32_t>(u);
        return "";
    case kOptQueueStride:
        static_assert(DeviceConfig::kMaxQueueStride == 64, "the message says 0..64");
        if (!parse_u64(arg, DeviceConfig::kMaxQueueStride, u))
            return "0..64 (0 = the port's adapter's spacing, 1 = neighbouring queues)";
        o.queue_stride = static_cast<uint16_t>(u);
        return "";
    case kOptDupAckInterval:
    case kOptSeqNakInterval:
        if (!parse_u64(arg, kMaxPacingNs, u))
            return "nanoseconds 0..10000000000 (0 = every one)";
        (c == kOptDupAckInterval ? o.rc_pacing.dup_ack_interval_ns
                                 : o.rc_pacing.seq_nak_interval_ns) = u;
        return "";
    case kOptSeqNakAfterRun:
        if (!parse_u64(arg, kMaxSeqNakRun, u))
            return "packets 0..4096";
        o.rc_pacing.seq_nak_after_run = static_cast<uint32_t>(u);
        return "";
    case kOptCmStatelessRate:
        if (!parse_u64(arg, kMaxStatelessPerSec, u))
            return "answers per second 0..1000000 (0 = no limit)";
        o.cm_stateless_per_sec = static_cast<uint32_t>(u);
        return "";
    case kOptCmStatelessBurst:
        if (!parse_u64(arg, kMaxStatelessBurst, u) || u == 0)
            return "answers 1..65536";
        o.cm_stateless_burst = static_cast<uint32_t>(u);
        return "";
    case kOptConfig:
        return ""; /* read before the command line (load_config_option) */
    case kOptCapture:
        if (*arg == '\0')
            return "a file name";
        o.capture = arg;
        return "";
    case kOptCaptureSnaplen:
        if (!parse_u64(arg, 65535, u) || u < 64)
            return "64..65535 bytes";
        o.capture_snaplen = static_cast<uint32_t>(u);
        return "";
    case kOptEmbedded:
        drop_config_mode(o);
        o.embedded = true;
        o.embedded_given = true;
        return "";
    case kOptWorker:
        drop_config_mode(o);
        o.worker = true;
        return "";
    case kOptLoopback:
        o.loopback = true;
        return "";
    case kOptBusyPoll:
        o.busy_poll = true;
        return "";
    case kOptTimeout:
        if (!parse_seconds(arg, o.timeout_s))
            return "seconds, 0 = never";
        o.timeout_given = true;
        return "";
    case kOptLogLevel: {
        static const char *const levels[] = {"trace",   "debug", "info",     "warn",
                                             "warning", "error", "critical", "off"};
        bool ok = false;
        for (const char *l : levels)
            ok = ok || std::strcmp(l, arg) == 0;
        if (!ok)
            return "trace, debug, info, warn, error, off";
        o.log_level = std::strcmp(arg, "warning") == 0 ? "warn" : arg;
        return "";
    }
    default:
        return nullptr;
    }
}

} // namespace

std::vector<struct option> with_device_options(std::initializer_list<struct option> own) {
    std::vector<struct option> all(own);
    all.insert(all.end(), std::begin(kDeviceLongOptions), std::end(kDeviceLongOptions));
    all.push_back({nullptr, 0, nullptr, 0});
    return all;
}

std::string take_device_option(int c, const char *arg, char *const *argv,
                               const struct option *long_options, DeviceOptions &o,
                               const DeviceOptionRules &rules) {
    const char *why = take(c, arg, o, rules);
    if (why == nullptr)
        return getopt_error_message(c, argv);
    if (*why != '\0')
        return invalid_value_message(long_options, c, arg, why);
    return "";
}

ExtraOptions device_option_extras(DeviceOptions &o, const DeviceOptionRules &rules) {
    ExtraOptions extra;
    extra.long_options.assign(std::begin(kDeviceLongOptions), std::end(kDeviceLongOptions));
    extra.take = [&o, rules](int c, const char *arg, const struct option *longs) -> std::string {
        const char *why = take(c, arg, o, rules);
        if (why == nullptr)
            return "unknown option"; /* parse_options hands over only device values */
        return *why != '\0' ? invalid_value_message(longs, c, arg, why) : "";
    };
    return extra;
}

std::string finish_device_options(DeviceOptions &o, bool has_host, const DeviceOptionRules &rules) {
    if (o.worker && o.embedded_given)
        return "--worker and --embedded exclude each other";
    if (o.loopback && has_host)
        return "--loopback runs both sides: do not give a <host>";
    if (o.loopback && (!o.ip.empty() || !o.mac.empty() || !o.dpdk_port.empty()))
        return std::string("--loopback sets its own ports and addresses") +
               rules.loopback_addresses + ": drop --ip/--mac/--dpdk-port";
    if (o.loopback && !o.worker)
        o.embedded = true;
    if (!o.loopback && o.ip.empty())
        return "--ip A.B.C.D/P is required (droce's own address, not the host's)";

    /* EAL arguments on the command line replace the file's [eal] section as a whole. */
    const bool from_config = o.eal_args.empty() && o.config_eal.any();
    if (from_config && o.config_eal.args_given)
        o.eal_args = o.config_eal.args;
    const bool lcores_from_config = from_config && !o.config_eal.lcores.empty();

    // Worker mode needs a second lcore: with exactly one, run embedded.
    if (!o.worker && !o.embedded &&
        ((rules.embedded_without_eal_args && o.eal_args.empty() && !lcores_from_config) ||
         (lcores_from_config ? eal_single_lcore({"-l", o.config_eal.lcores}, false)
                             : eal_single_lcore(o.eal_args, rules.coremask_single_lcore))))
        o.embedded = true;
    if (o.eal_args.empty()) {
        o.eal_defaulted = !lcores_from_config;
        o.eal_args = default_eal_args(o.embedded);
    }
    if (from_config) {
        if (lcores_from_config)
            set_eal_option(o.eal_args, "-l", {"-l", "--lcores"}, o.config_eal.lcores);
        if (!o.config_eal.file_prefix.empty())
            set_eal_option(o.eal_args, "--file-prefix", {"--file-prefix"},
                           o.config_eal.file_prefix);
        for (const auto &v : o.config_eal.vdevs) {
            o.eal_args.push_back("--vdev");
            o.eal_args.push_back(v);
        }
    }
    return "";
}

} // namespace droce::app
