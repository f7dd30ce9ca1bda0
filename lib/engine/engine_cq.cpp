/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion queues. Worker mode: the worker pushes into an SPSC rte_ring and the
 * application's thread dequeues. Embedded mode (hosted engines included): Engine::poll()
 * runs the shard on the application's thread, and the API requires a CQ to be polled on
 * the thread that uses its QPs, so producer and consumer are one thread and the ring's
 * atomics, barriers and element copy loop buy nothing. There a CQ is a plain circular
 * array: push writes slots[tail & mask], poll reads from slots[head & mask].
 *
 * A full CQ refuses the completion in both versions (push returns false), and the
 * transport reacts to that exactly as before: the completion is lost, CqErr once per CQ
 * (Shard::on_async_event), QpFatal for the QP (rc::Qp::cq_overflow). The array holds
 * exactly `depth` entries, as the ring does with RING_F_EXACT_SZ, so a CQ overflows at
 * the same completion in both modes. */
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include <rte_common.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "engine.h"
#include "engine_comp_channel.h"

namespace droce::engine {

static_assert(std::is_trivially_copyable_v<Wc>, "CQ slots are copied with memcpy");

bool CqCtx::init_local(uint32_t n) {
    if (n == 0 || n > (1u << 20) || slots != nullptr)
        return false;
    const uint32_t size = rte_align32pow2(n);
    void *mem = std::aligned_alloc(RTE_CACHE_LINE_SIZE,
                                   RTE_ALIGN_CEIL(size_t{size} * sizeof(Wc), RTE_CACHE_LINE_SIZE));
    if (mem == nullptr)
        return false;
    slots = static_cast<Wc *>(mem);
    mask = size - 1;
    depth = n;
    head = tail = 0;
    return true;
}

bool CqCtx::push(const Wc &wc) {
    bool ok;
    if (slots != nullptr) {
        /* Unsigned differences: the counters wrap at 2^32, a multiple of the size. */
        ok = tail - head < depth;
        if (ok)
            slots[tail++ & mask] = wc;
    } else {
        ok = rte_ring_sp_enqueue_elem(ring, const_cast<Wc *>(&wc), sizeof(Wc)) == 0;
    }
    if (channel != nullptr && ok) [[unlikely]]
        notify(wc);
    return ok;
}

bool QpCqPort::push(const Wc &wc) {
    if (publish != nullptr)
        shard->publish_retired(*publish);
    return cq->push(wc);
}

/* The application arms, then polls once more before it waits (verbs' documented order);
 * the producer pushes, then reads `armed`. The fences make those two store-then-load
 * sequences ordered, so either the application's poll finds the completion or the
 * producer sees the arm and raises the event: never neither. */
void CqCtx::arm(bool solicited_only) {
    if (!solicited_only) {
        armed.store(kArmNext, std::memory_order_seq_cst);
        return;
    }
    uint8_t none = kArmNone; /* an arm for any completion stays the wider one */
    armed.compare_exchange_strong(none, kArmSolicited, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
}

void CqCtx::notify(const Wc &wc) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const uint8_t a = armed.load(std::memory_order_relaxed);
    if (a == kArmNone)
        return;
    /* Solicited mode: a solicited message's completion or an unsuccessful one (IBA
     * 11.4.2.2), as an application waiting for errors needs. */
    if (a == kArmSolicited && wc.status == WcStatus::Success && (wc.wc_flags & kWcSolicited) == 0)
        return;
    if (armed.exchange(kArmNone, std::memory_order_acq_rel) == kArmNone)
        return;
    if (!queued.exchange(true, std::memory_order_acq_rel))
        channel->signal(channel_token);
}

int CqCtx::poll(Wc *wc, int max) {
    if (max <= 0)
        return 0;
    if (slots != nullptr) {
        uint32_t n = tail - head;
        if (n > static_cast<uint32_t>(max))
            n = static_cast<uint32_t>(max);
        if (n == 0)
            return 0;
        /* At most two runs: up to the end of the array, then from its start. */
        const uint32_t at = head & mask;
        const uint32_t first = n < mask + 1 - at ? n : mask + 1 - at;
        std::memcpy(wc, slots + at, size_t{first} * sizeof(Wc));
        if (n > first)
            std::memcpy(wc + first, slots, size_t{n - first} * sizeof(Wc));
        head += n;
        return static_cast<int>(n);
    }
    return static_cast<int>(
        rte_ring_sc_dequeue_burst_elem(ring, wc, sizeof(Wc), static_cast<unsigned>(max), nullptr));
}

CqCtx::~CqCtx() {
    std::free(slots);
    ring_release(ring);
}

} // namespace droce::engine
