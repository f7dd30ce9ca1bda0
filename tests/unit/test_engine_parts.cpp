/* SPDX-License-Identifier: BSD-3-Clause */
/* The shard's small parts, alone: the intrusive QP list (ready, held-ACK and parked
 * lists; engine_qp_list.h), the QPN allocator (engine_qpn_alloc.h) and the TX queue
 * (engine_tx_queue.h). Each is checked against what the shard relies on: order, counts,
 * links cleared, numbers of one residue class, quarantine, frames kept in order. */
#include <cstdint>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "engine_qp_list.h"
#include "engine_qpn_alloc.h"
#include "engine_tx_queue.h"

using droce::engine::QpList;
using droce::engine::QpnAllocator;
using droce::engine::TxQueue;

namespace {

struct Node {
    int id = 0;
    Node *ready_prev = nullptr;
    Node *ready_next = nullptr;
};

std::vector<int> ids(const QpList<Node> &l) {
    std::vector<int> v;
    l.for_each([&](Node &n) { v.push_back(n.id); });
    return v;
}

TEST(QpList, FifoOrderAndCounts) {
    Node n[4];
    QpList<Node> l;
    EXPECT_TRUE(l.empty());
    EXPECT_EQ(l.pop_front(), nullptr);
    for (int i = 0; i < 4; ++i) {
        n[i].id = i;
        l.push_back(n[i]);
    }
    EXPECT_EQ(l.size(), 4u);
    EXPECT_EQ(ids(l), (std::vector<int>{0, 1, 2, 3}));
    Node *f = l.pop_front();
    ASSERT_EQ(f, &n[0]);
    EXPECT_EQ(f->ready_next, nullptr); /* off the list: links cleared */
    EXPECT_EQ(n[1].ready_prev, nullptr);
    EXPECT_EQ(l.size(), 3u);
    l.push_back(n[0]); /* served, work left: to the back */
    EXPECT_EQ(ids(l), (std::vector<int>{1, 2, 3, 0}));
}

TEST(QpList, UnlinkFromAnyPlace) {
    Node n[5];
    QpList<Node> l;
    for (int i = 0; i < 5; ++i) {
        n[i].id = i;
        l.push_back(n[i]);
    }
    l.unlink(n[2]); /* middle */
    EXPECT_EQ(ids(l), (std::vector<int>{0, 1, 3, 4}));
    l.unlink(n[0]); /* head */
    l.unlink(n[4]); /* tail */
    EXPECT_EQ(ids(l), (std::vector<int>{1, 3}));
    EXPECT_EQ(l.size(), 2u);
    EXPECT_EQ(n[2].ready_next, nullptr);
    EXPECT_EQ(n[2].ready_prev, nullptr);
    l.push_back(n[4]); /* the tail was updated: appending after an unlinked tail works */
    EXPECT_EQ(ids(l), (std::vector<int>{1, 3, 4}));
    l.unlink(n[1]);
    l.unlink(n[3]);
    l.unlink(n[4]);
    EXPECT_TRUE(l.empty());
    EXPECT_EQ(l.size(), 0u);
    l.push_back(n[0]);
    EXPECT_EQ(ids(l), (std::vector<int>{0}));
}

TEST(QpList, SpliceFrontPutsTheOtherListAheadInItsOrder) {
    Node n[6];
    for (int i = 0; i < 6; ++i)
        n[i].id = i;
    QpList<Node> ready, held;
    ready.push_back(n[0]);
    ready.push_back(n[1]);
    held.push_back(n[4]);
    held.push_back(n[5]);
    ready.splice_front(held);
    EXPECT_EQ(ids(ready), (std::vector<int>{4, 5, 0, 1}));
    EXPECT_EQ(ready.size(), 4u);
    EXPECT_TRUE(held.empty());
    EXPECT_EQ(held.size(), 0u);
    /* Every link consistent: popping gives the same order and empties it. */
    std::vector<int> popped;
    while (Node *q = ready.pop_front())
        popped.push_back(q->id);
    EXPECT_EQ(popped, (std::vector<int>{4, 5, 0, 1}));

    QpList<Node> empty_ready, held2;
    held2.push_back(n[2]);
    empty_ready.splice_front(held2); /* into an empty list: its tail is the other's */
    empty_ready.push_back(n[3]);
    EXPECT_EQ(ids(empty_ready), (std::vector<int>{2, 3}));
    QpList<Node> none;
    empty_ready.splice_front(none); /* an empty list changes nothing */
    EXPECT_EQ(ids(empty_ready), (std::vector<int>{2, 3}));
}

TEST(QpnAllocator, ResidueClassFreshNumbersFirst) {
    /* Shard 2 of 3 from 0x11: 0x11 % 3 == 2, so its first QPN is 0x11 itself. */
    QpnAllocator a(2, 3, 0x11, 40, 1000);
    std::vector<uint32_t> got;
    while (const uint32_t q = a.alloc(0))
        got.push_back(q);
    EXPECT_EQ(got, (std::vector<uint32_t>{17, 20, 23, 26, 29, 32, 35, 38}));
    for (uint32_t w = 0; w < 3; ++w) {
        QpnAllocator b(w, 3, 0x11, 1000, 1000);
        for (int i = 0; i < 50; ++i) {
            const uint32_t q = b.alloc(0);
            ASSERT_GE(q, 0x11u);
            ASSERT_EQ(q % 3, w);
        }
    }
}

TEST(QpnAllocator, FreedNumbersOnlyAfterQuarantineOldestFirst) {
    QpnAllocator a(0, 1, 0x11, 0x14, 1000); /* three numbers: 0x11..0x13 */
    EXPECT_EQ(a.alloc(0), 0x11u);
    EXPECT_EQ(a.alloc(0), 0x12u);
    EXPECT_EQ(a.alloc(0), 0x13u);
    EXPECT_EQ(a.alloc(0), 0u); /* all in use */
    a.free(0x12, 100);
    a.free(0x11, 200);
    EXPECT_EQ(a.alloc(1099), 0u); /* 0x12 is 999 ns into its quarantine */
    EXPECT_EQ(a.alloc(1100), 0x12u);
    EXPECT_EQ(a.alloc(1100), 0u); /* 0x11 not yet */
    EXPECT_EQ(a.alloc(5000), 0x11u);
    EXPECT_EQ(a.alloc(5000), 0u);
}

rte_mbuf *fake(uintptr_t i) { return reinterpret_cast<rte_mbuf *>(i * 64); }

TEST(TxQueue, BackpressureOrderAndHighWater) {
    TxQueue<4> q;
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.room(), 4u);
    for (uintptr_t i = 1; i <= 4; ++i)
        EXPECT_TRUE(q.try_push(fake(i)));
    EXPECT_TRUE(q.full());
    EXPECT_FALSE(q.try_push(fake(5))); /* full: the caller keeps its frame */
    EXPECT_EQ(q.size(), 4u);
    EXPECT_EQ(q.high_water(), 4u);
    q.taken(3); /* the port took three: the fourth is the oldest now */
    ASSERT_EQ(q.size(), 1u);
    EXPECT_EQ(q.at(0), fake(4));
    q.push(fake(5));
    q.push(fake(6));
    EXPECT_EQ(q.at(1), fake(5));
    EXPECT_EQ(q.at(2), fake(6));
    q.taken(0); /* the port took none: nothing changes */
    EXPECT_EQ(q.at(0), fake(4));
    EXPECT_EQ(q.size(), 3u);
    q.taken(3);
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.high_water(), 4u); /* the most it held, kept */
}

/* What flush_tx relies on: front() is a run of the oldest frames in order, up to the
 * array's end; after a wrap the rest is the next run; every frame comes out once, in the
 * order pushed, however the bursts fall. */
TEST(TxQueue, RunsAcrossTheWrap) {
    TxQueue<8> q;
    uintptr_t next_in = 1, next_out = 1;
    /* Bursts of odd sizes against a port that takes a varying part of each run. */
    for (int step = 0; step < 200; ++step) {
        const int add = (step * 5) % 7;
        for (int i = 0; i < add && !q.full(); ++i)
            q.push(fake(next_in++));
        for (int run = 0; run < 2 && !q.empty(); ++run) {
            uint16_t n;
            rte_mbuf **f = q.front(&n);
            ASSERT_GE(n, 1u);
            ASSERT_LE(n, q.size());
            const uint16_t took = static_cast<uint16_t>(step % 3 == 0 ? n : n / 2);
            for (uint16_t i = 0; i < took; ++i)
                ASSERT_EQ(f[i], fake(next_out++)) << "step " << step;
            q.taken(took);
            if (took < n)
                break;
        }
        ASSERT_EQ(q.size(), next_in - next_out);
    }
    EXPECT_GT(next_out, 100u); /* the ring wrapped many times */
    /* A queue wrapping the end: two runs, in order. */
    while (!q.empty()) {
        uint16_t n;
        q.front(&n);
        q.taken(n);
    }
    uint16_t n0;
    EXPECT_EQ(q.front(&n0), q.front(&n0)); /* drained: back to the array's start */
    for (uintptr_t i = 0; i < 6; ++i)
        q.push(fake(1000 + i));
    EXPECT_EQ(q.front(&n0)[0], fake(1000));
    q.taken(5); /* one left, in slot 5 */
    for (uintptr_t i = 0; i < 4; ++i)
        q.push(fake(2000 + i)); /* slots 6, 7, 0, 1 */
    uint16_t n1;
    rte_mbuf **r1 = q.front(&n1);
    ASSERT_EQ(n1, 3u); /* slots 5 to 7, up to the end */
    EXPECT_EQ(r1[0], fake(1005));
    EXPECT_EQ(r1[2], fake(2001));
    q.taken(n1);
    uint16_t n2;
    rte_mbuf **r2 = q.front(&n2);
    ASSERT_EQ(n2, 2u); /* past the wrap, from slot 0 */
    EXPECT_EQ(r2, r1 - 5);
    EXPECT_EQ(r2[0], fake(2002));
    EXPECT_EQ(r2[1], fake(2003));
    q.taken(n2);
    /* Drained in the middle of the array: the next push goes to its start. */
    q.push(fake(3000));
    EXPECT_EQ(q.front(&n0), r2);
    EXPECT_EQ(n0, 1u);
}

} // namespace
