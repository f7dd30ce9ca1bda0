/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/engine: the one route resolver behind an RC QP's path (modify to RTR) and a UD
 * address handle (create_ah): source GID, IP version, next hop by the interface's routes,
 * the next hop's MAC through the worker's ARP / Neighbour Discovery, and the Ethernet
 * header a frame to it carries. Control plane only: it waits, with the EAL's clock. */
#pragma once

#include <cstdint>
#include <string>

#include <droce/droce.h>

#include "engine.h"
#include "net.h"
#include "net_ipv6.h"
#include "wire_headers.h"

namespace droce::engine {

/** Where a destination GID is reached from a source GID index. */
struct Hop {
    const Gid *sgid = nullptr; /* the device's GID table entry */
    bool v4 = true;            /* IPv4-mapped GIDs talk IPv4, the others IPv6 (as rdma-core) */
    uint32_t nh4 = 0;          /* next hop (v4) */
    net::Ip6 nh6{};            /* next hop (v6) */
    std::string nh_str;        /* the next hop, printable */
    net::Mac mac{};            /* its MAC, unless pending */
    bool pending = false;      /* not resolved yet: left to the worker (non-blocking RTR) */
    bool loopback = false;     /* dgid is one of ours: mac is ours, frames stay inside */
};

/** The device's GID table entry sgid_index; EINVAL (starting with `what`) when it has none. */
Result<const Gid *> source_gid(const Dev &dev, uint8_t sgid_index, const char *what);

/** Resolves dgid from sgid_index on dev. A dgid in dev's own GID table is loopback (no
 * next hop, no ARP; EINVAL when it is on another VLAN than sgid_index). Errors (EINVAL: unknown
 * sgid_index or IP versions that differ; the routes' error; ENOSPC: neighbour table full;
 * ETIMEDOUT: no ARP / ND answer within the device's arp_timeout_ms) start with `what` ("modify QP",
 * "create_ah"). may_defer: return with pending set instead of waiting when the device resolves
 * without blocking (rtr_nonblocking, a QP of worker 0: that worker owns the neighbour tables). */
Result<Hop> resolve_hop(Runtime &rt, Dev &dev, uint8_t sgid_index, const Gid &dgid,
                        const char *what, bool may_defer);

/** The Ethernet header towards hop: its MAC, the port's, the source GID entry's VLAN with
 * PCP = SL & 7 (the kernel's rdma_ah_get_sl -> VLAN priority for RoCE; on a VLAN every
 * frame is tagged, the peer's VLAN interface drops an untagged one), the IP ethertype. */
wire::EthHdr hop_eth(const Dev &dev, const Hop &hop, uint8_t sgid_index, uint8_t sl);

} // namespace droce::engine
