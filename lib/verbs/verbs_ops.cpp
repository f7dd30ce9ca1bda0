/* SPDX-License-Identifier: BSD-3-Clause */
/* The function table of a context: verbs.h's inline verbs call through it
 * (ibv_post_send, ibv_poll_cq, ibv_req_notify_cq, ibv_alloc_mw... through context->ops;
 * ibv_query_port, ibv_query_device_ex, ibv_create_qp_ex and ibv_create_cq_ex through
 * verbs_context). An extended op left
 * NULL makes its inline verb answer EOPNOTSUPP itself; the ibv_context_ops entries are
 * called unchecked, so every one is set. */
#include "verbs_objects.h"

namespace droce::verbs {

void fill_context_ops(verbs_context &v) {
    ibv_context_ops &ops = v.context.ops;
    ops.poll_cq = poll_cq;
    ops.post_send = post_send;
    ops.post_recv = post_recv;
    ops.req_notify_cq = req_notify_cq;
    ops.post_srq_recv = post_srq_recv;
    ops.alloc_mw = unsupported_alloc_mw;
    ops.dealloc_mw = unsupported_dealloc_mw;
    ops.bind_mw = unsupported_bind_mw;
    v.query_port = query_port_ex;
    v.query_device_ex = query_device_ex;
    v.create_qp_ex = create_qp_ex;
    v.create_cq_ex = create_cq_ex;
}

} // namespace droce::verbs
