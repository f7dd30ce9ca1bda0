/* SPDX-License-Identifier: BSD-3-Clause */
/* Fabrics commands: Connect (admin queue: a new controller; I/O queue: joins one), and
 * Property Get/Set (CAP, VS, CC, CSTS: enable, disable, shutdown). */
#include "nvmf_internal.h"

namespace droce::nvmf {

namespace {

/* Connect's SQE fields (NVMe-oF 1.1 figure 20) and data (figure 21). */
constexpr size_t kConnRecfmt = 40, kConnQid = 42, kConnSqsize = 44, kConnKato = 48;
constexpr size_t kDataHostId = 0, kDataCntlid = 16, kDataSubnqn = 256, kDataHostnqn = 512;

/* Connect Invalid Parameters names the offending field: IATTR (bit 16: 1 = in the data)
 * and IPO (its byte offset), in DW0 as nvmet and the Linux host read it. */
bool invalid_param(Request &r, bool in_data, uint16_t off) {
    r.cqe.dw0 = (in_data ? 1u << 16 : 0u) | off;
    r.cqe.status = st_cmd(kScConnectInvalidParam);
    return true;
}

/* A NUL-terminated string inside the 256-byte field, or empty when it is not one. */
std::string nqn_at(const uint8_t *p) {
    const void *nul = std::memchr(p, 0, kNqnLen);
    if (!nul)
        return {};
    return std::string(reinterpret_cast<const char *>(p),
                       static_cast<size_t>(static_cast<const uint8_t *>(nul) - p));
}

uint64_t cap_value(const Target &t, const Queue &) {
    uint64_t cap = 0;
    cap |= uint64_t{static_cast<uint16_t>(t.config().max_io_depth - 1)}; /* MQES, 0's based */
    cap |= uint64_t{1} << 16;  /* CQR: queues are contiguous */
    cap |= uint64_t{15} << 24; /* TO: 7.5 s for CSTS.RDY to follow CC.EN */
    cap |= uint64_t{1} << 37;  /* CSS: NVM command set */
    /* MPSMIN = MPSMAX = 0: 4 KiB pages. */
    return cap;
}

bool connect(Queue &q, Request &r, uint64_t now) {
    Target &t = Ops::target(q);
    Counters &cnt = Ops::cnt(t);
    Target::Impl &im = Ops::impl(t);
    const uint8_t *s = r.sqe;
    const uint8_t *d = r.buf;
    if (Ops::ctrl(q)) { /* prepare_fabrics lets one through; never two controllers */
        r.cqe.status = st_generic(kScCmdSeqError);
        return true;
    }
    if (ld16(s + kConnRecfmt) != 0) {
        r.cqe.status = st_cmd(kScConnectIncompatibleFormat);
        return true;
    }
    const uint16_t qid = ld16(s + kConnQid);
    const uint16_t sqsize = ld16(s + kConnSqsize);
    if (qid != q.qid())
        return invalid_param(r, false, kConnQid);
    /* SQSIZE is 0's based and must fit the queue the CM handshake set up. */
    if (sqsize == 0 || sqsize >= q.depth())
        return invalid_param(r, false, kConnSqsize);
    const std::string subnqn = nqn_at(d + kDataSubnqn);
    const std::string hostnqn = nqn_at(d + kDataHostnqn);
    if (hostnqn.empty())
        return invalid_param(r, true, kDataHostnqn);
    Subsystem *sub = nullptr;
    for (auto &x : im.subs)
        if (x.nqn == subnqn)
            sub = &x;
    if (!sub) {
        ++cnt.connect_unknown_subsys;
        return invalid_param(r, true, kDataSubnqn);
    }
    if (!sub->allow_any_host) {
        bool allowed = false;
        for (const auto &h : sub->hosts)
            allowed |= h == hostnqn;
        if (!allowed) {
            r.cqe.status = st_cmd(kScConnectInvalidHost);
            return true;
        }
    }
    const uint16_t cntlid = ld16(d + kDataCntlid);
    if (qid == 0) {
        /* Dynamic controller model: the host asks for "any" (0xFFFF; 0xFFFE is also
         * "any" in NVMe-oF 1.1). */
        if (cntlid != 0xFFFF && cntlid != 0xFFFE)
            return invalid_param(r, true, kDataCntlid);
        Controller *c = nullptr;
        for (auto &x : im.ctrls)
            if (!x.used) {
                c = &x;
                break;
            }
        if (!c) {
            r.cqe.status = st_cmd(kScConnectCtrlBusy);
            return true;
        }
        const uint16_t id = c->cntlid;
        auto queues = std::move(c->queues);
        auto aer = std::move(c->aer);
        *c = Controller{};
        c->queues = std::move(queues);
        std::fill(c->queues.begin(), c->queues.end(), nullptr);
        c->aer = std::move(aer);
        c->aer.clear();
        c->used = true;
        c->cntlid = id;
        c->sub = sub;
        std::memcpy(c->hostnqn, hostnqn.data(), hostnqn.size());
        std::memcpy(c->hostid, d + kDataHostId, 16);
        c->kato_ms = ld32(s + kConnKato);
        c->last_ka_ns = now;
        c->created_ns = now;
        c->queues[0] = &q;
        Ops::ctrl(q) = c;
        Ops::sqsize(q) = sqsize;
        r.cqe.dw0 = id;
        return true;
    }
    /* An I/O queue joins the controller named in the data, which must belong to this
     * host and subsystem, be enabled, and have granted this many queues. */
    Controller *c = nullptr;
    for (auto &x : im.ctrls)
        if (x.used && x.cntlid == cntlid)
            c = &x;
    if (!c || c->sub != sub || hostnqn != c->hostnqn ||
        std::memcmp(c->hostid, d + kDataHostId, 16) != 0)
        return invalid_param(r, true, kDataCntlid);
    if (sub->discovery || qid > c->nq || qid >= c->queues.size() || c->queues[qid])
        return invalid_param(r, false, kConnQid);
    if (!(c->csts & kCstsRdy)) {
        r.cqe.status = st_generic(kScCmdSeqError);
        return true;
    }
    c->queues[qid] = &q;
    Ops::ctrl(q) = c;
    Ops::sqsize(q) = sqsize;
    r.cqe.dw0 = c->cntlid;
    return true;
}

void stop_io_queues(Controller &c) {
    for (size_t i = 1; i < c.queues.size(); ++i)
        if (Queue *io = c.queues[i]) {
            c.queues[i] = nullptr;
            Ops::ctrl(*io) = nullptr;
            io->on_disconnect();
            Ops::tx(*io).disconnect();
        }
}

/* CC write: EN 0->1 makes the controller ready (I/O entry sizes checked), EN 1->0 resets
 * it (its I/O queues are torn down), SHN requests a shutdown (done at once: nothing is
 * cached). */
void set_cc(Target &t, Controller &c, uint32_t v) {
    const uint32_t old = c.cc;
    c.cc = v;
    if ((v & kCcEn) && !(old & kCcEn)) {
        const uint32_t iosqes = (v >> 16) & 0xF, iocqes = (v >> 20) & 0xF;
        if (!c.sub->discovery && (iosqes != 6 || iocqes != 4))
            c.csts |= kCstsCfs;
        else
            c.csts |= kCstsRdy;
    } else if (!(v & kCcEn) && (old & kCcEn)) {
        c.csts &= ~(kCstsRdy | kCstsCfs);
        stop_io_queues(c);
    }
    (void)t;
    if ((v & kCcShnMask) && !(old & kCcShnMask)) {
        /* Shutdown: nothing is cached, so it is complete at once; the controller stops
         * (not ready, I/O queues gone) as nvmet does, and needs a reset to run again. */
        stop_io_queues(c);
        c.csts = (c.csts & ~(kCstsRdy | (3u << kCstsShstShift))) | kCstsShstComplete;
    } else if (!(v & kCcShnMask)) {
        c.csts &= ~(3u << kCstsShstShift);
    }
}

} // namespace

void Ops::release_controller(Target &, Controller &c) {
    if (!c.used)
        return;
    c.used = false;
    for (size_t i = 1; i < c.queues.size(); ++i)
        if (Queue *io = c.queues[i]) {
            c.queues[i] = nullptr;
            Ops::ctrl(*io) = nullptr;
            io->on_disconnect();
            Ops::tx(*io).disconnect();
        }
    c.queues[0] = nullptr;
    c.aer.clear();
}

bool Ops::prepare_fabrics(Queue &q, Request &r) {
    switch (r.cmd.fctype) {
    case kFcConnect:
        /* One Connect at a time, and none on a queue that belongs to a controller: a
         * Connect with a keyed SGL executes only after its RDMA READ, so a second one sent
         * behind it (its READ response held back) would find no controller yet and make
         * another (issue 33). Command Sequence Error, as for a Connect on a connected
         * queue. A Connect that failed leaves the queue free for the next (as nvmet). */
        if (q.controller() || Ops::connecting(q)) {
            ++Ops::cnt(Ops::target(q)).connect_in_flight;
            r.cqe.status = st_generic(kScCmdSeqError);
            return false;
        }
        Ops::connecting(q) = &r;
        r.xfer = kConnectDataLen;
        return true;
    case kFcPropertyGet:
    case kFcPropertySet:
        if (!q.controller()) {
            r.cqe.status = st_generic(kScCmdSeqError);
            return false;
        }
        if (q.qid() != 0) { /* properties live on the admin queue only */
            r.cqe.status = st_generic(kScInvalidField);
            return false;
        }
        r.xfer = 0;
        return true;
    default:
        r.cqe.status = st_generic(kScInvalidOpcode);
        return false;
    }
}

bool Ops::exec_fabrics(Queue &q, Request &r, uint64_t now) {
    if (r.cmd.fctype == kFcConnect)
        return connect(q, r, now);
    Controller &c = *q.controller();
    const bool eight = r.sqe[40] & 1; /* ATTRIB.SIZE */
    const uint32_t ofst = ld32(r.sqe + 44);
    if (r.cmd.fctype == kFcPropertyGet) {
        uint64_t v;
        switch (ofst) {
        case kPropCap:
            v = cap_value(target(q), q);
            break;
        case kPropVs:
            v = 0x00010400; /* NVMe 1.4 */
            break;
        case kPropCc:
            v = c.cc;
            break;
        case kPropCsts:
            v = c.csts;
            break;
        default:
            r.cqe.status = st_generic(kScInvalidField);
            return true;
        }
        if (eight != (ofst == kPropCap)) {
            r.cqe.status = st_generic(kScInvalidField);
            return true;
        }
        r.cqe.dw0 = static_cast<uint32_t>(v);
        r.cqe.dw1 = static_cast<uint32_t>(v >> 32);
        return true;
    }
    /* Property Set: only CC is writable, 4 bytes. */
    if (ofst != kPropCc || eight) {
        r.cqe.status = st_generic(kScInvalidField);
        return true;
    }
    set_cc(target(q), c, ld32(r.sqe + 48));
    return true;
}

} // namespace droce::nvmf
