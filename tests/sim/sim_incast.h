/* SPDX-License-Identifier: BSD-3-Clause */
/* Congestion scenarios on the simulator: N senders, each one RC QP doing RDMA WRITEs to
 * one receiver through a lib/fabric bottleneck (Fabric::set_bottleneck), DCQCN on or off
 * per run (Endpoint::cc). Used by bench/cc_sim (CSV, plots) and tests/sim/test_cc_fabric
 * (the targets), so the experiment and its assertions are the same code.
 *
 * Rates are measured at the bottleneck's output (frame bytes per bin, by sender MAC), so
 * they are what the receiver gets, wire headers included. */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <droce/dcqcn.h>

#include "cc_params.h"
#include "fabric_bottleneck.h"
#include "sim_fabric.h"

namespace droce::sim {

struct FlowSpec {
    Time start_ns = 0;
    Time stop_ns = 0; /* no new message from then on (0: runs to the end) */
    uint32_t msg_bytes = 65536;
    uint32_t outstanding = 4; /* WRITEs kept posted */
    uint64_t max_msgs = 0;    /* 0: unlimited */
};

struct IncastConfig {
    std::vector<FlowSpec> flows;
    Time duration_ns = 30'000'000;
    double link_gbps = 10; /* each host's link */
    Time link_delay_ns = 2000;
    Time link_backlog_ns = 2000; /* a sender's NIC holds ~2 frames beyond the one on the wire */
    fabric::BottleneckParams bottleneck; /* toward the receiver */
    const cc::CcParams *cc = nullptr;    /* nullptr: DCQCN off */
    Mtu mtu = Mtu::Mtu1024;
    Time bin_ns = 50'000;    /* rate bins */
    Time sample_ns = 10'000; /* queue-depth samples */
    uint64_t seed = 1;
    /* A single CNP forged by the receiver to flow 0's QP at this time (0: none). */
    Time inject_cnp_at = 0;
    /* A victim flow: flow 0's host also WRITEs to a second receiver that is not behind the
     * bottleneck. It shares flow 0's link, so a PFC pause of that link stops it too
     * (head-of-line blocking) although its own path is free. */
    bool victim = false;
    FlowSpec victim_flow;
};

struct IncastResult {
    Time bin_ns = 0;
    /* rate_gbps[flow][bin]: frame bytes leaving the bottleneck per bin, in Gb/s */
    std::vector<std::vector<double>> rate_gbps;
    /* sent_gbps[flow][bin]: frame bytes the sender put on its link, in Gb/s */
    std::vector<std::vector<double>> sent_gbps;
    std::vector<fabric::DepthSample> depth;
    fabric::BottleneckCounters bq;
    std::vector<uint64_t> msgs_done;
    uint64_t cnps = 0;                             /* CNP frames seen on the fabric */
    uint64_t rp_cnp_handled = 0, rp_rate_cuts = 0; /* the senders' reaction points */
    uint64_t timeouts = 0, seq_naks = 0, retransmits = 0;
    bool qp_error = false;
    /* victim_gbps[bin]: frame bytes the victim flow put on flow 0's link (empty: no victim) */
    std::vector<double> victim_gbps;
    uint64_t victim_msgs = 0;
    /* Each flow's reaction point over the last 10 ms (sampled every bin): mean rate Rc and
     * target Rt in Gb/s, mean alpha, and its rate cuts over the whole run. Shows what a
     * fairness figure alone hides: whether targets are clamped or stay at line rate. */
    std::vector<double> rp_rate_gbps, rp_target_gbps, rp_alpha;
    std::vector<uint64_t> rp_cuts;
    uint64_t pause_frames = 0;     /* PFC frames the congestion point sent upstream */
    std::vector<double> paused_ms; /* per flow: time its host's link was paused */
    /* The bottleneck's capacity in the units of rate_gbps (frame bytes, without the
     * per-frame wire overhead), for the flows' mean frame size: the most their rates at its
     * output can add up to. A flow's fair share of the link is capacity_gbps / N. */
    double capacity_gbps = 0;
};

IncastResult run_incast(const IncastConfig &c);


/** Jain's fairness index of the values (1 = equal). */
double jain(const std::vector<double> &x);
/** Mean rate of each flow over bins [from, to) (bin indices). */
std::vector<double> mean_rates(const IncastResult &r, size_t from, size_t to,
                               const std::vector<size_t> &flows);
/** The end (ns) of the first window of `window` bins from which on every window (sliding
 * by one bin, up to `until_bin`) has every listed flow within `tol` of the fair share;
 * UINT64_MAX if never. The fair share is share_gbps (the link's: capacity_gbps / N), or
 * with share_gbps 0 the window's mean of the flows, which also counts equal flows on an
 * under-used link as converged. */
Time convergence_time(const IncastResult &r, const std::vector<size_t> &flows, size_t window,
                      size_t from_bin, size_t until_bin, double tol, double share_gbps = 0);
/** Largest queue depth (bytes) among samples at or after t. */
uint32_t max_depth_after(const IncastResult &r, Time t);

/** Writes `<path>`: t_us, depth_bytes, one rate column per flow (Gb/s, bin values
 * repeated at the depth sample times), the senders' rates, and the victim's if any. */
void write_csv(const IncastResult &r, const std::string &path);

} // namespace droce::sim
