/* SPDX-License-Identifier: BSD-3-Clause */
/* The target: subsystems (the discovery subsystem first), the controller table, queue
 * admission from the CM private data, and the per-poll work (backend completions,
 * keep-alive expiry). */
#include <algorithm>

#include "nvmf_internal.h"

namespace droce::nvmf {

namespace {
bool nqn_ok(const std::string &s) { return !s.empty() && s.size() < kNqnLen; }

/* A stable, non-zero NGUID when the configuration gives none (the host keys multipath
 * and udev names on it): two FNV-1a hashes of the subsystem NQN and the nsid. */
std::array<uint8_t, 16> derive_nguid(const std::string &nqn, uint32_t nsid) {
    std::array<uint8_t, 16> g{};
    for (int half = 0; half < 2; ++half) {
        uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint64_t>(half);
        for (char ch : nqn)
            h = (h ^ static_cast<uint8_t>(ch)) * 0x100000001b3ull;
        h = (h ^ nsid) * 0x100000001b3ull;
        st64(g.data() + 8 * half, h);
    }
    return g;
}
} // namespace

std::unique_ptr<Target> Target::create(const TargetConfig &cfg, std::string &err) {
    if (cfg.max_io_bytes < 4096 || (cfg.max_io_bytes & (cfg.max_io_bytes - 1))) {
        err = "max_io_bytes must be a power of two >= 4096";
        return nullptr;
    }
    if (cfg.in_capsule_bytes % 16 || cfg.max_io_depth < 2 || cfg.max_admin_depth < 2 ||
        cfg.max_controllers == 0 || cfg.max_controllers > 0xFFEF) {
        err = "bad queue depth, controller count or in-capsule size (multiple of 16)";
        return nullptr;
    }
    std::unique_ptr<Target> t(new Target());
    t->cfg_ = cfg;
    t->impl_ = std::make_unique<Impl>();
    Impl &im = *t->impl_;
    Subsystem disc;
    disc.nqn = kDiscoveryNqn;
    disc.serial = "discovery";
    disc.model = "droce discovery";
    disc.discovery = true;
    disc.allow_any_host = true;
    im.subs.push_back(std::move(disc));
    for (const auto &sc : cfg.subsystems) {
        if (!nqn_ok(sc.nqn) || sc.nqn == kDiscoveryNqn) {
            err = "bad subsystem NQN '" + sc.nqn + "'";
            return nullptr;
        }
        for (const auto &o : im.subs)
            if (o.nqn == sc.nqn) {
                err = "duplicate subsystem " + sc.nqn;
                return nullptr;
            }
        Subsystem s;
        s.nqn = sc.nqn;
        s.serial = sc.serial;
        s.model = sc.model;
        s.allow_any_host = sc.allow_any_host;
        s.hosts = sc.allowed_hosts;
        for (const auto &nc : sc.namespaces) {
            if (nc.nsid == 0 || nc.nsid == 0xFFFFFFFF || !nc.bdev || s.find(nc.nsid)) {
                err = sc.nqn + ": bad or duplicate namespace id " + std::to_string(nc.nsid);
                return nullptr;
            }
            const uint32_t bs = nc.bdev->block_size();
            if (bs < 512 || (bs & (bs - 1)) || bs > cfg.max_io_bytes) {
                err = sc.nqn + ": block size must be a power of two in [512, max_io_bytes]";
                return nullptr;
            }
            Namespace n;
            n.nsid = nc.nsid;
            n.bdev = nc.bdev;
            n.bs = bs;
            n.lbads = static_cast<uint8_t>(__builtin_ctz(bs));
            n.nsze = nc.bdev->size_bytes() / bs;
            n.nguid = nc.nguid;
            if (n.nguid == std::array<uint8_t, 16>{})
                n.nguid = derive_nguid(sc.nqn, nc.nsid);
            s.ns.push_back(n);
        }
        std::sort(s.ns.begin(), s.ns.end(),
                  [](const Namespace &a, const Namespace &b) { return a.nsid < b.nsid; });
        im.subs.push_back(std::move(s));
    }
    im.ctrls.resize(cfg.max_controllers);
    for (size_t i = 0; i < im.ctrls.size(); ++i) {
        im.ctrls[i].cntlid = static_cast<uint16_t>(i + 1);
        im.ctrls[i].queues.assign(cfg.max_io_queues + 1u, nullptr);
        im.ctrls[i].aer.reserve(cfg.aer_limit);
    }
    /* The largest log page: the discovery log, a 1 KiB header and 1 KiB per subsystem. */
    im.scratch.assign(std::max<size_t>(kIdentifyLen, 1024 * (im.subs.size() + 1)), 0);
    return t;
}

Target::~Target() = default;

AcceptResult Target::accept(const uint8_t *priv, size_t len, TransportActions &tx) {
    AcceptResult res;
    CmReqPriv req;
    const CmPrivError e = parse_cm_req_priv(priv, len, req);
    CmRejPriv rej;
    bool reject = true;
    if (e == CmPrivError::TooShort)
        rej.status = CmRejStatus::InvalidLength;
    else if (e == CmPrivError::BadRecfmt)
        rej.status = CmRejStatus::InvalidRecfmt;
    else if (req.qid > cfg_.max_io_queues)
        rej.status = CmRejStatus::InvalidQid;
    else if (req.hsqsize == 0 ||
             req.hsqsize >= (req.qid ? cfg_.max_io_depth : cfg_.max_admin_depth))
        rej.status = CmRejStatus::InvalidHsqsize;
    else if (req.hrqsize == 0 || req.hrqsize < req.hsqsize + 1u)
        /* The host must be able to receive a response for every command it may send. */
        rej.status = CmRejStatus::InvalidHrqsize;
    else
        reject = false;
    if (reject) {
        ++cnt_.cm_rejects;
        res.priv_len = encode_cm_rej_priv(rej, res.priv, sizeof res.priv);
        return res;
    }
    const uint16_t depth = static_cast<uint16_t>(req.hsqsize + 1);
    auto q = std::make_unique<Queue>(*this, req.qid, depth, tx);
    if (!q->buffer_base()) { /* no memory for the data buffers */
        ++cnt_.cm_rejects;
        rej.status = CmRejStatus::NoResources;
        res.priv_len = encode_cm_rej_priv(rej, res.priv, sizeof res.priv);
        return res;
    }
    res.queue = q.get();
    impl_->queues.push_back(std::move(q));
    CmRepPriv rep;
    rep.crqsize = depth;
    res.priv_len = encode_cm_rep_priv(rep, res.priv, sizeof res.priv);
    ++cnt_.cm_accepts;
    return res;
}

void Target::destroy_queue(Queue *q) {
    if (!q)
        return;
    q->on_disconnect();
    /* The queue's controller went with it (on_disconnect); no controller may still name
     * the queue once it is freed: keep-alive expiry would reach into it (issue 33). */
    for (auto &c : impl_->ctrls) {
        if (!c.used)
            continue;
        if (!c.queues.empty() && c.queues[0] == q)
            Ops::release_controller(*this, c);
        for (auto &io : c.queues)
            if (io == q)
                io = nullptr;
    }
    auto &v = impl_->queues;
    for (auto it = v.begin(); it != v.end(); ++it)
        if (it->get() == q) {
            v.erase(it);
            return;
        }
}

void Target::poll(uint64_t now) {
    Impl &im = *impl_;
    for (auto &s : im.subs)
        for (auto &n : s.ns) {
            if (!n.bdev->in_flight())
                continue;
            size_t k;
            while ((k = n.bdev->poll(im.done, std::size(im.done))) > 0)
                for (size_t i = 0; i < k; ++i)
                    Ops::bdev_done(*static_cast<Request *>(im.done[i]->owner));
        }
    for (auto &c : im.ctrls) {
        if (!c.used || !c.kato_ms)
            continue;
        if (now - c.last_ka_ns > uint64_t{c.kato_ms} * 1000000u) {
            /* Keep Alive Timeout: the controller fails (CSTS.CFS) and goes, with its
             * queues; the host reconnects. */
            ++cnt_.kato_expired;
            c.csts |= kCstsCfs;
            Queue *admin = c.queues[0];
            if (admin) {
                admin->on_disconnect(); /* releases c and its I/O queues */
                Ops::tx(*admin).disconnect();
            } else {
                Ops::release_controller(*this, c);
            }
        }
    }
}

} // namespace droce::nvmf
