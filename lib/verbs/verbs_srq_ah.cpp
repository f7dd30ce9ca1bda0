/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared receive queues and address handles: droce's SharedReceiveQueue and
 * AddressHandle (UD sends name one each). */
#include <cerrno>
#include <cstdlib>

#include "verbs_objects.h"
#include "verbs_process.h"

using namespace droce;
using namespace droce::verbs;

extern "C" {

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
