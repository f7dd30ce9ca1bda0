/* SPDX-License-Identifier: BSD-3-Clause */
/* Deterministic simulator: a virtual clock and a simulated fabric joining endpoints
 * that run the real transport (lib/rc) over real frames (lib/wire build/parse, ICRC
 * included). Faults are drawn from one seeded generator, so a seed replays a run
 * exactly. No DPDK, no threads, no wall clock. */
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <vector>

#include "fabric_bottleneck.h"
#include "mem_mr.h"
#include "rc_qp.h"
#include "wire_data_template.h"
#include "wire_packet.h"

namespace droce::sim {

using qp::Time;

/** Fault profile of the fabric, per delivered frame. */
struct Faults {
    double loss = 0;      /* drop */
    double dup = 0;       /* deliver twice */
    double reorder = 0;   /* add reorder_delay_ns */
    double corrupt = 0;   /* flip one random bit (the ICRC must catch it) */
    Time delay_ns = 1000; /* one-way latency */
    Time reorder_delay_ns = 20000;
    /* Each sender's link rate (0 = infinite): a frame occupies the sender's link for
     * its serialization time, so frames queue behind each other as at a bottleneck. */
    double link_gbps = 0;
    /* With link_gbps: a sender's transmit() refuses a frame while its link has more than
     * this much queued (ns of serialization), as a NIC whose TX ring is full: the sender
     * (and its DCQCN pacer) then sees the link's pace instead of filling an unbounded link
     * queue. 0 = unlimited (frames queue on the link without bound). */
    Time link_backlog_ns = 0;
    /* A blackout drops everything in [blackout_from, blackout_to). */
    Time blackout_from = 0, blackout_to = 0;
};

class Fabric;

/** A completion queue backed by a deque (the engine uses rings). */
class SimCq : public qp::CqSink {
  public:
    bool push(const Wc &wc) override {
        if (q.size() >= capacity)
            return false;
        q.push_back(wc);
        return true;
    }
    bool pop(Wc &wc) {
        if (q.empty())
            return false;
        wc = q.front();
        q.pop_front();
        return true;
    }
    std::deque<Wc> q;
    size_t capacity = 1u << 20;
};

/** Records the asynchronous events of an endpoint's QPs, in order. */
class SimEvents : public qp::AsyncEventSink {
  public:
    void on_async_event(const qp::AsyncEvent &ev) override { log.push_back(ev); }
    /** Events of one QP (all types), in order. */
    std::vector<AsyncEventType> of(uint32_t qpn) const {
        std::vector<AsyncEventType> v;
        for (const auto &e : log)
            if (e.qp_num == qpn)
                v.push_back(e.type);
        return v;
    }
    std::vector<qp::AsyncEvent> log;
};

/** One host: an address, its MRs, counters, QPs and a transmit path into the fabric. */
class Endpoint : public qp::TxPort {
  public:
    Endpoint(Fabric &f, uint32_t ip, uint8_t mac_last);
    bool transmit(const wire::FrameSpec &frame) override;
    /* The straight path as the engine's: from headers learnt of an earlier transmit() of
     * the same path generation (one template per generation), Unserved before that. */
    Straight transmit_data(const wire::DataFrame &d) override;
    /* The link would take one more frame now (pause, budget, backlog). */
    bool tx_admit();
    /* A frame built after tx_admit(): it takes its slot of the budget and goes out. */
    void send_built(std::vector<uint8_t> buf);

    /** A QP in protection domain pd (the endpoint's MRs carry their own PD ids). */
    rc::Qp &create_qp(uint32_t qpn, qp::CqSink *scq, qp::CqSink *rcq, QpCap cap = {},
                      rc::QpTuning t = {}, qp::RecvQueue *srq = nullptr, uint32_t pd = 1);
    void destroy_qp(uint32_t qpn) { qps.erase(qpn); }
    rc::Qp *qp(uint32_t qpn) {
        auto it = qps.find(qpn);
        return it == qps.end() ? nullptr : it->second.get();
    }
    /** Connects a local QP to a remote one (RESET->INIT->RTR->RTS). */
    /** extra.qp_access_flags (as given: 0 grants no remote right) and extra.pkey_index are
     * honoured. `upto` stops the walk at INIT or RTR. */
    void connect(rc::Qp &local, const Endpoint &peer, const rc::Qp &remote, uint32_t sq_psn,
                 uint32_t rq_psn, QpAttr extra = {}, Mtu mtu = Mtu::Mtu1024,
                 QpState upto = QpState::Rts);

    Fabric &fabric;
    uint32_t ip;
    uint8_t mac[6];
    mem::MrTable mrs{1024};
    rc::Counters counters;
    SimEvents events; /* every QP of the endpoint reports here */
    std::map<uint32_t, std::unique_ptr<rc::Qp>> qps;
    /* transmit_data() serves DataFrames (false: Unserved, every frame from a FrameSpec). */
    bool straight = true;
    uint64_t tx_straight = 0;                              /* frames transmit_data() sent */
    std::map<uint64_t, wire::DataTemplate> data_templates; /* by path generation */
    uint32_t tx_budget = 64; /* frames per step before transmit() refuses */
    uint32_t tx_used = 0;
    uint64_t rx_drop_bad = 0; /* frames the parser refused (corruption) */
    uint64_t rx_drop_parse[static_cast<size_t>(wire::ParseResult::Count_)] = {}; /* by reason */
    uint64_t rx_drop_unknown_qpn = 0; /* parsed, for our IP, no such QP (engine: same name) */
    uint64_t rx_delivered = 0;
    /* Frames the fast parse reads go to Qp::on_small_frame first, as the engine hands
     * them (false: every frame to on_packet). */
    bool rx_straight = true;
    uint64_t rx_small = 0; /* frames parse_small_frame took (on_small_frame offered them) */
    Time link_free_at = 0; /* when this endpoint's link finishes its last frame */
    /* Receive processing rate in frames per second (0 = instant): frames wait in a FIFO
     * for the endpoint, as at a software peer that falls behind (rxe under emulation). */
    double rx_pps = 0;
    Time rx_free_at = 0;
    /* The port's P_Key table (QPs point into it: set before creating QPs). */
    std::vector<uint16_t> pkeys{wire::kDefaultPkey};
    /* DCQCN for QPs created from now on (rc::QpConfig::cc; nullptr = none) and the
     * endpoint's line rate, the reaction point's maximum. */
    const cc::CcParams *cc = nullptr;
    uint64_t line_rate_bps = 0;
    /* PFC: while the congestion point holds this endpoint paused, transmit() refuses every
     * frame (the simulator's traffic is all on the one lossless priority, so everything
     * this endpoint sends stops: head-of-line blocking included). */
    bool paused = false;
    Time paused_since = 0;
    Time paused_ns = 0;           /* total time paused (up to the last resume) */
    uint64_t pause_frames_rx = 0; /* XOFF, refresh and XON frames this endpoint received */
    uint64_t tx_refused_paused = 0;
};

class Fabric {
  public:
    explicit Fabric(uint64_t seed, Faults f = {}) : rng(seed), faults(f) {}

    void attach(Endpoint *e) { endpoints.push_back(e); }
    /** Called by Endpoint::transmit with a built frame. */
    void send(std::vector<uint8_t> &&frame);
    /** Runs until done() or the virtual clock passes limit; returns done(). */
    bool run_until(const std::function<bool()> &done, Time limit);
    /** One step: deliver everything due now, progress every QP, fire due timers. */
    void step();

    Time now = 1;
    std::mt19937_64 rng;
    Faults faults;
    std::vector<Endpoint *> endpoints;
    uint64_t frames_sent = 0, frames_lost = 0, frames_corrupted = 0, frames_duplicated = 0;
    /* Optional tap to look at or tamper with each frame as it is sent. */
    std::function<void(std::vector<uint8_t> &)> on_send;
    /** A congestion point toward `toward`: every frame whose destination MAC is that
     * endpoint's passes one lib/fabric queue (rate, buffer, RED/ECN, loss, its own delay)
     * after its sender's link, then faults.delay_ns. Frames to other endpoints are not
     * affected. sample_ns > 0 records the queue depth every sample_ns (up to max_samples
     * samples, in depth_samples()). Call before running. */
    void set_bottleneck(const Endpoint &toward, const fabric::BottleneckParams &p, uint64_t seed,
                        Time sample_ns = 0, size_t max_samples = 1u << 20);
    fabric::Bottleneck *bottleneck() { return bneck_.get(); }
    /** The depth samples recorded so far (flushed up to now). */
    std::vector<fabric::DepthSample> depth_samples();
    /* PFC pause frames the congestion point sent upstream (XOFF, XON, and the XOFF refreshes
     * a switch repeats every pfc_refresh_ns while a port stays paused). */
    uint64_t pause_frames = 0;
    /* Half of a full pause (65535 quanta of 512 bit times) at 10 Gb/s, when switches
     * refresh a standing XOFF. */
    Time pfc_refresh_ns = 1'677'000;
    /** Time paused so far (closed pauses plus a still open one, up to now). */
    Time paused_ns(const Endpoint &e) const {
        return e.paused_ns + (e.paused ? now - e.paused_since : 0);
    }
    /* Called with each frame as it leaves the bottleneck (after marking) and the time. */
    std::function<void(const std::vector<uint8_t> &, Time)> on_bottleneck_out;

    /* Set: check every QP's invariants after every event; the first violation stops. */
    bool check_invariants = false;
    std::string violation;

  private:
    struct InFlight {
        Time at;
        uint64_t seq;
        std::vector<uint8_t> bytes;
        bool to_bottleneck = false; /* at = arrival at the congestion point, not delivery */
        uint8_t ingress = 0;        /* with to_bottleneck: the sender's index in endpoints */
        bool operator>(const InFlight &o) const { return at != o.at ? at > o.at : seq > o.seq; }
    };
    bool chance(double p) { return p > 0 && std::uniform_real_distribution<>(0, 1)(rng) < p; }
    void deliver(const std::vector<uint8_t> &bytes);
    /* Delivery at `at` with the receiver-side faults (receive rate, reorder, duplication). */
    void schedule(std::vector<uint8_t> &&frame, Time at);
    Time next_event() const;
    /* A PFC frame reaches endpoints[ingress] at `at`: pause (XOFF) or resume (XON). */
    void schedule_pfc(Time at, uint8_t ingress, bool pause);
    void apply_pfc(Endpoint &e, bool pause, Time at);
    std::multimap<Time, std::pair<uint8_t, bool>> pfc_events_;
    std::priority_queue<InFlight, std::vector<InFlight>, std::greater<>> wire_;
    uint64_t seq_ = 0;
    std::unique_ptr<fabric::Bottleneck> bneck_;
    uint8_t bneck_mac_[6] = {};
    std::deque<std::vector<uint8_t>> bneck_frames_; /* in the bottleneck's order */
    std::vector<fabric::DepthSample> samples_;
};

} // namespace droce::sim
