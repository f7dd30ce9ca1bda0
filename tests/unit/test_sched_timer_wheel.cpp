/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/sched: the timing wheel against its contract, and against a brute-force model under
 * random arm/cancel/re-arm/expire sequences with gaps from 0 ns to hours. */
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "sched_timer_wheel.h"

using droce::sched::TimerNode;
using droce::sched::TimerWheel;

namespace {

/* Deadline rounded up to the tick, in ns: the earliest now at which a node may fire. */
uint64_t due_at(uint64_t deadline, uint64_t tick) {
    return (deadline / tick + (deadline % tick != 0)) * tick;
}

TEST(SchedTimerWheel, FiresAtDeadlineRoundedUpToTheTickNeverBefore) {
    TimerWheel w(0, 1024);
    TimerNode n;
    w.arm(n, 1025);
    EXPECT_TRUE(n.armed());
    EXPECT_EQ(w.size(), 1u);
    int fired = 0;
    auto fn = [&](TimerNode &) { ++fired; };
    EXPECT_EQ(w.expire(1024, fn), 0u); /* before the deadline */
    EXPECT_EQ(w.expire(1025, fn), 0u); /* deadline reached, its tick (2048) not yet */
    EXPECT_EQ(w.expire(2047, fn), 0u);
    EXPECT_EQ(w.expire(2048, fn), 1u);
    EXPECT_EQ(fired, 1);
    EXPECT_FALSE(n.armed());
    EXPECT_EQ(w.size(), 0u);
    EXPECT_EQ(w.expire(1'000'000, fn), 0u); /* once */
}

TEST(SchedTimerWheel, PastDeadlineFiresAtNextExpire) {
    TimerWheel w(1'000'000, 1024);
    TimerNode a, b, c;
    w.arm(a, 5);              /* long past */
    w.arm(b, 976 * 1024);     /* the start of the current tick: past too */
    w.arm(c, 1'000'000 - 10); /* past, but its tick (977) is not: the tick rule wins */
    std::vector<TimerNode *> got;
    EXPECT_EQ(w.expire(1'000'000, [&](TimerNode &n) { got.push_back(&n); }), 2u);
    EXPECT_EQ(got.size(), 2u);
    EXPECT_TRUE(c.armed());
    EXPECT_EQ(w.expire(977 * 1024, [&](TimerNode &n) { got.push_back(&n); }), 1u);
    EXPECT_EQ(got.back(), &c);
}

TEST(SchedTimerWheel, FiresInDeadlineOrder) {
    std::mt19937_64 rng(7);
    TimerWheel w(0, 1024);
    std::vector<TimerNode> nodes(5000);
    for (auto &n : nodes)
        w.arm(n, 1 + rng() % 20'000'000'000ull); /* up to 20 s: every level */
    uint64_t last = 0;
    size_t fired = 0;
    auto check = [&](TimerNode &n) {
        const uint64_t tick = due_at(n.deadline, 1024);
        EXPECT_GE(tick, last);
        last = tick;
        ++fired;
    };
    /* Once in small steps, once in one jump: the order must hold both ways. */
    for (uint64_t now = 0; now <= 10'000'000'000ull; now += 3'000'000)
        w.expire(now, check);
    w.expire(30'000'000'000ull, check);
    EXPECT_EQ(fired, nodes.size());
    EXPECT_EQ(w.size(), 0u);
}

TEST(SchedTimerWheel, FarDeadlinesAreParkedNotLost) {
    const uint64_t tick = 1024;
    TimerWheel w(0, tick);
    const uint64_t far[] = {uint64_t{1} << 42, /* ~73 min: just past the wheel's span */
                            uint64_t{1} << 50, uint64_t{1} << 62, UINT64_MAX / 2};
    TimerNode nodes[4];
    for (int i = 0; i < 4; ++i)
        w.arm(nodes[i], far[i]);
    for (int i = 0; i < 4; ++i) {
        std::vector<TimerNode *> got;
        auto fn = [&](TimerNode &n) { got.push_back(&n); };
        const uint64_t at = due_at(far[i], tick);
        /* Walk up to the deadline in a few big strides (each crosses overflow windows). */
        const uint64_t from = i == 0 ? 0 : due_at(far[i - 1], tick);
        for (uint64_t now = from; now < at; now += (at - from) / 7 + 1)
            w.expire(now, fn);
        EXPECT_TRUE(got.empty()) << i;
        w.expire(at - 1, fn);
        EXPECT_TRUE(got.empty()) << i;
        w.expire(at, fn);
        ASSERT_EQ(got.size(), 1u) << i;
        EXPECT_EQ(got[0], &nodes[i]);
    }
    EXPECT_EQ(w.size(), 0u);
}

TEST(SchedTimerWheel, RearmFromInsideCallback) {
    /* A periodic timer: re-armed from its own callback; never fires twice in one call. */
    TimerWheel w(0, 1024);
    TimerNode n;
    const uint64_t period = 100'000;
    w.arm(n, period);
    int fired = 0;
    auto fn = [&](TimerNode &t) {
        EXPECT_FALSE(t.armed());
        ++fired;
        w.arm(t, t.deadline + period);
    };
    for (uint64_t now = 0; now <= 10'000'000; now += 100)
        ASSERT_LE(w.expire(now, fn), 1u);
    EXPECT_GE(fired, 99);
    EXPECT_LE(fired, 100);
    /* After a 10 s gap the re-armed deadline is in the past: one fire per call, not a loop. */
    EXPECT_EQ(w.expire(10'010'000'000ull, fn), 1u);
    EXPECT_EQ(w.expire(10'010'000'000ull, fn), 1u);
    EXPECT_TRUE(n.armed());
}

TEST(SchedTimerWheel, CancelOfFiredOrUnarmedNodeIsANoOp) {
    TimerWheel w(0, 1024);
    TimerNode a, b, never;
    w.cancel(never);
    w.arm(a, 10'000);
    w.arm(b, 20'000);
    EXPECT_EQ(w.expire(15'000, [](TimerNode &) {}), 1u);
    w.cancel(a); /* already fired */
    EXPECT_FALSE(a.armed());
    EXPECT_EQ(w.size(), 1u);
    w.cancel(b);
    w.cancel(b);
    EXPECT_EQ(w.size(), 0u);
    EXPECT_EQ(w.expire(1'000'000, [](TimerNode &) { ADD_FAILURE(); }), 0u);
    w.arm(a, 2'048'000); /* a fired node can be armed again */
    EXPECT_EQ(w.expire(2'048'000, [](TimerNode &) {}), 1u);
}

TEST(SchedTimerWheel, CallbackCancelsAnotherDueNode) {
    TimerWheel w(0, 1024);
    TimerNode a, b;
    w.arm(a, 1000);
    w.arm(b, 5000);
    int fired = 0;
    EXPECT_EQ(w.expire(10'000,
                       [&](TimerNode &n) {
                           ++fired;
                           EXPECT_EQ(&n, &a);
                           w.cancel(b); /* due in this call, not yet fired: must not fire */
                       }),
              1u);
    EXPECT_EQ(fired, 1);
    EXPECT_EQ(w.size(), 0u);
}

TEST(SchedTimerWheel, ExpireEvery100nsAndAfterATenSecondGap) {
    std::mt19937_64 rng(3);
    TimerWheel w(0, 1024);
    std::vector<TimerNode> nodes(10'000);
    for (auto &n : nodes)
        w.arm(n, rng() % 10'000'000'000ull);
    size_t fired = 0;
    auto fn = [&](TimerNode &) { ++fired; };
    for (uint64_t now = 0; now < 2'000'000; now += 100) /* 2 ms at 100 ns */
        w.expire(now, fn);
    size_t expected = 0;
    for (auto &n : nodes)
        expected += due_at(n.deadline, 1024) < 2'000'000;
    EXPECT_EQ(fired, expected);
    w.expire(10'000'000'000ull, fn); /* then nothing for 10 s */
    EXPECT_EQ(fired, nodes.size());
}

/* The property test: random arm / cancel / re-arm / expire, gaps from 0 to hours (and rare
 * jumps of years), callbacks that re-arm themselves or cancel/re-arm others; at every
 * expire() exactly the nodes the model says are due must fire, none before its deadline. */
struct Model {
    bool armed = false;
    uint64_t deadline = 0;
};

void run_property(uint64_t seed, uint64_t tick, int ops) {
    std::mt19937_64 rng(seed);
    auto uni = [&](uint64_t n) { return n == 0 ? 0 : rng() % n; };
    constexpr size_t kNodes = 512;
    std::vector<TimerNode> nodes(kNodes);
    std::vector<Model> model(kNodes);
    uint64_t now = uni(uint64_t{1} << 40);
    TimerWheel w(now, tick);

    auto pick_deadline = [&]() -> uint64_t {
        switch (uni(10)) {
        case 0: /* past or present */
            return now - std::min(now, uni(10 * tick));
        case 1:
            return now + uni(4 * tick); /* within a few ticks */
        case 2:
        case 3:
            return now + uni(300 * tick); /* level 0/1 */
        case 4:
        case 5:
            return now + uni(100'000'000); /* RTO-like, 100 ms */
        case 6:
            return now + uni(20'000'000'000ull); /* 20 s */
        case 7:
            return now + uni(uint64_t{1} << (32 + uni(12))) * tick; /* around the span */
        case 8:
            return now + uni(uint64_t{1} << 45); /* hours at 1 us ticks */
        default:
            return std::min<uint64_t>(UINT64_MAX / 2, now + uni(uint64_t{1} << 61)); /* years */
        }
    };
    auto model_arm = [&](size_t i, uint64_t d) {
        model[i].armed = true;
        model[i].deadline = d;
        w.arm(nodes[i], d);
    };

    std::vector<char> pending(kNodes); /* due at this expire(), not yet fired */
    size_t expires = 0, total_fired = 0;
    for (int op = 0; op < ops; ++op) {
        const uint64_t r = uni(100);
        if (r < 40) {
            model_arm(uni(kNodes), pick_deadline()); /* arm or re-arm */
        } else if (r < 55) {
            const size_t i = uni(kNodes);
            model[i].armed = false;
            w.cancel(nodes[i]);
        } else {
            /* Gap: mostly short (expire called often), sometimes seconds, rarely huge. */
            uint64_t gap;
            const uint64_t g = uni(100);
            if (g < 20)
                gap = 0;
            else if (g < 50)
                gap = uni(200);
            else if (g < 80)
                gap = uni(50 * tick);
            else if (g < 95)
                gap = uni(100'000'000);
            else if (g < 99)
                gap = uni(10'000'000'000ull);
            else
                gap = uni(uint64_t{1} << (40 + uni(20)));
            if (now + gap > UINT64_MAX / 2 + (uint64_t{1} << 40))
                gap = 0; /* stay in the supported range */
            now += gap;
            size_t want = 0;
            for (size_t i = 0; i < kNodes; ++i) {
                pending[i] = model[i].armed && due_at(model[i].deadline, tick) <= now;
                want += pending[i];
            }
            size_t got = 0;
            const uint32_t n = w.expire(now, [&](TimerNode &t) {
                const size_t i = static_cast<size_t>(&t - nodes.data());
                ASSERT_LT(i, kNodes);
                ASSERT_TRUE(pending[i]) << "node " << i << " fired, not due: deadline "
                                        << model[i].deadline << " now " << now;
                ASSERT_GE(now, t.deadline);
                ASSERT_FALSE(t.armed());
                pending[i] = 0;
                model[i].armed = false;
                ++got;
                const uint64_t a = uni(100);
                if (a < 30) {
                    model_arm(i, pick_deadline()); /* e.g. retransmit again */
                } else if (a < 35) {
                    const size_t j = uni(kNodes); /* cancel another (maybe due) node */
                    want -= pending[j];
                    pending[j] = 0;
                    model[j].armed = false;
                    w.cancel(nodes[j]);
                } else if (a < 40) {
                    const size_t j = uni(kNodes); /* re-arm another (maybe due) node */
                    want -= pending[j];
                    pending[j] = 0;
                    model_arm(j, pick_deadline());
                }
            });
            ASSERT_EQ(n, got);
            ASSERT_EQ(got, want) << "expire #" << expires << " at " << now << ": fired " << got
                                 << ", model says " << want;
            ++expires;
            total_fired += got;
        }
        size_t armed = 0;
        for (size_t i = 0; i < kNodes; ++i) {
            armed += model[i].armed;
            ASSERT_EQ(nodes[i].armed(), model[i].armed) << "node " << i << " op " << op;
        }
        ASSERT_EQ(w.size(), armed) << "op " << op;
    }
    /* The test is only worth something if both sides were busy. */
    EXPECT_GT(expires, static_cast<size_t>(ops) / 4);
    EXPECT_GT(total_fired, static_cast<size_t>(ops) / 20);
}

TEST(SchedTimerWheel, PropertyMatchesModelTick1024) { run_property(1, 1024, 150'000); }
TEST(SchedTimerWheel, PropertyMatchesModelTick1) { run_property(2, 1, 150'000); }
TEST(SchedTimerWheel, PropertyMatchesModelTick64) { run_property(3, 64, 150'000); }

} // namespace
