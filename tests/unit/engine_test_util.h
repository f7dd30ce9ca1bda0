/* SPDX-License-Identifier: BSD-3-Clause */
/* What the engine tests over net_ring repeat: an embedded engine on one lcore without
 * hugepages, a device's counters as a map, one RC side (PD, two CQs, a registered buffer, a
 * QP) and the INIT -> RTR -> RTS walk of its QP. */
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <droce/droce.h>

namespace droce::test {

/** An engine under EAL arguments every engine test uses: --no-huge with `mem_mb` MiB, no PCI,
 * no shared config, `lcores` (EAL's --lcores syntax), warnings only; `prog` names it in
 * argv[0]. nullptr (and a failed expectation) if it cannot start. */
inline std::unique_ptr<Engine> make_test_engine(const char *prog, const EngineOptions &o,
                                                const char *mem_mb = "512",
                                                const char *lcores = "0") {
    const char *args[] = {prog,          "--no-huge",   "-m",       mem_mb,
                          "--no-pci",    "--no-shconf", "--lcores", lcores,
                          "--log-level", "*:warning",   "--",       nullptr};
    int consumed = 0;
    auto e = Engine::create(11, const_cast<char **>(args), &consumed, o);
    EXPECT_TRUE(e) << e.status().message();
    if (!e)
        return nullptr;
    EXPECT_EQ(consumed, 11); /* every argument before "--" is EAL's */
    return std::move(*e);
}

/** The options of a single-device embedded test: 4095 mbufs, warnings only. */
inline EngineOptions embedded_test_options() {
    EngineOptions o;
    o.embedded = true;
    o.mbufs = 4095;
    o.log_level = "warn";
    return o;
}

inline std::map<std::string, uint64_t> counter_map(const Device &d) {
    std::map<std::string, uint64_t> m;
    for (const auto &[k, v] : d.counters())
        m[k] = v;
    return m;
}

/** One RC endpoint: a PD, send and receive CQs of 64, a zeroed buffer of `bytes`
 * registered with `access`, and an RC QP on them (in RESET). */
struct RcSide {
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<CompletionQueue> scq, rcq;
    std::vector<uint8_t> buf;
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<QueuePair> qp;
    void init(Device *d, size_t bytes = 8192, uint32_t access = kAccessLocalWrite) {
        pd = std::move(*d->alloc_pd());
        scq = std::move(*d->create_cq(64));
        rcq = std::move(*d->create_cq(64));
        buf.assign(bytes, 0);
        mr = std::move(*pd->reg_mr(buf.data(), buf.size(), access));
        QpInitAttr a;
        a.send_cq = scq.get();
        a.recv_cq = rcq.get();
        qp = std::move(*pd->create_qp(a));
    }
    /* In the order the engine needs: the QP before what it uses. */
    void reset() {
        qp.reset();
        mr.reset();
        scq.reset();
        rcq.reset();
        pd.reset();
    }
};

/** RESET -> RTS towards (ah, dqpn): PSNs 0, path MTU 1024, one read/atomic each way, a
 * ~1 s retransmit timeout (a retry on the shared 2-core machine must mean a lost frame). */
inline Status rc_to_rts(QueuePair &qp, const AhAttr &ah, uint32_t dqpn,
                        uint32_t access = kAccessLocalWrite) {
    QpAttr a;
    a.qp_state = QpState::Init;
    a.qp_access_flags = access;
    if (Status s = qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags); !s)
        return s;
    a.qp_state = QpState::Rtr;
    a.path_mtu = Mtu::Mtu1024;
    a.dest_qp_num = dqpn;
    a.rq_psn = 0;
    a.ah_attr = ah;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    if (Status s = qp.modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                    kQpMaxDestRdAtomic | kQpMinRnrTimer);
        !s)
        return s;
    a.qp_state = QpState::Rts;
    a.sq_psn = 0;
    a.timeout = 18;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    return qp.modify(a, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                            kQpMaxQpRdAtomic);
}

} // namespace droce::test
