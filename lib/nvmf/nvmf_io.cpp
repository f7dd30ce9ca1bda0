/* SPDX-License-Identifier: BSD-3-Clause */
/* NVM command set: Read, Write, Flush, Write Zeroes, Dataset Management (deallocate).
 * Every LBA range is checked against the namespace before a backend sees it: an I/O
 * outside the namespace is LBA Out of Range and touches nothing. */
#include <cerrno>

#include "nvmf_internal.h"

namespace droce::nvmf {

namespace {

constexpr uint32_t kBroadcastNsid = 0xFFFFFFFF;
constexpr size_t kDsmRangeLen = 16;

bool range_ok(const Namespace &n, uint64_t slba, uint64_t nlb) {
    return slba < n.nsze && nlb <= n.nsze - slba;
}

uint64_t slba_of(const Command &c) { return (uint64_t{c.cdw11} << 32) | c.cdw10; }
uint32_t nlb_of(const Command &c) { return (c.cdw12 & 0xFFFF) + 1u; }

/* Backend error -> NVMe status: ERANGE cannot happen after our checks but is mapped
 * honestly; everything else is a media error of the command's direction. */
uint16_t bdev_status(const BdevIo &io) {
    if (io.status == ERANGE)
        return st_generic(kScLbaOutOfRange);
    if (io.op == BdevOp::Read)
        return status_field(kSctMedia, 0x81, false); /* Unrecovered Read Error */
    return status_field(kSctMedia, 0x80, false);     /* Write Fault */
}

/* Starts one backend step; true when it finished already (inline backend). */
bool submit(Queue &q, Request &r, bool &busy) {
    busy = false;
    const Submit s = r.ns->bdev->submit(r.io);
    if (s == Submit::Queued) {
        r.st = Request::State::Backend;
        return false;
    }
    if (s == Submit::Busy) {
        ++Ops::cnt(Ops::target(q)).bdev_busy;
        busy = true;
    }
    return true;
}

/* The next backend step of a multi-step command (DSM ranges, flush of all namespaces),
 * or the end. */
bool step(Queue &q, Request &r) {
    Controller &c = *q.controller();
    while (r.seq < r.seq_n) {
        const uint32_t i = r.seq++;
        if (r.cmd.opc == kNvmFlush) {
            r.ns = &c.sub->ns[i];
            r.io = BdevIo{};
            r.io.op = BdevOp::Flush;
        } else { /* DSM deallocate */
            const uint8_t *d = r.buf + kDsmRangeLen * i;
            const uint64_t nlb = ld32(d + 4), slba = ld64(d + 8);
            if (nlb == 0)
                continue;
            r.io = BdevIo{};
            r.io.op = BdevOp::Deallocate;
            r.io.offset = slba * r.ns->bs;
            r.io.len = nlb * r.ns->bs;
        }
        r.io.owner = &r;
        bool busy;
        if (!submit(q, r, busy))
            return false;
        if (busy) {
            r.cqe.status = status_field(kSctGeneric, kScNsNotReady, false);
            return true;
        }
        if (r.io.status) {
            ++Ops::cnt(Ops::target(q)).bdev_errors;
            r.cqe.status = bdev_status(r.io);
            return true;
        }
    }
    return true;
}

} // namespace

bool Ops::prepare_io(Queue &q, Request &r) {
    Controller &c = *q.controller();
    const Command &cmd = r.cmd;
    switch (cmd.opc) {
    case kNvmFlush:
        if (cmd.nsid == kBroadcastNsid) {
            r.xfer = 0;
            return true;
        }
        [[fallthrough]];
    case kNvmRead:
    case kNvmWrite:
    case kNvmWriteZeroes:
    case kNvmDsm:
        break;
    default:
        r.cqe.status = st_generic(kScInvalidOpcode);
        return false;
    }
    r.ns = c.sub->find(cmd.nsid);
    if (!r.ns) {
        r.cqe.status = st_generic(kScInvalidNs);
        return false;
    }
    const Namespace &n = *r.ns;
    switch (cmd.opc) {
    case kNvmRead:
    case kNvmWrite:
    case kNvmWriteZeroes: {
        const uint64_t slba = slba_of(cmd);
        const uint32_t nlb = nlb_of(cmd);
        if (!range_ok(n, slba, nlb)) {
            r.cqe.status = st_generic(kScLbaOutOfRange);
            return false;
        }
        if (cmd.opc == kNvmWriteZeroes) {
            r.xfer = 0;
            return true;
        }
        const uint64_t bytes = uint64_t{nlb} * n.bs;
        if (bytes > target(q).config().max_io_bytes) { /* beyond MDTS */
            r.cqe.status = st_generic(kScInvalidField);
            return false;
        }
        r.xfer = static_cast<uint32_t>(bytes);
        return true;
    }
    case kNvmDsm:
        r.xfer = static_cast<uint32_t>(((cmd.cdw10 & 0xFF) + 1u) * kDsmRangeLen);
        return true;
    default: /* flush of one namespace */
        r.xfer = 0;
        return true;
    }
}

bool Ops::exec_io(Queue &q, Request &r) {
    Controller &c = *q.controller();
    const Command &cmd = r.cmd;
    r.io = BdevIo{};
    r.io.owner = &r;
    switch (cmd.opc) {
    case kNvmRead:
    case kNvmWrite:
    case kNvmWriteZeroes:
        r.io.op = cmd.opc == kNvmRead    ? BdevOp::Read
                  : cmd.opc == kNvmWrite ? BdevOp::Write
                                         : BdevOp::WriteZeroes;
        r.io.offset = slba_of(cmd) * r.ns->bs;
        r.io.len = uint64_t{nlb_of(cmd)} * r.ns->bs;
        r.io.buf = r.buf;
        break;
    case kNvmFlush:
        r.seq = 0;
        if (cmd.nsid == kBroadcastNsid) {
            r.seq_n = static_cast<uint32_t>(c.sub->ns.size());
            return step(q, r);
        }
        r.io.op = BdevOp::Flush;
        break;
    case kNvmDsm: {
        /* Only the Deallocate attribute does anything; the hints (IDR/IDW) are hints. */
        if (!(cmd.cdw11 & 4))
            return true;
        const uint32_t nr = (cmd.cdw10 & 0xFF) + 1u;
        /* All ranges checked before any is deallocated. */
        for (uint32_t i = 0; i < nr; ++i) {
            const uint8_t *d = r.buf + kDsmRangeLen * i;
            if (!range_ok(*r.ns, ld64(d + 8), ld32(d + 4))) {
                r.cqe.status = st_generic(kScLbaOutOfRange);
                return true;
            }
        }
        r.seq = 0;
        r.seq_n = nr;
        return step(q, r);
    }
    }
    bool busy;
    if (!submit(q, r, busy))
        return false;
    if (busy) {
        r.cqe.status = status_field(kSctGeneric, kScNsNotReady, false);
        return true;
    }
    return io_continue(q, r);
}

bool Ops::io_continue(Queue &q, Request &r) {
    Controller *c = q.controller();
    if (r.io.status) {
        ++cnt(target(q)).bdev_errors;
        if (c)
            ++c->media_errors;
        r.cqe.status = bdev_status(r.io);
        r.xfer = 0;
        return true;
    }
    if (r.seq < r.seq_n)
        return step(q, r);
    if (c && r.cmd.opc == kNvmRead) {
        ++c->host_reads;
        c->units_read += r.io.len / 512;
    } else if (c && r.cmd.opc == kNvmWrite) {
        ++c->host_writes;
        c->units_written += r.io.len / 512;
    }
    return true;
}

} // namespace droce::nvmf
