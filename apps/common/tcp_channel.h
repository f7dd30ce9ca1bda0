/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The kernel-TCP side channel of the droce tools (ibv_rc_pingpong's and perftest's
 * out-of-band exchanges): non-blocking sockets, every wait bounded by the run's deadline
 * and running a pump meanwhile (embedded mode: the engine's poll loop, so ARP and
 * retransmissions keep flowing while the exchange waits). Failures are returned, not
 * printed: each tool prints the messages of the tool it imitates. */
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace droce::app {

/** A deadline and what to run while waiting. */
struct Waiter {
    std::chrono::steady_clock::time_point deadline;
    bool has_deadline = false;
    std::function<void()> pump; /**< may be empty */
    /** With a pump: how long one poll() may block before the pump runs again. */
    int pump_slice_ms = 1;

    bool expired() const { return has_deadline && std::chrono::steady_clock::now() >= deadline; }
};

/** Closes an fd on scope exit. */
class Fd {
  public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() { reset(); }
    void reset(int fd = -1);
    int release() {
        const int fd = fd_;
        fd_ = -1;
        return fd;
    }
    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }

  private:
    int fd_;
};

void set_nonblocking(int fd);

enum class WaitResult { Ready, Timeout, Error };

/** Waits until fd has `events` (POLLIN/POLLOUT; POLLERR/POLLHUP count as ready: the next
 * call reports them), running the pump meanwhile. */
WaitResult wait_fd(int fd, short events, const Waiter &w);

/** Sends all of buf (non-blocking socket); false on error or timeout. */
bool write_all(int fd, const void *buf, size_t len, const Waiter &w);

/** Reads exactly len bytes (TCP may split a message); false on EOF, error or timeout.
 * *got (if given) says how many arrived. */
bool read_exact(int fd, void *buf, size_t len, const Waiter &w, size_t *got = nullptr);

/** Resolves host:port (family AF_UNSPEC or AF_INET) and connects to the first address
 * that accepts. When none does, retries every 200 ms (running the pump) for retry_for.
 * Returns the connected non-blocking socket, or -1; *gai_error is getaddrinfo's error
 * (0 when the name resolved). */
int tcp_connect(const std::string &host, int port, int family, std::chrono::milliseconds retry_for,
                const Waiter &w, int *gai_error);

enum class AcceptResult { Accepted, WaitFailed, Failed };

/** Accepts one connection on the non-blocking listening socket (waiting with w). On
 * Accepted, fd is the (non-blocking) connection; on Failed, errno says why. */
AcceptResult accept_one(int listen_fd, const Waiter &w, int &fd);

} // namespace droce::app
