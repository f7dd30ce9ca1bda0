/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * One side of ibv_rc_pingpong as a state machine: setup() builds PD/MR/CQ/QP (INIT) and
 * posts the receives, connect() takes the QP through RTR and RTS, start() arms the loop
 * (the client posts the first send), and step() polls the CQ once and advances, never
 * blocking. Several endpoints (and, in embedded mode, Engine::poll()) can so share one
 * thread: that is how --loopback runs server and client together. */
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include <droce/droce.h>

#include "app_engine.h"
#include "exchange.h"
#include "qp_resources.h"

namespace droce::pingpong {

struct EndpointConfig {
    bool is_client = false;
    uint32_t size = 4096;
    uint32_t rx_depth = 500;
    uint32_t iters = 1000;
    Mtu mtu = Mtu::Mtu1024;
    int sl = 0;
    int gid_idx = 1;
    int ib_port = 1;
    bool validate = false;
    /** ibv_ud_pingpong: a UD QP; the buffer holds the 40-byte GRH area, then the message. */
    bool ud = false;
    /** -e: the CQ reports completions on a completion channel; the loop sleeps on
     * event_fd() instead of polling (ibv_rc_pingpong's use_event). */
    bool events = false;
    /** Prepended to every line printed ("" in the two-process mode). */
    std::string prefix;
};

class PingpongEndpoint {
  public:
    enum class State { Created, Ready, Connected, Running, Done, Failed };
    /** What one step() did. */
    enum class Step { Progress, Idle, Done, Failed };

    explicit PingpongEndpoint(EndpointConfig cfg);
    PingpongEndpoint(const PingpongEndpoint &) = delete;
    PingpongEndpoint &operator=(const PingpongEndpoint &) = delete;

    /** Created -> Ready: buffer, PD, MR, CQ, QP, INIT, rx_depth receives, local address.
     * psn is our 24-bit starting PSN. Prints the reason and returns false on failure. */
    bool setup(Device &dev, uint32_t psn);
    /** Ready -> Connected: RTR (towards remote) and RTS. */
    bool connect(const Dest &remote);
    /** Connected -> Running: the client posts the first send; starts the clock. */
    bool start();
    /** Running: polls the CQ once and handles what it got. */
    Step step();
    /** -e: the completion channel's descriptor (non-blocking) to wait on when step()
     * was idle; -1 without -e. */
    int event_fd() const;
    /** -e: takes the events that fired and arms the CQ again (then step() polls what
     * came); prints why and returns false on an error. */
    bool rearm();
    /** -e: completion events taken so far. */
    uint64_t events() const { return events_; }

    /** Prints "  local address:  LID ..." */
    void print_local() const;
    /** Prints "  remote address: LID ..." for d. */
    void print_remote(const Dest &d) const;
    /** Done: prints the two summary lines and runs the -c check (server side).
     * Returns false if the check failed. */
    bool report();

    State state() const { return state_; }
    const Dest &local() const { return local_; }
    /** The verbs objects (tests check the rights they were given). */
    const app::QpResources &resources() const { return res_; }
    const Dest &remote() const { return remote_; }
    uint32_t scnt() const { return static_cast<uint32_t>(scnt_); }
    uint32_t rcnt() const { return static_cast<uint32_t>(rcnt_); }
    const std::string &prefix() const { return cfg_.prefix; }

  private:
    enum : uint64_t { kRecvWrid = 1, kSendWrid = 2 };

    bool fail(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    uint8_t *buf() const { return res_.buf.get(); }
    int post_recv(int n);
    Status post_send();
    bool connect_ud(const Dest &remote);
    bool handle_wc(const Wc &wc);
    /** Where the message starts in the buffer (UD: after the GRH area). */
    uint8_t *data() const { return buf() + (cfg_.ud ? kGrh : 0); }
    static constexpr uint32_t kGrh = 40;
    static constexpr uint32_t kUdQkey = 0x11111111; /* ibv_ud_pingpong's */

    EndpointConfig cfg_;
    State state_ = State::Created;
    size_t page_size_ = 4096;
    size_t buf_len_ = 0;
    Device *dev_ = nullptr;
    std::unique_ptr<CompletionChannel> channel_; /**< -e (outlives the CQ in res_) */
    uint64_t events_ = 0;
    app::QpResources res_;              /**< buffer, PD, MR, CQ, QP */
    std::unique_ptr<AddressHandle> ah_; /**< UD: to the peer (destroyed before the PD) */
    Dest local_;
    Dest remote_;
    int routs_ = 0;
    int rcnt_ = 0;
    int scnt_ = 0;
    uint64_t pending_ = 0;
    std::chrono::steady_clock::time_point t_start_;
    std::chrono::steady_clock::time_point t_end_;
};

} // namespace droce::pingpong
