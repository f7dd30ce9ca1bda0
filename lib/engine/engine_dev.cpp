/* SPDX-License-Identifier: BSD-3-Clause */
/* A device and its shards: SRQs, memory regions and zero-copy regions, QP creation and
 * QPN allocation, counters, the ready list and QP scheduling, doorbells and ring draining.
 * The per-packet path is in engine_rx.cpp / engine_tx.cpp / engine_poll.cpp. */
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

#include "engine.h"
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

/* ---------------- zero-copy regions ---------------- */

namespace {

/* Runs when the last attached mbuf of a region is freed (refcnt 1 -> 0). */
void zc_free_cb(void *, void *opaque) { ++static_cast<ZcRegion *>(opaque)->idle_events; }

} // namespace

uint32_t ZcRegion::outstanding() const {
    uint32_t n = 0;
    for (const auto &si : shinfo)
        n += rte_mbuf_ext_refcnt_read(&si);
    return n;
}

ZcRegion::~ZcRegion() {
    /* Only destroyed with no mbuf out (or at device close, the port stopped). The DMA
     * mapping goes with the registration. */
    if (extmem && rte_extmem_unregister(ext_addr, ext_len) != 0)
        logger().debug("rte_extmem_unregister: {}", rte_strerror(rte_errno));
}

const char *zc_reach_str(ZcReach r) {
    switch (r) {
    case ZcReach::Copy:
        return "copy";
    case ZcReach::VirtAddr:
        return "any registered memory";
    case ZcReach::DpdkFd:
        return "DPDK memory shared with the backend only";
    case ZcReach::DmaMapped:
        return "DMA-mapped regions only";
    }
    return "?";
}

void Dev::set_zero_copy(ZcReach reach, uint32_t min_bytes) {
    zc_on_ = reach != ZcReach::Copy;
    zc_reach_ = reach;
    zc_min_ = min_bytes;
}

Result<mem::MemoryRegion> Dev::reg_mr(uint32_t pd, const void *addr, uint64_t length,
                                      uint32_t access) {
    Result<mem::MemoryRegion> r = mrs_.reg(pd, addr, length, access);
    if (!r || !zc_on_)
        return r;
    const uint32_t slot = r->key >> 8;
    if (zc_.size() <= slot)
        zc_.resize(slot + 1);
    auto z = std::make_unique<ZcRegion>();
    z->key = r->key;
    for (auto &si : z->shinfo) {
        si.free_cb = zc_free_cb;
        si.fcb_opaque = z.get();
        rte_mbuf_ext_refcnt_set(&si, 0);
    }
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    if (zc_reach_ == ZcReach::DpdkFd) {
        /* Already DPDK's memory (nothing to register), or out of the backend's reach. */
        z->usable = dpdk_own_memory(addr, length, true);
        if (!z->usable)
            logger().debug("{}: MR 0x{:x}: not DPDK memory shared with the vhost-user "
                           "backend; copied on TX",
                           name_, r->key);
        zc_[slot] = std::move(z);
        return r;
    }
    if (dpdk_own_memory(addr, length, false)) {
        /* DPDK's own memory (droce::alloc_buf): already in its memory map, and mapped for
         * DMA by the EAL; rte_extmem_register would refuse it (EEXIST). */
        z->usable = zc_reach_ == ZcReach::VirtAddr ||
                    (zc_reach_ == ZcReach::DmaMapped && rte_eal_iova_mode() == RTE_IOVA_VA);
        zc_[slot] = std::move(z);
        return r;
    }
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t lo = a & ~(page - 1), hi = (a + length + page - 1) & ~(page - 1);
    z->ext_addr = reinterpret_cast<uint8_t *>(lo);
    z->ext_len = hi - lo;
    /* Known to DPDK's memory map (rte_mem_virt2memseg, PMDs that look buffers up). Fails
     * with EEXIST when another region shares a page: harmless for ports that take
     * virtual addresses, fatal for zero-copy on a DMA port. */
    if (rte_extmem_register(z->ext_addr, z->ext_len, nullptr, 0, page) == 0) {
        z->extmem = true;
    } else {
        ++shards_[0]->ec.mr_extmem_register_failed;
        logger().info("{}: MR 0x{:x}: rte_extmem_register: {}", name_, r->key,
                      rte_strerror(rte_errno));
    }
    if (zc_reach_ == ZcReach::DmaMapped && z->extmem) {
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(port_, &info) == 0 && info.device != nullptr &&
            rte_eal_iova_mode() == RTE_IOVA_VA &&
            rte_dev_dma_map(info.device, z->ext_addr, lo, z->ext_len) == 0) {
            z->dma = true;
        } else {
            ++shards_[0]->ec.mr_dma_map_failed;
            logger().info("{}: MR 0x{:x}: no DMA mapping (IOVA as VA needed); copied on TX", name_,
                          r->key);
        }
    }
    z->usable = zc_reach_ == ZcReach::VirtAddr || z->dma;
    zc_[slot] = std::move(z);
    return r;
}

Status Dev::dereg_mr(uint32_t key, uint32_t *outstanding) {
    *outstanding = 0;
    Status s = mrs_.dereg(key);
    if (!s)
        return s;
    const uint32_t slot = key >> 8;
    if (slot < zc_.size() && zc_[slot] && zc_[slot]->key == key) {
        std::unique_ptr<ZcRegion> z = std::move(zc_[slot]);
        const uint32_t n = z->outstanding();
        if (n != 0) {
            /* virtio_user frees sent mbufs only when a later burst finds its ring nearly
             * full, so the last frames of a run stay attached after the backend read them
             * (their WRs completed: the peer received them). The memory is DPDK's own and
             * stays mapped; only the shared info (kept in zc_retired_) is touched when they
             * are freed: no wait. Elsewhere a PMD may still read the memory: wait. */
            if (zc_reach_ != ZcReach::DpdkFd)
                *outstanding = n;
            shards_[0]->ec.mr_dereg_inflight_refs += n;
            zc_retired_.push_back(std::move(z));
        }
    }
    return s;
}

bool Dev::zc_reap(uint32_t key, bool give_up) {
    /* Ask the PMD to free what it has sent (no-op, -ENOTSUP, on net_ring). */
    for (uint16_t q = 0; q < ntxq_; ++q)
        rte_eth_tx_done_cleanup(port_, q, 0);
    bool gone = true;
    for (size_t i = 0; i < zc_retired_.size();) {
        ZcRegion *z = zc_retired_[i].get();
        if (z->outstanding() == 0) {
            zc_retired_[i] = std::move(zc_retired_.back());
            zc_retired_.pop_back();
            continue;
        }
        if (z->key == key) {
            gone = false;
            if (give_up) {
                ++shards_[0]->ec.mr_dereg_timeout;
                z->key = 0; /* stays in zc_retired_ until its mbufs are back */
            }
        }
        ++i;
    }
    return gone;
}

/* ---------------- Dev: control ---------------- */

Dev::Dev(Runtime &rt, uint16_t port, std::string name, const net::Iface &ifc, uint32_t eth_mtu,
         uint32_t arp_timeout_ms, uint32_t max_qps, uint32_t workers, uint16_t nrxq, uint16_t ntxq)
    : rt_(rt), port_(port), name_(std::move(name)), ifc_(ifc), gids_(ifc.mac, {ifc.ip}),
      eth_mtu_(eth_mtu), arp_timeout_ms_(arp_timeout_ms), max_qps_(max_qps), nrxq_(nrxq),
      ntxq_(ntxq), tx_pool_(rt.pool()), qps_(max_qps) {
    ifc6_ = net::make_iface6(ifc.mac); /* the link-local address; set_l3 adds the rest */
    const std::string en = rt.unique_name("dev_ev");
    events_ = ring_alloc(en.c_str(), sizeof(EngineEvent), 4096, RING_F_EXACT_SZ);
    if (events_ == nullptr)
        throw std::bad_alloc();
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
    return rss_pick_sport(rss_key_, ifc_.ip, dst_ip, dest_qpn % workers(), nrxq_, reta_size_,
                          fallback);
}

bool Dev::next_event(EngineEvent *ev) {
    return rte_ring_mc_dequeue_elem(events_, ev, sizeof(EngineEvent)) == 0;
}

Dev::~Dev() {
    unwatch_link();
    for (auto &q : qps_)
        q.reset();
    shards_.clear(); /* frees what their TX queues still hold */
    ring_release(events_);
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
    const uint32_t qpn = sh.alloc_qpn(rt_.now_ns());
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
    cfg.send_cq = scq;
    cfg.recv_cq = rcq;
    cfg.mrs = &mrs_;
    cfg.counters = &sh.rcc;
    cfg.events = &sh;
    cfg.srq = srq ? srq->q.get() : nullptr;
    cfg.pkey_table = pkeys_.data();
    cfg.pkey_table_len = static_cast<uint32_t>(pkeys_.size());
    cfg.cc = cc_on_ ? &cc_ : nullptr;
    cfg.line_rate_bps = line_rate_bps_;
    cfg.tx_burst_frames = tx_burst_frames_;
    /* DeviceConfig's defaults are the library's: a device that sets nothing changes nothing */
    static_assert(
        DeviceConfig::RcPacing{}.dup_ack_interval_ns == rc::QpTuning{}.dup_ack_interval_ns &&
        DeviceConfig::RcPacing{}.seq_nak_interval_ns == rc::QpTuning{}.seq_nak_interval_ns &&
        DeviceConfig::RcPacing{}.seq_nak_after_run == rc::QpTuning{}.seq_nak_after_run);
    cfg.tuning.dup_ack_interval_ns = rc_pacing_.dup_ack_interval_ns;
    cfg.tuning.seq_nak_interval_ns = rc_pacing_.seq_nak_interval_ns;
    cfg.tuning.seq_nak_after_run = rc_pacing_.seq_nak_after_run;
    if (!cc_on_ && tx_burst_frames_ != 0)
        cfg.cc = &rc::kShapeOnlyCc; /* held to the line rate, but DCQCN stays off */
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
    sh.unschedule(*q);
    if (q->tx.neigh_held)
        neigh_unhold(qpn);
    --q->scq->refs;
    --q->rcq->refs;
    if (q->srq)
        --q->srq->refs;
    --sh.nqps_;
    qps_[qpn].reset();
    if (qpn >= kFirstQpn) /* QP1 (GSI) is bound by number, never allocated */
        sh.free_qpn(qpn, rt_.now_ns());
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

std::vector<std::pair<std::string, uint64_t>> Shard::counters() const {
    std::vector<std::pair<std::string, uint64_t>> v;
#define DROCE_ENGINE_VISIT(n) v.emplace_back(#n, ec.n);
    DROCE_ENGINE_COUNTERS(DROCE_ENGINE_VISIT)
#undef DROCE_ENGINE_VISIT
    for (size_t r = 1; r < static_cast<size_t>(wire::ParseResult::Count_); ++r)
        v.emplace_back(std::string("rx_drop_") +
                           wire::parse_result_name(static_cast<wire::ParseResult>(r)),
                       ec.rx_drop_parse[r]);
    v.emplace_back("rx_ack_icrc_cached", ack_icrc_.hits); /* ACK ICRCs from the cache */
    /* Gauges of this worker's scheduling state. */
    v.emplace_back("tx_queue_depth", ntx_);
    v.emplace_back("ready_qps", nready_);
    v.emplace_back("armed_timers", timers_.size());
    v.emplace_back("qps", nqps_);
    /* PFC, named as mlx5's ethtool -S names them (durations in microseconds). */
    for (unsigned i = 0; i < net::kPfcPriorities; ++i) {
        const std::string pr = "prio" + std::to_string(i) + "_pause";
        v.emplace_back("rx_" + pr, pfc_.rx_pause[i]);
        v.emplace_back("rx_" + pr + "_duration", pfc_.rx_pause_ns[i] / 1000);
        v.emplace_back("rx_" + pr + "_transition", pfc_.rx_transition[i]);
        v.emplace_back("tx_" + pr, pfc_.tx_pause[i]);
        v.emplace_back("tx_" + pr + "_duration", pfc_.tx_pause_ns[i] / 1000);
    }
    for (size_t r = 1; r < static_cast<size_t>(net::PfcResult::Count_); ++r)
        v.emplace_back(std::string("rx_mac_ctrl_") +
                           net::pfc_result_name(static_cast<net::PfcResult>(r)),
                       pfc_.rx_result[r]);
    v.emplace_back("tx_pfc_held", pfc_.tx_held);
    v.emplace_back("tx_pfc_nombuf", pfc_.tx_nombuf);
    v.emplace_back("pfc_qps_parked", pfc_.qps_parked);
    v.emplace_back("rx_pfc_pause_storm", pfc_.storms);
    v.emplace_back("rx_pfc_pause_other_prio", pfc_.other_prio);
    ud_counters(v);
    v.emplace_back("pfc_paused_qps", nparked_); /* gauges */
    v.emplace_back("pfc_paused_prios", paused_mask_);
    v.emplace_back("pfc_storm_prios", storm_mask_);
    nc.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    nc6.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    rcc.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    return v;
}

std::vector<std::pair<std::string, uint64_t>> Dev::port_counters() const {
    std::vector<std::pair<std::string, uint64_t>> v;
    rte_eth_stats st{};
    if (rte_eth_stats_get(port_, &st) == 0) {
        /* What the port itself lost before we saw it (mlx5: rx_out_of_buffer). */
        v.emplace_back("rx_out_of_buffer", st.imissed + st.rx_nombuf);
        v.emplace_back("port_rcv_errors", st.ierrors);
    }
    /* Engine-wide: mbufs not in the pools (in rings, TX queues, PMD queues). After the
     * traffic stops it must come back to what the ports hold; a leak shows here. */
    v.emplace_back("mbufs_in_use", rt_.mbufs_in_use());
    v.emplace_back("workers", shards_.size());
    capture_counters(v);
    link_counters(v);
    /* The PMD's own pause counters, where it has any (ixgbe/i40e: *xon*, *xoff*; mlx5
     * reads the kernel's): whether the port's hardware sent or honoured pause, which
     * droce's software counters cannot see. Prefixed pmd_, as the PMD names them. */
    const int n = rte_eth_xstats_get_names(port_, nullptr, 0);
    if (n > 0) {
        std::vector<rte_eth_xstat_name> names(static_cast<size_t>(n));
        std::vector<rte_eth_xstat> vals(static_cast<size_t>(n));
        if (rte_eth_xstats_get_names(port_, names.data(), static_cast<unsigned>(n)) == n &&
            rte_eth_xstats_get(port_, vals.data(), static_cast<unsigned>(n)) == n) {
            for (const rte_eth_xstat &x : vals) {
                if (x.id >= static_cast<uint64_t>(n))
                    continue;
                const std::string nm = names[x.id].name;
                if (nm.find("pause") != std::string::npos || nm.find("pfc") != std::string::npos ||
                    nm.find("xon") != std::string::npos || nm.find("xoff") != std::string::npos)
                    v.emplace_back("pmd_" + nm, x.value);
            }
        }
    }
    return v;
}

std::vector<std::pair<std::string, uint64_t>>
Dev::merge_counters(const std::vector<std::vector<std::pair<std::string, uint64_t>>> &parts) const {
    std::vector<std::pair<std::string, uint64_t>> v;
    for (const auto &part : parts) {
        if (v.empty()) {
            v = part;
            continue;
        }
        /* Every shard lists the same names in the same order. */
        for (size_t i = 0; i < v.size() && i < part.size(); ++i) {
            if (v[i].first == "tx_queue_depth_max")
                v[i].second = std::max(v[i].second, part[i].second);
            else
                v[i].second += part[i].second;
        }
    }
    for (auto &kv : port_counters())
        v.push_back(std::move(kv));
    return v;
}

std::vector<std::pair<std::string, uint64_t>> Dev::counters() const {
    std::vector<std::vector<std::pair<std::string, uint64_t>>> parts;
    for (const auto &sh : shards_)
        parts.push_back(sh->counters());
    std::vector<std::pair<std::string, uint64_t>> v = merge_counters(parts);
    uint64_t zc_out = 0;
    for (const auto &z : zc_)
        if (z)
            zc_out += z->outstanding();
    for (const auto &z : zc_retired_)
        zc_out += z->outstanding();
    v.emplace_back("zc_mbufs_outstanding", zc_out);
    return v;
}

namespace {
const char *paused_str(uint8_t prio) {
    static const char *const s[net::kPfcPriorities] = {
        " paused prio 0", " paused prio 1", " paused prio 2", " paused prio 3",
        " paused prio 4", " paused prio 5", " paused prio 6", " paused prio 7"};
    return prio < net::kPfcPriorities ? s[prio] : "";
}
std::pair<uint32_t, std::string> qp_summary(const QpCtx &q, const ud::Qp &u) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "UD state %s qkey 0x%08x sq %u rq %u worker %u%s",
                  qp_state_str(u.state()), u.qkey(), u.send_queue_depth(), u.recv_queue_depth(),
                  q.worker, paused_str(q.parked_prio));
    return {u.qpn(), buf};
}

std::pair<uint32_t, std::string> qp_summary(const QpCtx &q, const rc::Qp &qp) {
    const QpAttr &a = qp.attr();
    char buf[288];
    std::snprintf(buf, sizeof buf,
                  "state %s dest_qp_num 0x%06x path_mtu %u sq_psn 0x%06x rq_psn 0x%06x "
                  "timeout %u retry_cnt %u rnr_retry %u min_rnr_timer %u max_rd_atomic %u "
                  "max_dest_rd_atomic %u access 0x%x srq %d worker %u%s",
                  qp_state_str(qp.state()), a.dest_qp_num, mtu_bytes(a.path_mtu), a.sq_psn,
                  a.rq_psn, a.timeout, a.retry_cnt, a.rnr_retry, a.min_rnr_timer, a.max_rd_atomic,
                  a.max_dest_rd_atomic, a.qp_access_flags, q.srq != nullptr ? 1 : 0, q.worker,
                  paused_str(q.parked_prio));
    return {qp.qpn(), std::string(buf) + " | " + qp.debug_string()};
}
} // namespace

std::vector<std::pair<uint32_t, std::string>> Dev::qp_summaries(uint32_t w) const {
    std::vector<std::pair<uint32_t, std::string>> v;
    const uint32_t nw = workers();
    for (uint32_t qpn = w; qpn < max_qps_; qpn += nw) {
        const QpCtx *q = qps_[qpn].get();
        if (q == nullptr)
            continue;
        v.emplace_back(q->visit([&](const auto &t) { return qp_summary(*q, t); }));
    }
    return v;
}

void Dev::publish_for_completion(const Wc &wc) {
    if (!worker_rings_)
        return; /* embedded: the application posts into the QP itself */
    QpCtx *q = qp(wc.qp_num);
    if (q == nullptr)
        return;
    shards_[q->worker]->publish_retired(*q);
}

/* ---------------- Shard ---------------- */

Shard::Shard(Dev &dev, uint32_t index, uint32_t workers, uint32_t max_qps)
    : dev_(dev), index_(index), rxq_(index < dev.nrxq_ ? static_cast<uint16_t>(index) : UINT16_MAX),
      txq_(index < dev.ntxq_ ? static_cast<uint16_t>(index) : UINT16_MAX),
      pool_(dev.rt_.pool(index)), next_fresh_(kFirstQpn) {
    /* First QPN of this shard's residue class at or above kFirstQpn. */
    next_fresh_ = kFirstQpn + ((index + workers - kFirstQpn % workers) % workers);
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
    for (uint16_t i = 0; i < ntx_; ++i)
        rte_pktmbuf_free(tx_[i]);
    ntx_ = 0;
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

uint32_t Shard::alloc_qpn(uint64_t now) {
    const uint32_t nw = dev_.workers();
    if (next_fresh_ < dev_.max_qps_) {
        const uint32_t q = next_fresh_;
        next_fresh_ += nw;
        return q;
    }
    if (!freed_.empty() && now - freed_.front().second >= kQpnQuarantineNs) {
        const uint32_t q = freed_.front().first;
        freed_.pop_front();
        return q;
    }
    return 0;
}

void Shard::free_qpn(uint32_t qpn, uint64_t now) { freed_.emplace_back(qpn, now); }

void Shard::ready_push(QpCtx &q) {
    q.in_ready = true;
    qp_list_append(q, ready_head_, ready_tail_);
    ++nready_;
}

QpCtx *Shard::ready_pop() {
    QpCtx *q = ready_head_;
    if (q == nullptr)
        return nullptr;
    ready_head_ = q->ready_next;
    if (ready_head_)
        ready_head_->ready_prev = nullptr;
    else
        ready_tail_ = nullptr;
    q->ready_next = q->ready_prev = nullptr;
    q->in_ready = false;
    --nready_;
    return q;
}

void Shard::unschedule(QpCtx &q) {
    timers_.cancel(q.timer);
    if (q.pacer_holding) {
        q.pacer_holding = false;
        --pacer_holding_;
    }
    if (q.parked_prio != kNoPrio) {
        const uint8_t p = q.parked_prio;
        if (q.ready_prev)
            q.ready_prev->ready_next = q.ready_next;
        else
            parked_head_[p] = q.ready_next;
        if (q.ready_next)
            q.ready_next->ready_prev = q.ready_prev;
        else
            parked_tail_[p] = q.ready_prev;
        q.ready_next = q.ready_prev = nullptr;
        q.parked_prio = kNoPrio;
        --nparked_;
        return;
    }
    ready_remove(q);
}

void Shard::ready_remove(QpCtx &q) {
    if (!q.in_ready)
        return;
    if (q.ack_held) {
        qp_list_unlink(q, held_head_, held_tail_);
        q.in_ready = q.ack_held = false;
        --nheld_;
        return;
    }
    qp_list_unlink(q, ready_head_, ready_tail_);
    q.in_ready = false;
    --nready_;
}

void Shard::schedule(QpCtx &q) {
    q.visit([&](auto &t) { schedule_t(q, t); });
}

template <qp::TransportQp T> void Shard::schedule_t(QpCtx &q, T &t) {
    /* paused_prio is set only while its priority is paused (a pause ends in poll(), never
     * between a transmit and this): the QP's line is not read when nothing is paused. */
    if (paused_mask_ != 0 && q.tx.paused_prio != kNoPrio) [[unlikely]] {
        /* transmit() refused this QP's frame: its priority is paused. Park it instead of
         * serving it again and again until the pause ends (no spinning). */
        const uint8_t p = q.tx.paused_prio;
        q.tx.paused_prio = kNoPrio;
        if (q.parked_prio == kNoPrio && (paused_mask_ & (1u << p)) && t.has_tx_work())
            park(q, p);
    }
    /* neigh_held last: its line is read only when there is work, which transmit reads
     * (only an RC QP waits for its next hop: a UD address handle is resolved). */
    if (!q.in_ready && q.parked_prio == kNoPrio && t.has_tx_work() && !q.tx.neigh_held)
        ready_push(q);
    /* Lazy timers: the retransmission deadline moves later on every ACK while more is
     * outstanding, so a timer armed earlier than the QP's deadline is left alone (when it
     * fires, on_timer finds nothing due and this re-arms it); only an earlier deadline
     * re-arms. A deadline that went away (everything acknowledged) is cancelled at once:
     * O(1), where a timer left to fire would cascade through the wheel's levels first.
     * UD has neither a pacer nor deadlines: its instantiation keeps none of this. */
    if (t.pacer_holding() != q.pacer_holding) {
        q.pacer_holding = !q.pacer_holding;
        if (q.pacer_holding)
            ++pacer_holding_;
        else
            --pacer_holding_;
    }
    const qp::Time d = t.next_deadline();
    if (d == 0)
        timers_.cancel(q.timer);
    else if (!q.timer.armed() || d < q.timer.deadline)
        timers_.arm(q.timer, d);
    if (dev_.worker_rings_)
        publish_retired(q);
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
            q->doorbell.exchange(false, std::memory_order_acq_rel);
            n += drain_rings(*q);
            schedule(*q);
        }
    }
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
void complete_refused(CqCtx &cq, uint64_t wr_id, WcOpcode op, uint32_t qpn) {
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
                    complete_refused(*q.rcq, wr.wr_id, WcOpcode::Recv, t.qpn());
                }
            });
    n += drain_ring<SendWr>(
        q.sq, [&] { return q.max_send_wr - t.send_queue_depth(); },
        [&](const SendWr &wr) {
            ++q.sq_drained;
            if (!post_ring_send(t, wr).is_ok()) {
                ++ec.sq_wr_rejected;
                complete_refused(*q.scq, wr.wr_id, WcOpcode::Send, t.qpn());
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
        auto *cq = const_cast<CqCtx *>(static_cast<const CqCtx *>(ev.cq));
        if (cq->overrun)
            return;
        cq->overrun = true;
        e.cq_user = cq->user;
        e.qp_num = 0;
    }
    if (rte_ring_mp_enqueue_elem(dev_.events_, &e, sizeof(e)) == 0)
        ++ec.async_events;
    else
        ++ec.async_event_dropped;
}

} // namespace droce::engine
