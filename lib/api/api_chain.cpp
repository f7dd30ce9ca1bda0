/* SPDX-License-Identifier: BSD-3-Clause */
/* QueuePair's chained posts (ibv_post_send / ibv_post_recv with a WR list): the default
 * for every QP type is a loop over the single post, stopping at the first refusal. */
#include <droce/droce.h>

namespace droce {

Status QueuePair::post_send(const SendWr *wrs, uint32_t n, uint32_t *bad_index) {
    uint32_t i = 0;
    for (; i < n; ++i)
        if (Status s = post_send(wrs[i]); !s) {
            if (bad_index)
                *bad_index = i;
            return s;
        }
    if (bad_index)
        *bad_index = n;
    return {};
}

Status QueuePair::post_recv(const RecvWr *wrs, uint32_t n, uint32_t *bad_index) {
    uint32_t i = 0;
    for (; i < n; ++i)
        if (Status s = post_recv(wrs[i]); !s) {
            if (bad_index)
                *bad_index = i;
            return s;
        }
    if (bad_index)
        *bad_index = n;
    return {};
}

} // namespace droce
