/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * One side of a perftest test as a non-blocking state machine: setup() builds the buffer,
 * PD, MR, CQ and QP (INIT, receives posted for send tests); connect() takes the QP to
 * RTR/RTS; start(size) arms one run; step() polls once and advances. Several sides and the
 * engine's poll loop can so share one thread (--loopback). The data path follows perftest's
 * loops: bw clients keep tx_depth WRs in flight; the send_bw server counts receives;
 * write_lat/send_lat ping-pong (write_lat: the server writes first and each side polls
 * the last byte of its receive half; send_lat: the client sends first); read/atomic
 * clients post one WR at a time in lat tests. Servers of write/read/atomic are passive. */
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <droce/droce.h>

#include "options.h"
#include "proto.h"
#include "qp_resources.h"

namespace droce::perf {

using Clock = std::chrono::steady_clock;

struct SideConfig {
    Verb verb = Verb::Write;
    Kind kind = Kind::Bw;
    bool client = false;
    uint64_t max_size = 65536; /**< buffer half size */
    uint32_t iters = 1000;
    uint32_t tx_depth = 128;
    uint32_t rx_depth = 512;
    uint32_t out_reads = 16;
    int gid_idx = 1;
    bool atomic_cas = false;
    double duration_s = 0; /**< > 0: run for this long (iters ignored) */
    std::string prefix;
};

class Side {
  public:
    enum class Step { Progress, Idle, Done, Failed };

    explicit Side(SideConfig cfg);
    Side(const Side &) = delete;
    Side &operator=(const Side &) = delete;

    bool setup(Device &dev, uint32_t psn);
    /** RTR + RTS towards remote with path MTU mtu. */
    bool connect(const Dest &remote, Mtu mtu);
    /** Arms a run of `size`-byte messages. */
    bool start(uint64_t size);
    Step step();
    /** Ends a duration run / a passive server at once (the client said it is done). */
    void finish();
    bool running() const { return running_; }
    bool done() const { return done_; }
    bool is_passive() const;

    const Dest &local() const { return local_; }
    const SideConfig &config() const { return cfg_; }
    /** The verbs objects (tests check the rights they were given). */
    const app::QpResources &resources() const { return res_; }

    /** Timestamps of the last run (ns since an arbitrary origin). */
    const std::vector<double> &tposted() const { return tposted_; }
    const std::vector<double> &tcompleted() const { return tcompleted_; }
    uint64_t completed() const { return ccnt_; }
    uint64_t size() const { return size_; }
    double run_seconds() const;
    /** Periodic reports for --run_infinitely: completions and seconds since the last call. */
    void take_period(uint64_t &ops, double &seconds);

  private:
    bool fail(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    uint8_t *buf() const { return res_.buf.get(); }
    Status post_one();
    bool post_recv(int n);
    bool poll_cq(Wc *wc, int max, int &n);
    Step step_bw_client();
    Step step_send_server();
    Step step_lat_write();
    Step step_lat_send();
    Step step_lat_single();
    double now_ns() const;
    bool duration_over() const;

    SideConfig cfg_;
    Device *dev_ = nullptr;
    size_t half_ = 0;
    app::QpResources res_; /**< buffer (two halves: send | receive), PD, MR, CQ, QP */
    Dest local_;
    Dest remote_;

    bool running_ = false;
    bool done_ = false;
    bool failed_ = false;
    uint64_t size_ = 0;
    uint64_t target_ = 0; /**< iterations of this run (UINT64_MAX in duration mode) */
    uint64_t scnt_ = 0, ccnt_ = 0, rcnt_ = 0, consumed_ = 0;
    int lat_state_ = 0;
    std::vector<double> tposted_, tcompleted_;
    Clock::time_point t0_, t_start_, t_end_, t_deadline_, t_period_;
    uint64_t period_ccnt_ = 0;
};

} // namespace droce::perf
