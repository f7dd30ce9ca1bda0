/* SPDX-License-Identifier: BSD-3-Clause */
/* Inline send data: gathered from the WR's SGEs into the queue's own bytes when the WR is
 * posted, as verbs promises (the caller's buffer is reusable on return; lkeys are not
 * looked at). One routine for the RC and UD queues and the worker-mode post ring. */
#pragma once

#include <cstdint>
#include <cstring>

#include "vocab_verbs.h"

namespace droce::mem {

/** Copies the payload of wr's SGEs, back to back, to dst; returns the bytes copied. The
 * caller has checked that they fit. */
inline uint32_t gather_inline(const SendWr &wr, uint8_t *dst) {
    uint32_t off = 0;
    for (int i = 0; i < wr.num_sge; ++i) {
        if (wr.sg_list[i].length)
            std::memcpy(dst + off, reinterpret_cast<const void *>(wr.sg_list[i].addr),
                        wr.sg_list[i].length);
        off += wr.sg_list[i].length;
    }
    return off;
}

} // namespace droce::mem
