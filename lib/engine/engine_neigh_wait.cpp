/* SPDX-License-Identifier: BSD-3-Clause */
/* Non-blocking RTR (DeviceConfig::rtr_nonblocking): a QP may go to RTR before its next
 * hop's MAC is known. Until the neighbour answers, its frames are held back (QpTx refuses
 * them and the shard does not schedule the QP: no spinning), so posted WRs simply wait;
 * the poll loop never waits for ARP / ND. Worker 0 owns the neighbour tables and sends
 * the requests, so only its QPs are held here (the API waits as before for the others).
 *
 * neigh_step runs once per poll of worker 0 while some QP waits (one branch otherwise):
 * a resolved neighbour gives the QP its MAC (the header template rebuilds itself from
 * the path) and puts it back on the ready list; no answer by the device's arp_timeout_ms
 * moves the QP to ERR, which flushes its WRs, and raises QpFatal. */
#include <algorithm>
#include <cstring>

#include "engine_dev.h"
#include "engine_log.h"

namespace droce::engine {

void Dev::neigh_hold(uint32_t qpn, bool v4, uint32_t ip, const uint8_t ip6[16],
                     uint64_t deadline_ns) {
    QpCtx *q = qp(qpn);
    if (q == nullptr || q->qp == nullptr)
        return;
    neigh_unhold(qpn); /* a second RTR path replaces the first */
    NeighWait w{qpn, v4, ip, {}, deadline_ns};
    if (!v4)
        std::memcpy(w.ip6, ip6, 16);
    neigh_wait_.push_back(w);
    q->tx.set_neigh_held(true);
    shards_[q->worker]->ready_remove(*q);
    ++shards_[0]->ec.rtr_neigh_wait;
}

void Dev::neigh_unhold(uint32_t qpn) {
    std::erase_if(neigh_wait_, [qpn](const NeighWait &w) { return w.qpn == qpn; });
    if (QpCtx *q = qp(qpn))
        q->tx.set_neigh_held(false);
}

void Dev::neigh_step(uint64_t now) {
    Shard &sh = *shards_[0];
    for (size_t i = 0; i < neigh_wait_.size();) {
        const NeighWait w = neigh_wait_[i];
        QpCtx *q = qp(w.qpn);
        net::Mac mac{};
        const net::ResolveStep st = w.v4 ? resolve(w.ip, now, &mac) : resolve6(w.ip6, now, &mac);
        if (q != nullptr && st != net::ResolveStep::Resolved && st != net::ResolveStep::TableFull &&
            now < w.deadline) {
            ++i;
            continue;
        }
        neigh_wait_[i] = neigh_wait_.back();
        neigh_wait_.pop_back();
        if (q == nullptr)
            continue;
        q->tx.set_neigh_held(false);
        if (st == net::ResolveStep::Resolved) {
            q->qp->set_next_hop_mac(mac.data());
            ++sh.ec.rtr_neigh_resolved;
        } else {
            ++sh.ec.rtr_neigh_timeout;
            logger().warn("{}: QP {}: no {} answer from its next hop within {} ms; QP to ERR",
                          name_, w.qpn, w.v4 ? "ARP" : "ND", arp_timeout_ms_);
            QpAttr a;
            a.qp_state = QpState::Err;
            (void)q->qp->modify(a, kQpState);
            sh.on_async_event(qp::AsyncEvent{AsyncEventType::QpFatal, w.qpn, nullptr});
        }
        sh.schedule(*q); /* the held work leaves now (or is flushed) */
    }
}

} // namespace droce::engine
