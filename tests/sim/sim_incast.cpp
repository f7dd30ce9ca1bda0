/* SPDX-License-Identifier: BSD-3-Clause */
#include "sim_incast.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <stdexcept>

#include "wire_opcode.h"
#include "wire_packet.h"

namespace droce::sim {

namespace {

constexpr uint32_t kRecvIp = 0x0A000064;
constexpr uint8_t kRecvMac = 100;
constexpr uint32_t kVictimIp = 0x0A0000C8;
constexpr uint8_t kVictimMac = 200;
constexpr uint32_t kVictimQpn = 0x12;
constexpr uint32_t kSendQpn = 0x11;
constexpr uint32_t kRecvQpnBase = 0x100;
/* BTH opcode of an untagged IPv4 RoCEv2 frame (14 + 20 + 8): the simulator sends no tag */
constexpr size_t kOpcodeOff = 42;

struct Flow {
    std::unique_ptr<Endpoint> ep;
    SimCq scq, rcq;
    rc::Qp *qp = nullptr;
    std::vector<uint8_t> src;
    mem::MemoryRegion mr{};
    uint64_t posted = 0, done = 0;
};

/* A CNP from the receiver to flow 0's QP, as a notification point would send it. */
std::vector<uint8_t> forge_cnp(const Endpoint &from, const Endpoint &to) {
    wire::FrameSpec s{};
    std::memcpy(s.eth.src, from.mac, 6);
    std::memcpy(s.eth.dst, to.mac, 6);
    wire::gid_from_ipv4(from.ip, s.src_gid);
    wire::gid_from_ipv4(to.ip, s.dst_gid);
    s.tos = 48 << 2;
    s.ttl = 64;
    s.udp_sport = wire::udp_sport_for_qpn(kRecvQpnBase);
    s.bth.opcode = wire::kCnp;
    s.bth.pkey = wire::kDefaultPkey;
    s.bth.becn = true;
    s.bth.dest_qp = kSendQpn;
    std::vector<uint8_t> f(wire::frame_len(s));
    if (wire::build_frame(s, f.data(), f.size()) != f.size())
        throw std::runtime_error("CNP build failed");
    return f;
}

} // namespace

IncastResult run_incast(const IncastConfig &c) {
    Faults faults;
    faults.link_gbps = c.link_gbps;
    faults.delay_ns = c.link_delay_ns;
    faults.link_backlog_ns = c.link_backlog_ns;
    Fabric fab(c.seed, faults);
    Endpoint recv(fab, kRecvIp, kRecvMac);
    recv.cc = c.cc;
    recv.line_rate_bps = static_cast<uint64_t>(c.link_gbps * 1e9);
    SimCq rscq, rrcq;
    std::vector<uint8_t> sink(1u << 20);
    const uint32_t all = kAccessLocalWrite | kAccessRemoteWrite;
    const mem::MemoryRegion rmr = recv.mrs.reg(1, sink.data(), sink.size(), all).value();
    const size_t n = c.flows.size();
    std::vector<std::unique_ptr<Flow>> flows;
    QpCap cap;
    cap.max_send_wr = 256;
    QpAttr attr;
    attr.timeout = 14; /* 67 ms: losses recover by NAK, not by a timer that would fire late */
    attr.retry_cnt = 7;
    attr.rnr_retry = 7;
    attr.qp_access_flags = all;
    for (size_t i = 0; i < n; ++i) {
        if (c.flows[i].msg_bytes > sink.size())
            throw std::invalid_argument("msg_bytes above the receiver's 1 MiB region");
        auto f = std::make_unique<Flow>();
        f->ep = std::make_unique<Endpoint>(fab, 0x0A000001 + static_cast<uint32_t>(i),
                                           static_cast<uint8_t>(i + 1));
        f->ep->cc = c.cc;
        f->ep->line_rate_bps = recv.line_rate_bps;
        f->qp = &f->ep->create_qp(kSendQpn, &f->scq, &f->rcq, cap);
        rc::Qp &rq = recv.create_qp(kRecvQpnBase + static_cast<uint32_t>(i), &rscq, &rrcq, cap);
        f->ep->connect(*f->qp, recv, rq, 1000, 2000, attr, c.mtu);
        recv.connect(rq, *f->ep, *f->qp, 2000, 1000, attr, c.mtu);
        f->src.assign(c.flows[i].msg_bytes ? c.flows[i].msg_bytes : 1, 0x5A);
        f->mr = f->ep->mrs.reg(1, f->src.data(), f->src.size(), kAccessLocalWrite).value();
        flows.push_back(std::move(f));
    }
    /* The victim: a second QP on flow 0's host, to a receiver off the bottleneck. */
    std::unique_ptr<Endpoint> vrecv;
    Flow victim;
    SimCq vscq, vrcq;
    mem::MemoryRegion vmr{};
    if (c.victim) {
        if (n == 0)
            throw std::invalid_argument("a victim flow needs flow 0's host");
        if (c.victim_flow.msg_bytes > sink.size())
            throw std::invalid_argument("victim msg_bytes above the receiver's 1 MiB region");
        vrecv = std::make_unique<Endpoint>(fab, kVictimIp, kVictimMac);
        vrecv->cc = c.cc;
        vrecv->line_rate_bps = recv.line_rate_bps;
        Endpoint &host = *flows[0]->ep;
        victim.qp = &host.create_qp(kVictimQpn, &victim.scq, &victim.rcq, cap);
        rc::Qp &vq = vrecv->create_qp(kRecvQpnBase, &vscq, &vrcq, cap);
        host.connect(*victim.qp, *vrecv, vq, 3000, 4000, attr, c.mtu);
        vrecv->connect(vq, host, *victim.qp, 4000, 3000, attr, c.mtu);
        vmr = vrecv->mrs.reg(1, sink.data(), sink.size(), all).value();
        victim.src.assign(c.victim_flow.msg_bytes ? c.victim_flow.msg_bytes : 1, 0xA5);
        victim.mr =
            host.mrs.reg(1, victim.src.data(), victim.src.size(), kAccessLocalWrite).value();
    }
    fab.set_bottleneck(recv, c.bottleneck, c.seed * 7919 + 1, c.sample_ns,
                       c.sample_ns ? c.duration_ns / c.sample_ns + 2 : 0);

    IncastResult r;
    r.bin_ns = c.bin_ns;
    const size_t nbins = c.duration_ns / c.bin_ns + 1;
    r.rate_gbps.assign(n, std::vector<double>(nbins, 0));
    r.sent_gbps.assign(n, std::vector<double>(nbins, 0));
    if (c.victim)
        r.victim_gbps.assign(nbins, 0);
    auto flow_of = [&](const uint8_t *mac) -> size_t {
        const size_t k = mac[5];
        return k >= 1 && k <= n ? k - 1 : n;
    };
    /* The flows' frames at the bottleneck's output: their mean size against the per-frame
     * wire overhead gives its capacity in the units the rates are measured in. */
    double out_bytes = 0, out_frames = 0;
    fab.on_bottleneck_out = [&](const std::vector<uint8_t> &fr, Time t) {
        const size_t k = flow_of(fr.data() + 6);
        const size_t b = t / c.bin_ns;
        if (k < n && b < nbins)
            r.rate_gbps[k][b] += static_cast<double>(fr.size());
        if (k < n) {
            out_bytes += static_cast<double>(fr.size());
            out_frames += 1;
        }
    };
    fab.on_send = [&](std::vector<uint8_t> &fr) {
        if (fr.size() > kOpcodeOff && fr[kOpcodeOff] == wire::kCnp)
            ++r.cnps;
        const size_t k = flow_of(fr.data() + 6);
        const size_t b = fab.now / c.bin_ns;
        if (b >= nbins)
            return;
        if (c.victim && fr.size() > 6 && fr[5] == kVictimMac && k == 0)
            r.victim_gbps[b] += static_cast<double>(fr.size());
        else if (k < n)
            r.sent_gbps[k][b] += static_cast<double>(fr.size());
    };
    /* Keeps `outstanding` WRITEs of `s` posted on f's QP toward (addr, rkey). */
    auto post = [&](Flow &f, const FlowSpec &s, uint64_t raddr, uint32_t rkey) {
        Wc wc;
        while (f.scq.pop(wc)) {
            if (wc.status != WcStatus::Success)
                r.qp_error = true;
            ++f.done;
        }
        if (fab.now < s.start_ns || (s.stop_ns && fab.now >= s.stop_ns))
            return;
        while (f.posted - f.done < s.outstanding && (!s.max_msgs || f.posted < s.max_msgs)) {
            SendWr w;
            w.wr_id = f.posted;
            w.opcode = WrOpcode::RdmaWrite;
            w.send_flags = kSendSignaled;
            w.num_sge = 1;
            w.sg_list[0] = {f.mr.addr, s.msg_bytes, f.mr.key};
            w.remote_addr = raddr;
            w.rkey = rkey;
            if (!f.qp->post_send(w))
                break;
            ++f.posted;
        }
    };

    auto pump = [&] {
        for (size_t i = 0; i < n; ++i)
            post(*flows[i], c.flows[i], rmr.addr, rmr.key);
        if (c.victim)
            post(victim, c.victim_flow, vmr.addr, vmr.key);
        return false;
    };

    /* Checkpoints every bin (flows start, CNP injection): run_until returns early when
     * nothing is pending, and the clock then jumps to the checkpoint. */
    r.rp_rate_gbps.assign(n, 0);
    r.rp_target_gbps.assign(n, 0);
    r.rp_alpha.assign(n, 0);
    bool cnp_sent = c.inject_cnp_at == 0;
    for (Time t = c.bin_ns; t <= c.duration_ns; t += c.bin_ns) {
        Time until = t;
        if (!cnp_sent && c.inject_cnp_at < t)
            until = c.inject_cnp_at;
        fab.run_until(pump, until);
        if (fab.now < until)
            fab.now = until;
        if (!cnp_sent && fab.now >= c.inject_cnp_at) {
            fab.send(forge_cnp(recv, *flows[0]->ep));
            cnp_sent = true;
            fab.run_until(pump, t);
            if (fab.now < t)
                fab.now = t;
        }
        pump();
        if (c.cc && t + 10'000'000 >= c.duration_ns) {
            const double k = static_cast<double>(c.bin_ns) / 10e6; /* 1 / bins in 10 ms */
            for (size_t i = 0; i < n; ++i) {
                const rc::CcState st = flows[i]->qp->cc_state();
                r.rp_rate_gbps[i] += static_cast<double>(st.rate_bps) / 1e9 * k;
                r.rp_target_gbps[i] += static_cast<double>(st.target_bps) / 1e9 * k;
                r.rp_alpha[i] += st.alpha * k;
            }
        }
    }
    const double scale = 8.0 / static_cast<double>(c.bin_ns); /* bytes per bin -> Gb/s */
    for (auto *v : {&r.rate_gbps, &r.sent_gbps})
        for (auto &row : *v)
            for (double &x : row)
                x *= scale;
    for (double &x : r.victim_gbps)
        x *= scale;
    r.victim_msgs = victim.done;
    if (c.victim)
        r.qp_error |= victim.qp->state() == QpState::Err;
    r.pause_frames = fab.pause_frames;
    r.capacity_gbps =
        static_cast<double>(c.bottleneck.rate_bps) / 1e9 *
        (out_frames > 0
             ? out_bytes / (out_bytes + out_frames * static_cast<double>(c.bottleneck.overhead_bytes))
             : 1.0);
    r.depth = fab.depth_samples();
    r.bq = fab.bottleneck()->counters();
    for (auto &f : flows) {
        r.msgs_done.push_back(f->done);
        r.timeouts += f->ep->counters.local_ack_timeout_err;
        r.seq_naks += f->ep->counters.packet_seq_err;
        r.retransmits += f->ep->counters.retransmitted_packets;
        r.rp_cnp_handled += f->ep->counters.rp_cnp_handled;
        r.rp_rate_cuts += f->ep->counters.rp_rate_cuts;
        r.rp_cuts.push_back(f->ep->counters.rp_rate_cuts);
        r.qp_error |= f->qp->state() == QpState::Err;
        r.paused_ms.push_back(static_cast<double>(fab.paused_ns(*f->ep)) / 1e6);
    }
    return r;
}

double jain(const std::vector<double> &x) {
    double s = 0, s2 = 0;
    for (double v : x) {
        s += v;
        s2 += v * v;
    }
    return s2 > 0 ? s * s / (static_cast<double>(x.size()) * s2) : 0;
}

std::vector<double> mean_rates(const IncastResult &r, size_t from, size_t to,
                               const std::vector<size_t> &flows) {
    std::vector<double> m;
    for (size_t k : flows) {
        double s = 0;
        size_t cnt = 0;
        for (size_t b = from; b < to && b < r.rate_gbps[k].size(); ++b, ++cnt)
            s += r.rate_gbps[k][b];
        m.push_back(cnt ? s / static_cast<double>(cnt) : 0);
    }
    return m;
}

Time convergence_time(const IncastResult &r, const std::vector<size_t> &flows, size_t window,
                      size_t from_bin, size_t until_bin, double tol, double share_gbps) {
    /* Walk back from the end: the last window that breaks the band marks the start. */
    size_t first_ok = std::numeric_limits<size_t>::max();
    for (size_t b = from_bin; b + window <= until_bin; ++b) {
        const std::vector<double> m = mean_rates(r, b, b + window, flows);
        double fair = 0;
        for (double v : m)
            fair += v;
        fair /= static_cast<double>(m.size());
        if (share_gbps > 0)
            fair = share_gbps;
        bool ok = fair > 0;
        for (double v : m)
            ok &= std::fabs(v - fair) <= tol * fair;
        if (!ok)
            first_ok = std::numeric_limits<size_t>::max();
        else if (first_ok == std::numeric_limits<size_t>::max())
            first_ok = b;
    }
    return first_ok == std::numeric_limits<size_t>::max() ? std::numeric_limits<Time>::max()
                                                          : (first_ok + window) * r.bin_ns;
}

uint32_t max_depth_after(const IncastResult &r, Time t) {
    uint32_t m = 0;
    for (const auto &s : r.depth)
        if (s.t >= t)
            m = std::max(m, s.bytes);
    return m;
}

void write_csv(const IncastResult &r, const std::string &path) {
    FILE *f = std::fopen(path.c_str(), "w");
    if (!f)
        throw std::runtime_error("cannot write " + path);
    std::fprintf(f, "t_us,depth_bytes");
    for (size_t k = 0; k < r.rate_gbps.size(); ++k)
        std::fprintf(f, ",flow%zu_gbps", k);
    for (size_t k = 0; k < r.sent_gbps.size(); ++k)
        std::fprintf(f, ",flow%zu_sent_gbps", k);
    if (!r.victim_gbps.empty())
        std::fprintf(f, ",victim_gbps");
    std::fprintf(f, "\n");
    for (const auto &s : r.depth) {
        const size_t b = s.t / r.bin_ns;
        std::fprintf(f, "%.3f,%u", static_cast<double>(s.t) / 1e3, s.bytes);
        for (const auto &row : r.rate_gbps)
            std::fprintf(f, ",%.4f", b < row.size() ? row[b] : 0.0);
        for (const auto &row : r.sent_gbps)
            std::fprintf(f, ",%.4f", b < row.size() ? row[b] : 0.0);
        if (!r.victim_gbps.empty())
            std::fprintf(f, ",%.4f", b < r.victim_gbps.size() ? r.victim_gbps[b] : 0.0);
        std::fprintf(f, "\n");
    }
    std::fclose(f);
}

} // namespace droce::sim
