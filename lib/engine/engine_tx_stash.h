/* SPDX-License-Identifier: BSD-3-Clause */
/* A few TX mbufs taken from the pool ahead of use, their data lines prefetched for write.
 *
 * Why: on a port whose peer reads our frames in place (virtio_user: the vhost backend
 * on the other core copies straight out of our mbufs), a recycled mbuf's data lines sit
 * in the other core's cache. Writing a frame into one then waits for each line to come
 * back (a cross-core miss); the stores queue behind it until the store buffer is full
 * and the core stalls. perf of the 64 B write_bw client on virtio_user: a third of its
 * cycles on the first touches of the frame. Asking for the lines a few frames before
 * they are written overlaps those misses with the work on the frames in between. On a
 * port that copies (memif, ring) the lines are ours already and the prefetch is a hit.
 *
 * One per shard, used on its worker only. Holds at most kCap mbufs (freed by release()
 * or the destructor); when the pool cannot give a refill the stash hands out what it
 * has and then single mbufs, so a nearly empty pool behaves as with rte_pktmbuf_alloc. */
#pragma once

#include <cstdint>

#include <rte_mbuf.h>
#include <rte_mempool.h>

namespace droce::engine {

class TxStash {
  public:
    static constexpr uint16_t kCap = 16;  /* ring size (power of two) */
    static constexpr uint16_t kAhead = 4; /* mbufs kept prefetched ahead of use */

    TxStash() = default;
    TxStash(const TxStash &) = delete;
    TxStash &operator=(const TxStash &) = delete;
    ~TxStash() { release(); }

    /* An mbuf of mp, reset as by rte_pktmbuf_alloc, or nullptr when mp has none. */
    rte_mbuf *take(rte_mempool *mp) {
        if (mp != mp_) [[unlikely]] {
            release();
            mp_ = mp;
        }
        if (n_ <= kAhead)
            refill();
        if (n_ == 0)
            return rte_pktmbuf_alloc(mp);
        rte_mbuf *m = ring_[head_];
        head_ = static_cast<uint16_t>((head_ + 1) & (kCap - 1));
        --n_;
        if (n_ >= kAhead)
            prefetch_w(ring_[(head_ + kAhead - 1) & (kCap - 1)]);
        return m;
    }

    /* Gives every held mbuf back to its pool. */
    void release() {
        while (n_ != 0) {
            rte_pktmbuf_free(ring_[head_]);
            head_ = static_cast<uint16_t>((head_ + 1) & (kCap - 1));
            --n_;
        }
        head_ = 0;
    }

    uint16_t held() const { return n_; }

  private:
    /* The first lines a frame touches: the one before the data (where virtio puts its
     * net header) and the first 192 bytes (a 64 B WRITE's frame is 138). */
    static void prefetch_w(const rte_mbuf *m) {
        const char *d = rte_pktmbuf_mtod(m, const char *);
        line_w(d - RTE_CACHE_LINE_SIZE);
        line_w(d);
        line_w(d + RTE_CACHE_LINE_SIZE);
        line_w(d + 2 * RTE_CACHE_LINE_SIZE);
    }
    /* PREFETCHW asks for the line in exclusive state, which is the point (a plain
     * prefetch would fetch it shared and the store would still wait). GCC only emits it
     * with -mprfchw, which the build does not set; CPUs without it run it as a NOP. */
    static void line_w(const char *p) {
#if defined(__x86_64__)
        asm volatile("prefetchw %0" : : "m"(*p));
#else
        __builtin_prefetch(p, 1, 3);
#endif
    }

    /* Tops the ring up to kCap in one bulk get (all or nothing); a failed one leaves the
     * ring as it is. */
    void refill() {
        const auto want = static_cast<uint16_t>(kCap - n_);
        rte_mbuf *got[kCap];
        if (rte_pktmbuf_alloc_bulk(mp_, got, want) != 0)
            return;
        for (uint16_t i = 0; i < want; ++i) {
            const uint16_t pos = n_;
            ring_[(head_ + pos) & (kCap - 1)] = got[i];
            ++n_;
            if (pos < kAhead)
                prefetch_w(got[i]);
        }
    }

    rte_mempool *mp_ = nullptr;
    rte_mbuf *ring_[kCap] = {};
    uint16_t head_ = 0;
    uint16_t n_ = 0;
};

} // namespace droce::engine
