/* SPDX-License-Identifier: BSD-3-Clause */
/* What the transport needs from whoever drives it. The engine implements these over
 * DPDK ports and rings; the simulator over a virtual fabric. The transport itself never
 * reads a clock or touches a port: time comes in as an argument, packets go out here. */
#pragma once

#include <cstdint>

#include <droce/verbs.h>

#include "wire_packet.h"

namespace droce::rc {

/** Nanoseconds of the driver's clock (TSC-derived in the engine, virtual in tests). */
using Time = uint64_t;

/** Where a QP's packets go. transmit() builds the frame from the spec (headers, payload
 * copy or zero-copy attach, ICRC) and queues it; false means no room now (no mbuf, TX
 * queue full): the caller keeps the work and tries again on a later progress(). */
class TxPort {
  public:
    virtual ~TxPort() = default;
    virtual bool transmit(const wire::FrameSpec &frame) = 0;
};

/** A completion queue as the transport sees it. push() false = CQ overflow. */
class CqSink {
  public:
    virtual ~CqSink() = default;
    virtual bool push(const Wc &wc) = 0;
};

} // namespace droce::rc
