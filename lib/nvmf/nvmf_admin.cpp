/* SPDX-License-Identifier: BSD-3-Clause */
/* Admin commands: Identify, Get Log Page, Set/Get Features, Keep Alive and Asynchronous
 * Event Request (held until an event or the controller goes: none is generated yet). */
#include <algorithm>

#include "nvmf_internal.h"

namespace droce::nvmf {

namespace {

uint32_t log_len(const Command &c) {
    const uint32_t numd = ((c.cdw11 & 0xFFFF) << 16 | (c.cdw10 >> 16)) + 1u;
    return numd * 4u; /* numd <= 2^32: the caller checks the byte count against MDTS */
}

bool feature_get(Controller &c, uint8_t fid, uint32_t &dw0) {
    switch (fid) {
    case kFidNumQueues: {
        const uint32_t n = c.nq ? c.nq - 1u : 0u;
        dw0 = (n << 16) | n;
        return true;
    }
    case kFidKeepAlive:
        dw0 = c.kato_ms;
        return true;
    case kFidAsyncEventConfig:
        dw0 = c.aec;
        return true;
    case kFidVolatileWc:
        if (c.sub->discovery)
            return false;
        dw0 = 0; /* no volatile write cache: every write is where Flush would put it */
        return true;
    case kFidArbitration:
    case kFidPowerMgmt:
    case kFidErrorRecovery:
    case kFidWriteAtomicity:
        if (c.sub->discovery)
            return false;
        dw0 = 0;
        return true;
    default:
        return false;
    }
}

} // namespace

bool Ops::prepare_admin(Queue &q, Request &r) {
    Controller &c = *q.controller();
    const Command &cmd = r.cmd;
    const bool disc = c.sub->discovery;
    switch (cmd.opc) {
    case kAdminIdentify: {
        const uint8_t cns = cmd.cdw10 & 0xFF;
        if (cns != kCnsController &&
            (disc || (cns != kCnsNamespace && cns != kCnsActiveNsList && cns != kCnsNsDescList))) {
            r.cqe.status = st_generic(kScInvalidField);
            return false;
        }
        r.xfer = kIdentifyLen;
        return true;
    }
    case kAdminGetLogPage: {
        const uint64_t len = log_len(cmd);
        const uint64_t off = (uint64_t{cmd.cdw13} << 32) | cmd.cdw12;
        if (len > slot_bytes(q) || (off & 3)) {
            r.cqe.status = st_generic(kScInvalidField);
            return false;
        }
        const uint8_t lid = cmd.cdw10 & 0xFF;
        const bool known =
            disc ? (lid == kLidDiscovery || lid == kLidErrorInfo)
                 : (lid == kLidErrorInfo || lid == kLidSmart || lid == kLidCmdEffects);
        if (!known) {
            r.cqe.status = st_generic(kScInvalidField);
            return false;
        }
        r.xfer = static_cast<uint32_t>(len);
        return true;
    }
    case kAdminAbort:
    case kAdminSetFeatures:
    case kAdminGetFeatures:
    case kAdminKeepAlive:
    case kAdminAsyncEvent:
        r.xfer = 0;
        return true;
    default:
        r.cqe.status = st_generic(kScInvalidOpcode);
        return false;
    }
}

bool Ops::admin_identify(Queue &q, Request &r) {
    Controller &c = *q.controller();
    const Command &cmd = r.cmd;
    std::memset(r.buf, 0, kIdentifyLen);
    switch (cmd.cdw10 & 0xFF) {
    case kCnsController:
        identify_ctrl(target(q), c, r.buf);
        return true;
    case kCnsActiveNsList:
        active_ns_list(*c.sub, cmd.nsid, r.buf);
        return true;
    default: { /* namespace, descriptor list */
        Namespace *n = c.sub->find(cmd.nsid);
        if (!n) {
            r.cqe.status = st_generic(kScInvalidNs);
            r.xfer = 0;
            return true;
        }
        if ((cmd.cdw10 & 0xFF) == kCnsNamespace)
            identify_ns(*n, r.buf);
        else
            ns_desc_list(*n, r.buf);
        return true;
    }
    }
}

bool Ops::admin_get_log_page(Queue &q, Request &r, uint64_t now) {
    Target &t = target(q);
    Controller &c = *q.controller();
    const Command &cmd = r.cmd;
    Target::Impl &im = impl(t);
    uint8_t *page = im.scratch.data();
    const size_t cap = im.scratch.size();
    std::memset(page, 0, cap);
    size_t plen = 0;
    switch (cmd.cdw10 & 0xFF) {
    case kLidDiscovery:
        plen = discovery_log(t, page, cap);
        break;
    case kLidErrorInfo:
        plen = error_log(c, page, cap);
        break;
    case kLidSmart:
        plen = smart_log(c, now, page, cap);
        break;
    case kLidCmdEffects:
        plen = effects_log(page, cap);
        break;
    }
    const uint64_t off = (uint64_t{cmd.cdw13} << 32) | cmd.cdw12;
    if (off > plen) { /* an offset past the page is an error; a length past it is 0s */
        r.cqe.status = st_generic(kScInvalidField);
        r.xfer = 0;
        return true;
    }
    std::memset(r.buf, 0, r.xfer);
    const size_t n = std::min<size_t>(r.xfer, plen - off);
    std::memcpy(r.buf, page + off, n);
    return true;
}

bool Ops::admin_set_features(Queue &q, Request &r, uint64_t now) {
    Controller &c = *q.controller();
    const Command &cmd = r.cmd;
    if (cmd.cdw10 >> 31) { /* SV: nothing here survives a power cycle */
        r.cqe.status = st_cmd(kScFeatureNotSaveable);
        return true;
    }
    switch (cmd.cdw10 & 0xFF) {
    case kFidNumQueues: {
        const uint32_t nsqr = cmd.cdw11 & 0xFFFF, ncqr = cmd.cdw11 >> 16;
        if (c.sub->discovery || nsqr == 0xFFFF || ncqr == 0xFFFF) {
            r.cqe.status = st_generic(kScInvalidField);
            return true;
        }
        /* Queue pairs: as many as both counts ask, capped by the configuration. */
        uint32_t n = std::min(nsqr, ncqr) + 1u;
        n = std::min<uint32_t>(n, target(q).config().max_io_queues);
        if (!c.nq_set) {
            c.nq = static_cast<uint16_t>(n);
            c.nq_set = true;
        }
        r.cqe.dw0 = ((c.nq - 1u) << 16) | (c.nq - 1u);
        return true;
    }
    case kFidKeepAlive:
        c.kato_ms = cmd.cdw11;
        c.last_ka_ns = now;
        return true;
    case kFidAsyncEventConfig:
        c.aec = cmd.cdw11;
        return true;
    default:
        r.cqe.status = st_generic(kScInvalidField);
        return true;
    }
}

bool Ops::admin_get_features(Queue &q, Request &r) {
    const Command &cmd = r.cmd;
    const uint8_t sel = (cmd.cdw10 >> 8) & 7;
    uint32_t dw0 = 0;
    if (sel > 3 || !feature_get(*q.controller(), cmd.cdw10 & 0xFF, dw0)) {
        r.cqe.status = st_generic(kScInvalidField);
        return true;
    }
    /* SEL 3 (supported capabilities): changeable, not saveable, not per namespace. */
    r.cqe.dw0 = sel == 3 ? 0x4u : dw0;
    return true;
}

/* Held until an event or the controller goes (none is generated yet). */
bool Ops::admin_async_event(Queue &q, Request &r) {
    Target &t = target(q);
    Controller &c = *q.controller();
    if (c.aer.size() >= t.config().aer_limit) {
        r.cqe.status = st_cmd(kScAerLimit);
        return true;
    }
    c.aer.push_back(r.tag);
    r.st = Request::State::Held;
    ++cnt(t).aer_held;
    return false;
}

bool Ops::exec_admin(Queue &q, Request &r, uint64_t now) {
    switch (r.cmd.opc) {
    case kAdminIdentify:
        return admin_identify(q, r);
    case kAdminGetLogPage:
        return admin_get_log_page(q, r, now);
    case kAdminSetFeatures:
        return admin_set_features(q, r, now);
    case kAdminGetFeatures:
        return admin_get_features(q, r);
    case kAdminKeepAlive:
        q.controller()->last_ka_ns = now;
        return true;
    case kAdminAbort:
        /* Commands here finish or wait on a backend that cannot be stopped: DW0 bit 0
         * says "not aborted", which the spec allows for any command. */
        r.cqe.dw0 = 1;
        return true;
    case kAdminAsyncEvent:
        return admin_async_event(q, r);
    default:
        r.cqe.status = st_generic(kScInvalidOpcode);
        return true;
    }
}

} // namespace droce::nvmf
