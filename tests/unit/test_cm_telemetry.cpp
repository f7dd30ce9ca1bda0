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

#include "app_cm.h"
#include "cm_mad.h"
#include "device_options.h"
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
        /* B's CM as the tools open it, from their flags (app::open_cm). */
        app::DeviceOptions o(10);
        char prog[] = "t";
        char *argv[] = {prog, nullptr};
        const auto longs = app::with_device_options({});
        for (const auto &[c, v] : cm_flags)
            ASSERT_EQ(app::take_device_option(c, v, argv, longs.data(), o, {}), "") << v;
        cm_b = app::open_cm(*engine, *b, o, {});
        ASSERT_TRUE(cm_b);
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

    std::vector<std::pair<int, const char *>> cm_flags; /* B's CM's, set before SetUp */
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

/* --cm-stateless-burst end to end: REQs for a port nobody listens on, from A's raw QP1;
 * B answers each with a stateless REJ up to the burst (the rate, 1/s, adds at most one
 * more during the test) and counts the rest as rate-limited, on the wire and on the
 * telemetry socket alike. */
class CmStateless : public CmTelemetry {
  protected:
    /* The REJs (reason 8, invalid service ID) A's QP1 got for kReqs REQs. */
    int rejs_for_reqs(int n_reqs) {
        int sent = 0, rejs = 0;
        for (auto end = std::chrono::steady_clock::now() + 5s;
             std::chrono::steady_clock::now() < end;) {
            if (sent < n_reqs) {
                cm::CmMad m;
                m.hdr.attr_id = static_cast<uint16_t>(cm::CmAttr::Req);
                m.hdr.tid = 0x5000 + static_cast<uint64_t>(sent);
                m.req.local_comm_id = 0x7000 + static_cast<uint32_t>(sent);
                m.req.service_id = cm::ip_service_id(cm::kRdmaPsTcp, 7999);
                m.req.local_qpn = 0x100 + static_cast<uint32_t>(sent);
                m.req.pkey = 0xFFFF;
                m.req.path_mtu = 3;
                uint8_t mad[engine::kMadLen];
                EXPECT_EQ(cm::build_cm_mad(m, mad, sizeof mad), sizeof mad);
                AhAttr to;
                to.dgid = b->gids().at(1).gid;
                to.sgid_index = 1;
                if (gsi_a->send(to, 1, mad, sizeof mad))
                    ++sent; /* else EAGAIN: every send slot in flight, next turn */
            }
            drive();
            engine::MadIn in[8];
            const int k = gsi_a->poll(in, 8);
            for (int i = 0; i < k; ++i) {
                cm::CmMad r;
                if (cm::parse_cm_mad(in[i].data, in[i].len, r) == cm::MadError::Ok &&
                    r.hdr.attr_id == static_cast<uint16_t>(cm::CmAttr::Rej) && r.rej.reason == 8)
                    ++rejs;
            }
            if (sent == n_reqs && k == 0) {
                /* B has handled every REQ, and every REJ it sent is in: in worker mode B's
                 * counters can be final while its last REJ is still on its way to A. */
                const std::string j = tel.ask("/droce/cm," + b->name());
                if (json_u64(j, "drop_req_no_listener") == n_reqs &&
                    json_u64(j, "rej_sent_invalid_service_id") == rejs)
                    break;
            }
        }
        EXPECT_EQ(sent, n_reqs);
        return rejs;
    }
};

class CmStatelessBurst4 : public CmStateless {
  public:
    CmStatelessBurst4() {
        cm_flags = {{app::kOptCmStatelessBurst, "4"}, {app::kOptCmStatelessRate, "1"}};
    }
};
class CmStatelessBurst64 : public CmStateless {
  public:
    CmStatelessBurst64() {
        cm_flags = {{app::kOptCmStatelessBurst, "64"}, {app::kOptCmStatelessRate, "1"}};
    }
};

TEST_P(CmStatelessBurst4, RejectsUpToTheBurst) {
    const int rejs = rejs_for_reqs(20);
    EXPECT_GE(rejs, 4);
    EXPECT_LE(rejs, 5);
    const std::string j = wait_for("rej_sent_invalid_service_id", rejs);
    EXPECT_EQ(json_u64(j, "rej_sent_invalid_service_id"), rejs) << j;
    EXPECT_EQ(json_u64(j, "stateless_rate_limited"), 20 - rejs) << j;
}

TEST_P(CmStatelessBurst64, RejectsEveryOne) {
    EXPECT_EQ(rejs_for_reqs(20), 20);
    const std::string j = wait_for("rej_sent_invalid_service_id", 20);
    EXPECT_EQ(json_u64(j, "rej_sent_invalid_service_id"), 20) << j;
    EXPECT_EQ(json_u64(j, "stateless_rate_limited"), 0) << j;
}

INSTANTIATE_TEST_SUITE_P(Modes, CmStatelessBurst4, ::testing::Values(true, false),
                         [](const auto &i) { return i.param ? "Embedded" : "Worker"; });
INSTANTIATE_TEST_SUITE_P(Modes, CmStatelessBurst64, ::testing::Values(true, false),
                         [](const auto &i) { return i.param ? "Embedded" : "Worker"; });

INSTANTIATE_TEST_SUITE_P(Modes, CmTelemetry, ::testing::Values(true, false),
                         [](const auto &i) { return i.param ? "Embedded" : "Worker"; });

} // namespace
