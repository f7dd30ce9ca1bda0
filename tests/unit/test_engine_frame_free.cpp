/* SPDX-License-Identifier: BSD-3-Clause */
/* free_frames (engine_frame_free.h), the end of an RX batch: plain frames go back to
 * their pool in one put; a batch with a frame that is not plain (shared, chained, of
 * another pool) is freed by DPDK's general free, so no reference, segment or pool is
 * lost. Each case checks the pools' counts and what the test still holds. */
#include <gtest/gtest.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <droce/droce.h>

#include "engine_frame_free.h"
#include "engine_test_util.h"

using namespace droce;

namespace {

class FrameFree : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        engine_ = test::make_test_engine("test_engine_frame_free", test::embedded_test_options());
    }
    static void TearDownTestSuite() { engine_.reset(); }
    void SetUp() override {
        ASSERT_TRUE(engine_);
        static int seq = 0;
        for (rte_mempool *&p : pools_) {
            const std::string name = "frame_free" + std::to_string(seq++);
            p = rte_pktmbuf_pool_create(name.c_str(), 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE,
                                        SOCKET_ID_ANY);
            ASSERT_NE(p, nullptr);
        }
    }
    void TearDown() override {
        for (rte_mempool *p : pools_)
            rte_mempool_free(p);
    }
    unsigned avail(int i) const { return rte_mempool_avail_count(pools_[i]); }
    rte_mbuf *alloc(int i) {
        rte_mbuf *m = rte_pktmbuf_alloc(pools_[i]);
        EXPECT_NE(m, nullptr);
        return m;
    }

    static inline std::unique_ptr<Engine> engine_;
    rte_mempool *pools_[2] = {};
};

TEST_F(FrameFree, PlainFramesAllGoBack) {
    const unsigned a0 = avail(0);
    rte_mbuf *m[4] = {alloc(0), alloc(0), alloc(0), alloc(0)};
    ASSERT_EQ(avail(0), a0 - 4);
    engine::free_frames(m, 4);
    EXPECT_EQ(avail(0), a0);
    engine::free_frames(m, 0); /* an empty batch touches nothing */
    EXPECT_EQ(avail(0), a0);
}

TEST_F(FrameFree, ASharedFrameKeepsTheOtherReference) {
    const unsigned a0 = avail(0);
    rte_mbuf *m[3] = {alloc(0), alloc(0), alloc(0)};
    rte_mbuf *held = m[1];
    rte_mbuf_refcnt_update(held, 1); /* someone else (a capture, a retransmission) holds it */
    engine::free_frames(m, 3);
    EXPECT_EQ(avail(0), a0 - 1);
    EXPECT_EQ(rte_mbuf_refcnt_read(held), 1);
    rte_pktmbuf_free(held);
    EXPECT_EQ(avail(0), a0);
}

TEST_F(FrameFree, AChainedFrameLosesNoSegment) {
    const unsigned a0 = avail(0);
    rte_mbuf *head = alloc(0), *tail = alloc(0);
    ASSERT_EQ(rte_pktmbuf_chain(head, tail), 0);
    rte_mbuf *m[2] = {alloc(0), head};
    engine::free_frames(m, 2);
    EXPECT_EQ(avail(0), a0);
}

TEST_F(FrameFree, FramesOfAnotherPoolGoBackToTheirOwn) {
    const unsigned a0 = avail(0), b0 = avail(1);
    rte_mbuf *m[3] = {alloc(0), alloc(1), alloc(0)};
    engine::free_frames(m, 3);
    EXPECT_EQ(avail(0), a0);
    EXPECT_EQ(avail(1), b0);
}

} // namespace

namespace {

/* FrameFreeBatch: frames wait until flush() or until Cap are held, then go back in one
 * free_frames; what it holds at its end goes back too. */
TEST_F(FrameFree, BatchFreesAtFlushAtCapacityAndAtItsEnd) {
    const unsigned a0 = avail(0);
    {
        engine::FrameFreeBatch<4> b;
        b.add(alloc(0));
        b.add(alloc(0));
        EXPECT_EQ(b.held(), 2u);
        EXPECT_EQ(avail(0), a0 - 2); /* held, not freed yet */
        b.flush();
        EXPECT_EQ(b.held(), 0u);
        EXPECT_EQ(avail(0), a0);
        for (int i = 0; i < 3; ++i)
            b.add(alloc(0));
        EXPECT_EQ(avail(0), a0 - 3);
        b.add(alloc(0)); /* the fourth fills it: all four go back */
        EXPECT_EQ(b.held(), 0u);
        EXPECT_EQ(avail(0), a0);
        b.add(alloc(0));
        EXPECT_EQ(avail(0), a0 - 1);
    }
    EXPECT_EQ(avail(0), a0); /* the destructor gave back the last one */
}

} // namespace
