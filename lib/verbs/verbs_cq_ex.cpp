/* SPDX-License-Identifier: BSD-3-Clause */
/* Extended CQs (ibv_create_cq_ex) and their polling API: ibv_start_poll takes a chunk of
 * completions from droce's CQ into the CQ's held array, ibv_next_poll walks it (and takes
 * the next chunk when it is used up), the ibv_wc_read_* functions read the current one.
 * Completions taken and not handed out when the application stops (ibv_end_poll) go first
 * to its next poll, through either API. No lock, allocation or system call here; one
 * thread at a time polls a CQ, as droce's CompletionQueue asks. */
#include <arpa/inet.h>

#include <cerrno>

#include "verbs_objects.h"

namespace droce::verbs {
namespace {

/* The completion fields droce reports (the standard ones; SLID, SL and DLID path bits
 * read 0 on RoCE). Timestamps, CVLAN, flow tags and tag matching: refused at create. */
constexpr uint64_t kWcFlags = IBV_WC_STANDARD_FLAGS;

Cq &cq_of(ibv_cq_ex *x) { return *outer_of<Cq>(ibv_cq_ex_to_cq(x)); }

/* Makes the next completion current: 0, or ENOENT when droce's CQ has none. */
int advance(Cq &c) {
    if (c.held_pos == c.held_n) {
        c.held_pos = 0;
        c.held_n = static_cast<uint32_t>(c.dcq->poll(c.held, kPollChunk));
        if (c.held_n == 0)
            return ENOENT;
    }
    c.current = &c.held[c.held_pos++];
    c.cqx.status = static_cast<ibv_wc_status>(c.current->status);
    c.cqx.wr_id = c.current->wr_id;
    return 0;
}

int start_poll(ibv_cq_ex *x, ibv_poll_cq_attr *attr) {
    if (attr == nullptr || attr->comp_mask != 0)
        return EINVAL;
    return advance(cq_of(x));
}
int next_poll(ibv_cq_ex *x) { return advance(cq_of(x)); }
void end_poll(ibv_cq_ex *) {} /* the current completion is already taken */

const Wc &cur(ibv_cq_ex *x) { return *cq_of(x).current; }
ibv_wc_opcode read_opcode(ibv_cq_ex *x) { return static_cast<ibv_wc_opcode>(cur(x).opcode); }
uint32_t read_vendor_err(ibv_cq_ex *x) { return cur(x).vendor_err; }
uint32_t read_byte_len(ibv_cq_ex *x) { return cur(x).byte_len; }
__be32 read_imm_data(ibv_cq_ex *x) {
    const Wc &w = cur(x);
    /* ibv_wc's union: the invalidated rkey (host order) with IBV_WC_WITH_INV. */
    return (w.wc_flags & kWcWithInv) != 0 ? w.invalidated_rkey : htonl(w.imm_data);
}
uint32_t read_qp_num(ibv_cq_ex *x) { return cur(x).qp_num; }
uint32_t read_src_qp(ibv_cq_ex *x) { return cur(x).src_qp; }
unsigned int read_wc_flags(ibv_cq_ex *x) { return cur(x).wc_flags & kVerbsWcFlags; }
uint32_t read_slid(ibv_cq_ex *) { return 0; }
uint8_t read_sl(ibv_cq_ex *) { return 0; }
uint8_t read_dlid_path_bits(ibv_cq_ex *) { return 0; }

} // namespace

ibv_cq_ex *create_cq_ex(ibv_context *ctx, ibv_cq_init_attr_ex *attr) {
    constexpr uint32_t kKnownMask = IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD;
    if (ctx == nullptr || attr == nullptr || attr->cqe == 0 || attr->comp_vector != 0 ||
        (attr->comp_mask & ~kKnownMask) != 0) {
        errno = EINVAL;
        return nullptr;
    }
    /* Not yet: parent domains, CQs that may overrun. A single-threaded CQ is what
     * droce's are anyway. */
    const uint32_t flags = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) != 0 ? attr->flags : 0;
    if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) != 0 ||
        (flags & ~static_cast<uint32_t>(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) != 0 ||
        (attr->wc_flags & ~kWcFlags) != 0) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    Cq *c = new_cq(ctx, attr->cqe, attr->cq_context, attr->channel);
    if (c == nullptr)
        return nullptr;
    ibv_cq_ex &x = c->cqx;
    x.start_poll = start_poll;
    x.next_poll = next_poll;
    x.end_poll = end_poll;
    x.read_opcode = read_opcode;
    x.read_vendor_err = read_vendor_err;
    x.read_byte_len = read_byte_len;
    x.read_imm_data = read_imm_data;
    x.read_qp_num = read_qp_num;
    x.read_src_qp = read_src_qp;
    x.read_wc_flags = read_wc_flags;
    x.read_slid = read_slid;
    x.read_sl = read_sl;
    x.read_dlid_path_bits = read_dlid_path_bits;
    return &x;
}

} // namespace droce::verbs
