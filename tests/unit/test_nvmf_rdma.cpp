/* SPDX-License-Identifier: BSD-3-Clause */
/* droce-nvmf's RDMA glue (apps/droce-nvmf/nvmf_rdma.cpp) against a hostile host: two droce
 * devices over a net_ring pair, the target (lib/nvmf core on a RAM disk + RdmaTransport) on
 * one, a hand-made NVMe-oF host (CmDevice + one RC QP) on the other. Cases: CM private data
 * the target must refuse (each with its NVMe-oF REJ status), a truncated command capsule
 * (dropped, counted, the queue keeps answering), a keyed SGL with a key the host never
 * registered (the target's RDMA READ fails: the queue is torn down, counted, and freed).
 * Embedded mode: one thread drives both sides. */
#include <chrono>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include <droce/cm_device.h>
#include <droce/droce.h>

#include "nvmf.h"
#include "nvmf_capsule.h"
#include "nvmf_cm_priv.h"
#include "nvmf_rdma.h"
#include "nvmf_spec.h"

using namespace droce;
using namespace droce::nvmf;
using namespace std::chrono_literals;

namespace {

constexpr uint16_t kPort = 4420;
constexpr uint32_t kTargetIp = 0x0A580001; /* 10.88.0.1 */
constexpr uint32_t kBuf = 8192;

std::unique_ptr<Engine> make_engine() {
    static const char *args[] = {"test_nvmf_rdma", "--no-huge",   "-m",       "1024",
                                 "--no-pci",       "--no-shconf", "--lcores", "0@0",
                                 "--log-level",    "*:warning",   "--",       nullptr};
    EngineOptions o;
    o.embedded = true;
    o.workers = 1;
    int consumed = 0;
    auto e = Engine::create(11, const_cast<char **>(args), &consumed, o);
    EXPECT_TRUE(e) << e.status().message();
    return e ? std::move(*e) : nullptr;
}

class NvmfRdma : public ::testing::Test {
  protected:
    void SetUp() override {
        engine = make_engine();
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports) << ports.status().message();
        DeviceConfig ct;
        ct.port = ports->first;
        ct.ipv4_cidr = "10.88.0.1/24";
        ct.mac = "02:00:00:00:08:81";
        ct.mtu = 1500;
        DeviceConfig ch = ct;
        ch.port = ports->second;
        ch.ipv4_cidr = "10.88.0.2/24";
        ch.mac = "02:00:00:00:08:82";
        auto dt = engine->open_device(ct);
        auto dh = engine->open_device(ch);
        ASSERT_TRUE(dt && dh);
        ASSERT_TRUE(engine->start());
        tdev = *dt;
        hdev = *dh;

        bdev = make_ram_bdev(1 << 20, 512);
        TargetConfig tc;
        SubsystemConfig sc;
        sc.nqn = "nqn.2026-11.io.droce:test";
        sc.allow_any_host = true;
        NamespaceConfig nc;
        nc.bdev = bdev.get();
        sc.namespaces.push_back(nc);
        tc.subsystems.push_back(sc);
        std::string err;
        target = Target::create(tc, err);
        ASSERT_TRUE(target) << err;
        CmDeviceOptions cmo;
        cmo.access_flags = kAccessLocalWrite;
        auto tcm = CmDevice::open(*engine, *tdev, cmo);
        ASSERT_TRUE(tcm) << tcm.status().message();
        target_cm = std::move(*tcm);
        rt = std::make_unique<RdmaTransport>(*tdev, *target_cm, *target, RdmaOptions{});
        ASSERT_TRUE(rt->start(err)) << err;

        CmDeviceOptions hco; /* the target READs and WRITEs the host's buffers */
        hco.access_flags = kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite;
        auto hcm = CmDevice::open(*engine, *hdev, hco);
        ASSERT_TRUE(hcm) << hcm.status().message();
        host_cm = std::move(*hcm);
        pd = std::move(*hdev->alloc_pd());
        mr = std::move(*pd->reg_mr(buf.data(), buf.size(),
                                   kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteWrite));
        cq = std::move(*hdev->create_cq(64));
        QpInitAttr qa;
        qa.send_cq = qa.recv_cq = cq.get();
        qa.sq_sig_all = true;
        qp = std::move(*pd->create_qp(qa));
    }
    void TearDown() override {
        qp.reset();
        host_cm.reset();
        cq.reset();
        mr.reset();
        pd.reset();
        rt.reset();
        target_cm.reset();
        target.reset();
        engine.reset();
    }

    void drive() {
        engine->poll();
        rt->poll();
        host_cm->poll();
        CmEventInfo ev;
        while (host_cm->channel().poll_event(ev))
            events.push_back(ev);
        Wc wc[8];
        const int n = cq->poll(wc, 8);
        for (int i = 0; i < n; ++i)
            wcs.push_back(wc[i]);
    }
    template <typename F> bool until(F done, std::chrono::milliseconds limit = 5000ms) {
        for (auto end = std::chrono::steady_clock::now() + limit;
             std::chrono::steady_clock::now() < end;) {
            drive();
            if (done())
                return true;
        }
        return false;
    }
    const CmEventInfo *find(CmEventKind k) const {
        for (const auto &e : events)
            if (e.kind == k)
                return &e;
        return nullptr;
    }
    const Wc *find_wc(WcOpcode op) const {
        for (const auto &w : wcs)
            if (w.opcode == op)
                return &w;
        return nullptr;
    }
    uint32_t connect(uint16_t qid, uint16_t hrqsize, uint16_t hsqsize, uint16_t recfmt = 0) {
        CmReqPriv rp;
        rp.recfmt = recfmt;
        rp.qid = qid;
        rp.hrqsize = hrqsize;
        rp.hsqsize = hsqsize;
        rp.cntlid = 0xFFFF;
        uint8_t priv[kCmReqPrivLen];
        encode_cm_req_priv(rp, priv, sizeof priv);
        CmConnectParam cp;
        cp.rq_psn = 0x1234;
        cp.responder_resources = 16; /* the target READs our buffers */
        cp.initiator_depth = 0;
        cp.private_data = priv;
        cp.private_data_len = sizeof priv;
        return host_cm->connect(kTargetIp, kPort, *qp, cp);
    }
    /* Admin queue up: REP received, receives posted for the responses. */
    void connect_admin() {
        ASSERT_NE(connect(0, 32, 31), 0u);
        ASSERT_TRUE(until([&] { return find(CmEventKind::Established) != nullptr; }));
        for (uint32_t i = 0; i < 4; ++i) {
            RecvWr r;
            r.wr_id = 100 + i;
            r.sg_list[0] = sge(i * 64, 64);
            r.num_sge = 1;
            ASSERT_TRUE(qp->post_recv(r));
        }
    }
    /* A CM REJ MAD (IBTA 12.6.7) as a host's CM would send it to the target's QP1. */
    static std::vector<uint8_t> rej_mad(uint32_t local_id, uint32_t remote_id, uint8_t msg,
                                        uint16_t reason) {
        std::vector<uint8_t> m(256, 0);
        m[0] = 1;    /* base version */
        m[1] = 0x07; /* CM class */
        m[2] = 2;    /* class version */
        m[3] = 0x03; /* Send */
        m[16] = 0x00;
        m[17] = 0x12; /* REJ */
        uint8_t *d = m.data() + 24;
        auto be32 = [](uint8_t *p, uint32_t v) {
            for (int i = 0; i < 4; ++i)
                p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
        };
        be32(d, local_id);
        be32(d + 4, remote_id);
        d[8] = static_cast<uint8_t>(msg << 6);
        d[10] = static_cast<uint8_t>(reason >> 8);
        d[11] = static_cast<uint8_t>(reason);
        return m;
    }
    /* The target's CM counter of that name. */
    uint64_t target_cm_ctr(const std::string &name) const {
        const char *n;
        uint64_t v;
        for (size_t i = 0; target_cm->counter(i, n, v); ++i)
            if (name == n)
                return v;
        ADD_FAILURE() << "no CM counter " << name;
        return 0;
    }
    /* The host's GID (IPv4-mapped 10.88.0.2), where its CM MADs come from. */
    static constexpr uint8_t kHostGid[16] = {0, 0, 0,    0,    0,  0,  0, 0,
                                             0, 0, 0xFF, 0xFF, 10, 88, 0, 2};
    Sge sge(uint32_t off, uint32_t len) {
        return Sge{reinterpret_cast<uint64_t>(buf.data() + off), len, mr->lkey()};
    }
    void send(uint32_t off, uint32_t len) {
        SendWr w;
        w.wr_id = 1;
        w.opcode = WrOpcode::Send;
        w.sg_list[0] = sge(off, len);
        w.num_sge = 1;
        ASSERT_TRUE(qp->post_send(w));
    }

    std::unique_ptr<Engine> engine;
    Device *tdev = nullptr, *hdev = nullptr;
    std::unique_ptr<Bdev> bdev;
    std::unique_ptr<Target> target;
    std::unique_ptr<CmDevice> target_cm, host_cm;
    std::unique_ptr<RdmaTransport> rt;
    std::unique_ptr<ProtectionDomain> pd;
    std::vector<uint8_t> buf = std::vector<uint8_t>(kBuf);
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<QueuePair> qp;
    std::vector<CmEventInfo> events;
    std::vector<Wc> wcs;
};

struct RejCase {
    uint16_t qid, hrqsize, hsqsize, recfmt;
    CmRejStatus want;
};

/* Each refused REQ: a consumer REJ (reason 28) carrying the NVMe-oF REJ status, no queue. */
TEST_F(NvmfRdma, BadPrivateDataIsRejectedWithItsStatus) {
    const RejCase cases[] = {
        {0, 32, 0, 0, CmRejStatus::InvalidHsqsize},   /* SQ of one entry */
        {0, 32, 200, 0, CmRejStatus::InvalidHsqsize}, /* beyond the admin depth */
        {0, 16, 31, 0, CmRejStatus::InvalidHrqsize},  /* fewer responses than commands */
        {99, 128, 127, 0, CmRejStatus::InvalidQid},   /* beyond max_io_queues */
        {0, 32, 31, 7, CmRejStatus::InvalidRecfmt},
    };
    uint64_t n = 0;
    for (const RejCase &c : cases) {
        SCOPED_TRACE(static_cast<int>(c.want));
        events.clear();
        ASSERT_NE(connect(c.qid, c.hrqsize, c.hsqsize, c.recfmt), 0u);
        ASSERT_TRUE(until([&] { return find(CmEventKind::Rejected) != nullptr; }));
        const CmEventInfo &ev = *find(CmEventKind::Rejected);
        EXPECT_EQ(ev.reason, 28u);
        CmRejPriv rej;
        ASSERT_EQ(parse_cm_rej_priv(ev.private_data, ev.private_data_len, rej), CmPrivError::Ok);
        EXPECT_EQ(rej.status, c.want);
        EXPECT_EQ(rt->counters().rejected, ++n);
        EXPECT_EQ(rt->connections(), 0u);
        QpAttr a;
        ASSERT_TRUE(qp->query(a));
        ASSERT_TRUE(a.cur_qp_state == QpState::Reset || a.cur_qp_state == QpState::Init);
    }
    EXPECT_EQ(target->counters().cm_accepts, 0u);
}

/* A SEND shorter than an SQE: dropped and counted (there is no CID to answer); the queue
 * goes on answering the next, well-formed capsule. */
TEST_F(NvmfRdma, TruncatedCapsuleIsDroppedAndTheQueueLives) {
    connect_admin();
    std::memset(buf.data() + 4096, 0xAB, 10);
    send(4096, 10);
    ASSERT_TRUE(until([&] { return target->counters().capsule_too_short == 1; }));
    EXPECT_EQ(rt->counters().capsules_dropped, 1u);
    /* Identify before Connect: a Command Sequence Error, answered with our CID. */
    uint8_t *s = buf.data() + 4096;
    build_sqe(s, kAdminIdentify, 0x77, 0);
    set_keyed_sgl(s, reinterpret_cast<uint64_t>(buf.data() + 4096 + 64), 0, mr->rkey(), false);
    send(4096, kSqeLen);
    ASSERT_TRUE(until([&] { return find_wc(WcOpcode::Recv) != nullptr; }));
    const Wc &w = *find_wc(WcOpcode::Recv);
    ASSERT_EQ(w.status, WcStatus::Success);
    ASSERT_EQ(w.byte_len, kCqeLen);
    const Cqe c = decode_cqe(buf.data() + (w.wr_id - 100) * 64);
    EXPECT_EQ(c.cid, 0x77);
    EXPECT_EQ(status_sc(c.status), kScCmdSeqError);
    EXPECT_EQ(rt->counters().wc_errors, 0u);
    EXPECT_EQ(rt->connections(), 1u);
}

/* A keyed SGL naming a key the host never registered: the target's RDMA READ comes back
 * with a remote access error; the queue is torn down and freed, the host disconnected. */
TEST_F(NvmfRdma, BadSglKeyTearsTheQueueDown) {
    connect_admin();
    uint8_t *s = buf.data() + 4096;
    build_sqe(s, kOpcFabrics, 0x42, 0);
    s[4] = kFcConnect;
    st16(s + 44, 31); /* SQSIZE */
    set_keyed_sgl(s, reinterpret_cast<uint64_t>(buf.data()), kConnectDataLen, 0xBAD0BAD0u, false);
    send(4096, kSqeLen);
    ASSERT_TRUE(until([&] { return find(CmEventKind::Disconnected) != nullptr; }));
    ASSERT_TRUE(until([&] { return rt->connections() == 0; }));
    EXPECT_EQ(rt->counters().read_errors, 1u);
    EXPECT_EQ(rt->counters().wc_errors, 1u);
    EXPECT_EQ(rt->counters().queues_freed, 1u);
    EXPECT_EQ(target->counters().responses, 0u); /* nothing answered on a QP in error */
}

/* The host rejects the target's REP (IBTA: the active side may REJ a REP): the target's CM
 * reports Rejected and the glue frees the connection, its queue, QP and MRs (issue 33:
 * they were never reaped). */
TEST_F(NvmfRdma, RejectDuringSetupFreesTheQueue) {
    const uint32_t host_id = connect(0, 32, 31);
    ASSERT_NE(host_id, 0u);
    /* The target side alone, until it has accepted (REP out, waiting for the RTU): the
     * host's CM has not seen the REP. */
    for (auto end = std::chrono::steady_clock::now() + 5s;
         rt->connections() == 0 && std::chrono::steady_clock::now() < end;) {
        engine->poll();
        rt->poll();
    }
    ASSERT_EQ(rt->connections(), 1u);
    const uint32_t target_id = rt->connection_ids()[0];
    const auto m = rej_mad(host_id, target_id, 1 /* REP */, 28 /* consumer */);
    target_cm->channel().on_mad(kHostGid, m.data(), m.size(), target_cm->now_ns());
    EXPECT_EQ(target_cm_ctr("rej_rcvd"), 1u);
    ASSERT_TRUE(until([&] { return rt->connections() == 0; }, 2000ms));
    EXPECT_EQ(rt->counters().queues_freed, 1u);
    EXPECT_EQ(rt->counters().rejected_by_peer, 1u);
}

/* A REJ that names an established connection (its comm IDs guessed or seen, the local one
 * even left 0, or sent from another address) is dropped and counted; the queue answers on. */
TEST_F(NvmfRdma, ForgedRejLeavesTheConnectionUp) {
    const uint32_t host_id = connect(0, 32, 31);
    ASSERT_NE(host_id, 0u);
    ASSERT_TRUE(until([&] { return find(CmEventKind::Established) != nullptr; }));
    for (uint32_t i = 0; i < 4; ++i) {
        RecvWr r;
        r.wr_id = 100 + i;
        r.sg_list[0] = sge(i * 64, 64);
        r.num_sge = 1;
        ASSERT_TRUE(qp->post_recv(r));
    }
    ASSERT_TRUE(until([&] { return rt->connections() == 1 && target_cm_ctr("est_passive") == 1; }));
    const uint32_t target_id = rt->connection_ids()[0];
    static constexpr uint8_t kOther[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 88, 0, 99};
    auto m = rej_mad(0, target_id, 2, 28);
    target_cm->channel().on_mad(kHostGid, m.data(), m.size(), target_cm->now_ns());
    m = rej_mad(host_id, target_id, 2, 28);
    target_cm->channel().on_mad(kHostGid, m.data(), m.size(), target_cm->now_ns());
    target_cm->channel().on_mad(kOther, m.data(), m.size(), target_cm->now_ns());
    EXPECT_EQ(target_cm_ctr("rej_rcvd"), 0u);
    EXPECT_EQ(target_cm_ctr("drop_rej_unknown") + target_cm_ctr("drop_rej_state") +
                  target_cm_ctr("drop_rej_source"),
              3u);
    for (int i = 0; i < 50; ++i)
        drive();
    EXPECT_EQ(rt->connections(), 1u);
    /* The queue still answers (Identify before Connect: a Command Sequence Error). */
    uint8_t *s = buf.data() + 4096;
    build_sqe(s, kAdminIdentify, 0x55, 0);
    set_keyed_sgl(s, reinterpret_cast<uint64_t>(buf.data() + 4096 + 64), 0, mr->rkey(), false);
    send(4096, kSqeLen);
    ASSERT_TRUE(until([&] { return find_wc(WcOpcode::Recv) != nullptr; }));
    const Wc &w = *find_wc(WcOpcode::Recv);
    ASSERT_EQ(w.status, WcStatus::Success);
    EXPECT_EQ(decode_cqe(buf.data() + (w.wr_id - 100) * 64).cid, 0x55);
    EXPECT_EQ(find(CmEventKind::Disconnected), nullptr);
}

/* Connect, then Identify Controller: the data comes back by RDMA WRITE and the response by
 * SEND, which the glue posts as one chain (QueuePair::post_send of two WRs). */
TEST_F(NvmfRdma, IdentifyDataAndResponseArriveByOneChain) {
    connect_admin();
    const std::string subnqn = "nqn.2026-11.io.droce:test";
    uint8_t *d = buf.data() + 1024; /* Connect data: hostid, cntlid, subnqn, hostnqn */
    std::memset(d, 0, kConnectDataLen);
    d[0] = 1;
    st16(d + 16, 0xFFFF);
    std::memcpy(d + 256, subnqn.data(), subnqn.size());
    std::memcpy(d + 512, "nqn.2026-11.io.droce:host", 25);
    uint8_t *s = buf.data() + 256;
    build_sqe(s, kOpcFabrics, 1, 0);
    s[4] = kFcConnect;
    st16(s + 44, 31);
    set_keyed_sgl(s, reinterpret_cast<uint64_t>(d), kConnectDataLen, mr->rkey(), false);
    send(256, kSqeLen);
    auto recvs = [&] {
        size_t n = 0;
        for (const Wc &w : wcs)
            n += w.opcode == WcOpcode::Recv && w.status == WcStatus::Success;
        return n;
    };
    ASSERT_TRUE(until([&] { return recvs() == 1; }));
    s = buf.data() + 384; /* Property Set CC.EN = 1: Identify needs an enabled controller */
    build_sqe(s, kOpcFabrics, 3, 0);
    s[4] = kFcPropertySet;
    st32(s + 44, kPropCc);
    st64(s + 48, 1u | (6u << 16) | (4u << 20));
    set_keyed_sgl(s, 0, 0, 0, false);
    send(384, kSqeLen);
    ASSERT_TRUE(until([&] { return recvs() == 2; }));
    uint8_t *id = buf.data() + 4096;
    std::memset(id, 0, kIdentifyLen);
    s = buf.data() + 320;
    build_sqe(s, kAdminIdentify, 2, 0);
    st32(s + 40, kCnsController);
    set_keyed_sgl(s, reinterpret_cast<uint64_t>(id), kIdentifyLen, mr->rkey(), false);
    send(320, kSqeLen);
    ASSERT_TRUE(until([&] { return recvs() == 3; }));
    /* Every CQE succeeded (status field, bits 17..31 of dword 3: 0). */
    for (uint32_t i = 0; i < 3; ++i)
        EXPECT_EQ((buf[i * 64 + 14] | (buf[i * 64 + 15] << 8)) & 0xFFFE, 0) << "CQE " << i;
    /* The data is in place when the response is: the controller's SUBNQN (bytes 768..). */
    EXPECT_EQ(std::memcmp(id + 768, subnqn.data(), subnqn.size()), 0);
    EXPECT_EQ(rt->counters().post_failures, 0u);
}

} // namespace
