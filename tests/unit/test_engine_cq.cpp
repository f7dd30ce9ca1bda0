/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion queues in embedded mode: a plain array on the application's thread instead
 * of the SPSC ring worker mode uses (engine_cq.cpp). First the array against a ring on
 * the same operations (order, partial polls, many wraps, the exact depth); then through
 * the API over a net_ring pair in both modes: which path a CQ takes, order across wraps,
 * and a CQ overrun raising CqErr once and QpFatal, with the same completions, events and
 * counters in both modes. Its own binary: it needs a worker lcore. */
#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <rte_ring.h>

#include <droce/droce.h>

#include "api_internal.h"
#include "cq_test_pair.h"
#include "engine.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

Wc wc_of(uint64_t id) {
    Wc w{};
    w.wr_id = id;
    w.byte_len = static_cast<uint32_t>(id * 7);
    w.qp_num = static_cast<uint32_t>(id ^ 0x55);
    return w;
}

/* A CQ as worker mode makes it (api::make_elem_ring's flags). */
void make_ring_cq(engine::CqCtx &c, uint32_t depth) {
    c.ring = engine::ring_alloc("test_cq", sizeof(Wc), depth,
                                RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
    ASSERT_NE(c.ring, nullptr);
}

TEST(CqLocal, InOrderPartialPollsAndManyWraps) {
    engine::CqCtx c;
    ASSERT_TRUE(c.init_local(6)); /* an array of 8, 6 usable */
    EXPECT_TRUE(c.local());
    EXPECT_EQ(c.poll(nullptr, 0), 0);
    uint64_t next_in = 0, next_out = 0;
    Wc out[8];
    /* 5 in, polled 2 + 2 + 1: the array's end is crossed every couple of rounds, and
     * polls split across it. 400 rounds = 2000 completions = 250 wraps. */
    for (int round = 0; round < 400; ++round) {
        for (int i = 0; i < 5; ++i)
            ASSERT_TRUE(c.push(wc_of(next_in++)));
        for (int want : {2, 2, 1}) {
            ASSERT_EQ(c.poll(out, want), want) << "round " << round;
            for (int i = 0; i < want; ++i) {
                EXPECT_EQ(out[i].wr_id, next_out);
                EXPECT_EQ(out[i].byte_len, wc_of(next_out).byte_len);
                ++next_out;
            }
        }
        ASSERT_EQ(c.poll(out, 8), 0);
    }
    EXPECT_EQ(next_out, 2000u);
}

TEST(CqLocal, HoldsExactlyTheDepthAskedFor) {
    for (uint32_t depth : {1u, 4u, 5u, 8u, 1000u}) {
        engine::CqCtx c;
        ASSERT_TRUE(c.init_local(depth));
        /* Start off the array's origin so that the full CQ spans its end. */
        for (int i = 0; i < 3; ++i) {
            ASSERT_TRUE(c.push(wc_of(i)));
            Wc w;
            ASSERT_EQ(c.poll(&w, 1), 1);
        }
        for (uint32_t i = 0; i < depth; ++i)
            ASSERT_TRUE(c.push(wc_of(i))) << depth;
        EXPECT_FALSE(c.push(wc_of(depth))) << depth; /* full: the completion is refused */
        EXPECT_FALSE(c.push(wc_of(depth)));
        std::vector<Wc> out(depth + 1);
        ASSERT_EQ(c.poll(out.data(), static_cast<int>(depth + 1)), static_cast<int>(depth));
        for (uint32_t i = 0; i < depth; ++i)
            EXPECT_EQ(out[i].wr_id, i);
        EXPECT_TRUE(c.push(wc_of(7))); /* room again */
    }
    engine::CqCtx bad;
    EXPECT_FALSE(bad.init_local(0));
    EXPECT_FALSE(bad.init_local((1u << 20) + 1));
}

/* The array and the ring side by side on the same random pushes and polls: same accepted
 * pushes, same polled completions, for depths at and off a power of two. */
TEST(CqLocal, SameAsTheRingOnRandomOperations) {
    for (uint32_t depth : {1u, 3u, 16u, 100u}) {
        engine::CqCtx a, r;
        ASSERT_TRUE(a.init_local(depth));
        make_ring_cq(r, depth);
        EXPECT_FALSE(r.local());
        std::mt19937 rng(depth);
        uint64_t id = 0;
        std::vector<Wc> oa(depth + 8), orr(depth + 8);
        for (int step = 0; step < 20000; ++step) {
            if (rng() % 2) {
                const Wc w = wc_of(id++);
                ASSERT_EQ(a.push(w), r.push(w)) << "depth " << depth << " step " << step;
            } else {
                const int max = static_cast<int>(rng() % (depth + 8));
                const int na = a.poll(oa.data(), max);
                ASSERT_EQ(na, r.poll(orr.data(), max)) << "depth " << depth << " step " << step;
                for (int i = 0; i < na; ++i)
                    ASSERT_EQ(std::memcmp(&oa[i], &orr[i], sizeof(Wc)), 0);
            }
        }
    }
}

/* ---- through the API: two devices over a net_ring pair (cq_test_pair.h) ---- */

using cq_test::CqApi;
using cq_test::kMsg;
using cq_test::Side;

/* Embedded: every CQ an array, no ring; worker mode: every CQ a ring. */
TEST_P(CqApi, EmbeddedCqsAreArraysWorkerCqsRings) {
    open(32);
    for (Side *s : {&a, &b})
        for (CompletionQueue *cq : {s->scq.get(), s->rcq.get()}) {
            engine::CqCtx *c = api::cq_of(*cq);
            ASSERT_NE(c, nullptr);
            EXPECT_EQ(c->local(), GetParam());
            EXPECT_EQ(c->ring == nullptr, GetParam());
        }
}

/* 600 SENDs through a receive CQ of 6 (an array of 8): 75 wraps, polled 4 at a time,
 * every completion in posting order. */
TEST_P(CqApi, InOrderAcrossManyWraps) {
    open(6);
    uint64_t posted = 0, got = 0, sent = 0;
    std::vector<Wc> sc;
    while (got < 600) {
        /* Never more receives outstanding than the CQ holds. */
        while (posted < 600 && posted - got < 6) {
            ASSERT_TRUE(recv(posted));
            ASSERT_TRUE(send(1000 + posted));
            ++posted;
        }
        auto w = wait(*b.rcq, 1, 4);
        ASSERT_FALSE(w.empty()) << "after " << got;
        for (const Wc &wc : w) {
            ASSERT_EQ(wc.status, WcStatus::Success);
            ASSERT_EQ(wc.wr_id, got) << "completion out of order";
            ASSERT_EQ(wc.byte_len, kMsg);
            ++got;
        }
        Wc s[16];
        for (int k; (k = a.scq->poll(s, 16)) > 0;)
            for (int i = 0; i < k; ++i) {
                ASSERT_EQ(s[i].status, WcStatus::Success);
                ASSERT_EQ(s[i].wr_id, 1000 + sent++);
            }
    }
    auto rest = wait(*a.scq, 600 - sent);
    for (const Wc &wc : rest)
        ASSERT_EQ(wc.wr_id, 1000 + sent++);
    EXPECT_EQ(sent, 600u);
    EXPECT_EQ(counter(*b.dev, "cq_overflow"), 0u);
}

/* A receive CQ of 4 that nobody polls, 10 receives and 10 SENDs: the 5th completion is
 * lost, CqErr names the CQ once, the QP gets QpFatal, the 5 receives flushed behind it
 * find the CQ full too (counted, no more events). The 4 that fit are there, in order. */
TEST_P(CqApi, OverrunIsCqErrOnceAndQpFatal) {
    open(4);
    for (uint64_t i = 0; i < 10; ++i)
        ASSERT_TRUE(recv(i));
    for (uint64_t i = 0; i < 10; ++i)
        ASSERT_TRUE(send(1000 + i));
    auto ev = events(*b.dev, 2);
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].type, AsyncEventType::CqErr);
    EXPECT_EQ(ev[0].cq, b.rcq.get());
    EXPECT_EQ(ev[1].type, AsyncEventType::QpFatal);
    EXPECT_EQ(ev[1].qp_num, b.qp->qp_num());
    /* Nothing more: a CQ's error is raised once. */
    EXPECT_TRUE(events(*b.dev, 1, 100ms).empty());
    auto w = wait(*b.rcq, 5, 16, 200ms);
    ASSERT_EQ(w.size(), 4u);
    for (uint64_t i = 0; i < 4; ++i) {
        EXPECT_EQ(w[i].wr_id, i);
        EXPECT_EQ(w[i].status, WcStatus::Success);
    }
    EXPECT_EQ(counter(*b.dev, "cq_overflow"), 6u);
    /* The CQ takes completions again once polled (its error is not raised again). */
    EXPECT_EQ(api::cq_of(*b.rcq)->overrun, true);
}

INSTANTIATE_TEST_SUITE_P(Modes, CqApi, ::testing::Values(true, false),
                         [](const auto &i) { return i.param ? "Embedded" : "Worker"; });

} // namespace
