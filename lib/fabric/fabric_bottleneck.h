/* SPDX-License-Identifier: BSD-3-Clause */
/* A congestion point: one switch egress queue drained at a fixed rate, with RED/ECN
 * marking the way DCQCN deployments configure it (Zhu et al., SIGCOMM 2015: Kmin, Kmax,
 * Pmax on the instantaneous queue at enqueue), tail drop at the buffer, optional random
 * loss and a fixed delay after the queue.
 *
 * Sans-I/O like lib/cc: time (ns) and frame bytes in, decisions out; no DPDK, no clock,
 * no allocation after construction. The caller keeps the frames themselves (a FIFO in the
 * simulator, an mbuf ring in droce-fabric) in the order enqueue() accepted them; the model
 * keeps their lengths and departure times, so depth, marking and rate are decided here and
 * the two users cannot drift apart. Randomness (marking, loss) comes from a generator
 * seeded by the caller, so a seed replays a run exactly. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace droce::fabric {

struct BottleneckParams {
    uint64_t rate_bps = 10'000'000'000; /* egress rate. > 0 */
    uint32_t buffer_bytes = 240'000;    /* frames that do not fit are tail-dropped. > 0 */
    /* Per-frame wire overhead the egress spends besides the frame (preamble 8, IFG 12,
     * FCS 4 when the frames are given without FCS, as DPDK and the simulator hold them). */
    uint32_t overhead_bytes = 24;
    /* RED/ECN on the queue depth seen at enqueue (bytes, before the arriving frame). */
    bool ecn = true;
    uint32_t kmin_bytes = 5'000;   /* no marking at or below */
    uint32_t kmax_bytes = 200'000; /* everything ECN-capable marked at or above */
    double pmax = 0.01;            /* marking probability just below Kmax. 0..1 */
    /* Where RED looks at the queue: at enqueue (the depth the frame finds; the mark then
     * waits behind the queue) or at dequeue (the depth the frame leaves behind; the mark
     * leaves at once, as the ns-3 DCQCN switch does: a shorter control loop). RED drop is
     * decided at enqueue in both modes (a frame dropped at dequeue has already used the
     * buffer). */
    bool mark_at_dequeue = false;
    /* Not-ECT frames where an ECT frame would be marked: dropped (RED drop) if set, else
     * they pass and only the buffer limits them. */
    bool red_drop = false;
    double loss = 0;       /* independent random loss at enqueue. 0..1 */
    uint64_t delay_ns = 0; /* fixed latency added after the queue */
    /* PFC (IEEE 802.1Qbb) on the queue's priority, accounted per ingress port as switches
     * do: when the bytes an ingress port has in the queue reach pfc_xoff_bytes, that port
     * is told to pause (XOFF to its sender); when they fall to pfc_xon_bytes, to resume.
     * 0 = PFC off. The buffer above the thresholds is the headroom that absorbs what is
     * already on the wire when the pause arrives; sized right, nothing is dropped. */
    uint32_t pfc_xoff_bytes = 0;
    uint32_t pfc_xon_bytes = 0; /* < pfc_xoff_bytes */
};

/** Ingress ports a bottleneck tells apart for PFC (enqueue's `ingress`). */
constexpr uint32_t kMaxIngress = 256;

/** A PFC transition for one ingress port, for the caller to send upstream. */
enum class PfcSignal : uint8_t { none, xoff, xon };

/** nullptr when valid; else a message naming the field and its range (static storage). */
const char *validate(const BottleneckParams &p);

enum class Verdict : uint8_t {
    queued,       /* accepted, ECN bits untouched */
    marked,       /* accepted with ECN set to CE (the frame was rewritten) */
    dropped_tail, /* buffer full */
    dropped_red,  /* not-ECT where an ECT frame would have been marked (red_drop) */
    dropped_loss, /* random loss */
};
const char *verdict_name(Verdict v);

/** What an enqueue decided. depart_at: when the frame's last bit leaves the egress
 * (accepted frames only); the caller delivers it delay_ns after. */
struct Decision {
    Verdict verdict;
    uint64_t depart_at;
    PfcSignal pfc = PfcSignal::none; /* xoff: pause the frame's ingress port now */
    bool accepted() const { return verdict == Verdict::queued || verdict == Verdict::marked; }
};

struct Departure {
    bool ok = false;         /* false: nothing due */
    uint32_t len = 0;        /* the frame's length as enqueued */
    uint64_t deliver_at = 0; /* departure + delay_ns */
    bool marked = false;     /* set to CE at dequeue (mark_at_dequeue) */
    PfcSignal pfc = PfcSignal::none; /* xon: resume `ingress` now */
    uint8_t ingress = 0;             /* the frame's ingress port */
};

struct BottleneckCounters {
    uint64_t enqueued = 0; /* accepted (marked ones included) */
    uint64_t marked = 0;   /* rewritten to CE */
    uint64_t dropped_tail = 0;
    uint64_t dropped_red = 0;
    uint64_t dropped_loss = 0;
    uint64_t dequeued = 0;
    uint64_t bytes_enqueued = 0;
    uint64_t bytes_dequeued = 0;
    uint64_t ce_arrived = 0;      /* already CE on arrival (counted, left as is) */
    uint64_t not_ect_arrived = 0; /* IP not-ECT or not IP: cannot be marked */
    uint64_t max_depth_bytes = 0;
    uint64_t samples_lost = 0; /* depth samples the sample buffer had no room for */
    uint64_t pfc_xoff = 0;     /* pause transitions (one XOFF frame each) */
    uint64_t pfc_xon = 0;      /* resume transitions (one XON frame each) */
};

/** One queue-depth sample: the depth (bytes, frames) at time `t`. */
struct DepthSample {
    uint64_t t;
    uint32_t bytes;
    uint32_t frames;
};

/** The ECN field of the IP header of an Ethernet frame (optionally 802.1Q-tagged):
 * 0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE; -1 when the frame is not IPv4/IPv6 or too short. */
int frame_ecn(const uint8_t *frame, size_t len);
/** Sets the ECN field to CE (IPv4: the header checksum is updated). The RoCEv2 ICRC masks
 * the TOS / traffic class, so a RoCE frame stays valid. false if not IP. */
bool frame_mark_ce(uint8_t *frame, size_t len);

class Bottleneck {
  public:
    /** Validated parameters (validate() first: bad values are the caller's error). The
     * frame-slot ring is sized here, once: buffer_bytes / 60 + 1 slots (60 bytes is the
     * smallest Ethernet frame without FCS); a smaller frame may find no slot (tail drop). */
    Bottleneck(const BottleneckParams &p, uint64_t seed);

    /** A frame arrives at `now` (non-decreasing across calls) from ingress port `ingress`
     * (< kMaxIngress; only PFC looks at it). May rewrite its ECN bits. */
    Decision enqueue(uint8_t *frame, uint32_t len, uint64_t now, uint8_t ingress = 0);
    /** When the head frame has left the egress; UINT64_MAX when empty. */
    uint64_t next_departure() const;
    /** Pops the head frame if it has left by `now` (the caller pops its own copy too).
     * `head` is that frame's bytes: with mark_at_dequeue its ECN bits may be set to CE
     * (nullptr: no marking at dequeue). */
    Departure dequeue(uint64_t now, uint8_t *head = nullptr);
    /** The egress resumes at `now` after a hold (a PFC pause received from the next hop):
     * the queued frames' departures are recomputed back to back from `now`, so a paused
     * link neither banks the time it stood still nor bursts it out at once. O(frames
     * queued), once per resume. */
    void restart(uint64_t now);

    uint32_t depth_bytes() const { return depth_bytes_; }
    /** Bytes ingress port `i` has in the queue, and whether PFC holds it paused. */
    uint32_t ingress_bytes(uint8_t i) const { return ingress_bytes_[i]; }
    bool ingress_paused(uint8_t i) const { return ingress_paused_[i]; }
    uint32_t depth_frames() const { return count_; }
    const BottleneckCounters &counters() const { return c_; }
    const BottleneckParams &params() const { return p_; }
    /** Marking probability at a queue depth (bytes), as enqueue() applies it. */
    double mark_probability(uint32_t depth) const;

    /** Queue-depth sampling every `interval_ns` into `buf` (caller-owned, `cap` entries).
     * The depth only changes at enqueue/dequeue, so a sample is recorded exactly for each
     * interval boundary passed when the next call comes (or at flush_samples()). */
    void set_sampling(uint64_t interval_ns, DepthSample *buf, size_t cap, uint64_t start = 0);
    void flush_samples(uint64_t now) { sample_until(now); }
    size_t samples() const { return nsamples_; }

  private:
    struct Slot {
        uint64_t depart;
        uint32_t len;
        uint8_t ingress;
    };
    double uniform(); /* [0, 1) */
    bool red_hit(uint32_t depth);
    uint64_t ser_ns(uint32_t len);
    void sample_until(uint64_t now);

    BottleneckParams p_;
    uint64_t rng_;
    std::vector<Slot> ring_;
    uint32_t head_ = 0, count_ = 0;
    uint32_t depth_bytes_ = 0;
    uint64_t last_depart_ = 0; /* departure of the last accepted frame */
    uint64_t rem_ = 0;         /* serialization remainder (bit·ns), so the rate is exact */
    BottleneckCounters c_;
    uint32_t ingress_bytes_[kMaxIngress] = {};
    bool ingress_paused_[kMaxIngress] = {};
    uint64_t sample_every_ = 0, next_sample_ = 0;
    DepthSample *samples_ = nullptr;
    size_t cap_ = 0, nsamples_ = 0;
};

} // namespace droce::fabric
