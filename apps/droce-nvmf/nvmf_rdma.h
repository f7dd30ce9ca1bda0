/* SPDX-License-Identifier: BSD-3-Clause */
/* The RDMA glue of the NVMe-oF target: RDMA-CM (droce::CmDevice) admission with the
 * NVMe-oF private data, one RC QP per NVMe-oF queue, command capsules in by SEND, data by
 * RDMA READ (host->target) and RDMA WRITE (target->host), responses by SEND or SEND with
 * Invalidate. It implements lib/nvmf's TransportActions for each queue and drives the
 * sans-I/O core (Target) from one poll loop: poll() never blocks.
 *
 * Least privilege: every QP and MR here grants the peer no remote access (the target is
 * the one doing READ and WRITE), so a host cannot touch the target's memory. */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <droce/cm_device.h>
#include <droce/droce.h>

#include "nvmf.h"

namespace droce::nvmf {

/* The glue's own counters (the core's are Target::counters()). */
struct RdmaCounters {
    uint64_t connect_requests = 0, accepted = 0, rejected = 0;
    uint64_t established = 0, disconnected = 0, queues_freed = 0;
    uint64_t setup_failures = 0;  /* CQ/QP/MR/receive set-up failed: REJ NoResources */
    uint64_t accept_failures = 0; /* the CM could not accept (QP not readied) */
    uint64_t wc_errors = 0;       /* completions in error (not flushes): queue torn down */
    uint64_t read_errors = 0;     /* of which RDMA READs (a bad host key or range) */
    uint64_t wc_flushed = 0;      /* flushed after the QP went to ERR */
    uint64_t wc_unexpected = 0;   /* a completion nobody asked for */
    uint64_t recv_repost_failures = 0;
    uint64_t capsules_dropped = 0; /* too short, no slot, dead queue (core counts by kind) */
    uint64_t post_failures = 0;    /* a READ/WRITE/SEND the QP refused */
    uint64_t disconnects_asked = 0;
    /* The host's REJ (of our REP) ended an accepted connection. */
    uint64_t rejected_by_peer = 0;
};

struct RdmaOptions {
    uint16_t port = 4420;
    uint8_t initiator_depth = 16; /* RDMA READs we keep outstanding per QP (clamped by the CM) */
    uint8_t path_mtu_max = 5;     /* IB MTU enum cap; the device's active MTU caps it too */
};

class RdmaTransport {
  public:
    RdmaTransport(Device &dev, CmDevice &cm, Target &target, const RdmaOptions &opt);
    ~RdmaTransport();
    RdmaTransport(const RdmaTransport &) = delete;
    RdmaTransport &operator=(const RdmaTransport &) = delete;

    /* Set-up on the control path: the PD and the CM listen. */
    bool start(std::string &err);
    /* One iteration: CM MADs and events, every queue's completions, the core's poll, the
     * teardown of queues that are gone. Returns the work done (0: idle). */
    int poll();
    /* Connections still open (not yet freed). */
    size_t connections() const { return conns_.size(); }
    /* Their CM ids (diagnostics, tests). */
    std::vector<uint32_t> connection_ids() const;
    /* Disconnect everything (shutdown); poll() until connections() is 0. */
    void disconnect_all();
    const RdmaCounters &counters() const { return cnt_; }

    struct Conn; /* one NVMe-oF queue on one RC QP */

  private:
    void on_connect_request(const CmEventInfo &ev);
    Conn *find(uint32_t id);
    int poll_conn(Conn &c, uint64_t now);
    void on_wc(Conn &c, const Wc &wc, uint64_t now);
    void teardown(Conn &c); /* the connection is gone: stop the queue */
    void reap();            /* free queues that are gone and drained */

    Device &dev_;
    CmDevice &cm_;
    Target &target_;
    RdmaOptions opt_;
    std::unique_ptr<ProtectionDomain> pd_;
    std::vector<std::unique_ptr<Conn>> conns_;
    RdmaCounters cnt_;
    friend struct ConnActions;
};

} // namespace droce::nvmf
