/* SPDX-License-Identifier: BSD-3-Clause */
/* Zero-copy TX on virtio_user (issue 9): its vhost-user backend maps only the EAL's own
 * fd-backed memory, so droce attaches only droce::alloc_buf memory there and copies an
 * aligned_alloc buffer. One process, engine embedded: a net_vhost port (the vhost-user
 * server) and a net_virtio_user port connected to it through a socket, each a droce
 * device, one RC QP pair between them. The virtio_user side WRITEs 64 KiB from an
 * alloc_buf region and 64 KiB from an aligned_alloc one: the engine counters must show the
 * first attached (tx_bytes_zero_copy) and the second copied (tx_bytes_copied), and both
 * must arrive intact on the vhost side. --no-huge: the EAL's memory is then one memfd,
 * which the backend maps (no hugepages needed). */
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <rte_dev.h>
#include <unistd.h>

#include <droce/droce.h>

#include "engine_test_util.h"
#include "raw_peer.h"

using namespace droce;

namespace {

constexpr size_t kLen = 64 << 10; /* one WRITE: 16 frames of path MTU 4096 */
constexpr size_t kBuf = 2 * kLen;

using droce::test::counter_map;

struct FreeBuf {
    void operator()(uint8_t *p) const { free_buf(p); }
};
using BufPtr = std::unique_ptr<uint8_t, FreeBuf>;

class ZcVirtio : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        static const char *eal[] = {
            "test_zc_virtio", "--no-huge", "-m",   "256",         "--no-pci",
            "--no-shconf",    "-l",        "0",    "--log-level", "*:warning",
            "--file-prefix",  nullptr,     nullptr};
        static const std::string prefix = "zcv" + std::to_string(getpid());
        eal[11] = prefix.c_str();
        /* The engine closes the vhost port first: virtio_user then writes to a closed
         * vhost-user socket as it stops, which must be EPIPE, not the signal. */
        std::signal(SIGPIPE, SIG_IGN);
        EngineOptions o;
        o.embedded = true;
        o.log_level = "warn";
        int consumed = 0;
        auto e = Engine::create(12, const_cast<char **>(eal), &consumed, o);
        ASSERT_TRUE(e) << e.status().message();
        engine_ = std::move(*e);
        /* The server first: virtio_user's probe talks vhost-user to it (its socket thread
         * answers while this one waits), and only once its port has started. */
        sock_ = "/tmp/droce-zcv-" + std::to_string(getpid()) + ".sock";
        std::remove(sock_.c_str());
        ASSERT_EQ(rte_dev_probe(("net_vhost_zcv,iface=" + sock_).c_str()), 0);
        DeviceConfig cv;
        cv.port = "net_vhost_zcv";
        cv.ipv4_cidr = "10.81.0.1/24";
        cv.mac = "02:00:00:00:0d:01";
        cv.mtu = 9000;
        DeviceConfig cu = cv;
        cu.port = "net_virtio_user_zcv";
        cu.ipv4_cidr = "10.81.0.2/24";
        cu.mac = "02:00:00:00:0d:02";
        auto dv = engine_->open_device(cv);
        ASSERT_TRUE(dv) << dv.status().message();
        /* net_vhost makes its socket when its port starts (open_device). */
        ASSERT_EQ(rte_dev_probe(("net_virtio_user_zcv,path=" + sock_).c_str()), 0);
        auto du = engine_->open_device(cu);
        ASSERT_TRUE(du) << du.status().message();
        vhost_ = *dv;
        vuser_ = *du;
    }
    static void TearDownTestSuite() {
        engine_.reset();
        std::remove(sock_.c_str());
    }

    /* Polls until one completion on cq (or 5 s). */
    static bool wait_wc(CompletionQueue &cq, Wc &wc) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (std::chrono::steady_clock::now() < end) {
            engine_->poll();
            if (cq.poll(&wc, 1) == 1)
                return true;
        }
        return false;
    }

    static std::unique_ptr<Engine> engine_;
    static Device *vhost_;
    static Device *vuser_;
    static std::string sock_;
};
std::unique_ptr<Engine> ZcVirtio::engine_;
Device *ZcVirtio::vhost_ = nullptr;
Device *ZcVirtio::vuser_ = nullptr;
std::string ZcVirtio::sock_;

} // namespace

TEST_F(ZcVirtio, AllocBufIsZeroCopyMallocIsCopied) {
    ASSERT_NE(vuser_, nullptr);
    /* Sender (virtio_user): one region from alloc_buf, one from aligned_alloc. */
    auto a = alloc_buf(*vuser_, kLen);
    ASSERT_TRUE(a) << a.status().message();
    BufPtr dpdk(static_cast<uint8_t *>(*a));
    std::unique_ptr<uint8_t, decltype(&std::free)> plain(
        static_cast<uint8_t *>(std::aligned_alloc(4096, kLen)), &std::free);
    ASSERT_TRUE(plain);
    EXPECT_TRUE(buf_zero_copy(dpdk.get(), kLen));
    EXPECT_FALSE(buf_zero_copy(plain.get(), kLen));
    for (size_t i = 0; i < kLen; ++i) {
        dpdk.get()[i] = static_cast<uint8_t>(i * 7 + 1);
        plain.get()[i] = static_cast<uint8_t>(i * 13 + 5);
    }
    /* Receiver (vhost): ordinary memory (net_vhost's own TX reaches any). */
    std::unique_ptr<uint8_t[]> dst(new uint8_t[kBuf]());

    auto pu = std::move(*vuser_->alloc_pd());
    auto pv = std::move(*vhost_->alloc_pd());
    auto cqu = std::move(*vuser_->create_cq(64));
    auto cqv = std::move(*vhost_->create_cq(64));
    auto mr_dpdk = pu->reg_mr(dpdk.get(), kLen, kAccessLocalWrite);
    ASSERT_TRUE(mr_dpdk) << mr_dpdk.status().message();
    auto mr_plain = pu->reg_mr(plain.get(), kLen, kAccessLocalWrite);
    ASSERT_TRUE(mr_plain) << mr_plain.status().message();
    auto mr_dst = pv->reg_mr(dst.get(), kBuf, kAccessLocalWrite | kAccessRemoteWrite);
    ASSERT_TRUE(mr_dst) << mr_dst.status().message();

    QpInitAttr ia;
    ia.send_cq = ia.recv_cq = cqu.get();
    auto qu = pu->create_qp(ia);
    ASSERT_TRUE(qu) << qu.status().message();
    ia.send_cq = ia.recv_cq = cqv.get();
    auto qv = pv->create_qp(ia);
    ASSERT_TRUE(qv) << qv.status().message();
    /* Path MTU 4096: frames above virtio_user's zero-copy threshold. */
    const uint32_t ip_u = 0x0A510002, ip_v = 0x0A510001; /* 10.81.0.2, 10.81.0.1 */
    const uint32_t access = kAccessLocalWrite | kAccessRemoteWrite;
    ASSERT_NO_FATAL_FAILURE(droce::test::connect_to_peer(
        **qu, {(*qv)->qp_num(), ip_v, 0x10, 0x10, 14, access, Mtu::Mtu4096}));
    ASSERT_NO_FATAL_FAILURE(droce::test::connect_to_peer(
        **qv, {(*qu)->qp_num(), ip_u, 0x10, 0x10, 14, access, Mtu::Mtu4096}));

    /* One signaled 64 KiB WRITE from `src` (MR `lkey`) to dst + off. */
    auto write = [&](const uint8_t *src, uint32_t lkey, size_t off) {
        SendWr wr;
        wr.wr_id = off;
        wr.opcode = WrOpcode::RdmaWrite;
        wr.send_flags = kSendSignaled;
        wr.sg_list[0] = {reinterpret_cast<uint64_t>(src), static_cast<uint32_t>(kLen), lkey};
        wr.num_sge = 1;
        wr.remote_addr = reinterpret_cast<uint64_t>(dst.get() + off);
        wr.rkey = (*mr_dst)->rkey();
        Status ps = (*qu)->post_send(wr);
        ASSERT_TRUE(ps) << ps.message();
        Wc wc{};
        ASSERT_TRUE(wait_wc(*cqu, wc)) << "no completion (ARP over vhost, or frames lost)";
        EXPECT_EQ(wc.status, WcStatus::Success) << wc_status_str(wc.status);
    };

    auto c0 = counter_map(*vuser_);
    write(dpdk.get(), (*mr_dpdk)->lkey(), 0);
    auto c1 = counter_map(*vuser_);
    EXPECT_EQ(c1["tx_bytes_zero_copy"] - c0["tx_bytes_zero_copy"], kLen)
        << "alloc_buf memory must be attached on virtio_user";
    EXPECT_EQ(c1["tx_bytes_copied"] - c0["tx_bytes_copied"], 0u);
    write(plain.get(), (*mr_plain)->lkey(), kLen);
    auto c2 = counter_map(*vuser_);
    EXPECT_EQ(c2["tx_bytes_zero_copy"] - c1["tx_bytes_zero_copy"], 0u)
        << "aligned_alloc memory is out of the vhost-user backend's reach: copied";
    EXPECT_EQ(c2["tx_bytes_copied"] - c1["tx_bytes_copied"], kLen);
    EXPECT_EQ(std::memcmp(dst.get(), dpdk.get(), kLen), 0) << "zero-copy data corrupted";
    EXPECT_EQ(std::memcmp(dst.get() + kLen, plain.get(), kLen), 0) << "copied data corrupted";

    /* virtio_user keeps the last sent mbufs until a later burst: deregistering the
     * alloc_buf region must not wait for them (the retired region keeps their state). */
    const auto t0 = std::chrono::steady_clock::now();
    qu->reset();
    qv->reset();
    mr_dpdk->reset();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

TEST_F(ZcVirtio, AllocBufFallsBackOrFails) {
    ASSERT_NE(vuser_, nullptr);
    /* More than -m 256 holds: no DPDK memory for it. */
    const size_t big = size_t{512} << 20;
    auto strict = alloc_buf(*vuser_, big, kBufZeroCopyOnly);
    ASSERT_FALSE(strict);
    EXPECT_EQ(strict.status().code(), ENOMEM);
    auto loose = alloc_buf(*vuser_, big);
    ASSERT_TRUE(loose) << loose.status().message();
    EXPECT_FALSE(buf_zero_copy(*loose, big));
    EXPECT_EQ(static_cast<uint8_t *>(*loose)[big - 1], 0); /* zeroed, as DPDK's */
    free_buf(*loose);
    auto zero = alloc_buf(*vuser_, 0);
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.status().code(), EINVAL);
    free_buf(nullptr);
}
