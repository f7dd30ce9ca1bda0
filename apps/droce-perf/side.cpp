/* SPDX-License-Identifier: BSD-3-Clause */
#include "side.h"

#include "rights.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace droce::perf {

namespace {
constexpr uint64_t kSendWrid = 1;
constexpr uint64_t kRecvWrid = 2;
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

double Side::now_ns() const {
    return std::chrono::duration<double, std::nano>(Clock::now() - t0_).count();
}

bool Side::setup(Device &dev, uint32_t psn) {
    dev_ = &dev;
    // perftest: BUFF_SIZE = max(size, cycle buffer), two halves (send | receive).
    half_ = (std::max<uint64_t>(cfg_.max_size, kPage) + kPage - 1) / kPage * kPage;
    res_.buf.reset(static_cast<uint8_t *>(std::aligned_alloc(kPage, 2 * half_)));
    if (!res_.buf)
        return fail("Couldn't allocate work buf (%zu bytes)", 2 * half_);
    std::memset(buf(), 0, 2 * half_);

    auto pd = dev.alloc_pd();
    if (!pd)
        return fail("Couldn't allocate PD: %s", pd.status().message().c_str());
    res_.pd = std::move(pd.value());
    const Rights rights = rights_for(cfg_.verb, cfg_.kind, cfg_.client);
    auto mr = res_.pd->reg_mr(buf(), 2 * half_, rights.mr);
    if (!mr)
        return fail("Couldn't allocate MR: %s", mr.status().message().c_str());
    res_.mr = std::move(mr.value());
    auto cq = dev.create_cq(cfg_.tx_depth + cfg_.rx_depth + 16);
    if (!cq)
        return fail("Couldn't create CQ: %s", cq.status().message().c_str());
    res_.cq = std::move(cq.value());

    if (std::string err = res_.create_qp_in_init(cfg_.tx_depth, cfg_.rx_depth, 1, rights.qp);
        !err.empty())
        return fail("%s", err.c_str());
    if (cfg_.verb == Verb::Send && !(cfg_.client && cfg_.kind == Kind::Bw))
        if (!post_recv(static_cast<int>(cfg_.rx_depth)))
            return false;

    const auto gids = dev.gids();
    if (cfg_.gid_idx < 0 || static_cast<size_t>(cfg_.gid_idx) >= gids.size())
        return fail("Unable to read the gid of index %d (device %s has %zu GIDs)", cfg_.gid_idx,
                    dev.name().c_str(), gids.size());
    local_.lid = 0;
    local_.out_reads = (cfg_.verb == Verb::Read || cfg_.verb == Verb::Atomic) ? cfg_.out_reads : 1;
    local_.qpn = res_.qp->qp_num();
    local_.psn = psn & 0xffffff;
    local_.rkey = cfg_.verb == Verb::Send ? 0 : res_.mr->rkey();
    local_.vaddr = reinterpret_cast<uintptr_t>(buf() + half_);
    local_.gid = gids[static_cast<size_t>(cfg_.gid_idx)].gid;
    local_.srqn = 0;
    return true;
}

bool Side::connect(const Dest &remote, Mtu mtu) {
    remote_ = remote;
    QpAttr a;
    a.qp_state = QpState::Rtr;
    a.path_mtu = mtu;
    a.dest_qp_num = remote.qpn;
    a.rq_psn = remote.psn;
    a.max_dest_rd_atomic = static_cast<uint8_t>(std::min<uint32_t>(cfg_.out_reads, 16));
    a.min_rnr_timer = 12;
    a.ah_attr.dgid = remote.gid;
    a.ah_attr.sgid_index = static_cast<uint8_t>(cfg_.gid_idx);
    a.ah_attr.hop_limit = 64;
    a.ah_attr.port_num = 1;
    if (Status st = res_.qp->modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                           kQpMaxDestRdAtomic | kQpMinRnrTimer);
        !st)
        return fail("Failed to modify QP %u to RTR: %s", local_.qpn, st.message().c_str());
    const auto max_rd_atomic = static_cast<uint8_t>(
        std::clamp<uint32_t>(std::min(remote.out_reads, cfg_.out_reads), 1, 16));
    if (std::string err = res_.modify_qp_to_rts(local_.psn, max_rd_atomic); !err.empty())
        return fail("%s", err.c_str());
    return true;
}

bool Side::post_recv(int n) {
    RecvWr wr;
    wr.wr_id = kRecvWrid;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uintptr_t>(buf() + half_),
                     static_cast<uint32_t>(std::min<uint64_t>(half_, UINT32_MAX)), res_.mr->lkey()};
    for (int i = 0; i < n; ++i)
        if (Status st = res_.qp->post_recv(wr); !st)
            return fail("Couldn't post recv: %s", st.message().c_str());
    return true;
}

Status Side::post_one() {
    SendWr wr;
    wr.wr_id = kSendWrid;
    wr.send_flags = kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uintptr_t>(buf()), static_cast<uint32_t>(size_),
                     res_.mr->lkey()};
    wr.remote_addr = remote_.vaddr;
    wr.rkey = remote_.rkey;
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
    return res_.qp->post_send(wr);
}

bool Side::start(uint64_t size) {
    size_ = size;
    scnt_ = ccnt_ = rcnt_ = consumed_ = 0;
    lat_state_ = 0;
    done_ = false;
    const bool timed = cfg_.duration_s > 0;
    target_ = timed ? std::numeric_limits<uint64_t>::max() : cfg_.iters;
    tposted_.clear();
    tcompleted_.clear();
    if (!timed && target_ <= kMaxStamps) {
        tposted_.reserve(target_);
        tcompleted_.reserve(target_);
    }
    t_start_ = t_period_ = Clock::now();
    period_ccnt_ = 0;
    t_deadline_ = t_start_ + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(cfg_.duration_s));
    running_ = !is_passive();
    if (!running_)
        done_ = true;
    return true;
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

/** Polls the CQ: send completions bump ccnt_ (and are stamped), receives rcnt-like
 * counters via the caller. Returns false on an error completion. */
bool Side::poll_cq(Wc *wc, int max, int &n) {
    n = res_.cq->poll(wc, max);
    if (n < 0)
        return fail("poll CQ failed %d", n);
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

Side::Step Side::step_bw_client() {
    Wc wc[32];
    int n = 0;
    if (!poll_cq(wc, 32, n))
        return Step::Failed;
    for (int i = 0; i < n; ++i) {
        if (wc[i].wr_id != kSendWrid)
            continue;
        if (tcompleted_.size() < tcompleted_.capacity())
            tcompleted_.push_back(now_ns());
        ++ccnt_;
    }
    const bool stop = duration_over();
    bool posted = false;
    while (!stop && scnt_ < target_ && scnt_ - ccnt_ < cfg_.tx_depth) {
        if (tposted_.size() < tposted_.capacity())
            tposted_.push_back(now_ns());
        if (Status st = post_one(); !st) {
            fail("Couldn't post send: scnt=%llu: %s", static_cast<unsigned long long>(scnt_),
                 st.message().c_str());
            return Step::Failed;
        }
        ++scnt_;
        posted = true;
    }
    if ((ccnt_ >= target_) || (stop && ccnt_ == scnt_)) {
        t_end_ = Clock::now();
        running_ = false;
        done_ = true;
        return Step::Done;
    }
    return (n > 0 || posted) ? Step::Progress : Step::Idle;
}

Side::Step Side::step_send_server() {
    Wc wc[32];
    int n = 0;
    if (!poll_cq(wc, 32, n))
        return Step::Failed;
    for (int i = 0; i < n; ++i) {
        if (wc[i].wr_id != kRecvWrid)
            continue;
        if (ccnt_ == 0 && tposted_.size() < tposted_.capacity())
            tposted_.push_back(now_ns());
        if (tcompleted_.size() < tcompleted_.capacity())
            tcompleted_.push_back(now_ns());
        ++ccnt_;
        if (!post_recv(1))
            return Step::Failed;
    }
    if (ccnt_ >= target_) {
        t_end_ = Clock::now();
        running_ = false;
        done_ = true;
        return Step::Done;
    }
    return n > 0 ? Step::Progress : Step::Idle;
}

// perftest's run_iter_lat_write, one non-blocking step at a time:
//   0: top of the loop; 1: wait until the receive half's byte size-1 == (char)rcnt;
//   2: post the next write (its last byte = (char)++scnt); 3: wait for its completion.
Side::Step Side::step_lat_write() {
    volatile uint8_t *poll_buf = buf() + half_ + size_ - 1;
    volatile uint8_t *post_buf = buf() + size_ - 1;
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
                if (Status st = post_one(); !st) {
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
                    if (wc[i].wr_id == kSendWrid)
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
            if (wc[i].wr_id == kSendWrid) {
                ++ccnt_;
            } else {
                ++rcnt_; // receives that arrived
                if (!post_recv(1))
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
                if (Status st = post_one(); !st) {
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
                if (wc[i].wr_id == kSendWrid)
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
        if (Status st = post_one(); !st) {
            fail("Couldn't post send: scnt=%llu: %s", static_cast<unsigned long long>(scnt_),
                 st.message().c_str());
            return Step::Failed;
        }
        ++scnt_;
        progress = true;
    }
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
