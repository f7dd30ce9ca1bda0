/* SPDX-License-Identifier: BSD-3-Clause */
#include "report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

namespace droce::perf {

namespace {
const char kResultLine[] =
    "---------------------------------------------------------------------------------------\n";
std::string g_json;

double format_factor(const Options &opt) { return opt.report_gbits ? 125000000.0 : 1048576.0; }
} // namespace

void print_line() { std::fputs(kResultLine, stdout); }

void print_banner(const Options &opt, const std::string &dev, uint32_t mtu, bool server,
                  const std::string &thread_cpus) {
    if (server) {
        std::printf("\n************************************\n");
        std::printf("* Waiting for client to connect... *\n");
        std::printf("************************************\n");
    }
    if (opt.cq_mod_from_post_list) {
        std::fputs(kResultLine, stdout);
        std::printf("Post List requested - CQ moderation will be the size of the post list\n");
    }
    std::fputs(kResultLine, stdout);
    std::printf("                    %s %s Test\n", verb_name(opt.verb),
                opt.kind == Kind::Bw ? "BW" : "Latency");
    std::printf(" Dual-port       : OFF\t\tDevice         : %s\n", dev.c_str());
    std::printf(" Number of qps   : %u\t\tTransport type : IB\n", opt.num_qps);
    std::printf(" Connection type : %s\t\tUsing SRQ      : OFF\n", opt.ud ? "UD" : "RC");
    std::printf(" PCIe relax order: OFF\n");
    if (opt.kind == Kind::Bw || opt.verb != Verb::Send)
        std::printf(" TX depth        : %u\n", opt.tx_depth);
    if (opt.verb == Verb::Send)
        std::printf(" RX depth        : %u\n", opt.rx_depth);
    if (opt.verb == Verb::Atomic)
        std::printf(" Atomic Type     : %s\n", opt.atomic_cas ? "CMP_AND_SWAP" : "FETCH_AND_ADD");
    if (opt.kind == Kind::Bw)
        std::printf(" CQ Moderation   : %u\n", opt.cq_mod);
    std::printf(" Mtu             : %u[B]\n", mtu);
    std::printf(" Link type       : Ethernet\n");
    std::printf(" GID index       : %d\n", opt.gid_idx);
    if (opt.verb == Verb::Read || opt.verb == Verb::Atomic)
        std::printf(" Outstand reads  : %u\n", opt.out_reads);
    std::printf(" Max inline data : 0[B]\n");
    std::printf(" rdma_cm QPs\t : %s\n", opt.rdma_cm ? "ON" : "OFF");
    std::printf(" Data ex. method : %s\n", opt.loopback  ? "in-process (--loopback)"
                                           : opt.rdma_cm ? "rdma_cm"
                                                         : "Ethernet");
    if (!thread_cpus.empty())
        std::printf(" Posting threads : %u, %s\n", opt.threads, thread_cpus.c_str());
    std::fputs(kResultLine, stdout);
}

void print_dest(const char *side, const Dest &d, Verb verb) {
    std::printf(" %s address: LID %#04x QPN %#06x PSN %#06x", side, d.lid, d.qpn, d.psn);
    if (verb == Verb::Read)
        std::printf(" OUT %#04x", d.out_reads);
    if (verb == Verb::Read || verb == Verb::Write)
        std::printf(" RKey %#08x VAddr %#016llx", d.rkey, static_cast<unsigned long long>(d.vaddr));
    std::printf("\n GID: %s\n", gid_to_string(d.gid).c_str());
}

void print_header(const Options &opt) {
    std::fputs(kResultLine, stdout);
    if (opt.kind == Kind::Bw) {
        std::printf(opt.report_gbits ? " #bytes     #iterations    BW peak[Gb/sec]    BW "
                                       "average[Gb/sec]   MsgRate[Mpps]\n"
                                     : " #bytes     #iterations    BW peak[MB/sec]    BW "
                                       "average[MB/sec]   MsgRate[Mpps]\n");
    } else if (opt.duration_s > 0) {
        std::printf(" #bytes        #iterations       t_avg[usec]    tps average\n");
    } else {
        std::printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
                    "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% "
                    "percentile[usec] \n");
    }
    std::fflush(stdout);
}

BwReport compute_bw(const Options &opt, const Side &s) { return compute_bw(opt, {&s}); }

BwReport compute_bw(const Options &opt, const std::vector<const Side *> &sides) {
    BwReport r;
    r.size = sides.front()->size();
    /* The window runs from the first start to the last end; with full per-op stamps
     * (shared origin: Side::share_clock), from the first post to the last completion. */
    auto start = sides.front()->started_at(), end = sides.front()->ended_at();
    double first_post = 0, last_completion = 0;
    bool stamped = true, any = false;
    for (const Side *s : sides) {
        r.iters += s->completed();
        start = std::min(start, s->started_at());
        end = std::max(end, s->ended_at());
        const auto &tp = s->tposted();
        const auto &tc = s->tcompleted();
        if (s->completed() == 0)
            continue; // -D: a side that completed nothing adds no stamps
        uint64_t wrs = 0; /* WRs the stamps account for: all, unless they ran out */
        for (const CompletionStamp &c : tc)
            wrs += c.wrs;
        if (tp.empty() || tc.empty() || wrs != s->completed()) {
            stamped = false;
            continue;
        }
        first_post = any ? std::min(first_post, tp.front()) : tp.front();
        last_completion = any ? std::max(last_completion, tc.back().t) : tc.back().t;
        any = true;
    }
    stamped = stamped && any;
    double secs = std::chrono::duration<double>(end - start).count();
    if (stamped)
        secs = (last_completion - first_post) / 1e9;
    if (secs <= 0)
        secs = 1e-9;
    const double ff = format_factor(opt);
    r.bw_avg = static_cast<double>(r.size) * static_cast<double>(r.iters) / secs / ff;
    r.msg_rate = static_cast<double>(r.iters) / secs / 1e6;
    r.bw_peak = opt.no_peak ? 0 : r.bw_avg; /* perftest's -N prints 0.00 */
    if (!stamped || opt.no_peak)
        return r;
    /* One side's completion stamps as they are; several sides' merged in time order. */
    std::vector<CompletionStamp> merged;
    if (sides.size() > 1) {
        for (const Side *s : sides)
            merged.insert(merged.end(), s->tcompleted().begin(), s->tcompleted().end());
        std::stable_sort(merged.begin(), merged.end(),
                         [](const auto &a, const auto &b) { return a.t < b.t; });
    }
    const auto &stamps = sides.size() > 1 ? merged : sides.front()->tcompleted();
    // Peak: the best window of tx_depth x qps consecutive completions. One window = what
    // all QPs keep in flight, in whole -Q batches: a batch's completions share one
    // timestamp, and a window cutting one would count its messages with no time for them.
    if (r.iters >= 2) {
        const uint64_t mod = std::max<uint64_t>(1, opt.cq_mod);
        const uint64_t w = std::max<uint64_t>(
            1, std::min<uint64_t>((uint64_t{opt.tx_depth} * opt.num_qps + mod - 1) / mod * mod,
                                  r.iters - 1));
        const double rate = best_window_rate(stamps, r.iters, w);
        r.bw_peak = std::max(r.bw_peak, static_cast<double>(r.size) * rate / ff);
    }
    return r;
}

void print_bw_row(const Options &opt, const BwReport &r) {
    (void)opt;
    std::printf(" %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n",
                static_cast<unsigned long>(r.size), static_cast<unsigned long>(r.iters), r.bw_peak,
                r.bw_avg, r.msg_rate);
    std::fflush(stdout);
    json_add_bw(r);
}

void json_add_bw(const BwReport &r) {
    char b[512];
    std::snprintf(
        b, sizeof b,
        "MsgSize: %lu,\nn_iterations: %lu,\nBW_peak: %.2lf,\nBW_average: %.2lf,\nMsgRate: "
        "%.6lf,\n",
        static_cast<unsigned long>(r.size), static_cast<unsigned long>(r.iters), r.bw_peak,
        r.bw_avg, r.msg_rate);
    g_json += b;
}

bool print_lat_row(const Options &opt, const Side &s) {
    const auto &tp = s.tposted();
    const double rtt = (opt.verb == Verb::Write || opt.verb == Verb::Send) ? 2.0 : 1.0;
    if (opt.duration_s > 0) {
        const double secs = std::max(s.run_seconds(), 1e-9);
        const double n = static_cast<double>(s.completed());
        const double avg = n > 0 ? secs * 1e6 / n / rtt : 0;
        std::printf(" %-7lu       %lu            %-7.2f        %-7.2f\n",
                    static_cast<unsigned long>(s.size()), static_cast<unsigned long>(s.completed()),
                    avg, n / secs);
        std::fflush(stdout);
        char b[256];
        std::snprintf(b, sizeof b,
                      "MsgSize: %lu,\nn_iterations: %lu,\nt_avg: %.2f,\ntps_average: %.2f,\n",
                      static_cast<unsigned long>(s.size()),
                      static_cast<unsigned long>(s.completed()), avg, n / secs);
        g_json += b;
        return true;
    }
    if (tp.size() < 2)
        return false;
    std::vector<double> d(tp.size() - 1);
    for (size_t i = 0; i + 1 < tp.size(); ++i)
        d[i] = (tp[i + 1] - tp[i]) / 1000.0 / rtt; // usec
    std::sort(d.begin(), d.end());
    const size_t n = d.size();
    const double median = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
    double sum = 0;
    for (double x : d)
        sum += x;
    const double avg = sum / static_cast<double>(n);
    double var = 0;
    for (double x : d)
        var += (x - avg) * (x - avg);
    const double stdev = std::sqrt(var / static_cast<double>(n));
    auto pct = [&](double p) {
        size_t i = static_cast<size_t>(std::ceil(static_cast<double>(n) * p));
        return d[std::min(i, n - 1)];
    };
    std::printf(" %-7lu %lu          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     "
                "\t%-7.2f\t\t%-7.2f \t\t%-7.2f\n",
                static_cast<unsigned long>(s.size()), static_cast<unsigned long>(tp.size()), d[0],
                d[n - 1], median, avg, stdev, pct(0.99), pct(0.999));
    std::fflush(stdout);
    char b[512];
    std::snprintf(b, sizeof b,
                  "MsgSize: %lu,\nn_iterations: %lu,\nt_min: %.2f,\nt_max: %.2f,\nt_typical: "
                  "%.2f,\nt_avg: %.2f,\nt_stdev: %.2f,\npercentile_99: %.2f,\npercentile_99.9: "
                  "%.2f,\n",
                  static_cast<unsigned long>(s.size()), static_cast<unsigned long>(tp.size()), d[0],
                  d[n - 1], median, avg, stdev, pct(0.99), pct(0.999));
    g_json += b;
    return true;
}

void json_write(const Options &opt) {
    if (!opt.out_json)
        return;
    FILE *f = std::fopen(opt.out_json_file.c_str(), "w");
    if (f == nullptr) {
        std::fprintf(stderr, "Couldn't write %s\n", opt.out_json_file.c_str());
        return;
    }
    // perftest writes "name: value," lines inside braces; keep its field names.
    std::string body = g_json;
    std::fprintf(f, "{\n\"test\": \"%s\",\n", opt.mode.c_str());
    size_t pos = 0;
    std::string out;
    while (pos < body.size()) {
        size_t nl = body.find('\n', pos);
        if (nl == std::string::npos)
            nl = body.size();
        std::string line = body.substr(pos, nl - pos);
        pos = nl + 1;
        const size_t colon = line.find(':');
        if (colon == std::string::npos)
            continue;
        std::string key = line.substr(0, colon);
        key.erase(0, key.find_first_not_of(' '));
        std::string val = line.substr(colon + 1);
        if (!val.empty() && val.back() == ',')
            val.pop_back();
        out += "\"" + key + "\":" + val + ",\n";
    }
    if (out.size() >= 2)
        out.erase(out.size() - 2, 1); // last comma
    std::fputs(out.c_str(), f);
    std::fputs("}\n", f);
    std::fclose(f);
}

} // namespace droce::perf
