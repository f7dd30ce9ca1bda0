/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-perf: perftest's ib_{write,read,send,atomic}_{bw,lat} on droce.
 *
 *   droce-perf MODE [EAL args] -- [perftest flags] [server]
 *
 * Same flags, same TCP exchange on port 18515 and same tables as perftest 4.5, so either
 * side may be the real tool (e.g. in the Soft-RoCE VM). --loopback runs both sides in
 * this process over a net_ring pair, one thread, no TCP. */
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <droce/droce.h>

#include "app_engine.h"
#include "cm_run.h"
#include "eal_args.h"
#include "idle_wait.h"
#include "options.h"
#include "path_mtu.h"
#include "proto.h"
#include "report.h"
#include "side.h"
#include "side_group.h"
#include "thread_cpus.h"

using namespace droce;
using namespace droce::perf;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

/** Handshakes both perftest 4.5 sides make before the test (after the preamble), as
 * perftest 4.5's {write,read,atomic,send}_bw.c do them with q QPs: one per QP (the
 * records used to connect), one after moving the QPs to RTR, one per QP again (the remote
 * addresses it prints), and for send_bw one more once the receives are posted: 2q + 1,
 * send_bw 2q + 2 (write_bw.pcap, read_bw.pcap, atomic_fadd.pcap show the 3 of q = 1).
 * lat tests (one QP): 4 (send_lat.pcap). After the test: write/read/atomic bw 1 + the 5
 * report values + 1 (close); send_bw and lat 1 (close); then each side writes "done". */
uint32_t pre_test_handshakes(const Options &opt) {
    if (opt.kind == Kind::Lat)
        return 4;
    return 2 * opt.num_qps + 1 + (opt.verb == Verb::Send ? 1 : 0);
}

/** The record a side sends in its k-th handshake (k from 0): its QPs' records in the
 * first two rounds of q, then QP 0's (perftest passes my_dest[0] to the later ones). */
const Dest &record_for(const std::vector<Dest> &locals, uint32_t k) {
    const auto q = static_cast<uint32_t>(locals.size());
    const uint32_t i = k < 2 * q ? k % q : 0;
    return locals[i];
}

void print_dests(const char *which, const std::vector<Dest> &d, Verb verb) {
    for (const Dest &x : d)
        print_dest(which, x, verb);
}

/** --loopback, bw tests: each QP's data reached its own slice on the other side (a
 * message that lands in another QP's slice or at another offset fails), and atomics
 * were applied as often as they completed. Checks QPs first.. of the group; false on a
 * mismatch (printed). */
bool check_part_data(const Options &opt, const Side &server, const Side &client, uint64_t size,
                     uint32_t first, uint32_t &checked) {
    for (uint32_t i = 0; i < client.num_qps(); ++i) {
        const uint32_t qp = first + i; // the QP's number in the test (-q)
        const uint64_t done = client.qp_completed(i);
        if (opt.verb == Verb::Atomic) {
            uint64_t v = 0;
            std::memcpy(&v, server.recv_slice(i), sizeof v);
            const uint64_t want = opt.atomic_cas ? (done > 0 ? 1 : 0) : done;
            if (v != want) {
                std::fprintf(stderr, "[check] QP %u: atomic target is %llu, expected %llu\n", qp,
                             static_cast<unsigned long long>(v),
                             static_cast<unsigned long long>(want));
                return false;
            }
            ++checked;
            continue;
        }
        if (done == 0)
            continue; // -D: this QP completed nothing, there is nothing to compare
        const bool read = opt.verb == Verb::Read;
        const uint8_t *src = read ? server.recv_slice(i) : client.send_slice(i);
        const uint8_t *dst = read ? client.send_slice(i) : server.recv_slice(i);
        if (std::memcmp(src, dst, size) != 0) {
            size_t j = 0;
            while (src[j] == dst[j])
                ++j;
            std::fprintf(stderr, "[check] QP %u: byte %zu is 0x%02x, expected 0x%02x\n", qp, j,
                         dst[j], src[j]);
            return false;
        }
        ++checked;
    }
    return true;
}

/** The data check over every thread's part (server part t is client part t's peer). */
bool check_loopback_data(const Options &opt, const SideGroup &server, const SideGroup &client,
                         uint64_t size) {
    uint32_t checked = 0, first = 0;
    for (uint32_t t = 0; t < client.size(); ++t) {
        if (!check_part_data(opt, server.part(t), client.part(t), size, first, checked))
            return false;
        first += client.part(t).num_qps();
    }
    std::printf(" data check: %u of %u QPs' data in place\n", checked, first);
    return true;
}

/** Idle rounds before the loops back off to sleeping (see app::Backoff). */
constexpr uint32_t kBackoffSpins = 2000;
/* How often the measurement loops look at what costs a system call (the --timeout
 * deadline, the control socket when it is quiet). */
constexpr std::chrono::milliseconds kSlowCheck{1};
/* After control traffic, the server reads its socket at once for this long (a run of
 * handshakes must not wait kSlowCheck each). */
constexpr std::chrono::milliseconds kTalkWindow{20};
/* Even the clock (a TSC read) is only read every kClockSpins-th spin for those checks:
 * a latency test's spin is a few hundred ns, so the checks still come every few us. */
constexpr uint32_t kClockSpins = 64;

struct Run : app::EngineRun {
    Options &opt; /* -c UD: size limited to the MTU once it is known (ud_limit_size) */
    ThreadCpus thread_cpus; /* --threads: where each posting thread runs */
};

/** perftest's rule for UD: a message is one packet, so a size above the MTU becomes the
 * MTU (and -a stops there). */
void ud_limit_size(Run &run, Mtu mtu) {
    if (!run.opt.ud)
        return;
    const uint32_t m = mtu_bytes(mtu);
    if (run.opt.all_sizes) {
        run.opt.size = m;
        return;
    }
    if (run.opt.size > m) {
        std::printf(" Max msg size in UD is MTU %u\n Changing to this MTU\n", m);
        run.opt.size = m;
    }
}

SideConfig side_config(const Options &opt, bool client, std::string prefix) {
    SideConfig c;
    c.verb = opt.verb;
    c.kind = opt.kind;
    c.client = client;
    c.max_size = opt.all_sizes ? (1ull << 23) : opt.size;
    c.ud = opt.ud;
    if (opt.ud)
        c.max_size = std::min<uint64_t>(c.max_size, 4096);
    c.iters = opt.run_infinitely ? UINT32_MAX : opt.iters;
    c.num_qps = opt.num_qps;
    c.tx_depth = opt.tx_depth;
    c.cq_mod = opt.cq_mod;
    c.no_peak = opt.no_peak;
    c.post_list = opt.post_list;
    c.rx_depth = opt.rx_depth;
    c.out_reads = opt.out_reads;
    c.gid_idx = opt.gid_idx;
    c.sl = opt.sl;
    c.atomic_cas = opt.atomic_cas;
    c.duration_s = opt.run_infinitely ? 0 : opt.duration_s;
    c.buf_malloc = opt.buf_malloc;
    c.events = opt.events;
    c.prefix = std::move(prefix);
    return c;
}

std::vector<uint64_t> sizes(const Options &opt) {
    std::vector<uint64_t> v;
    if (opt.all_sizes)
        for (int i = 1; i < 24 && (!opt.ud || (1ull << i) <= opt.size); ++i)
            v.push_back(1ull << i);
    else
        v.push_back(opt.size);
    return v;
}

/** The path MTU we ask for: -m, capped by the port's active MTU. */
int local_mtu_enum(const Options &opt, const Device &dev) {
    uint32_t b = dev.active_mtu();
    if (opt.mtu != 0 && opt.mtu < b)
        b = opt.mtu;
    if (opt.mtu != 0 && opt.mtu > dev.active_mtu())
        std::fprintf(
            stderr,
            " Requested mtu is higher than active mtu \n Will run with the port active mtu - %u\n",
            dev.active_mtu());
    return static_cast<int>(app::path_mtu_of_bytes(b));
}

/** Runs sides until `until` says stop; returns false on failure/timeout. */
template <class Pred> bool drive(Run &run, std::vector<Side *> sides, Pred until) {
    IdleWait b(run.opt.busy_poll, run.opt.events, sides, kBackoffSpins);
    /* The --timeout deadline is a steady_clock read (a vDSO call): once a millisecond. */
    auto next_check = Clock::now();
    uint32_t spins = 0;
    while (!until()) {
        bool progress = run.pump() > 0;
        for (Side *s : sides) {
            const auto st = s->step();
            if (st == Side::Step::Failed)
                return false;
            progress = progress || st == Side::Step::Progress;
        }
        if (g_stop) {
            std::fprintf(stderr, "Interrupted\n");
            return false;
        }
        if (++spins % kClockSpins != 0) {
            progress ? b.progress() : b.idle();
            continue;
        }
        if (const auto t = Clock::now(); t >= next_check) {
            next_check = t + kSlowCheck;
            if (run.timed_out()) {
                std::fflush(stdout);
                std::fprintf(stderr, "Timed out after %.0f s (--timeout)\n", run.opt.timeout_s);
                return false;
            }
        }
        progress ? b.progress() : b.idle();
    }
    return true;
}

/** --threads: body(t, abort) for t = 0..n-1, each on its own thread, started together
 * once all are up. A body that returns false sets abort, which the others' loops watch
 * (a relaxed load per spin of a line nobody writes until then); the destructor stops and
 * joins whatever still runs (an early return of the control thread). */
class PartThreads {
  public:
    using Body = std::function<bool(uint32_t, const std::atomic<bool> &)>;
    void start(uint32_t n, const ThreadCpus &cpus, Body body) {
        body_ = std::move(body);
        ok_.assign(n, 0);
        for (uint32_t t = 0; t < n; ++t)
            threads_.emplace_back([this, n, t, &cpus] {
                cpus.apply(t);
                ready_.fetch_add(1);
                while (ready_.load() < n)
                    std::this_thread::yield();
                const bool ok = body_(t, abort_);
                if (!ok)
                    abort_.store(true);
                ok_[t] = ok ? 1 : 0;
            });
    }
    /** Waits for every thread; true when each body returned true. */
    bool join() {
        for (auto &t : threads_)
            t.join();
        threads_.clear();
        for (uint8_t ok : ok_)
            if (!ok)
                return false;
        return true;
    }
    bool running() const { return !threads_.empty(); }
    ~PartThreads() {
        if (running()) {
            abort_.store(true);
            join();
        }
    }

  private:
    Body body_;
    std::vector<std::thread> threads_;
    std::vector<uint8_t> ok_; /* each thread writes its own byte, once, at its end */
    std::atomic<uint32_t> ready_{0};
    std::atomic<bool> abort_{false};
};

/** body(t, abort) for every thread's part (--threads): on this thread with one (as before
 * --threads), else on PartThreads, each thread where run.thread_cpus places it. */
bool on_threads(const Run &run, const PartThreads::Body &body) {
    const uint32_t n = run.opt.threads;
    if (n == 1) {
        const std::atomic<bool> never{false};
        return body(0, never);
    }
    PartThreads threads;
    threads.start(n, run.thread_cpus, body);
    return threads.join();
}

/** --run_infinitely on the client: a row every -D seconds until interrupted/timeout. */
bool run_infinitely(Run &run, Side &client, std::vector<Side *> sides) {
    const Options &opt = run.opt;
    if (!client.start(opt.size))
        return false;
    for (Side *s : sides)
        if (s != &client)
            s->start(opt.size);
    auto next = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(opt.duration_s));
    while (true) {
        const bool ok = drive(run, sides, [&] { return Clock::now() >= next; });
        if (!ok)
            return g_stop != 0 || run.timed_out(); // a clean stop ends the run
        uint64_t ops = 0;
        double secs = 0;
        client.take_period(ops, secs);
        BwReport r;
        r.size = opt.size;
        r.iters = ops;
        const double ff = opt.report_gbits ? 125000000.0 : 1048576.0;
        r.bw_avg = static_cast<double>(ops) * static_cast<double>(opt.size) / secs / ff;
        r.bw_peak = opt.no_peak ? 0 : r.bw_avg;
        r.msg_rate = static_cast<double>(ops) / secs / 1e6;
        print_bw_row(opt, r);
        next += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(opt.duration_s));
    }
}

int run_loopback(Run &run) {
    const Options &opt = run.opt;
    const uint32_t workers = run.engine.workers();
    const auto devs = app::open_loopback_devices(
        run.engine, opt,
        [](const std::string &, const Status &st) {
            std::fprintf(stderr, "Couldn't open the net_ring ports: %s\n", st.message().c_str());
        },
        static_cast<uint16_t>(workers));
    if (!devs)
        return 1;
    Device *dev_s = devs->server, *dev_c = devs->client;
    if (!app::start_engine(run.engine))
        return 1;
    int mtu_enum = local_mtu_enum(opt, *dev_c);
    const Mtu mtu = static_cast<Mtu>(mtu_enum);
    ud_limit_size(run, mtu);
    SideGroup server, client;
    auto finish = [&](int code) {
        if (opt.counters) {
            app::print_device_counters(dev_s, "[server] ");
            app::print_device_counters(dev_c, "[client] ");
        }
        return code;
    };
    if (!server.setup(side_config(opt, false, "[server] "), opt.threads, *dev_s, workers) ||
        !client.setup(side_config(opt, true, "[client] "), opt.threads, *dev_c, workers))
        return finish(1);
    print_banner(opt, dev_c->name(), mtu_bytes(mtu), false, run.thread_cpus.describe());
    print_dests("local", client.locals(), opt.verb);
    print_dests("remote", server.locals(), opt.verb);
    if (!server.connect(client.locals(), mtu) || !client.connect(server.locals(), mtu))
        return finish(1);
    print_header(opt);
    if (opt.run_infinitely) { // one thread (options.cpp)
        const bool ok = run_infinitely(run, client.front(), {&server.front(), &client.front()});
        print_line();
        return finish(ok ? 0 : 1);
    }
    for (uint64_t sz : sizes(opt)) {
        /* Thread t runs server part t and client part t (each other's peers). */
        const bool ok = on_threads(run, [&](uint32_t t, const std::atomic<bool> &abort) {
            Side &srv = server.part(t), &cli = client.part(t);
            if (!srv.start(sz) || !cli.start(sz))
                return false;
            const std::vector<Side *> both = {&srv, &cli};
            auto aborted = [&] { return abort.load(std::memory_order_relaxed); };
            // The client decides the end; then the server (send_bw counting receives,
            // the other half of a ping-pong) must finish too, or is told to.
            if (!drive(run, both, [&] { return cli.done() || aborted(); }) || aborted())
                return false;
            const auto grace = Clock::now() + std::chrono::seconds(opt.duration_s > 0 ? 2 : 30);
            if (!drive(run, both,
                       [&] { return srv.done() || Clock::now() >= grace || aborted(); }) ||
                aborted())
                return false;
            if (!srv.done()) {
                if (opt.duration_s == 0) {
                    std::fprintf(stderr, "[server] did not complete its %u iterations x %u QPs\n",
                                 opt.iters, srv.num_qps());
                    return false;
                }
                srv.finish();
            }
            return true;
        });
        if (!ok)
            return finish(1);
        if (opt.kind == Kind::Bw) {
            print_bw_row(opt, compute_bw(opt, client.views()));
            if (!check_loopback_data(opt, server, client, sz))
                return finish(1);
        } else if (!print_lat_row(opt, client.front())) {
            return finish(1);
        }
    }
    print_line();
    return finish(0);
}

/** droce as the perftest server: versions, records, then answer whatever the client
 * sends (records: our record; report values: ours; "done": ours) while our side runs. */
int run_server(Run &run, Device &dev) {
    const Options &opt = run.opt;
    SideGroup group;
    if (!group.setup(side_config(opt, false, ""), opt.threads, dev, run.engine.workers()))
        return 1;
    const std::vector<Dest> records = group.locals();
    Conn conn;
    std::printf("\n************************************\n* Waiting for client to connect... *\n"
                "************************************\n");
    std::fflush(stdout);
    if (!conn.accept(opt.tcp_port, run.waiter))
        return 1;
    int mtu_enum = local_mtu_enum(opt, dev);
    if (!exchange_preamble(conn, false, mtu_enum, run.waiter))
        return 1;
    const Mtu mtu = static_cast<Mtu>(mtu_enum);
    ud_limit_size(run, mtu);
    print_banner(opt, dev.name(), mtu_bytes(mtu), false, run.thread_cpus.describe());
    std::vector<Dest> remote(opt.num_qps);
    for (uint32_t i = 0; i < opt.num_qps; ++i)
        if (!conn.hand_shake(false, record_for(records, i), remote[i], run.waiter))
            return 1;
    print_dests("local", records, opt.verb);
    print_dests("remote", remote, opt.verb);
    if (!group.connect(remote, mtu))
        return 1;
    print_header(opt);
    for (uint32_t t = 0; t < group.size(); ++t)
        if (!group.part(t).start(opt.size))
            return 1;
    /* Passive servers (write/read/atomic bw) have nothing to step: this loop steps their
     * parts (done at once). A send_bw server with --threads counts its receives on one
     * thread per part; a timed run is told to stop (stop_parts) when the client reports. */
    const bool threaded = group.size() > 1 && !group.front().is_passive();
    std::atomic<bool> stop_parts{false};
    PartThreads parts;
    if (threaded)
        parts.start(group.size(), run.thread_cpus, [&](uint32_t t, const std::atomic<bool> &abort) {
            Side &s = group.part(t);
            auto stopped = [&] {
                return stop_parts.load(std::memory_order_relaxed) ||
                       abort.load(std::memory_order_relaxed);
            };
            if (!drive(run, {&s}, [&] { return s.done() || stopped(); }) ||
                abort.load(std::memory_order_relaxed))
                return false;
            if (!s.done())
                s.finish();
            return true;
        });
    /* Stops a timed run's threads (the client's time is up), waits for the others. */
    auto join_parts = [&] {
        if (opt.duration_s > 0)
            stop_parts.store(true);
        return parts.join();
    };
    std::vector<Side *> stepped;
    if (!threaded)
        for (uint32_t t = 0; t < group.size(); ++t)
            stepped.push_back(&group.part(t));
    Side &side = group.front(); /* lat tests and one thread: the only part */

    BwReport rem_rep;
    bool got_report = false, closed = false;
    uint32_t handshakes = opt.num_qps;
    // write/read/atomic bw clients send their report right after the pre-test handshakes.
    const uint32_t report_after = 2 * opt.num_qps + 1;
    IdleWait b(opt.busy_poll, opt.events, stepped, kBackoffSpins);
    auto last_talk = Clock::now(), next_peek = last_talk;
    uint32_t quiet_spins = 0;
    while (!closed) {
        bool progress = run.pump() > 0;
        for (Side *s : stepped) {
            const auto st = s->step();
            if (st == Side::Step::Failed)
                return 1;
            progress = progress || st == Side::Step::Progress;
        }
        /* The control socket is a system call: read it at once while the client talks
         * (handshakes, reports), else once a millisecond, so a measurement (no control
         * traffic) is not slowed by it. */
        if (quiet_spins != 0) {
            --quiet_spins;
            progress ? b.progress() : b.idle();
            continue;
        }
        const auto now = Clock::now();
        if (now - last_talk >= kTalkWindow && now < next_peek) {
            quiet_spins = kClockSpins - 1;
            progress ? b.progress() : b.idle();
            continue;
        }
        next_peek = now + kSlowCheck;
        if (g_stop || run.timed_out()) {
            std::fprintf(stderr, g_stop ? "Interrupted\n" : "Timed out (--timeout)\n");
            return 1;
        }
        unsigned char peek[kRecordLen];
        const long n = conn.peek(peek, sizeof peek);
        if (n != 0)
            last_talk = now;
        if (n < 0) {
            closed = true; // the client closed: it is done
        } else if (n > 0) {
            progress = true;
            if (peek[0] == 0x00 || (!got_report && handshakes >= report_after && peek[0] != '0' &&
                                    peek[0] != 'd' && n < static_cast<long>(kRecordLen))) {
                // bw report values (size first: big-endian, top byte 0)
                BwReport mine;
                if (opt.verb == Verb::Send && opt.kind == Kind::Bw && threaded) {
                    if (parts.running() && !join_parts())
                        return 1;
                    mine = compute_bw(opt, group.views());
                } else if (opt.verb == Verb::Send && opt.kind == Kind::Bw) {
                    /* A timed send_bw client reports when its time is up and its sends
                     * are complete, so every receive has arrived: the measurement ends
                     * here (perftest's server ends on its own -D alarm). */
                    if (!side.done() && opt.duration_s > 0)
                        side.finish();
                    if (side.done())
                        mine = compute_bw(opt, side);
                }
                if (!conn.xchg_reports(false, mine, rem_rep, run.waiter))
                    return 1;
                got_report = true;
            } else if (peek[0] == 'd') {
                char done[5];
                if (!conn.read_exact(done, sizeof done, run.waiter))
                    return 1;
                conn.close_done(run.waiter);
                closed = true;
            } else if (n >= static_cast<long>(kRecordLen)) {
                Dest again;
                if (!conn.hand_shake(false, record_for(records, handshakes), again, run.waiter))
                    return 1;
                ++handshakes;
            }
        }
        progress ? b.progress() : b.idle();
    }
    // Our side may still be finishing (the last write_lat/send_lat message went out). A
    // timed bandwidth server has no count to reach: the client's end is its end.
    if (parts.running() && !join_parts())
        return 1;
    for (Side *s : stepped) {
        if (!s->done() && opt.kind == Kind::Bw && opt.duration_s > 0)
            s->finish();
        if (!s->done())
            drive(run, {s}, [&] { return s->done(); });
    }
    if (opt.kind == Kind::Bw) {
        if (opt.verb == Verb::Send && group.done() && group.completed() > 0)
            print_bw_row(opt, compute_bw(opt, group.views()));
        else if (got_report)
            print_bw_row(opt, rem_rep);
    } else if (opt.verb == Verb::Write || opt.verb == Verb::Send) {
        print_lat_row(opt, side);
    }
    print_line();
    // Keep answering ACKs/retransmissions a moment.
    const auto until = Clock::now() + std::chrono::milliseconds(100);
    while (Clock::now() < until)
        run.pump();
    return 0;
}

int run_client(Run &run, Device &dev) {
    const Options &opt = run.opt;
    SideGroup group;
    if (!group.setup(side_config(opt, true, ""), opt.threads, dev, run.engine.workers()))
        return 1;
    const std::vector<Dest> records = group.locals();
    Conn conn;
    if (!conn.connect(opt.servername, opt.tcp_port, run.waiter))
        return 1;
    int mtu_enum = local_mtu_enum(opt, dev);
    if (!exchange_preamble(conn, true, mtu_enum, run.waiter))
        return 1;
    const Mtu mtu = static_cast<Mtu>(mtu_enum);
    ud_limit_size(run, mtu);
    print_banner(opt, dev.name(), mtu_bytes(mtu), false, run.thread_cpus.describe());
    std::vector<Dest> remote(opt.num_qps);
    for (uint32_t i = 0; i < opt.num_qps; ++i)
        if (!conn.hand_shake(true, record_for(records, i), remote[i], run.waiter))
            return 1;
    print_dests("local", records, opt.verb);
    print_dests("remote", remote, opt.verb);
    if (!group.connect(remote, mtu))
        return 1;
    for (uint32_t k = opt.num_qps; k < pre_test_handshakes(opt); ++k) {
        Dest again;
        if (!conn.hand_shake(true, record_for(records, k), again, run.waiter))
            return 1;
    }
    print_header(opt);
    BwReport last;
    if (opt.run_infinitely) { // one thread (options.cpp)
        if (!run_infinitely(run, group.front(), {&group.front()}))
            return 1;
    } else {
        for (uint64_t sz : sizes(opt)) {
            const bool ok = on_threads(run, [&](uint32_t t, const std::atomic<bool> &abort) {
                Side &s = group.part(t);
                return s.start(sz) &&
                       drive(run, {&s},
                             [&] { return s.done() || abort.load(std::memory_order_relaxed); }) &&
                       !abort.load(std::memory_order_relaxed);
            });
            if (!ok)
                return 1;
            if (opt.kind == Kind::Bw) {
                last = compute_bw(opt, group.views());
                print_bw_row(opt, last);
            } else if (!print_lat_row(opt, group.front())) {
                return 1;
            }
        }
    }
    print_line();
    // After the test, as perftest 4.5 servers expect it: write/read/atomic bw: a handshake,
    // the 5 report values, the closing handshake; send_bw (its server reports by itself)
    // and lat: the closing handshake. Then "done". A peer that already
    // closed (ib_write_lat's server does) ends the run cleanly: the test itself is over.
    Dest again;
    auto peer_gone = [&] {
        unsigned char c;
        return conn.peek(&c, 1) < 0;
    };
    bool ok = true;
    if (opt.kind == Kind::Bw && opt.verb != Verb::Send) {
        BwReport theirs;
        ok = conn.hand_shake(true, records[0], again, run.waiter) &&
             conn.xchg_reports(true, last, theirs, run.waiter);
    }
    if (ok && !(opt.kind == Kind::Lat && peer_gone()))
        ok = conn.hand_shake(true, records[0], again, run.waiter);
    if (!ok && !(opt.kind == Kind::Lat && peer_gone()))
        return 1;
    conn.close_done(run.waiter);
    const auto until = Clock::now() + std::chrono::milliseconds(100);
    while (Clock::now() < until)
        run.pump();
    return 0;
}

int run_tcp(Run &run) {
    const Options &opt = run.opt;
    Device *dev = app::open_port_device(run.engine, opt);
    if (dev == nullptr)
        return 1;
    if (!opt.ib_dev.empty() && opt.ib_dev != dev->name()) {
        std::fprintf(stderr, " IB device %s not found (the droce device is %s)\n",
                     opt.ib_dev.c_str(), dev->name().c_str());
        return 1;
    }
    if (!app::start_engine(run.engine))
        return 1;
    int rc;
    if (opt.rdma_cm) {
        CmRunArgs a;
        a.side = side_config(opt, !opt.servername.empty(), "");
        a.mtu_enum = local_mtu_enum(opt, *dev);
        a.sizes = sizes(opt);
        a.pre_test_handshakes = pre_test_handshakes(opt);
        a.stop = &g_stop;
        rc = run_cm(run, opt, *dev, a);
    } else {
        rc = opt.servername.empty() ? run_server(run, *dev) : run_client(run, *dev);
    }
    if (opt.counters)
        app::print_device_counters(dev, "");
    return rc;
}

} // namespace

int main(int argc, char **argv) {
    Options opt;
    switch (parse_command_line(argc, argv, opt)) {
    case ParseResult::ExitOk:
        return 0;
    case ParseResult::ExitError:
        return 1;
    case ParseResult::Run:
        break;
    }
    app::seed_random_psn();
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    /* A peer that goes first (the perftest socket, a vhost-user socket whose other end
     * exited) is an error return, not a reason to die: vhost-user writes lack
     * MSG_NOSIGNAL. */
    std::signal(SIGPIPE, SIG_IGN);

    ThreadCpus thread_cpus = ThreadCpus::at_start(); /* before the EAL pins this thread */
    app::EalArgv eal(argv[0], opt.eal_args);
    std::unique_ptr<Engine> engine = app::create_engine(eal, opt, opt.workers);
    if (!engine)
        return 1;
    TscClock::init(); /* the EAL knows the TSC rate now */
    if (opt.threads > 1)
        thread_cpus.plan(opt.threads);
    Run run{{*engine, {}}, opt, std::move(thread_cpus)};
    app::arm_waiter(run, opt.timeout_s, 0);
    const int rc = opt.loopback ? run_loopback(run) : run_tcp(run);
    json_write(opt);
    std::fflush(stdout);
    engine->stop();
    return rc;
}
