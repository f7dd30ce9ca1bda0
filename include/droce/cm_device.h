/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * A CmChannel (droce/cm.h) bound to a droce device: the device's QP1 carries its MADs,
 * the engine's clock drives its timers, and its QP hook brings each connection's RC QP
 * from RESET/INIT through RTR to RTS with what the CM settled on (the peer's QPN and
 * PSN, path MTU, timeouts, READ resources, the peer's GID resolved through droce's ARP).
 *
 *     auto cm = CmDevice::open(engine, *dev);        // binds QP1 of dev
 *     cm->channel().listen(7174);
 *     for (;;) {
 *         engine.poll();                             // embedded mode only
 *         cm->poll();                                // MADs in, timers
 *         CmEventInfo ev;
 *         while (cm->channel().poll_event(ev)) ...   // ConnectRequest: create a QP, then
 *     }                                              //   cm->accept(ev.id, *qp, param)
 *
 * Active side: cm->connect(ip, port, *qp, param) (the QP may be in RESET or INIT); the
 * QP is in RTS when the Established event is polled. Passive side: cm->accept() moves the
 * QP to RTS before the REP leaves; when a receive completes on that QP before the
 * Established event (the RTU was lost or is late), tell the CM so (verbs' COMM_EST):
 * channel().notify_comm_est(id, now_ns()). A QP the hook failed to move is counted
 * (cm_qp_modify_failed) and its connection disconnected.
 *
 * Threading: one control thread calls everything here (as for CmChannel). Works in both
 * engine modes; in embedded mode that thread also calls Engine::poll(). In worker mode the
 * worker lcore moves QP1's frames: received MADs cross to this thread as completions of
 * QP1's receive CQ (an rte_ring, as every CQ's), MADs sent go to the worker through its
 * mailbox (Runtime::exec_on); the state machine, its timers and its event queue live on
 * this thread, in poll(), so they share nothing else with the worker. The RTR step waits
 * for ARP like QueuePair::modify (up to the device's arp_timeout_ms, usually already
 * resolved: the peer's REQ or REP just came from that address); on a device opened with
 * DeviceConfig::rtr_nonblocking it never waits (the QP's frames wait instead). */
#pragma once

#include <cstdint>
#include <memory>

#include "cm.h"
#include "droce.h"

namespace droce {

struct CmDeviceOptions {
    CmChannelConfig channel; /**< local_ipv4 and ca_guid are filled from the device */
    uint32_t gsi_slots = 64; /**< QP1 receive buffers */
    /** INIT access of a QP the CM takes from RESET. Local write only by default (least
     * privilege): grant the remote rights the application's protocol uses (librdmacm
     * grants remote write, plus read and atomic with responder resources). A QP already
     * in INIT keeps its own flags. */
    uint32_t access_flags = kAccessLocalWrite;
};

class CmDevice {
  public:
    /** Binds QP1 of dev (EBUSY: already bound). dev must come from engine. */
    static Result<std::unique_ptr<CmDevice>> open(Engine &engine, Device &dev,
                                                  const CmDeviceOptions &opt = {});
    virtual ~CmDevice() = default;

    virtual CmChannel &channel() = 0;
    /** Receives MADs and runs the CM's timers; returns the MADs handled. */
    virtual int poll() = 0;
    /** The clock the channel runs on (monotonic ns). */
    virtual uint64_t now_ns() const = 0;

    /** CmChannel::connect for qp (param.qpn is taken from qp). 0 on failure. */
    virtual uint32_t connect(uint32_t dst_ip, uint16_t dst_port, QueuePair &qp,
                             CmConnectParam param) = 0;
    /** The same to an IPv6 address (network order), from the device's first configured
     * IPv6 GID; MADs and the QP use the device's IPv6 GID of the peer's scope. */
    virtual uint32_t connect6(const uint8_t dst_ip6[16], uint16_t dst_port, QueuePair &qp,
                              CmConnectParam param) = 0;
    /** CmChannel::accept with qp, which is in RTS when this returns true. */
    virtual bool accept(uint32_t id, QueuePair &qp, CmAcceptParam param) = 0;
    virtual bool reject(uint32_t id) = 0;
    virtual bool disconnect(uint32_t id) = 0;
    /** Forget the QP of a connection (call before destroying the QP). */
    virtual void release(uint32_t id) = 0;

    /** The channel's counters, then the glue's (MADs in/out, send failures, QP moves). */
    virtual bool counter(size_t i, const char *&name, uint64_t &value) const = 0;
};

} // namespace droce
