/* SPDX-License-Identifier: BSD-3-Clause */
/* A hierarchical timing wheel for per-QP deadlines (retransmission, RNR, later pacing).
 *
 * Sans-I/O: time is a uint64_t nanosecond argument, nothing here reads a clock or allocates.
 * Nodes are intrusive (embedded in their owner), so arm/cancel never allocate and a QP's
 * timer costs 32 bytes.
 *
 * Layout: kLevels levels of kSlots slots. Time is counted in ticks (tick_ns, a power of two).
 * A node expiring at tick e while the wheel stands at tick c lives at the level of the
 * highest bit in which e and c differ (8 bits per level), in the slot given by e's bits of
 * that level. So every occupied slot of a level lies strictly ahead of c's index at that
 * level, and when c reaches the start of an occupied slot of level k > 0 the slot is
 * re-sorted ("cascaded") into lower levels. Anything more than 2^32 ticks ahead (~73 min at
 * 1024 ns) is parked on an overflow list and re-examined when c reaches the 2^32-tick window
 * of the nearest of them, so far deadlines are never lost and cost nothing per expire().
 *
 * One 256-bit occupancy bitmap per level lets expire() jump straight to the next occupied
 * slot instead of walking ticks, so a call with nothing due is O(1) whatever the number of
 * armed timers and however long the gap since the previous call; the wheel also caches a
 * lower bound of the next event, so the common empty call is a compare.
 *
 * Semantics: a node armed with deadline d fires at the first expire(now) with
 * now >= d rounded up to the tick: never early, at most one tick late. `now` passed to
 * expire() must not go backwards (a smaller value is treated as the previous one).
 * Not thread-safe: one wheel per worker. */
#pragma once

#include <cstddef>
#include <cstdint>

namespace droce::sched {

/** Intrusive timer: embed in the owner (e.g. a QP context) and recover the owner in the
 * expiry callback (container_of-style or by keeping the node first). */
struct TimerNode {
    TimerNode *prev = nullptr, *next = nullptr;
    uint64_t deadline = 0;       /* ns, as armed */
    uint32_t where = UINT32_MAX; /* internal slot index; UINT32_MAX = not armed */
    bool armed() const { return where != UINT32_MAX; }
};

class TimerWheel {
  public:
    static constexpr unsigned kLevelBits = 8;
    static constexpr unsigned kSlots = 1u << kLevelBits;
    static constexpr unsigned kLevels = 4;
    static constexpr unsigned kSpanBits = kLevelBits * kLevels; /* 2^32 ticks in the wheel */

    /* tick_ns: granularity (power of two, default 1024 ns; anything else is rounded up to
     * one, which can only make timers fire later, never earlier). now: the wheel's start. */
    explicit TimerWheel(uint64_t now = 0, uint64_t tick_ns = 1024);
    TimerWheel(const TimerWheel &) = delete;
    TimerWheel &operator=(const TimerWheel &) = delete;

    /** O(1). Re-arming an armed node moves it (pushing a retransmit deadline forward on each
     * ACK usually stays in the same slot and only rewrites the deadline). */
    void arm(TimerNode &n, uint64_t deadline) {
        const uint64_t e = to_tick(deadline);
        const uint32_t w = place(e);
        n.deadline = deadline;
        if (w == n.where && w < kOverflow)
            return; /* same slot: a higher-level slot re-sorts by deadline when cascaded */
        if (n.armed())
            unlink(n);
        else
            ++size_;
        link(n, w, e);
    }

    /** O(1); no-op when not armed (including a node that already fired). */
    void cancel(TimerNode &n) {
        if (!n.armed())
            return;
        unlink(n);
        n.where = kNone;
        --size_;
    }

    /** Calls fn(TimerNode&) once for every node due at `now` (in deadline-tick order; nodes
     * armed in the past first), each disarmed before fn runs so fn may re-arm it. fn may also
     * arm or cancel other nodes (a due node cancelled by an earlier callback does not fire);
     * nodes armed from fn fire at a later expire() call at the earliest. fn must not call
     * expire(). Returns how many fired. */
    template <class F> uint32_t expire(uint64_t now, F &&fn) {
        const uint64_t target = now >> shift_;
        if (heads_[kPending] == nullptr && target < next_event_) {
            if (target > cur_)
                cur_ = target; /* nothing to do before next_event_: just move the clock */
            return 0;
        }
        collect(target);
        uint32_t fired = 0;
        while (TimerNode *n = heads_[kDue]) {
            unlink(*n);
            n->where = kNone;
            --size_;
            ++fired;
            fn(*n);
        }
        return fired;
    }

    size_t size() const { return size_; }
    uint64_t tick_ns() const { return uint64_t{1} << shift_; }
    /** The tick the wheel stands at (now of the last expire(), divided by the tick). */
    uint64_t now_tick() const { return cur_; }

  private:
    static constexpr uint32_t kNone = UINT32_MAX;
    static constexpr uint32_t kWheelSlots = kLevels * kSlots;
    static constexpr uint32_t kOverflow = kWheelSlots;    /* > 2^32 ticks ahead */
    static constexpr uint32_t kPending = kWheelSlots + 1; /* armed already due */
    static constexpr uint32_t kDue = kWheelSlots + 2;     /* collected, being fired */
    static constexpr uint32_t kLists = kWheelSlots + 3;
    static constexpr uint64_t kNever = UINT64_MAX;

    /* Deadline rounded up to the tick (no overflow near UINT64_MAX). */
    uint64_t to_tick(uint64_t deadline) const {
        return (deadline >> shift_) + ((deadline & (tick_ns() - 1)) != 0);
    }

    /* The list a node expiring at tick e belongs to, relative to cur_. */
    uint32_t place(uint64_t e) const {
        if (e <= cur_)
            return kPending;
        const uint64_t diff = e ^ cur_;
        if (diff >> kSpanBits)
            return kOverflow;
        const unsigned level = (63u - static_cast<unsigned>(__builtin_clzll(diff))) / kLevelBits;
        return level * kSlots + static_cast<uint32_t>((e >> (level * kLevelBits)) & (kSlots - 1));
    }

    /* First tick covered by wheel slot w, relative to cur_. */
    uint64_t slot_start(uint32_t w) const {
        const unsigned level = w / kSlots;
        const unsigned lo = level * kLevelBits;
        const unsigned hi = lo + kLevelBits;
        return ((cur_ >> hi) << hi) | (uint64_t{w % kSlots} << lo);
    }

    void link(TimerNode &n, uint32_t w, uint64_t e) {
        n.where = w;
        n.prev = nullptr;
        n.next = heads_[w];
        if (n.next != nullptr)
            n.next->prev = &n;
        heads_[w] = &n;
        if (w < kWheelSlots) {
            bitmap_[w / 64] |= uint64_t{1} << (w % 64);
            const uint64_t t = slot_start(w);
            if (t < next_event_)
                next_event_ = t;
        } else if (w == kOverflow) {
            if (e < overflow_min_)
                overflow_min_ = e;
            const uint64_t t = (e >> kSpanBits) << kSpanBits;
            if (t < next_event_)
                next_event_ = t;
        }
    }

    void unlink(TimerNode &n) {
        const uint32_t w = n.where;
        if (n.prev != nullptr)
            n.prev->next = n.next;
        else
            heads_[w] = n.next;
        if (n.next != nullptr)
            n.next->prev = n.prev;
        else if (w == kDue)
            due_tail_ = n.prev;
        if (w < kWheelSlots && heads_[w] == nullptr)
            bitmap_[w / 64] &= ~(uint64_t{1} << (w % 64));
        n.prev = n.next = nullptr;
    }

    void append_due(TimerNode &n);
    void reinsert_list(TimerNode *head);
    bool next_event(uint64_t &t, int &which) const;
    void collect(uint64_t target);

    uint64_t cur_;                   /* all nodes with tick <= cur_ were collected */
    uint64_t next_event_ = kNever;   /* lower bound of the next slot start / overflow */
    uint64_t overflow_min_ = kNever; /* lower bound of the overflow list's ticks */
    unsigned shift_;                 /* log2(tick_ns) */
    size_t size_ = 0;
    TimerNode *due_tail_ = nullptr;
    TimerNode *heads_[kLists] = {};
    uint64_t bitmap_[kWheelSlots / 64] = {}; /* bit w set <=> heads_[w] != nullptr */
};

} // namespace droce::sched
