/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * ibv_rc_pingpong's out-of-band exchange over TCP (kernel sockets):
 * the client sends "%04x:%06x:%06x:%s" (LID:QPN:PSN:GID as 32 hex digits) plus a NUL,
 * 52 bytes; the server moves its QP to RTR/RTS, answers the same, and the client
 * finishes with "done" plus a NUL. */
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>

#include <droce/verbs.h>

#include "tcp_channel.h"

namespace droce::pingpong {

/** One side's address as ibv_rc_pingpong exchanges it (struct pingpong_dest). */
struct Dest {
    uint32_t lid = 0;
    uint32_t qpn = 0;
    uint32_t psn = 0;
    Gid gid = {};
};

/** sizeof "0000:000000:000000:00000000000000000000000000000000" = 52. */
inline constexpr size_t kDestMsgLen = 52;
/** sizeof "done" = 5. */
inline constexpr size_t kDoneMsgLen = 5;

/** The 52-byte wire message for d (NUL-terminated). */
std::array<char, kDestMsgLen> format_dest(const Dest &d);
/** Parses a wire message; false when malformed. */
bool parse_dest(const char *msg, size_t len, Dest &d);
/** inet_ntop(AF_INET6) of a GID: "::ffff:10.77.0.100". */
std::string gid_to_string(const Gid &g);
bool gid_is_zero(const Gid &g);

/** The run's deadline and what to run while waiting (embedded mode: the engine's poll loop,
 * so ARP and retransmissions keep flowing during the TCP exchange). */
using app::Waiter;

/** Client side: connect to servername:port, send ours, read theirs, send "done".
 * Prints ibv_rc_pingpong's messages on failure; returns false then. */
bool client_exchange(const std::string &servername, int port, const Dest &mine, Dest &remote,
                     const Waiter &w);

/** Server side: listen on port, accept one client, read its address, call connect()
 * (RTR/RTS; returns false on failure), answer ours, read "done". */
bool server_exchange(int port, const Dest &mine, Dest &remote,
                     const std::function<bool(const Dest &)> &connect, const Waiter &w);

} // namespace droce::pingpong
