/* SPDX-License-Identifier: BSD-3-Clause */
/* The process's RDMA-CM service (rdmacm_service.h). */
#include "rdmacm_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

namespace droce::rdmacm {
namespace {

/* How long the service sleeps when the CM had nothing to do: the CM's timers are
 * milliseconds, and a connection's MADs wait at most this long for the thread. */
constexpr auto kIdleSleep = std::chrono::microseconds(200);
/* At exit, how long the CM keeps answering (a DREQ's DREP, a REP's RTU) before it goes
 * with the process; the kernel's CM outlives the program instead. */
constexpr auto kLinger = std::chrono::milliseconds(200);

/* The device's first IPv4 address (host order) and its GID index. */
uint32_t ipv4_of(const Device &dev, uint8_t &gid_index) {
    const std::vector<GidEntry> gids = dev.gids();
    for (size_t i = 0; i < gids.size(); ++i) {
        const CmAddr a = gid_addr(gids[i].gid.raw, 0);
        if (a.is_v4()) {
            gid_index = static_cast<uint8_t>(i);
            return a.v4();
        }
    }
    return 0;
}

/* The device's IPv6 addresses: its RoCE v2 GIDs that are not IPv4-mapped. */
std::vector<std::array<uint8_t, 16>> ipv6_of(const Device &dev) {
    std::vector<std::array<uint8_t, 16>> out;
    for (const GidEntry &e : dev.gids()) {
        const CmAddr a = gid_addr(e.gid.raw, 0);
        if (a.is_v4() || std::strcmp(e.type, "RoCE v2") != 0)
            continue;
        std::array<uint8_t, 16> g;
        std::memcpy(g.data(), e.gid.raw, 16);
        out.push_back(g);
    }
    return out;
}

uint8_t mtu_enum(uint32_t bytes) {
    uint8_t e = 1;
    for (uint32_t b = 256; b < bytes && e < 5; b <<= 1)
        ++e;
    return e;
}

Service *g_service = nullptr;

/* Whether a listener takes a request over IPv6 (or IPv4), as the kernel's rdma_cm: one
 * bound to an IPv4 address (or to INADDR_ANY) hears IPv4 only, one bound to an IPv6
 * address that address's requests, one bound to in6addr_any both. */
bool takes_family(const Id &listener, bool ipv6) {
    CmAddr a;
    if (parse_addr(&listener.id.route.addr.src_addr, a) != 0)
        return false;
    if (a.family == AF_INET6 && a.any())
        return true;
    return a.is_v4() != ipv6;
}

} // namespace

Service *Service::get() {
    static std::once_flag once;
    static int error = 0;
    std::call_once(once, [] {
        auto *s = new Service();
        error = s->start();
        if (error == 0)
            g_service = s;
        else
            delete s;
    });
    if (g_service == nullptr) {
        errno = error;
    } else if (getpid() != g_service->pid_) {
        /* Forked after the service started: its thread and the engine stayed with the
         * parent. Said once; the calls fail instead of waiting for events forever. */
        static std::atomic<bool> said{false};
        if (!said.exchange(true))
            std::fprintf(stderr, "droce librdmacm: this process was forked after droce's CM "
                                 "started in its parent: no CM here. Start it after the "
                                 "fork, or use threads (fio: thread=1)\n");
        errno = ENODEV;
        return nullptr;
    }
    return g_service;
}

int Service::start() {
    int n = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (list == nullptr || n == 0) {
        const int e = errno != 0 ? errno : ENODEV;
        if (list != nullptr)
            ibv_free_device_list(list);
        return e;
    }
    for (int i = 0; i < n; ++i) {
        auto d = std::make_unique<ServiceDev>();
        d->entry = verbs::outer_of<verbs::DeviceEntry>(list[i]);
        d->ctx = ibv_open_device(list[i]);
        d->pd = d->ctx != nullptr ? ibv_alloc_pd(d->ctx) : nullptr;
        if (d->pd == nullptr)
            return errno != 0 ? errno : ENOMEM;
        CmDeviceOptions opt;
        /* What the kernel's rdma_cm grants a QP it takes to INIT itself. */
        opt.access_flags =
            kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
        auto cm = CmDevice::open(*d->entry->engine, *d->entry->dev, opt);
        if (!cm) {
            std::fprintf(stderr, "droce librdmacm: %s\n", cm.status().message().c_str());
            return cm.status().code() != 0 ? cm.status().code() : EIO;
        }
        d->cm = std::move(cm.value());
        d->ip = ipv4_of(*d->entry->dev, d->ip_gid_index);
        d->ip6 = ipv6_of(*d->entry->dev);
        d->path_mtu = mtu_enum(d->entry->dev->active_mtu());
        devs.push_back(std::move(d));
    }
    ibv_free_device_list(list);
    next_port_ = static_cast<uint16_t>(32768 + std::random_device{}() % 28000);
    pid_ = getpid();
    thread_ = std::thread([this] {
        /* Signals go to the application's threads: a handler that calls exit() must not
         * run here (the exit handler below joins this thread). */
        sigset_t all;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, nullptr);
        run();
    });
    for (auto &d : devs)
        d->entry->before_teardown->store(&Service::stop_at_exit);
    return 0;
}

/* Called by libibverbs' exit teardown before the engine stops (no atexit handler of its
 * own: verbs_exit.h says why one long handler is safer than two): the CM's QP1 and
 * thread go before the engine does. Once only. */
void Service::stop_at_exit() {
    static std::once_flag once;
    std::call_once(once, stop_once);
}

void Service::stop_once() {
    Service *s = g_service;
    if (s == nullptr)
        return;
    if (getpid() != s->pid_ || std::this_thread::get_id() == s->thread_.get_id()) {
        /* A child forked from this process (the service thread is its parent's), or an
         * exit from the service thread itself: nothing of the CM is ours to stop. */
        s->thread_.detach();
        return;
    }
    if (s->used_.load())
        std::this_thread::sleep_for(kLinger);
    s->stop_ = true;
    if (s->thread_.joinable())
        s->thread_.join();
    std::lock_guard<std::mutex> lk(s->mu);
    for (auto &d : s->devs)
        d->cm.reset();
}

void Service::run() {
    while (!stop_.load(std::memory_order_relaxed)) {
        int work = 0;
        {
            std::lock_guard<std::mutex> lk(mu);
            for (auto &d : devs) {
                work += d->cm->poll();
                CmEventInfo ev;
                while (d->cm->channel().poll_event(ev)) {
                    ++work;
                    dispatch(*d, ev);
                }
            }
        }
        if (work == 0)
            std::this_thread::sleep_for(kIdleSleep);
    }
}

ServiceDev *Service::route_to(const CmAddr &) {
    /* droce's libibverbs opens one device per process: every destination is reached
     * through it (its gateway, if any, is the engine's business). */
    return devs.empty() ? nullptr : devs.front().get();
}

ServiceDev *Service::owner_of(const CmAddr &local) {
    for (auto &d : devs) {
        if (local.is_v4()) {
            if (d->ip == local.v4())
                return d.get();
            continue;
        }
        for (const auto &g : d->ip6)
            if (std::memcmp(g.data(), local.gid, 16) == 0)
                return d.get();
    }
    return nullptr;
}

bool Service::local_for(const ServiceDev &d, const CmAddr &peer, CmAddr &local) {
    if (peer.is_v4()) {
        local = v4_addr(d.ip, 0);
        local.family = peer.family;
        return d.ip != 0;
    }
    for (const auto &g : d.ip6) {
        CmAddr a = gid_addr(g.data(), 0);
        if (a.link_local() == peer.link_local()) {
            local = a;
            return true;
        }
    }
    return false;
}

Id *Service::conn_id(ServiceDev *d, uint32_t conn) {
    auto it = conns_.find({d, conn});
    return it == conns_.end() ? nullptr : it->second;
}

bool Service::add_listener(rdma_port_space ps, uint16_t port, Id *id) {
    used_ = true;
    return listeners_.emplace(std::make_pair(ps, port), id).second;
}

void Service::drop_listener(Id *id) {
    for (auto it = listeners_.begin(); it != listeners_.end();)
        it = it->second == id ? listeners_.erase(it) : std::next(it);
}

uint16_t Service::ephemeral_port() {
    used_ = true;
    if (next_port_ < 32768 || next_port_ == 65535)
        next_port_ = 32768;
    return next_port_++;
}

uint64_t Service::now_ns() const { return devs.empty() ? 0 : devs.front()->cm->now_ns(); }

Id *Service::passive_id(ServiceDev &d, const CmEventInfo &ev, rdma_port_space ps) {
    auto it = listeners_.find({ps, ev.listen_port});
    Id *listener = it != listeners_.end() ? it->second : nullptr;
    if (listener == nullptr || (!listener->st->wildcard && listener->st->dev != &d) ||
        !takes_family(*listener, ev.ipv6))
        return nullptr;
    IdState &ls = *listener->st;
    Id *child = new_id(ls.sync ? nullptr : ls.channel, listener->id.context, ps,
                       ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC);
    if (child == nullptr)
        return nullptr;
    IdState &cs = *child->st;
    cs.role = IdRole::Passive;
    cs.dev = &d;
    cs.conn = ev.id;
    cs.listener = listener;
    child->id.verbs = d.ctx;
    child->id.pd = d.pd;
    child->id.port_num = 1;
    const CmAddr peer =
        ev.ipv6 ? gid_addr(ev.peer_gid, ev.peer_port) : v4_addr(ev.peer_ip, ev.peer_port);
    CmAddr local;
    local_for(d, peer, local);
    local.port = ev.listen_port;
    write_addr(local, child->id.route.addr.src_storage);
    write_addr(peer, child->id.route.addr.dst_storage);
    add_conn(&d, ev.id, child);
    return child;
}

void Service::on_connect_request(ServiceDev &d, const CmEventInfo &ev) {
    Id *child = passive_id(d, ev, RDMA_PS_TCP);
    if (child == nullptr) {
        d.cm->reject(ev.id);
        return;
    }
    Id *listener = child->st->listener;
    const IdState &ls = *listener->st;
    Event *e =
        make_event(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, ev.private_data, ev.private_data_len);
    e->ev.listen_id = &listener->id;
    /* The peer's initiator depth is what we must absorb, and the other way round. */
    e->ev.param.conn.responder_resources = ev.qp.max_dest_rd_atomic;
    e->ev.param.conn.initiator_depth = ev.qp.max_rd_atomic;
    e->ev.param.conn.qp_num = ev.qp.remote_qpn;
    /* Complete before it is queued: the application may take it at once. A sync
     * listener's requests wait on its own channel (rdma_get_request). */
    post(ls.sync ? listener : child, e);
}

void fill_ud_ah(const ServiceDev &d, const uint8_t peer_gid[16], ibv_ah_attr &ah) {
    ah = ibv_ah_attr{};
    ah.is_global = 1; /* RoCE: routed by the GRH */
    std::memcpy(ah.grh.dgid.raw, peer_gid, 16);
    ah.grh.sgid_index = d.ip_gid_index;
    ah.grh.hop_limit = 64;
    ah.port_num = 1;
}

/* A SIDR_REQ: CONNECT_REQUEST on a new UD id, the user's private data in param.ud (the
 * kernel's event has no address vector; ours names the peer, which does no harm). */
void Service::on_sidr_request(ServiceDev &d, const CmEventInfo &ev) {
    /* SIDR over IPv6 is refused (the UD ids are IPv4 only: rdmacm_id.cpp). */
    Id *child = ev.ipv6 ? nullptr : passive_id(d, ev, RDMA_PS_UDP);
    if (child == nullptr) {
        d.cm->channel().sidr_reject(ev.id, nullptr, 0, now_ns());
        return;
    }
    Id *listener = child->st->listener;
    Event *e =
        make_event(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, ev.private_data, ev.private_data_len);
    e->ev.listen_id = &listener->id;
    fill_ud_ah(d, ev.peer_gid, e->ev.param.ud.ah_attr);
    post(listener->st->sync ? listener : child, e);
}

/* A SIDR_REP or its absence: the UD id's connection is what it says (the kernel's
 * ESTABLISHED with the peer's QPN, Q_Key and address; UNREACHABLE with the SIDR status,
 * or -ETIMEDOUT when no answer came). The CM has forgotten the request already. */
void Service::on_sidr_result(ServiceDev &d, const CmEventInfo &ev) {
    Id *id = conn_id(&d, ev.id);
    drop_conn(&d, ev.id);
    if (id == nullptr)
        return; /* the id was destroyed meanwhile */
    id->st->conn = 0;
    if (ev.kind != CmEventKind::SidrResolved) {
        post_event(id, RDMA_CM_EVENT_UNREACHABLE,
                   ev.kind == CmEventKind::SidrRejected ? ev.sidr_status : -ETIMEDOUT,
                   ev.private_data, ev.private_data_len);
        return;
    }
    Event *e = make_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, ev.private_data, ev.private_data_len);
    fill_ud_ah(d, ev.peer_gid, e->ev.param.ud.ah_attr);
    e->ev.param.ud.qp_num = ev.qp.remote_qpn;
    e->ev.param.ud.qkey = ev.qkey;
    post(id, e);
}

void Service::dispatch(ServiceDev &d, const CmEventInfo &ev) {
    switch (ev.kind) {
    case CmEventKind::ConnectRequest:
        on_connect_request(d, ev);
        return;
    case CmEventKind::SidrRequest:
        on_sidr_request(d, ev);
        return;
    case CmEventKind::SidrResolved:
    case CmEventKind::SidrRejected:
    case CmEventKind::SidrUnreachable:
        on_sidr_result(d, ev);
        return;
    default:
        break;
    }
    Id *id = conn_id(&d, ev.id);
    if (id == nullptr)
        return; /* the id was destroyed: its events go with it */
    switch (ev.kind) {
    case CmEventKind::Established:
        post_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, ev.private_data, ev.private_data_len);
        break;
    case CmEventKind::Rejected:
        /* The REJ's reason as rdma_cm reports it (28: the consumer rejected). */
        post_event(id, RDMA_CM_EVENT_REJECTED, ev.reason, ev.private_data, ev.private_data_len);
        break;
    case CmEventKind::Unreachable:
        post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
        break;
    case CmEventKind::ConnectError:
        post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT);
        break;
    case CmEventKind::Disconnected:
        post_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
        break;
    case CmEventKind::TimewaitExit:
        post_event(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
        drop_conn(&d, ev.id);
        id->st->conn = 0;
        break;
    default: /* requests and SIDR results: above */
        break;
    }
}

} // namespace droce::rdmacm
