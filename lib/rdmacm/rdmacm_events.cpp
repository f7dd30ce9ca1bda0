/* SPDX-License-Identifier: BSD-3-Clause */
/* Event channels: rdma_create_event_channel, rdma_get_cm_event, rdma_ack_cm_event, and
 * the queue the service posts to. The channel's eventfd (semaphore mode) gets one count
 * per queued event after the event is queued, so a reader that got a count finds an
 * event, except one purge_events took away (then it reads again). */
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <deque>
#include <mutex>

#include "rdmacm_objects.h"

namespace droce::rdmacm {

EventChannel *new_channel() {
    const int fd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
    if (fd < 0)
        return nullptr;
    auto *ch = new EventChannel{};
    ch->channel.fd = fd;
    ch->st = new ChannelState();
    return ch;
}

/* Destroyed channels kept before their memory goes: a thread that was about to call
 * rdma_get_cm_event on one still finds it (closed) rather than freed memory. */
constexpr size_t kRetiredChannels = 64;

void retire(EventChannel *ch) {
    static std::mutex mu;
    static std::deque<EventChannel *> retired;
    std::lock_guard<std::mutex> lk(mu);
    retired.push_back(ch);
    for (size_t i = 0; retired.size() > kRetiredChannels && i < retired.size();) {
        EventChannel *old = retired[i];
        if (old->st->readers.load() != 0) {
            ++i; /* blocked on its closed descriptor for good: kept */
            continue;
        }
        retired.erase(retired.begin() + static_cast<std::ptrdiff_t>(i));
        delete old->st;
        delete old;
    }
}

void free_channel(EventChannel *ch) {
    int fd;
    {
        std::lock_guard<std::mutex> lk(ch->st->mu);
        for (Event *e : ch->st->q)
            delete e;
        ch->st->q.clear();
        ch->st->closed = true;
        fd = ch->channel.fd;
        ch->channel.fd = -1;
        /* A thread inside rdma_get_cm_event keeps the descriptor, as a read() blocked on
         * a file keeps the file when another thread closes its descriptor: it must never
         * read a number the application has since opened again. */
        if (ch->st->readers.load() != 0)
            fd = -1;
    }
    if (fd >= 0)
        close(fd);
    retire(ch);
}

Event *make_event(Id *id, rdma_cm_event_type type, int status, const void *pd, uint8_t pd_len) {
    auto *e = new Event{};
    e->ev.id = &id->id;
    e->ev.event = type;
    e->ev.status = status;
    if (pd_len > 0) {
        std::memcpy(e->private_data, pd, pd_len);
        e->ev.param.conn.private_data = e->private_data;
        e->ev.param.conn.private_data_len = pd_len;
    }
    return e;
}

void post_event(Id *id, rdma_cm_event_type type, int status, const void *pd, uint8_t pd_len) {
    post(id, make_event(id, type, status, pd, pd_len));
}

void post(Id *to, Event *e) {
    EventChannel *ch = to->st->channel;
    std::lock_guard<std::mutex> lk(ch->st->mu);
    if (ch->st->closed) {
        delete e; /* the application destroyed the channel before the id */
        return;
    }
    ch->st->q.push_back(e);
    const uint64_t one = 1;
    if (write(ch->channel.fd, &one, sizeof one) != sizeof one) {
        /* only a count at 2^64 - 2 refuses */
    }
}

/* The channel was destroyed while this thread waited on it. On rdma-core the thread is
 * blocked in read() on the closed descriptor's file, which nothing signals any more (the
 * destroyed ids' events went with them): it stays blocked. So does this one (rping's CM
 * thread waits so while main returns), instead of failing with an error the program
 * would take for its own (rping exits -1 on it). */
[[noreturn]] void wait_forever() {
    for (;;)
        pause();
}

int take_event(EventChannel *ch, Event **out) {
    ChannelState &st = *ch->st;
    int fd;
    {
        std::lock_guard<std::mutex> lk(st.mu);
        if (st.closed)
            return EBADF; /* called after rdma_destroy_event_channel */
        st.readers.fetch_add(1);
        fd = ch->channel.fd;
    }
    int err = 0;
    for (;;) {
        uint64_t n;
        if (read(fd, &n, sizeof n) != static_cast<ssize_t>(sizeof n)) {
            err = errno != 0 ? errno : EIO;
            break;
        }
        std::unique_lock<std::mutex> lk(st.mu);
        if (st.closed) {
            lk.unlock();
            wait_forever(); /* woken by a count of an event destroyed with the channel */
        }
        if (!st.q.empty()) {
            *out = st.q.front();
            st.q.pop_front();
            break;
        }
    }
    st.readers.fetch_sub(1);
    return err;
}

void purge_events(Id *id) {
    ChannelState &s = *id->st->channel->st;
    std::lock_guard<std::mutex> lk(s.mu);
    s.q.erase(std::remove_if(s.q.begin(), s.q.end(),
                             [id](Event *e) {
                                 if (e->ev.id != &id->id && e->ev.listen_id != &id->id)
                                     return false;
                                 delete e;
                                 return true;
                             }),
              s.q.end());
}

void count_reported(Event *e) {
    rdma_cm_id *to = e->ev.event == RDMA_CM_EVENT_CONNECT_REQUEST && e->ev.listen_id != nullptr
                         ? e->ev.listen_id
                         : e->ev.id;
    if (to == nullptr)
        return;
    IdState &st = *reinterpret_cast<Id *>(to)->st;
    std::lock_guard<std::mutex> lk(st.ev_mu);
    ++st.ev_reported;
    e->reported_to = &st;
}

void count_acked(Event *e) {
    IdState *st = e->reported_to;
    if (st == nullptr)
        return;
    std::lock_guard<std::mutex> lk(st->ev_mu);
    ++st->ev_acked;
    st->ev_acked_cv.notify_all();
}

void wait_acked(IdState &st) {
    std::unique_lock<std::mutex> lk(st.ev_mu);
    st.ev_acked_cv.wait(lk, [&] { return st.ev_acked == st.ev_reported; });
}

} // namespace droce::rdmacm

using namespace droce::rdmacm;

extern "C" {

rdma_event_channel *rdma_create_event_channel(void) {
    EventChannel *ch = new_channel();
    if (ch == nullptr)
        return nullptr;
    return &ch->channel;
}

void rdma_destroy_event_channel(rdma_event_channel *channel) {
    if (channel != nullptr)
        free_channel(reinterpret_cast<EventChannel *>(channel));
}

int rdma_get_cm_event(rdma_event_channel *channel, rdma_cm_event **event) {
    if (channel == nullptr || event == nullptr) {
        errno = EINVAL;
        return -1;
    }
    Event *e = nullptr;
    if (int err = take_event(reinterpret_cast<EventChannel *>(channel), &e); err != 0) {
        errno = err;
        return -1;
    }
    count_reported(e);
    *event = &e->ev;
    return 0;
}

int rdma_ack_cm_event(rdma_cm_event *event) {
    if (event == nullptr) {
        errno = EINVAL;
        return -1;
    }
    auto *e = reinterpret_cast<Event *>(event);
    count_acked(e);
    delete e;
    return 0;
}

const char *rdma_event_str(rdma_cm_event_type event) {
    static const char *const kNames[] = {
        "RDMA_CM_EVENT_ADDR_RESOLVED",   "RDMA_CM_EVENT_ADDR_ERROR",
        "RDMA_CM_EVENT_ROUTE_RESOLVED",  "RDMA_CM_EVENT_ROUTE_ERROR",
        "RDMA_CM_EVENT_CONNECT_REQUEST", "RDMA_CM_EVENT_CONNECT_RESPONSE",
        "RDMA_CM_EVENT_CONNECT_ERROR",   "RDMA_CM_EVENT_UNREACHABLE",
        "RDMA_CM_EVENT_REJECTED",        "RDMA_CM_EVENT_ESTABLISHED",
        "RDMA_CM_EVENT_DISCONNECTED",    "RDMA_CM_EVENT_DEVICE_REMOVAL",
        "RDMA_CM_EVENT_MULTICAST_JOIN",  "RDMA_CM_EVENT_MULTICAST_ERROR",
        "RDMA_CM_EVENT_ADDR_CHANGE",     "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };
    const auto i = static_cast<size_t>(event);
    return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "UNKNOWN EVENT";
}

} // extern "C"
