/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/engine, UD part: address handles and the resolution behind them. UD QPs live in
 * the same QPN space as RC QPs (Dev::create_ud_qp, QpCtx::ud); their packets, rings and
 * TX take the paths RC's take (engine_ud.cpp). */
#pragma once

#include <droce/droce.h>

#include "engine.h"
#include "ud_qp.h"

namespace droce::engine {

/** The AddressHandle droce hands out: the verbs attributes and the resolved frame
 * addressing lib/ud sends with. A UD SendWr's ah is always one of these (the worker
 * reads `ah` when it drains the WR, so the object must outlive the WR, as in verbs). */
struct UdAh final : AddressHandle {
    AhAttr attr_;
    ud::AddressHandle ah;
    const AhAttr &attr() const override { return attr_; }
};

/** ibv_create_ah's work: checks the attributes (GID index, IP version, multicast refused
 * with EOPNOTSUPP) and resolves the next hop's MAC through the device's ARP (on worker 0;
 * waits up to the device's arp_timeout_ms). Control plane only. */
Result<ud::AddressHandle> resolve_ah(Runtime &rt, Dev &dev, const AhAttr &attr);

/** The UD fields of a SendWr as lib/ud takes them. */
inline ud::UdSendWr to_ud_wr(const SendWr &wr) {
    ud::UdSendWr u;
    u.wr = wr;
    u.ah = wr.ah != nullptr ? &static_cast<const UdAh *>(wr.ah)->ah : nullptr;
    u.remote_qpn = wr.remote_qpn;
    u.remote_qkey = wr.remote_qkey;
    return u;
}

} // namespace droce::engine
