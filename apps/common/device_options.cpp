/* SPDX-License-Identifier: BSD-3-Clause */
#include "device_options.h"

#include <cstdio>
#include <cstring>

#include "cli_numbers.h"
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
};

bool valid_ipv4_cidr(const char *s) {
    unsigned a, b, c, d, p;
    char tail;
    return std::sscanf(s, "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &p, &tail) == 5 && a <= 255 &&
           b <= 255 && c <= 255 && d <= 255 && p <= 32;
}

bool valid_mac(const char *s) {
    unsigned m[6];
    char tail;
    return std::sscanf(s, "%x:%x:%x:%x:%x:%x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &tail) ==
               6 &&
           m[0] <= 255 && m[1] <= 255 && m[2] <= 255 && m[3] <= 255 && m[4] <= 255 && m[5] <= 255;
}

} // namespace

std::vector<struct option> with_device_options(std::initializer_list<struct option> own) {
    std::vector<struct option> all(own);
    all.insert(all.end(), std::begin(kDeviceLongOptions), std::end(kDeviceLongOptions));
    all.push_back({nullptr, 0, nullptr, 0});
    return all;
}

OptionUse take_device_option(int c, const char *arg, DeviceOptions &o,
                             const DeviceOptionRules &rules, const char *&why) {
    uint64_t u = 0;
    switch (c) {
    case kOptDpdkPort:
        o.dpdk_port = arg;
        return OptionUse::Taken;
    case kOptIp:
        if (rules.check_address_syntax && !valid_ipv4_cidr(arg)) {
            why = "A.B.C.D/P";
            return OptionUse::BadValue;
        }
        o.ip = arg;
        return OptionUse::Taken;
    case kOptMac:
        if (rules.check_address_syntax && !valid_mac(arg)) {
            why = "xx:xx:xx:xx:xx:xx";
            return OptionUse::BadValue;
        }
        o.mac = arg;
        return OptionUse::Taken;
    case kOptEthMtu:
        if (!parse_u64(arg, 9600, u) || u < 576) {
            why = "576..9600";
            return OptionUse::BadValue;
        }
        o.eth_mtu = static_cast<uint32_t>(u);
        return OptionUse::Taken;
    case kOptCounters:
        o.counters = true;
        return OptionUse::Taken;
    case kOptEmbedded:
        o.embedded = true;
        o.embedded_given = true;
        return OptionUse::Taken;
    case kOptWorker:
        o.worker = true;
        return OptionUse::Taken;
    case kOptLoopback:
        o.loopback = true;
        return OptionUse::Taken;
    case kOptBusyPoll:
        o.busy_poll = true;
        return OptionUse::Taken;
    case kOptTimeout:
        if (!parse_seconds(arg, o.timeout_s)) {
            why = "seconds, 0 = never";
            return OptionUse::BadValue;
        }
        o.timeout_given = true;
        return OptionUse::Taken;
    case kOptLogLevel: {
        static const char *const levels[] = {"trace",   "debug", "info",     "warn",
                                             "warning", "error", "critical", "off"};
        bool ok = false;
        for (const char *l : levels)
            ok = ok || std::strcmp(l, arg) == 0;
        if (!ok) {
            why = "trace, debug, info, warn, error, off";
            return OptionUse::BadValue;
        }
        o.log_level = std::strcmp(arg, "warning") == 0 ? "warn" : arg;
        return OptionUse::Taken;
    }
    default:
        return OptionUse::NotMine;
    }
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

    // Worker mode needs a second lcore: with exactly one, run embedded.
    if (!o.worker && !o.embedded &&
        ((rules.embedded_without_eal_args && o.eal_args.empty()) ||
         eal_single_lcore(o.eal_args, rules.coremask_single_lcore)))
        o.embedded = true;
    if (o.eal_args.empty()) {
        o.eal_defaulted = true;
        o.eal_args = default_eal_args(o.embedded);
    }
    return "";
}

} // namespace droce::app
