/* SPDX-License-Identifier: BSD-3-Clause */
#include "endpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

namespace droce::pingpong {

PingpongEndpoint::PingpongEndpoint(EndpointConfig cfg) : cfg_(std::move(cfg)) {
    const long ps = ::sysconf(_SC_PAGESIZE);
    page_size_ = ps > 0 ? static_cast<size_t>(ps) : 4096;
}

bool PingpongEndpoint::fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    app::vprint_error(cfg_.prefix, fmt, ap);
    va_end(ap);
    state_ = State::Failed;
    return false;
}

bool PingpongEndpoint::setup(Device &dev, uint32_t psn) {
    dev_ = &dev;
    // A page-aligned buffer filled with 0x7b, as ibv_rc_pingpong does. Send and receive
    // share it: that is what makes -c (a pattern the client writes) checkable by the server.
    if (cfg_.ud && cfg_.size > dev.active_mtu())
        return fail("Requested size larger than port MTU (%u)", dev.active_mtu());
    buf_len_ = std::max<size_t>(cfg_.size, 1) + (cfg_.ud ? kGrh : 0);
    const size_t alloc = (buf_len_ + page_size_ - 1) / page_size_ * page_size_;
    /* DPDK memory, which zero-copy TX can attach on every port (virtio_user too). */
    Result<void *> b = alloc_buf(dev, alloc);
    if (!b)
        return fail("Couldn't allocate work buf: %s", b.status().message().c_str());
    res_.buf.reset(static_cast<uint8_t *>(*b));
    std::memset(buf(), 0x7b, alloc);

    auto pd = dev.alloc_pd();
    if (!pd)
        return fail("Couldn't allocate PD: %s", pd.status().message().c_str());
    res_.pd = std::move(pd.value());

    /* SEND/RECV only, as ibv_rc_pingpong: receives are local writes, and neither the MR
     * nor the QP (below) grants the peer any remote right. */
    auto mr = res_.pd->reg_mr(buf(), buf_len_, kAccessLocalWrite);
    if (!mr)
        return fail("Couldn't register MR: %s", mr.status().message().c_str());
    res_.mr = std::move(mr.value());

    if (cfg_.events) {
        auto ch = app::open_event_channel(dev);
        if (!ch)
            return fail("%s", ch.status().message().c_str());
        channel_ = std::move(ch.value());
    }
    auto cq = dev.create_cq(cfg_.rx_depth + 1, -1, channel_.get());
    if (!cq)
        return fail("Couldn't create CQ: %s", cq.status().message().c_str());
    res_.cq = std::move(cq.value());

    if (cfg_.ud) {
        QpInitAttr ia;
        ia.qp_type = QpType::Ud;
        ia.send_cq = ia.recv_cq = res_.cq.get();
        ia.cap.max_send_wr = 1;
        ia.cap.max_recv_wr = cfg_.rx_depth;
        ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
        auto qp = res_.pd->create_qp(ia);
        if (!qp)
            return fail("Couldn't create QP: %s", qp.status().message().c_str());
        res_.qp = std::move(qp.value());
        QpAttr a;
        a.qp_state = QpState::Init;
        a.pkey_index = 0;
        a.port_num = static_cast<uint8_t>(cfg_.ib_port);
        a.qkey = kUdQkey;
        if (Status st = res_.qp->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey); !st)
            return fail("Failed to modify QP to INIT: %s", st.message().c_str());
    } else if (std::string err =
                   res_.create_qp_in_init(1, cfg_.rx_depth, static_cast<uint8_t>(cfg_.ib_port), 0);
               !err.empty())
        return fail("%s", err.c_str());

    routs_ = post_recv(static_cast<int>(cfg_.rx_depth));
    if (routs_ < static_cast<int>(cfg_.rx_depth))
        return fail("Couldn't post receive (%d)", routs_);

    const auto gids = dev.gids();
    if (cfg_.gid_idx < 0 || static_cast<size_t>(cfg_.gid_idx) >= gids.size())
        return fail("can't read sgid of index %d (device %s has %zu GIDs)", cfg_.gid_idx,
                    dev.name().c_str(), gids.size());
    local_.lid = 0; // RoCE: no LIDs
    local_.gid = gids[static_cast<size_t>(cfg_.gid_idx)].gid;
    local_.qpn = res_.qp->qp_num();
    local_.psn = psn & 0xffffff;
    state_ = State::Ready;
    return true;
}

bool PingpongEndpoint::connect(const Dest &remote) {
    if (state_ != State::Ready)
        return fail("connect() in the wrong state");
    remote_ = remote;
    if (gid_is_zero(remote.gid))
        return fail("Failed to modify QP to RTR: the remote GID is zero (RoCE needs a GID: "
                    "run the peer with -g, e.g. -g 1)");

    if (cfg_.ud)
        return connect_ud(remote);
    QpAttr a;
    a.qp_state = QpState::Rtr;
    a.path_mtu = cfg_.mtu;
    a.dest_qp_num = remote.qpn;
    a.rq_psn = remote.psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = app::qp_defaults().min_rnr_timer;
    a.ah_attr.dgid = remote.gid;
    a.ah_attr.sgid_index = static_cast<uint8_t>(cfg_.gid_idx);
    a.ah_attr.hop_limit = 1;
    a.ah_attr.sl = static_cast<uint8_t>(cfg_.sl);
    a.ah_attr.port_num = static_cast<uint8_t>(cfg_.ib_port);
    if (Status st = res_.qp->modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                           kQpMaxDestRdAtomic | kQpMinRnrTimer);
        !st)
        return fail("Failed to modify QP to RTR: %s", st.message().c_str());

    if (std::string err = res_.modify_qp_to_rts(local_.psn, 1); !err.empty())
        return fail("%s", err.c_str());
    state_ = State::Connected;
    return true;
}

bool PingpongEndpoint::connect_ud(const Dest &remote) {
    /* ibv_ud_pingpong: RTR and RTS need no peer; the peer goes into an address handle
     * (hop limit 1, as the tool sets it) that every send names. */
    QpAttr a;
    a.qp_state = QpState::Rtr;
    if (Status st = res_.qp->modify(a, kQpState); !st)
        return fail("Failed to modify QP to RTR: %s", st.message().c_str());
    a.qp_state = QpState::Rts;
    a.sq_psn = local_.psn;
    if (Status st = res_.qp->modify(a, kQpState | kQpSqPsn); !st)
        return fail("Failed to modify QP to RTS: %s", st.message().c_str());
    AhAttr ah;
    ah.dgid = remote.gid;
    ah.sgid_index = static_cast<uint8_t>(cfg_.gid_idx);
    ah.hop_limit = 1;
    ah.sl = static_cast<uint8_t>(cfg_.sl);
    ah.port_num = static_cast<uint8_t>(cfg_.ib_port);
    auto r = res_.pd->create_ah(ah);
    if (!r)
        return fail("Failed to create AH: %s", r.status().message().c_str());
    ah_ = std::move(r.value());
    state_ = State::Connected;
    return true;
}

int PingpongEndpoint::post_recv(int n) {
    RecvWr wr;
    wr.wr_id = kRecvWrid;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uintptr_t>(buf()),
                     static_cast<uint32_t>(cfg_.size + (cfg_.ud ? kGrh : 0)), res_.mr->lkey()};
    int i = 0;
    for (; i < n; ++i) {
        if (Status st = res_.qp->post_recv(wr); !st) {
            std::fprintf(stderr, "%spost_recv: %s\n", cfg_.prefix.c_str(), st.message().c_str());
            break;
        }
    }
    return i;
}

Status PingpongEndpoint::post_send() {
    SendWr wr;
    wr.wr_id = kSendWrid;
    wr.opcode = WrOpcode::Send;
    wr.send_flags = kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uintptr_t>(data()), cfg_.size, res_.mr->lkey()};
    if (cfg_.ud) {
        wr.ah = ah_.get();
        wr.remote_qpn = remote_.qpn;
        wr.remote_qkey = kUdQkey;
    }
    return res_.qp->post_send(wr);
}

bool PingpongEndpoint::start() {
    if (state_ != State::Connected)
        return fail("start() in the wrong state");
    pending_ = kRecvWrid;
    if (cfg_.is_client) {
        // ibv_rc_pingpong -c: the client marks the first byte of every page (with
        // i / page_size % sizeof(char), i.e. 0); the server checks it at the end.
        if (cfg_.validate)
            for (size_t i = 0; i < cfg_.size; i += page_size_)
                data()[i] = static_cast<uint8_t>(i / page_size_ % sizeof(char));
        if (Status st = post_send(); !st)
            return fail("Couldn't post send: %s", st.message().c_str());
        pending_ |= kSendWrid;
    }
    rcnt_ = scnt_ = 0;
    t_start_ = std::chrono::steady_clock::now();
    state_ = State::Running;
    if (channel_) {
        if (Status st = res_.cq->req_notify(); !st)
            return fail("Couldn't request CQ notification: %s", st.message().c_str());
    }
    return true;
}

int PingpongEndpoint::event_fd() const { return channel_ ? channel_->fd() : -1; }

bool PingpongEndpoint::rearm() {
    if (!channel_)
        return true;
    for (;;) {
        auto ev = channel_->get_event();
        if (!ev) {
            if (ev.status().code() == EAGAIN)
                break;
            return fail("Failed to get cq_event: %s", ev.status().message().c_str());
        }
        if (ev.value() != res_.cq.get())
            return fail("CQ event for unknown CQ %p", static_cast<void *>(ev.value()));
        ++events_;
    }
    if (Status st = res_.cq->req_notify(); !st)
        return fail("Couldn't request CQ notification: %s", st.message().c_str());
    return true;
}

bool PingpongEndpoint::handle_wc(const Wc &wc) {
    if (wc.status != WcStatus::Success)
        return fail("Failed status %s (%d) for wr_id %d", wc_status_str(wc.status),
                    static_cast<int>(wc.status), static_cast<int>(wc.wr_id));

    switch (wc.wr_id) {
    case kSendWrid:
        ++scnt_;
        break;
    case kRecvWrid:
        if (--routs_ <= 1) {
            routs_ += post_recv(static_cast<int>(cfg_.rx_depth) - routs_);
            if (routs_ < static_cast<int>(cfg_.rx_depth))
                return fail("Couldn't post receive (%d)", routs_);
        }
        ++rcnt_;
        break;
    default:
        return fail("Completion for unknown wr_id %d", static_cast<int>(wc.wr_id));
    }

    pending_ &= ~wc.wr_id;
    if (scnt_ < static_cast<int>(cfg_.iters) && pending_ == 0) {
        if (Status st = post_send(); !st)
            return fail("Couldn't post send: %s", st.message().c_str());
        pending_ = kRecvWrid | kSendWrid;
    }
    return true;
}

PingpongEndpoint::Step PingpongEndpoint::step() {
    if (state_ == State::Done)
        return Step::Done;
    if (state_ != State::Running)
        return Step::Failed;
    Wc wc[16];
    const int ne = res_.cq->poll(wc, 16);
    if (ne < 0) {
        fail("poll CQ failed %d", ne);
        return Step::Failed;
    }
    for (int i = 0; i < ne; ++i) {
        if (!handle_wc(wc[i])) {
            std::fprintf(stderr, "%sparse WC failed %d\n", cfg_.prefix.c_str(), ne);
            return Step::Failed;
        }
    }
    if (rcnt_ >= static_cast<int>(cfg_.iters) && scnt_ >= static_cast<int>(cfg_.iters)) {
        t_end_ = std::chrono::steady_clock::now();
        state_ = State::Done;
        return Step::Done;
    }
    return ne > 0 ? Step::Progress : Step::Idle;
}

void PingpongEndpoint::print_local() const {
    std::printf("%s  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
                cfg_.prefix.c_str(), local_.lid, local_.qpn, local_.psn,
                gid_to_string(local_.gid).c_str());
}

void PingpongEndpoint::print_remote(const Dest &d) const {
    std::printf("%s  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
                cfg_.prefix.c_str(), d.lid, d.qpn, d.psn, gid_to_string(d.gid).c_str());
}

bool PingpongEndpoint::report() {
    const double usec = std::chrono::duration<double, std::micro>(t_end_ - t_start_).count();
    const long long bytes = static_cast<long long>(cfg_.size) * cfg_.iters * 2;
    std::printf("%s%lld bytes in %.2f seconds = %.2f Mbit/sec\n", cfg_.prefix.c_str(), bytes,
                usec / 1000000., bytes * 8. / usec);
    std::printf("%s%u iters in %.2f seconds = %.2f usec/iter\n", cfg_.prefix.c_str(), cfg_.iters,
                usec / 1000000., usec / cfg_.iters);
    if (channel_) /* droce's own line: what -e did (ibv_rc_pingpong prints none) */
        std::printf("%s%llu completion events\n", cfg_.prefix.c_str(),
                    static_cast<unsigned long long>(events_));
    bool ok = true;
    if (!cfg_.is_client && cfg_.validate) {
        for (size_t i = 0; i < cfg_.size; i += page_size_) {
            if (data()[i] != i / page_size_ % sizeof(char)) {
                std::printf("%sinvalid data in page %zu\n", cfg_.prefix.c_str(), i / page_size_);
                ok = false;
            }
        }
    }
    std::fflush(stdout);
    return ok;
}

} // namespace droce::pingpong
