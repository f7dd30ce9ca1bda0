/* SPDX-License-Identifier: BSD-3-Clause */
/* Protection domains and memory regions: droce's ProtectionDomain and MemoryRegion. */
#include <cerrno>
#include <cstdlib>

#include "verbs_objects.h"
#include "verbs_process.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

using namespace droce;
using namespace droce::verbs;

namespace {

/* The access flags droce has (ibv_access_flags' first four, same values); the optional
 * range (IBV_ACCESS_RELAXED_ORDERING...) may be ignored by definition. */
constexpr unsigned kDroceAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

ibv_mr *reg_mr(ibv_pd *pd, void *addr, size_t length, uint64_t iova, unsigned access) {
    if (pd == nullptr || length == 0) {
        errno = EINVAL;
        return nullptr;
    }
    /* Memory windows, ODP, zero-based or other virtual addresses: not in droce. */
    if ((access & ~(kDroceAccess | IBV_ACCESS_OPTIONAL_RANGE)) != 0 ||
        iova != reinterpret_cast<uintptr_t>(addr)) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    auto r = outer_of<Pd>(pd)->dpd->reg_mr(addr, length, access & kDroceAccess);
    if (!r) {
        status_errno(r.status());
        return nullptr;
    }
    auto *m = static_cast<Mr *>(std::calloc(1, sizeof(Mr)));
    if (m == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    m->dmr = r.value().release();
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->mr.lkey = m->dmr->lkey();
    m->mr.rkey = m->dmr->rkey();
    hold(outer_of<Pd>(pd)->users);
    live_add(Kind::Mr, m);
    return &m->mr;
}

} // namespace

extern "C" {

ibv_pd *ibv_alloc_pd(ibv_context *context) {
    if (context == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    auto r = context_of(context)->entry->dev->alloc_pd();
    if (!r) {
        status_errno(r.status());
        return nullptr;
    }
    auto *p = static_cast<Pd *>(std::calloc(1, sizeof(Pd)));
    if (p == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    p->dpd = r.value().release();
    p->pd.context = context;
    live_add(Kind::Pd, p);
    return &p->pd;
}

int ibv_dealloc_pd(ibv_pd *pd) {
    if (pd == nullptr)
        return errno = EINVAL;
    Pd *p = outer_of<Pd>(pd);
    if (in_use(p->users))
        return errno = EBUSY;
    live_remove(Kind::Pd, p);
    delete p->dpd;
    std::free(p);
    return 0;
}

ibv_mr *ibv_reg_mr(ibv_pd *pd, void *addr, size_t length, int access) {
    return reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                  static_cast<unsigned>(access));
}

ibv_mr *ibv_reg_mr_iova(ibv_pd *pd, void *addr, size_t length, uint64_t iova, int access) {
    return reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr *ibv_reg_mr_iova2(ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                         unsigned int access) {
    return reg_mr(pd, addr, length, iova, access);
}

int ibv_dereg_mr(ibv_mr *mr) {
    if (mr == nullptr)
        return errno = EINVAL;
    Mr *m = outer_of<Mr>(mr);
    live_remove(Kind::Mr, m);
    release(outer_of<Pd>(mr->pd)->users);
    delete m->dmr;
    std::free(m);
    return 0;
}

} // extern "C"
