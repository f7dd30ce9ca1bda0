/* SPDX-License-Identifier: BSD-3-Clause */
/* ZcRegistry (engine_zc_registry.h) alone: the threshold the TX paths compare against, a
 * region per registered MR, and a deregistered region kept while mbufs are attached to
 * it, released by reap() once they are back (or kept for good when the caller gives up).
 * The mbufs are stood for by the region's per-worker reference counts. */
#include <cstdlib>

#include <gtest/gtest.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "engine_test_util.h"
#include "engine_zc_registry.h"

using namespace droce;
using engine::ZcReach;
using engine::ZcRegistry;

namespace {

class ZcRegistryTest : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        engine_ = test::make_test_engine("test_engine_zc_registry", test::embedded_test_options());
    }
    static void TearDownTestSuite() { engine_.reset(); }
    void SetUp() override {
        ASSERT_TRUE(engine_);
        buf_ = rte_malloc(nullptr, 4096, 64); /* DPDK's own memory: no extmem needed */
        ASSERT_NE(buf_, nullptr);
    }
    void TearDown() override { rte_free(buf_); }
    /* A region for an MR of key over buf_, registered in z: z's region for it. */
    engine::ZcRegion *add(ZcRegistry &z, uint32_t key) const {
        const mem::MemoryRegion mr{reinterpret_cast<uint64_t>(buf_), 4096, 0, 1, key, true};
        z.add(mr, buf_, 4096, 0, "test");
        return z.region(key >> 8);
    }

    static inline std::unique_ptr<Engine> engine_;
    void *buf_ = nullptr;
};

TEST_F(ZcRegistryTest, ThresholdFollowsTheReach) {
    ZcRegistry z;
    EXPECT_FALSE(z.on());
    EXPECT_EQ(z.from(), UINT32_MAX); /* off: no payload is long enough */
    z.configure(ZcReach::VirtAddr, 0);
    EXPECT_TRUE(z.on());
    EXPECT_EQ(z.from(), 1u); /* an empty payload is never attached */
    z.configure(ZcReach::DmaMapped, 2048);
    EXPECT_EQ(z.from(), 2048u);
    EXPECT_EQ(z.min_bytes(), 2048u);
    z.configure(ZcReach::Copy, 2048);
    EXPECT_FALSE(z.on());
    EXPECT_EQ(z.from(), UINT32_MAX);
}

TEST_F(ZcRegistryTest, RetiredRegionStaysUntilItsMbufsAreBack) {
    ZcRegistry z;
    z.configure(ZcReach::VirtAddr, 0);
    engine::ZcRegion *r = add(z, 0x0305);
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->usable);
    EXPECT_EQ(z.region(0x04), nullptr);
    rte_mbuf_ext_refcnt_set(&r->shinfo[0], 2); /* two frames attached by worker 0 */
    rte_mbuf_ext_refcnt_set(&r->shinfo[1], 1); /* one by worker 1 */
    EXPECT_EQ(z.outstanding(), 3u);

    EXPECT_EQ(z.retire(0x0399), 0u); /* another key in that slot: not this region */
    EXPECT_NE(z.region(0x03), nullptr);
    EXPECT_EQ(z.retire(0x0305), 3u); /* out of the table, three to wait for */
    EXPECT_EQ(z.region(0x03), nullptr);
    EXPECT_EQ(z.counters().dereg_inflight_refs, 3u);
    EXPECT_EQ(z.outstanding(), 3u);
    EXPECT_FALSE(z.reap(0x0305, false));
    rte_mbuf_ext_refcnt_set(&r->shinfo[0], 0);
    rte_mbuf_ext_refcnt_set(&r->shinfo[1], 0);
    EXPECT_TRUE(z.reap(0x0305, false)); /* all back: released */
    EXPECT_EQ(z.outstanding(), 0u);
    EXPECT_EQ(z.counters().dereg_timeout, 0u);
}

TEST_F(ZcRegistryTest, GivingUpKeepsTheRegionAndCountsIt) {
    ZcRegistry z;
    z.configure(ZcReach::VirtAddr, 0);
    engine::ZcRegion *r = add(z, 0x0701);
    ASSERT_NE(r, nullptr);
    rte_mbuf_ext_refcnt_set(&r->shinfo[0], 1);
    EXPECT_EQ(z.retire(0x0701), 1u);
    EXPECT_FALSE(z.reap(0x0701, true));
    EXPECT_EQ(z.counters().dereg_timeout, 1u);
    EXPECT_TRUE(z.reap(0x0701, false)); /* forgotten by key: nothing of it to wait for */
    EXPECT_EQ(z.outstanding(), 1u);     /* ... but kept while its mbuf is out */
    rte_mbuf_ext_refcnt_set(&r->shinfo[0], 0);
    z.reap(0, false);
    EXPECT_EQ(z.outstanding(), 0u);
}

TEST_F(ZcRegistryTest, DpdkFdRegionsAreNotWaitedFor) {
    ZcRegistry z;
    z.configure(ZcReach::DpdkFd, 0);
    engine::ZcRegion *r = add(z, 0x0201);
    ASSERT_NE(r, nullptr);
    rte_mbuf_ext_refcnt_set(&r->shinfo[0], 1);
    EXPECT_EQ(z.retire(0x0201), 0u); /* the memory stays mapped: no wait */
    EXPECT_EQ(z.counters().dereg_inflight_refs, 1u);
    rte_mbuf_ext_refcnt_set(&r->shinfo[0], 0);
    EXPECT_TRUE(z.reap(0x0201, false));
}

} // namespace
