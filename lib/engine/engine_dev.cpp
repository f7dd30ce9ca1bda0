/* SPDX-License-Identifier: BSD-3-Clause */
/* The per-port data path: RX classification, QP demultiplexing, timers, TX batching. */
#include <cstring>

#include <rte_byteorder.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
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

QpCtx::~QpCtx() {
    rte_ring_free(sq);
    rte_ring_free(rq);
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
                                rte_ring *sq, rte_ring *rq, QpCtx **out) {
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
    cfg.pkey_table = pkeys_.data();
    cfg.pkey_table_len = static_cast<uint32_t>(pkeys_.size());
    ctx->qp = std::make_unique<rc::Qp>(cfg);
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
    nc_.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    rcc_.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    return v;
}

/* ---------------- Dev: data path ---------------- */

bool Dev::queue_tx(rte_mbuf *m) {
    if (ntx_ == kTxBatch)
        return false;
    tx_[ntx_++] = m;
    return true;
}

bool Dev::transmit(const wire::FrameSpec &frame) {
    if (ntx_ == kTxBatch) {
        ++ec_.tx_batch_full;
        return false;
    }
    rte_mbuf *m = rte_pktmbuf_alloc(rt_.pool());
    if (m == nullptr) {
        ++ec_.tx_no_mbuf;
        return false;
    }
    /* Single segment, payload copied: zero-copy extbuf attach comes with port drivers
     * that take chained mbufs. */
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

void Dev::rx_one(rte_mbuf *m, uint64_t now) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    ++ec_.port_rcv_packets;
    ec_.port_rcv_bytes += len;
    if (m->nb_segs != 1) {
        ++ec_.rx_drop_multiseg;
        rte_pktmbuf_free(m);
        return;
    }
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
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
    const wire::ParseResult r = wire::parse_frame(p, len, pp, true);
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
    const uint32_t rq_room = q.max_recv_wr - qp.recv_queue_depth();
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

uint32_t Dev::poll(uint64_t now, uint32_t *work) {
    uint32_t w = 0;
    if (worker_rings_)
        for (QpCtx *q : active_)
            w += drain_rings(*q);

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
