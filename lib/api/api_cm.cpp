/* SPDX-License-Identifier: BSD-3-Clause */
/* droce::CmDevice (include/droce/cm_device.h): the glue between lib/cm's sans-I/O
 * CmChannel and a droce device. MADs go out and come in through the device's QP1
 * (engine::Gsi), time is the engine's clock, and the QP hook drives the RC QP's state
 * changes through the public QueuePair::modify, so address resolution and every check
 * are the ones an application's own modify gets. */
#include <droce/cm_device.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "api_internal.h"
#include "engine.h"
#include "engine_cm_stats.h"
#include "engine_gsi.h"
#include "engine_log.h"

namespace droce {

namespace {

bool is_v4_mapped(const uint8_t g[16]) {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    return std::memcmp(g, kPrefix, 12) == 0;
}
bool is_link_local(const uint8_t g[16]) { return g[0] == 0xFE && (g[1] & 0xC0) == 0x80; }
bool is_v2(const GidEntry &e) { return std::strcmp(e.type, "RoCE v2") == 0; }

/* The RoCEv2 GIDs the CM speaks from: the IPv4-mapped one, the first configured (not
 * link-local) IPv6 one, and the link-local one (index 0). -1 where there is none. */
struct CmGids {
    int v4 = -1, v6 = -1, ll = -1;
};
CmGids cm_gids(const Device &dev) {
    CmGids c;
    const auto gids = dev.gids();
    for (size_t i = 0; i < gids.size(); ++i) {
        const uint8_t *g = gids[i].gid.raw;
        int &slot = is_v4_mapped(g) ? c.v4 : is_link_local(g) ? c.ll : c.v6;
        if (slot < 0 && is_v2(gids[i]))
            slot = static_cast<int>(i);
    }
    return c;
}

/* lib/rc's limit on READs/atomics in flight per QP, either way (QueuePair::modify). */
constexpr uint8_t kQpRdAtomicMax = 16;

enum GlueCtr : size_t {
    kMadsIn,
    kMadsOut,
    kMadSendFailed,
    kQpReady,
    kQpModifyFailed,
    kQpUnknown,
    kGlueCtrs
};
constexpr const char *kGlueCtrNames[kGlueCtrs] = {
    "cm_mads_in",  "cm_mads_out",         "cm_mad_send_failed",
    "cm_qp_ready", "cm_qp_modify_failed", "cm_qp_unknown",
};

class CmDeviceImpl final : public CmDevice, CmQp1Transport, CmQpHook {
  public:
    CmDeviceImpl(engine::Runtime &rt, Device &dev, std::unique_ptr<engine::Gsi> gsi,
                 const CmDeviceOptions &opt, CmGids gids)
        : rt_(rt), dev_(dev), gsi_(std::move(gsi)), opt_(opt), gids_(gids),
          ch_(opt.channel, *this, this) {
        /* /droce/cm: the channel's counters, then the glue's, published from poll(). */
        std::vector<const char *> names;
        const char *n;
        uint64_t v;
        for (size_t i = 0; counter(i, n, v); ++i)
            names.push_back(n);
        n_channel_ = names.size() - kGlueCtrs;
        snapshot_.resize(names.size());
        board_ = std::make_unique<engine::CmStatsBoard>(std::move(names));
        engine::cm_stats_attach(rt_, dev_.name(), board_.get());
    }
    ~CmDeviceImpl() override { engine::cm_stats_detach(board_.get()); }

    CmChannel &channel() override { return ch_; }
    uint64_t now_ns() const override { return rt_.now_ns(); }

    int poll() override {
        int total = 0;
        for (;;) {
            const int n = gsi_->poll(in_, kBatch);
            for (int i = 0; i < n; ++i) {
                ++ctr_[kMadsIn];
                ch_.on_mad(in_[i].src_gid.raw, in_[i].data, in_[i].len, rt_.now_ns());
            }
            total += n;
            if (n < kBatch)
                break;
        }
        /* The CM's timers are milliseconds (packet life time, REQ answer timeout) and
         * next_deadline() scans the connection table: look at most every kTimerCheckNs, not
         * on every poll of an application's loop. */
        const uint64_t now = rt_.now_ns();
        if (now >= next_timer_check_) {
            next_timer_check_ = now + kTimerCheckNs;
            if (ch_.next_deadline() <= now)
                ch_.on_time(now);
        }
        /* Connections whose QP could not be readied: the hook runs inside the channel,
         * which must not be re-entered, so they are disconnected here. */
        for (uint32_t id : failed_)
            ch_.disconnect(id, rt_.now_ns());
        failed_.clear();
        if (now >= next_publish_) {
            next_publish_ = now + kPublishNs;
            publish(now);
        }
        return total;
    }

    uint32_t connect(uint32_t dst_ip, uint16_t dst_port, QueuePair &qp,
                     CmConnectParam param) override {
        param.qpn = qp.qp_num();
        const uint32_t id = ch_.connect(dst_ip, dst_port, param, rt_.now_ns());
        if (id != 0)
            bind(id, qp);
        return id;
    }

    uint32_t connect6(const uint8_t dst_ip6[16], uint16_t dst_port, QueuePair &qp,
                      CmConnectParam param) override {
        param.qpn = qp.qp_num();
        const uint32_t id = ch_.connect6(dst_ip6, dst_port, param, rt_.now_ns());
        if (id != 0)
            bind(id, qp);
        return id;
    }

    bool accept(uint32_t id, QueuePair &qp, CmAcceptParam param) override {
        param.qpn = qp.qp_num();
        bind(id, qp);
        const uint64_t fails = ctr_[kQpModifyFailed];
        if (!ch_.accept(id, param, rt_.now_ns())) {
            release(id);
            return false;
        }
        return ctr_[kQpModifyFailed] == fails;
    }

    bool reject(uint32_t id) override {
        release(id);
        return ch_.reject(id, nullptr, 0, rt_.now_ns());
    }
    bool disconnect(uint32_t id) override { return ch_.disconnect(id, rt_.now_ns()); }
    void release(uint32_t id) override {
        for (auto &b : qps_)
            if (b.id == id)
                b = Binding{};
    }

    bool counter(size_t i, const char *&name, uint64_t &value) const override {
        if (ch_.counter(i, name, value))
            return true;
        size_t n = 0;
        while (ch_.counter(n, name, value))
            ++n;
        if (i - n >= kGlueCtrs)
            return false;
        name = kGlueCtrNames[i - n];
        value = ctr_[i - n];
        return true;
    }

  private:
    struct Binding {
        uint32_t id = 0;
        QueuePair *qp = nullptr;
    };
    static constexpr int kBatch = 16;
    static constexpr uint64_t kTimerCheckNs = 100'000;
    uint64_t next_timer_check_ = 0;
    /* Telemetry's view of the counters lags them by at most this (plus a poll). */
    static constexpr uint64_t kPublishNs = 1'000'000;
    uint64_t next_publish_ = 0;

    void publish(uint64_t now) {
        const char *n;
        for (size_t i = 0; i < n_channel_; ++i)
            ch_.counter(i, n, snapshot_[i]);
        std::copy(ctr_, ctr_ + kGlueCtrs, snapshot_.begin() + static_cast<ptrdiff_t>(n_channel_));
        board_->publish(snapshot_.data(), now);
    }

    void bind(uint32_t id, QueuePair &qp) {
        for (auto &b : qps_)
            if (b.id == id || b.qp == nullptr) {
                b = Binding{id, &qp};
                return;
            }
        qps_.push_back(Binding{id, &qp});
    }

    /* Our GID for talking to dst: of its IP version (and scope, for IPv6), as the
     * kernel picks a source address. */
    int sgid_for(const uint8_t dst[16]) const {
        return is_v4_mapped(dst) ? gids_.v4 : is_link_local(dst) ? gids_.ll : gids_.v6;
    }

    bool send_mad(const uint8_t dst_gid[16], const uint8_t *mad, size_t len) override {
        AhAttr to;
        std::memcpy(to.dgid.raw, dst_gid, 16);
        const int sgid = sgid_for(dst_gid);
        Status s = sgid < 0 ? Status(EADDRNOTAVAIL, "no GID of the destination's IP version")
                            : gsi_->send(to_ah(to, sgid), 1 /* the peer's QP1 */, mad,
                                         static_cast<uint32_t>(len));
        if (!s) {
            /* The CM resends on its timer, as for a MAD lost on the wire. */
            ++ctr_[kMadSendFailed];
            logger().debug("{}: CM MAD not sent: {}", dev_.name(), s.message());
            return false;
        }
        ++ctr_[kMadsOut];
        return true;
    }

    void ready_qp(uint32_t id, const CmQpParams &p) override {
        QueuePair *qp = nullptr;
        for (const auto &b : qps_)
            if (b.id == id && b.qp)
                qp = b.qp;
        if (qp == nullptr || qp->qp_num() != p.local_qpn) {
            ++ctr_[kQpUnknown];
            logger().warn("{}: CM connection {:#x}: no QP {} bound", dev_.name(), id, p.local_qpn);
            return;
        }
        Status s = ready(*qp, p);
        if (!s) {
            ++ctr_[kQpModifyFailed];
            failed_.push_back(id);
            logger().error("{}: CM connection {:#x}: QP {}: {}", dev_.name(), id, p.local_qpn,
                           s.message());
            return;
        }
        ++ctr_[kQpReady];
    }

    static AhAttr to_ah(AhAttr a, int sgid) {
        a.sgid_index = static_cast<uint8_t>(sgid);
        return a;
    }

    /* The connection's own GID (the one the peer's REQ named, or ours in our REQ) when
     * it is in the table, else one of the peer's IP version. */
    int sgid_of(const CmQpParams &p) const {
        const auto gids = dev_.gids();
        for (size_t i = 0; i < gids.size(); ++i)
            if (is_v2(gids[i]) && std::memcmp(gids[i].gid.raw, p.local_gid, 16) == 0)
                return static_cast<int>(i);
        return sgid_for(p.remote_gid);
    }

    Status ready(QueuePair &qp, const CmQpParams &p) {
        QpAttr cur;
        if (Status s = qp.query(cur); !s)
            return s;
        if (cur.cur_qp_state == QpState::Reset) {
            QpAttr a;
            a.qp_state = QpState::Init;
            a.pkey_index = 0;
            a.port_num = 1;
            a.qp_access_flags = opt_.access_flags;
            if (Status s = qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags); !s)
                return s;
        } else if (cur.cur_qp_state != QpState::Init) {
            return Status(EINVAL, std::string("QP is in ") + qp_state_str(cur.cur_qp_state) +
                                      ", not RESET or INIT");
        }
        QpAttr r;
        r.qp_state = QpState::Rtr;
        /* The CM offers the path MTU the REQ named; no more than this port carries. */
        uint8_t mtu = p.path_mtu;
        while (mtu > 1 && mtu_bytes(static_cast<Mtu>(mtu)) > dev_.active_mtu())
            --mtu;
        r.path_mtu = static_cast<Mtu>(mtu);
        r.dest_qp_num = p.remote_qpn;
        r.rq_psn = p.rq_psn;
        /* A Linux peer's REP names its own device's limit as its initiator depth (rxe: 128)
         * whatever our REQ offered; an RC QP here serves at most kQpRdAtomicMax. */
        r.max_dest_rd_atomic = std::min(p.max_dest_rd_atomic, kQpRdAtomicMax);
        r.min_rnr_timer = 12; /* rdma_cm's default */
        std::memcpy(r.ah_attr.dgid.raw, p.remote_gid, 16);
        const int sgid = sgid_of(p);
        if (sgid < 0)
            return Status(EADDRNOTAVAIL, "no GID of the peer's IP version");
        r.ah_attr.sgid_index = static_cast<uint8_t>(sgid);
        r.ah_attr.traffic_class = p.traffic_class;
        r.ah_attr.hop_limit = p.hop_limit;
        if (Status s = qp.modify(r, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                        kQpMaxDestRdAtomic | kQpMinRnrTimer);
            !s)
            return s;
        QpAttr t;
        t.qp_state = QpState::Rts;
        t.sq_psn = p.sq_psn;
        t.timeout = p.timeout;
        t.retry_cnt = p.retry_cnt;
        t.rnr_retry = p.rnr_retry;
        t.max_rd_atomic = std::min(p.max_rd_atomic, kQpRdAtomicMax);
        return qp.modify(t, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                kQpMaxQpRdAtomic);
    }

    engine::Runtime &rt_;
    Device &dev_;
    std::unique_ptr<engine::Gsi> gsi_;
    CmDeviceOptions opt_;
    CmGids gids_;
    std::vector<Binding> qps_;
    std::vector<uint32_t> failed_;
    uint64_t ctr_[kGlueCtrs] = {};
    engine::MadIn in_[kBatch];
    CmChannel ch_; /* it holds references to this object's transport and hook */
    size_t n_channel_ = 0;
    std::vector<uint64_t> snapshot_; /* publish()'s scratch: no allocation there */
    std::unique_ptr<engine::CmStatsBoard> board_;
};

} // namespace

Result<std::unique_ptr<CmDevice>> CmDevice::open(Engine &engine, Device &dev,
                                                 const CmDeviceOptions &opt) {
    engine::Runtime *rt = nullptr;
    engine::Dev *d = nullptr;
    if (!api::engine_of(engine, dev, &rt, &d))
        return Status(EINVAL, "CmDevice::open: not a device of this droce engine");
    const CmGids gids = cm_gids(dev);
    if (gids.v4 < 0 && gids.v6 < 0)
        return Status(EINVAL, "CmDevice::open: " + dev.name() + " has no IPv4 or IPv6 address");
    const auto table = dev.gids();
    uint32_t ip = 0;
    if (gids.v4 >= 0) {
        const uint8_t *g = table[static_cast<size_t>(gids.v4)].gid.raw;
        ip = static_cast<uint32_t>(g[12]) << 24 | static_cast<uint32_t>(g[13]) << 16 |
             static_cast<uint32_t>(g[14]) << 8 | g[15];
    }
    auto gsi = engine::Gsi::open(*rt, *d, opt.gsi_slots);
    if (!gsi)
        return gsi.status();
    CmDeviceOptions o = opt;
    o.channel.local_ipv4 = ip;
    if (gids.v6 >= 0)
        std::memcpy(o.channel.local_ipv6, table[static_cast<size_t>(gids.v6)].gid.raw, 16);
    if (o.channel.ca_guid == 0) {
        /* EUI-64 from the MAC, as the node GUID of a RoCE port is. */
        const auto g = dev.gids();
        uint64_t guid = 0;
        if (!g.empty())
            for (int i = 8; i < 16; ++i)
                guid = guid << 8 | g[0].gid.raw[i];
        o.channel.ca_guid = guid ? guid : (0x02000000ull << 32 | ip);
    }
    return std::unique_ptr<CmDevice>(new CmDeviceImpl(*rt, dev, std::move(*gsi), o, gids));
}

} // namespace droce
