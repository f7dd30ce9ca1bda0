/* SPDX-License-Identifier: BSD-3-Clause */
/* A shard's side of received PFC / 802.3x pause: MAC Control frames in, the paused
 * priorities, QPs parked until theirs resumes, the pause timers and the storm watchdog.
 * (Pauses droce sends: engine_pfc_tx.cpp; the port's configuration: engine_pfc_port.cpp.) */
#include <cstring>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "engine_dev.h"
#include "engine_log.h"

namespace droce::engine {

/* A pause stops the TX of one priority without a scan: transmit() refuses a frame whose
 * priority is paused (one test of paused_mask_, zero in the common case) and returns the
 * priority (TxStatus::Paused); the QP's QpTx keeps it, and schedule() parks the QP on
 * that priority's list instead of the ready list. ACKs, NAKs and CNPs of other priorities still leave. The end of the pause is a
 * timer on the shard's wheel; it (or a quanta-0 frame) splices the parked QPs back onto
 * the ready list.
 *
 * Storm protection, as NICs do it: a priority paused without a break for the watchdog
 * time is reported (counter, one log line, AsyncEventType::PauseStorm) and its pauses are
 * then ignored until the peer lets a pause run out (or sends quanta 0). So a peer that
 * pauses forever cannot hold a QP forever: its frames leave again and the transport's
 * own, verbs-visible retry timeout decides. */

uint8_t Shard::frame_prio(const wire::FrameSpec &f) const {
    /* Tagged: the PCP. Untagged: DSCP >> 3, the DSCP-to-priority map mlx5 uses by default
     * when the port trusts DSCP (DSCP 26, RoCE data's usual, is 3; DSCP 48, the CNP's, 6). */
    return static_cast<uint8_t>(f.eth.has_vlan ? f.eth.vlan_tci >> 13 : f.tos >> 5);
}

void Shard::park(QpCtx &q, uint8_t p) {
    ready_remove(q);
    q.parked_prio = p;
    parked_[p].push_back(q);
    ++pfc_.qps_parked;
}

uint32_t Shard::parked_qps() const {
    uint32_t n = 0;
    for (const QpList<QpCtx> &l : parked_)
        n += l.size();
    return n;
}

void Shard::resume(uint8_t p, uint64_t now) {
    const uint8_t bit = static_cast<uint8_t>(1u << p);
    storm_mask_ = static_cast<uint8_t>(storm_mask_ & ~bit); /* the storm is over */
    if (!(paused_mask_ & bit))
        return;
    paused_mask_ = static_cast<uint8_t>(paused_mask_ & ~bit);
    timers_.cancel(pause_end_[p]);
    timers_.cancel(pause_storm_[p]);
    if (index_ == 0) {
        pfc_.rx_pause_ns[p] += now - paused_since_[p];
        ++pfc_.rx_transition[p];
    }
    /* Wake the parked QPs in the order they were parked. */
    while (QpCtx *q = parked_[p].pop_front()) {
        q->parked_prio = kNoPrio;
        ready_push(*q);
    }
}

void Shard::on_pfc(const net::PfcFrame &f, uint64_t now) {
    for (uint8_t i = 0; i < net::kPfcPriorities; ++i) {
        const uint8_t bit = static_cast<uint8_t>(1u << i);
        if (!(f.enable & bit))
            continue;
        if (f.quanta[i] == 0) {
            resume(i, now); /* XON */
            continue;
        }
        if (storm_mask_ & bit) {
            /* Ignored (storm): only when it would end is tracked, to end the storm. */
            timers_.arm(pause_end_[i],
                        now + net::pfc_pause_ns(f.quanta[i], dev_.qpd_.line_rate_bps));
            continue;
        }
        if (!(paused_mask_ & bit)) {
            paused_mask_ |= bit;
            paused_since_[i] = now;
            if (dev_.pfc_.storm_ns != 0)
                timers_.arm(pause_storm_[i], now + dev_.pfc_.storm_ns);
        }
        /* A new time replaces the running one, shorter or longer (802.1Qbb). */
        timers_.arm(pause_end_[i], now + net::pfc_pause_ns(f.quanta[i], dev_.qpd_.line_rate_bps));
    }
}

void Shard::on_pause_timer(PauseTimer &t, uint64_t now) {
    if (!t.storm) {
        resume(t.prio, now);
        return;
    }
    /* Paused without a break for the watchdog time: a peer (or a deadlock in the
     * fabric) holds the priority. Every shard stops honouring it; shard 0 says so once. */
    const uint8_t p = t.prio;
    if (!(paused_mask_ & (1u << p)))
        return;
    const uint64_t held_ms = (now - paused_since_[p]) / 1'000'000;
    const uint32_t held_qps = parked_qps();
    const bool armed = pause_end_[p].armed();
    const uint64_t until = pause_end_[p].deadline;
    resume(p, now);
    storm_mask_ = static_cast<uint8_t>(storm_mask_ | (1u << p));
    if (armed)
        timers_.arm(pause_end_[p], until); /* the storm ends when this pause would */
    if (index_ != 0)
        return;
    ++pfc_.storms;
    logger().warn("{}: PFC pause storm: priority {} paused for {} ms without a break ({} QP(s) "
                  "of worker 0 held); its pauses are ignored until the peer stops pausing",
                  dev_.name_, p, held_ms, held_qps);
    on_async_event(qp::AsyncEvent{AsyncEventType::PauseStorm, 0, nullptr});
}

void Shard::rx_mac_control(rte_mbuf *m, uint64_t now, bool forwarded) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    uint8_t buf[net::kMinFrameLen + 1];
    const uint32_t take = len < sizeof buf ? len : static_cast<uint32_t>(sizeof buf);
    const auto *p = static_cast<const uint8_t *>(rte_pktmbuf_read(m, 0, take, buf));
    net::PfcFrame f;
    /* parse_pfc reads at most 16 bytes of a frame longer than 60 (Oversized). */
    const net::PfcResult r = p ? net::parse_pfc(p, len, &f) : net::PfcResult::TooShort;
    if (!forwarded) {
        ++pfc_.rx_result[static_cast<size_t>(r)];
        if (r == net::PfcResult::Ok) {
            for (unsigned i = 0; i < net::kPfcPriorities; ++i)
                if (f.enable & (1u << i))
                    ++pfc_.rx_pause[i];
            if (dev_.pfc_.prio >= 0 && (f.enable & ~(1u << dev_.pfc_.prio)))
                ++pfc_.other_prio;
        }
    }
    if (r != net::PfcResult::Ok) {
        rte_pktmbuf_free(m);
        return;
    }
    const uint32_t nw = dev_.workers();
    if (!forwarded && nw > 1) {
        /* Every shard transmits on the port: each holds the pause. The frame itself goes
         * to the others (one reference each). */
        rte_mbuf_refcnt_update(m, static_cast<int16_t>(nw - 1));
        for (uint32_t w = 0; w < nw; ++w) {
            if (w == index_)
                continue;
            if (rte_ring_mp_enqueue(dev_.shards_[w]->rx_in_, m) != 0) {
                ++ec.rx_drop_handoff_full;
                rte_pktmbuf_free(m);
            }
        }
    }
    on_pfc(f, now);
    rte_pktmbuf_free(m);
}

} // namespace droce::engine
