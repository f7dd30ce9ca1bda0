/* SPDX-License-Identifier: BSD-3-Clause */
/* One iteration of a worker over its shard: doorbells, handoffs, TX of what was posted,
 * RX, timers, then what they made ready. */
#include <cstring>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "engine_dev.h"

namespace droce::engine {

uint32_t Shard::poll(uint64_t now, uint32_t *work) {
    uint32_t w = 0;
    if (dev_.worker_rings_) {
        w += drain_doorbells();
        if (!ring_watch_.empty())
            w += poll_ring_watch();
    }
    if (handoffs_)
        w += drain_handoff(now);

    /* What was posted since the last poll (and the ACKs held for it) leaves before this
     * poll's RX: in ping-pong the reply is then not behind an RX burst. */
    uint32_t ntx = 0;
    if (ready_.size() + held_.size() != 0) {
        serve_ready(now);
        ntx = flush_tx();
    }

    uint16_t nrx = 0;
    if (rxq_ != UINT16_MAX && !dev_.port_stopped_) {
        rte_mbuf *rx[kRxBurst];
        nrx = rte_eth_rx_burst(dev_.port_, rxq_, rx, kRxBurst);
        rx_burst(rx, nrx, now);
        if (dev_.pfc_.tx_xoff != 0) [[unlikely]] /* one test per poll when off */
            pfc_tx_check(nrx, now);
    }

    /* Timers: only the due ones cost anything. */
    const uint32_t fired = timers_.expire(now, [&](sched::TimerNode &t) {
        QpCtx *q = static_cast<QpTimer &>(t).qp;
        if (q == nullptr) [[unlikely]] {
            on_pause_timer(static_cast<PauseTimer &>(t), now);
            return;
        }
        q->visit([&](auto &t) { t.on_timer(now); });
        schedule(*q);
    });
    ec.timer_expirations += fired;
    w += fired;
    if (index_ == 0 && dev_.neigh_waiting()) [[unlikely]]
        dev_.neigh_step(now); /* QPs in RTR waiting for their next hop's MAC */

    /* Both cost a call per poll when idle: only with something to send. */
    if (ready_.size() + held_.size() != 0)
        serve_ready(now);
    if (!tx_.empty())
        ntx += flush_tx();
    *work = w + nrx + ntx + held_.size(); /* a held ACK leaves at the next poll: not idle */
    /* Idle: the stash's mbufs go back, so mbufs_in_use drops to what the ports hold. */
    if (*work == 0 && tx_stash_.held() != 0) [[unlikely]]
        tx_stash_.release();
    return nrx + ntx;
}

} // namespace droce::engine
