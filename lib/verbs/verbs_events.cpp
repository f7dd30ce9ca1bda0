/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion channels and asynchronous events: droce's CompletionChannel and the device's
 * event queue under the verbs calls. The descriptors are droce's eventfds (channel->fd,
 * context->async_fd): an application polls them, sets O_NONBLOCK on them, or blocks in
 * ibv_get_cq_event / ibv_get_async_event, as with the kernel's. Events name droce's
 * objects; the live registry maps them to the application's and counts them as handed
 * out, so that ibv_destroy_cq / ibv_destroy_qp wait for their acks as rdma-core does. */
#include <cerrno>
#include <cstdlib>

#include "verbs_objects.h"
#include "verbs_process.h"

using namespace droce;
using namespace droce::verbs;

namespace droce::verbs {

int req_notify_cq(ibv_cq *cq, int solicited_only) {
    if (cq->channel == nullptr)
        return 0; /* armed, with nowhere to report: as a kernel CQ without a channel */
    return status_errno(outer_of<Cq>(cq)->dcq->req_notify(solicited_only != 0));
}

} // namespace droce::verbs

namespace {

bool is_qp_event(AsyncEventType t) {
    switch (t) {
    case AsyncEventType::QpFatal:
    case AsyncEventType::QpReqErr:
    case AsyncEventType::QpAccessErr:
    case AsyncEventType::CommEst:
    case AsyncEventType::SqDrained:
    case AsyncEventType::PathMig:
    case AsyncEventType::PathMigErr:
    case AsyncEventType::QpLastWqeReached:
        return true;
    default:
        return false;
    }
}

bool is_port_event(AsyncEventType t) {
    switch (t) {
    case AsyncEventType::PortActive:
    case AsyncEventType::PortErr:
    case AsyncEventType::LidChange:
    case AsyncEventType::PkeyChange:
    case AsyncEventType::SmChange:
    case AsyncEventType::ClientReregister:
    case AsyncEventType::GidChange:
        return true;
    default:
        return false;
    }
}

/* droce's event as verbs': false when verbs has no such event (droce's PauseStorm) or
 * its object is gone (destroyed after the event was raised): the caller reads on. */
bool to_verbs_event(const Device *dev, const AsyncEvent &d, ibv_async_event &ev) {
    ev.event_type = static_cast<ibv_event_type>(d.type);
    if (is_qp_event(d.type)) {
        Qp *q = deliver_qp_async_event(dev, d.qp_num);
        ev.element.qp = q != nullptr ? &q->qp : nullptr;
        return q != nullptr;
    }
    if (d.type == AsyncEventType::CqErr) {
        Cq *c = deliver_cq_async_event(d.cq);
        ev.element.cq = c != nullptr ? &c->cq : nullptr;
        return c != nullptr;
    }
    if (is_port_event(d.type)) {
        ev.element.port_num = 1;
        return true;
    }
    if (d.type == AsyncEventType::DeviceFatal) {
        ev.element.port_num = 0;
        return true;
    }
    return false; /* SRQ events: droce raises none yet (no SRQ limit) */
}

} // namespace

extern "C" {

ibv_comp_channel *ibv_create_comp_channel(ibv_context *context) {
    if (context == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    auto r = context_of(context)->entry->dev->create_comp_channel();
    if (!r) {
        status_errno(r.status());
        return nullptr;
    }
    auto *ch = static_cast<Channel *>(std::calloc(1, sizeof(Channel)));
    if (ch == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    ch->dch = r.value().release();
    ch->channel.context = context;
    ch->channel.fd = ch->dch->fd();
    ch->channel.refcnt = 0;
    live_add(Kind::Channel, ch);
    return &ch->channel;
}

int ibv_destroy_comp_channel(ibv_comp_channel *channel) {
    if (channel == nullptr)
        return errno = EINVAL;
    if (__atomic_load_n(&channel->refcnt, __ATOMIC_RELAXED) != 0)
        return errno = EBUSY; /* rdma-core's answer while CQs use it */
    Channel *ch = outer_of<Channel>(channel);
    live_remove(Kind::Channel, ch);
    delete ch->dch;
    std::free(ch);
    return 0;
}

int ibv_get_cq_event(ibv_comp_channel *channel, ibv_cq **cq, void **cq_context) {
    if (channel == nullptr || cq == nullptr || cq_context == nullptr) {
        errno = EINVAL;
        return -1;
    }
    CompletionChannel *dch = outer_of<Channel>(channel)->dch;
    for (;;) {
        Result<CompletionQueue *> r = dch->get_event();
        if (!r) {
            status_errno(r.status());
            return -1;
        }
        Cq *c = deliver_comp_event(r.value());
        if (c == nullptr)
            continue; /* its CQ is being destroyed */
        *cq = &c->cq;
        *cq_context = c->cq.cq_context;
        return 0;
    }
}

void ibv_ack_cq_events(ibv_cq *cq, unsigned int nevents) {
    if (cq == nullptr)
        return;
    pthread_mutex_lock(&cq->mutex);
    cq->comp_events_completed += nevents;
    pthread_cond_signal(&cq->cond);
    pthread_mutex_unlock(&cq->mutex);
}

int ibv_get_async_event(ibv_context *context, ibv_async_event *event) {
    if (context == nullptr || event == nullptr) {
        errno = EINVAL;
        return -1;
    }
    Device *dev = context_of(context)->entry->dev;
    for (;;) {
        AsyncEvent d;
        if (Status st = dev->wait_async_event(d); !st) {
            status_errno(st);
            return -1;
        }
        if (to_verbs_event(dev, d, *event))
            return 0;
    }
}

void ibv_ack_async_event(ibv_async_event *event) {
    if (event == nullptr)
        return;
    pthread_mutex_t *mu = nullptr;
    pthread_cond_t *cond = nullptr;
    uint32_t *count = nullptr;
    if (event->event_type == IBV_EVENT_CQ_ERR && event->element.cq != nullptr) {
        ibv_cq *cq = event->element.cq;
        mu = &cq->mutex, cond = &cq->cond, count = &cq->async_events_completed;
    } else if (is_qp_event(static_cast<AsyncEventType>(event->event_type)) &&
               event->element.qp != nullptr) {
        ibv_qp *qp = event->element.qp;
        mu = &qp->mutex, cond = &qp->cond, count = &qp->events_completed;
    }
    if (mu == nullptr)
        return; /* port and device events hold nothing */
    pthread_mutex_lock(mu);
    ++*count;
    pthread_cond_signal(cond);
    pthread_mutex_unlock(mu);
}

} // extern "C"
