/* SPDX-License-Identifier: BSD-3-Clause */
/* IBTA time fields: a 5-bit exponent t meaning 4.096 us * 2^t (CM response timeouts,
 * packet life time, local ACK timeout, MRA service timeout). The CM derives every
 * retransmission and timewait interval from them, as Linux's ib_cm does: a REQ waits
 * 2 * packet life + the peer's CM response timeout before it is sent again. */
#pragma once

#include <cstdint>

namespace droce::cm {

/* 4.096 us * 2^t in nanoseconds; t is masked to 5 bits (2^31 * 4096 ns fits 64 bits). */
constexpr uint64_t iba_time_ns(uint8_t t) { return 4096ull << (t & 31u); }

/* The wait for an answer to a MAD: twice the packet life time (there and back) plus the
 * time the peer said it needs to answer. */
constexpr uint64_t cm_wait_ns(uint8_t packet_life, uint8_t response_timeout) {
    return 2 * iba_time_ns(packet_life) + iba_time_ns(response_timeout);
}

} // namespace droce::cm
