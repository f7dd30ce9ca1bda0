/* SPDX-License-Identifier: BSD-3-Clause */
/* rdma_cm_id's life: create and destroy, bind, resolve, listen, connect, accept, reject,
 * disconnect, and the synchronous use (an id without a channel: each call waits for its
 * own event, as librdmacm's rdma_create_ep ids do). Addresses are IPv4 or IPv6
 * (rdmacm_addr.h); ids of the TCP port space connect RC QPs (REQ/REP/RTU), those of the UDP
 * port space (IPv4 only: droce's SIDR has no IPv6 form yet) resolve a UD QP's
 * number and Q_Key (SIDR: rdma_connect sends the SIDR_REQ, rdma_accept / rdma_reject the
 * SIDR_REP, as the kernel's rdma_cm). The CM's work runs under the service's lock. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "rdmacm_service.h"

using namespace droce;
using namespace droce::rdmacm;

namespace droce::rdmacm {

QueuePair *droce_qp(ibv_qp *qp) { return verbs::outer_of<verbs::Qp>(qp)->dqp; }

Id *new_id(EventChannel *channel, void *context, rdma_port_space ps, ibv_qp_type qp_type) {
    auto *id = new Id{};
    id->st = new IdState();
    if (channel == nullptr) {
        id->st->sync = true;
        channel = new_channel();
        if (channel == nullptr) {
            delete id->st;
            delete id;
            return nullptr;
        }
    }
    id->st->channel = channel;
    id->id.channel = &channel->channel;
    id->id.context = context;
    id->id.ps = ps;
    id->id.qp_type = qp_type;
    return id;
}

} // namespace droce::rdmacm

namespace {

int fail(int e) {
    errno = e;
    return -1;
}

uint32_t random_psn() {
    static thread_local std::mt19937 rng{std::random_device{}()};
    return rng() & 0xFFFFFF;
}

/* A synchronous id's call waits for the event it caused: want, or the error it got. The
 * event stays in id->event until the next one (librdmacm's ucma_complete). */
int wait_own(Id *id, rdma_cm_event_type want) {
    if (!id->st->sync)
        return 0;
    Event *e = nullptr;
    if (int err = take_event(id->st->channel, &e); err != 0)
        return fail(err);
    if (id->id.event != nullptr)
        delete reinterpret_cast<Event *>(id->id.event);
    id->id.event = &e->ev;
    if (e->ev.event == want)
        return 0;
    switch (e->ev.event) {
    case RDMA_CM_EVENT_REJECTED:
        return fail(ECONNREFUSED);
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_CONNECT_ERROR:
        return fail(ETIMEDOUT);
    default:
        return fail(e->ev.status < 0 ? -e->ev.status : EIO);
    }
}

/* The id's source and destination addresses. */
CmAddr src_of(const rdma_cm_id *id) {
    CmAddr a;
    parse_addr(&id->route.addr.src_addr, a);
    return a;
}
CmAddr dst_of(const rdma_cm_id *id) {
    CmAddr a;
    parse_addr(&id->route.addr.dst_addr, a);
    return a;
}

/* What the kernel's rdma_cm does with a connection's numbers: retry counts are 3-bit
 * fields (fio asks for 10), READ/atomic depths at most what the device has (0xFF, the
 * header's RDMA_MAX_RESP_RES, means just that). */
uint8_t clamp_retry(uint8_t n) { return n > 7 ? 7 : n; }
uint8_t clamp_rd_atomic(uint8_t n) {
    constexpr uint8_t kDeviceMax = 16; /* droce's per-QP READ/atomic limit */
    return n > kDeviceMax ? kDeviceMax : n;
}

/* rdma_connect of a UD id: the SIDR_REQ (rdma_cm's IP header, then up to 180 bytes of
 * the caller's). The answer comes as ESTABLISHED with param.ud, or UNREACHABLE. */
int connect_ud(Id *id, const rdma_conn_param *param) {
    IdState &st = *id->st;
    CmSidrParam p;
    if (param != nullptr) {
        if (param->private_data_len > kCmSidrReqPrivateData ||
            (param->private_data_len != 0 && param->private_data == nullptr))
            return fail(EINVAL);
        p.private_data = param->private_data;
        p.private_data_len = param->private_data_len;
    }
    const CmAddr dst = dst_of(&id->id);
    if (!dst.is_v4())
        return fail(EAFNOSUPPORT); /* SIDR over IPv6: not in droce's CM yet */
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    {
        std::lock_guard<std::mutex> lk(s->mu);
        st.conn = st.dev->cm->channel().resolve_ud(dst.v4(), dst.port, p, s->now_ns());
        if (st.conn == 0)
            return fail(ENOMEM);
        s->add_conn(st.dev, st.conn, id);
    }
    return wait_own(id, RDMA_CM_EVENT_ESTABLISHED);
}

/* rdma_accept / rdma_reject of a UD id: the SIDR_REP, with the number of the id's QP (or
 * the caller's qp_num when it has none) and rdma_cm's UDP Q_Key, or status "rejected".
 * No event follows on this side (the kernel's neither): the id is done with the CM. */
int answer_ud(Id *id, const rdma_conn_param *param, bool accept, const void *pd, uint8_t len) {
    IdState &st = *id->st;
    uint32_t qpn = 0;
    if (accept) {
        if (id->id.qp != nullptr)
            qpn = id->id.qp->qp_num;
        else if (param != nullptr && param->qp_num != 0)
            qpn = param->qp_num;
        else
            return fail(EINVAL);
        if (param != nullptr) {
            pd = param->private_data;
            len = param->private_data_len;
        }
    }
    if (len > kCmSidrRepPrivateData || (len != 0 && pd == nullptr))
        return fail(EINVAL);
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    std::lock_guard<std::mutex> lk(s->mu);
    CmChannel &ch = st.dev->cm->channel();
    const bool ok = accept ? ch.sidr_accept(st.conn, qpn, kRdmaUdpQkey, pd, len, s->now_ns())
                           : ch.sidr_reject(st.conn, pd, len, s->now_ns());
    if (!ok)
        return fail(EINVAL);
    s->drop_conn(st.dev, st.conn);
    st.conn = 0;
    return 0;
}

void set_device(Id *id, ServiceDev *d) {
    id->st->dev = d;
    id->id.verbs = d->ctx;
    id->id.pd = d->pd;
    id->id.port_num = 1;
}

} // namespace

extern "C" {

int rdma_create_id(rdma_event_channel *channel, rdma_cm_id **id, void *context,
                   rdma_port_space ps) {
    if (id == nullptr)
        return fail(EINVAL);
    if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP)
        /* RDMA_PS_IB and IPoIB are InfiniBand's. */
        return fail(EOPNOTSUPP);
    if (Service::get() == nullptr)
        return -1;
    Id *i = new_id(reinterpret_cast<EventChannel *>(channel), context, ps,
                   ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC);
    if (i == nullptr)
        return fail(ENOMEM);
    *id = &i->id;
    return 0;
}

int rdma_destroy_id(rdma_cm_id *cm_id) {
    if (cm_id == nullptr)
        return fail(EINVAL);
    Id *id = id_of(cm_id);
    IdState &st = *id->st;
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    {
        std::lock_guard<std::mutex> lk(s->mu);
        if (st.role == IdRole::Listener) {
            const uint16_t port = src_of(cm_id).port;
            for (auto &d : s->devs)
                if (st.wildcard || d.get() == st.dev) {
                    if (cm_id->ps == RDMA_PS_UDP)
                        d->cm->channel().unlisten_ud(port);
                    else
                        d->cm->channel().unlisten(port);
                }
            s->drop_listener(id);
        }
        if (st.conn != 0 && st.dev != nullptr && cm_id->ps == RDMA_PS_UDP) {
            /* A UD id has no connection: an unanswered SIDR_REQ is refused (as the
             * kernel's), a SIDR_REQ of ours just loses its answer. */
            if (st.role == IdRole::Passive)
                st.dev->cm->channel().sidr_reject(st.conn, nullptr, 0, s->now_ns());
            s->drop_conn(st.dev, st.conn);
        } else if (st.conn != 0 && st.dev != nullptr) {
            /* A connected id leaves as the kernel's does: a DREQ to the peer. */
            st.dev->cm->release(st.conn);
            st.dev->cm->disconnect(st.conn);
            s->drop_conn(st.dev, st.conn);
        }
    }
    purge_events(id);
    /* What the application still holds of this id's events: rdma-core's destroy waits
     * for their acks (rping's main destroys its id and channel while its CM thread
     * handles the last event; without the wait the channel would go under it). */
    wait_acked(st);
    if (cm_id->event != nullptr)
        delete reinterpret_cast<Event *>(cm_id->event);
    if (st.sync)
        free_channel(st.channel);
    delete id->st;
    delete id;
    return 0;
}

int rdma_bind_addr(rdma_cm_id *cm_id, sockaddr *addr) {
    CmAddr a;
    if (cm_id == nullptr)
        return fail(EINVAL);
    if (int e = parse_addr(addr, a); e != 0)
        return fail(e);
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    Id *id = id_of(cm_id);
    std::lock_guard<std::mutex> lk(s->mu);
    if (a.any()) {
        id->st->wildcard = true; /* every device; id->verbs stays NULL, as the kernel's */
    } else {
        ServiceDev *d = s->owner_of(a);
        if (d == nullptr)
            return fail(EADDRNOTAVAIL);
        set_device(id, d);
    }
    if (a.port == 0)
        a.port = s->ephemeral_port();
    write_addr(a, cm_id->route.addr.src_storage);
    return 0;
}

int rdma_resolve_addr(rdma_cm_id *cm_id, sockaddr *src_addr, sockaddr *dst_addr, int) {
    CmAddr dst, src;
    if (cm_id == nullptr)
        return fail(EINVAL);
    if (int e = parse_addr(dst_addr, dst); e != 0)
        return fail(e);
    const bool given_src = src_addr != nullptr;
    if (given_src) {
        if (int e = parse_addr(src_addr, src); e != 0)
            return fail(e);
        if (src.is_v4() != dst.is_v4())
            return fail(EINVAL); /* one IP version per connection */
    }
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    Id *id = id_of(cm_id);
    {
        std::lock_guard<std::mutex> lk(s->mu);
        const bool by_src = given_src && !src.any();
        ServiceDev *d = by_src ? s->owner_of(src) : s->route_to(dst);
        if (d == nullptr)
            return fail(by_src ? EADDRNOTAVAIL : ENODEV);
        CmAddr my;
        if (by_src)
            my = src;
        else if (!Service::local_for(*d, dst, my))
            return fail(EADDRNOTAVAIL); /* no address of dst's IP version (or scope) */
        set_device(id, d);
        const CmAddr bound = src_of(cm_id);
        my.port = bound.port != 0 ? bound.port : src.port != 0 ? src.port : s->ephemeral_port();
        write_addr(my, cm_id->route.addr.src_storage);
        write_addr(dst, cm_id->route.addr.dst_storage);
        id->st->role = IdRole::Active;
        post_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
    }
    return wait_own(id, RDMA_CM_EVENT_ADDR_RESOLVED);
}

int rdma_resolve_route(rdma_cm_id *cm_id, int) {
    if (cm_id == nullptr || id_of(cm_id)->st->dev == nullptr)
        return fail(EINVAL);
    /* RoCE has no path records to ask for: the next hop is resolved (ARP) when the QP
     * goes to RTR. */
    post_event(id_of(cm_id), RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    return wait_own(id_of(cm_id), RDMA_CM_EVENT_ROUTE_RESOLVED);
}

int rdma_listen(rdma_cm_id *cm_id, int) {
    if (cm_id == nullptr)
        return fail(EINVAL);
    Id *id = id_of(cm_id);
    const sa_family_t fam = cm_id->route.addr.src_addr.sa_family;
    if (fam != AF_INET && fam != AF_INET6) {
        sockaddr_in any{};
        any.sin_family = AF_INET;
        if (rdma_bind_addr(cm_id, reinterpret_cast<sockaddr *>(&any)) != 0)
            return -1;
    }
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    const uint16_t port = src_of(cm_id).port;
    const bool ud = cm_id->ps == RDMA_PS_UDP;
    std::lock_guard<std::mutex> lk(s->mu);
    if (!s->add_listener(cm_id->ps, port, id))
        return fail(EADDRINUSE);
    for (auto &d : s->devs) {
        if (!id->st->wildcard && d.get() != id->st->dev)
            continue;
        if (!(ud ? d->cm->channel().listen_ud(port) : d->cm->channel().listen(port))) {
            s->drop_listener(id);
            return fail(EADDRINUSE);
        }
    }
    id->st->role = IdRole::Listener;
    return 0;
}

int rdma_connect(rdma_cm_id *cm_id, rdma_conn_param *param) {
    if (cm_id == nullptr)
        return fail(EINVAL);
    Id *id = id_of(cm_id);
    IdState &st = *id->st;
    if (st.dev == nullptr || st.role != IdRole::Active || st.conn != 0)
        return fail(EINVAL);
    if (cm_id->ps == RDMA_PS_UDP)
        return connect_ud(id, param);
    if (cm_id->qp == nullptr) /* rdma_connect with param->qp_num: a QP of the caller's */
        return fail(EOPNOTSUPP);
    if (param != nullptr && param->private_data_len > 56)
        return fail(EINVAL); /* a REQ carries 56 bytes after rdma_cm's IP header */
    CmConnectParam p;
    p.rq_psn = random_psn();
    p.path_mtu = st.dev->path_mtu;
    if (param != nullptr) {
        p.responder_resources = clamp_rd_atomic(param->responder_resources);
        p.initiator_depth = clamp_rd_atomic(param->initiator_depth);
        p.retry_count = clamp_retry(param->retry_count);
        p.rnr_retry_count = clamp_retry(param->rnr_retry_count);
        p.private_data = param->private_data;
        p.private_data_len = param->private_data_len;
    }
    const CmAddr dst = dst_of(cm_id);
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    {
        std::lock_guard<std::mutex> lk(s->mu);
        QueuePair &qp = *droce_qp(cm_id->qp);
        st.conn = dst.is_v4() ? st.dev->cm->connect(dst.v4(), dst.port, qp, p)
                              : st.dev->cm->connect6(dst.gid, dst.port, qp, p);
        if (st.conn == 0)
            return fail(ENOMEM);
        s->add_conn(st.dev, st.conn, id);
    }
    return wait_own(id, RDMA_CM_EVENT_ESTABLISHED);
}

int rdma_accept(rdma_cm_id *cm_id, rdma_conn_param *param) {
    if (cm_id == nullptr)
        return fail(EINVAL);
    Id *id = id_of(cm_id);
    IdState &st = *id->st;
    if (st.role != IdRole::Passive || st.conn == 0)
        return fail(EINVAL);
    if (cm_id->ps == RDMA_PS_UDP)
        return answer_ud(id, param, true, nullptr, 0);
    if (cm_id->qp == nullptr)
        return fail(EOPNOTSUPP);
    CmAcceptParam p;
    p.rq_psn = random_psn();
    if (param != nullptr) {
        p.responder_resources = clamp_rd_atomic(param->responder_resources);
        p.initiator_depth = clamp_rd_atomic(param->initiator_depth);
        p.rnr_retry_count = clamp_retry(param->rnr_retry_count);
        p.private_data = param->private_data;
        p.private_data_len = param->private_data_len;
    }
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    {
        std::lock_guard<std::mutex> lk(s->mu);
        if (!st.dev->cm->accept(st.conn, *droce_qp(cm_id->qp), p))
            return fail(EINVAL);
    }
    return wait_own(id, RDMA_CM_EVENT_ESTABLISHED);
}

int rdma_reject(rdma_cm_id *cm_id, const void *private_data, uint8_t private_data_len) {
    if (cm_id == nullptr)
        return fail(EINVAL);
    IdState &st = *id_of(cm_id)->st;
    if (st.role != IdRole::Passive || st.conn == 0)
        return fail(EINVAL);
    if (cm_id->ps == RDMA_PS_UDP)
        return answer_ud(id_of(cm_id), nullptr, false, private_data, private_data_len);
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    std::lock_guard<std::mutex> lk(s->mu);
    st.dev->cm->release(st.conn);
    if (!st.dev->cm->channel().reject(st.conn, private_data, private_data_len, s->now_ns()))
        return fail(EINVAL);
    return 0;
}

int rdma_disconnect(rdma_cm_id *cm_id) {
    if (cm_id == nullptr)
        return fail(EINVAL);
    IdState &st = *id_of(cm_id)->st;
    if (st.conn == 0)
        return fail(EINVAL);
    if (cm_id->qp != nullptr) {
        /* The QP stops at once, as librdmacm's (its receives flush with errors). */
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_ERR;
        ibv_modify_qp(cm_id->qp, &a, IBV_QP_STATE);
    }
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    std::lock_guard<std::mutex> lk(s->mu);
    st.dev->cm->disconnect(st.conn);
    return 0;
}

int rdma_notify(rdma_cm_id *cm_id, ibv_event_type event) {
    if (cm_id == nullptr)
        return fail(EINVAL);
    IdState &st = *id_of(cm_id)->st;
    if (event != IBV_EVENT_COMM_EST)
        return 0; /* the kernel's CM acts on COMM_EST only */
    if (st.conn == 0)
        return fail(EINVAL);
    Service *s = Service::get();
    if (s == nullptr)
        return -1; /* errno set: no CM here */
    std::lock_guard<std::mutex> lk(s->mu);
    st.dev->cm->channel().notify_comm_est(st.conn, s->now_ns());
    return 0;
}

int rdma_get_request(rdma_cm_id *listen, rdma_cm_id **id) {
    if (listen == nullptr || id == nullptr)
        return fail(EINVAL);
    Id *l = id_of(listen);
    if (!l->st->sync || l->st->role != IdRole::Listener)
        return fail(EINVAL);
    for (;;) {
        Event *e = nullptr;
        if (int err = take_event(l->st->channel, &e); err != 0)
            return fail(err);
        if (e->ev.event != RDMA_CM_EVENT_CONNECT_REQUEST) {
            delete e;
            continue;
        }
        Id *child = id_of(e->ev.id);
        child->id.event = &e->ev;
        if (l->st->has_ep_attr) {
            ibv_qp_init_attr attr = l->st->ep_attr;
            if (rdma_create_qp(&child->id, l->st->ep_pd, &attr) != 0) {
                const int err = errno;
                rdma_reject(&child->id, nullptr, 0);
                rdma_destroy_id(&child->id);
                return fail(err);
            }
        }
        *id = &child->id;
        return 0;
    }
}

int rdma_migrate_id(rdma_cm_id *cm_id, rdma_event_channel *channel) {
    if (cm_id == nullptr)
        return fail(EINVAL);
    Id *id = id_of(cm_id);
    Service *s = Service::get();
    if (s == nullptr)
        return -1;                         /* errno set: no CM here */
    std::lock_guard<std::mutex> lk(s->mu); /* no event is posted meanwhile */
    purge_events(id);
    if (id->st->sync)
        free_channel(id->st->channel);
    if (channel == nullptr) {
        id->st->channel = new_channel();
        if (id->st->channel == nullptr)
            return fail(ENOMEM);
        id->st->sync = true;
    } else {
        id->st->channel = reinterpret_cast<EventChannel *>(channel);
        id->st->sync = false;
    }
    cm_id->channel = &id->st->channel->channel;
    return 0;
}

int rdma_set_option(rdma_cm_id *cm_id, int level, int optname, void *, size_t) {
    if (cm_id == nullptr)
        return fail(EINVAL);
    /* Address reuse: droce's CM puts no wait on a port after its listener goes, so there
     * is nothing to lift. Every other option (TOS, path records, timeouts) is refused,
     * never accepted and ignored. */
    if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_REUSEADDR)
        return 0;
    return fail(EOPNOTSUPP);
}

} // extern "C"
