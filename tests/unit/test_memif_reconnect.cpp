/* SPDX-License-Identifier: BSD-3-Clause */
/* A memif client whose server refuses it, or drops it, connects again (engine_link.cpp).
 * DPDK 22.11's memif client connects once, when its port starts: a server whose port has
 * not started yet answers "ID not found" and disconnects it, and so does a server that
 * stops; the client then stays down for good. The engine stops and starts such a port
 * until it connects. One process, engine embedded, --no-huge: a memif server and a memif
 * client on one socket, each a droce device, one RC QP pair between them.
 *  1. The client's port starts while the server's is only probed: refused, link down;
 *     the engine retries (link_reconnects) while the server stays unstarted.
 *  2. The server's port starts: the client's link comes up, PortActive, a WRITE goes
 *     through intact.
 *  3. The server's port stops and starts again (its peer is dropped, as when the server's
 *     process restarts its port): the client's link goes down, comes back by itself, and
 *     the next WRITE goes through.
 * A server that is gone altogether (the start's connect() refused, the port left stopped
 * and unpolled) needs a second process: test_fabric_restart.sh (in one process the client
 * shares memif's socket entry with its server, so a new server would find no listener). */
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <unistd.h>

#include <droce/droce.h>

#include "drivers.h"
#include "engine_test_util.h"
#include "raw_peer.h"

using namespace droce;

namespace {

using droce::test::counter_map;
using Clock = std::chrono::steady_clock;

constexpr size_t kLen = 4096;

class MemifReconnect : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        engine_ = droce::test::make_test_engine("test_memif_reconnect",
                                                droce::test::embedded_test_options(), "256");
    }
    static void TearDownTestSuite() { engine_.reset(); }
    void SetUp() override {
        ASSERT_NE(engine_, nullptr);
        sock_ = "/tmp/droce-mrc-" + std::to_string(getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sock";
        std::remove(sock_.c_str());
    }
    void TearDown() override { std::remove(sock_.c_str()); }

    /* Probes a memif vdev on sock_ and returns its port. */
    uint16_t probe(const std::string &name, const char *role) {
        const std::string args = name + ",role=" + role + ",socket-abstract=no,socket=" + sock_;
        EXPECT_EQ(rte_dev_probe(args.c_str()), 0) << args;
        uint16_t port = UINT16_MAX;
        EXPECT_EQ(rte_eth_dev_get_port_by_name(name.c_str(), &port), 0) << name;
        return port;
    }
    bool link_up(uint16_t port) const {
        rte_eth_link l{};
        return rte_eth_link_get_nowait(port, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
    }
    /* Polls the engine for up to `for_ms` until pred() holds; returns whether it did. */
    template <class Pred> bool poll_until(uint32_t for_ms, Pred pred) {
        const auto end = Clock::now() + std::chrono::milliseconds(for_ms);
        while (Clock::now() < end) {
            engine_->poll();
            if (pred())
                return true;
        }
        return pred();
    }
    static DeviceConfig config(const char *port, const char *ip, const char *mac) {
        DeviceConfig c;
        c.port = port;
        c.ipv4_cidr = ip;
        c.mac = mac;
        return c;
    }
    /* Whether an async event of type t is queued on d (the older ones are dropped). */
    static bool saw_event(Device &d, AsyncEventType t) {
        AsyncEvent ev{};
        bool seen = false;
        while (d.get_async_event(ev))
            seen = seen || ev.type == t;
        return seen;
    }

    static std::unique_ptr<Engine> engine_;
    std::string sock_;
};
std::unique_ptr<Engine> MemifReconnect::engine_;

} // namespace

TEST_F(MemifReconnect, RefusedThenDroppedClientConnectsAgain) {
    const uint16_t sport_ = probe("net_memif_mrcs", "server");
    const uint16_t cport_ = probe("net_memif_mrcc", "client");
    /* 1. The client first: its server's port is probed, not started. */
    auto dc = engine_->open_device(config("net_memif_mrcc", "10.82.0.2/24", "02:00:00:00:0e:02"));
    ASSERT_TRUE(dc) << dc.status().message();
    Device &client = **dc;
    EXPECT_FALSE(poll_until(1600, [&] { return link_up(cport_); }))
        << "the client connected to a server port that has not started";
    const uint64_t tries = counter_map(client)["link_reconnects"];
    EXPECT_GE(tries, 1u) << "the engine never tried again while the server refused";

    /* 2. The server's port starts: the client must come up by itself. */
    auto ds = engine_->open_device(config("net_memif_mrcs", "10.82.0.1/24", "02:00:00:00:0e:01"));
    ASSERT_TRUE(ds) << ds.status().message();
    Device &server = **ds;
    auto t0 = Clock::now();
    ASSERT_TRUE(poll_until(10'000, [&] { return link_up(cport_) && link_up(sport_); }))
        << "the client stayed down after its server started (link_reconnects "
        << counter_map(client)["link_reconnects"] << ")";
    const double up_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    EXPECT_TRUE(poll_until(200, [&] { return saw_event(client, AsyncEventType::PortActive); }))
        << "no PortActive on the client";
    std::printf("client up %.0f ms after its server started\n", up_ms);

    auto pc = std::move(*client.alloc_pd());
    auto ps = std::move(*server.alloc_pd());
    auto cqc = std::move(*client.create_cq(16));
    auto cqs = std::move(*server.create_cq(16));
    std::unique_ptr<uint8_t[]> src(new uint8_t[kLen]), dst(new uint8_t[2 * kLen]());
    for (size_t i = 0; i < kLen; ++i)
        src[i] = static_cast<uint8_t>(i * 5 + 3);
    auto mr_src = pc->reg_mr(src.get(), kLen, kAccessLocalWrite);
    ASSERT_TRUE(mr_src) << mr_src.status().message();
    const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite;
    auto mr_dst = ps->reg_mr(dst.get(), 2 * kLen, access);
    ASSERT_TRUE(mr_dst) << mr_dst.status().message();
    QpInitAttr ia;
    ia.send_cq = ia.recv_cq = cqc.get();
    auto qc = pc->create_qp(ia);
    ASSERT_TRUE(qc) << qc.status().message();
    ia.send_cq = ia.recv_cq = cqs.get();
    auto qs = ps->create_qp(ia);
    ASSERT_TRUE(qs) << qs.status().message();
    const uint32_t ip_c = 0x0A520002, ip_s = 0x0A520001; /* 10.82.0.2, 10.82.0.1 */
    ASSERT_NO_FATAL_FAILURE(droce::test::connect_to_peer(
        **qc, {(*qs)->qp_num(), ip_s, 0x20, 0x20, 14, access, Mtu::Mtu1024}));
    ASSERT_NO_FATAL_FAILURE(droce::test::connect_to_peer(
        **qs, {(*qc)->qp_num(), ip_c, 0x20, 0x20, 14, access, Mtu::Mtu1024}));

    /* One signaled WRITE of src to dst + off; true when it completed with success. */
    auto write = [&](size_t off) {
        SendWr wr;
        wr.wr_id = off;
        wr.opcode = WrOpcode::RdmaWrite;
        wr.send_flags = kSendSignaled;
        wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.get()), static_cast<uint32_t>(kLen),
                         (*mr_src)->lkey()};
        wr.num_sge = 1;
        wr.remote_addr = reinterpret_cast<uint64_t>(dst.get() + off);
        wr.rkey = (*mr_dst)->rkey();
        if (!(*qc)->post_send(wr))
            return false;
        Wc wc{};
        if (!poll_until(5000, [&] { return cqc->poll(&wc, 1) == 1; }))
            return false;
        return wc.status == WcStatus::Success;
    };
    ASSERT_TRUE(write(0)) << "WRITE after the client's late connect";
    EXPECT_EQ(std::memcmp(dst.get(), src.get(), kLen), 0);

    /* 3. The server drops its peer (its port stops) and takes connections again (starts);
     * the test thread is the only poller, so nothing polls the stopped port meanwhile. */
    const uint64_t tries_before = counter_map(client)["link_reconnects"];
    bool held = drivers::with_intr_thread_held([&] {
        ASSERT_EQ(rte_eth_dev_stop(sport_), 0);
        ASSERT_EQ(rte_eth_dev_start(sport_), 0);
    });
    EXPECT_TRUE(held);
    ASSERT_TRUE(poll_until(2000, [&] { return !link_up(cport_); }))
        << "the server's stop did not take the client down";
    t0 = Clock::now();
    ASSERT_TRUE(poll_until(10'000, [&] { return link_up(cport_) && link_up(sport_); }))
        << "the client stayed down after its server dropped it (link_reconnects "
        << counter_map(client)["link_reconnects"] << ")";
    std::printf("client back %.0f ms after its server dropped it\n",
                std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    EXPECT_GT(counter_map(client)["link_reconnects"], tries_before);
    ASSERT_TRUE(write(kLen)) << "WRITE after the reconnect";
    EXPECT_EQ(std::memcmp(dst.get() + kLen, src.get(), kLen), 0);
    auto c = counter_map(client);
    std::printf("link_reconnects %lu, link_reconnect_failed %lu\n",
                static_cast<unsigned long>(c["link_reconnects"]),
                static_cast<unsigned long>(c["link_reconnect_failed"]));
}
