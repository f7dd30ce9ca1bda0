/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion channels: see engine_comp_channel.h. */
#include "engine_comp_channel.h"

#include <cerrno>
#include <cstring>

#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_pause.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "engine.h"

namespace droce::engine {
namespace {

uint64_t make_token(uint32_t slot, uint32_t gen) { return (uint64_t{slot} << 32) | gen; }

} // namespace

std::unique_ptr<CompChannel> CompChannel::create(std::string *why) {
    std::unique_ptr<CompChannel> ch(new CompChannel());
    ch->fd_ = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
    if (ch->fd_ < 0) {
        *why = std::string("eventfd: ") + std::strerror(errno);
        return nullptr;
    }
    /* One token per CQ at most (plus detached ones, counted in the same budget). */
    ch->ring_ = ring_alloc("dq_cc", sizeof(uint64_t), kMaxCqs, RING_F_SC_DEQ | RING_F_EXACT_SZ);
    if (ch->ring_ == nullptr) {
        *why = "out of memory";
        return nullptr;
    }
    return ch;
}

CompChannel::~CompChannel() {
    ring_release(ring_);
    if (fd_ >= 0)
        close(fd_);
}

bool CompChannel::attach(CqCtx &cq) {
    std::lock_guard<std::mutex> g(mu_);
    if (live_ + stale_ >= kMaxCqs)
        return false;
    uint32_t slot;
    if (!free_.empty()) {
        slot = free_.back();
        free_.pop_back();
    } else {
        slot = static_cast<uint32_t>(slots_.size());
        slots_.push_back(nullptr);
        gens_.push_back(0);
    }
    slots_[slot] = &cq;
    ++live_;
    cq.channel_token = make_token(slot, gens_[slot]);
    cq.queued.store(false, std::memory_order_relaxed);
    cq.armed.store(CqCtx::kArmNone, std::memory_order_relaxed);
    cq.channel = this;
    return true;
}

void CompChannel::detach(CqCtx &cq) {
    std::lock_guard<std::mutex> g(mu_);
    if (cq.channel != this)
        return;
    const auto slot = static_cast<uint32_t>(cq.channel_token >> 32);
    cq.channel = nullptr;
    if (cq.queued.load(std::memory_order_acquire))
        ++stale_; /* its token is still in the ring: next() drops it */
    ++gens_[slot];
    slots_[slot] = nullptr;
    free_.push_back(slot);
    --live_;
}

uint32_t CompChannel::attached() const {
    std::lock_guard<std::mutex> g(mu_);
    return live_;
}

void CompChannel::signal(uint64_t token) {
    /* The ring has room: a CQ's token is in it at most once and attach() keeps the count
     * of possible tokens within its size. The count follows the token, so a reader that
     * got a count finds the token. */
    rte_ring_mp_enqueue_elem(ring_, &token, sizeof token);
    const uint64_t one = 1;
    if (write(fd_, &one, sizeof one) != sizeof one) {
        /* Only a counter at 2^64 - 2 refuses: cannot happen with at most kMaxCqs. */
    }
}

int CompChannel::next(CqCtx **out) {
    for (;;) {
        uint64_t n;
        if (read(fd_, &n, sizeof n) != static_cast<ssize_t>(sizeof n))
            return errno != 0 ? errno : EIO;
        std::lock_guard<std::mutex> g(mu_);
        uint64_t token;
        while (rte_ring_sc_dequeue_elem(ring_, &token, sizeof token) != 0)
            rte_pause(); /* the producer counts after it enqueues: here already */
        const auto slot = static_cast<uint32_t>(token >> 32);
        const auto gen = static_cast<uint32_t>(token);
        if (slot < slots_.size() && gens_[slot] == gen && slots_[slot] != nullptr) {
            CqCtx *cq = slots_[slot];
            cq->queued.store(false, std::memory_order_release);
            *out = cq;
            return 0;
        }
        --stale_; /* a CQ destroyed with its event queued */
    }
}

} // namespace droce::engine
