/* SPDX-License-Identifier: BSD-3-Clause */
/* Giving a burst of frames back to their pool at the end of an RX batch.
 *
 * Why not rte_pktmbuf_free_bulk alone: for every mbuf it runs the general free of one
 * segment (reference count, external buffer, the chain's next pointer, a pool change
 * flushes what it gathered), the largest single cost of a small frame's RX after the
 * ICRC. The frames an RX batch frees are nearly all of one shape: one segment, direct,
 * this was their only reference, all from one pool. For those the mbuf is already what
 * the pool expects back (rte_mbuf_raw_free's conditions), so they go back with one
 * rte_mempool_put_bulk; any other frame goes through rte_pktmbuf_free_bulk as before. */
#pragma once

#include <cstdint>

#include <rte_mbuf.h>
#include <rte_mempool.h>

namespace droce::engine {

/* Whether m can go back to pool as it is (rte_mbuf_raw_free's conditions). */
inline bool frame_is_raw(const rte_mbuf *m, const rte_mempool *pool) {
    return m->pool == pool && m->nb_segs == 1 && RTE_MBUF_DIRECT(m) &&
           rte_mbuf_refcnt_read(m) == 1 && m->next == nullptr;
}

/* Frees m[0..n): in one put to m[0]'s pool where every frame can go back as it is, else
 * (another pool, chained, indirect, external or shared frames among them) all of them
 * by rte_pktmbuf_free_bulk. */
inline void free_frames(rte_mbuf *const *m, uint16_t n) {
    if (n == 0)
        return;
    rte_mempool *const pool = m[0]->pool;
    for (uint16_t i = 0; i < n; ++i) {
        if (!frame_is_raw(m[i], pool)) [[unlikely]] {
            rte_pktmbuf_free_bulk(const_cast<rte_mbuf **>(m), n);
            return;
        }
    }
    rte_mempool_put_bulk(pool, reinterpret_cast<void *const *>(m), n);
}

/* Frames the transport is done with, gathered and freed together by free_frames (one
 * mempool put for all of them, not one per frame): at flush(), or when Cap are held. */
template <uint16_t Cap> class FrameFreeBatch {
  public:
    FrameFreeBatch() = default;
    FrameFreeBatch(const FrameFreeBatch &) = delete;
    FrameFreeBatch &operator=(const FrameFreeBatch &) = delete;
    ~FrameFreeBatch() { flush(); }

    void add(rte_mbuf *m) {
        m_[n_++] = m;
        if (n_ == Cap) [[unlikely]]
            flush();
    }
    void flush() {
        if (n_ == 0)
            return;
        free_frames(m_, n_);
        n_ = 0;
    }
    uint16_t held() const { return n_; }

  private:
    rte_mbuf *m_[Cap];
    uint16_t n_ = 0;
};

} // namespace droce::engine
