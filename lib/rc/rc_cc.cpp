/* SPDX-License-Identifier: BSD-3-Clause */
/* DCQCN glue of an RC QP: CE marks in -> CNPs out (notification point), CNPs in -> rate
 * (reaction point), rate -> pacer -> when data frames may leave. A QP without DCQCN
 * (cc_ nullptr) never gets here; a QP with DCQCN at line rate pays one test per data
 * frame (paced_). */
#include <algorithm>

#include "rc_qp.h"

namespace droce::rc {

namespace {

/* Bytes of a frame beyond its payload, bounded: Ethernet + VLAN 18, IPv6 40, UDP 8, BTH
 * 12, RETH 16, pad 3, ICRC 4 (101) plus the Ethernet wire overhead (24). */
constexpr uint32_t kMaxFrameOverhead = 128;

/* The pacer's bucket: one frame plus what the rate earns in one tick of the engine's
 * timer wheel (1.024 us: the wake-up is up to one tick late, and credit beyond the bucket
 * would be lost), and never below two frames (cc_pacer.h). */
uint32_t pacer_burst(uint64_t rate_bps, uint32_t mtu, uint32_t tx_burst_frames) {
    const uint64_t frame = mtu + kMaxFrameOverhead;
    const uint64_t tick_bytes = rate_bps * 1024 / 8'000'000'000;
    /* QpConfig::tx_burst_frames: the burst a QP may send back to back (never below the
     * pacer's own minimum, which its accuracy needs). */
    return static_cast<uint32_t>(
        std::max({2 * frame, frame + tick_bytes, uint64_t{tx_burst_frames} * frame}));
}

} // namespace

uint32_t Qp::pace_bytes(const wire::FrameSpec &f) {
    return static_cast<uint32_t>(wire::frame_len(f)) + kEthWireOverhead;
}

Status Qp::set_cc_params(const cc::CcParams &p, Time now) {
    const uint64_t line = cfg_.line_rate_bps ? cfg_.line_rate_bps : kDefaultLineRateBps;
    if (const char *err = cc::validate(p, line))
        return Status(EINVAL, std::string("DCQCN parameters of QP ") + std::to_string(cfg_.qpn) +
                                  ": " + err);
    if (!cc_) {
        cc_ = std::make_unique<QpCc>(p, line);
    } else {
        cc_->params = p;
        cc_->np.set_params(p);
        cc_->rp.set_params(p);
    }
    data_ecn_ = cc::ecn_bits(p.ecn_mode);
    cc_after_rp(now);
    return {};
}

void Qp::disable_cc() {
    cc_.reset();
    rp_limited_ = false;
    paced_ = false;
    pace_until_ = 0;
}

CcState Qp::cc_state() const {
    CcState s;
    if (!cc_)
        return s;
    const cc::Rp &rp = cc_->rp;
    s.enabled = true;
    s.rp_enabled = cc_->params.rp_enabled;
    s.np_enabled = cc_->params.np_enabled;
    s.limited = rp.limited();
    s.rate_bps = rp.rate();
    s.target_bps = static_cast<uint64_t>(rp.target_rate() + 0.5);
    s.alpha = rp.alpha();
    s.stage = rp.stage();
    s.pacer_rate_bps = cc_->pacer.rate();
    s.max_rate_bps = rp.max_rate();
    return s;
}

void Qp::cc_on_ce(Time now) {
    ++cfg_.counters->np_ecn_marked_roce_packets;
    if (!cc_->np.on_ce_marked(now)) {
        ++cfg_.counters->np_cnp_coalesced;
        return;
    }
    send_cnp();
}

/* WIRE.md: opcode 0x81, BECN, DestQP = the QP of the flow being notified (our peer), PSN
 * 0, 16 reserved zero bytes. The ConnectX-4 Lx CNP of the vectors carries TOS 0xC2 (DSCP
 * 48 and ECT(0)): the CNP takes the port's ECN mode as data does. Unlike that capture
 * (UDP source port 0) it keeps the QP's source port: droce peers pick it so that RSS
 * lands the packet on the worker owning the destination QP (engine_rss.h). */
void Qp::send_cnp() {
    const cc::CcParams &p = cc_->params;
    wire::FrameSpec f;
    base_frame(f, wire::kCnp, 0);
    f.bth.becn = true;
    f.tos = static_cast<uint8_t>((p.cnp_dscp << 2) | cc::ecn_bits(p.ecn_mode));
    if (f.eth.has_vlan)
        f.eth.vlan_tci = static_cast<uint16_t>((f.eth.vlan_tci & 0x1FFF) | (p.cnp_802p_prio << 13));
    if (cfg_.port->transmit(f))
        ++cfg_.counters->np_cnp_sent;
    else
        ++cfg_.counters->np_cnp_tx_dropped; /* the interval has started: a later CE sends */
}

void Qp::cc_on_cnp(Time now) {
    cc_->rp.on_cnp(now);
    cc_after_rp(now);
}

void Qp::cc_after_rp(Time now) {
    QpCc &c = *cc_;
    const cc::RpCounters &r = c.rp.counters();
    Counters &k = *cfg_.counters;
    k.rp_cnp_handled += r.rp_cnp_handled - c.seen_handled;
    k.rp_cnp_ignored += r.rp_cnp_ignored - c.seen_ignored;
    k.rp_rate_cuts += r.rp_rate_cuts - c.seen_cuts;
    const uint64_t inc = r.rp_fast_recovery + r.rp_additive_increase + r.rp_hyper_increase;
    k.rp_rate_increases += inc - c.seen_increases;
    c.seen_handled = r.rp_cnp_handled;
    c.seen_ignored = r.rp_cnp_ignored;
    c.seen_cuts = r.rp_rate_cuts;
    c.seen_increases = inc;
    rp_limited_ = c.rp.limited();

    /* At line rate the pacer is off (rate 0), so the QP pays one test. Below it — a CNP
     * limits the QP, or rpg_max_rate caps it under the port's rate — it is paced; with a
     * TX burst limit it is paced at the line rate too. */
    const uint32_t shape = cfg_.tx_burst_frames;
    const uint64_t rate = c.rp.rate() < c.line_rate_bps ? c.rp.rate()
                          : shape != 0                  ? c.line_rate_bps
                                                        : 0;
    if (rate == c.pacer.rate())
        return;
    c.pacer.set_burst(pacer_burst(rate, mtu(), shape));
    c.pacer.set_rate(rate, now);
    paced_ = rate != 0;
    if (pace_until_ != 0) {
        /* Held data: its departure moves with the rate (earlier after an increase). */
        const Time t = paced_ ? c.pacer.next_send_time(pace_wait_bytes_, now) : now;
        pace_until_ = t > now ? t : 0;
    }
}

void Qp::cc_timer(Time now) {
    if (cc_->rp.next_deadline() <= now) {
        cc_->rp.on_timer(now);
        cc_after_rp(now);
    }
    if (pace_until_ != 0 && now >= pace_until_)
        pace_until_ = 0;
}

bool Qp::cc_pace_admit(uint32_t wire_bytes, Time now) {
    cc::Pacer &pc = cc_->pacer;
    if (wire_bytes > pc.burst()) {
        /* A bucket shallower than the frame would never fill: the path MTU grew since the
         * rate was set (it is sized when the rate changes). */
        pc.set_burst(pacer_burst(pc.rate(), std::max(mtu(), wire_bytes), cfg_.tx_burst_frames));
    }
    if (pc.can_send(wire_bytes, now)) {
        pace_until_ = 0;
        return true;
    }
    const Time t = pc.next_send_time(wire_bytes, now);
    pace_until_ = t > now ? t : now + 1;
    pace_wait_bytes_ = wire_bytes;
    ++cfg_.counters->paced_defers;
    return false;
}

void Qp::cc_sent(uint32_t wire_bytes, Time now) {
    cc_->pacer.consume(wire_bytes, now);
    const uint64_t stages = cc_->rp.counters().rp_byte_stages;
    cc_->rp.on_bytes_sent(wire_bytes, now);
    if (cc_->rp.counters().rp_byte_stages != stages)
        cc_after_rp(now);
}

} // namespace droce::rc
