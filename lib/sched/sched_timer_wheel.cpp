/* SPDX-License-Identifier: BSD-3-Clause */
/* The slow half of the timing wheel: moving the clock across occupied slots (cascading) and
 * collecting what is due. Only reached when something is due or a slot must be re-sorted. */
#include "sched_timer_wheel.h"

namespace droce::sched {

namespace {

constexpr unsigned kWordsPerLevel = TimerWheel::kSlots / 64;

/* Index of the first set bit >= from in a level's 256-bit map, or -1. */
int next_set(const uint64_t *words, unsigned from) {
    if (from >= TimerWheel::kSlots)
        return -1;
    unsigned w = from / 64;
    uint64_t word = words[w] & (~uint64_t{0} << (from % 64));
    for (;;) {
        if (word != 0)
            return static_cast<int>(w * 64 + static_cast<unsigned>(__builtin_ctzll(word)));
        if (++w == kWordsPerLevel)
            return -1;
        word = words[w];
    }
}

} // namespace

TimerWheel::TimerWheel(uint64_t now, uint64_t tick_ns) : cur_(0), shift_(0) {
    /* Round a non-power of two up: coarser ticks only delay expiry, never advance it. */
    while (shift_ < 63 && (uint64_t{1} << shift_) < tick_ns)
        ++shift_;
    cur_ = now >> shift_;
}

void TimerWheel::append_due(TimerNode &n) {
    n.where = kDue;
    n.next = nullptr;
    n.prev = due_tail_;
    if (due_tail_ != nullptr)
        due_tail_->next = &n;
    else
        heads_[kDue] = &n;
    due_tail_ = &n;
}

void TimerWheel::reinsert_list(TimerNode *head) {
    while (head != nullptr) {
        TimerNode &n = *head;
        head = n.next;
        const uint64_t e = to_tick(n.deadline);
        if (e <= cur_)
            append_due(n);
        else
            link(n, place(e), e);
    }
}

/* The earliest tick > cur_ at which a slot must be fired or cascaded, or the overflow list
 * re-examined. Occupied slots of a level always lie strictly ahead of cur_'s index there, so
 * the scan starts one past it. which: level, or kLevels for the overflow list. */
bool TimerWheel::next_event(uint64_t &t, int &which) const {
    bool found = false;
    t = kNever;
    for (unsigned k = 0; k < kLevels; ++k) {
        const unsigned lo = k * kLevelBits;
        const unsigned idx = static_cast<unsigned>((cur_ >> lo) & (kSlots - 1));
        const int s = next_set(&bitmap_[k * kWordsPerLevel], idx + 1);
        if (s < 0)
            continue;
        const uint64_t start = slot_start(k * kSlots + static_cast<uint32_t>(s));
        if (!found || start < t) {
            t = start;
            which = static_cast<int>(k);
            found = true;
        }
        /* Lower levels' events precede higher levels' (they lie in cur_'s window of the
         * level above), so the first level with an event has the earliest one. */
        break;
    }
    if (heads_[kOverflow] != nullptr) {
        const uint64_t start = (overflow_min_ >> kSpanBits) << kSpanBits;
        if (!found || start < t) {
            t = start;
            which = static_cast<int>(kLevels);
            found = true;
        }
    }
    return found;
}

void TimerWheel::collect(uint64_t target) {
    if (target < cur_)
        target = cur_;
    /* Nodes armed already due go first: their ticks precede everything on the wheel. */
    for (TimerNode *n = heads_[kPending]; n != nullptr;) {
        TimerNode *next = n->next;
        append_due(*n);
        n = next;
    }
    heads_[kPending] = nullptr;

    uint64_t t;
    int which = 0;
    while (next_event(t, which) && t <= target) {
        cur_ = t;
        TimerNode *head;
        if (which == static_cast<int>(kLevels)) {
            head = heads_[kOverflow];
            heads_[kOverflow] = nullptr;
            overflow_min_ = kNever; /* recomputed exactly by the nodes that stay */
        } else {
            const uint32_t w = static_cast<uint32_t>(which) * kSlots +
                               static_cast<uint32_t>((t >> (which * kLevelBits)) & (kSlots - 1));
            head = heads_[w];
            heads_[w] = nullptr;
            bitmap_[w / 64] &= ~(uint64_t{1} << (w % 64));
        }
        /* Level 0 slots hold exactly tick t, so they all land on the due list; higher slots
         * spread over lower levels (or fire, for a deadline exactly at t). */
        reinsert_list(head);
    }
    cur_ = target;
    next_event_ = t; /* the first event beyond target (kNever when the wheel is empty) */
}

} // namespace droce::sched
