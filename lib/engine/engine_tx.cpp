/* SPDX-License-Identifier: BSD-3-Clause */
/* A shard's TX: frames built into mbufs (copied, or zero-copy chains), the TX queue and
 * its hand-over to the port, and the round-robin service of the QPs with work. transmit()
 * says why a frame did not leave (TxStatus); the caller acts on it. */
#include <cstring>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#include <rte_ring.h>

#include "engine_runtime.h"
#include "wire_rocev1.h"

namespace droce::engine {

[[gnu::always_inline]] inline rte_mbuf *Shard::alloc_tx() {
    return dev_.caps().peer_reads_tx ? tx_stash_.take(pool_) : rte_pktmbuf_alloc(pool_);
}

int Shard::transmit_zc(const wire::FrameSpec &f, wire::HeaderTemplate &tmpl, rte_mbuf **out) {
    if (f.nsegs == 0 || f.nsegs > kMaxZcSegs)
        return -1;
    ZcRegion *regs[kMaxZcSegs];
    uint64_t sum = 0;
    for (uint32_t i = 0; i < f.nsegs; ++i) {
        const wire::FrameSpec::Seg &g = f.segs[i];
        if (g.mr_key == 0 || g.len == 0 || g.len > UINT16_MAX)
            return -1;
        ZcRegion *z = dev_.zc_.region(g.mr_key >> 8);
        if (z == nullptr || z->key != g.mr_key || !z->usable)
            return -1;
        regs[i] = z;
        sum += g.len;
    }
    if (sum != f.payload_len)
        return -1;
    const uint32_t n = f.nsegs + 2; /* headers, one per segment, pad + ICRC */
    rte_mbuf *mb[kMaxZcSegs + 2];
    if (rte_pktmbuf_alloc_bulk(dev_.rt_.zc_pool(), mb, n) != 0) {
        ++ec.tx_no_mbuf;
        return 0;
    }
    rte_mbuf *h = mb[0];
    uint8_t *p = rte_pktmbuf_mtod(h, uint8_t *);
    const size_t hl = tmpl.build_headers(f, p, rte_pktmbuf_tailroom(h));
    if (hl == 0) {
        rte_pktmbuf_free_bulk(mb, n);
        ++ec.tx_frame_too_big;
        *out = nullptr;
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
        rte_mbuf_ext_shared_info *si = &regs[i]->shinfo[index_];
        rte_mbuf_ext_refcnt_update(si, 1);
        rte_pktmbuf_attach_extbuf(
            m, addr,
            iova_va ? static_cast<rte_iova_t>(reinterpret_cast<uintptr_t>(addr)) : RTE_BAD_IOVA,
            static_cast<uint16_t>(g.len), si);
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
    wire::icrc_store(f.rocev1
                         ? wire::icrc_v1_compute_segments(p + l2, hl - l2, spans, f.nsegs + 1)
                         : wire::icrc_compute_segments(p + l2, hl - l2, spans, f.nsegs + 1, f.ipv6),
                     tp + pad);
    t->data_len = static_cast<uint16_t>(pad + wire::kIcrcLen);
    prev->next = t;
    h->nb_segs = static_cast<uint16_t>(n);
    h->pkt_len = static_cast<uint32_t>(hl + f.payload_len + pad + wire::kIcrcLen);
    ec.tx_bytes_zero_copy += f.payload_len;
    *out = h;
    return 1;
}

bool QpTx::transmit(const wire::FrameSpec &frame) {
    const TxResult r = send(frame);
    if (r.status == TxStatus::Paused && r.prio != kNoPrio) [[unlikely]]
        paused_prio = r.prio; /* Shard::schedule parks the QP on it */
    return r.taken();
}

bool Shard::transmit(const wire::FrameSpec &frame) { return transmit(frame, tmpl_).taken(); }

TxResult Shard::transmit(const wire::FrameSpec &frame, wire::HeaderTemplate &tmpl) {
    if (budget_ == 0)
        return {TxStatus::Quantum}; /* this QP's quantum is used up: the next ready QP's turn */
    if (paused_mask_ != 0) [[unlikely]] {
        const uint8_t p = frame_prio(frame);
        if (paused_mask_ & (1u << p)) {
            /* The peer paused this priority: the frame is not built. A CNP's sender
             * drops it (counted np_cnp_tx_dropped) and a later CE mark sends another:
             * no priority to park on. */
            ++pfc_.tx_held;
            return {TxStatus::Paused, frame.bth.opcode == wire::kCnp ? kNoPrio : p};
        }
    }
    if (tx_.full()) {
        /* Backpressure: the QP keeps the work and is served again when the port has
         * taken frames. Nothing built is ever dropped here. */
        ++ec.tx_queue_full;
        return {TxStatus::QueueFull};
    }
    TxStatus why;
    rte_mbuf *m = build_tx(frame, tmpl, dev_.zc_.on(), &why);
    if (m == nullptr)
        return {why};
    tx_.push(m); /* room tested above */
    --budget_;
    return {TxStatus::Sent};
}

/* Inline into both transmits: the copied frame is the per-packet path. */
[[gnu::always_inline]] inline rte_mbuf *
Shard::build_tx(const wire::FrameSpec &frame, wire::HeaderTemplate &tmpl, bool zc, TxStatus *why) {
    /* Zero-copy where the port takes chains, the memory is a usable registered region
     * and the payload is large enough to be worth three mbufs; else one copied frame. */
    if (zc && frame.payload_len >= dev_.zc_.from()) {
        rte_mbuf *h = nullptr;
        const int r = transmit_zc(frame, tmpl, &h);
        if (r >= 0) {
            *why = r == 0 ? TxStatus::NoMbuf : TxStatus::Dropped; /* Dropped: too big */
            return h;
        }
    }
    /* One mbuf holding the whole frame, built by the template (inline: the common case). */
    rte_mbuf *m = alloc_tx();
    if (m == nullptr) {
        ++ec.tx_no_mbuf;
        *why = TxStatus::NoMbuf;
        return nullptr;
    }
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    const size_t n = tmpl.build_frame(frame, p, rte_pktmbuf_tailroom(m));
    if (n == 0) {
        /* Cannot get better by retrying: drop it (the transport retransmits or times
         * out) and say why. */
        ++ec.tx_frame_too_big;
        rte_pktmbuf_free(m);
        *why = TxStatus::Dropped;
        return nullptr;
    }
    m->data_len = static_cast<uint16_t>(n);
    m->pkt_len = static_cast<uint32_t>(n);
    ec.tx_bytes_copied += frame.payload_len;
    return m;
}

TxResult Shard::transmit_loopback(const wire::FrameSpec &frame, wire::HeaderTemplate &tmpl,
                                  Shard &to) {
    if (budget_ == 0)
        return {TxStatus::Quantum};
    /* No PFC and no TX queue: the frame never meets the port. Zero-copy only when this
     * worker also receives it: a region's shared-info count is per worker and not atomic,
     * and the receiver frees the mbuf. */
    TxStatus why;
    rte_mbuf *m = build_tx(frame, tmpl, dev_.zc_.on() && &to == this, &why);
    if (m == nullptr)
        return {why};
    --budget_;
    return {loop_to(m, to) ? TxStatus::Sent : TxStatus::Dropped};
}

bool Shard::loop_to(rte_mbuf *m, Shard &to) {
    const uint32_t len = rte_pktmbuf_pkt_len(m);
    m->port = kLoopbackPort; /* tells rx_handoff that no port received it */
    if (rte_ring_mp_enqueue(to.rx_in_, m) != 0) [[unlikely]] {
        /* Full: lost as on a wire; the transport retransmits. */
        ++ec.tx_loopback_dropped;
        rte_pktmbuf_free(m);
        return false;
    }
    ++ec.tx_loopback_packets;
    ec.tx_loopback_bytes += len;
    return true;
}

namespace {
/* An mbuf the straight path took but could not fill: out of line, so that the straight
 * path inlined into its two callers carries no general free. */
[[gnu::noinline, gnu::cold]] void free_unbuilt(rte_mbuf *m) { rte_pktmbuf_free(m); }
} // namespace

/* Inline in send_straight and send_straight_loopback: the one-packet path is a call from
 * the QP's port into the template's build, with nothing in between. */
[[gnu::always_inline]] inline rte_mbuf *Shard::straight_frame(const wire::DataFrame &d,
                                                              const wire::HeaderTemplate &tmpl,
                                                              qp::TxPort::Straight *why) {
    rte_mbuf *m = alloc_tx();
    if (m == nullptr) [[unlikely]] {
        ++ec.tx_no_mbuf;
        *why = qp::TxPort::Straight::Blocked;
        return nullptr;
    }
    const size_t n = tmpl.build_data(d, rte_pktmbuf_mtod(m, uint8_t *), rte_pktmbuf_tailroom(m));
    if (n == 0) [[unlikely]] { /* not learnt yet (or larger than an mbuf): transmit()'s */
        free_unbuilt(m);
        *why = qp::TxPort::Straight::Unserved;
        return nullptr;
    }
    m->data_len = static_cast<uint16_t>(n);
    m->pkt_len = static_cast<uint32_t>(n);
    ec.tx_bytes_copied += d.len;
    ++ec.tx_straight;
    return m;
}

qp::TxPort::Straight Shard::send_straight(const wire::DataFrame &d,
                                          const wire::HeaderTemplate &tmpl) {
    using S = qp::TxPort::Straight;
    if (budget_ == 0)
        return S::Blocked; /* the quantum, as transmit() */
    if (paused_mask_ != 0 || d.len >= dev_.zc_.from()) [[unlikely]]
        return S::Unserved;
    if (tx_.full()) {
        ++ec.tx_queue_full;
        return S::Blocked;
    }
    S why;
    rte_mbuf *m = straight_frame(d, tmpl, &why);
    if (m == nullptr)
        return why;
    tx_.push(m); /* room tested above */
    --budget_;
    return S::Sent;
}

qp::TxPort::Straight Shard::send_straight_loopback(const wire::DataFrame &d,
                                                   const wire::HeaderTemplate &tmpl, Shard &to) {
    using S = qp::TxPort::Straight;
    if (budget_ == 0)
        return S::Blocked;
    if (&to == this && d.len >= dev_.zc_.from()) [[unlikely]]
        return S::Unserved;
    S why;
    rte_mbuf *m = straight_frame(d, tmpl, &why);
    if (m == nullptr)
        return why;
    --budget_;
    loop_to(m, to); /* a full ring loses it as a wire would: taken all the same */
    return S::Sent;
}

void Shard::set_loopback(QpCtx &q, bool on, uint32_t dest_qpn) {
    q.tx.detour =
        static_cast<uint8_t>(on ? q.tx.detour | QpTx::kLoopback : q.tx.detour & ~QpTx::kLoopback);
    q.tx.loop_to = on ? dev_.shards_[dev_.owner(dest_qpn)].get() : nullptr;
    /* A lone shard skips its RX ring (nobody else feeds it); now its own QPs do. With
     * several workers handoffs_ is set already, so no other worker's flag is written. */
    if (on && !q.tx.loop_to->handoffs_)
        q.tx.loop_to->handoffs_ = true;
}

/* n frames to the port's TX queue: how many it took (the rest stay queued, in order). */
[[gnu::always_inline]] inline uint16_t Shard::tx_burst(rte_mbuf **frames, uint16_t n) {
    const uint16_t sent = rte_eth_tx_burst(dev_.port_, txq_, frames, n);
    if (sent < n)
        ++ec.tx_burst_refused;
    uint64_t bytes = 0;
    for (uint16_t i = 0; i < sent; ++i)
        bytes += rte_pktmbuf_pkt_len(frames[i]);
    ec.port_xmit_packets += sent;
    ec.port_xmit_bytes += bytes;
    return sent;
}

/* The port has fewer TX queues than workers: shard 0 sends for us. */
uint16_t Shard::tx_to_shard0(rte_mbuf **frames, uint16_t n) {
    Shard &s0 = *dev_.shards_[0];
    const auto sent = static_cast<uint16_t>(
        rte_ring_mp_enqueue_burst(s0.tx_in_, reinterpret_cast<void **>(frames), n, nullptr));
    ec.tx_handoff += sent;
    if (sent < n)
        ++ec.tx_handoff_full;
    return sent;
}

uint32_t Shard::flush_tx() {
    if (tx_.empty())
        return 0;
    uint16_t n;
    rte_mbuf **frames = tx_.front(&n);
    uint16_t sent = 0;
    if (txq_ != UINT16_MAX) {
        if (dev_.port_stopped_) [[unlikely]]
            return 0; /* queued until the port starts again (restart_port) */
        if (cap_ != nullptr) [[unlikely]]
            capture_tx(); /* just before the port takes them (and may free them) */
        sent = tx_burst(frames, n);
    } else {
        sent = tx_to_shard0(frames, n);
    }
    tx_.taken(sent);
    /* The port took every frame up to the ring's end: those past its wrap, if any. */
    if (sent == n && !tx_.empty()) [[unlikely]]
        return sent + flush_wrapped();
    return sent;
}

/* The frames past the TX ring's end, once the port took all those before it: a second
 * run, out of line (once per kTxQueueCap frames at most). */
[[gnu::noinline]] uint32_t Shard::flush_wrapped() {
    uint16_t n;
    rte_mbuf **frames = tx_.front(&n);
    const uint16_t sent = txq_ != UINT16_MAX ? tx_burst(frames, n) : tx_to_shard0(frames, n);
    tx_.taken(sent);
    return sent;
}

uint32_t Shard::serve_ready(uint64_t now) {
    /* Round-robin over the QPs with TX work, kTxQuantum packets each per turn; a QP that
     * still has work goes to the back. Stops when the TX queue is full (backpressure:
     * the QPs keep their work) or after one pass over those ready at the start plus a
     * few extra turns (one busy QP alone may fill a burst). */
    if (!held_.empty())
        ack_release();
    uint32_t turns = ready_.size() + 8;
    uint32_t sent = 0;
    while (turns-- != 0 && !tx_.full()) {
        QpCtx *q = ready_pop();
        if (q == nullptr)
            break;
        if (ack_hold(*q))
            continue;
        q->ack_waited = false;
        const uint16_t before = tx_.size();
        budget_ = kTxQuantum;
        q->visit([&](auto &t) { t.progress(now); });
        budget_ = UINT32_MAX;
        sent += static_cast<uint32_t>(tx_.size() - before);
        schedule(*q);
    }
    return sent;
}

} // namespace droce::engine
