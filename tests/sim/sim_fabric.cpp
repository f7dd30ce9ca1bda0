/* SPDX-License-Identifier: BSD-3-Clause */
#include "sim_fabric.h"

#include <algorithm>

namespace droce::sim {

Endpoint::Endpoint(Fabric &f, uint32_t ip_, uint8_t mac_last) : fabric(f), ip(ip_) {
    const uint8_t m[6] = {0x02, 0, 0, 0, 0, mac_last};
    std::memcpy(mac, m, 6);
    f.attach(this);
}

bool Endpoint::tx_admit() {
    if (paused) {
        ++tx_refused_paused;
        return false;
    }
    if (tx_used >= tx_budget)
        return false;
    if (fabric.faults.link_gbps > 0 && fabric.faults.link_backlog_ns > 0 &&
        link_free_at > fabric.now + fabric.faults.link_backlog_ns)
        return false;
    return true;
}

void Endpoint::send_built(std::vector<uint8_t> buf) {
    ++tx_used; /* the slot goes with a frame, as the engine's quantum: not with a refusal */
    fabric.send(std::move(buf));
}

bool Endpoint::transmit(const wire::FrameSpec &frame) {
    if (!tx_admit())
        return false;
    std::vector<uint8_t> buf(wire::frame_len(frame));
    const size_t n = wire::build_frame(frame, buf.data(), buf.size());
    if (n == 0)
        return false;
    buf.resize(n);
    if (wire::DataTemplate::eligible(frame))
        data_templates[frame.path_gen].learn(frame, buf.data(), wire::headers_len(frame));
    send_built(std::move(buf));
    return true;
}

qp::TxPort::Straight Endpoint::transmit_data(const wire::DataFrame &d) {
    const auto t = data_templates.find(d.path_gen);
    if (!straight || t == data_templates.end() || !t->second.serves(d))
        return Straight::Unserved;
    if (!tx_admit())
        return Straight::Blocked;
    std::vector<uint8_t> buf(2048 + d.len);
    const size_t n = t->second.build(d, buf.data(), buf.size());
    if (n == 0)
        return Straight::Unserved;
    buf.resize(n);
    ++tx_straight;
    send_built(std::move(buf));
    return Straight::Sent;
}

rc::Qp &Endpoint::create_qp(uint32_t qpn, qp::CqSink *scq, qp::CqSink *rcq, QpCap cap,
                            rc::QpTuning t, qp::RecvQueue *srq, uint32_t pd) {
    rc::QpConfig c;
    c.qpn = qpn;
    c.pd = pd;
    c.pkey_table = pkeys.data();
    c.pkey_table_len = static_cast<uint32_t>(pkeys.size());
    c.cap = cap;
    c.port = this;
    c.send_cq = scq;
    c.recv_cq = rcq;
    c.mrs = &mrs;
    c.counters = &counters;
    c.events = &events;
    c.tuning = t;
    c.srq = srq;
    c.cc = cc;
    c.line_rate_bps = line_rate_bps;
    auto qp = std::make_unique<rc::Qp>(c);
    rc::Qp &ref = *qp;
    qps[qpn] = std::move(qp);
    return ref;
}

void Endpoint::connect(rc::Qp &local, const Endpoint &peer, const rc::Qp &remote, uint32_t sq_psn,
                       uint32_t rq_psn, QpAttr a, Mtu mtu, QpState upto) {
    a.qp_state = QpState::Init;
    a.port_num = 1;
    Status s = local.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags);
    if (!s)
        throw std::runtime_error(s.message());
    if (upto == QpState::Init)
        return;
    rc::Path path;
    std::memcpy(path.eth.src, mac, 6);
    std::memcpy(path.eth.dst, peer.mac, 6);
    wire::gid_from_ipv4(ip, path.sgid);
    wire::gid_from_ipv4(peer.ip, path.dgid);
    path.udp_sport = wire::udp_sport_for_qpn(local.qpn());
    a.qp_state = QpState::Rtr;
    a.path_mtu = mtu;
    a.dest_qp_num = remote.qpn();
    a.rq_psn = rq_psn;
    std::memcpy(a.ah_attr.dgid.raw, path.dgid, 16);
    s = local.modify(a,
                     kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic |
                         kQpMinRnrTimer,
                     &path);
    if (!s)
        throw std::runtime_error(s.message());
    if (upto == QpState::Rtr)
        return;
    a.qp_state = QpState::Rts;
    a.sq_psn = sq_psn;
    s = local.modify(a, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                            kQpMaxQpRdAtomic);
    if (!s)
        throw std::runtime_error(s.message());
}

void Fabric::send(std::vector<uint8_t> &&frame) {
    ++frames_sent;
    if (on_send)
        on_send(frame);
    if (frame.empty())
        return;
    Time depart = now;
    uint8_t ingress = 0;
    for (size_t i = 0; i < endpoints.size() && i < fabric::kMaxIngress; ++i)
        if (frame.size() >= 12 && std::memcmp(endpoints[i]->mac, frame.data() + 6, 6) == 0)
            ingress = static_cast<uint8_t>(i);
    if (faults.link_gbps > 0) {
        /* serialization on the sender's link (identified by source MAC) */
        for (Endpoint *e : endpoints)
            if (frame.size() >= 12 && std::memcmp(e->mac, frame.data() + 6, 6) == 0) {
                const Time ser = static_cast<Time>((frame.size() + 24) * 8 / faults.link_gbps);
                depart = std::max(now, e->link_free_at) + ser;
                e->link_free_at = depart;
            }
    }
    if (faults.blackout_to > faults.blackout_from && now >= faults.blackout_from &&
        now < faults.blackout_to) {
        ++frames_lost;
        return;
    }
    if (chance(faults.loss)) {
        ++frames_lost;
        return;
    }
    if (chance(faults.corrupt)) {
        ++frames_corrupted;
        const size_t byte = std::uniform_int_distribution<size_t>(0, frame.size() - 1)(rng);
        frame[byte] ^= static_cast<uint8_t>(1u << std::uniform_int_distribution<>(0, 7)(rng));
    }
    if (bneck_ && frame.size() >= 6 && std::memcmp(bneck_mac_, frame.data(), 6) == 0) {
        wire_.push({depart, seq_++, std::move(frame), true, ingress});
        return;
    }
    schedule(std::move(frame), depart + faults.delay_ns);
}

void Fabric::schedule(std::vector<uint8_t> &&frame, Time at) {
    for (Endpoint *e : endpoints)
        if (e->rx_pps > 0 && std::memcmp(e->mac, frame.data(), 6) == 0) {
            at = std::max(at, e->rx_free_at) + static_cast<Time>(1e9 / e->rx_pps);
            e->rx_free_at = at;
        }
    if (chance(faults.reorder))
        at += faults.reorder_delay_ns;
    if (chance(faults.dup)) {
        ++frames_duplicated;
        wire_.push({at + 1, seq_++, frame});
    }
    wire_.push({at, seq_++, std::move(frame)});
}

void Fabric::set_bottleneck(const Endpoint &toward, const fabric::BottleneckParams &p,
                            uint64_t seed, Time sample_ns, size_t max_samples) {
    if (const char *err = fabric::validate(p))
        throw std::invalid_argument(err);
    bneck_ = std::make_unique<fabric::Bottleneck>(p, seed);
    std::memcpy(bneck_mac_, toward.mac, 6);
    bneck_frames_.clear();
    samples_.assign(sample_ns ? max_samples : 0, fabric::DepthSample{});
    if (sample_ns)
        bneck_->set_sampling(sample_ns, samples_.data(), samples_.size(), now);
}

std::vector<fabric::DepthSample> Fabric::depth_samples() {
    if (!bneck_)
        return {};
    bneck_->flush_samples(now);
    return {samples_.begin(), samples_.begin() + static_cast<std::ptrdiff_t>(bneck_->samples())};
}

void Fabric::deliver(const std::vector<uint8_t> &bytes) {
    wire::ParsedPacket p;
    const wire::ParseResult pr = wire::parse_frame(bytes.data(), bytes.size(), p, true);
    if (pr != wire::ParseResult::Ok) {
        for (Endpoint *e : endpoints)
            if (bytes.size() >= 6 && std::memcmp(e->mac, bytes.data(), 6) == 0) {
                ++e->rx_drop_bad;
                ++e->rx_drop_parse[static_cast<size_t>(pr)];
            }
        return;
    }
    const uint32_t dst_ip = wire::gid_to_ipv4(p.dst_gid);
    for (Endpoint *e : endpoints) {
        if (e->ip != dst_ip)
            continue;
        rc::Qp *qp = e->qp(p.bth.dest_qp);
        if (qp == nullptr)
            ++e->rx_drop_unknown_qpn;
        if (qp) {
            ++e->rx_delivered;
            const std::string before = check_invariants ? qp->debug_string() : std::string();
            wire::SmallFrame sf;
            const bool small =
                e->rx_straight && wire::parse_small_frame(bytes.data(), bytes.size(), sf);
            e->rx_small += small;
            if (!small || !qp->on_small_frame(sf, now))
                qp->on_packet(p, now);
            if (check_invariants && violation.empty()) {
                std::string v = qp->check_invariants();
                if (!v.empty())
                    violation = v + " after " + (p.op->name ? p.op->name : "?") + " psn " +
                                std::to_string(p.bth.psn) + " syndrome " +
                                std::to_string(p.aeth.syndrome) + "\n before: " + before +
                                "\n after:  " + qp->debug_string();
            }
        }
    }
}

void Fabric::schedule_pfc(Time at, uint8_t ingress, bool pause) {
    ++pause_frames;
    pfc_events_.emplace(at, std::make_pair(ingress, pause));
}

void Fabric::apply_pfc(Endpoint &e, bool pause, Time at) {
    ++e.pause_frames_rx;
    if (pause && !e.paused) {
        e.paused = true;
        e.paused_since = at;
    } else if (!pause && e.paused) {
        e.paused = false;
        const Time held = at - e.paused_since;
        e.paused_ns += held;
        /* the XOFF refreshes the switch sent while the port stayed paused */
        const uint64_t refreshes = pfc_refresh_ns ? held / pfc_refresh_ns : 0;
        pause_frames += refreshes;
        e.pause_frames_rx += refreshes;
    }
}

Time Fabric::next_event() const {
    Time t = wire_.empty() ? 0 : wire_.top().at;
    if (!pfc_events_.empty() && (t == 0 || pfc_events_.begin()->first < t))
        t = pfc_events_.begin()->first;
    if (bneck_ && bneck_->next_departure() != UINT64_MAX &&
        (t == 0 || bneck_->next_departure() < t))
        t = bneck_->next_departure();
    for (Endpoint *e : endpoints)
        for (auto &kv : e->qps) {
            const Time d = kv.second->next_deadline();
            if (d && (t == 0 || d < t))
                t = d;
        }
    return t;
}

void Fabric::step() {
    /* Arrivals at the bottleneck, its departures and deliveries in time order (a departure
     * first on a tie: the frame's last bit left before the next one is counted in). */
    for (;;) {
        const Time tw = wire_.empty() ? UINT64_MAX : wire_.top().at;
        const Time tb = bneck_ ? bneck_->next_departure() : UINT64_MAX;
        const Time tp = pfc_events_.empty() ? UINT64_MAX : pfc_events_.begin()->first;
        if (tp <= now && tp <= tb && tp <= tw) {
            const auto ev = pfc_events_.begin()->second;
            pfc_events_.erase(pfc_events_.begin());
            apply_pfc(*endpoints[ev.first], ev.second, tp);
            continue;
        }
        if (tb <= now && tb <= tw) {
            std::vector<uint8_t> bytes = std::move(bneck_frames_.front());
            const fabric::Departure d = bneck_->dequeue(tb, bytes.data());
            bneck_frames_.pop_front();
            /* XON travels back over the ingress link */
            if (d.pfc == fabric::PfcSignal::xon)
                schedule_pfc(tb + faults.delay_ns, d.ingress, false);
            if (on_bottleneck_out)
                on_bottleneck_out(bytes, tb);
            schedule(std::move(bytes), d.deliver_at + faults.delay_ns);
            continue;
        }
        if (tw > now)
            break;
        InFlight f = std::move(const_cast<InFlight &>(wire_.top()));
        wire_.pop();
        if (f.to_bottleneck) {
            /* enqueue at the arrival time proper, not at the (possibly later) step */
            const fabric::Decision d = bneck_->enqueue(
                f.bytes.data(), static_cast<uint32_t>(f.bytes.size()), f.at, f.ingress);
            if (d.pfc == fabric::PfcSignal::xoff)
                schedule_pfc(f.at + faults.delay_ns, f.ingress, true);
            if (d.accepted())
                bneck_frames_.push_back(std::move(f.bytes));
            continue;
        }
        deliver(f.bytes);
    }
    for (Endpoint *e : endpoints) {
        e->tx_used = 0;
        for (auto &kv : e->qps) {
            rc::Qp &q = *kv.second;
            const Time d = q.next_deadline();
            const std::string before = check_invariants ? q.debug_string() : std::string();
            if (d && d <= now)
                q.on_timer(now);
            q.progress(now);
            if (check_invariants && violation.empty()) {
                std::string v = q.check_invariants();
                if (!v.empty())
                    violation = v + " after timer/progress\n before: " + before +
                                "\n after:  " + q.debug_string();
            }
        }
    }
}

bool Fabric::run_until(const std::function<bool()> &done, Time limit) {
    while (now <= limit) {
        step();
        if (done())
            return true;
        /* A paused endpoint's TX work waits for its XON (an event): it does not keep the
         * clock ticking. */
        bool busy = false;
        for (Endpoint *e : endpoints)
            for (auto &kv : e->qps)
                busy |= !e->paused && kv.second->has_tx_work() && e->tx_used >= e->tx_budget;
        if (busy) {
            now += 100; /* TX-limited: the next step is a little later */
            continue;
        }
        bool work = false;
        for (Endpoint *e : endpoints)
            for (auto &kv : e->qps)
                work |= !e->paused && kv.second->has_tx_work();
        if (work) {
            now += 100;
            continue;
        }
        const Time t = next_event();
        if (t == 0)
            return done();
        now = t > now ? t : now + 1;
    }
    return done();
}

} // namespace droce::sim
