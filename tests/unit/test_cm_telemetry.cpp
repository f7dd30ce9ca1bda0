/* SPDX-License-Identifier: BSD-3-Clause */
/* The CM's counters on the telemetry socket (/droce/cm,<dev>, engine_cm_stats.h): the
 * process's real dpdk_telemetry.v2 socket is asked, as droce-info asks it. Device B opens
 * a CmDevice; device A's raw QP1 (engine::Gsi) sends B a MAD of base version 2, which B's
 * CM drops and counts (drop_bad_base_version); the counter moves in telemetry's JSON
 * while the CM thread keeps polling, in both engine modes. Its own binary: it needs its
 * own EAL file prefix (the socket's directory) and telemetry on. */
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <rte_eal.h>

#include <droce/cm_device.h>
#include <droce/droce.h>

#include "engine.h"
#include "engine_gsi.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<Engine> make_engine(bool embedded) {
    /* A file prefix of our own: its directory holds this process's telemetry socket. */
    static const std::string prefix = "--file-prefix=droce-cmtel-" + std::to_string(getpid());
    static const char *args[] = {
        "test_cm_telemetry", "--no-huge", "-m",      "1024",        "--no-pci",
        "--no-shconf",       "--lcores",  "0@0,1@1", "--log-level", "*:warning",
        prefix.c_str(),      "--",        nullptr};
    /* The directory goes at exit: registered before the EAL's telemetry registers the
     * socket's unlink, so it runs after it. */
    static const bool cleanup = [] {
        std::atexit([] { rmdir(rte_eal_get_runtime_dir()); });
        return true;
    }();
    (void)cleanup;
    EngineOptions o;
    o.embedded = embedded;
    o.workers = 1;
    o.idle_polls_before_sleep = 200;
    o.idle_sleep_us = 50;
    int consumed = 0;
    auto e = Engine::create(12, const_cast<char **>(args), &consumed, o);
    EXPECT_TRUE(e) << e.status().message();
    return e ? std::move(*e) : nullptr;
}

/* A client of the telemetry v2 socket: one command, its JSON reply as text. */
class TelemetryClient {
  public:
    ~TelemetryClient() {
        if (fd_ >= 0)
            close(fd_);
    }
    bool connect_to(const std::string &path) {
        fd_ = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        sockaddr_un sun{};
        sun.sun_family = AF_UNIX;
        if (fd_ < 0 || path.size() >= sizeof sun.sun_path)
            return false;
        std::strcpy(sun.sun_path, path.c_str());
        if (connect(fd_, reinterpret_cast<sockaddr *>(&sun), sizeof sun) != 0)
            return false;
        return !recv_text().empty(); /* the hello */
    }
    std::string ask(const std::string &cmd) {
        if (send(fd_, cmd.data(), cmd.size(), 0) < 0)
            return "";
        return recv_text();
    }

  private:
    std::string recv_text() {
        std::string buf(1 << 16, '\0');
        const ssize_t n = recv(fd_, buf.data(), buf.size(), 0);
        buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
        return buf;
    }
    int fd_ = -1;
};

/* "name":value in DPDK's compact JSON; -1 when absent. */
long long json_u64(const std::string &j, const std::string &name) {
    const std::string key = "\"" + name + "\":";
    const size_t at = j.find(key);
    if (at == std::string::npos)
        return -1;
    return std::strtoll(j.c_str() + at + key.size(), nullptr, 10);
}

class CmTelemetry : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override {
        engine = make_engine(GetParam());
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports) << ports.status().message();
        DeviceConfig ca;
        ca.port = ports->first;
        ca.ipv4_cidr = "10.81.0.1/24";
        ca.mac = "02:00:00:00:05:01";
        ca.mtu = 1500;
        DeviceConfig cb = ca;
        cb.port = ports->second;
        cb.ipv4_cidr = "10.81.0.2/24";
        cb.mac = "02:00:00:00:05:02";
        auto da = engine->open_device(ca);
        auto db = engine->open_device(cb);
        ASSERT_TRUE(da && db);
        ASSERT_TRUE(engine->start());
        a = *da;
        b = *db;
        auto cm = CmDevice::open(*engine, *b);
        ASSERT_TRUE(cm) << cm.status().message();
        cm_b = std::move(*cm);
        engine::Runtime *rt = engine::debug_runtimes().back();
        engine::Dev *raw = nullptr;
        for (const auto &d : rt->devices())
            if (d->name() == a->name())
                raw = d.get();
        ASSERT_TRUE(raw);
        auto g = engine::Gsi::open(*rt, *raw, 8);
        ASSERT_TRUE(g) << g.status().message();
        gsi_a = std::move(*g);
        ASSERT_TRUE(tel.connect_to(std::string(rte_eal_get_runtime_dir()) + "/dpdk_telemetry.v2"));
    }
    void TearDown() override {
        gsi_a.reset();
        cm_b.reset();
        engine.reset();
    }
    /* The application's loop: the engine (embedded mode) and B's CM. */
    void drive() {
        if (engine->embedded())
            engine->poll();
        else
            std::this_thread::sleep_for(50us);
        cm_b->poll();
    }
    /* /droce/cm,b asked until ctr reads want (the CM keeps polling meanwhile). */
    std::string wait_for(const std::string &ctr, long long want,
                         std::chrono::milliseconds limit = 5s) {
        std::string j;
        for (auto end = std::chrono::steady_clock::now() + limit;
             std::chrono::steady_clock::now() < end;) {
            for (int i = 0; i < 50; ++i)
                drive();
            j = tel.ask("/droce/cm," + b->name());
            if (json_u64(j, ctr) == want)
                break;
        }
        return j;
    }

    std::unique_ptr<Engine> engine;
    Device *a = nullptr, *b = nullptr;
    std::unique_ptr<CmDevice> cm_b;
    std::unique_ptr<engine::Gsi> gsi_a;
    TelemetryClient tel;
};

TEST_P(CmTelemetry, BadMadMovesCounterOnTheSocket) {
    /* Published once the CM has been polled: every counter there, zero. */
    std::string j = wait_for("drop_bad_base_version", 0);
    ASSERT_EQ(json_u64(j, "drop_bad_base_version"), 0) << j;
    EXPECT_EQ(json_u64(j, "rx_mad"), 0) << j;
    EXPECT_EQ(json_u64(j, "cm_mads_in"), 0) << j; /* the glue's counters too */
    EXPECT_GE(json_u64(j, "publishes"), 1) << j;
    EXPECT_GE(json_u64(j, "age_ms"), 0) << j;

    uint8_t mad[engine::kMadLen] = {};
    mad[0] = 2;    /* base version: the CM's codec takes only 1 */
    mad[1] = 0x07; /* CM class */
    mad[2] = 2;    /* class version */
    mad[3] = 0x03; /* Send */
    AhAttr to;
    to.dgid = b->gids().at(1).gid;
    to.sgid_index = 1;
    ASSERT_TRUE(gsi_a->send(to, 1, mad, sizeof mad));

    j = wait_for("drop_bad_base_version", 1);
    EXPECT_EQ(json_u64(j, "drop_bad_base_version"), 1) << j;
    EXPECT_EQ(json_u64(j, "cm_mads_in"), 1) << j;
    EXPECT_EQ(json_u64(j, "rx_mad"), 0) << j; /* dropped before the state machine */
    /* What the CM thread itself reads agrees. */
    const char *n;
    uint64_t v;
    bool found = false;
    for (size_t i = 0; cm_b->counter(i, n, v); ++i)
        if (std::strcmp(n, "drop_bad_base_version") == 0)
            found = v == 1;
    EXPECT_TRUE(found);

    /* A device with no CM, and no such device: an error, not counters. */
    j = tel.ask("/droce/cm," + a->name());
    EXPECT_NE(j.find("\"error\""), std::string::npos) << j;
    EXPECT_EQ(json_u64(j, "rx_mad"), -1) << j;
    j = tel.ask("/droce/cm,nosuchdev");
    EXPECT_NE(j.find("no CM open"), std::string::npos) << j;
}

/* After the CM is closed its board is gone: the command answers with an error (and
 * reads no freed memory: ASan builds would say). */
TEST_P(CmTelemetry, ClosedCmIsGone) {
    wait_for("rx_mad", 0);
    cm_b.reset();
    const std::string j = tel.ask("/droce/cm," + b->name());
    EXPECT_NE(j.find("no CM open"), std::string::npos) << j;
}

INSTANTIATE_TEST_SUITE_P(Modes, CmTelemetry, ::testing::Values(true, false),
                         [](const auto &i) { return i.param ? "Embedded" : "Worker"; });

} // namespace
