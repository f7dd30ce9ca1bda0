/* SPDX-License-Identifier: BSD-3-Clause */
/* The public classes of droce.h on top of lib/engine. Control calls run on the worker
 * through Runtime::exec(); the data calls (post_send/post_recv/poll) touch only SPSC
 * rings in worker mode, or the QP itself in embedded mode. */
#include <chrono>
#include <cstring>
#include <type_traits>

#include <rte_errno.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <droce/droce.h>

#include "api_internal.h"
#include "api_ud.h"
#include "api_wr_ring.h"
#include "engine.h"
#include "engine_comp_channel.h"
#include "engine_log.h"
#include "engine_route.h"

namespace droce {

namespace {

using api::check_num_sge;
using api::enqueue_wr;
using api::make_elem_ring;
using api::recv_ring;
using api::send_ring;
using api::WrRing;

using engine::CompChannel;
using engine::CqCtx;
using engine::Dev;
using engine::QpCtx;
using engine::Runtime;
using engine::SrqCtx;

/* Live children of a PD, shared so that children outliving a PD (a misuse we report)
 * do not touch freed memory. */
struct PdState {
    uint32_t id = 0;
    uint32_t qps = 0;
    uint32_t mrs = 0;
};

class MrImpl final : public MemoryRegion {
  public:
    MrImpl(Runtime &rt, Dev &dev, std::shared_ptr<PdState> pd, const mem::MemoryRegion &r)
        : rt_(rt), dev_(dev), pd_(std::move(pd)), r_(r) {
        ++pd_->mrs;
    }
    ~MrImpl() override {
        Status s;
        uint32_t out = 0;
        rt_.exec_all([&] { s = dev_.dereg_mr(r_.key, &out); });
        if (!s)
            logger().error("{}: dereg MR 0x{:x}: {}", dev_.name(), r_.key, s.message());
        if (out != 0) {
            /* Zero-copy frames still point into the region (in the PMD's TX queue, or over
             * net_ring in the peer's RX ring). Verbs: once dereg returns the device no
             * longer touches the memory, so wait for them (the key is already dead). */
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            for (;;) {
                bool gone = false;
                const bool late = std::chrono::steady_clock::now() > deadline;
                rt_.exec_all([&] { gone = dev_.zc_reap(r_.key, late); });
                if (gone)
                    break;
                if (late) {
                    logger().warn("{}: dereg MR 0x{:x}: zero-copy frames still out after 5 s; "
                                  "the memory must stay valid until the port is closed",
                                  dev_.name(), r_.key);
                    break;
                }
                rt_.wait_a_bit();
            }
        }
        --pd_->mrs;
    }
    uint32_t lkey() const override { return r_.key; }
    uint32_t rkey() const override { return r_.key; }
    void *addr() const override { return reinterpret_cast<void *>(r_.addr); }
    size_t length() const override { return r_.length; }

  private:
    Runtime &rt_;
    Dev &dev_;
    std::shared_ptr<PdState> pd_;
    mem::MemoryRegion r_;
};

class ChannelImpl final : public CompletionChannel {
  public:
    explicit ChannelImpl(std::shared_ptr<CompChannel> ch) : ch_(std::move(ch)) {}
    int fd() const override { return ch_->fd(); }
    Result<CompletionQueue *> get_event() override {
        CqCtx *cq = nullptr;
        const int e = ch_->next(&cq);
        if (e != 0)
            return Status(e, std::string("get_event: ") + std::strerror(e));
        return static_cast<CompletionQueue *>(cq->user);
    }
    const std::shared_ptr<CompChannel> &channel() const { return ch_; }

  private:
    std::shared_ptr<CompChannel> ch_; /* shared with its CQs: they may outlive this */
};

class CqImpl final : public CompletionQueue {
  public:
    CqImpl(Runtime &rt, Dev &dev, std::unique_ptr<CqCtx> ctx, std::shared_ptr<CompChannel> ch)
        : rt_(rt), dev_(dev), ctx_(std::move(ctx)), channel_(std::move(ch)) {
        ctx_->user = static_cast<CompletionQueue *>(this);
    }
    ~CqImpl() override {
        rt_.exec_on(ctx_->worker, [&] {
            /* On the producing worker: no event is raised for this CQ after this. */
            if (channel_)
                channel_->detach(*ctx_);
            if (ctx_->refs != 0) {
                /* ibv_destroy_cq would fail with EBUSY; a destructor cannot, so keep the
                 * ring alive for the QPs still pointing at it. */
                logger().error("{}: CQ destroyed while {} QP(s) still use it; kept until the "
                               "device closes",
                               dev_.name(), ctx_->refs);
                ctx_->user = nullptr;
                dev_.retire_cq(std::move(ctx_));
            }
        });
        ctx_.reset();
    }
    int poll(Wc *wc, int max) override { return ctx_->poll(wc, max); }
    Status req_notify(bool solicited_only) override {
        if (!channel_)
            return Status(EINVAL, "req_notify: the CQ has no completion channel");
        ctx_->arm(solicited_only);
        return {};
    }
    CqCtx *ctx() const { return ctx_.get(); }

  private:
    Runtime &rt_;
    Dev &dev_;
    std::unique_ptr<CqCtx> ctx_;
    std::shared_ptr<CompChannel> channel_;
};

class QpImpl final : public QueuePair {
  public:
    QpImpl(Runtime &rt, Dev &dev, std::shared_ptr<PdState> pd, QpCtx *ctx, uint32_t qpn,
           const QpCap &cap)
        : rt_(rt), dev_(dev), pd_(std::move(pd)), ctx_(ctx), qp_(ctx->qp.get()), qpn_(qpn),
          cap_(cap) {
        ++pd_->qps;
        if (!rt_.embedded())
            inline_.init(cap.max_send_wr, cap.max_inline_data);
    }
    ~QpImpl() override {
        rt_.exec_on(ctx_->worker, [&] { dev_.destroy_qp(qpn_); });
        --pd_->qps;
    }

    uint32_t qp_num() const override { return qpn_; }

    Status modify(const QpAttr &attr, uint32_t mask) override {
        if (mask & kQpPathMtu) {
            const uint32_t want = mtu_bytes(attr.path_mtu);
            if (want > dev_.active_mtu())
                return Status(EINVAL, "modify QP: path_mtu " + std::to_string(want) +
                                          " exceeds the active MTU " +
                                          std::to_string(dev_.active_mtu()) + " of " + dev_.name() +
                                          " (Ethernet MTU " + std::to_string(dev_.eth_mtu()) + ")");
        }
        rc::Path path;
        const rc::Path *pp = nullptr;
        NeighPending pend;
        if (mask & kQpAv) {
            Status s = resolve_path(
                attr.ah_attr, (mask & kQpDestQpn) ? attr.dest_qp_num : dest_qpn_, &path, &pend);
            if (!s)
                return s;
            pp = &path;
        }
        Status s;
        rt_.exec_on(ctx_->worker, [&] {
            s = ctx_->qp->modify(attr, mask, pp);
            if (s && pp != nullptr) {
                if (pend.on)
                    dev_.neigh_hold(qpn_, pend.v4, pend.ip, pend.ip6.data(),
                                    rt_.now_ns() + uint64_t{dev_.arp_timeout_ms()} * 1'000'000);
                else if (ctx_->tx.neigh_held())
                    dev_.neigh_unhold(qpn_);
                dev_.shard(ctx_->worker)
                    .set_loopback(*ctx_, pend.loopback, ctx_->qp->attr().dest_qp_num);
            }
            state_ = ctx_->qp->state();
            dest_qpn_ = ctx_->qp->attr().dest_qp_num;
            dev_.touch(*ctx_); /* e.g. to RTS with WRs queued, or to ERR: flushed */
        });
        return s;
    }

    Status query(QpAttr &attr) override {
        rt_.exec_on(ctx_->worker, [&] {
            attr = ctx_->qp->attr();
            attr.qp_state = attr.cur_qp_state = ctx_->qp->state();
            state_ = attr.qp_state;
        });
        return {};
    }

    /* DCQCN: on the QP's worker (the QP's state is the worker's), as modify/query. */
    Status set_dcqcn(const DcqcnParams &params) override {
        const cc::CcParams p = cc::params_from(params);
        Status s;
        rt_.exec_on(ctx_->worker, [&] {
            s = ctx_->qp->set_cc_params(p, rt_.now_ns());
            dev_.touch(*ctx_); /* the pacer may hold or release data now; re-arm its timer */
        });
        return s;
    }

    Status disable_dcqcn() override {
        rt_.exec_on(ctx_->worker, [&] {
            ctx_->qp->disable_cc();
            dev_.touch(*ctx_);
        });
        return {};
    }

    Status query_dcqcn(DcqcnState &state) override {
        rt_.exec_on(ctx_->worker, [&] { state = engine::to_dcqcn_state(ctx_->qp->cc_state()); });
        return {};
    }

    Status post_send(const SendWr &wr) override {
        if (rt_.embedded())
            return post_send_here(wr);
        return post_send_to_worker(wr);
    }
    /* Worker mode: check here what can be checked here, so that the caller gets errors
     * as values; the worker completes anything it still refuses in error. Out of line:
     * its messages are not set up on an embedded post. */
    [[gnu::noinline]] Status post_send_to_worker(const SendWr &wr) {
        if (state_ == QpState::Reset || state_ == QpState::Init || state_ == QpState::Rtr)
            return Status(EINVAL, "post_send: QP " + std::to_string(qpn_) + " is in " +
                                      qp_state_str(state_) + ", needs RTS");
        if (Status s = check_num_sge(wr.num_sge, cap_.max_send_sge, "post_send"); !s)
            return s;
        if (wr.opcode == WrOpcode::AtomicCmpAndSwp || wr.opcode == WrOpcode::AtomicFetchAndAdd) {
            if (wr.num_sge != 1 || wr.sg_list[0].length != 8)
                return Status(EINVAL, "post_send: atomics take exactly one 8-byte SGE");
            if (wr.remote_addr & 7)
                return Status(EINVAL, "post_send: atomic remote_addr must be 8-byte aligned");
        }
        return inline_.enqueue(dev_, send_ring(*ctx_, qpn_), cap_.max_send_wr, wr);
    }

    /* Chains: embedded mode posts to the transport and schedules the QP once at the end
     * (it sends the chain's first WR only once every WR is in); worker mode is the
     * ring loop of the base class (one doorbell for the chain, as the flag already
     * rings it once). */
    Status post_send(const SendWr *wrs, uint32_t n, uint32_t *bad_index) override {
        if (!rt_.embedded())
            return QueuePair::post_send(wrs, n, bad_index);
        return post_chain(wrs, n, bad_index, [&](const SendWr &w) { return qp_->post_send(w); });
    }
    Status post_recv(const RecvWr *wrs, uint32_t n, uint32_t *bad_index) override {
        if (!rt_.embedded() || ctx_->srq)
            return QueuePair::post_recv(wrs, n, bad_index);
        return post_chain(wrs, n, bad_index, [&](const RecvWr &w) { return qp_->post_recv(w); });
    }
    /* Posts wrs[0..n) until one fails (its index goes to bad_index, as ibv's bad_wr),
     * then schedules the QP once if anything was posted. */
    template <typename Wr, typename PostOne>
    Status post_chain(const Wr *wrs, uint32_t n, uint32_t *bad_index, PostOne post_one) {
        uint32_t i = 0;
        Status s;
        for (; i < n && s; ++i)
            s = post_one(wrs[i]);
        if (!s)
            --i;
        if (i != 0) {
            if constexpr (std::is_same_v<Wr, SendWr>)
                dev_.posted(*ctx_); /* a reply may go with the ACK it answers at once */
            else
                dev_.touch(*ctx_);
        }
        if (bad_index)
            *bad_index = i;
        return s;
    }

    Status post_recv(const RecvWr &wr) override {
        if (ctx_->srq)
            return Status(EINVAL, "post_recv: QP " + std::to_string(qpn_) +
                                      " uses a shared receive queue; post to the SRQ");
        if (rt_.embedded())
            return post_recv_here(wr);
        if (Status s = check_num_sge(wr.num_sge, cap_.max_recv_sge, "post_recv"); !s)
            return s;
        return enqueue_wr(dev_, recv_ring(*ctx_, qpn_), cap_.max_recv_wr, wr,
                          "post_recv: receive queue");
    }

    /* Embedded mode posts straight to the transport. One named Status and one return
     * each: the result is built in the caller's slot (NRVO), so a successful post moves
     * no Status; with a second return, GCC moved it, an out-of-line std::string move on
     * every post (3.4 % of a write_lat client's samples). */
    Status post_send_here(const SendWr &wr) {
        Status s = qp_->post_send(wr);
        if (s)
            dev_.posted(*ctx_);
        return s;
    }
    Status post_recv_here(const RecvWr &wr) {
        Status s = qp_->post_recv(wr);
        if (s)
            dev_.touch(*ctx_);
        return s;
    }

  private:
    /* Non-blocking RTR: the next hop still to be resolved (on worker 0, after modify). */
    struct NeighPending {
        bool on = false;
        bool loopback = false; /* not pending: the destination is a QP of this device */
        bool v4 = true;
        uint32_t ip = 0;
        net::Ip6 ip6{};
    };

    Status resolve_path(const AhAttr &ah, uint32_t dest_qpn, rc::Path *path, NeighPending *pend) {
        /* Non-blocking RTR (worker 0's QPs: it owns the neighbour tables): go on with no
         * MAC; the worker holds the QP's frames until the neighbour answers. */
        const bool may_defer = dev_.rtr_nonblocking() && ctx_->worker == 0;
        Result<engine::Hop> r =
            engine::resolve_hop(rt_, dev_, ah.sgid_index, ah.dgid, "modify QP", may_defer);
        if (!r)
            return r.status();
        const engine::Hop &hop = *r;
        const bool v4 = hop.v4;
        pend->loopback = hop.loopback;
        if (hop.pending) {
            pend->on = true;
            pend->v4 = v4;
            pend->ip = hop.nh4;
            pend->ip6 = hop.nh6;
        }
        *path = rc::Path{};
        path->eth = engine::hop_eth(dev_, hop, ah.sgid_index, ah.sl);
        path->ipv6 = !v4;
        /* A RoCEv1 source GID: GRH framing (next hop resolved as for v2 above). */
        path->rocev1 = dev_.gids().is_v1(ah.sgid_index);
        std::memcpy(path->sgid, hop.sgid->raw, 16);
        std::memcpy(path->dgid, ah.dgid.raw, 16);
        path->tos =
            dev_.force_tclass() >= 0 ? static_cast<uint8_t>(dev_.force_tclass()) : ah.traffic_class;
        path->ttl = dev_.force_hop_limit() >= 0 ? static_cast<uint8_t>(dev_.force_hop_limit())
                                                : ah.hop_limit;
        if (v4) {
            path->flow_label = ah.flow_label;
            path->udp_sport = dev_.udp_sport_for(net::GidTable::to_ipv4(ah.dgid), dest_qpn,
                                                 wire::udp_sport_for_qpn(qpn_));
        } else {
            /* rxe: the IPv6 header carries the AH's flow label (0 unless given); the UDP
             * source port comes from it, or when 0 from the QPN pair's flow label (so both
             * directions of a connection share a port, as in the vectors). */
            path->flow_label = ah.flow_label & 0xFFFFF;
            path->udp_sport = wire::udp_sport_for_flow_label(
                path->flow_label ? path->flow_label : wire::rdma_calc_flow_label(qpn_, dest_qpn));
        }
        logger().debug("{}: QP {} path to {} via {} ({})", dev_.name(), qpn_,
                       v4 ? net::ipv4_str(net::GidTable::to_ipv4(ah.dgid))
                          : net::ipv6_str(ah.dgid.raw),
                       hop.nh_str, net::mac_str(hop.mac));
        return {};
    }

    Runtime &rt_;
    Dev &dev_;
    std::shared_ptr<PdState> pd_;
    QpCtx *ctx_;
    /* ctx_->qp, kept here so that an embedded post reaches the transport without first
     * waiting for the QpCtx line (with many QPs both are cold; now they load together). */
    rc::Qp *qp_;
    uint32_t qpn_;
    QpCap cap_;
    QpState state_ = QpState::Reset; /* as of the last control call (worker mode checks) */
    uint32_t dest_qpn_ = 0;          /* likewise */
    api::InlineSlots inline_;        /* worker mode: kSendInline payloads copied at post */
};

class SrqImpl final : public SharedReceiveQueue {
  public:
    SrqImpl(Runtime &rt, Dev &dev, SrqCtx *ctx, const SrqInitAttr &attr)
        : rt_(rt), dev_(dev), ctx_(ctx), attr_(attr) {}
    ~SrqImpl() override {
        bool ok = false;
        rt_.exec_on(ctx_->worker, [&] { ok = dev_.destroy_srq(ctx_); });
        if (!ok)
            logger().error("{}: SRQ destroyed while QPs still use it; it stays until the "
                           "device closes",
                           dev_.name());
    }
    Status post_recv(const RecvWr &wr) override {
        if (rt_.embedded())
            return post_recv_here(wr);
        if (Status s = check_num_sge(wr.num_sge, attr_.max_sge, "post_srq_recv"); !s)
            return s;
        const WrRing r{ctx_->ring,
                       ctx_->posted,
                       ctx_->retired,
                       ctx_->retired_seen,
                       ctx_->doorbell,
                       ctx_->worker,
                       engine::kDoorbellSrq | ctx_->index};
        return enqueue_wr(dev_, r, attr_.max_wr, wr, "post_srq_recv: shared receive queue");
    }

    /* As QpImpl::post_recv_here: one return, no Status moved on success. */
    Status post_recv_here(const RecvWr &wr) {
        Status s = ctx_->q->post(wr);
        if (s)
            dev_.shard(ctx_->worker).publish_srq(*ctx_);
        return s;
    }
    SrqCtx *ctx() const { return ctx_; }

  private:
    Runtime &rt_;
    Dev &dev_;
    SrqCtx *ctx_;
    SrqInitAttr attr_;
};

class PdImpl final : public ProtectionDomain {
  public:
    PdImpl(Runtime &rt, Dev &dev, uint32_t id)
        : rt_(rt), dev_(dev), st_(std::make_shared<PdState>()) {
        st_->id = id;
    }
    ~PdImpl() override {
        if (st_->qps || st_->mrs)
            logger().error("{}: PD {} destroyed with {} QP(s) and {} MR(s) still alive; "
                           "destroy children first (they keep working until destroyed)",
                           dev_.name(), st_->id, st_->qps, st_->mrs);
    }

    Result<std::unique_ptr<MemoryRegion>> reg_mr(void *addr, size_t length,
                                                 uint32_t access) override {
        if (addr == nullptr || length == 0)
            return Status(EINVAL, "reg_mr: empty region");
        Result<mem::MemoryRegion> r = Status(EINVAL, "");
        /* Every worker reads the MR table: change it with all of them parked. */
        rt_.exec_all([&] { r = dev_.reg_mr(st_->id, addr, length, access); });
        if (!r)
            return r.status();
        return std::unique_ptr<MemoryRegion>(new MrImpl(rt_, dev_, st_, *r));
    }

    Result<std::unique_ptr<QueuePair>> create_qp(const QpInitAttr &attr) override {
        if (attr.send_cq == nullptr || attr.recv_cq == nullptr)
            return Status(EINVAL, "create_qp: send_cq and recv_cq are required");
        auto *scq = dynamic_cast<CqImpl *>(attr.send_cq);
        auto *rcq = dynamic_cast<CqImpl *>(attr.recv_cq);
        if (scq == nullptr || rcq == nullptr)
            return Status(EINVAL, "create_qp: CQ not made by a droce device");
        if (attr.cap.max_send_wr == 0 || attr.cap.max_recv_wr == 0 ||
            attr.cap.max_send_wr > 16384 || attr.cap.max_recv_wr > 16384)
            return Status(EINVAL, "create_qp: max_send_wr/max_recv_wr must be 1..16384");
        if (attr.cap.max_send_sge > kMaxSge || attr.cap.max_recv_sge > kMaxSge)
            return Status(EINVAL, "create_qp: at most " + std::to_string(kMaxSge) + " SGEs");
        if (attr.qp_type == QpType::Ud) {
            if (attr.srq)
                return Status(EOPNOTSUPP, "create_qp: UD QPs take no SRQ here");
            return api::create_ud_qp(rt_, dev_, st_->id, std::shared_ptr<uint32_t>(st_, &st_->qps),
                                     attr, scq->ctx(), rcq->ctx());
        }
        if (attr.qp_type != QpType::Rc)
            return Status(EOPNOTSUPP, "create_qp: QP type must be RC or UD");
        SrqCtx *srq = nullptr;
        if (attr.srq) {
            auto *si = dynamic_cast<SrqImpl *>(attr.srq);
            if (si == nullptr)
                return Status(EINVAL, "create_qp: SRQ not made by a droce device");
            srq = si->ctx();
        }
        rte_ring *sq = nullptr, *rq = nullptr;
        if (!rt_.embedded()) {
            sq = make_elem_ring(rt_, "dq_s", sizeof(SendWr), attr.cap.max_send_wr);
            rq = make_elem_ring(rt_, "dq_r", sizeof(RecvWr), attr.cap.max_recv_wr);
            if (sq == nullptr || rq == nullptr) {
                engine::ring_release(sq);
                engine::ring_release(rq);
                return Status(ENOMEM,
                              std::string("create_qp: WR rings: ") + rte_strerror(rte_errno));
            }
        }
        Result<uint32_t> qpn = Status(EINVAL, "");
        QpCtx *ctx = nullptr;
        rt_.exec_on(scq->ctx()->worker, [&] {
            qpn = dev_.create_qp(st_->id, attr, scq->ctx(), rcq->ctx(), sq, rq, &ctx, srq);
        });
        if (!qpn) {
            engine::ring_release(sq);
            engine::ring_release(rq);
            return qpn.status();
        }
        logger().debug("{}: QP {} created", dev_.name(), *qpn);
        return std::unique_ptr<QueuePair>(new QpImpl(rt_, dev_, st_, ctx, *qpn, attr.cap));
    }

    Result<std::unique_ptr<AddressHandle>> create_ah(const AhAttr &attr) override {
        return api::create_ah(rt_, dev_, attr);
    }

    Result<std::unique_ptr<SharedReceiveQueue>> create_srq(const SrqInitAttr &attr) override {
        if (attr.max_wr == 0 || attr.max_wr > 16384)
            return Status(EINVAL, "create_srq: max_wr must be 1..16384");
        if (attr.max_sge == 0 || attr.max_sge > kMaxSge)
            return Status(EINVAL, "create_srq: max_sge must be 1.." + std::to_string(kMaxSge));
        if (attr.worker >= rt_.workers())
            return Status(EINVAL, "create_srq: worker " + std::to_string(attr.worker) +
                                      " out of range (" + std::to_string(rt_.workers()) +
                                      " worker(s))");
        rte_ring *ring = nullptr;
        if (!rt_.embedded()) {
            ring = make_elem_ring(rt_, "dq_srq", sizeof(RecvWr), attr.max_wr);
            if (ring == nullptr)
                return Status(ENOMEM, std::string("create_srq: ring: ") + rte_strerror(rte_errno));
        }
        SrqCtx *ctx = nullptr;
        rt_.exec_on(attr.worker,
                    [&] { ctx = dev_.create_srq(attr.worker, attr.max_wr, attr.max_sge, ring); });
        return std::unique_ptr<SharedReceiveQueue>(new SrqImpl(rt_, dev_, ctx, attr));
    }

  private:
    Runtime &rt_;
    Dev &dev_;
    std::shared_ptr<PdState> st_;
};

class DeviceImpl final : public Device {
  public:
    DeviceImpl(Runtime &rt, Dev &dev) : rt_(rt), dev_(dev) {}
    Dev &engine_dev() const { return dev_; } /* for api::engine_of */
    const std::string &name() const override { return dev_.name(); }
    uint16_t port_id() const override { return dev_.port_id(); }
    std::string mac() const override { return net::mac_str(dev_.iface().mac); }
    std::vector<GidEntry> gids() const override { return dev_.gids().entries(); }
    uint32_t active_mtu() const override { return dev_.active_mtu(); }
    uint32_t eth_mtu() const override { return dev_.eth_mtu(); }
    std::vector<std::pair<std::string, uint64_t>> counters() const override {
        std::vector<std::pair<std::string, uint64_t>> v;
        rt_.exec_all([&] { v = dev_.counters(); });
        return v;
    }
    bool get_async_event(AsyncEvent &ev) override {
        engine::EngineEvent e{};
        if (!dev_.next_event(&e))
            return false;
        ev.type = e.type;
        ev.qp_num = e.qp_num;
        ev.cq = static_cast<CompletionQueue *>(e.cq_user);
        return true;
    }
    Status wait_async_event(AsyncEvent &ev) override {
        engine::EngineEvent e{};
        const int err = dev_.wait_event(&e);
        if (err != 0)
            return Status(err, std::string("wait_async_event: ") + std::strerror(err));
        ev.type = e.type;
        ev.qp_num = e.qp_num;
        ev.cq = static_cast<CompletionQueue *>(e.cq_user);
        return {};
    }
    int async_fd() const override { return dev_.event_fd(); }
    Status start_capture(const std::string &path, uint32_t snaplen) override {
        return dev_.capture_start(path, snaplen, run_on());
    }
    Status stop_capture() override { return dev_.capture_stop(run_on()); }
    Result<std::unique_ptr<ProtectionDomain>> alloc_pd() override {
        return std::unique_ptr<ProtectionDomain>(new PdImpl(rt_, dev_, ++pd_seq_));
    }
    Result<std::unique_ptr<CompletionQueue>> create_cq(uint32_t cqe) override {
        return create_cq(cqe, -1);
    }
    Result<std::unique_ptr<CompletionQueue>> create_cq(uint32_t cqe, int worker) override {
        return create_cq(cqe, worker, nullptr);
    }
    Result<std::unique_ptr<CompletionChannel>> create_comp_channel() override {
        std::string why;
        std::shared_ptr<CompChannel> ch = CompChannel::create(&why);
        if (!ch)
            return Status(ENOMEM, "create_comp_channel: " + why);
        return std::unique_ptr<CompletionChannel>(new ChannelImpl(std::move(ch)));
    }
    Result<std::unique_ptr<CompletionQueue>> create_cq(uint32_t cqe, int worker,
                                                       CompletionChannel *channel) override {
        std::shared_ptr<CompChannel> ch;
        if (channel != nullptr) {
            auto *ci = dynamic_cast<ChannelImpl *>(channel);
            if (ci == nullptr)
                return Status(EINVAL, "create_cq: not a channel of droce's");
            ch = ci->channel();
        }
        const uint32_t nw = rt_.workers();
        if (worker < -1 || worker >= static_cast<int>(nw))
            return Status(EINVAL, "create_cq: worker " + std::to_string(worker) +
                                      " out of range (" + std::to_string(nw) + " worker(s))");
        if (cqe == 0 || cqe > (1u << 20))
            return Status(EINVAL, "create_cq: cqe must be 1..1048576");
        auto ctx = std::make_unique<CqCtx>();
        ctx->worker = worker >= 0 ? static_cast<uint32_t>(worker) : cq_seq_++ % nw;
        /* Embedded: the shard and the poller are one thread, so no ring (engine_cq.cpp). */
        if (rt_.embedded()) {
            if (!ctx->init_local(cqe))
                return Status(ENOMEM, "create_cq: out of memory");
        } else {
            ctx->ring = make_elem_ring(rt_, "dq_c", sizeof(Wc), cqe);
            if (ctx->ring == nullptr)
                return Status(ENOMEM, std::string("create_cq: ") + rte_strerror(rte_errno));
        }
        if (ch && !ch->attach(*ctx))
            return Status(ENOMEM, "create_cq: the channel serves " +
                                      std::to_string(CompChannel::kMaxCqs) + " CQs at most");
        return std::unique_ptr<CompletionQueue>(
            new CqImpl(rt_, dev_, std::move(ctx), std::move(ch)));
    }

  private:
    /* Control calls come from the application's thread: its worker runs them. */
    engine::Dev::RunOn run_on() {
        return [this](uint32_t w, const std::function<void()> &fn) {
            rt_.exec_on(w, fn);
            return true;
        };
    }
    Runtime &rt_;
    Dev &dev_;
    uint32_t pd_seq_ = 0;
    uint32_t cq_seq_ = 0;
};

class EngineImpl final : public Engine {
  public:
    explicit EngineImpl(std::unique_ptr<Runtime> rt) : rt_(std::move(rt)) {}
    ~EngineImpl() override {
        rt_->stop();
        devs_.clear();
        rt_.reset();
    }
    Result<std::pair<std::string, std::string>> create_ring_pair() override {
        return rt_->create_ring_pair();
    }
    Result<std::pair<std::string, std::string>> create_ring_pair(uint16_t queues) override {
        return rt_->create_ring_pair(queues);
    }
    uint32_t workers() const override { return rt_->workers(); }
    Result<Device *> open_device(const DeviceConfig &cfg) override {
        Result<Dev *> d = rt_->open_device(cfg);
        if (!d)
            return d.status();
        devs_.push_back(std::make_unique<DeviceImpl>(*rt_, **d));
        return static_cast<Device *>(devs_.back().get());
    }
    Status start() override { return rt_->start(); }
    int poll() override { return rt_->embedded() ? rt_->poll_once() : -1; }
    int poll(uint32_t worker) override {
        if (!rt_->embedded() || worker >= rt_->workers())
            return -1;
        return rt_->poll_worker(worker);
    }
    void stop() override { rt_->stop(); }
    bool embedded() const override { return rt_->embedded(); }
    /* api::engine_of: dev's engine device when dev is one of ours. */
    Dev *find(const Device &dev) const {
        for (const auto &d : devs_)
            if (d.get() == &dev)
                return &d->engine_dev();
        return nullptr;
    }
    Runtime &runtime() const { return *rt_; }

  private:
    std::unique_ptr<Runtime> rt_;
    std::vector<std::unique_ptr<DeviceImpl>> devs_;
};

} // namespace

bool api::engine_of(Engine &engine, Device &dev, Runtime **rt, Dev **d) {
    auto *e = dynamic_cast<EngineImpl *>(&engine);
    *d = e ? e->find(dev) : nullptr;
    *rt = e ? &e->runtime() : nullptr;
    return *d != nullptr;
}

engine::CqCtx *api::cq_of(CompletionQueue &cq) {
    auto *c = dynamic_cast<CqImpl *>(&cq);
    return c ? c->ctx() : nullptr;
}

Result<std::unique_ptr<Engine>> Engine::attach(EngineOptions opts) {
    opts.host_eal = true;
    return create(0, nullptr, nullptr, opts);
}

Result<std::unique_ptr<Engine>> Engine::create(int argc, char **argv, int *consumed,
                                               const EngineOptions &opts) {
    Result<std::unique_ptr<Runtime>> rt = Runtime::create(argc, argv, consumed, opts);
    if (!rt)
        return rt.status();
    return std::unique_ptr<Engine>(new EngineImpl(std::move(*rt)));
}

} // namespace droce
