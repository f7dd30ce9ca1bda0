/* SPDX-License-Identifier: BSD-3-Clause */
#include "side.h"

#include "rights.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "app_engine.h"

namespace droce::perf {

namespace {
// wr_id: the QP's index (perftest's) shifted left once, bit 0 set for receives.
constexpr uint64_t kRecvBit = 1;
uint64_t send_wrid(uint32_t qp) { return uint64_t{qp} << 1; }
uint64_t recv_wrid(uint32_t qp) { return (uint64_t{qp} << 1) | kRecvBit; }
bool is_recv(const Wc &wc) { return (wc.wr_id & kRecvBit) != 0; }
uint32_t wrid_qp(const Wc &wc) { return static_cast<uint32_t>(wc.wr_id >> 1); }
/** Byte j of QP i's source data: differs from QP to QP (odd factor) and along the slice,
 * so --loopback's data check sees a message that went to another QP's slice or offset. */
uint8_t pattern(uint32_t i, size_t j) {
    return static_cast<uint8_t>(j * 7 + i * 0x3b + (i >> 8) * 0x65 + 1);
}
constexpr size_t kPage = 4096;
/** Per-op timestamps are kept up to this many iterations (peak BW and latency stats). */
constexpr uint64_t kMaxStamps = 20'000'000;
} // namespace

Side::Side(SideConfig cfg) : cfg_(std::move(cfg)) { t0_ = Clock::now(); }

bool Side::fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    app::vprint_error(cfg_.prefix, fmt, ap);
    va_end(ap);
    failed_ = true;
    running_ = false;
    return false;
}

bool Side::is_passive() const {
    if (cfg_.client)
        return false;
    if (cfg_.kind == Kind::Bw)
        return cfg_.verb != Verb::Send;
    return cfg_.verb == Verb::Read || cfg_.verb == Verb::Atomic;
}

void Side::stamp_completion(uint64_t wrs) {
    if (tcompleted_.size() == tcompleted_.capacity())
        return;
    tcompleted_.push_back({now_ns(), wrs});
}

Side::Step Side::bw_done() {
    if (cfg_.no_peak)
        stamp_completion(ccnt_); /* -N: the last completion is its only stamp */
    t_end_ = Clock::now();
    running_ = false;
    done_ = true;
    return Step::Done;
}

void Side::stamp_first_post() {
    if (tposted_.empty() && tposted_.capacity() != 0)
        tposted_.push_back(now_ns());
}

double Side::now_ns() const {
    return std::chrono::duration<double, std::nano>(Clock::now() - t0_).count();
}

bool Side::setup(Device &dev, uint32_t workers, uint32_t first_worker) {
    dev_ = &dev;
    const uint32_t nq = cfg_.num_qps;
    // perftest: BUFF_SIZE = max(size, cycle buffer); one buffer of 2 x qps slices.
    half_ = (std::max<uint64_t>(cfg_.max_size + (cfg_.ud ? kGrh : 0), kPage) + kPage - 1) / kPage *
            kPage;
    const size_t total = 2 * size_t{nq} * half_;
    /* DPDK memory by default: zero-copy TX can attach it on every port (virtio_user
     * reaches nothing else); alloc_buf falls back to ordinary memory by itself. */
    if (cfg_.buf_malloc) {
        buf_.reset(static_cast<uint8_t *>(std::aligned_alloc(kPage, total)));
    } else {
        Result<void *> b = alloc_buf(dev, total);
        if (!b)
            return fail("Couldn't allocate work buf: %s", b.status().message().c_str());
        buf_.reset(static_cast<uint8_t *>(*b));
    }
    if (!buf_)
        return fail("Couldn't allocate work buf (%zu bytes)", total);
    std::memset(buf(), 0, total);
    // Source data for --loopback's check: what clients write/send, what read servers
    // are read from. Atomics start from zeroed targets.
    for (uint32_t i = 0; i < nq; ++i) {
        uint8_t *src = nullptr;
        if (cfg_.client && (cfg_.verb == Verb::Write || cfg_.verb == Verb::Send))
            src = send_buf(i);
        else if (!cfg_.client && cfg_.verb == Verb::Read)
            src = recv_buf(i);
        if (src != nullptr && cfg_.kind == Kind::Bw)
            for (size_t j = 0; j < half_; ++j)
                src[j] = pattern(i, j);
    }

    auto pd = dev.alloc_pd();
    if (!pd)
        return fail("Couldn't allocate PD: %s", pd.status().message().c_str());
    pd_ = std::move(pd.value());
    /* Only the rights the test needs, as perftest (rights.h). */
    const Rights rights = rights_for(cfg_.verb, cfg_.kind, cfg_.client);
    auto mr = pd_->reg_mr(buf(), total, rights.mr);
    if (!mr)
        return fail("Couldn't allocate MR: %s", mr.status().message().c_str());
    mr_ = std::move(mr.value());

    if (cfg_.events) {
        auto ch = app::open_event_channel(dev);
        if (!ch)
            return fail("%s", ch.status().message().c_str());
        channel_ = std::move(ch.value());
    }
    // One CQ per worker used, each sized for the WRs of the QPs on it.
    const uint32_t ncq = std::max<uint32_t>(1, std::min(workers, nq));
    /* Receives are posted only by send tests (perftest sizes its CQ the same way). */
    const uint64_t per_qp = uint64_t{cfg_.tx_depth} + (cfg_.verb == Verb::Send ? cfg_.rx_depth : 0);
    for (uint32_t w = 0; w < ncq; ++w) {
        const uint64_t on_w = nq / ncq + (w < nq % ncq ? 1 : 0);
        const uint64_t cqe = on_w * per_qp + 16;
        if (cqe > UINT32_MAX)
            return fail("Couldn't create CQ: %llu entries for %llu QPs",
                        static_cast<unsigned long long>(cqe),
                        static_cast<unsigned long long>(on_w));
        const uint32_t worker = first_worker + w;
        auto cq =
            dev.create_cq(static_cast<uint32_t>(cqe), static_cast<int>(worker), channel_.get());
        if (!cq)
            return fail("Couldn't create CQ on worker %u: %s", worker,
                        cq.status().message().c_str());
        cqs_.push_back(std::move(cq.value()));
    }

    const auto gids = dev.gids();
    if (cfg_.gid_idx < 0 || static_cast<size_t>(cfg_.gid_idx) >= gids.size())
        return fail("Unable to read the gid of index %d (device %s has %zu GIDs)", cfg_.gid_idx,
                    dev.name().c_str(), gids.size());
    qps_.resize(nq);
    local_.resize(nq);
    qp_scnt_.assign(nq, 0);
    qp_ccnt_.assign(nq, 0);
    for (uint32_t i = 0; i < nq; ++i) {
        if (cfg_.ud) {
            QpInitAttr ia;
            ia.qp_type = QpType::Ud;
            ia.send_cq = ia.recv_cq = cqs_[i % ncq].get();
            ia.cap.max_send_wr = cfg_.tx_depth;
            ia.cap.max_recv_wr = cfg_.rx_depth;
            ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
            auto q = pd_->create_qp(ia);
            if (!q)
                return fail("Couldn't create QP: %s (QP %u of %u)", q.status().message().c_str(),
                            i + 1, nq);
            qps_[i] = std::move(q.value());
            QpAttr a;
            a.qp_state = QpState::Init;
            a.qkey = kUdQkey;
            if (Status st = qps_[i]->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey); !st)
                return fail("Failed to modify QP to INIT: %s", st.message().c_str());
        } else if (std::string err = app::create_rc_qp_in_init(
                       *pd_, *cqs_[i % ncq], cfg_.tx_depth, cfg_.rx_depth, 1, rights.qp, qps_[i]);
                   !err.empty())
            return fail("%s (QP %u of %u)", err.c_str(), i + 1, nq);
        if (cfg_.verb == Verb::Send && !(cfg_.client && cfg_.kind == Kind::Bw))
            if (!post_recv(i, static_cast<int>(cfg_.rx_depth)))
                return false;
        Dest &d = local_[i];
        d.lid = 0;
        d.out_reads = (cfg_.verb == Verb::Read || cfg_.verb == Verb::Atomic) ? cfg_.out_reads : 1;
        d.qpn = qps_[i]->qp_num();
        d.psn = app::random_psn();
        d.rkey = cfg_.verb == Verb::Send ? 0 : mr_->rkey();
        d.vaddr = reinterpret_cast<uintptr_t>(recv_buf(i));
        d.gid = gids[static_cast<size_t>(cfg_.gid_idx)].gid;
        d.srqn = 0;
    }
    return true;
}

bool Side::connect(const std::vector<Dest> &remote, Mtu mtu) {
    if (remote.size() != qps_.size())
        return fail("%zu remote QPs for %zu local ones", remote.size(), qps_.size());
    remote_ = remote;
    for (size_t i = 0; i < qps_.size(); ++i) {
        const Dest &r = remote[i];
        if (cfg_.ud) {
            if (!connect_ud(i, r))
                return false;
            continue;
        }
        QpAttr a;
        a.qp_state = QpState::Rtr;
        a.path_mtu = mtu;
        a.dest_qp_num = r.qpn;
        a.rq_psn = r.psn;
        a.max_dest_rd_atomic = static_cast<uint8_t>(std::min<uint32_t>(cfg_.out_reads, 16));
        a.min_rnr_timer = app::qp_defaults().min_rnr_timer;
        a.ah_attr.dgid = r.gid;
        a.ah_attr.sgid_index = static_cast<uint8_t>(cfg_.gid_idx);
        a.ah_attr.hop_limit = 64;
        a.ah_attr.sl = cfg_.sl;
        a.ah_attr.port_num = 1;
        if (Status st = qps_[i]->modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                               kQpMaxDestRdAtomic | kQpMinRnrTimer);
            !st)
            return fail("Failed to modify QP %u to RTR: %s", local_[i].qpn, st.message().c_str());
        const auto max_rd_atomic = static_cast<uint8_t>(
            std::clamp<uint32_t>(std::min(r.out_reads, cfg_.out_reads), 1, 16));
        if (std::string err = app::modify_rc_qp_to_rts(*qps_[i], local_[i].psn, max_rd_atomic);
            !err.empty())
            return fail("%s", err.c_str());
    }
    return true;
}

bool Side::connect_ud(size_t i, const Dest &r) {
    /* UD: RTR and RTS need no peer; the peer is an address handle every send names. */
    QpAttr a;
    a.qp_state = QpState::Rtr;
    if (Status st = qps_[i]->modify(a, kQpState); !st)
        return fail("Failed to modify QP %u to RTR: %s", local_[i].qpn, st.message().c_str());
    a.qp_state = QpState::Rts;
    a.sq_psn = local_[i].psn;
    if (Status st = qps_[i]->modify(a, kQpState | kQpSqPsn); !st)
        return fail("Failed to modify QP %u to RTS: %s", local_[i].qpn, st.message().c_str());
    AhAttr ah;
    ah.dgid = r.gid;
    ah.sgid_index = static_cast<uint8_t>(cfg_.gid_idx);
    ah.hop_limit = 64;
    ah.sl = cfg_.sl;
    auto h = pd_->create_ah(ah);
    if (!h)
        return fail("Failed to create AH for UD: %s", h.status().message().c_str());
    if (ahs_.size() < qps_.size())
        ahs_.resize(qps_.size());
    ahs_[i] = std::move(h.value());
    return true;
}

bool Side::post_recv(uint32_t qp, int n) {
    RecvWr wr;
    wr.wr_id = recv_wrid(qp);
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uintptr_t>(recv_buf(qp)),
                     static_cast<uint32_t>(std::min<uint64_t>(half_, UINT32_MAX)), mr_->lkey()};
    for (int i = 0; i < n; ++i)
        if (Status st = qps_[qp]->post_recv(wr); !st)
            return fail("Couldn't post recv (QP %u): %s", qp, st.message().c_str());
    return true;
}

/* Like perftest, the work request is built once per run (start()) and only the fields
 * that differ per QP change per post: zero-initialising a fresh SendWr for every message
 * (a `rep stos` of its 120-odd bytes) was ~10% of the client's time at 64 B. */
void Side::prepare_wr() {
    SendWr &wr = wr_;
    wr = SendWr{};
    wr.send_flags = kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {0, static_cast<uint32_t>(size_), mr_ ? mr_->lkey() : 0};
    switch (cfg_.verb) {
    case Verb::Write:
        wr.opcode = WrOpcode::RdmaWrite;
        break;
    case Verb::Read:
        wr.opcode = WrOpcode::RdmaRead;
        break;
    case Verb::Send:
        wr.opcode = WrOpcode::Send;
        break;
    case Verb::Atomic:
        wr.opcode = cfg_.atomic_cas ? WrOpcode::AtomicCmpAndSwp : WrOpcode::AtomicFetchAndAdd;
        wr.sg_list[0].length = 8;
        wr.compare_add = cfg_.atomic_cas ? 0 : 1;
        wr.swap = 1;
        break;
    }
}

Status Side::post_one(uint32_t qp) {
    fill_wr(wr_, qp);
    return qps_[qp]->post_send(wr_);
}

Status Side::post_list(uint32_t q) {
    const uint32_t n = cfg_.post_list;
    for (uint32_t k = 0; k < n; ++k) {
        SendWr &wr = list_[k];
        fill_wr(wr, q);
        set_signaled(wr, qp_scnt_[q] + k + 1);
    }
    return qps_[q]->post_send(list_.data(), n);
}

void Side::set_signaled(SendWr &wr, uint64_t nth) const {
    const bool sig = nth % cfg_.cq_mod == 0 || nth == qp_target_;
    wr.send_flags = sig ? wr.send_flags | kSendSignaled : wr.send_flags & ~kSendSignaled;
}

void Side::fill_wr(SendWr &wr, uint32_t qp) {
    wr.wr_id = send_wrid(qp);
    wr.sg_list[0].addr = reinterpret_cast<uintptr_t>(send_buf(qp));
    wr.remote_addr = remote_[qp].vaddr;
    wr.rkey = remote_[qp].rkey;
    if (cfg_.ud) {
        wr.ah = ahs_[qp].get();
        wr.remote_qpn = remote_[qp].qpn;
        wr.remote_qkey = kUdQkey;
    }
}

bool Side::start(uint64_t size) {
    size_ = size;
    prepare_wr();
    list_.assign(cfg_.post_list > 1 ? cfg_.post_list : 0, wr_);
    scnt_ = ccnt_ = rcnt_ = consumed_ = 0;
    lat_state_ = 0;
    done_ = false;
    const bool timed = cfg_.duration_s > 0;
    qp_target_ = timed ? std::numeric_limits<uint64_t>::max() : cfg_.iters;
    target_ = timed ? std::numeric_limits<uint64_t>::max() : uint64_t{cfg_.iters} * cfg_.num_qps;
    std::fill(qp_scnt_.begin(), qp_scnt_.end(), 0);
    std::fill(qp_ccnt_.begin(), qp_ccnt_.end(), 0);
    room_.assign(qp_scnt_.size(), 0);
    queued_.assign(qp_scnt_.size(), 0);
    room_head_ = room_count_ = 0;
    for (uint32_t q = 0; q < qp_scnt_.size(); ++q)
        room_push(q);
    tposted_.clear();
    tcompleted_.clear();
    if (!timed && target_ <= kMaxStamps) {
        tposted_.reserve(cfg_.kind == Kind::Bw ? 1 : target_); /* bw: the first post */
        tcompleted_.reserve(target_);
    }
    t_start_ = t_period_ = Clock::now();
    period_ccnt_ = 0;
    t_deadline_ = t_start_ + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(cfg_.duration_s));
    running_ = !is_passive();
    if (!running_)
        done_ = true;
    return !running_ || rearm();
}

bool Side::duration_over() const { return cfg_.duration_s > 0 && Clock::now() >= t_deadline_; }

void Side::finish() {
    if (running_) {
        t_end_ = Clock::now();
        running_ = false;
    }
    done_ = true;
}

double Side::run_seconds() const {
    return std::chrono::duration<double>(t_end_ - t_start_).count();
}

void Side::take_period(uint64_t &ops, double &seconds) {
    const auto now = Clock::now();
    ops = ccnt_ - period_ccnt_;
    seconds = std::chrono::duration<double>(now - t_period_).count();
    period_ccnt_ = ccnt_;
    t_period_ = now;
}

/** Polls the CQs; the callers count what completed. Returns false on an error
 * completion. */
bool Side::poll_cq(Wc *wc, int max, int &n) {
    n = 0;
    // Start one CQ further each time so that a busy CQ cannot starve the others. No
    // division: this runs every spin of a latency test.
    const size_t ncq = cqs_.size();
    size_t c = next_cq_;
    for (size_t k = 0; k < ncq && n < max; ++k) {
        const int got = cqs_[c]->poll(wc + n, max - n);
        if (got < 0)
            return fail("poll CQ failed %d", got);
        n += got;
        c = c + 1 == ncq ? 0 : c + 1;
    }
    next_cq_ = next_cq_ + 1 == ncq ? 0 : next_cq_ + 1;
    for (int i = 0; i < n; ++i) {
        if (wc[i].status != WcStatus::Success)
            return fail("Completion with error at %s:\n Failed status %d: wr_id %llu syndrom "
                        "0x%x (%s)\n scnt=%llu, ccnt=%llu",
                        cfg_.client ? "client" : "server", static_cast<int>(wc[i].status),
                        static_cast<unsigned long long>(wc[i].wr_id), wc[i].vendor_err,
                        wc_status_str(wc[i].status), static_cast<unsigned long long>(scnt_),
                        static_cast<unsigned long long>(ccnt_));
    }
    return true;
}

void Side::room_push(uint32_t q) {
    /* Room for a whole list (-l; one WR without it). */
    const uint32_t n = cfg_.post_list;
    if (queued_[q] || qp_scnt_[q] + n > qp_target_ || qp_scnt_[q] - qp_ccnt_[q] + n > cfg_.tx_depth)
        return;
    queued_[q] = 1;
    room_[(room_head_ + room_count_++) % room_.size()] = q;
}

// perftest's run_iter_bw: fill each QP's send queue up to tx_depth in turn (every QP
// runs qp_target_ iterations), then poll; a completion's wr_id names its QP. The QPs
// with room come from room_ instead of a pass over all of them.
Side::Step Side::step_bw_client() {
    Wc wc[32];
    int n = 0;
    if (!poll_cq(wc, 32, n))
        return Step::Failed;
    const uint32_t mod = cfg_.cq_mod;
    for (int i = 0; i < n; ++i) {
        if (is_recv(wc[i]))
            continue;
        const uint32_t q = wrid_qp(wc[i]);
        /* A QP's completions come in order, so a signaled one retires every WR up to it:
         * cq_mod of them, fewer only for a run's last (partial) batch. */
        const uint64_t k = std::min<uint64_t>(mod, qp_scnt_[q] - qp_ccnt_[q]);
        if (!cfg_.no_peak)
            stamp_completion(k);
        qp_ccnt_[q] += k;
        ccnt_ += k;
        room_push(q);
    }
    const bool stop = duration_over();
    bool posted = false;
    while (room_count_ > 0) {
        const uint32_t q = room_[room_head_];
        room_head_ = room_head_ + 1 == room_.size() ? 0 : room_head_ + 1;
        --room_count_;
        queued_[q] = 0;
        /* At the end of a timed run a QP still completes its batch: an unsignaled tail
         * would stay in flight, uncounted, into teardown (or the next run). A list ends
         * on a batch boundary (cq_mod divides it), so none starts after the stop. */
        if (cfg_.post_list > 1) {
            const uint32_t n = cfg_.post_list;
            while (!stop && qp_scnt_[q] + n <= qp_target_ &&
                   qp_scnt_[q] - qp_ccnt_[q] + n <= cfg_.tx_depth) {
                stamp_first_post();
                if (Status st = post_list(q); !st) {
                    fail("Couldn't post send list: qp %u scnt=%llu: %s", q,
                         static_cast<unsigned long long>(qp_scnt_[q]), st.message().c_str());
                    return Step::Failed;
                }
                qp_scnt_[q] += n;
                scnt_ += n;
                posted = true;
            }
            continue;
        }
        while ((!stop || qp_scnt_[q] % mod != 0) && qp_scnt_[q] < qp_target_ &&
               qp_scnt_[q] - qp_ccnt_[q] < cfg_.tx_depth) {
            stamp_first_post();
            set_signaled(wr_, qp_scnt_[q] + 1);
            if (Status st = post_one(q); !st) {
                fail("Couldn't post send: qp %u scnt=%llu: %s", q,
                     static_cast<unsigned long long>(qp_scnt_[q]), st.message().c_str());
                return Step::Failed;
            }
            ++qp_scnt_[q];
            ++scnt_;
            posted = true;
        }
    }
    if ((ccnt_ >= target_) || (stop && ccnt_ == scnt_))
        return bw_done();
    return (n > 0 || posted) ? Step::Progress : Step::Idle;
}

// perftest's run_iter_bw_server: count receives over all QPs, repost on the QP that
// consumed one.
Side::Step Side::step_send_server() {
    Wc wc[32];
    int n = 0;
    if (!poll_cq(wc, 32, n))
        return Step::Failed;
    for (int i = 0; i < n; ++i) {
        if (!is_recv(wc[i]))
            continue;
        stamp_first_post();
        if (!cfg_.no_peak)
            stamp_completion(1);
        const uint32_t q = wrid_qp(wc[i]);
        ++qp_ccnt_[q];
        ++ccnt_;
        if (!post_recv(q, 1))
            return Step::Failed;
    }
    if (ccnt_ >= target_)
        return bw_done();
    return n > 0 ? Step::Progress : Step::Idle;
}

// perftest's run_iter_lat_write, one non-blocking step at a time:
//   0: top of the loop; 1: wait until the receive half's byte size-1 == (char)rcnt;
//   2: post the next write (its last byte = (char)++scnt); 3: wait for its completion.
Side::Step Side::step_lat_write() {
    volatile uint8_t *poll_buf = recv_buf(0) + size_ - 1;
    volatile uint8_t *post_buf = send_buf(0) + size_ - 1;
    bool progress = false;
    while (true) {
        switch (lat_state_) {
        case 0:
            if ((scnt_ >= target_ && ccnt_ >= target_ && rcnt_ >= target_) ||
                (duration_over() && scnt_ == ccnt_)) {
                t_end_ = Clock::now();
                running_ = false;
                done_ = true;
                return Step::Done;
            }
            if (rcnt_ < target_ && !(scnt_ < 1 && !cfg_.client)) {
                ++rcnt_;
                lat_state_ = 1;
            } else {
                lat_state_ = 2;
            }
            break;
        case 1:
            if (*poll_buf != static_cast<uint8_t>(rcnt_))
                return progress ? Step::Progress : Step::Idle;
            lat_state_ = 2;
            break;
        case 2:
            if (scnt_ < target_) {
                if (tposted_.size() < tposted_.capacity())
                    tposted_.push_back(now_ns());
                *post_buf = static_cast<uint8_t>(++scnt_);
                if (Status st = post_one(0); !st) {
                    fail("Couldn't post send: scnt=%llu: %s",
                         static_cast<unsigned long long>(scnt_), st.message().c_str());
                    return Step::Failed;
                }
            }
            lat_state_ = 3;
            progress = true;
            break;
        case 3: {
            if (ccnt_ < scnt_) {
                Wc wc[4];
                int n = 0;
                if (!poll_cq(wc, 4, n))
                    return Step::Failed;
                for (int i = 0; i < n; ++i)
                    if (!is_recv(wc[i]))
                        ++ccnt_;
                if (ccnt_ < scnt_)
                    return progress ? Step::Progress : Step::Idle;
            }
            lat_state_ = 0;
            break;
        }
        }
    }
}

// perftest's run_iter_lat_send: the client sends first, the server waits for a receive.
Side::Step Side::step_lat_send() {
    bool progress = false;
    while (true) {
        Wc wc[8];
        int n = 0;
        if (!poll_cq(wc, 8, n))
            return Step::Failed;
        for (int i = 0; i < n; ++i) {
            if (!is_recv(wc[i])) {
                ++ccnt_;
            } else {
                ++rcnt_; // receives that arrived
                if (!post_recv(0, 1))
                    return Step::Failed;
            }
        }
        progress = progress || n > 0;
        switch (lat_state_) {
        case 0:
            if ((scnt_ >= target_ && consumed_ >= target_ && ccnt_ >= scnt_) ||
                (duration_over() && ccnt_ == scnt_)) {
                t_end_ = Clock::now();
                running_ = false;
                done_ = true;
                return Step::Done;
            }
            if (consumed_ < target_ && !(scnt_ < 1 && cfg_.client))
                lat_state_ = 1;
            else
                lat_state_ = 2;
            break;
        case 1:
            if (rcnt_ <= consumed_)
                return progress ? Step::Progress : Step::Idle;
            ++consumed_;
            lat_state_ = 2;
            break;
        case 2:
            if (scnt_ < target_ && !(duration_over())) {
                if (tposted_.size() < tposted_.capacity())
                    tposted_.push_back(now_ns());
                ++scnt_;
                if (Status st = post_one(0); !st) {
                    fail("Couldn't post send: scnt=%llu: %s",
                         static_cast<unsigned long long>(scnt_), st.message().c_str());
                    return Step::Failed;
                }
                progress = true;
            }
            lat_state_ = 3;
            break;
        case 3:
            if (ccnt_ < scnt_)
                return progress ? Step::Progress : Step::Idle;
            lat_state_ = 0;
            break;
        }
    }
}

// perftest's run_iter_lat (READ, ATOMIC): one WR at a time, stamped at each post.
Side::Step Side::step_lat_single() {
    bool progress = false;
    while (true) {
        if (ccnt_ < scnt_) {
            Wc wc[4];
            int n = 0;
            if (!poll_cq(wc, 4, n))
                return Step::Failed;
            for (int i = 0; i < n; ++i)
                if (!is_recv(wc[i]))
                    ++ccnt_;
            if (ccnt_ < scnt_)
                return progress ? Step::Progress : Step::Idle;
        }
        if (scnt_ >= target_ || duration_over()) {
            t_end_ = Clock::now();
            running_ = false;
            done_ = true;
            return Step::Done;
        }
        if (tposted_.size() < tposted_.capacity())
            tposted_.push_back(now_ns());
        if (Status st = post_one(0); !st) {
            fail("Couldn't post send: scnt=%llu: %s", static_cast<unsigned long long>(scnt_),
                 st.message().c_str());
            return Step::Failed;
        }
        ++scnt_;
        progress = true;
    }
}

int Side::event_fd() const { return channel_ && running_ ? channel_->fd() : -1; }

bool Side::rearm() {
    if (!channel_)
        return true;
    for (;;) {
        auto ev = channel_->get_event();
        if (!ev) {
            if (ev.status().code() == EAGAIN)
                break;
            return fail("Failed to get cq_event: %s", ev.status().message().c_str());
        }
    }
    for (auto &cq : cqs_)
        if (Status st = cq->req_notify(); !st)
            return fail("Couldn't request CQ notification: %s", st.message().c_str());
    return true;
}

Side::Step Side::step() {
    if (failed_)
        return Step::Failed;
    if (done_)
        return Step::Done;
    if (!running_)
        return Step::Idle;
    if (cfg_.kind == Kind::Bw)
        return cfg_.client ? step_bw_client() : step_send_server();
    switch (cfg_.verb) {
    case Verb::Write:
        return step_lat_write();
    case Verb::Send:
        return step_lat_send();
    default:
        return step_lat_single();
    }
}

} // namespace droce::perf
