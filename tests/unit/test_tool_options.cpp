/* SPDX-License-Identifier: BSD-3-Clause */
/* The four tools' command lines (droce-perf, droce-pingpong, droce-nvmf, droce-fabric):
 * command lines as the scripts under tests/ and bench/ write them parse to the settings
 * they always did (the expectations were run against the hand-written parsers before the
 * shared table replaced them), and a bad value or unknown option is refused naming it. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../../apps/droce-fabric/fabric_options.h"
#include "../../apps/droce-nvmf/nvmf_options.h"
#include "../../apps/droce-perf/options.h"
#include "../../apps/droce-perf/peak.h"
#include "../../apps/droce-perf/thread_cpus.h"
#include "../../apps/droce-pingpong/options.h"

using droce::app::ParseResult;

namespace {

/** argv from words; argv[0] is the tool. */
struct Argv {
    explicit Argv(std::vector<std::string> words) : w(std::move(words)) {
        for (auto &s : w)
            p.push_back(s.data());
        p.push_back(nullptr);
    }
    int argc() const { return static_cast<int>(w.size()); }
    char **argv() { return p.data(); }
    std::vector<std::string> w;
    std::vector<char *> p;
};

template <typename O, typename F> ParseResult run(F parse, std::vector<std::string> words, O &o) {
    Argv a(std::move(words));
    return parse(a.argc(), a.argv(), o);
}

ParseResult perf(std::vector<std::string> words, droce::perf::Options &o) {
    words.insert(words.begin(), "droce-perf");
    return run(droce::perf::parse_command_line, std::move(words), o);
}

ParseResult pingpong(std::vector<std::string> words, droce::pingpong::Options &o) {
    words.insert(words.begin(), "droce-pingpong");
    return run(droce::pingpong::parse_command_line, std::move(words), o);
}

int nvmf(std::vector<std::string> words, droce::nvmf::Options &o) {
    words.insert(words.begin(), "droce-nvmf");
    Argv a(std::move(words));
    return droce::nvmf::parse_command_line(a.argc(), a.argv(), o);
}

ParseResult fabric(std::vector<std::string> words, droce::fabric_app::CommandLine &cl) {
    words.insert(words.begin(), "droce-fabric");
    return run(droce::fabric_app::parse_command_line, std::move(words), cl);
}

using Strings = std::vector<std::string>;

} // namespace

// ---------------------------------------------------------------- droce-perf

/* The help's example against a Soft-RoCE peer on a tap (perftest_rxe.sh's client). */
TEST(PerfOptions, ClientAgainstRxe) {
    droce::perf::Options o;
    ASSERT_EQ(perf({"write_bw", "-l", "0", "--no-huge", "--", "--ip", "10.77.0.100/24", "--mac",
                    "02:00:00:00:01:00", "-x", "1", "-s", "65536", "-n", "1000", "-F", "10.77.0.2"},
                   o),
              ParseResult::Run);
    EXPECT_EQ(o.verb, droce::perf::Verb::Write);
    EXPECT_EQ(o.kind, droce::perf::Kind::Bw);
    EXPECT_EQ(o.eal_args, (Strings{"-l", "0", "--no-huge"}));
    EXPECT_EQ(o.ip, "10.77.0.100/24");
    EXPECT_EQ(o.mac, "02:00:00:00:01:00");
    EXPECT_EQ(o.gid_idx, 1);
    EXPECT_EQ(o.size, 65536u);
    EXPECT_TRUE(o.size_given);
    EXPECT_EQ(o.iters, 1000u);
    EXPECT_EQ(o.servername, "10.77.0.2");
    EXPECT_EQ(o.tx_depth, 128u);
    EXPECT_EQ(o.cq_mod, 32u); /* perftest's 100, at most a quarter of -t */
    EXPECT_EQ(o.tcp_port, 18515);
    EXPECT_DOUBLE_EQ(o.timeout_s, 120);
    EXPECT_TRUE(o.embedded);
}

/* perftest's -N / --noPeak. */
TEST(PerfOptions, NoPeak) {
    droce::perf::Options o;
    ASSERT_EQ(perf({"write_bw", "--", "--loopback", "-N"}, o), ParseResult::Run);
    EXPECT_TRUE(o.no_peak);
    droce::perf::Options l;
    ASSERT_EQ(perf({"write_bw", "--", "--loopback", "--noPeak"}, l), ParseResult::Run);
    EXPECT_TRUE(l.no_peak);
    droce::perf::Options d;
    ASSERT_EQ(perf({"write_bw", "--", "--loopback"}, d), ParseResult::Run);
    EXPECT_FALSE(d.no_peak);
    droce::perf::Options lat; /* a latency test has no peak to drop: refused, as -l is */
    EXPECT_EQ(perf({"write_lat", "--", "--loopback", "-N"}, lat), ParseResult::ExitError);
}

/* test_perf_memif.sh / interop: post lists and several QPs. */
TEST(PerfOptions, PostListAndQps) {
    droce::perf::Options o;
    ASSERT_EQ(
        perf({"read_bw", "--", "--loopback", "-s", "64", "-n", "512", "-l", "8", "-q", "2"}, o),
        ParseResult::Run);
    EXPECT_EQ(o.verb, droce::perf::Verb::Read);
    EXPECT_EQ(o.size, 64u);
    EXPECT_EQ(o.iters, 512u);
    EXPECT_EQ(o.post_list, 8u);
    EXPECT_EQ(o.num_qps, 2u);
    EXPECT_EQ(o.cq_mod, 8u);
    EXPECT_TRUE(o.cq_mod_from_post_list);
    EXPECT_TRUE(o.loopback);
    EXPECT_TRUE(o.embedded);
}

TEST(PerfOptions, WorkersAndDepths) {
    droce::perf::Options o;
    ASSERT_EQ(perf({"send_bw", "--", "--loopback", "-s", "1024", "-t", "16", "-r", "32",
                    "--workers", "2", "-n", "100"},
                   o),
              ParseResult::Run);
    EXPECT_EQ(o.tx_depth, 16u);
    EXPECT_EQ(o.rx_depth, 32u);
    EXPECT_EQ(o.workers, 2u);
    EXPECT_TRUE(o.worker);
    EXPECT_FALSE(o.embedded);
    EXPECT_EQ(o.cq_mod, 4u);
    EXPECT_TRUE(o.eal_defaulted);
    EXPECT_NE(std::find(o.eal_args.begin(), o.eal_args.end(), "--lcores"), o.eal_args.end());
}

TEST(PerfOptions, AtomicsAndUd) {
    droce::perf::Options a;
    ASSERT_EQ(perf({"atomic_bw", "--", "--loopback", "-A", "CMP_AND_SWAP", "-n", "100"}, a),
              ParseResult::Run);
    EXPECT_EQ(a.verb, droce::perf::Verb::Atomic);
    EXPECT_TRUE(a.atomic_cas);
    EXPECT_EQ(a.size, 8u);
    droce::perf::Options u;
    ASSERT_EQ(perf({"send_lat", "--", "--loopback", "-c", "UD", "-n", "300"}, u), ParseResult::Run);
    EXPECT_TRUE(u.ud);
    EXPECT_EQ(u.kind, droce::perf::Kind::Lat);
    EXPECT_EQ(u.size, 2u);
    EXPECT_EQ(u.tx_depth, 1u);
    EXPECT_EQ(u.cq_mod, 1u);
    EXPECT_EQ(u.iters, 300u);
}

/* perf_cm_rxe.sh / test_perf_cm_memif.sh: RDMA-CM with its timers. */
TEST(PerfOptions, RdmaCm) {
    droce::perf::Options o;
    ASSERT_EQ(perf({"write_bw", "--", "--ip", "10.0.0.1/24", "-R", "--cm-response-timeout", "18",
                    "--cm-retries", "3", "-p", "7471", "-d", "droce0", "-i", "1", "--timeout", "30",
                    "10.0.0.2"},
                   o),
              ParseResult::Run);
    EXPECT_TRUE(o.rdma_cm);
    EXPECT_EQ(o.cm_response_timeout, 18);
    EXPECT_EQ(o.cm_retries, 3);
    EXPECT_EQ(o.tcp_port, 7471);
    EXPECT_EQ(o.ib_dev, "droce0");
    EXPECT_DOUBLE_EQ(o.timeout_s, 30);
    EXPECT_TRUE(o.timeout_given);
    EXPECT_EQ(o.servername, "10.0.0.2");
}

TEST(PerfOptions, ReportingAndLimits) {
    droce::perf::Options o;
    ASSERT_EQ(perf({"write_bw",
                    "--",
                    "--loopback",
                    "-D",
                    "2",
                    "--run_infinitely",
                    "--report_gbits",
                    "--out_json_file",
                    "x.json",
                    "-m",
                    "4096",
                    "-S",
                    "3",
                    "-u",
                    "7",
                    "-o",
                    "8",
                    "-Q",
                    "16",
                    "--buf-malloc",
                    "--dcqcn=off",
                    "--pfc=0"},
                   o),
              ParseResult::Run);
    EXPECT_DOUBLE_EQ(o.duration_s, 2);
    EXPECT_TRUE(o.run_infinitely);
    EXPECT_DOUBLE_EQ(o.timeout_s, 122); /* -D's default timeout: -D + 120 */
    EXPECT_TRUE(o.report_gbits);
    EXPECT_TRUE(o.out_json);
    EXPECT_EQ(o.out_json_file, "x.json");
    EXPECT_EQ(o.mtu, 4096u);
    EXPECT_EQ(o.sl, 3);
    EXPECT_EQ(o.qp.timeout, 7);
    EXPECT_EQ(o.out_reads, 8u);
    EXPECT_EQ(o.cq_mod, 16u);
    EXPECT_TRUE(o.buf_malloc);
    EXPECT_FALSE(o.dcqcn);
    EXPECT_EQ(o.pfc, 0);
}

TEST(PerfOptions, HelpAndErrors) {
    droce::perf::Options h1, h2;
    EXPECT_EQ(perf({"--help"}, h1), ParseResult::ExitOk);
    EXPECT_EQ(perf({"write_bw", "--", "-h"}, h2), ParseResult::ExitOk);
    const std::vector<Strings> bad = {
        {"write_bw", "--", "--loopback", "-s", "0"},
        {"write_bw", "--", "--loopback", "-m", "1000"},
        {"write_bw", "--", "--loopback", "-z"},
        {"write_bw", "--", "--loopback", "-n"},
        {"write_lat", "--", "--loopback", "-q", "2"},
        {"send_bw", "--", "--loopback", "-c", "XRC"},
        {"write_bw", "--", "--loopback", "-i", "2"},
        {"write_bw", "--", "--loopback", "--workers", "500"},
        {"write_bw", "--", "--loopback", "--vlan", "0"},
        {"write_bw", "--", "--ip", "10.0.0.1/24", "a", "b"},
    };
    for (const auto &words : bad) {
        droce::perf::Options o;
        EXPECT_EQ(perf(words, o), ParseResult::ExitError) << words[3];
    }
}

// ---------------------------------------------------------------- droce-pingpong

/* pingpong_rxe.sh's droce side: a client on a tap. */
TEST(PingpongOptions, ClientAgainstRxe) {
    droce::pingpong::Options o;
    ASSERT_EQ(pingpong({"-l", "0,1", "--no-huge", "--", "--ip", "10.77.0.100/24", "--mac",
                        "02:00:00:00:01:00", "-g", "1", "10.77.0.2"},
                       o),
              ParseResult::Run);
    EXPECT_EQ(o.eal_args, (Strings{"-l", "0,1", "--no-huge"}));
    EXPECT_EQ(o.gid_idx, 1);
    EXPECT_EQ(o.servername, "10.77.0.2");
    EXPECT_EQ(o.size, 4096u);
    EXPECT_EQ(o.mtu, droce::Mtu::Mtu1024);
    EXPECT_EQ(o.iters, 1000u);
    EXPECT_DOUBLE_EQ(o.timeout_s, 60);
    EXPECT_FALSE(o.embedded);
}

TEST(PingpongOptions, LoopbackDemoAndUd) {
    droce::pingpong::Options c;
    ASSERT_EQ(pingpong({"-l", "0", "--", "--loopback", "-c"}, c), ParseResult::Run);
    EXPECT_TRUE(c.validate);
    EXPECT_TRUE(c.loopback);
    EXPECT_TRUE(c.embedded);
    droce::pingpong::Options u;
    ASSERT_EQ(pingpong({"--", "--loopback", "--ud", "-n", "50"}, u), ParseResult::Run);
    EXPECT_TRUE(u.ud);
    EXPECT_EQ(u.size, 2048u);
    EXPECT_EQ(u.iters, 50u);
    droce::pingpong::Options s;
    ASSERT_EQ(pingpong({"--", "--loopback", "--ud", "-s", "512"}, s), ParseResult::Run);
    EXPECT_EQ(s.size, 512u);
}

TEST(PingpongOptions, EveryIbvFlag) {
    droce::pingpong::Options o;
    ASSERT_EQ(pingpong({"--",  "--ip", "10.0.0.1/24", "-p",     "9999", "-d",      "droce0",
                        "-i",  "1",    "-s",          "1024",   "-m",   "4096",    "-r",
                        "100", "-n",   "10",          "-l",     "3",    "-e",      "-g",
                        "2",   "--ip", "fd00::1/64",  "--vlan", "7",    "10.0.0.2"},
                       o),
              ParseResult::Run);
    EXPECT_EQ(o.tcp_port, 9999);
    EXPECT_EQ(o.ib_dev, "droce0");
    EXPECT_EQ(o.ib_port, 1);
    EXPECT_EQ(o.size, 1024u);
    EXPECT_EQ(o.mtu, droce::Mtu::Mtu4096);
    EXPECT_EQ(o.rx_depth, 100u);
    EXPECT_EQ(o.iters, 10u);
    EXPECT_EQ(o.sl, 3);
    EXPECT_TRUE(o.events);
    EXPECT_EQ(o.gid_idx, 2);
    EXPECT_EQ(o.ip6, Strings{"fd00::1/64"});
    EXPECT_EQ(o.vlan, 7);
    EXPECT_EQ(o.servername, "10.0.0.2");
    droce::pingpong::Options z;
    ASSERT_EQ(pingpong({"--", "--loopback", "-s", "0", "-m", "256"}, z), ParseResult::Run);
    EXPECT_EQ(z.size, 0u);
    EXPECT_EQ(z.mtu, droce::Mtu::Mtu256);
}

/* -e: worker mode only, and perftest's refusals (write_lat, -D, --run_infinitely). */
TEST(PerfOptions, Events) {
    droce::perf::Options o;
    ASSERT_EQ(perf({"send_lat", "--", "--loopback", "--worker", "-e"}, o), ParseResult::Run);
    EXPECT_TRUE(o.events);
    droce::perf::Options plain;
    ASSERT_EQ(perf({"send_lat", "--", "--loopback", "--worker"}, plain), ParseResult::Run);
    EXPECT_FALSE(plain.events);
    const std::vector<std::vector<std::string>> refused = {
        {"write_lat", "--", "--loopback", "--worker", "-e"},
        {"write_bw", "--", "--loopback", "--worker", "-e", "-D", "2"},
        {"write_bw", "--", "--loopback", "--worker", "-e", "--run_infinitely"},
        {"send_bw", "--", "--loopback", "-e"}, /* embedded: nothing would run the engine */
    };
    for (const auto &words : refused) {
        droce::perf::Options r;
        EXPECT_EQ(perf(words, r), ParseResult::ExitError) << words[0] << " " << words.back();
    }
}

TEST(PerfOptions, Threads) {
    droce::perf::Options one;
    ASSERT_EQ(perf({"write_bw", "--", "--loopback", "-q", "4"}, one), ParseResult::Run);
    EXPECT_EQ(one.threads, 1u); /* the default: one thread steps every QP */
    droce::perf::Options o;
    ASSERT_EQ(perf({"write_bw", "-l", "0,1,2", "--", "--loopback", "--workers", "2", "--threads",
                    "2", "-q", "4"},
                   o),
              ParseResult::Run);
    EXPECT_EQ(o.threads, 2u);
    EXPECT_EQ(o.workers, 2u);
    EXPECT_FALSE(o.embedded);
    droce::perf::Options uneven; /* 3 QPs over 2 threads: 2 + 1 */
    ASSERT_EQ(
        perf({"send_bw", "--", "--loopback", "--worker", "--threads", "2", "-q", "3"}, uneven),
        ParseResult::Run);
    EXPECT_EQ(uneven.threads, 2u);
    droce::perf::Options all; /* one QP per thread */
    ASSERT_EQ(perf({"atomic_bw", "--", "--worker", "--threads", "8", "-q", "8", "10.0.0.2", "--ip",
                    "10.0.0.1/24"},
                   all),
              ParseResult::Run);
    EXPECT_EQ(all.threads, 8u);
    const std::vector<std::vector<std::string>> refused = {
        {"write_bw", "--", "--loopback", "--worker", "--threads", "0"},
        {"write_bw", "--", "--loopback", "--worker", "--threads", "2"}, /* -q 1 */
        {"write_bw", "--", "--loopback", "--worker", "--threads", "3", "-q", "2"},
        {"write_lat", "--", "--loopback", "--worker", "--threads", "2"},
        {"write_bw", "--", "--loopback", "--threads", "2", "-q", "2"}, /* embedded */
        {"write_bw", "--", "--loopback", "--embedded", "--threads", "2", "-q", "2"},
        {"write_bw", "--", "--ip", "10.0.0.1/24", "--worker", "-R", "--threads", "2", "-q", "2"},
        {"send_bw", "--", "--loopback", "--worker", "-e", "--threads", "2", "-q", "2"},
        {"write_bw", "--", "--loopback", "--worker", "--run_infinitely", "--threads", "2", "-q",
         "2"},
    };
    for (const auto &words : refused) {
        droce::perf::Options r;
        EXPECT_EQ(perf(words, r), ParseResult::ExitError) << words[0] << " " << words[4];
    }
}

TEST(PingpongOptions, EventsNeedTheWorker) {
    droce::pingpong::Options o;
    ASSERT_EQ(pingpong({"--", "--loopback", "--worker", "-e"}, o), ParseResult::Run);
    EXPECT_TRUE(o.events);
    droce::pingpong::Options e;
    EXPECT_EQ(pingpong({"--", "--loopback", "-e"}, e), ParseResult::ExitError);
}

TEST(PingpongOptions, HelpAndErrors) {
    for (const char *h : {"-h", "-H", "--help"}) {
        droce::pingpong::Options o;
        EXPECT_EQ(pingpong({"--", h}, o), ParseResult::ExitOk) << h;
    }
    const std::vector<Strings> bad = {
        {"--", "--loopback", "-s", "abc"}, {"--", "--loopback", "-m", "1000"},
        {"--", "--loopback", "-i", "2"},   {"--", "--loopback", "-o"},
        {"--", "--loopback", "-t"},        {"--", "--loopback", "-n"},
        {"--", "--loopback", "-g", "-1"},  {"--", "--loopback", "-z"},
        {"--", "--ip", "fd::1"},           {"--", "10.0.0.9"},
    };
    for (const auto &words : bad) {
        droce::pingpong::Options o;
        EXPECT_EQ(pingpong(words, o), ParseResult::ExitError) << words[1];
    }
}

// ---------------------------------------------------------------- droce-nvmf

/* test_nvmf_memif.sh's two targets. */
TEST(NvmfOptions, RamAndFileTargets) {
    droce::nvmf::Options r;
    ASSERT_EQ(nvmf({"-l", "0", "--no-huge", "--", "--ip", "10.82.0.1/24", "--counters", "--ram",
                    "16M", "--host", "nqn.2014-08.org.nvmexpress:uuid:droce-nvmf-perf"},
                   r),
              0);
    EXPECT_EQ(r.eal_args, (Strings{"-l", "0", "--no-huge"}));
    ASSERT_EQ(r.namespaces.size(), 1u);
    EXPECT_TRUE(r.namespaces[0].ram);
    EXPECT_EQ(r.namespaces[0].size, 16u << 20);
    EXPECT_EQ(r.hosts, Strings{"nqn.2014-08.org.nvmexpress:uuid:droce-nvmf-perf"});
    EXPECT_TRUE(r.counters);
    EXPECT_EQ(r.port, 4420);
    EXPECT_EQ(r.nqn, "nqn.2026-11.io.droce:nvmf0");
    EXPECT_EQ(r.block_size, 512u);

    droce::nvmf::Options f;
    ASSERT_EQ(nvmf({"--",       "--ip",  "10.82.0.1/24", "--file", "/tmp/disk.img", "--size",
                    "8M",       "-p",    "4421",         "-v",     "--nqn",         "nqn.x",
                    "--serial", "S1",    "--block-size", "4096",   "--io-queues",   "4",
                    "--mdts",   "65536", "--in-capsule", "4096",   "--namespace",   "ram:1M",
                    "--host",   "h1",    "--host",       "h2"},
                   f),
              0);
    ASSERT_EQ(f.namespaces.size(), 2u);
    EXPECT_FALSE(f.namespaces[0].ram);
    EXPECT_EQ(f.namespaces[0].path, "/tmp/disk.img");
    EXPECT_EQ(f.namespaces[0].size, 8u << 20);
    EXPECT_TRUE(f.namespaces[1].ram);
    EXPECT_EQ(f.namespaces[1].size, 1u << 20);
    EXPECT_EQ(f.port, 4421);
    EXPECT_TRUE(f.verbose);
    EXPECT_EQ(f.nqn, "nqn.x");
    EXPECT_EQ(f.serial, "S1");
    EXPECT_EQ(f.block_size, 4096u);
    EXPECT_EQ(f.io_queues, 4);
    EXPECT_EQ(f.mdts, 65536u);
    EXPECT_EQ(f.in_capsule, 4096u);
    EXPECT_EQ(f.hosts, (Strings{"h1", "h2"}));
}

TEST(NvmfOptions, HelpAndErrors) {
    droce::nvmf::Options h;
    EXPECT_EQ(nvmf({"--", "--help"}, h), 2);
    const std::vector<Strings> bad = {
        {"--", "--ip", "10.0.0.1/24", "--ram", "0"},
        {"--", "--ip", "10.0.0.1/24", "--ram", "1T"},
        {"--", "--ip", "10.0.0.1/24", "--ram", "1M", "--block-size", "1024"},
        {"--", "--ip", "10.0.0.1/24", "--ram", "1M", "--mdts", "5000"},
        {"--", "--ip", "10.0.0.1/24", "--ram", "1M", "--in-capsule", "17"},
        {"--", "--ip", "10.0.0.1/24", "--ram", "1M", "--io-queues", "65"},
        {"--", "--ip", "10.0.0.1/24", "--ram", "1M", "-p", "0"},
        {"--", "--ip", "10.0.0.1/24", "--namespace", "disk:1"},
        {"--", "--ip", "10.0.0.1/24", "--ram", "1M", "--no-such"},
        {"--", "--ip", "10.0.0.1/24"}, /* no namespace */
        {"--", "--ram", "1M"},         /* no --ip */
    };
    for (const auto &words : bad) {
        droce::nvmf::Options o;
        EXPECT_EQ(nvmf(words, o), 1) << words.back();
    }
}

// ---------------------------------------------------------------- droce-fabric

/* test_fabric_memif.sh's fabric (the PFC case). */
TEST(FabricOptions, MemifTest) {
    droce::fabric_app::CommandLine cl;
    ASSERT_EQ(fabric({"-l", "0", "--no-huge", "--vdev=x", "--", "--to", "1", "--rate-gbps", "1",
                      "--secs", "50", "--sample-us", "100", "--csv", "/tmp/d.csv", "--pfc",
                      "20000,17800", "--no-ecn"},
                     cl),
              ParseResult::Run);
    const auto &o = cl.opts;
    EXPECT_EQ(cl.eal, (Strings{"droce-fabric", "-l", "0", "--no-huge", "--vdev=x"}));
    EXPECT_EQ(o.to, std::vector<uint16_t>{1});
    EXPECT_EQ(o.bp.rate_bps, 1'000'000'000u);
    EXPECT_DOUBLE_EQ(o.secs, 50);
    EXPECT_EQ(o.sample_us, 100u);
    EXPECT_EQ(o.csv, "/tmp/d.csv");
    EXPECT_EQ(o.bp.pfc_xoff_bytes, 20000u);
    EXPECT_EQ(o.bp.pfc_xon_bytes, 17800u);
    EXPECT_FALSE(o.bp.ecn);
    /* droce-fabric's own defaults */
    EXPECT_TRUE(o.bp.mark_at_dequeue);
    EXPECT_EQ(o.bp.buffer_bytes, 2'000'000u);
    EXPECT_DOUBLE_EQ(o.bp.pmax, 0.05);
    EXPECT_EQ(o.seed, 1u);
    EXPECT_EQ(o.queues, 1);
    EXPECT_EQ(o.honour_pfc, -1);
}

/* bench/soak_memif.sh's forwarder with every fault. */
TEST(FabricOptions, SoakForwarder) {
    droce::fabric_app::CommandLine cl;
    ASSERT_EQ(
        fabric({"-l",       "0",         "--",        "--to",      "0,1",    "--rate-gbps", "2.5",
                "--buffer", "8000000",   "--queues",  "2",         "--loss", "0.01",        "--dup",
                "0.01",     "--reorder", "0.02",      "--corrupt", "0.005",  "--delay-us",  "20",
                "--seed",   "7",         "--idle-us", "20",        "--secs", "660"},
               cl),
        ParseResult::Run);
    const auto &o = cl.opts;
    EXPECT_EQ(o.to, (std::vector<uint16_t>{0, 1}));
    EXPECT_EQ(o.bp.rate_bps, 2'500'000'000u);
    EXPECT_EQ(o.bp.buffer_bytes, 8'000'000u);
    EXPECT_EQ(o.queues, 2);
    EXPECT_DOUBLE_EQ(o.bp.loss, 0.01);
    EXPECT_DOUBLE_EQ(o.faults.dup, 0.01);
    EXPECT_DOUBLE_EQ(o.faults.reorder, 0.02);
    EXPECT_DOUBLE_EQ(o.faults.corrupt, 0.005);
    EXPECT_EQ(o.bp.delay_ns, 20'000u);
    EXPECT_EQ(o.seed, 7u);
    EXPECT_EQ(o.idle_us, 20u);
    EXPECT_DOUBLE_EQ(o.secs, 660);
}

/* bench/cc_fabric_victim.sh's spine and leaf. */
TEST(FabricOptions, SpineAndLeaf) {
    droce::fabric_app::CommandLine s;
    ASSERT_EQ(fabric({"--", "--to", "2,3", "--shared", "--rate-gbps", "1", "--idle-us", "20",
                      "--pfc", "100000,80000", "--kmin", "10000", "--kmax", "100000", "--pmax",
                      "0.2", "--mark", "enqueue", "--red-drop"},
                     s),
              ParseResult::Run);
    EXPECT_EQ(s.opts.to, (std::vector<uint16_t>{2, 3}));
    EXPECT_TRUE(s.opts.shared);
    EXPECT_EQ(s.opts.bp.kmin_bytes, 10000u);
    EXPECT_EQ(s.opts.bp.kmax_bytes, 100000u);
    EXPECT_DOUBLE_EQ(s.opts.bp.pmax, 0.2);
    EXPECT_FALSE(s.opts.bp.mark_at_dequeue);
    EXPECT_TRUE(s.opts.bp.red_drop);
    EXPECT_EQ(s.eal, Strings{"droce-fabric"});
    droce::fabric_app::CommandLine l;
    ASSERT_EQ(fabric({"--", "--to", "2", "--rate-gbps", "10", "--honour-pfc", "0", "--no-ecn"}, l),
              ParseResult::Run);
    EXPECT_EQ(l.opts.honour_pfc, 0);
    EXPECT_EQ(l.opts.bp.rate_bps, 10'000'000'000u);
}

/* test_config.sh: "droce-fabric --config FILE [options]" needs no "--"; the options given
 * override the file's, the file's [eal] is used. */
TEST(FabricOptions, ConfigFile) {
    const char *dir = std::getenv("DROCE_CONFIG_DIR");
    ASSERT_NE(dir, nullptr);
    droce::fabric_app::CommandLine cl;
    ASSERT_EQ(
        fabric({"--config", std::string(dir) + "/fabric.conf", "--secs", "0.5", "--rate-gbps", "2"},
               cl),
        ParseResult::Run);
    EXPECT_EQ(cl.opts.bp.rate_bps, 2'000'000'000u);
    EXPECT_DOUBLE_EQ(cl.opts.secs, 0.5);
    EXPECT_EQ(cl.opts.to, std::vector<uint16_t>{1});
    EXPECT_GT(cl.eal.size(), 4u);
    EXPECT_EQ(cl.eal[0], "droce-fabric");
}

TEST(FabricOptions, HelpAndErrors) {
    droce::fabric_app::CommandLine h1, h2;
    EXPECT_EQ(fabric({"--", "--help"}, h1), ParseResult::ExitOk);
    EXPECT_EQ(fabric({"-h", "--"}, h2), ParseResult::ExitOk);
    const std::vector<Strings> bad = {
        {"--", "--rate-gbps", "0"},
        {"--", "--rate-gbps", "x"},
        {"--", "--to", "1,"},
        {"--", "--to", "16"},
        {"--", "--pmax", "1.5"},
        {"--", "--mark", "never"},
        {"--", "--pfc", "100"},
        {"--", "--queues", "0"},
        {"--", "--honour-pfc", "8"},
        {"--", "--secs"},
        {"--", "--no-such"},
        {"--", "stray"},
        {"--", "--kmin", "9", "--kmax", "8"}, /* lib/fabric's validate: Kmin < Kmax */
    };
    for (const auto &words : bad) {
        droce::fabric_app::CommandLine cl;
        EXPECT_EQ(fabric(words, cl), ParseResult::ExitError) << words[1] << " " << words.back();
    }
}

/* droce-perf's peak from one stamp per CQE equals the peak over one stamp per WR (every WR
 * of a batch at its CQE's time), which the report computed before: random batches, full
 * and partial, several window sizes. */
TEST(PerfPeak, PerCqeStampsGiveThePerWrPeak) {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 200; ++round) {
        std::vector<droce::perf::CompletionStamp> stamps;
        std::vector<double> per_wr;
        double t = 1000;
        uint64_t wrs = 0;
        const int n = 1 + static_cast<int>(rng() % 40);
        for (int i = 0; i < n; ++i) {
            t += static_cast<double>(rng() % 5000); /* 0 too: two CQEs in one tick */
            const uint64_t k = 1 + rng() % 100;
            stamps.push_back({t, k});
            per_wr.insert(per_wr.end(), k, t);
            wrs += k;
        }
        for (uint64_t w : {uint64_t{1}, uint64_t{7}, uint64_t{100}, wrs / 2 + 1}) {
            double want = 0;
            for (uint64_t i = w; i < wrs; i += w) {
                const double dt = (per_wr[i] - per_wr[i - w]) / 1e9;
                if (dt > 0)
                    want = std::max(want, static_cast<double>(w) / dt);
            }
            EXPECT_DOUBLE_EQ(droce::perf::best_window_rate(stamps, wrs, w), want)
                << "round " << round << " window " << w;
        }
    }
}

TEST(PerfPeak, NoWindowNoRate) {
    EXPECT_EQ(droce::perf::best_window_rate({}, 0, 1), 0);
    EXPECT_EQ(droce::perf::best_window_rate({{5, 10}}, 10, 4), 0); /* one stamp: dt 0 */
    /* 100 WRs at t=0 and 100 at t=1 ms: the window of 100 from WR 100 spans 1 ms */
    EXPECT_DOUBLE_EQ(droce::perf::best_window_rate({{0, 100}, {1e6, 100}}, 200, 100), 1e5);
}

/* droce-perf --threads: each posting thread on a CPU of its own that no worker lcore
 * takes, the first free CPU first; too few free CPUs: all threads share the free ones;
 * none: the process's set (rather than no CPU at all). */
TEST(PerfThreadCpus, OneFreeCpuEachElseShared) {
    using droce::perf::ThreadCpus;
    using Cpus = std::vector<std::vector<int>>;
    EXPECT_EQ(ThreadCpus::place({0, 1, 2, 3, 4, 5, 6, 7}, {1, 2}, 3), (Cpus{{0}, {3}, {4}}));
    EXPECT_EQ(ThreadCpus::place({0, 2, 4, 6}, {2}, 3), (Cpus{{0}, {4}, {6}}));
    EXPECT_EQ(ThreadCpus::place({0, 1, 2, 3}, {1, 2}, 3), (Cpus{{0, 3}, {0, 3}, {0, 3}}));
    EXPECT_EQ(ThreadCpus::place({1, 2}, {1, 2}, 2), (Cpus{{1, 2}, {1, 2}}));
    /* A worker lcore's CPU outside the allowed set changes nothing. */
    EXPECT_EQ(ThreadCpus::place({0, 1}, {5}, 2), (Cpus{{0}, {1}}));
}
