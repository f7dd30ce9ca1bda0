/* SPDX-License-Identifier: BSD-3-Clause */
#include "fabric_bottleneck.h"

#include <cmath>
#include <limits>

#include "wire_bytes.h"

namespace droce::fabric {

using wire::load_be16;

namespace {

constexpr uint16_t kEthIpv4 = 0x0800, kEthIpv6 = 0x86DD, kEthVlan = 0x8100;
constexpr uint8_t kCe = 0x3;
constexpr uint32_t kMinFrame = 60; /* Ethernet minimum without FCS */
constexpr uint32_t kMaxBuffer = 256u << 20;

/* Offset of the IP header and its version (4/6), or 0 when the frame carries no IP. */
size_t ip_offset(const uint8_t *f, size_t len, int &version) {
    if (len < 14)
        return 0;
    size_t off = 12;
    uint16_t type = load_be16(f + off);
    if (type == kEthVlan) {
        if (len < 18)
            return 0;
        off += 4;
        type = load_be16(f + off);
    }
    off += 2;
    if (type == kEthIpv4 && len >= off + 20 && (f[off] >> 4) == 4 && (f[off] & 0xF) >= 5 &&
        len >= off + (f[off] & 0xFu) * 4) {
        version = 4;
        return off;
    }
    if (type == kEthIpv6 && len >= off + 40 && (f[off] >> 4) == 6) {
        version = 6;
        return off;
    }
    return 0;
}

} // namespace

const char *validate(const BottleneckParams &p) {
    if (p.rate_bps == 0 || p.rate_bps > 1'000'000'000'000)
        return "rate_bps must be 1 .. 10^12 bit/s";
    if (p.buffer_bytes == 0 || p.buffer_bytes > kMaxBuffer)
        return "buffer_bytes must be 1 .. 256 MiB";
    if (p.overhead_bytes > 1024)
        return "overhead_bytes must be 0 .. 1024";
    if (p.ecn && p.kmin_bytes >= p.kmax_bytes)
        return "kmin_bytes must be below kmax_bytes";
    if (!(p.pmax >= 0 && p.pmax <= 1))
        return "pmax must be 0 .. 1";
    if (!(p.loss >= 0 && p.loss <= 1))
        return "loss must be 0 .. 1";
    if (p.delay_ns > 10'000'000'000)
        return "delay_ns must be 0 .. 10 s";
    if (p.pfc_xoff_bytes > 0 &&
        (p.pfc_xon_bytes >= p.pfc_xoff_bytes || p.pfc_xoff_bytes > p.buffer_bytes))
        return "pfc_xon_bytes must be below pfc_xoff_bytes, and pfc_xoff_bytes at most "
               "buffer_bytes";
    return nullptr;
}

const char *verdict_name(Verdict v) {
    switch (v) {
    case Verdict::queued:
        return "queued";
    case Verdict::marked:
        return "marked";
    case Verdict::dropped_tail:
        return "dropped_tail";
    case Verdict::dropped_red:
        return "dropped_red";
    case Verdict::dropped_loss:
        return "dropped_loss";
    }
    return "?";
}

int frame_ecn(const uint8_t *f, size_t len) {
    int v = 0;
    const size_t ip = ip_offset(f, len, v);
    if (ip == 0)
        return -1;
    return v == 4 ? (f[ip + 1] & 0x3) : ((f[ip + 1] >> 4) & 0x3);
}

bool frame_mark_ce(uint8_t *f, size_t len) {
    int v = 0;
    const size_t ip = ip_offset(f, len, v);
    if (ip == 0)
        return false;
    if (v == 6) {
        /* version(4) traffic class(8) flow label(20): ECN is TC's low 2 bits, byte 1 bits 5:4 */
        f[ip + 1] = static_cast<uint8_t>(f[ip + 1] | kCe << 4);
        return true;
    }
    /* RFC 1624 incremental update of the 16-bit word holding TOS (version/IHL | TOS):
     * HC' = ~(~HC + ~m + m'). Exact, and leaves a checksum that was wrong exactly as wrong. */
    const uint16_t old_word = load_be16(f + ip);
    f[ip + 1] = static_cast<uint8_t>(f[ip + 1] | kCe);
    const uint16_t new_word = load_be16(f + ip);
    uint32_t sum = static_cast<uint16_t>(~load_be16(f + ip + 10));
    sum += static_cast<uint16_t>(~old_word);
    sum += new_word;
    sum = (sum & 0xFFFF) + (sum >> 16);
    sum = (sum & 0xFFFF) + (sum >> 16);
    const uint16_t hc = static_cast<uint16_t>(~sum);
    f[ip + 10] = static_cast<uint8_t>(hc >> 8);
    f[ip + 11] = static_cast<uint8_t>(hc);
    return true;
}

Bottleneck::Bottleneck(const BottleneckParams &p, uint64_t seed)
    : p_(p), rng_(seed), ring_(p.buffer_bytes / kMinFrame + 1) {}

double Bottleneck::uniform() {
    /* splitmix64: small, fast, and the same sequence on every platform (std:: distributions
     * are not specified bit for bit, a replayed seed must give the same run everywhere). */
    uint64_t z = (rng_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-53;
}

uint64_t Bottleneck::ser_ns(uint32_t len) {
    /* bits·10^9 / rate with the remainder carried to the next frame: no drift over a run. */
    const uint64_t num =
        (static_cast<uint64_t>(len) + p_.overhead_bytes) * 8 * 1'000'000'000 + rem_;
    rem_ = num % p_.rate_bps;
    return num / p_.rate_bps;
}

bool Bottleneck::red_hit(uint32_t depth) {
    const double pm = mark_probability(depth);
    /* Draw only inside the ramp: outside it the outcome is certain, and skipping the draw
     * keeps the random sequence independent of how many frames saw an empty queue. */
    return pm >= 1 || (pm > 0 && uniform() < pm);
}

double Bottleneck::mark_probability(uint32_t depth) const {
    if (!p_.ecn || depth <= p_.kmin_bytes)
        return 0;
    if (depth >= p_.kmax_bytes)
        return 1;
    return p_.pmax * static_cast<double>(depth - p_.kmin_bytes) /
           static_cast<double>(p_.kmax_bytes - p_.kmin_bytes);
}

Decision Bottleneck::enqueue(uint8_t *frame, uint32_t len, uint64_t now, uint8_t ingress) {
    sample_until(now);
    if (p_.loss > 0 && uniform() < p_.loss) {
        ++c_.dropped_loss;
        return {Verdict::dropped_loss, 0};
    }
    if (static_cast<uint64_t>(depth_bytes_) + len > p_.buffer_bytes || count_ == ring_.size()) {
        ++c_.dropped_tail;
        return {Verdict::dropped_tail, 0};
    }
    Verdict v = Verdict::queued;
    const int ecn = frame_ecn(frame, len);
    if (ecn == kCe)
        ++c_.ce_arrived;
    else if (ecn <= 0)
        ++c_.not_ect_arrived;
    const bool ect = ecn == 1 || ecn == 2;
    /* At dequeue marking, only RED drop of not-ECT frames is decided here. */
    const bool hit = (!p_.mark_at_dequeue || (!ect && p_.red_drop)) && red_hit(depth_bytes_);
    if (hit) {
        if (ect) {
            frame_mark_ce(frame, len);
            ++c_.marked;
            v = Verdict::marked;
        } else if (ecn <= 0 && p_.red_drop) {
            ++c_.dropped_red;
            return {Verdict::dropped_red, 0};
        }
    }
    if (count_ == 0 || last_depart_ < now) {
        /* idle egress: the frame starts now, no remainder owed */
        last_depart_ = now;
        rem_ = 0;
    }
    last_depart_ += ser_ns(len);
    Slot &s = ring_[(head_ + count_) % ring_.size()];
    s.depart = last_depart_;
    s.len = len;
    s.ingress = ingress;
    ++count_;
    depth_bytes_ += len;
    ++c_.enqueued;
    c_.bytes_enqueued += len;
    if (depth_bytes_ > c_.max_depth_bytes)
        c_.max_depth_bytes = depth_bytes_;
    Decision d{v, last_depart_};
    ingress_bytes_[ingress] += len;
    if (p_.pfc_xoff_bytes && !ingress_paused_[ingress] &&
        ingress_bytes_[ingress] >= p_.pfc_xoff_bytes) {
        ingress_paused_[ingress] = true;
        ++c_.pfc_xoff;
        d.pfc = PfcSignal::xoff;
    }
    return d;
}

uint64_t Bottleneck::next_departure() const {
    return count_ == 0 ? std::numeric_limits<uint64_t>::max() : ring_[head_].depart;
}

Departure Bottleneck::dequeue(uint64_t now, uint8_t *head) {
    sample_until(now);
    if (count_ == 0 || ring_[head_].depart > now)
        return {};
    const Slot s = ring_[head_];
    head_ = static_cast<uint32_t>((head_ + 1) % ring_.size());
    --count_;
    depth_bytes_ -= s.len;
    ++c_.dequeued;
    c_.bytes_dequeued += s.len;
    Departure d{true, s.len, s.depart + p_.delay_ns, false, PfcSignal::none, s.ingress};
    ingress_bytes_[s.ingress] -= s.len;
    if (ingress_paused_[s.ingress] && ingress_bytes_[s.ingress] <= p_.pfc_xon_bytes) {
        ingress_paused_[s.ingress] = false;
        ++c_.pfc_xon;
        d.pfc = PfcSignal::xon;
    }
    if (p_.mark_at_dequeue && head != nullptr) {
        const int ecn = frame_ecn(head, s.len);
        if ((ecn == 1 || ecn == 2) && red_hit(depth_bytes_)) {
            frame_mark_ce(head, s.len);
            ++c_.marked;
            d.marked = true;
        }
    }
    return d;
}

void Bottleneck::restart(uint64_t now) {
    sample_until(now);
    last_depart_ = now;
    rem_ = 0;
    for (uint32_t i = 0; i < count_; ++i) {
        Slot &s = ring_[(head_ + i) % ring_.size()];
        last_depart_ += ser_ns(s.len);
        s.depart = last_depart_;
    }
}

void Bottleneck::set_sampling(uint64_t interval_ns, DepthSample *buf, size_t cap, uint64_t start) {
    sample_every_ = interval_ns;
    samples_ = buf;
    cap_ = cap;
    nsamples_ = 0;
    next_sample_ = start;
}

void Bottleneck::sample_until(uint64_t now) {
    if (sample_every_ == 0)
        return;
    while (next_sample_ <= now) {
        if (nsamples_ < cap_)
            samples_[nsamples_++] = {next_sample_, depth_bytes_, count_};
        else
            ++c_.samples_lost;
        next_sample_ += sample_every_;
    }
}

} // namespace droce::fabric
