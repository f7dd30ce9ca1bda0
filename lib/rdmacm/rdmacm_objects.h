/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce's librdmacm.so.1: the objects behind rdma_event_channel and rdma_cm_id, and the
 * process's CM service (rdmacm_service.cpp). Each object handed to the application starts
 * with the structure <rdma/rdma_cma.h> defines (the application reads id->verbs, id->qp,
 * id->route, event->param...) and points at droce's state; layouts come from the system
 * header, compiled against, never repeated. */
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <type_traits>

#include <droce/cm_device.h>
#include <droce/droce.h>

namespace droce::rdmacm {

struct ServiceDev;
struct IdState;

/** One event as rdma_get_cm_event hands it out: the private data lives with it until
 * rdma_ack_cm_event. */
struct Event {
    rdma_cm_event ev;
    uint8_t private_data[kCmMaxPrivateData];
    /** Handed out by rdma_get_cm_event: the id whose count its ack completes (the
     * listener for a connection request, as rdma-core's), else nullptr. */
    IdState *reported_to = nullptr;
};

struct ChannelState {
    std::mutex mu;
    std::deque<Event *> q;
    bool closed = false;         /**< destroyed: its events are gone, its fd closed */
    std::atomic<int> readers{0}; /**< threads inside rdma_get_cm_event on it */
};

/** rdma_create_event_channel's channel. The eventfd (channel.fd, semaphore mode) counts
 * queued events: readable while one waits; rdma_get_cm_event reads one count, then takes
 * the oldest event. Ids without a channel (synchronous use) get a private one. A
 * destroyed channel's memory outlives it a while (free_channel): programs such as rping
 * destroy the channel while their CM thread still uses it. A call that starts after the
 * destroy fails with EBADF, as read() on rdma-core's closed descriptor does; a thread
 * already waiting keeps waiting, as one blocked in that read() does (the descriptor
 * stays open for it). */
struct EventChannel {
    rdma_event_channel channel;
    ChannelState *st;
};
static_assert(std::is_standard_layout_v<EventChannel>);

/** An rdma_cm_id. */
struct Id {
    rdma_cm_id id;
    IdState *st;
};
static_assert(std::is_standard_layout_v<Id>);

enum class IdRole : uint8_t { Idle, Active, Listener, Passive };

struct IdState {
    IdRole role = IdRole::Idle;
    ServiceDev *dev = nullptr; /**< the device the id is bound or resolved to */
    EventChannel *channel = nullptr;
    bool sync = false;          /**< no channel given: calls wait for their own event */
    bool wildcard = false;      /**< listener on every device (INADDR_ANY) */
    uint32_t conn = 0;          /**< the CM's connection id (Active / Passive) */
    Id *listener = nullptr;     /**< Passive: the id it came in on */
    bool qp_from_cm = false;    /**< rdma_create_qp made the QP (rdma_destroy_qp frees it) */
    bool cqs_from_cm = false;   /**< ... and its CQs and their channels */
    ibv_qp_init_attr ep_attr{}; /**< rdma_create_ep on a passive id: for its requests */
    bool has_ep_attr = false;
    ibv_pd *ep_pd = nullptr;
    /* Events rdma_get_cm_event handed out for this id, and those acked: rdma_destroy_id
     * waits until every one is acked, as rdma-core's (the application's CM thread may
     * still be handling one; its channel must outlast that). */
    std::mutex ev_mu;
    std::condition_variable ev_acked_cv;
    uint64_t ev_reported = 0;
    uint64_t ev_acked = 0;
};

/** rdma_get_cm_event hands e out: counted on its id (or listener). */
void count_reported(Event *e);
/** rdma_ack_cm_event of e: its id's count. */
void count_acked(Event *e);
/** rdma_destroy_id: until every event handed out for id is acked. */
void wait_acked(IdState &st);

/** An event for id with its private data (not queued yet). */
Event *make_event(Id *id, rdma_cm_event_type type, int status, const void *pd = nullptr,
                  uint8_t pd_len = 0);
/** Queues a finished event on to's channel (its own, or its private one): from here on
 * the application may hold it. */
void post(Id *to, Event *e);
/** make_event and post for id. */
void post_event(Id *id, rdma_cm_event_type type, int status, const void *pd = nullptr,
                uint8_t pd_len = 0);
/** The oldest event of ch, waiting per the descriptor's flags: 0 or the errno. */
int take_event(EventChannel *ch, Event **out);
/** Removes id's events from its channel (the id is going away). */
void purge_events(Id *id);
EventChannel *new_channel();
/** Drops ch's events and closes its descriptor; the memory goes once no reader is inside
 * and later destroys have pushed it out of a short list of retired channels. */
void free_channel(EventChannel *ch);

} // namespace droce::rdmacm
