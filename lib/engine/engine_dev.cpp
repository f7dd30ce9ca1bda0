/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-port data path: RX classification, QP demultiplexing, timers, TX batching. */
/* rte_dev_dma_map() is experimental in DPDK 22.11. */
#ifndef ALLOW_EXPERIMENTAL_API
#define ALLOW_EXPERIMENTAL_API
#endif
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include <rte_byteorder.h>
#include <rte_dev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_memory.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <spdlog/spdlog.h>

#include "engine.h"

namespace droce::engine {

static_assert(sizeof(SendWr) % 4 == 0 && sizeof(RecvWr) % 4 == 0 && sizeof(Wc) % 4 == 0,
              "rte_ring elements must be multiples of 4 bytes");

/* ---------------- CQ ---------------- */

bool CqCtx::push(const Wc &wc) {
    return rte_ring_sp_enqueue_elem(ring, const_cast<Wc *>(&wc), sizeof(Wc)) == 0;
}

int CqCtx::poll(Wc *wc, int max) {
    if (max <= 0)
        return 0;
    return static_cast<int>(
        rte_ring_sc_dequeue_burst_elem(ring, wc, sizeof(Wc), static_cast<unsigned>(max), nullptr));
}

CqCtx::~CqCtx() { rte_ring_free(ring); }

SrqCtx::~SrqCtx() { rte_ring_free(ring); }

SrqCtx *Dev::create_srq(uint32_t max_wr, uint32_t max_sge, rte_ring *ring) {
    auto s = std::make_unique<SrqCtx>();
    s->q = std::make_unique<rc::RecvQueue>(max_wr, max_sge);
    s->ring = ring;
    srqs_.push_back(std::move(s));
    return srqs_.back().get();
}

bool Dev::destroy_srq(SrqCtx *s) {
    if (s->refs)
        return false;
    for (size_t i = 0; i < srqs_.size(); ++i)
        if (srqs_[i].get() == s) {
            srqs_[i] = std::move(srqs_.back());
            srqs_.pop_back();
            return true;
        }
    return false;
}

QpCtx::~QpCtx() {
    rte_ring_free(sq);
    rte_ring_free(rq);
}

/* ---------------- zero-copy regions ---------------- */

namespace {

inline constexpr uint32_t kMaxZcSegs = kMaxSge;
inline constexpr uint32_t kMaxRxSegs = 32;

/* Runs when the last attached mbuf of a region is freed (refcnt 1 -> 0). */
void zc_free_cb(void *, void *opaque) { ++static_cast<ZcRegion *>(opaque)->idle_events; }

} // namespace

uint16_t ZcRegion::outstanding() const { return rte_mbuf_ext_refcnt_read(&shinfo); }

ZcRegion::~ZcRegion() {
    /* Only destroyed with no mbuf out (or at device close, the port stopped). The DMA
     * mapping goes with the registration. */
    if (extmem && rte_extmem_unregister(ext_addr, ext_len) != 0)
        spdlog::debug("rte_extmem_unregister: {}", rte_strerror(rte_errno));
}

void Dev::set_zero_copy(bool on, bool needs_dma, uint32_t min_bytes) {
    zc_on_ = on;
    zc_needs_dma_ = needs_dma;
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
    z->shinfo.free_cb = zc_free_cb;
    z->shinfo.fcb_opaque = z.get();
    rte_mbuf_ext_refcnt_set(&z->shinfo, 0);
    static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
    const uintptr_t lo = a & ~(page - 1), hi = (a + length + page - 1) & ~(page - 1);
    z->ext_addr = reinterpret_cast<uint8_t *>(lo);
    z->ext_len = hi - lo;
    /* Known to DPDK's memory map (rte_mem_virt2memseg, PMDs that look buffers up). Fails
     * with EEXIST when another region shares a page: harmless for ports that take
     * virtual addresses, fatal for zero-copy on a DMA port. */
    if (rte_extmem_register(z->ext_addr, z->ext_len, nullptr, 0, page) == 0) {
        z->extmem = true;
    } else {
        ++ec_.mr_extmem_register_failed;
        spdlog::info("{}: MR 0x{:x}: rte_extmem_register: {}", name_, r->key,
                     rte_strerror(rte_errno));
    }
    if (zc_needs_dma_ && z->extmem) {
        rte_eth_dev_info info{};
        if (rte_eth_dev_info_get(port_, &info) == 0 && info.device != nullptr &&
            rte_eal_iova_mode() == RTE_IOVA_VA &&
            rte_dev_dma_map(info.device, z->ext_addr, lo, z->ext_len) == 0) {
            z->dma = true;
        } else {
            ++ec_.mr_dma_map_failed;
            spdlog::info("{}: MR 0x{:x}: no DMA mapping (IOVA as VA needed); copied on TX",
                         name_, r->key);
        }
    }
    z->usable = !zc_needs_dma_ || z->dma;
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
        const uint16_t n = z->outstanding();
        if (n != 0) {
            *outstanding = n;
            ec_.mr_dereg_inflight_refs += n;
            zc_retired_.push_back(std::move(z));
        }
    }
    return s;
}

bool Dev::zc_reap(uint32_t key, bool give_up) {
    /* Ask the PMD to free what it has sent (no-op, -ENOTSUP, on net_ring). */
    rte_eth_tx_done_cleanup(port_, 0, 0);
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
                ++ec_.mr_dereg_timeout;
                z->key = 0; /* stays in zc_retired_ until its mbufs are back */
            }
        }
        ++i;
    }
    return gone;
}

/* ---------------- Dev: control ---------------- */

Dev::Dev(Runtime &rt, uint16_t port, std::string name, const net::Iface &ifc, uint32_t eth_mtu,
         uint32_t arp_timeout_ms)
    : rt_(rt), port_(port), name_(std::move(name)), ifc_(ifc), gids_(ifc.mac, {ifc.ip}),
      eth_mtu_(eth_mtu), arp_timeout_ms_(arp_timeout_ms), qps_(kMaxQpsPerDevice) {}

Dev::~Dev() {
    for (uint16_t i = 0; i < ntx_; ++i)
        rte_pktmbuf_free(tx_[i]);
    ntx_ = 0;
    active_.clear();
    for (auto &q : qps_)
        q.reset();
    int rc = rte_eth_dev_stop(port_);
    if (rc != 0)
        spdlog::warn("{}: rte_eth_dev_stop: {}", name_, rte_strerror(-rc));
    rc = rte_eth_dev_close(port_);
    if (rc != 0)
        spdlog::warn("{}: rte_eth_dev_close: {}", name_, rte_strerror(-rc));
}

uint32_t Dev::active_mtu() const {
    return wire::ib_mtu_to_bytes(wire::ib_mtu_for_eth_mtu(eth_mtu_));
}

Result<uint32_t> Dev::create_qp(uint32_t pd, const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq,
                                rte_ring *sq, rte_ring *rq, QpCtx **out, SrqCtx *srq) {
    /* Round-robin from the last allocation so a just-freed QPN is not handed out again
     * at once (stale packets for the old QP would land on the new one). */
    uint32_t qpn = 0;
    for (uint32_t i = 0; i < kMaxQpsPerDevice - kFirstQpn; ++i) {
        const uint32_t c = next_qpn_;
        next_qpn_ = next_qpn_ + 1 >= kMaxQpsPerDevice ? kFirstQpn : next_qpn_ + 1;
        if (!qps_[c]) {
            qpn = c;
            break;
        }
    }
    if (qpn == 0)
        return Status(ENOSPC, "create_qp: all " + std::to_string(kMaxQpsPerDevice - kFirstQpn) +
                                  " QPs of " + name_ + " are in use");
    auto ctx = std::make_unique<QpCtx>();
    rc::QpConfig cfg;
    cfg.qpn = qpn;
    cfg.pd = pd;
    cfg.cap = attr.cap;
    cfg.sq_sig_all = attr.sq_sig_all;
    cfg.port = this;
    cfg.send_cq = scq;
    cfg.recv_cq = rcq;
    cfg.mrs = &mrs_;
    cfg.counters = &rcc_;
    cfg.srq = srq ? srq->q.get() : nullptr;
    cfg.pkey_table = pkeys_.data();
    cfg.pkey_table_len = static_cast<uint32_t>(pkeys_.size());
    ctx->qp = std::make_unique<rc::Qp>(cfg);
    ctx->srq = srq;
    if (srq)
        ++srq->refs;
    ctx->sq = sq;
    ctx->rq = rq;
    ctx->scq = scq;
    ctx->rcq = rcq;
    ctx->max_send_wr = attr.cap.max_send_wr;
    ctx->max_recv_wr = attr.cap.max_recv_wr;
    ++scq->refs;
    ++rcq->refs;
    *out = ctx.get();
    active_.push_back(ctx.get());
    qps_[qpn] = std::move(ctx);
    return qpn;
}

void Dev::destroy_qp(uint32_t qpn) {
    QpCtx *q = qp(qpn);
    if (q == nullptr)
        return;
    --q->scq->refs;
    --q->rcq->refs;
    if (q->srq)
        --q->srq->refs;
    for (size_t i = 0; i < active_.size(); ++i)
        if (active_[i] == q) {
            active_[i] = active_.back();
            active_.pop_back();
            break;
        }
    qps_[qpn].reset();
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
    rte_mbuf *m = rte_pktmbuf_alloc(rt_.pool());
    if (m == nullptr) {
        ++ec_.tx_no_mbuf;
        return; /* the next retry tries again */
    }
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    const size_t n = net::build_arp_request(ifc_, ip, p, rte_pktmbuf_tailroom(m));
    m->data_len = static_cast<uint16_t>(n);
    m->pkt_len = static_cast<uint32_t>(n);
    if (!queue_tx(m)) {
        ++ec_.tx_drop_reply_batch_full;
        rte_pktmbuf_free(m);
        return;
    }
    ++nc_.arp_requests_sent;
}

std::vector<std::pair<std::string, uint64_t>> Dev::counters() const {
    std::vector<std::pair<std::string, uint64_t>> v;
#define DROCE_ENGINE_VISIT(n) v.emplace_back(#n, ec_.n);
    DROCE_ENGINE_COUNTERS(DROCE_ENGINE_VISIT)
#undef DROCE_ENGINE_VISIT
    for (size_t r = 1; r < static_cast<size_t>(wire::ParseResult::Count_); ++r)
        v.emplace_back(std::string("rx_drop_") +
                           wire::parse_result_name(static_cast<wire::ParseResult>(r)),
                       ec_.rx_drop_parse[r]);
    rte_eth_stats st{};
    if (rte_eth_stats_get(port_, &st) == 0) {
        /* What the port itself lost before we saw it (mlx5: rx_out_of_buffer). */
        v.emplace_back("rx_out_of_buffer", st.imissed + st.rx_nombuf);
        v.emplace_back("port_rcv_errors", st.ierrors);
    }
    /* Engine-wide: mbufs not in the pools (in rings, TX batches, PMD queues). After the
     * traffic stops it must come back to what the ports hold; a leak shows here. */
    v.emplace_back("mbufs_in_use", rte_mempool_in_use_count(rt_.pool()) +
                                       rte_mempool_in_use_count(rt_.zc_pool()));
    uint64_t zc_out = 0;
    for (const auto &z : zc_)
        if (z)
            zc_out += z->outstanding();
    for (const auto &z : zc_retired_)
        zc_out += z->outstanding();
    v.emplace_back("zc_mbufs_outstanding", zc_out);
    nc_.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    rcc_.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    return v;
}

std::vector<std::pair<uint32_t, std::string>> Dev::qp_summaries() const {
    std::vector<std::pair<uint32_t, std::string>> v;
    v.reserve(active_.size());
    for (const QpCtx *q : active_) {
        const rc::Qp &qp = *q->qp;
        const QpAttr &a = qp.attr();
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "state %s dest_qp_num 0x%06x path_mtu %u sq_psn 0x%06x rq_psn 0x%06x "
                      "timeout %u retry_cnt %u rnr_retry %u min_rnr_timer %u max_rd_atomic %u "
                      "max_dest_rd_atomic %u access 0x%x srq %d",
                      qp_state_str(qp.state()), a.dest_qp_num, mtu_bytes(a.path_mtu), a.sq_psn,
                      a.rq_psn, a.timeout, a.retry_cnt, a.rnr_retry, a.min_rnr_timer,
                      a.max_rd_atomic, a.max_dest_rd_atomic, a.qp_access_flags,
                      q->srq != nullptr ? 1 : 0);
        v.emplace_back(qp.qpn(), std::string(buf) + " | " + qp.debug_string());
    }
    return v;
}

/* ---------------- Dev: data path ---------------- */

bool Dev::queue_tx(rte_mbuf *m) {
    if (ntx_ == kTxBatch)
        return false;
    tx_[ntx_++] = m;
    return true;
}

int Dev::transmit_zc(const wire::FrameSpec &f) {
    if (f.nsegs == 0 || f.nsegs > kMaxZcSegs)
        return -1;
    ZcRegion *regs[kMaxZcSegs];
    uint64_t sum = 0;
    for (uint32_t i = 0; i < f.nsegs; ++i) {
        const wire::FrameSpec::Seg &g = f.segs[i];
        const uint32_t slot = g.mr_key >> 8;
        if (g.mr_key == 0 || g.len == 0 || g.len > UINT16_MAX || slot >= zc_.size())
            return -1;
        ZcRegion *z = zc_[slot].get();
        if (z == nullptr || z->key != g.mr_key || !z->usable)
            return -1;
        regs[i] = z;
        sum += g.len;
    }
    if (sum != f.payload_len)
        return -1;
    const uint32_t n = f.nsegs + 2; /* headers, one per segment, pad + ICRC */
    rte_mbuf *mb[kMaxZcSegs + 2];
    if (rte_pktmbuf_alloc_bulk(rt_.zc_pool(), mb, n) != 0) {
        ++ec_.tx_no_mbuf;
        return 0;
    }
    rte_mbuf *h = mb[0];
    uint8_t *p = rte_pktmbuf_mtod(h, uint8_t *);
    const size_t hl = wire::build_headers(f, p, rte_pktmbuf_tailroom(h));
    if (hl == 0) {
        rte_pktmbuf_free_bulk(mb, n);
        ++ec_.tx_frame_too_big;
        return 1;
    }
    h->data_len = static_cast<uint16_t>(hl);
    const bool iova_va = rte_eal_iova_mode() == RTE_IOVA_VA;
    wire::ByteSpan spans[kMaxZcSegs + 1];
    rte_mbuf *prev = h;
    for (uint32_t i = 0; i < f.nsegs; ++i) {
        rte_mbuf *m = mb[1 + i];
        const wire::FrameSpec::Seg &g = f.segs[i];
        void *addr = const_cast<uint8_t *>(g.addr);
        rte_mbuf_ext_refcnt_update(&regs[i]->shinfo, 1);
        rte_pktmbuf_attach_extbuf(m, addr,
                                  iova_va ? static_cast<rte_iova_t>(reinterpret_cast<uintptr_t>(addr))
                                          : RTE_BAD_IOVA,
                                  static_cast<uint16_t>(g.len), &regs[i]->shinfo);
        m->data_len = static_cast<uint16_t>(g.len);
        prev->next = m;
        prev = m;
        spans[i] = {g.addr, g.len};
    }
    rte_mbuf *t = mb[n - 1];
    uint8_t *tp = rte_pktmbuf_mtod(t, uint8_t *);
    const uint32_t pad = wire::pad_len(f.payload_len);
    std::memset(tp, 0, pad);
    spans[f.nsegs] = {tp, pad};
    const size_t l2 = wire::encoded_len(f.eth);
    wire::icrc_store(wire::icrc_compute_segments(p + l2, hl - l2, spans, f.nsegs + 1, f.ipv6),
                     tp + pad);
    t->data_len = static_cast<uint16_t>(pad + wire::kIcrcLen);
    prev->next = t;
    h->nb_segs = static_cast<uint16_t>(n);
    h->pkt_len = static_cast<uint32_t>(hl + f.payload_len + pad + wire::kIcrcLen);
    tx_[ntx_++] = h;
    ec_.tx_bytes_zero_copy += f.payload_len;
    return 1;
}

bool Dev::transmit(const wire::FrameSpec &frame) {
    if (ntx_ == kTxBatch) {
        ++ec_.tx_batch_full;
        return false;
    }
    /* Zero-copy where the port takes chains, the memory is a usable registered region
     * and the payload is large enough to be worth three mbufs; else one copied frame. */
    if (zc_on_ && frame.payload_len >= zc_min_ && frame.payload_len != 0) {
        const int r = transmit_zc(frame);
        if (r >= 0)
            return r != 0;
    }
    rte_mbuf *m = rte_pktmbuf_alloc(rt_.pool());
    if (m == nullptr) {
        ++ec_.tx_no_mbuf;
        return false;
    }
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    const size_t n = wire::build_frame(frame, p, rte_pktmbuf_tailroom(m));
    if (n == 0) {
        /* Cannot get better by retrying: drop it (the transport retransmits or times
         * out) and say why. */
        ++ec_.tx_frame_too_big;
        rte_pktmbuf_free(m);
        return true;
    }
    m->data_len = static_cast<uint16_t>(n);
    m->pkt_len = static_cast<uint32_t>(n);
    tx_[ntx_++] = m;
    ec_.tx_bytes_copied += frame.payload_len;
    return true;
}

uint32_t Dev::flush_tx() {
    if (ntx_ == 0)
        return 0;
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < ntx_; ++i)
        bytes += rte_pktmbuf_pkt_len(tx_[i]);
    const uint16_t sent = rte_eth_tx_burst(port_, 0, tx_, ntx_);
    for (uint16_t i = sent; i < ntx_; ++i) {
        bytes -= rte_pktmbuf_pkt_len(tx_[i]);
        rte_pktmbuf_free(tx_[i]);
    }
    ec_.port_xmit_packets += sent;
    ec_.port_xmit_bytes += bytes;
    ec_.port_xmit_discards += ntx_ - sent;
    ntx_ = 0;
    return sent;
}

/* A chained frame (zero-copy TX over net_ring, scattered jumbo RX): headers from the
 * first segment, ICRC over the chain without linearising, payload left where it is as a
 * span list for the transport's one copy. spans has room for 2 * kMaxRxSegs + 1. */
wire::ParseResult Dev::parse_chain(rte_mbuf *m, wire::ParsedPacket &pp, wire::ByteSpan *spans) {
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    const uint32_t contig = rte_pktmbuf_data_len(m);
    const wire::ParseResult r = wire::parse_frame_headers(p, contig, rte_pktmbuf_pkt_len(m), pp);
    if (r != wire::ParseResult::Ok)
        return r;
    if (pp.frame_len <= contig) /* all in the first segment (padding chained after) */
        return wire::parse_frame(p, contig, pp, true);
    const uint32_t crc_end = pp.frame_len - static_cast<uint32_t>(wire::kIcrcLen);
    const uint32_t pay_lo = pp.payload_off, pay_hi = pp.payload_off + pp.payload_len;
    wire::ByteSpan *crc = spans, *pay = spans + kMaxRxSegs;
    uint32_t ncrc = 0, npay = 0;
    uint32_t o = contig;
    for (const rte_mbuf *s = m->next; s != nullptr && o < crc_end; s = s->next) {
        const uint8_t *d = rte_pktmbuf_mtod(s, const uint8_t *);
        const uint32_t lo = o, hi = o + s->data_len;
        o = hi;
        if (ncrc == kMaxRxSegs)
            return wire::ParseResult::Count_; /* too many segments */
        const uint32_t ce = hi < crc_end ? hi : crc_end;
        crc[ncrc++] = {d, ce - lo};
        const uint32_t a = lo > pay_lo ? lo : pay_lo, b = hi < pay_hi ? hi : pay_hi;
        if (a < b)
            pay[npay++] = {d + (a - lo), b - a};
    }
    uint8_t ib[wire::kIcrcLen];
    const uint8_t *ip = static_cast<const uint8_t *>(
        rte_pktmbuf_read(m, crc_end, static_cast<uint32_t>(wire::kIcrcLen), ib));
    if (ip == nullptr)
        return wire::ParseResult::TooShort;
    pp.icrc = wire::icrc_load(ip);
    /* Payload bytes inside the first segment, if any, come first. */
    if (pay_lo < contig) {
        const uint32_t e = pay_hi < contig ? pay_hi : contig;
        for (uint32_t i = npay; i > 0; --i)
            pay[i] = pay[i - 1];
        pay[0] = {p + pay_lo, e - pay_lo};
        ++npay;
    }
    const uint32_t first_end = contig < crc_end ? contig : crc_end;
    if (wire::icrc_compute_segments(p + pp.l3_off, first_end - pp.l3_off, crc, ncrc, pp.ipv6) !=
        pp.icrc)
        return wire::ParseResult::BadIcrc;
    pp.payload_segs = pay;
    pp.payload_nsegs = npay;
    return wire::ParseResult::Ok;
}

void Dev::rx_one(rte_mbuf *m, uint64_t now) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    ++ec_.port_rcv_packets;
    ec_.port_rcv_bytes += len;
    const bool chained = m->nb_segs != 1;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    if (chained && rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + 4) {
        ++ec_.rx_drop_multiseg;
        rte_pktmbuf_free(m);
        return;
    }
    if (len < RTE_ETHER_HDR_LEN) {
        ++ec_.rx_drop_parse[static_cast<size_t>(wire::ParseResult::TooShort)];
        rte_pktmbuf_free(m);
        return;
    }
    /* Our MAC may differ from the port's (promiscuous then): filter in software. */
    if (std::memcmp(p, ifc_.mac.data(), 6) != 0 &&
        std::memcmp(p, net::kBroadcastMac.data(), 6) != 0) {
        ++ec_.rx_drop_not_our_mac;
        rte_pktmbuf_free(m);
        return;
    }
    size_t l2 = RTE_ETHER_HDR_LEN;
    uint16_t et = static_cast<uint16_t>((p[12] << 8) | p[13]);
    if (et == net::kEtherTypeVlan && len >= RTE_ETHER_HDR_LEN + 4) {
        l2 += 4;
        et = static_cast<uint16_t>((p[16] << 8) | p[17]);
    }
    if (chained && (et == net::kEtherTypeArp || et == net::kEtherTypeIpv4) &&
        (et == net::kEtherTypeArp || rte_pktmbuf_data_len(m) <= l2 + 9 ||
         p[l2 + 9] == net::kIpProtoIcmp)) {
        /* ARP/ICMP replies are built in place: not on a chain. */
        ++ec_.rx_drop_multiseg;
        rte_pktmbuf_free(m);
        return;
    }
    if (et == net::kEtherTypeArp) {
        if (net::handle_arp(ifc_, p, len, l2, neigh_, now, nc_) == net::ArpVerdict::Reply) {
            if (queue_tx(m))
                return;
            ++ec_.tx_drop_reply_batch_full;
        }
        rte_pktmbuf_free(m);
        return;
    }
    if (et == net::kEtherTypeIpv4 && len >= l2 + 20 && p[l2 + 9] == net::kIpProtoIcmp) {
        const size_t n = net::handle_icmp(ifc_, p, len, l2, nc_);
        if (n != 0) {
            m->data_len = static_cast<uint16_t>(n);
            m->pkt_len = static_cast<uint32_t>(n);
            if (queue_tx(m))
                return;
            ++ec_.tx_drop_reply_batch_full;
        }
        rte_pktmbuf_free(m);
        return;
    }
    if (et != net::kEtherTypeIpv4 && et != RTE_ETHER_TYPE_IPV6 && et != net::kEtherTypeVlan) {
        ++ec_.rx_drop_unknown_ethertype;
        rte_pktmbuf_free(m);
        return;
    }
    wire::ParsedPacket pp;
    wire::ByteSpan spans[2 * kMaxRxSegs + 1];
    const wire::ParseResult r =
        chained ? parse_chain(m, pp, spans) : wire::parse_frame(p, len, pp, true);
    if (chained && (r == wire::ParseResult::Count_ ||
                    (r == wire::ParseResult::TooShort && rte_pktmbuf_data_len(m) < len))) {
        /* Headers not in the first segment, or too many segments. */
        ++ec_.rx_drop_multiseg;
        rte_pktmbuf_free(m);
        return;
    }
    if (chained && r == wire::ParseResult::Ok)
        ++ec_.rx_multiseg_packets;
    if (r != wire::ParseResult::Ok) {
        ++ec_.rx_drop_parse[static_cast<size_t>(r)];
        rte_pktmbuf_free(m);
        return;
    }
    if (!pp.ipv6 && pp.ip4.dst != ifc_.ip) {
        ++ec_.rx_drop_not_our_ip;
        rte_pktmbuf_free(m);
        return;
    }
    QpCtx *q = qp(pp.bth.dest_qp);
    if (q == nullptr) {
        ++ec_.rx_drop_unknown_qpn;
        rte_pktmbuf_free(m);
        return;
    }
    /* The transport copies what it keeps (payload into MRs/receive buffers), so the
     * mbuf can go right after. */
    q->qp->on_packet(pp, now);
    rte_pktmbuf_free(m);
}

uint32_t Dev::drain_rings(QpCtx &q) {
    uint32_t n = 0;
    rc::Qp &qp = *q.qp;
    /* Take only what the QP has room for, so a WR is never dequeued and then lost. */
    const uint32_t rq_room = q.srq ? 0 : q.max_recv_wr - qp.recv_queue_depth();
    if (rq_room && !rte_ring_empty(q.rq)) {
        RecvWr wr[kWrBurst];
        const unsigned k = rte_ring_sc_dequeue_burst_elem(
            q.rq, wr, sizeof(RecvWr), rq_room < kWrBurst ? rq_room : kWrBurst, nullptr);
        for (unsigned i = 0; i < k; ++i)
            if (!qp.post_recv(wr[i]).is_ok()) {
                ++ec_.rq_wr_rejected;
                Wc wc{};
                wc.wr_id = wr[i].wr_id;
                wc.status = WcStatus::LocQpOpErr;
                wc.opcode = WcOpcode::Recv;
                wc.qp_num = qp.qpn();
                q.rcq->push(wc);
            }
        n += k;
    }
    const uint32_t sq_room = q.max_send_wr - qp.send_queue_depth();
    if (sq_room && !rte_ring_empty(q.sq)) {
        SendWr wr[kWrBurst];
        const unsigned k = rte_ring_sc_dequeue_burst_elem(
            q.sq, wr, sizeof(SendWr), sq_room < kWrBurst ? sq_room : kWrBurst, nullptr);
        for (unsigned i = 0; i < k; ++i)
            if (!qp.post_send(wr[i]).is_ok()) {
                /* The application side checked what it could; a WR still refused here
                 * must not vanish silently: complete it in error. */
                ++ec_.sq_wr_rejected;
                Wc wc{};
                wc.wr_id = wr[i].wr_id;
                wc.status = WcStatus::LocQpOpErr;
                wc.opcode = WcOpcode::Send;
                wc.qp_num = qp.qpn();
                q.scq->push(wc);
            }
        n += k;
    }
    return n;
}

uint32_t Dev::drain_srq(SrqCtx &s) {
    const uint32_t room = s.q->max_wr() - s.q->depth();
    if (room == 0 || rte_ring_empty(s.ring))
        return 0;
    RecvWr wr[kWrBurst];
    const unsigned k = rte_ring_sc_dequeue_burst_elem(s.ring, wr, sizeof(RecvWr),
                                                      room < kWrBurst ? room : kWrBurst, nullptr);
    for (unsigned i = 0; i < k; ++i)
        if (!s.q->post(wr[i]).is_ok())
            ++ec_.rq_wr_rejected; /* checked on the application side; cannot happen */
    return k;
}

uint32_t Dev::poll(uint64_t now, uint32_t *work) {
    uint32_t w = 0;
    if (worker_rings_) {
        for (QpCtx *q : active_)
            w += drain_rings(*q);
        for (auto &srq : srqs_)
            w += drain_srq(*srq);
    }

    rte_mbuf *rx[kRxBurst];
    const uint16_t nrx = rte_eth_rx_burst(port_, 0, rx, kRxBurst);
    for (uint16_t i = 0; i < nrx; ++i)
        rx_one(rx[i], now);

    /* Timers and TX work by scanning the active QPs: O(QPs) per iteration, fine for
     * tens of QPs; a timing wheel and a doorbell list replace it when a benchmark with
     * many QPs asks for it. */
    for (QpCtx *q : active_) {
        const rc::Time d = q->qp->next_deadline();
        if (d != 0 && now >= d) {
            q->qp->on_timer(now);
            ++w;
        }
        if (q->qp->has_tx_work())
            q->qp->progress(now);
    }
    const uint32_t ntx = flush_tx();
    *work = w + nrx + ntx;
    return nrx + ntx;
}

} // namespace droce::engine
