/* SPDX-License-Identifier: BSD-3-Clause */
/* Configuration files (apps/common/config_file.cpp, config_device.cpp): every key of a
 * file reaches its DeviceOptions field (each one set to a value other than its default),
 * the [eal] section composes the EAL arguments only when the command line gives none,
 * the line scan pairs each entry with its line (comments, blank lines, CRLF, "\#"), and
 * config/droce.conf as shipped loads. */
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include <droce/cm.h>
#include <droce/droce.h>

#include "cli_numbers.h"

#include "config_device.h"
#include "config_file.h"
#include "device_options.h"
#include "eal_args.h"

using namespace droce;
using namespace droce::app;

namespace {

class TempConf {
  public:
    explicit TempConf(const std::string &text) {
        char tmpl[] = "/tmp/test_config_XXXXXX";
        const int fd = mkstemp(tmpl);
        EXPECT_GE(fd, 0);
        close(fd);
        path_ = tmpl;
        std::ofstream(path_, std::ios::binary) << text;
    }
    ~TempConf() { std::remove(path_.c_str()); }
    const std::string &path() const { return path_; }

  private:
    std::string path_;
};

const DeviceOptionRules kRules{};

} // namespace

TEST(ConfigFile, EveryKeyReachesItsField) {
    TempConf f("[engine]\nmode = worker\nbusy_poll = on\ncounters = yes\ntimeout = 7.5\n"
               "log_level = debug\n"
               "[port]\ndevice = net_memif0\nip = 10.1.2.3/16\nmac = 02:00:00:00:00:09\n"
               "ip6 = fd00::7/64\nip6 = fd01::7/64\ngateway = 10.0.0.254\n"
               "gateway = fd00::fe\nvlan = 100\nforce_dscp = 26\nforce_ttl = 9\n"
               "mtu = 4000\nline_rate = 2.5g\ntx_burst = 16\nqueue_stride = 3\n"
               "[qp]\ntimeout = 20\nretry_cnt = 3\nrnr_retry = 2\nmin_rnr_timer = 5\n"
               "dup_ack_interval_ns = 7000\nseq_nak_interval_ns = 0\nseq_nak_after_run = 9\n"
               "[cm]\nstateless_per_sec = 0\nstateless_burst = 2\n"
               "[dcqcn]\nenabled = off\necn = ect1\nrp_enabled = off\nnp_enabled = off\n"
               "dce_tcp_g = 1000\ndce_tcp_rtt_ns = 1234\ninitial_alpha_value = 512\n"
               "rpg_gd = 9\nrpg_min_dec_fac = 20\nrate_reduce_monitor_period_ns = 77\n"
               "rpg_time_reset_ns = 4567\n"
               "rpg_byte_reset = 999\nrpg_threshold = 7\nrpg_ai_rate_bps = 11\n"
               "rpg_hai_rate_bps = 22\nrpg_min_rate_bps = 3\nrpg_max_rate_bps = 44\n"
               "clamp_tgt_rate = on\nclamp_tgt_rate_after_time_inc = off\n"
               "rate_to_set_on_first_cnp_bps = 55\nmin_time_between_cnps_ns = 66\n"
               "cnp_dscp = 26\ncnp_802p_prio = 3\n"
               "[pfc]\npriority = 3\nstorm_ms = 250\ntx_xoff = 48\ntx_xon = 12\n"
               "[capture]\nfile = /tmp/x.pcapng\nsnaplen = 200\n");
    DeviceOptions o(60);
    const std::vector<ToolConfigKey> keys = {};
    ASSERT_EQ(apply_device_config(f.path(), o, "test", keys), "");
    EXPECT_TRUE(o.worker);
    EXPECT_FALSE(o.embedded);
    EXPECT_TRUE(o.busy_poll);
    EXPECT_TRUE(o.counters);
    EXPECT_DOUBLE_EQ(o.timeout_s, 7.5);
    EXPECT_TRUE(o.timeout_given);
    EXPECT_EQ(o.log_level, "debug");
    EXPECT_EQ(o.dpdk_port, "net_memif0");
    EXPECT_EQ(o.ip, "10.1.2.3/16");
    EXPECT_EQ(o.mac, "02:00:00:00:00:09");
    EXPECT_EQ(o.eth_mtu, 4000u);
    EXPECT_EQ(o.qp.timeout, 20);
    EXPECT_EQ(o.qp.retry_cnt, 3);
    EXPECT_EQ(o.qp.rnr_retry, 2);
    EXPECT_EQ(o.qp.min_rnr_timer, 5);
    EXPECT_EQ(o.rc_pacing.dup_ack_interval_ns, 7000u);
    EXPECT_EQ(o.rc_pacing.seq_nak_interval_ns, 0u);
    EXPECT_EQ(o.rc_pacing.seq_nak_after_run, 9u);
    EXPECT_EQ(o.cm_stateless_per_sec, 0u);
    EXPECT_EQ(o.cm_stateless_burst, 2u);
    EXPECT_FALSE(o.dcqcn);
    EXPECT_EQ(o.ecn, 2);
    const DcqcnParams &p = o.dcqcn_params;
    EXPECT_FALSE(p.rp_enabled);
    EXPECT_FALSE(p.np_enabled);
    EXPECT_EQ(p.dce_tcp_g, 1000u);
    EXPECT_EQ(p.dce_tcp_rtt_ns, 1234u);
    EXPECT_EQ(p.initial_alpha_value, 512u);
    EXPECT_EQ(p.rpg_gd, 9u);
    EXPECT_EQ(p.rpg_min_dec_fac, 20u);
    EXPECT_EQ(p.rpg_time_reset_ns, 4567u);
    EXPECT_EQ(p.rpg_byte_reset, 999u);
    EXPECT_EQ(p.rpg_threshold, 7u);
    EXPECT_EQ(p.rpg_ai_rate_bps, 11u);
    EXPECT_EQ(p.rpg_hai_rate_bps, 22u);
    EXPECT_EQ(p.rpg_min_rate_bps, 3u);
    EXPECT_EQ(p.rpg_max_rate_bps, 44u);
    EXPECT_TRUE(p.clamp_tgt_rate);
    EXPECT_FALSE(p.clamp_tgt_rate_after_time_inc);
    EXPECT_EQ(p.rate_to_set_on_first_cnp_bps, 55u);
    EXPECT_EQ(p.min_time_between_cnps_ns, 66u);
    EXPECT_EQ(p.cnp_dscp, 26);
    EXPECT_EQ(p.cnp_802p_prio, 3);
    EXPECT_EQ(o.pfc, 3);
    EXPECT_EQ(o.pfc_storm_ms, 250u);
    EXPECT_EQ(o.pfc_tx_xoff, 48u);
    EXPECT_EQ(o.pfc_tx_xon, 12u);
    EXPECT_EQ(o.capture, "/tmp/x.pcapng");
    EXPECT_EQ(o.capture_snaplen, 200u);
    EXPECT_EQ(o.ip6, (std::vector<std::string>{"fd00::7/64", "fd01::7/64"}));
    EXPECT_EQ(o.gateway, "10.0.0.254");
    EXPECT_EQ(o.gateway6, "fd00::fe");
    EXPECT_EQ(o.vlan, 100u);
    EXPECT_EQ(o.force_dscp, 26);
    EXPECT_EQ(o.force_ttl, 9);
    EXPECT_EQ(o.line_rate_bps, 2'500'000'000u);
    EXPECT_EQ(o.tx_burst, 16u);
    EXPECT_EQ(o.queue_stride, 3u);
    EXPECT_EQ(o.dcqcn_params.rate_reduce_monitor_period_ns, 77u);
}

/* --line-rate and [port] line_rate: k/m/g suffixes, nothing else after the number. */
/* [dcqcn] profile: the base the other keys change (so it must come first), and
 * --dcqcn-profile, which replaces the parameters as any flag overrides the file. */
TEST(ConfigFile, DcqcnProfile) {
    TempConf f("[dcqcn]\nprofile = fair\nrpg_ai_rate_bps = 300000\n");
    DeviceOptions o(60);
    ASSERT_EQ(apply_device_config(f.path(), o, "test"), "");
    EXPECT_EQ(o.dcqcn_profile, DcqcnProfile::Fair);
    const DcqcnParams fair = dcqcn_profile_params(DcqcnProfile::Fair);
    EXPECT_EQ(o.dcqcn_params.rpg_time_reset_ns, fair.rpg_time_reset_ns);
    EXPECT_EQ(o.dcqcn_params.dce_tcp_rtt_ns, fair.dce_tcp_rtt_ns);
    EXPECT_TRUE(o.dcqcn_params.clamp_tgt_rate);
    EXPECT_EQ(o.dcqcn_params.rpg_ai_rate_bps, 300'000u); /* the key after it wins */
    EXPECT_NE(fair.rpg_time_reset_ns, DcqcnParams{}.rpg_time_reset_ns);

    TempConf late("[dcqcn]\nrpg_threshold = 2\nprofile = fair\n");
    DeviceOptions l(60);
    EXPECT_NE(apply_device_config(late.path(), l, "test").find("must come before"),
              std::string::npos);
    TempConf bad("[dcqcn]\nprofile = fast\n");
    DeviceOptions b(60);
    EXPECT_NE(apply_device_config(bad.path(), b, "test").find("want connectx or fair"),
              std::string::npos);

    DeviceOptions c(60);
    ASSERT_EQ(apply_device_config(f.path(), c, "test"), "");
    const std::vector<struct option> lo = with_device_options({});
    char *argv[] = {nullptr};
    EXPECT_EQ(take_device_option(kOptDcqcnProfile, "connectx", argv, lo.data(), c, kRules), "");
    EXPECT_EQ(c.dcqcn_profile, DcqcnProfile::ConnectX);
    EXPECT_EQ(c.dcqcn_params.rpg_ai_rate_bps, DcqcnParams{}.rpg_ai_rate_bps);
    EXPECT_NE(take_device_option(kOptDcqcnProfile, "nope", argv, lo.data(), c, kRules), "");
}

TEST(ConfigFile, LineRateParsing) {
    uint64_t v = 0;
    EXPECT_TRUE(parse_rate_bps("1g", v));
    EXPECT_EQ(v, 1'000'000'000u);
    EXPECT_TRUE(parse_rate_bps("100M", v));
    EXPECT_EQ(v, 100'000'000u);
    EXPECT_TRUE(parse_rate_bps("25000000000", v));
    EXPECT_EQ(v, 25'000'000'000u);
    EXPECT_TRUE(parse_rate_bps(".5g", v));
    EXPECT_EQ(v, 500'000'000u);
    for (const char *bad : {"", "0", "-1g", "1x", "1gb", "g", "20t", "1e14", " 1g", "+1g", "inf",
                            "nan", "0x1p30", "1g ", "0.5"})
        EXPECT_FALSE(parse_rate_bps(bad, v)) << bad;
}

TEST(ConfigFile, ToolKeysGoToTheTool) {
    TempConf f("[port]\ngid_index = 3\n[engine]\nworkers = 2\n");
    DeviceOptions o(60);
    std::string gid, workers;
    const std::vector<ToolConfigKey> keys = {
        {"port", "gid_index", [&](const std::string &v) { return gid = v, std::string(); }},
        {"engine", "workers", [&](const std::string &v) { return workers = v, std::string(); }},
    };
    ASSERT_EQ(apply_device_config(f.path(), o, "test", keys), "");
    EXPECT_EQ(gid, "3");
    EXPECT_EQ(workers, "2");
    /* A tool without the key refuses it, naming the line. */
    EXPECT_EQ(apply_device_config(f.path(), o, "tool-x", {keys[0]}),
              f.path() + ":4: [engine] workers: not used by tool-x");
}

TEST(ConfigFile, EalFromTheFileOnlyWithoutEalArguments) {
    TempConf f("[eal]\nlcores = 3\nfile_prefix = p1\nvdev = net_null0\nvdev = net_null1\n");
    DeviceOptions o(60);
    ASSERT_EQ(apply_device_config(f.path(), o, "test"), "");
    o.ip = "10.0.0.1/24";
    ASSERT_EQ(finish_device_options(o, false, kRules), "");
    /* One lcore: embedded; the defaults with -l, --file-prefix replaced and the vdevs. */
    EXPECT_TRUE(o.embedded);
    auto has = [&](const std::string &a, const std::string &b) {
        for (size_t i = 0; i + 1 < o.eal_args.size(); ++i)
            if (o.eal_args[i] == a && o.eal_args[i + 1] == b)
                return true;
        return false;
    };
    EXPECT_TRUE(has("-l", "3"));
    EXPECT_TRUE(has("--file-prefix", "p1"));
    EXPECT_TRUE(has("--vdev", "net_null0"));
    EXPECT_TRUE(has("--vdev", "net_null1"));
    for (const auto &a : o.eal_args)
        EXPECT_EQ(a.rfind("--file-prefix=", 0), std::string::npos) << a;

    DeviceOptions c(60);
    ASSERT_EQ(apply_device_config(f.path(), c, "test"), "");
    c.ip = "10.0.0.1/24";
    c.eal_args = {"-l", "0,1", "--no-huge"};
    ASSERT_EQ(finish_device_options(c, false, kRules), "");
    EXPECT_EQ(c.eal_args, (std::vector<std::string>{"-l", "0,1", "--no-huge"}));
}

TEST(ConfigFile, SetEalOption) {
    std::vector<std::string> e = {"-l0", "--file-prefix=x", "-m", "512"};
    set_eal_option(e, "-l", {"-l", "--lcores"}, "1,2");
    set_eal_option(e, "--file-prefix", {"--file-prefix"}, "y");
    EXPECT_EQ(e, (std::vector<std::string>{"-l", "1,2", "--file-prefix", "y", "-m", "512"}));
    std::vector<std::string> n = {"--lcores", "0"};
    set_eal_option(n, "-l", {"-l", "--lcores"}, "5");
    set_eal_option(n, "--file-prefix", {"--file-prefix"}, "z");
    EXPECT_EQ(n, (std::vector<std::string>{"--lcores", "5", "--file-prefix", "z"}));
}

TEST(ConfigFile, LinesSurviveCommentsBlankLinesAndCrlf) {
    TempConf f("# head\r\n\r\n[a]   # the section\r\n  k1 = v1\r\n; not a comment here = x\r\n"
               "\n# k9 = commented\nk2 = with \\# hash # comment\n[b]\nk3=v3");
    ConfigFile cf;
    ASSERT_EQ(load_config_file(f.path(), cf), "");
    ASSERT_EQ(cf.sections.size(), 2u);
    const auto &a = cf.sections[0];
    EXPECT_EQ(a.line, 3);
    ASSERT_EQ(a.entries.size(), 3u);
    EXPECT_EQ(a.entries[0].key, "k1");
    EXPECT_EQ(a.entries[0].line, 4);
    EXPECT_EQ(a.entries[1].key, "; not a comment here");
    EXPECT_EQ(a.entries[1].line, 5);
    EXPECT_EQ(a.entries[2].key, "k2");
    /* rte_cfgfile looks at the first '#' only: once escaped, the rest is the value. */
    EXPECT_EQ(a.entries[2].value, "with # hash # comment");
    EXPECT_EQ(a.entries[2].line, 8);
    EXPECT_EQ(cf.sections[1].entries.at(0).line, 10);
}

TEST(ConfigFile, LimitsAreErrorsNotTruncation) {
    TempConf longkey("[a]\n" + std::string(64, 'k') + " = 1\n");
    ConfigFile cf;
    EXPECT_EQ(load_config_file(longkey.path(), cf),
              longkey.path() + ":2: key longer than 63 characters");
    TempConf longvalue("[a]\nk = " + std::string(256, 'v') + "\n");
    EXPECT_EQ(load_config_file(longvalue.path(), cf),
              longvalue.path() + ":2: value of 'k' longer than 255 characters");
    TempConf junk("[a] x\n");
    EXPECT_EQ(load_config_file(junk.path(), cf),
              junk.path() + ":1: text after the section heading: ' x'");
}

TEST(ConfigFile, ShippedDroceConfLoads) {
    const char *dir = std::getenv("DROCE_CONFIG_DIR");
    if (dir == nullptr)
        GTEST_SKIP() << "DROCE_CONFIG_DIR not set";
    for (const char *name :
         {"droce.conf", "memif-server.conf", "memif-client.conf", "af_packet.conf"}) {
        DeviceOptions o(60);
        const std::vector<ToolConfigKey> keys = {
            {"port", "gid_index", [](const std::string &) { return std::string(); }},
            {"engine", "workers", [](const std::string &) { return std::string(); }},
        };
        EXPECT_EQ(apply_device_config(std::string(dir) + "/" + name, o, "test", keys), "") << name;
    }
}

/* The RC pacing and CM stateless-limit flags: each reaches its field, a value out of range
 * is refused with the range, and the defaults are the library's (a tool that sets nothing
 * changes nothing). */
TEST(ConfigFile, RcPacingAndCmFlags) {
    DeviceOptions o(60);
    char prog[] = "t";
    char *argv[] = {prog, nullptr};
    const auto longs = with_device_options({});
    auto take = [&](int c, const char *v) {
        return take_device_option(c, v, argv, longs.data(), o, kRules);
    };
    const DeviceConfig::RcPacing lib_defaults;
    EXPECT_EQ(o.rc_pacing.dup_ack_interval_ns, lib_defaults.dup_ack_interval_ns);
    EXPECT_EQ(o.rc_pacing.seq_nak_interval_ns, lib_defaults.seq_nak_interval_ns);
    EXPECT_EQ(o.rc_pacing.seq_nak_after_run, lib_defaults.seq_nak_after_run);
    const CmChannelConfig cm_defaults;
    EXPECT_EQ(o.cm_stateless_per_sec, cm_defaults.stateless_per_sec);
    EXPECT_EQ(o.cm_stateless_burst, cm_defaults.stateless_burst);

    EXPECT_EQ(take(kOptDupAckInterval, "123"), "");
    EXPECT_EQ(take(kOptSeqNakInterval, "10000000000"), "");
    EXPECT_EQ(take(kOptSeqNakAfterRun, "0"), "");
    EXPECT_EQ(take(kOptCmStatelessRate, "1000000"), "");
    EXPECT_EQ(take(kOptCmStatelessBurst, "1"), "");
    EXPECT_EQ(o.rc_pacing.dup_ack_interval_ns, 123u);
    EXPECT_EQ(o.rc_pacing.seq_nak_interval_ns, 10'000'000'000u);
    EXPECT_EQ(o.rc_pacing.seq_nak_after_run, 0u);
    EXPECT_EQ(o.cm_stateless_per_sec, 1'000'000u);
    EXPECT_EQ(o.cm_stateless_burst, 1u);

    for (const char *bad : {"10000000001", "-1", "1ms", ""})
        EXPECT_NE(take(kOptDupAckInterval, bad), "") << bad;
    EXPECT_NE(take(kOptSeqNakAfterRun, "4097"), "");
    EXPECT_NE(take(kOptCmStatelessRate, "1000001"), "");
    EXPECT_NE(take(kOptCmStatelessBurst, "0"), "");
    EXPECT_NE(take(kOptCmStatelessBurst, "65537"), "");
    /* nothing refused changed a field */
    EXPECT_EQ(o.rc_pacing.dup_ack_interval_ns, 123u);
    EXPECT_EQ(o.cm_stateless_burst, 1u);
}
