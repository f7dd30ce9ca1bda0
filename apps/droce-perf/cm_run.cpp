/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-perf -R: the control connection and the test's QPs connected through droce's
 * RDMA-CM (droce::CmDevice), perftest's exchange carried by SENDs on the control QP
 * (cm_run.h has the protocol). */
#include "cm_run.h"

#include <arpa/inet.h>

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>

#include <droce/cm_device.h>

#include "app_cm.h"
#include "idle_wait.h"
#include "proto.h"
#include "qp_resources.h"
#include "report.h"
#include "wire_bytes.h"

namespace droce::perf {

using wire::load_be32;
using wire::load_be64;
using wire::store_be32;
using wire::store_be64;

namespace {

/** sizeof(struct pingpong_dest) on the wire (cm_run.h). */
constexpr size_t kDestLen = 56;
/** A control message: at most a record (perftest's receive buffer is one record). */
constexpr uint32_t kMsgMax = 64;
/** perftest posts one receive on the control QP; two let a reply race the repost. */
constexpr int kCtrlRecvs = 2;
constexpr uint32_t kBackoffSpins = 2000;
/** Waiting for the DREP of our DREQs (the test is over by then: never a failure). */
constexpr uint64_t kDisconnectWaitNs = 3'000'000'000ull;
/** IBTA REJ reason 8: no listener on that service ID (rdma_cm's port). */
constexpr uint16_t kRejInvalidServiceId = 8;
/** perftest's rdma_cm_client_connection: 10 tries, 100 ms apart. */
constexpr size_t kConnectRetries = 10;
constexpr uint64_t kConnectRetryNs = 100'000'000ull;

uint64_t bits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
}
double from_bits(uint64_t u) {
    double d;
    std::memcpy(&d, &u, sizeof d);
    return d;
}

/** struct pingpong_dest as perftest's rdma_write_keys sends it (big-endian fields). */
std::array<uint8_t, kDestLen> encode_dest(const Dest &d, int gid_index) {
    std::array<uint8_t, kDestLen> b{};
    store_be32(&b[0], d.lid);
    store_be32(&b[4], d.out_reads);
    store_be32(&b[8], d.qpn);
    store_be32(&b[12], d.psn);
    store_be32(&b[16], d.rkey);
    store_be64(&b[24], d.vaddr);
    std::memcpy(&b[32], d.gid.raw, 16);
    store_be32(&b[48], d.srqn);
    store_be32(&b[52], static_cast<uint32_t>(gid_index));
    return b;
}

Dest decode_dest(const uint8_t *b) {
    Dest d;
    d.lid = load_be32(&b[0]);
    d.out_reads = load_be32(&b[4]);
    d.qpn = load_be32(&b[8]) & 0xFFFFFF;
    d.psn = load_be32(&b[12]) & 0xFFFFFF;
    d.rkey = load_be32(&b[16]);
    d.vaddr = load_be64(&b[24]);
    std::memcpy(d.gid.raw, &b[32], 16);
    d.srqn = load_be32(&b[48]);
    return d;
}

/** The 5 values of a bw report, in the order xchg_bw_reports sends them. */
uint64_t report_value(const BwReport &r, uint32_t k) {
    switch (k) {
    case 0:
        return r.size;
    case 1:
        return r.iters;
    case 2:
        return bits(r.bw_peak);
    case 3:
        return bits(r.bw_avg);
    default:
        return bits(r.msg_rate);
    }
}
void set_report_value(BwReport &r, uint32_t k, uint64_t v) {
    switch (k) {
    case 0:
        r.size = v;
        break;
    case 1:
        r.iters = v;
        break;
    case 2:
        r.bw_peak = from_bits(v);
        break;
    case 3:
        r.bw_avg = from_bits(v);
        break;
    default:
        r.msg_rate = from_bits(v);
        break;
    }
}

class CmPerf {
  public:
    CmPerf(app::EngineRun &run, const Options &opt, Device &dev, CmDevice &cm, const CmRunArgs &a)
        : run_(run), opt_(opt), dev_(dev), cm_(cm), args_(a), client_(a.side.client),
          mtu_enum_(a.mtu_enum) {}

    ~CmPerf() {
        /* The CM must forget the QPs before they go. */
        if (ctrl_id_)
            cm_.release(ctrl_id_);
        for (uint32_t id : data_ids_)
            if (id)
                cm_.release(id);
        side_.reset();
        ctrl_.qp.reset();
    }

    int run() {
        side_ = std::make_unique<Side>(args_.side);
        if (!side_->setup(dev_, run_.engine.workers()) || !setup_ctrl())
            return 1;
        const bool ok = client_ ? client() : server();
        /* The last DREQ/DREP was only queued: let it leave (and answer a resent DREQ). */
        app::cm_linger(run_, cm_);
        if (opt_.counters) {
            app::print_cm_counters(cm_);
        }
        return ok ? 0 : 1;
    }

  private:
    struct Msg {
        uint32_t len = 0;
        uint8_t data[kMsgMax] = {};
    };

    // ---------------------------------------------------------------- plumbing

    bool fail(const std::string &why) {
        std::fflush(stdout);
        std::fprintf(stderr, " %s\n", why.c_str());
        return false;
    }

    bool setup_ctrl() {
        const size_t len = kMsgMax * (kCtrlRecvs + 1);
        ctrl_.buf.reset(static_cast<uint8_t *>(std::aligned_alloc(64, len)));
        if (!ctrl_.buf)
            return fail("Couldn't allocate the control buffer");
        std::memset(ctrl_.buf.get(), 0, len);
        auto pd = dev_.alloc_pd();
        if (!pd)
            return fail("Couldn't allocate PD: " + pd.status().message());
        ctrl_.pd = std::move(*pd);
        auto mr = ctrl_.pd->reg_mr(ctrl_.buf.get(), len, kAccessLocalWrite);
        if (!mr)
            return fail("Couldn't register MR: " + mr.status().message());
        ctrl_.mr = std::move(*mr);
        auto cq = dev_.create_cq(16);
        if (!cq)
            return fail("Couldn't create CQ: " + cq.status().message());
        ctrl_.cq = std::move(*cq);
        if (std::string e = ctrl_.create_qp_in_init(4, kCtrlRecvs, 1, kAccessLocalWrite);
            !e.empty())
            return fail(e);
        for (int i = 0; i < kCtrlRecvs; ++i)
            if (!post_ctrl_recv(static_cast<uint32_t>(i)))
                return false;
        return true;
    }

    uint8_t *slot(uint32_t i) const { return ctrl_.buf.get() + size_t{i} * kMsgMax; }

    bool post_ctrl_recv(uint32_t i) {
        RecvWr r;
        r.wr_id = i;
        r.num_sge = 1;
        r.sg_list[0] = Sge{reinterpret_cast<uintptr_t>(slot(i)), kMsgMax, ctrl_.mr->lkey()};
        if (Status s = ctrl_.qp->post_recv(r); !s)
            return fail("Function ibv_post_recv failed for RDMA_CM QP: " + s.message());
        return true;
    }

    bool ours(uint32_t id) const {
        return id == ctrl_id_ ||
               std::find(data_ids_.begin(), data_ids_.end(), id) != data_ids_.end();
    }

    void on_event(const CmEventInfo &ev) {
        switch (ev.kind) {
        case CmEventKind::ConnectRequest:
            if (client_) {
                cm_.reject(ev.id);
            } else if (ctrl_id_ == 0) {
                /* The first connection is perftest's control channel. */
                CmAcceptParam ap;
                ap.rq_psn = app::random_psn();
                ctrl_id_ = ev.id;
                t_ctrl_ = cm_.now_ns();
                if (!cm_.accept(ev.id, *ctrl_.qp, ap))
                    error_ = "rdma_accept of the control connection failed";
            } else if (requests_.size() + data_ids_.size() < side_->num_qps()) {
                requests_.push_back(ev.id);
            } else {
                cm_.reject(ev.id); /* more connections than -q */
            }
            break;
        case CmEventKind::Established:
            if (ev.id == ctrl_id_ && !ctrl_est_) {
                ctrl_est_ = true;
                ctrl_ms_ = static_cast<double>(cm_.now_ns() - t_ctrl_) / 1e6;
            }
            for (size_t i = 0; i < data_ids_.size(); ++i)
                if (data_ids_[i] == ev.id && !data_est_[i]) {
                    data_est_[i] = true;
                    ++n_data_est_;
                }
            break;
        case CmEventKind::Rejected:
        case CmEventKind::Unreachable:
        case CmEventKind::ConnectError:
            if (client_ && ev.kind == CmEventKind::Rejected && ev.reason == kRejInvalidServiceId &&
                ev.id != ctrl_id_ && retry_later(ev.id))
                break;
            if (ours(ev.id))
                error_ =
                    std::string("RDMA-CM: ") + cm_event_kind_name(ev.kind) +
                    (ev.kind == CmEventKind::Rejected
                         ? " (reason " + std::to_string(ev.reason) + ")"
                         : std::string()) +
                    (ev.id == ctrl_id_ ? " on the control connection" : " on a test connection");
            break;
        case CmEventKind::Disconnected:
            if (ev.id == ctrl_id_)
                ctrl_gone_ = true;
            else if (ours(ev.id))
                ++n_data_gone_;
            break;
        case CmEventKind::TimewaitExit:
            break;
        case CmEventKind::SidrRequest: /* UD (SIDR): never listened for or asked here */
        case CmEventKind::SidrResolved:
        case CmEventKind::SidrRejected:
        case CmEventKind::SidrUnreachable:
            break;
        }
    }

    /** The peer is not listening (yet): perftest's server listens for the test
     * connections only after the handshake that precedes them, so the client's first REQ
     * may come too early. perftest's client tries again, 10 times 100 ms apart. */
    bool retry_later(uint32_t id) {
        for (size_t i = 0; i < data_ids_.size(); ++i) {
            if (data_ids_[i] != id)
                continue;
            if (++retries_ > kConnectRetries * data_ids_.size())
                return false;
            cm_.release(id);
            data_ids_[i] = 0;
            retry_at_ = cm_.now_ns() + kConnectRetryNs;
            return true;
        }
        return false;
    }
    /** Reconnects the test QPs whose REQ was rejected, once retry_at_ is reached. */
    void reconnect() {
        if (retry_at_ == 0 || cm_.now_ns() < retry_at_)
            return;
        retry_at_ = 0;
        for (size_t i = 0; i < data_ids_.size(); ++i)
            if (data_ids_[i] == 0) {
                data_ids_[i] = cm_.connect(server_ip_, static_cast<uint16_t>(opt_.tcp_port),
                                           side_->qp(static_cast<uint32_t>(i)),
                                           connect_param(side_->locals()[i].psn));
                if (data_ids_[i] == 0)
                    error_ = "Function rdma_connect failed (test QP " + std::to_string(i) + ")";
            }
    }

    /** One round: the engine, the CM (MADs, timers, events) and the control CQ. */
    bool tick() {
        reconnect();
        bool progress = run_.pump() > 0;
        progress |= cm_.poll() > 0;
        CmEventInfo ev;
        while (cm_.channel().poll_event(ev)) {
            progress = true;
            on_event(ev);
        }
        Wc wc[8];
        const int n = ctrl_.cq->poll(wc, 8);
        for (int i = 0; i < n; ++i) {
            progress = true;
            if (wc[i].status != WcStatus::Success) {
                if (error_.empty())
                    error_ = "Bad wc status on the control QP: " +
                             std::string(wc_status_str(wc[i].status));
                continue;
            }
            if (wc[i].opcode != WcOpcode::Recv) {
                ++sends_done_;
                continue;
            }
            if (!ctrl_est_ && ctrl_id_ != 0)
                /* The client spoke before its RTU reached us (lost or late): verbs'
                 * COMM_EST. */
                cm_.channel().notify_comm_est(ctrl_id_, cm_.now_ns());
            const auto s = static_cast<uint32_t>(wc[i].wr_id);
            Msg m;
            m.len = std::min(wc[i].byte_len, kMsgMax);
            std::memcpy(m.data, slot(s), m.len);
            inbox_.push_back(m);
            if (!post_ctrl_recv(s) && error_.empty())
                error_ = "Couldn't repost the control receive";
        }
        return progress;
    }

    /** Runs tick() (and `also`) until `until`; false on a CM/control error, --timeout or
     * a signal, with the reason printed. */
    template <class Until, class Also> bool wait(const char *what, Until until, Also also) {
        std::vector<Side *> sides;
        if (side_)
            sides.push_back(side_.get());
        IdleWait b(opt_.busy_poll, opt_.events, sides, kBackoffSpins);
        uint32_t n = 0;
        while (!until()) {
            bool progress = tick();
            progress |= also();
            if (!error_.empty())
                return fail(error_ + " (" + what + ")");
            if ((++n & 1023) == 0 || !progress) {
                if (args_.stop && *args_.stop)
                    return fail(std::string("Interrupted (") + what + ")");
                if (run_.timed_out())
                    return fail(std::string("Timed out (--timeout) waiting for ") + what);
            }
            progress ? b.progress() : b.idle();
        }
        return true;
    }
    template <class Until> bool wait(const char *what, Until until) {
        return wait(what, until, [] { return false; });
    }

    bool send_msg(const void *data, uint32_t len, const char *what) {
        uint8_t *s = slot(kCtrlRecvs);
        std::memcpy(s, data, len);
        SendWr w;
        w.opcode = WrOpcode::Send;
        w.send_flags = kSendSignaled;
        w.num_sge = 1;
        w.sg_list[0] = Sge{reinterpret_cast<uintptr_t>(s), len, ctrl_.mr->lkey()};
        if (Status st = ctrl_.qp->post_send(w); !st)
            return fail("Function ibv_post_send failed: " + st.message());
        const uint64_t want = ++sends_posted_;
        /* The send buffer is reused: wait for its completion, as perftest does. */
        return wait(what, [&] { return sends_done_ >= want; });
    }

    bool recv_msg(Msg &m, const char *what) {
        if (!wait(what, [&] { return !inbox_.empty() || ctrl_gone_; }))
            return false;
        if (inbox_.empty())
            return fail(std::string("The peer disconnected (") + what + ")");
        m = inbox_.front();
        inbox_.pop_front();
        return true;
    }

    /** ctx_xchg_data over the control QP: the client sends first, the server answers. */
    bool xchg(const void *mine, void *theirs, uint32_t len, const char *what) {
        Msg m;
        if (client_) {
            if (!send_msg(mine, len, what) || !recv_msg(m, what))
                return false;
        } else if (!recv_msg(m, what) || !send_msg(mine, len, what)) {
            return false;
        }
        if (m.len != len)
            return fail(std::string("Unexpected ") + std::to_string(m.len) + "-byte message (" +
                        what + ", expected " + std::to_string(len) + ")");
        std::memcpy(theirs, m.data, len);
        return true;
    }

    bool hand_shake(const Dest &mine, Dest *theirs, const char *what = "a handshake") {
        const auto b = encode_dest(mine, opt_.gid_idx);
        uint8_t r[kDestLen];
        if (!xchg(b.data(), r, kDestLen, what))
            return false;
        if (theirs)
            *theirs = decode_dest(r);
        return true;
    }

    /** exchange_versions, check_sys_data and check_mtu, as over TCP (proto.cpp). */
    bool preamble() {
        char ver[kVersionLen] = {}, rver[kVersionLen] = {};
        std::strncpy(ver, kVersion, sizeof ver - 1);
        if (!xchg(ver, rver, kVersionLen, "the versions"))
            return false;
        rver[kVersionLen - 1] = '\0';
        if (std::atof(rver) < 5.70)
            return fail(std::string("Current implementation is not compatible with versions "
                                    "older than 5.70 (peer: '") +
                        rver + "')");
        uint8_t cyc[4], cl[4], rcyc[4], rcl[4];
        store_be32(cyc, 4096);
        store_be32(cl, 64);
        if (!xchg(cyc, rcyc, 4, "the cycle buffer") || !xchg(cl, rcl, 4, "the cache line"))
            return false;
        char cur[2] = {static_cast<char>('0' + mtu_enum_), '\0'}, rem[2] = {};
        if (!xchg(cur, rem, 2, "the MTU"))
            return false;
        const int r = rem[0] - '0';
        if (r >= 1 && r <= 5 && r < mtu_enum_)
            mtu_enum_ = r;
        return true;
    }

    CmConnectParam connect_param(uint32_t rq_psn) const {
        CmConnectParam p;
        p.rq_psn = rq_psn;
        p.path_mtu = static_cast<uint8_t>(mtu_enum_);
        p.responder_resources = p.initiator_depth = resources();
        p.timeout = app::qp_defaults().timeout;
        p.retry_count = app::qp_defaults().retry_cnt;
        p.rnr_retry_count = app::qp_defaults().rnr_retry;
        return p;
    }
    /** perftest's conn_param: out_reads for READ/atomics (the control QP and the other
     * tests ask for none; one keeps a QP able to answer a stray READ). */
    uint8_t resources() const {
        const bool rd = args_.side.verb == Verb::Read || args_.side.verb == Verb::Atomic;
        return static_cast<uint8_t>(rd ? std::clamp<uint32_t>(opt_.out_reads, 1, 16) : 1);
    }

    /** The k-th record perftest sends after the test QPs connected (its QPs' records in
     * the first two rounds of q, then QP 0's). */
    const Dest &record_for(uint32_t k) const {
        const uint32_t q = side_->num_qps();
        return side_->locals()[k < 2 * q ? k % q : 0];
    }

    void print_connect_times() const {
        double lo = 0, hi = 0;
        for (size_t i = 0; i < data_ms_.size(); ++i) {
            lo = i ? std::min(lo, data_ms_[i]) : data_ms_[i];
            hi = i ? std::max(hi, data_ms_[i]) : data_ms_[i];
        }
        std::printf(" rdma_cm connect : control %.2f ms, %zu test QP(s) %.2f..%.2f ms\n", ctrl_ms_,
                    data_ms_.size(), lo, hi);
    }

    /** Steps the side until it is done (one size). */
    bool run_size(uint64_t sz) {
        if (!side_->start(sz))
            return false;
        bool failed = false;
        const bool ok = wait(
            "the test", [&] { return side_->done() || failed; },
            [&] {
                const auto st = side_->step();
                failed = st == Side::Step::Failed;
                return st == Side::Step::Progress;
            });
        return ok && !failed;
    }

    // ---------------------------------------------------------------- client

    bool client() {
        in_addr a{};
        if (inet_pton(AF_INET, opt_.servername.c_str(), &a) != 1)
            return fail("-R needs the server's IPv4 address (got '" + opt_.servername + "')");
        const uint32_t ip = server_ip_ = ntohl(a.s_addr);
        const auto port = static_cast<uint16_t>(opt_.tcp_port);
        t_ctrl_ = cm_.now_ns();
        ctrl_id_ = cm_.connect(ip, port, *ctrl_.qp, connect_param(app::random_psn()));
        if (ctrl_id_ == 0)
            return fail("Function rdma_connect failed");
        if (!wait("the control connection (rdma_connect)", [&] { return ctrl_est_; }) ||
            !preamble())
            return false;
        print_banner(opt_, dev_.name(), mtu_bytes(static_cast<Mtu>(mtu_enum_)), false);
        Dest zero;
        if (!hand_shake(zero, nullptr, "the sync before the test connections"))
            return false;
        const uint32_t q = side_->num_qps();
        data_ids_.assign(q, 0);
        data_est_.assign(q, false);
        const uint64_t t0 = cm_.now_ns();
        for (uint32_t i = 0; i < q; ++i) {
            data_ids_[i] =
                cm_.connect(ip, port, side_->qp(i), connect_param(side_->locals()[i].psn));
            if (data_ids_[i] == 0)
                return fail("Function rdma_connect failed (test QP " + std::to_string(i) + ")");
        }
        if (!wait("the test connections", [&] { return n_data_est_ == q; }))
            return false;
        data_ms_.assign(q, static_cast<double>(cm_.now_ns() - t0) / 1e6);
        if (!hand_shake(zero, nullptr, "the sync after the test connections"))
            return false;
        std::vector<Dest> remote(q);
        for (uint32_t k = 0; k < q; ++k)
            if (!hand_shake(record_for(k), &remote[k]))
                return false;
        side_->attach(remote);
        for (const Dest &d : side_->locals())
            print_dest("local", d, opt_.verb);
        for (const Dest &d : remote)
            print_dest("remote", d, opt_.verb);
        for (uint32_t k = q; k < args_.pre_test_handshakes; ++k)
            if (!hand_shake(record_for(k), nullptr))
                return false;
        print_connect_times();
        print_header(opt_);
        BwReport last;
        for (uint64_t sz : args_.sizes) {
            if (!run_size(sz))
                return false;
            if (opt_.kind == Kind::Bw) {
                last = compute_bw(opt_, *side_);
                print_bw_row(opt_, last);
            } else if (!print_lat_row(opt_, *side_)) {
                return false;
            }
        }
        print_line();
        /* As perftest's client ends (the TCP flow in main.cpp): bw tests other than
         * send_bw: a handshake, the 5 report values, the closing handshake; the others the
         * closing handshake (skipped when a lat server already left). */
        bool ok = true;
        if (opt_.kind == Kind::Bw && opt_.verb != Verb::Send) {
            ok = hand_shake(side_->local(), nullptr, "the report sync");
            for (uint32_t k = 0; ok && k < 5; ++k) {
                uint8_t v[8], r[8];
                store_be64(v, report_value(last, k));
                ok = xchg(v, r, 8, "the bw report");
            }
        }
        if (ok && !(opt_.kind == Kind::Lat && ctrl_gone_))
            ok = hand_shake(side_->local(), nullptr, "the closing handshake");
        if (!ok && !(opt_.kind == Kind::Lat && ctrl_gone_))
            return false;
        disconnect_all();
        return true;
    }

    /** The client's rdma_disconnect of every connection; waits a bounded time for the
     * DREPs so the peer sees a clean end. */
    void disconnect_all() {
        for (uint32_t id : data_ids_)
            if (id)
                cm_.disconnect(id);
        if (!ctrl_gone_)
            cm_.disconnect(ctrl_id_);
        const uint64_t until = cm_.now_ns() + kDisconnectWaitNs;
        error_.clear();
        wait("the disconnections", [&] {
            return (ctrl_gone_ && n_data_gone_ >= data_ids_.size()) || cm_.now_ns() >= until;
        });
    }

    // ---------------------------------------------------------------- server

    bool server() {
        if (!cm_.channel().listen(static_cast<uint16_t>(opt_.tcp_port)))
            return fail("rdma_listen failed (port " + std::to_string(opt_.tcp_port) + ")");
        std::printf("\n************************************\n* Waiting for client to connect... *\n"
                    "************************************\n");
        std::fflush(stdout);
        if (!wait("a client (rdma_listen)", [&] { return ctrl_est_; }) || !preamble())
            return false;
        print_banner(opt_, dev_.name(), mtu_bytes(static_cast<Mtu>(mtu_enum_)), false);
        Dest zero;
        if (!hand_shake(zero, nullptr, "the sync before the test connections"))
            return false;
        const uint32_t q = side_->num_qps();
        const uint64_t t0 = cm_.now_ns();
        /* Accept the test connections in the order they come (perftest's server does);
         * done when all are established, or when the client already spoke again (it
         * does so only once all its connections are ESTABLISHED: our RTUs were lost or
         * late, which is COMM_EST for us). */
        auto accept_pending = [&] {
            bool any = false;
            while (!requests_.empty() && error_.empty()) {
                const uint32_t id = requests_.front(), i = static_cast<uint32_t>(data_ids_.size());
                requests_.pop_front();
                data_ids_.push_back(id);
                data_est_.push_back(false);
                CmAcceptParam ap;
                ap.rq_psn = side_->locals()[i].psn;
                ap.responder_resources = ap.initiator_depth = resources();
                ap.rnr_retry_count = app::qp_defaults().rnr_retry;
                if (!cm_.accept(id, side_->qp(i), ap))
                    error_ = "rdma_accept failed (test QP " + std::to_string(i) + ")";
                any = true;
            }
            return any;
        };
        if (!wait(
                "the test connections",
                [&] { return n_data_est_ == q || (data_ids_.size() == q && !inbox_.empty()); },
                accept_pending))
            return false;
        for (size_t i = 0; i < data_ids_.size(); ++i)
            if (!data_est_[i])
                cm_.channel().notify_comm_est(data_ids_[i], cm_.now_ns());
        data_ms_.assign(q, static_cast<double>(cm_.now_ns() - t0) / 1e6);
        if (!hand_shake(zero, nullptr, "the sync after the test connections"))
            return false;
        std::vector<Dest> remote(q);
        for (uint32_t k = 0; k < q; ++k)
            if (!hand_shake(record_for(k), &remote[k]))
                return false;
        side_->attach(remote);
        for (const Dest &d : side_->locals())
            print_dest("local", d, opt_.verb);
        for (const Dest &d : remote)
            print_dest("remote", d, opt_.verb);
        print_connect_times();
        print_header(opt_);
        if (!side_->start(opt_.size))
            return false;

        /* From here the client leads: answer each record with ours and each report value
         * with ours, while our side of the test runs, until the client disconnects. */
        uint32_t handshakes = q, values = 0;
        BwReport mine, theirs;
        bool failed = false;
        auto serve = [&] {
            bool progress = false;
            const auto st = side_->step();
            failed = failed || st == Side::Step::Failed;
            progress = st == Side::Step::Progress;
            while (!inbox_.empty() && error_.empty()) {
                const Msg m = inbox_.front();
                inbox_.pop_front();
                progress = true;
                if (m.len == kDestLen) {
                    const auto b = encode_dest(record_for(handshakes++), opt_.gid_idx);
                    if (!reply(b.data(), kDestLen))
                        return true;
                } else if (m.len == 8) {
                    if (values == 0 && opt_.verb == Verb::Send && opt_.kind == Kind::Bw) {
                        /* A timed send_bw client reports once its sends are complete:
                         * every receive has arrived (as the TCP flow, main.cpp). */
                        if (!side_->done() && opt_.duration_s > 0)
                            side_->finish();
                        if (side_->done())
                            mine = compute_bw(opt_, *side_);
                    }
                    set_report_value(theirs, values % 5, load_be64(m.data));
                    uint8_t v[8];
                    store_be64(v, report_value(mine, values % 5));
                    ++values;
                    if (!reply(v, 8))
                        return true;
                } else {
                    error_ = "Unexpected " + std::to_string(m.len) + "-byte control message";
                }
            }
            return progress;
        };
        if (!wait(
                "the client to finish", [&] { return ctrl_gone_ || failed; }, serve) ||
            failed)
            return false;
        if (!side_->done() && opt_.kind == Kind::Bw && opt_.duration_s > 0)
            side_->finish();
        if (!side_->done() && !wait(
                                  "the test", [&] { return side_->done() || failed; },
                                  [&] { return side_->step() == Side::Step::Progress; }))
            return false;
        if (opt_.kind == Kind::Bw) {
            if (opt_.verb == Verb::Send && side_->done() && side_->completed() > 0)
                print_bw_row(opt_, compute_bw(opt_, *side_));
            else if (values >= 5)
                print_bw_row(opt_, theirs);
        } else if (opt_.verb == Verb::Write || opt_.verb == Verb::Send) {
            print_lat_row(opt_, *side_);
        }
        print_line();
        /* The client disconnected the control connection; the test connections follow
         * (their DREQs are answered by the CM): give them a moment. */
        const uint64_t until = cm_.now_ns() + kDisconnectWaitNs;
        wait("the disconnections",
             [&] { return n_data_gone_ >= data_ids_.size() || cm_.now_ns() >= until; });
        return true;
    }

    /** A server's answer: the send is posted, its completion waited for in tick(). */
    bool reply(const void *data, uint32_t len) {
        uint8_t *s = slot(kCtrlRecvs);
        /* The previous answer's buffer is free once its send completed. */
        while (sends_done_ < sends_posted_) {
            if (!error_.empty() || run_.timed_out())
                return false;
            tick();
        }
        std::memcpy(s, data, len);
        SendWr w;
        w.opcode = WrOpcode::Send;
        w.send_flags = kSendSignaled;
        w.num_sge = 1;
        w.sg_list[0] = Sge{reinterpret_cast<uintptr_t>(s), len, ctrl_.mr->lkey()};
        if (Status st = ctrl_.qp->post_send(w); !st) {
            error_ = "Function ibv_post_send failed: " + st.message();
            return false;
        }
        ++sends_posted_;
        return true;
    }

    app::EngineRun &run_;
    const Options &opt_;
    Device &dev_;
    CmDevice &cm_;
    const CmRunArgs &args_;
    const bool client_;
    int mtu_enum_;

    app::QpResources ctrl_; /* perftest's comm QP: 2 receive slots, then the send slot */
    std::unique_ptr<Side> side_;
    std::deque<Msg> inbox_;
    uint64_t sends_posted_ = 0, sends_done_ = 0;

    uint32_t ctrl_id_ = 0;
    bool ctrl_est_ = false, ctrl_gone_ = false;
    std::vector<uint32_t> data_ids_;
    std::vector<bool> data_est_;
    uint32_t n_data_est_ = 0, n_data_gone_ = 0;
    std::deque<uint32_t> requests_; /* server: test connections not accepted yet */
    std::string error_;
    uint32_t server_ip_ = 0;
    uint64_t retry_at_ = 0; /* client: when to reconnect rejected test QPs (0: none) */
    size_t retries_ = 0;
    uint64_t t_ctrl_ = 0;
    double ctrl_ms_ = 0;
    std::vector<double> data_ms_;
};

} // namespace

int run_cm(app::EngineRun &run, const Options &opt, Device &dev, const CmRunArgs &args) {
    CmDeviceOptions o;
    o.channel.cm_response_timeout = opt.cm_response_timeout;
    o.channel.max_cm_retries = opt.cm_retries;
    o.channel.stateless_per_sec = opt.cm_stateless_per_sec;
    o.channel.stateless_burst = opt.cm_stateless_burst;
    auto cm = CmDevice::open(run.engine, dev, o);
    if (!cm) {
        std::fprintf(stderr, " Couldn't open the RDMA-CM of %s: %s\n", dev.name().c_str(),
                     cm.status().message().c_str());
        return 1;
    }
    int rc;
    {
        CmPerf p(run, opt, dev, **cm, args);
        rc = p.run();
    }
    std::fflush(stdout);
    return rc;
}

} // namespace droce::perf
