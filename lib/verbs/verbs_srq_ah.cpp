/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared receive queues and address handles: droce's SharedReceiveQueue and
 * AddressHandle (UD sends name one each). */
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "verbs_objects.h"
#include "verbs_process.h"

using namespace droce;
using namespace droce::verbs;

namespace {

/* RoCEv2's IPv4-mapped GID of the IPv4 address at p (network order). */
void mapped_gid(const uint8_t *p, uint8_t gid[16]) {
    std::memset(gid, 0, 16);
    gid[10] = gid[11] = 0xFF;
    std::memcpy(gid + 12, p, 4);
}

} // namespace

extern "C" {

/* The address vector back to a datagram's sender, as rdma-core's: the receive buffer's
 * GRH (RoCEv2: the IPv6 header, or 20 bytes then the IPv4 header) gives the sender's GID
 * (our dgid) and the one of ours it was sent to (our sgid_index). */
int ibv_init_ah_from_wc(ibv_context *context, uint8_t port_num, ibv_wc *wc, ibv_grh *grh,
                        ibv_ah_attr *ah_attr) {
    if (context == nullptr || wc == nullptr || grh == nullptr || ah_attr == nullptr ||
        (wc->wc_flags & IBV_WC_GRH) == 0) {
        errno = EINVAL;
        return -1;
    }
    const auto *b = reinterpret_cast<const uint8_t *>(grh);
    uint8_t from[16], to[16], tclass;
    uint32_t flow = 0;
    if ((b[0] >> 4) == 6) {
        std::memcpy(from, b + 8, 16);
        std::memcpy(to, b + 24, 16);
        tclass = static_cast<uint8_t>((b[0] << 4) | (b[1] >> 4));
        flow = (uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | b[3]) & 0xFFFFF;
    } else if ((b[20] >> 4) == 4) {
        mapped_gid(b + 20 + 12, from);
        mapped_gid(b + 20 + 16, to);
        tclass = b[21];
    } else {
        errno = EINVAL; /* neither header: not a RoCEv2 datagram's GRH */
        return -1;
    }
    const std::vector<GidEntry> gids = context_of(context)->entry->dev->gids();
    size_t idx = 0;
    while (idx < gids.size() && std::memcmp(gids[idx].gid.raw, to, 16) != 0)
        ++idx;
    if (idx == gids.size()) {
        errno = ENOENT; /* sent to a GID that is not ours (any more) */
        return -1;
    }
    *ah_attr = ibv_ah_attr{};
    ah_attr->is_global = 1;
    std::memcpy(ah_attr->grh.dgid.raw, from, 16);
    ah_attr->grh.sgid_index = static_cast<uint8_t>(idx);
    ah_attr->grh.hop_limit = 0xFF;
    ah_attr->grh.traffic_class = tclass;
    ah_attr->grh.flow_label = flow;
    ah_attr->dlid = wc->slid;
    ah_attr->sl = wc->sl;
    ah_attr->port_num = port_num;
    return 0;
}

ibv_ah *ibv_create_ah_from_wc(ibv_pd *pd, ibv_wc *wc, ibv_grh *grh, uint8_t port_num) {
    ibv_ah_attr a;
    if (pd == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a) != 0)
        return nullptr;
    return ibv_create_ah(pd, &a);
}

ibv_srq *ibv_create_srq(ibv_pd *pd, ibv_srq_init_attr *init) {
    if (pd == nullptr || init == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    if (init->attr.srq_limit != 0) {
        errno = EOPNOTSUPP; /* SRQ limit events: not in this library yet */
        return nullptr;
    }
    SrqInitAttr a;
    a.max_wr = init->attr.max_wr;
    a.max_sge = init->attr.max_sge;
    auto r = outer_of<Pd>(pd)->dpd->create_srq(a);
    if (!r) {
        status_errno(r.status());
        return nullptr;
    }
    auto *s = static_cast<Srq *>(std::calloc(1, sizeof(Srq)));
    if (s == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    s->dsrq = r.value().release();
    s->attr = init->attr;
    s->srq.context = pd->context;
    s->srq.srq_context = init->srq_context;
    s->srq.pd = pd;
    hold(outer_of<Pd>(pd)->users);
    pthread_mutex_init(&s->srq.mutex, nullptr);
    pthread_cond_init(&s->srq.cond, nullptr);
    live_add(Kind::Srq, s);
    return &s->srq;
}

int ibv_query_srq(ibv_srq *srq, ibv_srq_attr *attr) {
    if (srq == nullptr || attr == nullptr)
        return errno = EINVAL;
    *attr = outer_of<Srq>(srq)->attr;
    return 0;
}

int ibv_destroy_srq(ibv_srq *srq) {
    if (srq == nullptr)
        return errno = EINVAL;
    Srq *s = outer_of<Srq>(srq);
    if (in_use(s->users))
        return errno = EBUSY;
    live_remove(Kind::Srq, s);
    release(outer_of<Pd>(srq->pd)->users);
    delete s->dsrq;
    pthread_mutex_destroy(&s->srq.mutex);
    pthread_cond_destroy(&s->srq.cond);
    std::free(s);
    return 0;
}

/* Resolves the next hop's MAC (ARP / ND) before it returns, as droce's create_ah does. */
ibv_ah *ibv_create_ah(ibv_pd *pd, ibv_ah_attr *attr) {
    AhAttr d;
    if (pd == nullptr || attr == nullptr || !to_droce_ah(*attr, d)) {
        errno = EINVAL;
        return nullptr;
    }
    auto r = outer_of<Pd>(pd)->dpd->create_ah(d);
    if (!r) {
        status_errno(r.status());
        return nullptr;
    }
    auto *a = static_cast<Ah *>(std::calloc(1, sizeof(Ah)));
    if (a == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    a->dah = r.value().release();
    a->ah.context = pd->context;
    a->ah.pd = pd;
    hold(outer_of<Pd>(pd)->users);
    live_add(Kind::Ah, a);
    return &a->ah;
}

int ibv_destroy_ah(ibv_ah *ah) {
    if (ah == nullptr)
        return errno = EINVAL;
    Ah *a = outer_of<Ah>(ah);
    live_remove(Kind::Ah, a);
    release(outer_of<Pd>(ah->pd)->users);
    delete a->dah;
    std::free(a);
    return 0;
}

} // extern "C"
