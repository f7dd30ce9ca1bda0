/* SPDX-License-Identifier: BSD-3-Clause */
/* A shard's RX, the per-packet path: the burst with its prefetch pipeline, the fast path of
 * a small RC frame, the classified generic path (net::classify_frame), the RoCE parse and
 * the delivery to a QP or to the worker that owns it. */
#include <cassert>
#include <cstring>
#include <type_traits>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "engine_runtime.h"
#include "wire_rocev1.h"

namespace droce::engine {

wire::ParseResult Shard::parse_chain(rte_mbuf *m, wire::ParsedPacket &pp, wire::ByteSpan *spans) {
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
    /* Payload bytes inside the first segment, if any, come first. */
    if (pay_lo < contig) {
        const uint32_t e = pay_hi < contig ? pay_hi : contig;
        for (uint32_t i = npay; i > 0; --i)
            pay[i] = pay[i - 1];
        pay[0] = {p + pay_lo, e - pay_lo};
        ++npay;
    }
    const uint32_t first_end = contig < crc_end ? contig : crc_end;
    const size_t l3_len = first_end - pp.l3_off;
    const uint32_t icrc =
        pp.rocev1 ? wire::icrc_v1_compute_segments(p + pp.l3_off, l3_len, crc, ncrc)
                  : wire::icrc_compute_segments(p + pp.l3_off, l3_len, crc, ncrc, pp.ipv6);
    /* The trailer after the CRC pass, which streams the frame up to it (loaded first, a
     * frame another core wrote paid a demand miss there before the fold began). */
    uint8_t ib[wire::kIcrcLen];
    const uint8_t *ip = static_cast<const uint8_t *>(
        rte_pktmbuf_read(m, crc_end, static_cast<uint32_t>(wire::kIcrcLen), ib));
    if (ip == nullptr)
        return wire::ParseResult::TooShort;
    pp.icrc = wire::icrc_load(ip);
    if (icrc != pp.icrc)
        return wire::ParseResult::BadIcrc;
    pp.payload_segs = pay;
    pp.payload_nsegs = npay;
    return wire::ParseResult::Ok;
}

[[gnu::always_inline]] inline void Shard::prefetch_frame(const rte_mbuf *m) {
    /* The first three lines unconditionally (a small RC frame, 58 to 150 bytes, and an ACK
     * lie in them; a prefetch never faults, so one past a short frame costs only the
     * fetch), the rest up to kRxPrefetchBytes only for a longer frame. */
    const uintptr_t p = rte_pktmbuf_mtod(m, uintptr_t);
    const uintptr_t first = p & ~uintptr_t{RTE_CACHE_LINE_SIZE - 1};
    const char *l = reinterpret_cast<const char *>(first);
    rte_prefetch0(l);
    rte_prefetch0(l + RTE_CACHE_LINE_SIZE);
    rte_prefetch0(l + 2 * RTE_CACHE_LINE_SIZE);
    const uintptr_t end = p + std::min<uint32_t>(rte_pktmbuf_data_len(m), kRxPrefetchBytes);
    for (uintptr_t a = first + 3 * RTE_CACHE_LINE_SIZE; a < end; a += RTE_CACHE_LINE_SIZE)
        rte_prefetch0(reinterpret_cast<const void *>(a));
}

/* First step of the RX prefetch pipeline: the QP a packet is for (its header must be on
 * its way already), with the QpCtx fetch started unless the packet before it (prev) is
 * for the same QP (a burst of one QP's packets asks for its lines once). nullptr when it
 * is not a plain IPv4 RoCEv2 frame for a QP of this shard: rx_one() sorts those out. */
[[gnu::always_inline]] inline QpCtx *Shard::prefetch_ctx(rte_mbuf *m, const QpCtx *prev) const {
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    /* Untagged IPv4/UDP RoCEv2 only (the common case); the BTH DestQP is at byte 47. */
    if (rte_pktmbuf_data_len(m) < 50 || p[12] != 0x08 || p[13] != 0x00 || p[23] != 17)
        return nullptr;
    const uint32_t qpn = (uint32_t{p[47]} << 16) | (uint32_t{p[48]} << 8) | p[49];
    if (qpn >= dev_.max_qps_ || dev_.owner(qpn) != index_)
        return nullptr;
    QpCtx *q = dev_.qps_[qpn].get();
    if (q != nullptr && q != prev) {
        /* The worker's part: pointers, scheduling state and the header template (an
         * answer may go out while the packet is handled). */
        const char *c = reinterpret_cast<const char *>(q);
        const char *end = reinterpret_cast<const char *>(&q->doorbell);
        for (; c < end; c += RTE_CACHE_LINE_SIZE)
            rte_prefetch0(c);
    }
    return q;
}

void Shard::rx_burst(rte_mbuf **rx, uint16_t n, uint64_t now) {
    /* With many QPs their state is cold, and the way to it is a chain of dependent loads:
     * the header gives the QPN, the QPN the QpCtx, the QpCtx the rc::Qp. Each step runs a
     * packet ahead of the next — all headers first, the QpCtx two packets ahead, the
     * rc::Qp one ahead — so the misses overlap with the work on earlier packets instead
     * of stalling the packet that needs them. */
    if (cap_ != nullptr) [[unlikely]] {
        rx_burst_captured(rx, n, now);
        return;
    }
    /* Every line of a small frame, not only its headers: a port whose peer writes the
     * frame into our mbuf on its own core (virtio_user's vhost backend, net_ring's other
     * thread, a NIC's DMA) leaves those lines in another cache, and the ICRC's pass over
     * the frame then waited for them one after the other (vhost -> virtio_user 64 B: 27 %
     * of the receiver's samples in icrc_small). Asked for together, the misses overlap. */
    for (uint16_t i = 0; i < n; ++i)
        prefetch_frame(rx[i]);
    if (n <= 2) {
        /* Ping-pong (a reply and the ACK of the last one): the pipeline has nothing to
         * overlap the misses with, and its walk of the headers and QpCtx costs more
         * than it hides. */
        for (uint16_t i = 0; i < n; ++i)
            rx_one_t<false>(rx[i], now);
        finish_rx();
        return;
    }
    QpCtx *ahead[kRxBurst];
    ahead[0] = prefetch_ctx(rx[0], nullptr);
    ahead[1] = prefetch_ctx(rx[1], ahead[0]);
    if (ahead[0] != nullptr)
        ahead[0]->visit([](const auto &t) { t.prefetch(); });
    for (uint16_t i = 0; i < n; ++i) {
        if (i + 2 < n)
            ahead[i + 2] = prefetch_ctx(rx[i + 2], ahead[i + 1]);
        if (i + 1 < n && ahead[i + 1] != nullptr && ahead[i + 1] != ahead[i])
            ahead[i + 1]->visit([](const auto &t) { t.prefetch(); });
        rx_one_t<false>(rx[i], now, ahead[i]);
    }
    finish_rx();
}

void Shard::handoff(uint32_t owner, rte_mbuf *m) {
    if (rte_ring_mp_enqueue(dev_.shards_[owner]->rx_in_, m) == 0) {
        ++ec.rx_handoff;
        return;
    }
    ++ec.rx_drop_handoff_full;
    rte_pktmbuf_free(m);
}

void Shard::rx_one(rte_mbuf *m, uint64_t now) {
    rx_one_t<false>(m, now);
    finish_rx();
}

template <bool Cap> void Shard::rx_one_t(rte_mbuf *m, uint64_t now, QpCtx *found) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    ++ec.port_rcv_packets;
    ec.port_rcv_bytes += len;
    const bool chained = m->nb_segs != 1;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    /* Fast path: an untagged IPv4 ACK, SEND ONLY or WRITE ONLY to our MAC and address on
     * an untagged port (the frames of a small RC exchange). Every test of the generic path below
     * holds for it (not MAC Control, our unicast MAC, VID 0 == the port's, not ARP/ICMP,
     * parse Ok, our IPv4 address on the port's VLAN), so it goes straight to the QP as
     * the fast parse's view; anything else takes the generic path, which counts. */
    wire::SmallFrame sf;
    if (!chained && dev_.vlan_ == 0 && wire::parse_small_frame(p, len, sf, &ack_icrc_) &&
        sf.dst_ip == dev_.ifc_.ip && std::memcmp(p, dev_.ifc_.mac.data(), 6) == 0) [[likely]] {
        ++ec.rx_fast_path;
        rx_deliver<Cap>(m, sf, len, now, found);
        return;
    }
    rx_classified<Cap>(m, now);
}

/* Out of line: the fast path above then keeps its registers to itself. */
template <bool Cap> [[gnu::noinline]] void Shard::rx_classified(rte_mbuf *m, uint64_t now) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    const bool chained = m->nb_segs != 1;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    const net::RxL2Addrs addrs{dev_.ifc_.mac, dev_.vlan_, dev_.gid_vlans_, dev_.ngid_vlans_,
                               &dev_.ifc6_};
    const net::FrameVerdict v =
        net::classify_frame({p, rte_pktmbuf_data_len(m), len, chained}, addrs);
    switch (v.kind) {
    case net::FrameKind::RoceV2:
    case net::FrameKind::RoceV1:
    case net::FrameKind::IpOther: /* the parser counts why it is not ours */
        rx_roce<Cap>(m, v.vid, now);
        return;
    case net::FrameKind::MacControl:
        rx_mac_control(m, now, false);
        return;
    case net::FrameKind::Arp:
        rx_arp(m, v.l2_len, now);
        return;
    case net::FrameKind::Icmp:
        rx_icmp(m, v.l2_len);
        return;
    case net::FrameKind::Icmp6:
        rx_icmp6(m, p, len, v.l2_len, now);
        return;
    case net::FrameKind::Drop:
        break;
    }
    count_rx_drop(v.drop);
    rte_pktmbuf_free(m);
}

void Shard::count_rx_drop(net::FrameDrop why) {
    switch (why) {
    case net::FrameDrop::TooShort:
        ++ec.rx_drop_parse[static_cast<size_t>(wire::ParseResult::TooShort)];
        break;
    case net::FrameDrop::BadEthertype: /* the RoCE parser's name for a stacked tag */
        ++ec.rx_drop_parse[static_cast<size_t>(wire::ParseResult::BadEthertype)];
        break;
    case net::FrameDrop::Multiseg:
        ++ec.rx_drop_multiseg;
        break;
    case net::FrameDrop::NotOurMac:
        ++ec.rx_drop_not_our_mac;
        break;
    case net::FrameDrop::VlanMismatch:
        ++ec.rx_drop_vlan_mismatch;
        break;
    case net::FrameDrop::UnknownEthertype:
    case net::FrameDrop::None: /* not a drop verdict: never here */
    case net::FrameDrop::Count_:
        ++ec.rx_drop_unknown_ethertype;
        break;
    }
}

/* ARP: the neighbour table lives on worker 0; a request for us is answered in place. */
void Shard::rx_arp(rte_mbuf *m, uint32_t l2, uint64_t now) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    if (index_ != 0) {
        --ec.port_rcv_packets;
        ec.port_rcv_bytes -= len;
        handoff(0, m);
        return;
    }
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    if (net::handle_arp(dev_.ifc_, p, len, l2, dev_.neigh_, now, nc) == net::ArpVerdict::Reply) {
        if (queue_tx(m))
            return;
        ++ec.tx_drop_reply_batch_full;
    }
    rte_pktmbuf_free(m);
}

/* ICMP echo: answered in place, on whichever worker received it. */
void Shard::rx_icmp(rte_mbuf *m, uint32_t l2) {
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    const size_t n = net::handle_icmp(dev_.ifc_, p, rte_pktmbuf_pkt_len(m), l2, nc);
    if (n != 0) {
        m->data_len = static_cast<uint16_t>(n);
        m->pkt_len = static_cast<uint32_t>(n);
        if (queue_tx(m))
            return;
        ++ec.tx_drop_reply_batch_full;
    }
    rte_pktmbuf_free(m);
}

/* A frame the classifier calls RoCE (v2 over IP, or v1) on VLAN vid: the RoCE parse, then
 * whether its destination is one of our GIDs, on that GID's VLAN. */
template <bool Cap> void Shard::rx_roce(rte_mbuf *m, uint16_t vid, uint64_t now) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    const bool chained = m->nb_segs != 1;
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    wire::ParsedPacket pp;
    wire::ByteSpan spans[2 * kMaxRxSegs + 1];
    const wire::ParseResult r =
        chained ? parse_chain(m, pp, spans) : wire::parse_frame(p, len, pp, true);
    if (chained && (r == wire::ParseResult::Count_ ||
                    (r == wire::ParseResult::TooShort && rte_pktmbuf_data_len(m) < len))) {
        /* Headers not in the first segment, or too many segments. */
        ++ec.rx_drop_multiseg;
        rte_pktmbuf_free(m);
        return;
    }
    if (chained && r == wire::ParseResult::Ok)
        ++ec.rx_multiseg_packets;
    if (r != wire::ParseResult::Ok) {
        ++ec.rx_drop_parse[static_cast<size_t>(r)];
        rte_pktmbuf_free(m);
        return;
    }
    /* RoCEv1 frames are ours only for a GID the table holds as RoCEv1 (rocev1_gids).
     * Each GID is on its VLAN: the IPv4 one on the port's, an IPv6 one on its address's. */
    int gi = 0;
    uint16_t want_vid = dev_.vlan_;
    if (pp.rocev1) [[unlikely]] {
        gi = dev_.gids_.find_v1(pp.dst_gid);
        want_vid = dev_.gids_.vlan(static_cast<uint32_t>(gi));
    } else if (pp.ipv6) {
        gi = dev_.ifc6_.find(pp.dst_gid);
        want_vid = gi >= 0 ? dev_.ifc6_.vid_of(gi) : 0;
    } else if (pp.ip4.dst != dev_.ifc_.ip) {
        gi = -1;
    }
    if (gi < 0) {
        ++ec.rx_drop_not_our_ip;
        rte_pktmbuf_free(m);
        return;
    }
    if (vid != want_vid) [[unlikely]] {
        ++ec.rx_drop_vlan_mismatch;
        rte_pktmbuf_free(m);
        return;
    }
    rx_deliver<Cap>(m, pp, len, now);
}

template <class P> QpCtx *Shard::rx_find_qp(rte_mbuf *m, const P &pkt, uint32_t len) {
    const uint32_t qpn = pkt.bth.dest_qp;
    if (qpn >= dev_.max_qps_) {
        if (qpn == ud::kMulticastQpn) /* a UD multicast datagram: named, not "unknown" */
            ++udc.rx_multicast;
        else
            ++ec.rx_drop_unknown_qpn;
        rte_pktmbuf_free(m);
        return nullptr;
    }
    const uint32_t owner = dev_.owner(qpn);
    if (owner != index_) {
        /* Landed on the wrong worker (a single-queue port, or a peer whose UDP source
         * port hashes elsewhere): the owner handles it; counted as received there. */
        --ec.port_rcv_packets;
        ec.port_rcv_bytes -= len;
        handoff(owner, m);
        return nullptr;
    }
    QpCtx *q = dev_.qp(qpn);
    if (q == nullptr) {
        ++ec.rx_drop_unknown_qpn;
        rte_pktmbuf_free(m);
    }
    return q;
}

namespace {
/* A frame of the fast parse that the transport's straight path did not take (an ACK,
 * or a request it answers otherwise), as the generic parse would give it. Out of line:
 * the ParsedPacket's room and work stay off the fast path. */
template <class T>
[[gnu::noinline]] void deliver_expanded(T &t, const wire::SmallFrame &sf, uint64_t now) {
    wire::ParsedPacket pp;
    wire::expand_small_frame(sf, pp);
    t.on_packet(pp, now);
}
} // namespace

/* A parsed frame for our address: to its QP (or its owner's worker). found: the QpCtx the
 * prefetch pipeline found for the frame's DestQP bytes, which the fast parse read as
 * pkt.bth.dest_qp (the same three bytes of an untagged IPv4 frame), so no second lookup. */
template <bool Cap, class P>
void Shard::rx_deliver(rte_mbuf *m, const P &pkt, uint32_t len, uint64_t now, QpCtx *found) {
    constexpr bool small = std::is_same_v<P, wire::SmallFrame>;
    if constexpr (!small)
        ec.rx_rocev1_packets += pkt.rocev1;
    assert(found == nullptr || found == dev_.qp(pkt.bth.dest_qp));
    QpCtx *q = found != nullptr ? found : rx_find_qp(m, pkt, len);
    if (q == nullptr)
        return;
    /* The transport copies what it keeps (payload into MRs/receive buffers), so the
     * mbuf can go right after. */
    if constexpr (Cap)
        capture_rx(m); /* accepted: what the QP is about to see */
    /* Its lines were last written on the core of the pool's worker: zero when nothing
     * crosses between workers (bench_scale workers reads it). Zero-copy frames come from
     * the one small-mbuf pool all workers share: not counted. */
    if (m->pool != pool_ && m->pool != dev_.rt_.zc_pool()) [[unlikely]]
        ++ec.rx_foreign_pool;
    /* lib/rc or lib/ud checks and counts everything (state, opcode, PSN, P_Key, Q_Key,
     * size, receive WQE) and copies the payload before the mbuf goes. */
    q->visit([&](auto &t) {
        if constexpr (small) {
            /* The responder's straight path takes the common request from the view; the
             * rest (ACKs too) gets the ParsedPacket the generic parse would give. */
            if (!t.on_small_frame(pkt, now))
                deliver_expanded(t, pkt, now);
        } else {
            t.on_packet(pkt, now);
        }
    });
    rx_done_.add(m);
    schedule_after_rx(*q);
}
template void Shard::rx_one_t<false>(rte_mbuf *m, uint64_t now, QpCtx *found);
template void Shard::rx_one_t<true>(rte_mbuf *m, uint64_t now, QpCtx *found);

template <bool Cap> void Shard::rx_handoff(void **objs, unsigned k, uint64_t now) {
    for (unsigned i = 0; i < k; ++i) {
        rte_mbuf *m = static_cast<rte_mbuf *>(objs[i]);
        const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
        if (rte_pktmbuf_data_len(m) >= RTE_ETHER_HDR_LEN && p[12] == 0x88 && p[13] == 0x08) {
            rx_mac_control(m, now, true); /* a pause another shard received */
            continue;
        }
        if (m->port == kLoopbackPort) {
            /* A QP of this device sent it (transmit_loopback): received, not by the port. */
            ++ec.rx_loopback_packets;
            --ec.port_rcv_packets;
            ec.port_rcv_bytes -= rte_pktmbuf_pkt_len(m);
        }
        rx_one_t<Cap>(m, now);
    }
    finish_rx();
    if constexpr (Cap)
        capture_rx_flush();
}

uint32_t Shard::drain_handoff(uint64_t now) {
    uint32_t n = 0;
    void *objs[kRxBurst];
    unsigned k;
    if (tx_in_ != nullptr) {
        /* Frames of the shards without a TX queue: into ours, in order, as room allows. */
        const unsigned room = tx_.room();
        k = rte_ring_sc_dequeue_burst(tx_in_, objs, room < kRxBurst ? room : kRxBurst, nullptr);
        for (unsigned i = 0; i < k; ++i)
            tx_.push(static_cast<rte_mbuf *>(objs[i])); /* room: the dequeue took no more */
        n += k;
    }
    k = rte_ring_sc_dequeue_burst(rx_in_, objs, kRxBurst, nullptr);
    if (cap_ != nullptr) [[unlikely]]
        rx_handoff<true>(objs, k, now);
    else
        rx_handoff<false>(objs, k, now);
    return n + k;
}

} // namespace droce::engine
