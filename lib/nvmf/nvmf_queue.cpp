/* SPDX-License-Identifier: BSD-3-Clause */
/* A request's life on one queue: capsule in, SGL judged, data pulled (RDMA READ) or taken
 * from the capsule, the command executed (maybe in a backend), data pushed (RDMA WRITE),
 * response SENT, slot free again on the SEND's completion. */
#include <cstdlib>

#include "nvmf_internal.h"

namespace droce::nvmf {

void Queue::FreeDeleter::operator()(uint8_t *p) const { std::free(p); }

Queue::Queue(Target &t, uint16_t qid, uint16_t depth, TransportActions &tx)
    : t_(t), qid_(qid), depth_(depth), tx_(tx), reqs_(new Request[depth]) {
    /* Page-aligned slots: O_DIRECT backends read and write straight into them. */
    slot_bytes_ = t.cfg_.max_io_bytes;
    if (slot_bytes_ < kIdentifyLen)
        slot_bytes_ = kIdentifyLen;
    if (slot_bytes_ < t.cfg_.in_capsule_bytes)
        slot_bytes_ = (t.cfg_.in_capsule_bytes + 4095) & ~4095u;
    buf_bytes_ = static_cast<size_t>(slot_bytes_) * depth;
    /* Not cleared: every handler writes the bytes it sends, and untouched pages of a
     * large MDTS x depth block cost nothing until the glue registers (pins) them. */
    bufs_.reset(static_cast<uint8_t *>(std::aligned_alloc(4096, buf_bytes_)));
    if (!bufs_)
        return; /* Target::accept rejects the connection (NoResources) */
    free_.reserve(depth);
    for (uint16_t i = 0; i < depth; ++i) {
        reqs_[i].tag = i;
        reqs_[i].q = this;
        reqs_[i].buf = bufs_.get() + static_cast<size_t>(i) * slot_bytes_;
        free_.push_back(static_cast<uint16_t>(depth - 1 - i));
    }
}

Queue::~Queue() = default;

uint32_t Queue::recv_bytes() const { return kSqeLen + t_.cfg_.in_capsule_bytes; }

bool Queue::drained() const { return free_.size() == depth_; }

void Queue::on_disconnect() {
    if (dead_)
        return;
    dead_ = true;
    connecting_ = nullptr;
    /* Everything not in a backend is finished now; backend I/O frees its slot on return. */
    for (uint16_t i = 0; i < depth_; ++i) {
        Request &r = reqs_[i];
        if (r.st != Request::State::Free && r.st != Request::State::Backend) {
            r.st = Request::State::Free;
            free_.push_back(i);
        }
    }
    if (ctrl_) {
        Controller *c = ctrl_;
        if (qid_ == 0) {
            if (!c->queues.empty() && c->queues[0] == this)
                Ops::release_controller(t_, *c);
        } else if (qid_ < c->queues.size() && c->queues[qid_] == this) {
            c->queues[qid_] = nullptr;
        }
        ctrl_ = nullptr;
    }
}

CapsuleResult Queue::on_capsule(const uint8_t *p, size_t len, uint64_t now) {
    Counters &cnt = t_.cnt_;
    ++cnt.capsules;
    if (dead_) {
        ++cnt.capsule_dead_queue;
        return CapsuleResult::DeadQueue;
    }
    if (!p || len < kSqeLen) {
        ++cnt.capsule_too_short;
        return CapsuleResult::TooShort;
    }
    if (free_.empty()) {
        ++cnt.capsule_no_slot;
        return CapsuleResult::NoSlot;
    }
    Request &r = reqs_[free_.back()];
    free_.pop_back();
    std::memcpy(r.sqe, p, kSqeLen);
    parse_command(r.sqe, kSqeLen, r.cmd);
    r.cqe = Cqe{};
    r.cqe.cid = r.cmd.cid;
    r.cqe.sqid = qid_;
    r.xfer = 0;
    r.ns = nullptr;
    r.seq = r.seq_n = 0;
    r.st = Request::State::Executing;
    sqhd_ = static_cast<uint16_t>((sqhd_ + 1) % (sqsize_ ? sqsize_ + 1u : depth_));

    const uint32_t icd_len = static_cast<uint32_t>(len - kSqeLen);
    if (uint16_t s = check_sgl(r.cmd, icd_len, t_.cfg_.in_capsule_bytes)) {
        Ops::complete(*this, r, s);
        return CapsuleResult::Accepted;
    }
    /* Which handler group, and what state the queue must be in for it. */
    bool ok;
    if (r.cmd.opc == kOpcFabrics)
        ok = Ops::prepare_fabrics(*this, r);
    else if (!ctrl_ || !(ctrl_->csts & kCstsRdy)) {
        /* Before Connect, or before CC.EN=1 brought the controller ready. */
        Ops::complete(*this, r, st_generic(kScCmdSeqError));
        return CapsuleResult::Accepted;
    } else if (qid_ == 0)
        ok = Ops::prepare_admin(*this, r);
    else
        ok = Ops::prepare_io(*this, r);
    if (!ok) { /* prepare set the status */
        Ops::complete(*this, r, r.cqe.status);
        return CapsuleResult::Accepted;
    }
    /* The SGL must describe exactly the data the command moves: shorter or longer is
     * "Data SGL Length Invalid" (as nvmet does); a command without data may carry an
     * empty keyed SGL. */
    if (r.cmd.sgl.len != r.xfer) {
        Ops::complete(*this, r, st_generic(kScSglInvalidDataLen));
        return CapsuleResult::Accepted;
    }
    if (r.xfer && r.cmd.xfer == Xfer::HostToCtrl) {
        if (r.cmd.sgl.kind == Sgl::Kind::InCapsule) {
            std::memcpy(r.buf, p + kSqeLen + r.cmd.sgl.addr, r.xfer);
        } else {
            r.st = Request::State::Reading;
            if (!tx_.rdma_read(r.tag, r.buf, r.xfer, r.cmd.sgl.addr, r.cmd.sgl.key)) {
                ++cnt.post_failures;
                on_disconnect();
                tx_.disconnect();
            }
            return CapsuleResult::Accepted;
        }
    }
    Ops::execute(*this, r, now);
    return CapsuleResult::Accepted;
}

void Queue::on_read_done(uint16_t tag, bool ok, uint64_t now) {
    if (tag >= depth_ || reqs_[tag].st != Request::State::Reading)
        return;
    Request &r = reqs_[tag];
    if (!ok) {
        ++t_.cnt_.read_failures;
        Ops::complete(*this, r, status_field(kSctGeneric, kScDataXferError, false));
        return;
    }
    r.st = Request::State::Executing;
    Ops::execute(*this, r, now);
}

void Queue::on_send_done(uint16_t tag) {
    if (tag >= depth_ || reqs_[tag].st != Request::State::Sending)
        return;
    reqs_[tag].st = Request::State::Free;
    free_.push_back(tag);
}

void Ops::execute(Queue &q, Request &r, uint64_t now) {
    bool done;
    if (r.cmd.opc == kOpcFabrics)
        done = exec_fabrics(q, r, now);
    else if (q.qid_ == 0)
        done = exec_admin(q, r, now);
    else
        done = exec_io(q, r);
    if (done)
        finish(q, r);
}

/* Backend step finished (from Target::poll or inline). */
void Ops::bdev_done(Request &r) {
    Queue &q = *r.q;
    if (q.dead_) {
        r.st = Request::State::Free;
        q.free_.push_back(r.tag);
        return;
    }
    r.st = Request::State::Executing;
    if (io_continue(q, r))
        finish(q, r);
}

void Ops::complete(Queue &q, Request &r, uint16_t status) {
    r.cqe.status = status;
    r.xfer = 0; /* an error moves no data */
    finish(q, r);
}

namespace {
void count_status(Counters &c, uint16_t s) {
    const uint8_t sct = status_sct(s), sc = status_sc(s);
    if (sct == kSctGeneric) {
        switch (sc) {
        case kScInvalidOpcode:
            ++c.st_invalid_opcode;
            return;
        case kScInvalidField:
            ++c.st_invalid_field;
            return;
        case kScInvalidNs:
            ++c.st_invalid_ns;
            return;
        case kScCmdSeqError:
            ++c.st_cmd_seq;
            return;
        case kScSglInvalidDataLen:
            ++c.st_sgl_len;
            return;
        case kScSglInvalidType:
            ++c.st_sgl_type;
            return;
        case kScSglInvalidOffset:
            ++c.st_sgl_offset;
            return;
        case kScLbaOutOfRange:
            ++c.st_lba_range;
            return;
        case kScInternal:
        case kScNsNotReady:
            ++c.st_internal;
            return;
        case kScDataXferError:
            ++c.st_xfer;
            return;
        default:
            break;
        }
    } else if (sct == kSctCmdSpecific) {
        switch (sc) {
        case kScConnectInvalidParam:
            ++c.st_connect_invalid;
            return;
        case kScConnectInvalidHost:
            ++c.st_connect_host;
            return;
        case kScConnectCtrlBusy:
            ++c.st_connect_busy;
            return;
        case kScConnectIncompatibleFormat:
            ++c.st_connect_format;
            return;
        case kScAerLimit:
            ++c.st_aer_limit;
            return;
        default:
            break;
        }
    } else if (sct == kSctMedia) {
        ++c.st_media;
        return;
    }
    ++c.st_other;
}
} // namespace

void Ops::finish(Queue &q, Request &r) {
    Counters &cnt = q.t_.cnt_;
    if (q.connecting_ == &r) /* its Connect is done, either way */
        q.connecting_ = nullptr;
    if (q.dead_) {
        r.st = Request::State::Free;
        q.free_.push_back(r.tag);
        return;
    }
    if (r.cqe.status) {
        count_status(cnt, r.cqe.status);
        if (Controller *c = q.ctrl_) {
            ErrorEntry &e = c->err[c->err_next];
            c->err_next = (c->err_next + 1) % kErrLogEntries;
            e.count = ++c->err_count;
            e.sqid = q.qid_;
            e.cid = r.cmd.cid;
            e.status = r.cqe.status;
            e.nsid = r.cmd.nsid;
            e.lba =
                (r.cmd.opc <= kNvmDsm && q.qid_) ? (uint64_t{r.cmd.cdw11} << 32) | r.cmd.cdw10 : 0;
        }
    }
    r.cqe.sqhd = q.sqhd_;
    bool ok = true;
    const bool keyed = r.cmd.sgl.kind == Sgl::Kind::Keyed;
    if (!r.cqe.status && r.xfer && r.cmd.xfer == Xfer::CtrlToHost && keyed)
        ok = q.tx_.rdma_write(r.tag, r.buf, r.xfer, r.cmd.sgl.addr, r.cmd.sgl.key);
    uint8_t wire[kCqeLen];
    encode_cqe(r.cqe, wire);
    r.st = Request::State::Sending;
    /* The host asked for its key to be invalidated (subtype 0xF): do it with the response,
     * whatever the status, so its MR is fenced either way. */
    const bool inv = keyed && r.cmd.sgl.invalidate && r.cmd.sgl.len;
    if (ok)
        ok = q.tx_.send(r.tag, wire, inv, r.cmd.sgl.key);
    ++cnt.responses;
    if (!ok) {
        ++cnt.post_failures;
        q.on_disconnect();
        q.tx_.disconnect();
    }
}

} // namespace droce::nvmf
