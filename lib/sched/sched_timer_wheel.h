/* SPDX-License-Identifier: BSD-3-Clause */
/* TEMPORARY stand-in with the timing wheel's interface (branch timers replaces it). */
#pragma once
#include <cstddef>
#include <cstdint>

namespace droce::sched {

struct TimerNode {
    TimerNode *prev = nullptr, *next = nullptr;
    uint64_t deadline = 0;
    uint32_t where = UINT32_MAX;
    bool armed() const { return where != UINT32_MAX; }
};

class TimerWheel {
  public:
    explicit TimerWheel(uint64_t now = 0, uint64_t tick_ns = 1024) : now_(now), tick_(tick_ns) {}
    void arm(TimerNode &n, uint64_t deadline) {
        cancel(n);
        n.deadline = deadline;
        n.where = 0;
        n.prev = nullptr;
        n.next = head_;
        if (head_)
            head_->prev = &n;
        head_ = &n;
        ++size_;
    }
    void cancel(TimerNode &n) {
        if (!n.armed())
            return;
        if (n.prev)
            n.prev->next = n.next;
        else
            head_ = n.next;
        if (n.next)
            n.next->prev = n.prev;
        n.prev = n.next = nullptr;
        n.where = UINT32_MAX;
        --size_;
    }
    template <class F> uint32_t expire(uint64_t now, F &&fn) {
        uint32_t k = 0;
        for (TimerNode *n = head_; n != nullptr;) {
            TimerNode *nx = n->next;
            if (n->deadline <= now) {
                cancel(*n);
                fn(*n);
                ++k;
                nx = head_; /* fn may have re-armed anything */
            }
            n = nx;
        }
        now_ = now;
        return k;
    }
    size_t size() const { return size_; }

  private:
    TimerNode *head_ = nullptr;
    size_t size_ = 0;
    uint64_t now_;
    uint64_t tick_;
};

} // namespace droce::sched
