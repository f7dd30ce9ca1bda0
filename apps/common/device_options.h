/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce's own options, common to the droce tools: which DPDK port and which address
 * (--dpdk-port --ip --mac --eth-mtu), how the engine runs (--embedded --worker
 * --busy-poll --log-level), --loopback, --counters and --timeout; their getopt_long
 * entries, their parsing and the checks once the whole command line is read (including
 * the EAL defaults). */
#pragma once

#include <getopt.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <droce/dcqcn.h>
#include <droce/droce.h>

#include "option_table.h"

namespace droce::app {

/** The RC QP attributes the tools set (RTR's min_rnr_timer, RTS's timeout and retries):
 * ibv_rc_pingpong's and perftest's values unless a configuration file's [qp] says
 * otherwise. */
struct QpDefaults {
    uint8_t timeout = 14;       /**< 4.096 us * 2^timeout (0 = infinite) */
    uint8_t retry_cnt = 7;      /**< 0..7 */
    uint8_t rnr_retry = 7;      /**< 0..7 (7 = infinite) */
    uint8_t min_rnr_timer = 12; /**< RNR timer code 0..31 */
};

/** What a configuration file's [eal] section asked for; used only when the command line
 * gives no EAL arguments (then these replace the defaults piece by piece). */
struct ConfigEal {
    std::vector<std::string> args; /**< args = ... (split at blanks) */
    bool args_given = false;
    std::string lcores;             /**< lcores = ...: "-l" */
    std::string file_prefix;        /**< file_prefix = ...: "--file-prefix" */
    std::vector<std::string> vdevs; /**< vdev = ... (repeatable): "--vdev" each */
    bool any() const {
        return args_given || !lcores.empty() || !file_prefix.empty() || !vdevs.empty();
    }
};

struct DeviceOptions {
    explicit DeviceOptions(double default_timeout_s) : timeout_s(default_timeout_s) {}

    std::string dpdk_port;          /**< --dpdk-port NAME|ID */
    std::string ip;                 /**< --ip A.B.C.D/P */
    std::string mac;                /**< --mac */
    uint32_t eth_mtu = 0;           /**< --eth-mtu */
    bool dcqcn = true;              /**< --dcqcn on|off (DeviceConfig::dcqcn) */
    int ecn = -1;                   /**< --ecn off|ect0|ect1 (EcnMode); -1 = the default */
    int pfc = -1;                   /**< --pfc PRIO (DeviceConfig::pfc_priority); -1 = none */
    uint64_t line_rate_bps = 0;     /**< --line-rate (DeviceConfig::line_rate_bps); 0 = link's */
    uint32_t tx_burst = 0;          /**< --tx-burst N (DeviceConfig::tx_burst_frames) */
    uint16_t queue_stride = 0;      /**< --queue-stride N (DeviceConfig::queue_stride) */
    std::vector<std::string> ip6;   /**< --ip X:Y::Z/P[@VID] (DeviceConfig::ipv6_cidrs) */
    std::string gateway, gateway6;  /**< --gateway A.B.C.D | X:Y::Z */
    uint16_t vlan = 0;              /**< --vlan VID */
    bool rocev1_gids = false;       /**< --gid-type v1 (DeviceConfig::rocev1_gids) */
    int force_dscp = -1;            /**< --force-dscp D (DeviceConfig::force_tclass = D << 2) */
    int force_ttl = -1;             /**< --force-ttl N (DeviceConfig::force_hop_limit) */
    bool counters = false;          /**< --counters */
    bool embedded = false;          /**< --embedded (set by default with --loopback) */
    bool embedded_given = false;    /**< --embedded was on the command line */
    bool worker = false;            /**< --worker: force worker mode (for --loopback) */
    bool loopback = false;          /**< --loopback */
    bool busy_poll = false;         /**< --busy-poll */
    /** DeviceConfig::rtr_nonblocking: set by tools whose one poll loop must never wait
     * (droce-nvmf); no command-line flag. */
    bool rtr_nonblocking = false;
    double timeout_s;               /**< --timeout (0 = never) */
    bool timeout_given = false;     /**< --timeout was on the command line */
    std::string log_level = "warn"; /**< --log-level (droce's control plane) */
    std::string capture;            /**< --capture FILE.pcapng (DeviceConfig::capture) */
    uint32_t capture_snaplen = 0;   /**< --capture-snaplen (0 = whole frames) */

    // ---- set only by a configuration file (--config) ----
    std::string config_path;       /**< --config FILE ("" = none) */
    ConfigEal config_eal;          /**< its [eal] section */
    bool mode_from_config = false; /**< [engine] mode set embedded/worker (a flag overrides) */
    DcqcnParams dcqcn_params;      /**< [dcqcn] (ecn: the ecn field above) */
    /** [dcqcn] profile or --dcqcn-profile: the base of dcqcn_params (the flag replaces
     * dcqcn_params with the profile's; the key must precede the other [dcqcn] keys). */
    DcqcnProfile dcqcn_profile = DcqcnProfile::ConnectX;
    bool dcqcn_keys_given = false; /**< a [dcqcn] parameter key was read */
    uint32_t pfc_storm_ms = 100;   /**< [pfc] storm_ms (DeviceConfig::pfc_storm_ms) */
    uint32_t pfc_tx_xoff = 0;      /**< --pfc-tx XOFF,XON, [pfc] tx_xoff (frames; 0 = off) */
    uint32_t pfc_tx_xon = 0;       /**< [pfc] tx_xon */
    QpDefaults qp;                 /**< [qp] */
    /** --dup-ack-interval-ns --seq-nak-interval-ns --seq-nak-after-run, [qp] keys of the
     * same names (DeviceConfig::rc_pacing) */
    DeviceConfig::RcPacing rc_pacing;
    /** --cm-stateless-per-sec --cm-stateless-burst, [cm] stateless_per_sec and
     * stateless_burst (CmChannelConfig; tools that use the CM) */
    uint32_t cm_stateless_per_sec = 1000;
    uint32_t cm_stateless_burst = 64;

    std::vector<std::string> eal_args; /**< before "--" (or the defaults) */
    bool eal_defaulted = false;        /**< eal_args are default_eal_args() */
};

/** getopt_long values of the device options (long only); a tool's own long-only options
 * start at kFirstToolOption. */
enum DeviceOption : int {
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
    kOptDcqcn,
    kOptEcn,
    kOptPfc,
    kOptConfig,
    kOptCapture,
    kOptCaptureSnaplen,
    kOptVlan,
    kOptGateway,
    kOptForceDscp,
    kOptForceTtl,
    kOptLineRate,
    kOptTxBurst,
    kOptQueueStride,
    kOptPfcTx,
    kOptGidType,
    kOptDupAckInterval,
    kOptSeqNakInterval,
    kOptSeqNakAfterRun,
    kOptCmStatelessRate,
    kOptCmStatelessBurst,
    kOptDcqcnProfile,
    kFirstToolOption = 1100,
};

/** Ranges of the RC responder pacing and CM stateless-answer limits (flags and config
 * keys alike): wide enough for any real setting, narrow enough to catch a unit mistake. */
constexpr uint64_t kMaxPacingNs = 10'000'000'000ull; /* 10 s */
constexpr uint64_t kMaxSeqNakRun = 4096;
constexpr uint64_t kMaxStatelessPerSec = 1'000'000; /* 0 = no limit */
constexpr uint64_t kMaxStatelessBurst = 65536;      /* at least 1 */

/** A tool's long options, then the device options, then the terminating entry. */
std::vector<struct option> with_device_options(std::initializer_list<struct option> own);

/** Where the tools differ (each keeps its established behaviour). */
struct DeviceOptionRules {
    /** --ip and --mac are checked for syntax while parsing; otherwise a bad one is
     * reported when the device is opened. */
    bool check_address_syntax = true;
    /** Inserted into the --loopback-with-addresses error: " (10.0.0.1/24, 10.0.0.2/24)". */
    const char *loopback_addresses = "";
    /** No EAL arguments means embedded mode (the default EAL then has one lcore). */
    bool embedded_without_eal_args = false;
    /** "-c MASK" with one bit counts as a single lcore. */
    bool coremask_single_lcore = true;
};

/** The default: of a tool's getopt_long switch (c, its value arg, the argv and long
 * options given to getopt_long): takes a device option into o and returns "", or returns
 * the message: "invalid value ..." for a device option, getopt's ':' (missing value) and
 * '?' (unknown option), or any other unknown result. */
std::string take_device_option(int c, const char *arg, char *const *argv,
                               const struct option *long_options, DeviceOptions &o,
                               const DeviceOptionRules &rules);

/** The device options as a tool table's extras (option_table.h): parsed into o under
 * rules, their errors as take_device_option's. */
ExtraOptions device_option_extras(DeviceOptions &o, const DeviceOptionRules &rules);

/** The checks and defaults once the whole command line is parsed: --worker/--embedded,
 * --loopback against a <host> and addresses, --ip required, embedded mode for a single
 * lcore, the default EAL arguments. Returns "" or the error message. */
std::string finish_device_options(DeviceOptions &o, bool has_host, const DeviceOptionRules &rules);

} // namespace droce::app
