/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * A path MTU as the tools take it on the command line (-m 256..4096 bytes, as perftest
 * and ibv_rc_pingpong spell it) and as droce's QP attributes want it. */
#pragma once

#include <cstdint>

#include <droce/verbs.h>

namespace droce::app {

/** One of the IB path MTUs: 256, 512, 1024, 2048 or 4096 bytes. */
inline bool is_path_mtu(uint64_t bytes) {
    return bytes == 256 || bytes == 512 || bytes == 1024 || bytes == 2048 || bytes == 4096;
}

/** The Mtu of a size is_path_mtu accepts (1024 for any other). */
inline Mtu path_mtu_of_bytes(uint32_t bytes) {
    switch (bytes) {
    case 256:
        return Mtu::Mtu256;
    case 512:
        return Mtu::Mtu512;
    case 2048:
        return Mtu::Mtu2048;
    case 4096:
        return Mtu::Mtu4096;
    default:
        return Mtu::Mtu1024;
    }
}

} // namespace droce::app
