/* SPDX-License-Identifier: BSD-3-Clause */
/* UD queue pairs and address handles of the public API. As for RC (api.cpp): control
 * calls run on the QP's worker through Runtime::exec_on; post_send/post_recv touch the
 * QP itself in embedded mode, or only the SPSC WR rings and the doorbell in worker mode
 * (the worker turns a ring's SendWr into lib/ud's WR, address handle included). */
#include "api_ud.h"

#include <string>

#include <rte_errno.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include "api_wr_ring.h"
#include "engine_log.h"
#include "engine_ud.h"

namespace droce::api {

namespace {

using engine::CqCtx;
using engine::Dev;
using engine::QpCtx;
using engine::Runtime;

class UdQpImpl final : public QueuePair {
  public:
    using QueuePair::post_recv; /* the chained forms: QueuePair's loop */
    using QueuePair::post_send;
    UdQpImpl(Runtime &rt, Dev &dev, std::shared_ptr<uint32_t> pd_qps, QpCtx *ctx, uint32_t qpn,
             const QpCap &cap)
        : rt_(rt), dev_(dev), pd_qps_(std::move(pd_qps)), ctx_(ctx), ud_(ctx->ud.get()), qpn_(qpn),
          cap_(cap) {
        ++*pd_qps_;
        if (!rt_.embedded())
            inline_.init(cap.max_send_wr, cap.max_inline_data);
    }
    ~UdQpImpl() override {
        rt_.exec_on(ctx_->worker, [&] { dev_.destroy_qp(qpn_); });
        --*pd_qps_;
    }

    uint32_t qp_num() const override { return qpn_; }

    Status modify(const QpAttr &attr, uint32_t mask) override {
        Status s;
        rt_.exec_on(ctx_->worker, [&] {
            s = ud_->modify(attr, mask);
            state_ = ud_->state();
            dev_.touch(*ctx_); /* to RTS with sends queued, or to ERR: flushed */
        });
        return s;
    }

    Status query(QpAttr &attr) override {
        rt_.exec_on(ctx_->worker, [&] {
            attr = ud_->attr();
            attr.qp_state = attr.cur_qp_state = ud_->state();
            state_ = attr.qp_state;
        });
        return {};
    }

    Status set_dcqcn(const DcqcnParams &) override {
        return Status(EOPNOTSUPP, "set_dcqcn: UD QPs have no congestion control");
    }
    Status disable_dcqcn() override { return {}; }
    Status query_dcqcn(DcqcnState &) override {
        return Status(EOPNOTSUPP, "query_dcqcn: UD QPs have no congestion control");
    }

    Status post_send(const SendWr &wr) override {
        if (rt_.embedded()) {
            Status s = ud_->post_send(engine::to_ud_wr(wr));
            if (s)
                dev_.touch(*ctx_);
            return s;
        }
        /* Worker mode: what can be checked here is, so errors come back as values; the
         * worker completes in error anything lib/ud still refuses. */
        if (state_ != QpState::Rts)
            return Status(EINVAL, "post_send: UD QP " + std::to_string(qpn_) + " is in " +
                                      qp_state_str(state_) + ", sends need RTS");
        if (wr.opcode != WrOpcode::Send && wr.opcode != WrOpcode::SendWithImm)
            return Status(EINVAL, "post_send: a UD QP sends only SEND and SEND_WITH_IMM");
        if (wr.ah == nullptr)
            return Status(EINVAL, "post_send: UD WR without an address handle");
        if (Status s = check_num_sge(wr.num_sge, cap_.max_send_sge, "post_send"); !s)
            return s;
        uint64_t len = 0;
        for (int i = 0; i < wr.num_sge; ++i)
            len += wr.sg_list[i].length;
        if (len > dev_.active_mtu())
            return Status(EMSGSIZE, "post_send: UD message of " + std::to_string(len) +
                                        " bytes exceeds the path MTU (" +
                                        std::to_string(dev_.active_mtu()) +
                                        " bytes): UD is one packet");
        return inline_.enqueue(dev_, send_ring(*ctx_, qpn_), cap_.max_send_wr, wr);
    }

    Status post_recv(const RecvWr &wr) override {
        if (rt_.embedded()) {
            Status s = ud_->post_recv(wr);
            if (s)
                dev_.touch(*ctx_);
            return s;
        }
        if (Status s = check_num_sge(wr.num_sge, cap_.max_recv_sge, "post_recv"); !s)
            return s;
        return enqueue_wr(dev_, recv_ring(*ctx_, qpn_), cap_.max_recv_wr, wr,
                          "post_recv: receive queue");
    }

  private:
    Runtime &rt_;
    Dev &dev_;
    std::shared_ptr<uint32_t> pd_qps_;
    QpCtx *ctx_;
    ud::Qp *ud_;
    uint32_t qpn_;
    QpCap cap_;
    QpState state_ = QpState::Reset; /* as of the last control call (worker mode checks) */
    InlineSlots inline_;             /* worker mode: kSendInline payloads copied at post */
};

} // namespace

Result<std::unique_ptr<QueuePair>> create_ud_qp(Runtime &rt, Dev &dev, uint32_t pd,
                                                std::shared_ptr<uint32_t> pd_qps,
                                                const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq) {
    rte_ring *sq = nullptr, *rq = nullptr;
    if (!rt.embedded()) {
        sq = make_elem_ring(rt, "dq_us", sizeof(SendWr), attr.cap.max_send_wr);
        rq = make_elem_ring(rt, "dq_ur", sizeof(RecvWr), attr.cap.max_recv_wr);
        if (sq == nullptr || rq == nullptr) {
            engine::ring_release(sq);
            engine::ring_release(rq);
            return Status(ENOMEM,
                          std::string("create_qp (UD): WR rings: ") + rte_strerror(rte_errno));
        }
    }
    Result<uint32_t> qpn = Status(EINVAL, "");
    QpCtx *ctx = nullptr;
    rt.exec_on(scq->worker, [&] { qpn = dev.create_ud_qp(pd, attr, scq, rcq, sq, rq, &ctx); });
    if (!qpn) {
        engine::ring_release(sq);
        engine::ring_release(rq);
        return qpn.status();
    }
    logger().debug("{}: UD QP {} created", dev.name(), *qpn);
    return std::unique_ptr<QueuePair>(
        new UdQpImpl(rt, dev, std::move(pd_qps), ctx, *qpn, attr.cap));
}

Result<std::unique_ptr<AddressHandle>> create_ah(Runtime &rt, Dev &dev, const AhAttr &attr) {
    Result<ud::AddressHandle> r = engine::resolve_ah(rt, dev, attr);
    if (!r)
        return r.status();
    auto ah = std::make_unique<engine::UdAh>();
    ah->attr_ = attr;
    ah->ah = *r;
    return std::unique_ptr<AddressHandle>(std::move(ah));
}

} // namespace droce::api
