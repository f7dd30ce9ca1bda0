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
    q.taken(3); /* the port took three: the fourth moves to the front */
    ASSERT_EQ(q.size(), 1u);
    EXPECT_EQ(q.frames()[0], fake(4));
    q.push(fake(5));
    q.push(fake(6));
    EXPECT_EQ(q.frames()[1], fake(5));
    EXPECT_EQ(q.frames()[2], fake(6));
    q.taken(0); /* the port took none: nothing moves */
    EXPECT_EQ(q.frames()[0], fake(4));
    EXPECT_EQ(q.size(), 3u);
    q.taken(3);
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.high_water(), 4u); /* the most it held, kept */
}

} // namespace
