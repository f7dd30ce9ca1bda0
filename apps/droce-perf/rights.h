/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The remote rights a droce-perf side grants, on its MR and on its QP: only those its
 * test's peer uses. A server (and both sides of write_lat, which WRITE into each other)
 * gets perftest's one right per verb (setup_mr_flags and ctx_modify_qp_to_init: WRITE ->
 * REMOTE_WRITE, READ -> REMOTE_READ, ATOMIC -> REMOTE_ATOMIC); SEND tests need none, as
 * ibv_rc_pingpong. A client's buffer is touched by nobody but itself (responses and
 * receives are local writes), so it grants nothing remote; perftest grants the client
 * the server's rights as well, which a perftest server never uses. The MR always has
 * LOCAL_WRITE: READ responses, atomic results and receives land in it. */
#pragma once

#include <cstdint>

#include <droce/verbs.h>

#include "options.h"

namespace droce::perf {

struct Rights {
    uint32_t mr; /**< reg_mr access */
    uint32_t qp; /**< QpAttr::qp_access_flags at INIT */
};

/** What the peer of this side does to it, as a right; 0 when nothing. */
constexpr uint32_t remote_right_for(Verb verb, Kind kind, bool client) {
    const bool target = !client || (verb == Verb::Write && kind == Kind::Lat);
    if (!target)
        return 0;
    switch (verb) {
    case Verb::Write:
        return kAccessRemoteWrite;
    case Verb::Read:
        return kAccessRemoteRead;
    case Verb::Atomic:
        return kAccessRemoteAtomic;
    case Verb::Send:
        return 0;
    }
    return 0;
}

constexpr Rights rights_for(Verb verb, Kind kind, bool client) {
    const uint32_t r = remote_right_for(verb, kind, client);
    return {kAccessLocalWrite | r, r};
}

} // namespace droce::perf
