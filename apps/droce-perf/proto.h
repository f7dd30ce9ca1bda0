/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * perftest's out-of-band exchange over TCP (port 18515), as seen on the wire between
 * two perftest 4.5 peers (../shared/vectors/rxe/write_bw.pcap etc.):
 *   version: 16 bytes ("6.06" + NULs), each way; then the cycle buffer and the cache
 *   line size as 4-byte big-endian ints, each way; then the MTU enum as "%d" in 2 bytes
 *   ("3\0" = 1024), each way. The client writes first and then reads; the server reads
 *   and then writes, for every item.
 *   handshake: one 108-byte record each way,
 *   "LID:OUT_READS:QPN:PSN:RKEY:VADDR:GID(16 x %02x:):SRQN:" + NUL.
 *   bw report: 5 big-endian 8-byte values each way, one at a time: size, iters, BW peak,
 *   BW average, MsgRate (doubles as their IEEE bits).
 *   close: a handshake, then each side writes "done" + NUL and closes.
 */
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <droce/verbs.h>

#include "tcp_channel.h"

namespace droce::perf {

/** struct pingpong_dest as perftest exchanges it. */
struct Dest {
    uint32_t lid = 0;
    uint32_t out_reads = 1;
    uint32_t qpn = 0;
    uint32_t psn = 0;
    uint32_t rkey = 0;
    uint64_t vaddr = 0;
    Gid gid = {};
    uint32_t srqn = 0;
};

inline constexpr size_t kRecordLen = 108;
inline constexpr size_t kVersionLen = 16;
/** The version droce-perf announces (perftest 4.5's; >= 5.70 is required by the peer). */
inline constexpr const char *kVersion = "6.06";

std::array<char, kRecordLen> format_dest(const Dest &d);
bool parse_dest(const char *msg, size_t len, Dest &d);
std::string gid_to_string(const Gid &g);

/** The 5 values of a bw report. */
struct BwReport {
    uint64_t size = 0;
    uint64_t iters = 0;
    double bw_peak = 0;
    double bw_avg = 0;
    double msg_rate = 0;
};

/** The run's deadline and what to run while waiting (the engine and the test's data path;
 * pump_slice_ms 0: the pump runs between non-blocking polls). */
using app::Waiter;

/** One TCP connection of the exchange (non-blocking socket; waits run the pump). */
class Conn {
  public:
    Conn() = default;
    ~Conn();
    Conn(const Conn &) = delete;
    Conn &operator=(const Conn &) = delete;

    /** Client: connects, retrying while the server is not listening yet. */
    bool connect(const std::string &host, int port, const Waiter &w);
    /** Server: listens on port and accepts one client. */
    bool accept(int port, const Waiter &w);

    bool write_all(const void *buf, size_t len, const Waiter &w);
    bool read_exact(void *buf, size_t len, const Waiter &w);
    /** Exchanges len bytes: client writes then reads, server reads then writes. */
    bool xchg(bool client, const void *mine, void *theirs, size_t len, const Waiter &w);

    /** Non-blocking: how many bytes are waiting (up to max, copied into buf without
     * consuming them); 0 = nothing yet; -1 = EOF or error. */
    long peek(void *buf, size_t max);

    /** perftest's ctx_hand_shake. */
    bool hand_shake(bool client, const Dest &mine, Dest &theirs, const Waiter &w);
    /** xchg_bw_reports. */
    bool xchg_reports(bool client, const BwReport &mine, BwReport &theirs, const Waiter &w);
    /** Writes "done" and closes. */
    void close_done(const Waiter &w);
    void close();
    int fd() const { return fd_; }

  private:
    int fd_ = -1;
};

/** The start of the exchange (versions, cycle buffer, cache line, MTU). mtu_enum is ours
 * (Mtu value); on return it is the smaller of both. */
bool exchange_preamble(Conn &c, bool client, int &mtu_enum, const Waiter &w);

} // namespace droce::perf
