/* SPDX-License-Identifier: BSD-3-Clause */
/* A memif peer that leaves while this side polls at full rate (drivers/poll_gate.h).
 *
 * DPDK 22.11's memif handles a peer's disconnect on the EAL's interrupt thread and unmaps
 * the shared regions there while a poller on another thread may be inside a burst on them:
 * a SIGSEGV in librte_net_memif (seen in CI: droce-fabric, and droce-perf in a bench). The
 * poll gate lets that thread run only while every poller is between bursts. Here the peer
 * leaves in each way it can, over and over, while the frames it sent are still being
 * copied out of the ring:
 *   - PortStopWhilePolled: one process; the client's port stops (its disconnect message);
 *   - PeerExits / PeerStopsPort / PeerKilled: a memif_peer process that ends without a
 *     goodbye, stops its port, or is SIGKILLed, against a raw poller thread that echoes
 *     what it receives (RX and TX on the rings);
 *   - EngineDevicePolled: the same peers against a droce device on the memif server port,
 *     polled by the application's thread (Engine::poll).
 * DROCE_MEMIF_LEAVE_ITERS sets the rounds per case (default 6; the long loop: 300).
 * DROCE_TEST_MEMIF_UNGATED=1 runs the raw cases without the gate, as every poller ran
 * before it: that is how the reproducer is shown to reproduce (it crashes). */
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "drivers.h"
#include "engine_test_util.h"
#include "poll_gate.h"

extern char **environ;

using namespace droce;
namespace drv = droce::drivers;

namespace {

using Clock = std::chrono::steady_clock;

uint32_t iters() {
    const char *e = std::getenv("DROCE_MEMIF_LEAVE_ITERS");
    const unsigned long n = e != nullptr ? std::strtoul(e, nullptr, 10) : 0;
    return n != 0 ? static_cast<uint32_t>(n) : 6;
}

bool gated() {
    const char *e = std::getenv("DROCE_TEST_MEMIF_UNGATED");
    return e == nullptr || std::strcmp(e, "1") != 0;
}

bool link_up(uint16_t port) {
    rte_eth_link l{};
    return rte_eth_link_get_nowait(port, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
}

template <class Pred> bool wait_for(uint32_t ms, Pred pred, const std::function<void()> &poll) {
    const auto end = Clock::now() + std::chrono::milliseconds(ms);
    while (Clock::now() < end) {
        if (pred())
            return true;
        if (poll)
            poll();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return pred();
}

/* A raw poller thread on one port: receives at full rate and sends back what it got. */
class Poller {
  public:
    Poller(uint16_t port, bool gate) : port_(port) {
        th_ = std::thread([this, gate] { run(gate); });
    }
    ~Poller() { stop(); }
    void stop() {
        stop_.store(true);
        if (th_.joinable())
            th_.join();
    }
    uint64_t frames() const { return frames_.load(std::memory_order_relaxed); }

  private:
    void run(bool gate) {
        drv::PollerSlot *slot = gate ? drv::poll_gate_join() : nullptr;
        if (slot != nullptr)
            drv::poll_gate_online(slot);
        rte_mbuf *rx[32];
        while (!stop_.load(std::memory_order_relaxed)) {
            if (slot != nullptr)
                drv::poll_gate_pass(slot);
            const uint16_t n = rte_eth_rx_burst(port_, 0, rx, 32);
            if (n == 0)
                continue;
            frames_.fetch_add(n, std::memory_order_relaxed);
            const uint16_t k = rte_eth_tx_burst(port_, 0, rx, n);
            rte_pktmbuf_free_bulk(rx + k, static_cast<unsigned>(n - k));
        }
        drv::poll_gate_leave(slot);
    }
    uint16_t port_;
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> frames_{0};
    std::thread th_;
};

/* A sender thread on one port: bursts of 1 KiB frames as fast as the port takes them. */
class Sender {
  public:
    Sender(uint16_t port, rte_mempool *mp, bool gate) : port_(port), mp_(mp) {
        th_ = std::thread([this, gate] { run(gate); });
    }
    ~Sender() { stop(); }
    void stop() {
        stop_.store(true);
        if (th_.joinable())
            th_.join();
    }

  private:
    void run(bool gate) {
        drv::PollerSlot *slot = gate ? drv::poll_gate_join() : nullptr;
        if (slot != nullptr)
            drv::poll_gate_online(slot);
        rte_mbuf *b[32];
        while (!stop_.load(std::memory_order_relaxed)) {
            if (slot != nullptr)
                drv::poll_gate_pass(slot);
            const uint16_t got = rte_eth_rx_burst(port_, 0, b, 32);
            rte_pktmbuf_free_bulk(b, got);
            if (rte_pktmbuf_alloc_bulk(mp_, b, 32) != 0)
                continue;
            for (rte_mbuf *m : b) {
                auto *p = rte_pktmbuf_mtod(m, uint8_t *);
                std::memset(p, 0xff, 12);
                p[12] = 0x88;
                p[13] = 0xb5;
                m->data_len = m->pkt_len = 1024;
            }
            const uint16_t k = rte_eth_tx_burst(port_, 0, b, 32);
            rte_pktmbuf_free_bulk(b + k, 32u - k);
        }
        drv::poll_gate_leave(slot);
    }
    uint16_t port_;
    rte_mempool *mp_;
    std::atomic<bool> stop_{false};
    std::thread th_;
};

class MemifLeave : public ::testing::Test {
  protected:
    /* One EAL and engine for both suites (the engine closes its devices at exit). */
    static void SetUpTestSuite() {
        if (engine_ == nullptr)
            engine_ = droce::test::make_test_engine("test_memif_leave",
                                                    droce::test::embedded_test_options(), "512");
        if (engine_ != nullptr && pool_ == nullptr)
            pool_ = rte_pktmbuf_pool_create("memif_leave", 8191, 256, 0, 2176, rte_socket_id());
    }
    void SetUp() override {
        ASSERT_NE(engine_, nullptr);
        ASSERT_NE(pool_, nullptr);
        peer_ = std::getenv("DROCE_MEMIF_PEER") != nullptr ? std::getenv("DROCE_MEMIF_PEER") : "";
        ASSERT_FALSE(peer_.empty()) << "DROCE_MEMIF_PEER: the memif_peer binary";
        std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
        for (char &ch : test)
            ch = ch == '/' ? '_' : ch; /* a parameterized test's name has one */
        sock_ = "/tmp/droce-mlv-" + std::to_string(getpid()) + "-" + test;
        std::remove(sock_.c_str());
    }
    void TearDown() override { std::remove(sock_.c_str()); }

    /* A started memif port with one queue pair on our pool, gated if gate. */
    uint16_t start_port(const std::string &name, const char *role, const std::string &sock,
                        bool gate) {
        const std::string args = name + ",role=" + role + ",socket-abstract=no,socket=" + sock;
        EXPECT_EQ(rte_dev_probe(args.c_str()), 0) << args;
        uint16_t port = UINT16_MAX;
        EXPECT_EQ(rte_eth_dev_get_port_by_name(name.c_str(), &port), 0) << name;
        rte_eth_conf conf{};
        EXPECT_EQ(rte_eth_dev_configure(port, 1, 1, &conf), 0);
        EXPECT_EQ(rte_eth_rx_queue_setup(port, 0, 1024, 0, nullptr, pool_), 0);
        EXPECT_EQ(rte_eth_tx_queue_setup(port, 0, 1024, 0, nullptr), 0);
        if (gate)
            drv::poll_gate_add_port(port);
        EXPECT_EQ(rte_eth_dev_start(port), 0);
        return port;
    }
    static void end_port(uint16_t port, const std::string &name) {
        const drv::PortStopResult r = drv::stop_port(port, true, true);
        EXPECT_EQ(r.stop_rc, 0);
        rte_eal_hotplug_remove("vdev", name.c_str());
    }

    /* A memif_peer process on sock_, leaving as `leave` after `ms` of traffic. */
    pid_t spawn_peer(const char *leave, uint32_t ms) {
        const std::string m = std::to_string(ms);
        const char *argv[] = {peer_.c_str(), "--socket", sock_.c_str(), "--leave",
                              leave,         "--ms",     m.c_str(),     nullptr};
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        pid_t pid = -1;
        const int rc =
            posix_spawn(&pid, peer_.c_str(), &fa, nullptr, const_cast<char **>(argv), environ);
        posix_spawn_file_actions_destroy(&fa);
        EXPECT_EQ(rc, 0) << peer_;
        return rc == 0 ? pid : -1;
    }

    /* Rounds of a peer process that sends, then leaves as `leave`, while frames() grows;
     * poll: the application's poll, when the poller is this thread (nullptr: a thread). */
    void peer_rounds(const char *leave, uint16_t port, const std::function<uint64_t()> &frames,
                     const std::function<void()> &poll) {
        std::mt19937 rng(12345);
        const uint32_t n = iters();
        for (uint32_t i = 0; i < n; ++i) {
            SCOPED_TRACE("round " + std::to_string(i) + " leave " + leave);
            const bool kill_it = std::strcmp(leave, "kill") == 0;
            const uint32_t ms = 10 + rng() % 40;
            const pid_t pid = spawn_peer(leave, kill_it ? 60000 : ms);
            ASSERT_GT(pid, 0);
            int st = 0;
            bool gone = false;
            const auto reap = [&] {
                gone = gone || waitpid(pid, &st, WNOHANG) == pid;
                return gone;
            };
            const uint64_t f0 = frames();
            /* Frames are flowing (the ring is being filled and copied out), or the peer
             * already left after its --ms of them. */
            ASSERT_TRUE(wait_for(
                15000, [&] { return frames() >= f0 + 2000 || reap(); }, poll));
            ASSERT_GT(frames(), f0) << "no traffic from the peer";
            if (kill_it) {
                wait_for(
                    ms, [] { return false; }, poll);
                ASSERT_EQ(kill(pid, SIGKILL), 0);
            }
            ASSERT_TRUE(wait_for(10000, reap, poll));
            if (kill_it)
                EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
            else
                EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
            /* The disconnect was handled (the regions unmapped) while we polled. */
            ASSERT_TRUE(wait_for(
                15000, [&] { return !link_up(port); }, poll));
        }
    }

  public:
    static void close_engine() { engine_.reset(); }

  protected:
    static std::unique_ptr<Engine> engine_;
    static rte_mempool *pool_;
    std::string peer_, sock_;
};
std::unique_ptr<Engine> MemifLeave::engine_;
rte_mempool *MemifLeave::pool_ = nullptr;

TEST_F(MemifLeave, PortStopWhilePolled) {
    const bool gate = gated();
    const drv::PollGateStats before = drv::poll_gate_stats();
    const uint32_t n = iters() * 4; /* one process: cheap rounds */
    for (uint32_t i = 0; i < n; ++i) {
        SCOPED_TRACE("round " + std::to_string(i));
        const std::string s = sock_ + "." + std::to_string(i);
        const std::string sn = "net_memif_lvs" + std::to_string(i);
        const std::string cn = "net_memif_lvc" + std::to_string(i);
        const uint16_t server = start_port(sn, "server", s, gate);
        const uint16_t client = start_port(cn, "client", s, gate);
        ASSERT_TRUE(wait_for(
            5000, [&] { return link_up(server) && link_up(client); }, nullptr));
        Poller poller(server, gate);
        {
            Sender sender(client, pool_, gate);
            ASSERT_TRUE(wait_for(
                5000, [&] { return poller.frames() >= 2000; }, nullptr));
        }
        /* The client's stop sends its disconnect: the server's side unmaps the rings on
         * the interrupt thread while the poller still copies what the client sent. */
        const drv::PortStopResult r = drv::stop_port(client, true, true);
        EXPECT_EQ(r.stop_rc, 0);
        ASSERT_TRUE(wait_for(
            5000, [&] { return !link_up(server); }, nullptr));
        poller.stop();
        end_port(server, sn);
        rte_eal_hotplug_remove("vdev", cn.c_str());
        std::remove(s.c_str());
    }
    if (gate) {
        const drv::PollGateStats after = drv::poll_gate_stats();
        EXPECT_GT(after.turns, before.turns);
        EXPECT_EQ(after.ack_timeouts, before.ack_timeouts);
        EXPECT_EQ(after.ports, before.ports) << "every gated port of the test was stopped";
    }
}

class MemifLeavePeer : public MemifLeave, public ::testing::WithParamInterface<const char *> {};

TEST_P(MemifLeavePeer, RawPoller) {
    const bool gate = gated();
    const drv::PollGateStats before = drv::poll_gate_stats();
    const std::string name = std::string("net_memif_lvr_") + GetParam();
    const uint16_t server = start_port(name, "server", sock_, gate);
    {
        Poller poller(server, gate);
        peer_rounds(
            GetParam(), server, [&] { return poller.frames(); }, nullptr);
    }
    end_port(server, name);
    if (gate) {
        const drv::PollGateStats after = drv::poll_gate_stats();
        EXPECT_GT(after.turns, before.turns);
        EXPECT_GT(after.parks, before.parks) << "the poller waited at the gate";
        EXPECT_EQ(after.ack_timeouts, before.ack_timeouts);
    }
}

TEST_P(MemifLeavePeer, EngineDevicePolled) {
    const std::string name = std::string("net_memif_lve_") + GetParam();
    const std::string args = name + ",role=server,socket-abstract=no,socket=" + sock_;
    ASSERT_EQ(rte_dev_probe(args.c_str()), 0) << args;
    DeviceConfig c;
    c.port = name;
    c.ipv4_cidr = "10.83.0.1/24";
    c.mac = "02:00:00:00:0f:01";
    auto d = engine_->open_device(c);
    ASSERT_TRUE(d) << d.status().message();
    Device &dev = **d;
    uint16_t port = UINT16_MAX;
    ASSERT_EQ(rte_eth_dev_get_port_by_name(name.c_str(), &port), 0);
    const auto frames = [&] { return droce::test::counter_map(dev)["port_rcv_packets"]; };
    peer_rounds(GetParam(), port, frames, [&] { engine_->poll(); });
    /* The device stays open (the engine closes it at the end), gated. */
    EXPECT_GE(drv::poll_gate_stats().ports, 1u);
}

INSTANTIATE_TEST_SUITE_P(Leave, MemifLeavePeer, ::testing::Values("exit", "stop", "kill"),
                         [](const auto &i) { return std::string(i.param); });

/* The engine (and its gated devices) closed before exit, not by a static destructor. */
class CloseEngine : public ::testing::Environment {
  public:
    void TearDown() override { MemifLeave::close_engine(); }
};
const auto *const g_close_engine = ::testing::AddGlobalTestEnvironment(new CloseEngine);

} // namespace
