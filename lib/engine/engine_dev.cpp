/* SPDX-License-Identifier: BSD-3-Clause */
/* A device and its shards: construction, SRQs, QP creation and QPN allocation, neighbour
 * requests, doorbells and ring draining. Elsewhere: MRs and zero-copy regions
 * (engine_mr.cpp), counters (engine_counters.cpp), the ready list and scheduling
 * (engine_sched.cpp), opening a port (engine_open.cpp); the per-packet path in
 * engine_rx.cpp / engine_tx.cpp / engine_poll.cpp. */
/* rte_dev_dma_map() is experimental in DPDK 22.11. */
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API
#endif
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_memory.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "engine_dev.h"
#include "engine_dpdk_mem.h"
#include "engine_log.h"
#include "engine_rss.h"
#include "engine_ud.h"
#include "wire_rocev1.h"

namespace droce::engine {

static_assert(sizeof(SendWr) % 4 == 0 && sizeof(RecvWr) % 4 == 0 && sizeof(Wc) % 4 == 0,
              "rte_ring elements must be multiples of 4 bytes");

/* ---------------- rings from the heap ---------------- */

rte_ring *ring_alloc(const char *name, unsigned esize, unsigned count, unsigned flags) {
    /* RING_F_EXACT_SZ: room for exactly count entries in a ring of the next power of
     * two above count (what rte_ring_create_elem sizes the memory for). */
    const unsigned slots = (flags & RING_F_EXACT_SZ) ? rte_align32pow2(count + 1) : count;
    const ssize_t sz = rte_ring_get_memsize_elem(esize, slots);
    if (sz < 0)
        return nullptr;
    const size_t bytes = (static_cast<size_t>(sz) + RTE_CACHE_LINE_SIZE - 1) &
                         ~static_cast<size_t>(RTE_CACHE_LINE_SIZE - 1);
    void *mem = std::aligned_alloc(RTE_CACHE_LINE_SIZE, bytes);
    if (mem == nullptr)
        return nullptr;
    auto *r = static_cast<rte_ring *>(mem);
    if (rte_ring_init(r, name, count, flags) != 0) {
        std::free(mem);
        return nullptr;
    }
    return r;
}

void ring_release(rte_ring *r) { std::free(r); }

/* CQ: engine_cq.cpp. */

SrqCtx::~SrqCtx() { ring_release(ring); }

SrqCtx *Dev::create_srq(uint32_t worker, uint32_t max_wr, uint32_t max_sge, rte_ring *ring) {
    Shard &sh = *shards_[worker];
    auto s = std::make_unique<SrqCtx>();
    s->q = std::make_unique<qp::RecvQueue>(max_wr, max_sge);
    s->ring = ring;
    s->worker = worker;
    s->max_wr = max_wr;
    /* Reuse a free index so that the table stays small. */
    uint32_t idx = 0;
    while (idx < sh.srqs.size() && sh.srqs[idx])
        ++idx;
    s->index = idx;
    if (idx == sh.srqs.size())
        sh.srqs.emplace_back();
    sh.srqs[idx] = std::move(s);
    return sh.srqs[idx].get();
}

bool Dev::destroy_srq(SrqCtx *s) {
    if (s->refs)
        return false;
    Shard &sh = *shards_[s->worker];
    if (s->index < sh.srqs.size() && sh.srqs[s->index].get() == s) {
        sh.srqs[s->index].reset();
        return true;
    }
    return false;
}

QpCtx::~QpCtx() {
    ring_release(sq);
    ring_release(rq);
}

/* ---------------- Dev: control ---------------- */

Dev::Dev(Runtime &rt, uint16_t port, std::string name, const net::Iface &ifc, uint32_t eth_mtu,
         uint32_t arp_timeout_ms, uint32_t max_qps, uint32_t workers, uint16_t nrxq, uint16_t ntxq,
         uint16_t queue_stride)
    : rt_(rt), port_(port), name_(std::move(name)), ifc_(ifc), gids_(ifc.mac, {ifc.ip}),
      eth_mtu_(eth_mtu), arp_timeout_ms_(arp_timeout_ms), max_qps_(max_qps), nrxq_(nrxq),
      ntxq_(ntxq), queue_stride_(queue_stride), tx_pool_(rt.pool()), qps_(max_qps),
      owner_(workers) {
    ifc6_ = net::make_iface6(ifc.mac); /* the link-local address; set_l3 adds the rest */
    for (uint32_t w = 0; w < workers; ++w)
        shards_.push_back(std::make_unique<Shard>(*this, w, workers, max_qps));
}

void Dev::set_rss(const uint8_t *key, uint32_t reta_size) {
    std::memcpy(rss_key_, key, sizeof rss_key_);
    reta_size_ = reta_size;
    rss_ = reta_size != 0;
}

uint16_t Dev::udp_sport_for(uint32_t dst_ip, uint32_t dest_qpn, uint16_t fallback) const {
    if (!rss_)
        return fallback;
    return rss_pick_sport(rss_key_, ifc_.ip, dst_ip, owner(dest_qpn), nrxq_, reta_size_, fallback);
}

Dev::~Dev() {
    unwatch_link();
    for (auto &q : qps_)
        q.reset();
    shards_.clear(); /* frees what their TX queues still hold */
    if (hosted_)
        return; /* the host's port: the host stops and closes it */
    const drivers::PortStopResult r = drivers::stop_port(port_, true, caps_.control_on_intr_thread);
    if (r.stop_rc != 0)
        logger().warn("{}: rte_eth_dev_stop: {}", name_, rte_strerror(-r.stop_rc));
    if (r.close_rc != 0)
        logger().warn("{}: rte_eth_dev_close: {}", name_, rte_strerror(-r.close_rc));
    if (caps_.control_on_intr_thread && !r.intr_thread_held)
        logger().warn("{}: stopped without holding the EAL's interrupt thread (it did not "
                      "answer)",
                      name_);
}

uint32_t Dev::active_mtu() const {
    return wire::ib_mtu_to_bytes(wire::ib_mtu_for_eth_mtu(eth_mtu_));
}

size_t Dev::num_qps() const {
    size_t n = 0;
    for (const auto &s : shards_)
        n += s->num_qps();
    return n;
}

Result<uint32_t> Dev::create_qp(uint32_t pd, const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq,
                                rte_ring *sq, rte_ring *rq, QpCtx **out, SrqCtx *srq) {
    const uint32_t w = scq->worker;
    if (rcq->worker != w || (srq != nullptr && srq->worker != w))
        return Status(EINVAL, "create_qp: send CQ, receive CQ and SRQ must belong to the same "
                              "worker (a QP runs on its CQs' worker)");
    if (w >= workers())
        return Status(EINVAL, "create_qp: CQ of worker " + std::to_string(w) + " but " + name_ +
                                  " has " + std::to_string(workers()) + " worker(s)");
    Shard &sh = *shards_[w];
    const uint32_t qpn = sh.qpns_.alloc(rt_.now_ns());
    if (qpn == 0)
        return Status(ENOSPC, "create_qp: no free QPN on worker " + std::to_string(w) + " of " +
                                  name_ + " (QPN space " + std::to_string(max_qps_) + ", " +
                                  std::to_string(sh.num_qps()) +
                                  " in use there; freed QPNs wait 1 s before reuse)");
    auto ctx = std::make_unique<QpCtx>();
    rc::QpConfig cfg;
    cfg.qpn = qpn;
    cfg.pd = pd;
    cfg.cap = attr.cap;
    cfg.sq_sig_all = attr.sq_sig_all;
    ctx->tx.shard = &sh;
    cfg.port = &ctx->tx;
    cfg.send_cq = &ctx->send_port;
    cfg.recv_cq = &ctx->recv_port;
    cfg.mrs = &mrs_;
    cfg.counters = &sh.rcc;
    cfg.events = &sh;
    cfg.srq = srq ? srq->q.get() : nullptr;
    qpd_.apply(cfg);
    ctx->qp = std::make_unique<rc::Qp>(cfg);
    ctx->srq = srq;
    if (srq)
        ++srq->refs;
    return install_qp(std::move(ctx), qpn, w, attr, scq, rcq, sq, rq, out);
}

uint32_t Dev::install_qp(std::unique_ptr<QpCtx> ctx, uint32_t qpn, uint32_t w,
                         const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq, rte_ring *sq, rte_ring *rq,
                         QpCtx **out) {
    Shard &sh = *shards_[w];
    ctx->sq = sq;
    ctx->rq = rq;
    ctx->scq = scq;
    ctx->rcq = rcq;
    for (QpCqPort *port : {&ctx->send_port, &ctx->recv_port}) {
        port->publish = worker_rings_ ? ctx.get() : nullptr;
        port->shard = &sh;
    }
    ctx->send_port.cq = scq;
    ctx->recv_port.cq = rcq;
    ctx->worker = w;
    ctx->max_send_wr = attr.cap.max_send_wr;
    ctx->max_recv_wr = attr.cap.max_recv_wr;
    ctx->timer.qp = ctx.get();
    ++scq->refs;
    ++rcq->refs;
    ++sh.nqps_;
    *out = ctx.get();
    qps_[qpn] = std::move(ctx);
    return qpn;
}

void Dev::destroy_qp(uint32_t qpn) {
    QpCtx *q = qp(qpn);
    if (q == nullptr)
        return;
    Shard &sh = *shards_[q->worker];
    sh.send_ack_before_destroy(*q, rt_.now_ns());
    sh.unschedule(*q);
    if (q->tx.neigh_held())
        neigh_unhold(qpn);
    --q->scq->refs;
    --q->rcq->refs;
    if (q->srq)
        --q->srq->refs;
    --sh.nqps_;
    qps_[qpn].reset();
    if (qpn >= kFirstQpn) /* QP1 (GSI) is bound by number, never allocated */
        sh.qpns_.free(qpn, rt_.now_ns());
}

net::ResolveStep Dev::resolve(uint32_t ip, uint64_t now, net::Mac *mac) {
    const net::ResolveStep s = neigh_.resolve(ip, now, kArpRetryNs, mac);
    if (s == net::ResolveStep::SendProbe) {
        send_arp_request(ip);
        return net::ResolveStep::Wait;
    }
    return s;
}

void Dev::send_arp_request(uint32_t ip) {
    Shard &sh = *shards_[0];
    rte_mbuf *m = rte_pktmbuf_alloc(tx_pool_);
    if (m == nullptr) {
        ++sh.ec.tx_no_mbuf;
        return; /* the next retry tries again */
    }
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    size_t n = net::build_arp_request(ifc_, ip, p, rte_pktmbuf_tailroom(m));
    if (vlan_ != 0)
        n = net::vlan_push(p, n, rte_pktmbuf_tailroom(m), vlan_);
    m->data_len = static_cast<uint16_t>(n);
    m->pkt_len = static_cast<uint32_t>(n);
    if (!sh.queue_tx(m)) {
        ++sh.ec.tx_drop_reply_batch_full;
        rte_pktmbuf_free(m);
        return;
    }
    ++sh.nc.arp_requests_sent;
}

/* ---------------- Shard ---------------- */

namespace {
/* Worker index's queue among n, UINT16_MAX where it has none. */
uint16_t queue_of(uint32_t index, uint16_t stride, uint16_t n) {
    const uint32_t q = index * stride;
    return q < n ? static_cast<uint16_t>(q) : UINT16_MAX;
}
} // namespace

Shard::Shard(Dev &dev, uint32_t index, uint32_t workers, uint32_t max_qps)
    : dev_(dev), index_(index), rxq_(queue_of(index, dev.queue_stride_, dev.nrxq_)),
      txq_(queue_of(index, dev.queue_stride_, dev.ntxq_)), pool_(dev.rt_.pool(index)),
      qpns_(index, workers, kFirstQpn, max_qps, kQpnQuarantineNs) {
    /* A QPN and an SRQ index at most once each in the doorbell ring (the flag). */
    const uint32_t per_worker = max_qps / workers + 1;
    uint32_t db = 1024;
    while (db < per_worker + 1024)
        db <<= 1;
    const std::string base = dev.rt_.unique_name("dsh");
    doorbells_ =
        ring_alloc((base + "d").c_str(), sizeof(uint32_t), db, RING_F_SC_DEQ | RING_F_EXACT_SZ);
    rx_in_ = ring_alloc((base + "h").c_str(), sizeof(void *), 4096, RING_F_SC_DEQ);
    if (index == 0 && dev.ntxq_ < workers)
        tx_in_ = ring_alloc((base + "t").c_str(), sizeof(void *), 4096, RING_F_SC_DEQ);
    /* rx_in_ is fed only by the other shards (wrong-owner frames, pauses): none alone. */
    handoffs_ = workers > 1 || tx_in_ != nullptr;
    if (doorbells_ == nullptr || rx_in_ == nullptr ||
        (index == 0 && dev.ntxq_ < workers && tx_in_ == nullptr))
        throw std::bad_alloc();
    for (uint8_t i = 0; i < net::kPfcPriorities; ++i) {
        pause_end_[i].prio = pause_storm_[i].prio = i;
        pause_storm_[i].storm = true;
    }
}

Shard::~Shard() {
    rx_done_.flush();
    while (!tx_.empty()) {
        uint16_t n;
        rte_mbuf **frames = tx_.front(&n);
        rte_pktmbuf_free_bulk(frames, n);
        tx_.taken(n);
    }
    void *m;
    while (rte_ring_sc_dequeue(rx_in_, &m) == 0)
        rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
    if (tx_in_)
        while (rte_ring_sc_dequeue(tx_in_, &m) == 0)
            rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
    ring_release(doorbells_);
    ring_release(rx_in_);
    ring_release(tx_in_);
}

void Shard::publish_retired(QpCtx &q) {
    /* What left the queues since the application posted it: it may post again. */
    const uint64_t sr = q.sq_drained - q.visit([](const auto &t) { return t.send_queue_depth(); });
    if (sr != q.sq_retired.load(std::memory_order_relaxed))
        q.sq_retired.store(sr, std::memory_order_release);
    if (q.srq != nullptr) {
        publish_srq(*q.srq);
        return;
    }
    const uint64_t rr = q.rq_drained - q.visit([](const auto &t) { return t.recv_queue_depth(); });
    if (rr != q.rq_retired.load(std::memory_order_relaxed))
        q.rq_retired.store(rr, std::memory_order_release);
}

void Shard::publish_srq(SrqCtx &s) {
    const uint64_t r = s.drained - s.q->depth();
    if (r != s.retired.load(std::memory_order_relaxed))
        s.retired.store(r, std::memory_order_release);
}

void Shard::ring_doorbell(uint32_t value) {
    /* Cannot fail: the ring has room for every QPN and SRQ of the shard, and each is in
     * it at most once (the caller won the doorbell flag). */
    rte_ring_mp_enqueue_elem(doorbells_, &value, sizeof(value));
}

uint32_t Shard::drain_doorbells() {
    uint32_t vals[64];
    uint32_t n = 0;
    unsigned k;
    while ((k = rte_ring_sc_dequeue_burst_elem(doorbells_, vals, sizeof(uint32_t), 64, nullptr)) !=
           0) {
        ec.doorbells += k;
        for (unsigned i = 0; i < k; ++i) {
            const uint32_t v = vals[i];
            if (v & kDoorbellSrq) {
                const uint32_t idx = v & ~kDoorbellSrq;
                if (idx < srqs.size() && srqs[idx]) {
                    SrqCtx &s = *srqs[idx];
                    /* Clear first: a WR posted after the drain below rings again. */
                    s.doorbell.exchange(false, std::memory_order_acq_rel);
                    n += drain_srq(s);
                }
                continue;
            }
            QpCtx *q = dev_.qp(v); /* a QP destroyed since it rang: nothing */
            if (q == nullptr || q->worker != index_)
                continue;
            /* Watched, its flag stays set and posts skip the doorbell (RingWatch). Else
             * clear it first: a WR posted after the drain below rings again. */
            if (!ring_watch_.add(v)) {
                ++ec.ring_watch_full;
                q->doorbell.exchange(false, std::memory_order_acq_rel);
            }
            n += drain_rings(*q);
            schedule(*q);
        }
    }
    return n;
}

namespace {

bool rings_empty(const QpCtx &q) {
    return rte_ring_empty(q.sq) && (q.srq != nullptr || rte_ring_empty(q.rq));
}

} // namespace

uint32_t Shard::poll_ring_watch() {
    uint32_t n = 0;
    auto drain = [&](QpCtx &q) {
        const uint32_t k = drain_rings(q);
        if (k != 0)
            schedule(q);
        n += k;
        return k;
    };
    ring_watch_.poll(
        [&](uint32_t qpn) {
            QpCtx *q = dev_.qp(qpn);
            if (q == nullptr || q->worker != index_)
                return RingWatch::Seen::Gone;
            if (rings_empty(*q) || drain(*q) == 0)
                return RingWatch::Seen::Empty;
            return RingWatch::Seen::Busy;
        },
        [&](uint32_t qpn) {
            QpCtx &q = *dev_.qp(qpn); /* seen just now */
            ++ec.ring_watch_released;
            q.doorbell.exchange(false, std::memory_order_acq_rel);
            drain(q);
        });
    return n;
}

namespace {

/* Moves WRs from an application ring into the worker's queue, at most room() at a time:
 * a WR is never dequeued and then lost (the application admits at most the queue's
 * depth, so the room check is only a guard). Returns the WRs taken. */
template <class Wr, class Room, class Post>
uint32_t drain_ring(rte_ring *ring, Room room, Post post) {
    uint32_t n = 0;
    for (uint32_t left; (left = room()) != 0;) {
        Wr wr[kWrBurst];
        const unsigned k = rte_ring_sc_dequeue_burst_elem(
            ring, wr, sizeof(Wr), left < kWrBurst ? left : kWrBurst, nullptr);
        if (k == 0)
            break;
        for (unsigned i = 0; i < k; ++i)
            post(wr[i]);
        n += k;
    }
    return n;
}

/* A send WR from the application's ring into the QP: RC takes it as it is; UD takes its
 * wr.ud part resolved (the AddressHandle is the engine's UdAh, copied by post_send, so
 * the application may destroy it once the send has completed). */
Status post_ring_send(rc::Qp &qp, const SendWr &wr) { return qp.post_send(wr); }
Status post_ring_send(ud::Qp &u, const SendWr &wr) { return u.post_send(to_ud_wr(wr)); }

/* A WR the worker's queue still refused (the application side checked what it could)
 * must not vanish silently: it completes in error. */
void complete_refused(QpCqPort &cq, uint64_t wr_id, WcOpcode op, uint32_t qpn) {
    Wc wc{};
    wc.wr_id = wr_id;
    wc.status = WcStatus::LocQpOpErr;
    wc.opcode = op;
    wc.qp_num = qpn;
    cq.push(wc);
}

} // namespace

uint32_t Shard::drain_rings(QpCtx &q) {
    return q.visit([&](auto &t) { return drain_rings_t(q, t); });
}

template <qp::TransportQp T> uint32_t Shard::drain_rings_t(QpCtx &q, T &t) {
    uint32_t n = 0;
    if (q.srq == nullptr)
        n += drain_ring<RecvWr>(
            q.rq, [&] { return q.max_recv_wr - t.recv_queue_depth(); },
            [&](const RecvWr &wr) {
                ++q.rq_drained; /* counted first: an error completion sees it retired */
                if (!t.post_recv(wr).is_ok()) {
                    ++ec.rq_wr_rejected;
                    complete_refused(q.recv_port, wr.wr_id, WcOpcode::Recv, t.qpn());
                }
            });
    n += drain_ring<SendWr>(
        q.sq, [&] { return q.max_send_wr - t.send_queue_depth(); },
        [&](const SendWr &wr) {
            ++q.sq_drained;
            if (!post_ring_send(t, wr).is_ok()) {
                ++ec.sq_wr_rejected;
                complete_refused(q.send_port, wr.wr_id, WcOpcode::Send, t.qpn());
            }
        });
    return n;
}

uint32_t Shard::drain_srq(SrqCtx &s) {
    const uint32_t n = drain_ring<RecvWr>(
        s.ring, [&] { return s.q->max_wr() - s.q->depth(); },
        [&](const RecvWr &wr) {
            ++s.drained;
            if (!s.q->post(wr).is_ok())
                ++ec.rq_wr_rejected; /* checked on the application side; cannot happen */
        });
    publish_srq(s);
    return n;
}

void Shard::on_async_event(const qp::AsyncEvent &ev) {
    EngineEvent e{ev.type, ev.qp_num, nullptr};
    if (ev.type == AsyncEventType::CqErr && ev.cq != nullptr) {
        /* Several QPs may overrun one CQ: the CQ's error is reported once. */
        CqCtx *cq = static_cast<const QpCqPort *>(ev.cq)->cq;
        if (cq->overrun)
            return;
        cq->overrun = true;
        e.cq_user = cq->user;
        e.qp_num = 0;
    }
    if (dev_.events_.push(e))
        ++ec.async_events;
    else
        ++ec.async_event_dropped;
}

} // namespace droce::engine
