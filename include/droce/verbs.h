/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Verbs-semantics types shared by the public API and the transport: work requests,
 * completions, QP attributes and states (vocab_verbs.h, the protocol core's own
 * vocabulary, installed with this header), and the QP types. Names and values follow
 * libibverbs so that code written against ibv_* reads the same. */
#pragma once

#include <cstdint>

#include "vocab_verbs.h"

namespace droce {

/** QP transport types (ibv_qp_type values). */
enum class QpType : uint8_t {
    Rc = 2, /**< reliable connected */
    Ud = 4, /**< unreliable datagram: each send names its destination (SendWr::ah) */
};

} // namespace droce
