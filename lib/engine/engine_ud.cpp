/* SPDX-License-Identifier: BSD-3-Clause */
/* UD queue pairs in the engine. A UD QP is a QpCtx whose `ud` is set instead of `qp`:
 * it shares the QPN space, the owner-worker rule (QPN % workers), the RX handoff, the
 * doorbell and WR rings, the ready list and the per-QP header template with RC, so that
 * both threading modes work unchanged; receive, transmit, scheduling and the WR rings
 * are the same code for both (QpCtx::visit over qp::TransportQp). What differs lives
 * here: creation (QP1 for the GSI may be bound explicitly) and the ud_* counters; the
 * rings' WRs carry an address handle (to_ud_wr, engine_ud.h). */
#include "engine_ud.h"
#include "engine_route.h"

#include <cstring>
#include <string>

#include <rte_ring.h>
#include <spdlog/spdlog.h>

namespace droce::engine {

Result<uint32_t> Dev::create_ud_qp(uint32_t pd, const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq,
                                   rte_ring *sq, rte_ring *rq, QpCtx **out, uint32_t fixed_qpn) {
    const uint32_t w = scq->worker;
    if (rcq->worker != w)
        return Status(EINVAL, "create_qp (UD): send and receive CQ must belong to the same worker");
    if (w >= workers())
        return Status(EINVAL, "create_qp (UD): CQ of worker " + std::to_string(w) + " but " +
                                  name_ + " has " + std::to_string(workers()) + " worker(s)");
    if (attr.srq != nullptr)
        return Status(EOPNOTSUPP, "create_qp (UD): shared receive queues are for RC QPs here");
    Shard &sh = *shards_[w];
    uint32_t qpn = 0;
    if (fixed_qpn != 0) {
        /* Only QP1 may be asked for by number: it is the GSI QP every CM peer sends to. */
        if (fixed_qpn != 1)
            return Status(EINVAL, "create_qp (UD): only QPN 1 (GSI) can be bound explicitly");
        if (owner(1) != w)
            return Status(EINVAL, "create_qp (UD): QP1 runs on worker " + std::to_string(owner(1)) +
                                      "; its CQs must be there");
        if (qps_[1])
            return Status(EBUSY, "create_qp (UD): QP1 of " + name_ + " is already bound");
        qpn = 1;
    } else {
        qpn = sh.qpns_.alloc(rt_.now_ns());
        if (qpn == 0)
            return Status(ENOSPC, "create_qp (UD): no free QPN on worker " + std::to_string(w) +
                                      " of " + name_);
    }
    auto ctx = std::make_unique<QpCtx>();
    ud::QpConfig cfg;
    cfg.qpn = qpn;
    cfg.pd = pd;
    cfg.cap = attr.cap;
    cfg.sq_sig_all = attr.sq_sig_all;
    ctx->tx.shard = &sh;
    cfg.port = &ctx->tx;
    cfg.send_cq = &ctx->send_port;
    cfg.recv_cq = &ctx->recv_port;
    cfg.mrs = &mrs_;
    cfg.counters = &sh.udc;
    cfg.mtu = static_cast<Mtu>(wire::ib_mtu_for_eth_mtu(eth_mtu_));
    cfg.pkey_table = qpd_.pkeys.data();
    cfg.pkey_table_len = static_cast<uint32_t>(qpd_.pkeys.size());
    ctx->ud = std::make_unique<ud::Qp>(cfg);
    return install_qp(std::move(ctx), qpn, w, attr, scq, rcq, sq, rq, out);
}

void Shard::ud_counters(std::vector<std::pair<std::string, uint64_t>> &v) const {
    udc.for_each(
        [&](const char *name, uint64_t val) { v.emplace_back(std::string("ud_") + name, val); });
}

Result<ud::AddressHandle> resolve_ah(Runtime &rt, Dev &dev, const AhAttr &attr) {
    if (attr.port_num != 1)
        return Status(EINVAL, "create_ah: port_num must be 1");
    Result<const Gid *> sgid = source_gid(dev, attr.sgid_index, "create_ah");
    if (!sgid)
        return sgid.status();
    ud::AddressHandle ah;
    /* A RoCEv1 sgid: GRH framing; the next hop is resolved as for v2 (droce <-> droce). */
    ah.rocev1 = dev.gids().is_v1(attr.sgid_index);
    std::memcpy(ah.sgid, (*sgid)->raw, 16);
    std::memcpy(ah.dgid, attr.dgid.raw, 16);
    ah.traffic_class = attr.traffic_class;
    ah.hop_limit = attr.hop_limit;
    ah.flow_label = attr.flow_label;
    /* Multicast and mixed IP versions are refused before any ARP is tried. */
    if (Status s = ud::check_ah(ah); !s)
        return Status(s.code(), "create_ah: " + s.message());
    Result<Hop> hop = resolve_hop(rt, dev, attr.sgid_index, attr.dgid, "create_ah", false);
    if (!hop)
        return hop.status();
    if (hop->loopback)
        return Status(EOPNOTSUPP, "create_ah: the destination GID is " + dev.name() +
                                      "'s own: loopback is supported for RC QPs only (not yet "
                                      "for UD address handles)");
    ah.eth = hop_eth(dev, *hop, attr.sgid_index, attr.sl);
    return ah;
}

} // namespace droce::engine
