/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared set-up of the engine benchmarks: a CQ ring, the path between two devices of a
 * net_ring pair, and RESET->RTS for an rc::Qp (path MTU 4096). */
#pragma once

#include "engine.h"
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <string>
#include <vector>

namespace droce::bench {

inline std::unique_ptr<engine::CqCtx> make_cq() {
    auto c = std::make_unique<engine::CqCtx>();
    static int seq = 0;
    const std::string n = "bench_cq" + std::to_string(seq++);
    c->ring = engine::ring_alloc(n.c_str(), sizeof(Wc), 4096,
                                 RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
    return c;
}

inline rc::Path path(const engine::Dev &from, const net::Mac &to_mac, uint32_t to_ip,
                     uint32_t qpn) {
    rc::Path p;
    std::memcpy(p.eth.dst, to_mac.data(), 6);
    std::memcpy(p.eth.src, from.iface().mac.data(), 6);
    p.eth.ethertype = wire::kEtherTypeIpv4;
    std::memcpy(p.sgid, from.gids().at(1)->raw, 16);
    wire::gid_from_ipv4(to_ip, p.dgid);
    p.udp_sport = wire::udp_sport_for_qpn(qpn);
    return p;
}

/* access: the remote rights the benchmark's peer uses on q (kAccessRemote*), no more. */
inline bool connect(rc::Qp &q, const rc::Path &p, uint32_t dqpn, uint32_t sq_psn, uint32_t rq_psn,
                    uint32_t access, Mtu mtu = Mtu::Mtu4096) {
    QpAttr a;
    a.qp_state = QpState::Init;
    a.qp_access_flags = access;
    if (!q.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags))
        return false;
    a.qp_state = QpState::Rtr;
    a.path_mtu = mtu;
    a.dest_qp_num = dqpn;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 4;
    if (!q.modify(a,
                  kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic |
                      kQpMinRnrTimer,
                  &p))
        return false;
    a.qp_state = QpState::Rts;
    a.sq_psn = sq_psn;
    a.timeout = 20;
    a.max_rd_atomic = 4;
    return q
        .modify(a, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic)
        .is_ok();
}

} // namespace droce::bench
