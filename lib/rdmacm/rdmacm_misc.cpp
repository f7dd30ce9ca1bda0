/* SPDX-License-Identifier: BSD-3-Clause */
/* The rest of librdmacm's interface: endpoints (rdma_create_ep: a synchronous id with its
 * QP), rdma_getaddrinfo for IP names, the device list, ports; and what droce does not
 * have, each failing as the call documents failure (-1 or NULL, errno EOPNOTSUPP):
 * multicast, ECE, and rsockets. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "rdmacm_service.h"

using namespace droce;
using namespace droce::rdmacm;

namespace {

int fail(int e) {
    errno = e;
    return -1;
}

sockaddr *copy_addr(const sockaddr *a, socklen_t len) {
    auto *c = static_cast<sockaddr *>(std::calloc(1, sizeof(sockaddr_storage)));
    if (c != nullptr)
        std::memcpy(c, a, len);
    return c;
}

/* The first IPv4 answer of a name that has both (what droce's devices are most often
 * given), else the first IPv6 one; nullptr when it has neither. */
const addrinfo *prefer_ipv4(const addrinfo *ai) {
    const addrinfo *v6 = nullptr;
    for (; ai != nullptr; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET)
            return ai;
        if (ai->ai_family == AF_INET6 && v6 == nullptr)
            v6 = ai;
    }
    return v6;
}

/* An id's port (network order), either family; 0 without an address. */
__be16 port_of(const sockaddr &a) {
    CmAddr c;
    return parse_addr(&a, c) == 0 ? htons(c.port) : 0;
}

} // namespace

extern "C" {

int rdma_getaddrinfo(const char *node, const char *service, const rdma_addrinfo *hints,
                     rdma_addrinfo **res) {
    if (res == nullptr || (node == nullptr && service == nullptr))
        return fail(EINVAL);
    const bool passive = hints != nullptr && (hints->ai_flags & RAI_PASSIVE) != 0;
    const int ps =
        hints != nullptr && hints->ai_port_space != 0 ? hints->ai_port_space : RDMA_PS_TCP;
    if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP)
        return fail(EOPNOTSUPP);
    const int family = hints != nullptr ? hints->ai_family : 0;
    if (family != 0 && family != AF_INET && family != AF_INET6)
        return fail(EAFNOSUPPORT); /* AF_IB: InfiniBand's */
    addrinfo h{}, *all = nullptr;
    h.ai_family = family != 0 ? family : AF_UNSPEC;
    h.ai_socktype = SOCK_STREAM;
    h.ai_flags = (passive ? AI_PASSIVE : 0) |
                 (hints != nullptr && (hints->ai_flags & RAI_NUMERICHOST) ? AI_NUMERICHOST : 0);
    if (const int e = getaddrinfo(node, service, &h, &all); e != 0 || all == nullptr)
        return fail(e == EAI_SYSTEM ? errno : EADDRNOTAVAIL);
    const addrinfo *ai = prefer_ipv4(all);
    if (ai == nullptr) {
        freeaddrinfo(all);
        return fail(EADDRNOTAVAIL);
    }
    auto *r = static_cast<rdma_addrinfo *>(std::calloc(1, sizeof(rdma_addrinfo)));
    if (r == nullptr) {
        freeaddrinfo(all);
        return fail(ENOMEM);
    }
    r->ai_flags = passive ? RAI_PASSIVE : 0;
    r->ai_family = ai->ai_family;
    r->ai_qp_type = ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
    r->ai_port_space = ps;
    sockaddr *a = copy_addr(ai->ai_addr, ai->ai_addrlen);
    if (passive) {
        r->ai_src_addr = a;
        r->ai_src_len = ai->ai_addrlen;
    } else {
        r->ai_dst_addr = a;
        r->ai_dst_len = ai->ai_addrlen;
        if (hints != nullptr && hints->ai_src_addr != nullptr) {
            r->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
            r->ai_src_len = hints->ai_src_len;
        }
    }
    freeaddrinfo(all);
    *res = r;
    return 0;
}

void rdma_freeaddrinfo(rdma_addrinfo *res) {
    while (res != nullptr) {
        rdma_addrinfo *next = res->ai_next;
        std::free(res->ai_src_addr);
        std::free(res->ai_dst_addr);
        std::free(res->ai_src_canonname);
        std::free(res->ai_dst_canonname);
        std::free(res->ai_route);
        std::free(res->ai_connect);
        std::free(res);
        res = next;
    }
}

int rdma_create_ep(rdma_cm_id **id, rdma_addrinfo *res, ibv_pd *pd,
                   ibv_qp_init_attr *qp_init_attr) {
    if (id == nullptr || res == nullptr)
        return fail(EINVAL);
    rdma_cm_id *cm = nullptr;
    if (rdma_create_id(nullptr, &cm, nullptr, static_cast<rdma_port_space>(res->ai_port_space)) !=
        0)
        return -1;
    /* The QP's type is the address's (librdmacm's rule: rdma_client leaves it 0). */
    if (qp_init_attr != nullptr)
        qp_init_attr->qp_type =
            res->ai_qp_type != 0 ? static_cast<ibv_qp_type>(res->ai_qp_type) : IBV_QPT_RC;
    int rc;
    if ((res->ai_flags & RAI_PASSIVE) != 0) {
        rc = rdma_bind_addr(cm, res->ai_src_addr);
        if (rc == 0 && qp_init_attr != nullptr) {
            /* Kept for the connection requests (rdma_get_request makes their QPs). */
            IdState &st = *id_of(cm)->st;
            st.ep_attr = *qp_init_attr;
            st.ep_pd = pd;
            st.has_ep_attr = true;
        }
    } else {
        rc = rdma_resolve_addr(cm, res->ai_src_len ? res->ai_src_addr : nullptr, res->ai_dst_addr,
                               2000);
        if (rc == 0)
            rc = rdma_resolve_route(cm, 2000);
        if (rc == 0 && qp_init_attr != nullptr)
            rc = rdma_create_qp(cm, pd, qp_init_attr);
    }
    if (rc != 0) {
        const int e = errno;
        rdma_destroy_id(cm);
        return fail(e);
    }
    *id = cm;
    return 0;
}

void rdma_destroy_ep(rdma_cm_id *id) {
    if (id == nullptr)
        return;
    if (id->qp != nullptr)
        rdma_destroy_qp(id);
    if (id->srq != nullptr)
        rdma_destroy_srq(id);
    rdma_destroy_id(id);
}

ibv_context **rdma_get_devices(int *num_devices) {
    Service *s = Service::get();
    const size_t n = s != nullptr ? s->devs.size() : 0;
    auto **list = static_cast<ibv_context **>(std::calloc(n + 1, sizeof(ibv_context *)));
    if (list == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    for (size_t i = 0; i < n; ++i)
        list[i] = s->devs[i]->ctx;
    if (num_devices != nullptr)
        *num_devices = static_cast<int>(n);
    return list;
}

void rdma_free_devices(ibv_context **list) { std::free(list); }

__be16 rdma_get_src_port(rdma_cm_id *id) {
    return id != nullptr ? port_of(id->route.addr.src_addr) : 0;
}

__be16 rdma_get_dst_port(rdma_cm_id *id) {
    return id != nullptr ? port_of(id->route.addr.dst_addr) : 0;
}

/* ---- multicast (UD; droce has no multicast groups) and ECE ---- */
int rdma_join_multicast(rdma_cm_id *, sockaddr *, void *) { return fail(EOPNOTSUPP); }
int rdma_join_multicast_ex(rdma_cm_id *, rdma_cm_join_mc_attr_ex *, void *) {
    return fail(EOPNOTSUPP);
}
int rdma_leave_multicast(rdma_cm_id *, sockaddr *) { return fail(EOPNOTSUPP); }
int rdma_set_local_ece(rdma_cm_id *, ibv_ece *) { return fail(EOPNOTSUPP); }
int rdma_get_remote_ece(rdma_cm_id *, ibv_ece *) { return fail(EOPNOTSUPP); }
int rdma_reject_ece(rdma_cm_id *, const void *, uint8_t) { return fail(EOPNOTSUPP); }

/* ---- rsockets: not provided (sockets over RDMA are a library of their own) ---- */
int rsocket(int, int, int) { return fail(EOPNOTSUPP); }
int rbind(int, const sockaddr *, socklen_t) { return fail(EOPNOTSUPP); }
int rlisten(int, int) { return fail(EOPNOTSUPP); }
int raccept(int, sockaddr *, socklen_t *) { return fail(EOPNOTSUPP); }
int rconnect(int, const sockaddr *, socklen_t) { return fail(EOPNOTSUPP); }
int rshutdown(int, int) { return fail(EOPNOTSUPP); }
int rclose(int) { return fail(EOPNOTSUPP); }
ssize_t rrecv(int, void *, size_t, int) { return fail(EOPNOTSUPP); }
ssize_t rrecvfrom(int, void *, size_t, int, sockaddr *, socklen_t *) { return fail(EOPNOTSUPP); }
ssize_t rrecvmsg(int, msghdr *, int) { return fail(EOPNOTSUPP); }
ssize_t rsend(int, const void *, size_t, int) { return fail(EOPNOTSUPP); }
ssize_t rsendto(int, const void *, size_t, int, const sockaddr *, socklen_t) {
    return fail(EOPNOTSUPP);
}
ssize_t rsendmsg(int, const msghdr *, int) { return fail(EOPNOTSUPP); }
ssize_t rread(int, void *, size_t) { return fail(EOPNOTSUPP); }
ssize_t rreadv(int, const iovec *, int) { return fail(EOPNOTSUPP); }
ssize_t rwrite(int, const void *, size_t) { return fail(EOPNOTSUPP); }
ssize_t rwritev(int, const iovec *, int) { return fail(EOPNOTSUPP); }
int rpoll(pollfd *, nfds_t, int) { return fail(EOPNOTSUPP); }
int rselect(int, fd_set *, fd_set *, fd_set *, timeval *) { return fail(EOPNOTSUPP); }
int rgetpeername(int, sockaddr *, socklen_t *) { return fail(EOPNOTSUPP); }
int rgetsockname(int, sockaddr *, socklen_t *) { return fail(EOPNOTSUPP); }
int rsetsockopt(int, int, int, const void *, socklen_t) { return fail(EOPNOTSUPP); }
int rgetsockopt(int, int, int, void *, socklen_t *) { return fail(EOPNOTSUPP); }
int rfcntl(int, int, ...) { return fail(EOPNOTSUPP); }
off_t riomap(int, void *, size_t, int, int, off_t) {
    errno = EOPNOTSUPP;
    return -1;
}
int riounmap(int, void *, size_t) { return fail(EOPNOTSUPP); }
size_t riowrite(int, const void *, size_t, off_t, int) {
    errno = EOPNOTSUPP;
    return 0;
}

} // extern "C"
