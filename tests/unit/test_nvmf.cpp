/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/nvmf unit tests: capsule and SGL parsing, the CM private data codec and queue
 * admission, the controller (Connect, properties, Identify, logs, features, keep-alive,
 * AER), the NVM commands on a RAM disk and on an O_DIRECT file, and bad input: each
 * answered with the status the spec names, counted, nothing written outside a namespace. */
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#include "nvmf_host.h"

using namespace droce::nvmf;
using namespace droce::nvmf::test;

namespace {

const std::string kSub1 = "nqn.2026-11.io.droce:ram1";
const std::string kSub2 = "nqn.2026-11.io.droce:ram2";
const std::string kHost = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
const std::string kStranger = "nqn.2014-08.org.nvmexpress:uuid:stranger";

/* A backend that records every I/O it is given, over a RAM disk (bad-input tests check
 * that nothing past the namespace ever reaches it). */
class SpyBdev : public Bdev {
  public:
    explicit SpyBdev(std::unique_ptr<Bdev> b) : b_(std::move(b)) {}
    uint64_t size_bytes() const override { return b_->size_bytes(); }
    uint32_t block_size() const override { return b_->block_size(); }
    Submit submit(BdevIo &io) override {
        ++ios;
        if (io.op != BdevOp::Flush && io.offset + io.len > size_bytes())
            ++outside;
        return b_->submit(io);
    }
    size_t poll(BdevIo **o, size_t m) override { return b_->poll(o, m); }
    size_t in_flight() const override { return b_->in_flight(); }
    int ios = 0, outside = 0;

  private:
    std::unique_ptr<Bdev> b_;
};

struct Fixture : ::testing::Test {
    HostMem mem;
    std::unique_ptr<SpyBdev> d1, d3, d7;
    std::unique_ptr<Target> t;
    TargetConfig cfg;

    void SetUp() override {
        d1 = std::make_unique<SpyBdev>(make_ram_bdev(1 << 20, 512));  /* 2048 blocks */
        d3 = std::make_unique<SpyBdev>(make_ram_bdev(1 << 20, 4096)); /* 256 blocks */
        d7 = std::make_unique<SpyBdev>(make_ram_bdev(64 << 10, 512));
        SubsystemConfig s1;
        s1.nqn = kSub1;
        s1.serial = "SN-RAM-1";
        s1.namespaces = {{1, d1.get(), {}}, {3, d3.get(), {}}};
        s1.allowed_hosts = {kHost};
        SubsystemConfig s2;
        s2.nqn = kSub2;
        s2.allow_any_host = true;
        s2.namespaces = {{7, d7.get(), {}}};
        cfg.subsystems = {s1, s2};
        cfg.traddr = "10.77.20.2";
        cfg.max_io_bytes = 64 * 1024;
        cfg.in_capsule_bytes = 4096;
        std::string err;
        t = Target::create(cfg, err);
        ASSERT_TRUE(t) << err;
    }

    /* Admin queue connected and enabled, returns cntlid. */
    uint16_t admin_up(HostQueue &a, const std::string &sub = kSub1, uint32_t kato = 0) {
        EXPECT_TRUE(a.accept(0));
        Cqe c = a.connect(sub, kHost, 0xFFFF, 31, kato);
        EXPECT_EQ(c.status, 0);
        EXPECT_EQ(a.enable().status, 0);
        return static_cast<uint16_t>(c.dw0);
    }
    /* An I/O queue on controller cntlid (after Set Features Number of Queues). */
    void io_up(HostQueue &a, HostQueue &io, uint16_t cntlid, uint16_t qid = 1) {
        EXPECT_EQ(a.nodata(kAdminSetFeatures, 0, kFidNumQueues, 0x00030003).status, 0);
        ASSERT_TRUE(io.accept(qid, 63));
        EXPECT_EQ(io.connect(kSub1, kHost, cntlid, 63).status, 0);
    }
};

/* --- capsules --- */

TEST(NvmfCapsule, ParsesKeyedAndInCapsuleSgls) {
    uint8_t s[kSqeLen];
    build_sqe(s, kNvmWrite, 0x1234, 7);
    set_keyed_sgl(s, 0x1122334455667788ull, 0xABCDEF, 0xDEADBEEF, true);
    Command c;
    ASSERT_TRUE(parse_command(s, sizeof s, c));
    EXPECT_EQ(c.opc, kNvmWrite);
    EXPECT_EQ(c.cid, 0x1234);
    EXPECT_EQ(c.nsid, 7u);
    EXPECT_EQ(c.xfer, Xfer::HostToCtrl);
    EXPECT_EQ(c.sgl.kind, Sgl::Kind::Keyed);
    EXPECT_EQ(c.sgl.addr, 0x1122334455667788ull);
    EXPECT_EQ(c.sgl.len, 0xABCDEFu);
    EXPECT_EQ(c.sgl.key, 0xDEADBEEFu);
    EXPECT_TRUE(c.sgl.invalidate);
    EXPECT_EQ(check_sgl(c, 0, 0), 0);
    set_keyed_sgl(s, 1, 2, 3, false);
    ASSERT_TRUE(parse_command(s, sizeof s, c));
    EXPECT_FALSE(c.sgl.invalidate);

    set_incapsule_sgl(s, 0, 512);
    ASSERT_TRUE(parse_command(s, sizeof s, c));
    EXPECT_EQ(c.sgl.kind, Sgl::Kind::InCapsule);
    EXPECT_EQ(c.sgl.len, 512u);
    EXPECT_EQ(check_sgl(c, 512, 4096), 0);
    /* Beyond what was received, inside the limit: length invalid; beyond the limit: offset. */
    EXPECT_EQ(status_sc(check_sgl(c, 511, 4096)), kScSglInvalidDataLen);
    EXPECT_EQ(status_sc(check_sgl(c, 512, 511)), kScSglInvalidOffset);
    set_incapsule_sgl(s, 0xFFFFFFFFFFFFFF00ull, 512); /* offset wraps */
    ASSERT_TRUE(parse_command(s, sizeof s, c));
    EXPECT_EQ(status_sc(check_sgl(c, 512, 4096)), kScSglInvalidOffset);
    /* In-capsule data for a command that returns data: invalid field. */
    build_sqe(s, kNvmRead, 1, 1);
    set_incapsule_sgl(s, 0, 512);
    ASSERT_TRUE(parse_command(s, sizeof s, c));
    EXPECT_EQ(status_sc(check_sgl(c, 512, 4096)), kScInvalidField);
    /* PRPs (PSDT 00) are not for fabrics; fused operations are not supported. */
    build_sqe(s, kNvmRead, 1, 1);
    s[1] = 0;
    ASSERT_TRUE(parse_command(s, sizeof s, c));
    EXPECT_EQ(status_sc(check_sgl(c, 0, 0)), kScInvalidField);
    build_sqe(s, kNvmRead, 1, 1);
    s[1] |= 1;
    ASSERT_TRUE(parse_command(s, sizeof s, c));
    EXPECT_EQ(status_sc(check_sgl(c, 0, 0)), kScInvalidField);
    /* Other descriptor types. */
    for (uint8_t ty : {0x00, 0x20, 0x30, 0x41, 0x50, 0xF0}) {
        build_sqe(s, kNvmRead, 1, 1);
        s[24 + 15] = ty;
        ASSERT_TRUE(parse_command(s, sizeof s, c));
        EXPECT_EQ(status_sc(check_sgl(c, 0, 0)), kScSglInvalidType) << int(ty);
    }
    EXPECT_FALSE(parse_command(s, 63, c));
    EXPECT_FALSE(parse_command(nullptr, 64, c));
}

TEST(NvmfCapsule, CqeRoundTripAndStatusField) {
    Cqe c;
    c.dw0 = 0x11223344;
    c.dw1 = 0x55667788;
    c.sqhd = 9;
    c.sqid = 2;
    c.cid = 0xBEEF;
    c.status = status_field(kSctCmdSpecific, kScConnectInvalidHost, true);
    uint8_t b[kCqeLen];
    encode_cqe(c, b);
    EXPECT_EQ(b[0], 0x44);
    EXPECT_EQ(b[12], 0xEF);
    /* SCT 1, SC 0x84, DNR: 0x8000 | 1 << 9 | 0x84 << 1 */
    EXPECT_EQ(ld16(b + 14), 0x8308);
    Cqe d = decode_cqe(b);
    EXPECT_EQ(d.dw1, c.dw1);
    EXPECT_EQ(d.cid, c.cid);
    EXPECT_EQ(status_sct(d.status), kSctCmdSpecific);
    EXPECT_EQ(status_sc(d.status), kScConnectInvalidHost);
}

/* --- CM private data --- */

TEST(NvmfCmPriv, CodecRoundTripsAndRejectsBadInput) {
    CmReqPriv r{0, 3, 128, 127, 0x2A};
    uint8_t b[64];
    ASSERT_EQ(encode_cm_req_priv(r, b, sizeof b), kCmReqPrivLen);
    EXPECT_EQ(b[2], 3);
    EXPECT_EQ(b[4], 128);
    EXPECT_EQ(b[6], 127);
    CmReqPriv o;
    EXPECT_EQ(parse_cm_req_priv(b, kCmReqPrivLen, o), CmPrivError::Ok);
    EXPECT_EQ(o.qid, 3);
    EXPECT_EQ(o.hrqsize, 128);
    EXPECT_EQ(o.hsqsize, 127);
    EXPECT_EQ(o.cntlid, 0x2A);
    EXPECT_EQ(parse_cm_req_priv(b, kCmReqPrivLen - 1, o), CmPrivError::TooShort);
    b[0] = 1;
    EXPECT_EQ(parse_cm_req_priv(b, kCmReqPrivLen, o), CmPrivError::BadRecfmt);
    CmRepPriv p{0, 64}, po;
    ASSERT_EQ(encode_cm_rep_priv(p, b, sizeof b), kCmRepPrivLen);
    EXPECT_EQ(parse_cm_rep_priv(b, kCmRepPrivLen, po), CmPrivError::Ok);
    EXPECT_EQ(po.crqsize, 64);
    EXPECT_EQ(encode_cm_rep_priv(p, b, 31), 0u);
    CmRejPriv j{0, CmRejStatus::InvalidHsqsize}, jo;
    ASSERT_EQ(encode_cm_rej_priv(j, b, sizeof b), kCmRejPrivLen);
    EXPECT_EQ(parse_cm_rej_priv(b, kCmRejPrivLen, jo), CmPrivError::Ok);
    EXPECT_EQ(jo.status, CmRejStatus::InvalidHsqsize);
}

TEST_F(Fixture, AcceptAnswersRepOrRejWithTheSpecStatus) {
    FakeTx tx(mem);
    auto rej = [&](CmReqPriv r, size_t len = kCmReqPrivLen) {
        uint8_t b[kCmReqPrivLen];
        encode_cm_req_priv(r, b, sizeof b);
        AcceptResult a = t->accept(b, len, tx);
        EXPECT_EQ(a.queue, nullptr);
        CmRejPriv j;
        EXPECT_EQ(parse_cm_rej_priv(a.priv, a.priv_len, j), CmPrivError::Ok);
        return j.status;
    };
    EXPECT_EQ(rej({0, 0, 32, 31, 0}, 10), CmRejStatus::InvalidLength);
    EXPECT_EQ(rej({1, 0, 32, 31, 0}), CmRejStatus::InvalidRecfmt);
    EXPECT_EQ(rej({0, 9, 32, 31, 0}), CmRejStatus::InvalidQid); /* max_io_queues 8 */
    EXPECT_EQ(rej({0, 0, 32, 0, 0}), CmRejStatus::InvalidHsqsize);
    EXPECT_EQ(rej({0, 0, 64, 32, 0}), CmRejStatus::InvalidHsqsize); /* admin depth 32 */
    EXPECT_EQ(rej({0, 1, 128, 128, 0}), CmRejStatus::InvalidHsqsize);
    EXPECT_EQ(rej({0, 1, 16, 31, 0}), CmRejStatus::InvalidHrqsize);
    EXPECT_EQ(t->counters().cm_rejects, 7u);
    uint8_t b[kCmReqPrivLen];
    encode_cm_req_priv({0, 1, 128, 127, 1}, b, sizeof b);
    AcceptResult a = t->accept(b, sizeof b, tx);
    ASSERT_NE(a.queue, nullptr);
    CmRepPriv rep;
    EXPECT_EQ(parse_cm_rep_priv(a.priv, a.priv_len, rep), CmPrivError::Ok);
    EXPECT_EQ(rep.crqsize, 128);
    EXPECT_EQ(a.queue->depth(), 128);
    EXPECT_EQ(a.queue->recv_bytes(), 64u + 4096u);
    EXPECT_GE(a.queue->buffer_bytes(), 128u * 64 * 1024);
    t->destroy_queue(a.queue);
}

/* --- Connect and properties --- */

TEST_F(Fixture, ConnectPropertiesAndEnable) {
    HostQueue a(mem, *t);
    ASSERT_TRUE(a.accept(0));
    Cqe c = a.connect(kSub1, kHost);
    ASSERT_EQ(c.status, 0);
    EXPECT_EQ(c.dw0, 1u); /* first cntlid */
    EXPECT_EQ(c.sqid, 0);
    /* The host asked for invalidation (0x4F): the response is a SEND with Invalidate. */
    ASSERT_GE(a.tx.log.size(), 2u);
    EXPECT_EQ(a.tx.log[0].kind, Action::Read);
    EXPECT_EQ(a.tx.log[0].len, kConnectDataLen);
    EXPECT_TRUE(a.tx.log.back().invalidate);
    EXPECT_EQ(a.tx.log.back().rkey, a.tx.log[0].rkey);

    Cqe cap = a.prop_get(kPropCap, true);
    ASSERT_EQ(cap.status, 0);
    const uint64_t v = (uint64_t{cap.dw1} << 32) | cap.dw0;
    EXPECT_EQ(v & 0xFFFF, cfg.max_io_depth - 1u); /* MQES */
    EXPECT_TRUE(v >> 37 & 1);                     /* CSS NVM */
    EXPECT_EQ(a.prop_get(kPropVs, false).dw0, 0x00010400u);
    EXPECT_EQ(a.prop_get(kPropCsts, false).dw0, 0u);
    /* Admin commands before CC.EN: Command Sequence Error. */
    uint32_t key;
    EXPECT_EQ(sc_of(a.identify(kCnsController, 0, key)), kScCmdSeqError);
    EXPECT_EQ(a.enable().status, 0);
    EXPECT_EQ(a.prop_get(kPropCsts, false).dw0 & kCstsRdy, kCstsRdy);
    EXPECT_EQ(a.prop_get(kPropCc, false).dw0 & 1, 1u);
    /* Wrong sizes, read-only and unknown properties: invalid field. */
    EXPECT_EQ(sc_of(a.prop_get(kPropCap, false)), kScInvalidField);
    EXPECT_EQ(sc_of(a.prop_get(kPropVs, true)), kScInvalidField);
    EXPECT_EQ(sc_of(a.prop_get(0x1000, false)), kScInvalidField);
    EXPECT_EQ(sc_of(a.prop_set(kPropCsts, 0)), kScInvalidField);
    EXPECT_EQ(sc_of(a.prop_set(kPropCc, 1, true)), kScInvalidField);
    /* Connect again on a connected queue. */
    EXPECT_EQ(sc_of(a.connect(kSub1, kHost)), kScCmdSeqError);
    /* Shutdown: SHST complete; disable: not ready. */
    EXPECT_EQ(a.prop_set(kPropCc, 1u | (6u << 16) | (4u << 20) | (1u << 14)).status, 0);
    EXPECT_EQ(a.prop_get(kPropCsts, false).dw0, kCstsShstComplete); /* and not ready */
    EXPECT_EQ(a.prop_set(kPropCc, 0).status, 0);
    EXPECT_EQ(a.prop_get(kPropCsts, false).dw0 & kCstsRdy, 0u);
}

TEST_F(Fixture, EnableWithWrongEntrySizesIsAFatalStatus) {
    HostQueue a(mem, *t);
    ASSERT_TRUE(a.accept(0));
    ASSERT_EQ(a.connect(kSub1, kHost).status, 0);
    EXPECT_EQ(a.prop_set(kPropCc, 1).status, 0); /* IOSQES/IOCQES 0 */
    EXPECT_EQ(a.prop_get(kPropCsts, false).dw0 & (kCstsRdy | kCstsCfs), kCstsCfs);
}

TEST_F(Fixture, CommandsBeforeConnectAreSequenceErrors) {
    HostQueue a(mem, *t);
    ASSERT_TRUE(a.accept(0));
    uint32_t key;
    EXPECT_EQ(sc_of(a.identify(kCnsController, 0, key)), kScCmdSeqError);
    EXPECT_EQ(sc_of(a.prop_get(kPropCap, true)), kScCmdSeqError);
    EXPECT_EQ(sc_of(a.nodata(kAdminKeepAlive, 0)), kScCmdSeqError);
    HostQueue io(mem, *t);
    ASSERT_TRUE(io.accept(1, 63));
    EXPECT_EQ(sc_of(io.rw(kNvmRead, 1, 0, 1, 512, key)), kScCmdSeqError);
    EXPECT_EQ(t->counters().st_cmd_seq, 4u);
}

TEST_F(Fixture, ConnectRefusals) {
    HostQueue a(mem, *t);
    ASSERT_TRUE(a.accept(0));
    /* Unknown subsystem: Connect Invalid Parameters, IATTR 1 (data), IPO 256 (SUBNQN). */
    Cqe c = a.connect("nqn.2026-11.io.droce:nope", kHost);
    EXPECT_EQ(sct_of(c), kSctCmdSpecific);
    EXPECT_EQ(sc_of(c), kScConnectInvalidParam);
    EXPECT_EQ(c.dw0, (1u << 16) | 256u);
    EXPECT_TRUE(c.status & 0x8000); /* DNR */
    EXPECT_EQ(t->counters().connect_unknown_subsys, 1u);
    /* Host not on the allow list: Connect Invalid Host. */
    c = a.connect(kSub1, kStranger);
    EXPECT_EQ(sct_of(c), kSctCmdSpecific);
    EXPECT_EQ(sc_of(c), kScConnectInvalidHost);
    EXPECT_EQ(t->counters().st_connect_host, 1u);
    /* A static cntlid on the admin queue; an SQSIZE the CM handshake did not allow; a
     * QID that is not this queue's; a record format we do not know. */
    c = a.connect(kSub1, kHost, 5);
    EXPECT_EQ(c.dw0, (1u << 16) | 16u);
    c = a.connect(kSub1, kHost, 0xFFFF, 32);
    EXPECT_EQ(c.dw0, 44u);
    uint32_t key;
    const uint64_t addr = a.mr(kConnectDataLen, key);
    uint8_t s[kSqeLen];
    build_sqe(s, kOpcFabrics, 0, 0);
    s[4] = kFcConnect;
    st16(s + 40, 1);
    st16(s + 44, 31);
    set_keyed_sgl(s, addr, kConnectDataLen, key, false);
    EXPECT_EQ(sc_of(a.run(s)), kScConnectIncompatibleFormat);
    /* Connect data not NUL-terminated: the NQN cannot be read. */
    std::memset(a.buf(key).data() + 512, 'x', 256);
    std::memcpy(a.buf(key).data() + 256, kSub2.data(), kSub2.size());
    st16(s + 40, 0);
    EXPECT_EQ(a.run(s).dw0, (1u << 16) | 512u);
    EXPECT_EQ(t->counters().st_connect_invalid, 4u);
    EXPECT_EQ(t->counters().st_connect_format, 1u);
    /* The discovery subsystem lets anyone in; so does allow_any_host. */
    EXPECT_EQ(a.connect(kDiscoveryNqn, kStranger, 0xFFFF, 31).status, 0);
    HostQueue b(mem, *t);
    ASSERT_TRUE(b.accept(0));
    EXPECT_EQ(b.connect(kSub2, kStranger).status, 0);
}

TEST_F(Fixture, IoQueueConnectRules) {
    HostQueue a(mem, *t);
    const uint16_t cntlid = admin_up(a);
    HostQueue io(mem, *t);
    ASSERT_TRUE(io.accept(1, 63));
    /* Before Set Features Number of Queues no I/O queue is granted. */
    EXPECT_EQ(io.connect(kSub1, kHost, cntlid, 63).dw0, 42u);
    Cqe f = a.nodata(kAdminSetFeatures, 0, kFidNumQueues, 0x00FF00FF);
    EXPECT_EQ(f.dw0, ((8u - 1) << 16) | (8u - 1)); /* capped at max_io_queues */
    EXPECT_EQ(io.connect(kSub1, kHost, cntlid + 1u, 63).dw0, (1u << 16) | 16u);
    EXPECT_EQ(io.connect(kSub2, kHost, cntlid, 63).dw0, (1u << 16) | 16u);
    static const uint8_t other_id[16] = {9};
    EXPECT_EQ(io.connect(kSub1, kHost, cntlid, 63, 0, other_id).dw0, (1u << 16) | 16u);
    EXPECT_EQ(io.connect(kSub1, kHost, cntlid, 63).status, 0);
    /* A second queue with the same qid. */
    HostQueue dup(mem, *t);
    ASSERT_TRUE(dup.accept(1, 63));
    EXPECT_EQ(dup.connect(kSub1, kHost, cntlid, 63).dw0, 42u);
    /* Properties are admin-queue only. */
    EXPECT_EQ(sc_of(io.prop_get(kPropCap, true)), kScInvalidField);
    /* Admin opcodes on an I/O queue are not I/O commands. */
    uint32_t key;
    EXPECT_EQ(sc_of(io.identify(kCnsController, 0, key)), kScInvalidOpcode);
    /* Disabling the controller tears its I/O queues down. */
    EXPECT_EQ(a.prop_set(kPropCc, 0).status, 0);
    EXPECT_EQ(io.tx.disconnects, 1);
}

/* Two Connects on one admin queue, the second sent before the first's RDMA READ came back
 * (a host holding its READ responses): one controller at most may come of it (issue 33).
 * The second is a Command Sequence Error; the queue's controller goes with the queue, so
 * every controller is free again and keep-alive expiry finds nothing of the gone queue. */
TEST_F(Fixture, ConnectsInFlightMakeOneController) {
    cfg.max_controllers = 2;
    std::string err;
    t = Target::create(cfg, err);
    ASSERT_TRUE(t) << err;
    HostQueue a(mem, *t);
    ASSERT_TRUE(a.accept(0));
    uint8_t s1[kSqeLen], s2[kSqeLen];
    a.connect_sqe(s1, kDiscoveryNqn, kStranger, 0xFFFF, 31, 1000 /* KATO ms */);
    a.connect_sqe(s2, kDiscoveryNqn, kStranger, 0xFFFF, 31, 1000);
    ASSERT_EQ(a.send_only(s1), CapsuleResult::Accepted);
    ASSERT_EQ(a.send_only(s2), CapsuleResult::Accepted);
    a.tx.pump(a.now);
    ASSERT_EQ(a.tx.cqes.size(), 2u);
    int ok = 0, seq = 0;
    for (const Cqe &c : a.tx.cqes) {
        ok += c.status == 0;
        seq += sct_of(c) == kSctGeneric && sc_of(c) == kScCmdSeqError;
    }
    EXPECT_EQ(ok, 1);
    EXPECT_EQ(seq, 1);
    EXPECT_EQ(t->counters().st_cmd_seq, 1u);
    EXPECT_EQ(t->counters().connect_in_flight, 1u);
    /* The connection goes, and the queue with it. */
    t->destroy_queue(a.q);
    a.q = a.tx.q = nullptr;
    /* Both controllers are free: two new hosts get one each. */
    HostQueue b(mem, *t), c(mem, *t);
    ASSERT_TRUE(b.accept(0));
    ASSERT_TRUE(c.accept(0));
    EXPECT_EQ(b.connect(kDiscoveryNqn, kStranger).status, 0);
    EXPECT_EQ(c.connect(kDiscoveryNqn, kStranger).status, 0);
    EXPECT_EQ(t->counters().st_connect_busy, 0u);
    /* Long after any keep-alive: no controller of the gone queue is left to expire (it
     * would reach into the freed queue). */
    t->poll(uint64_t{60} * 1000 * 1000 * 1000);
    EXPECT_EQ(t->counters().kato_expired, 0u);
    EXPECT_EQ(b.tx.disconnects + c.tx.disconnects, 0);
}

/* A Connect that failed leaves the queue free for another (as nvmet); one that is still
 * reading its data does not: Connects on an I/O queue follow the same rule. */
TEST_F(Fixture, IoQueueConnectsInFlight) {
    HostQueue a(mem, *t);
    const uint16_t cntlid = admin_up(a);
    EXPECT_EQ(a.nodata(kAdminSetFeatures, 0, kFidNumQueues, 0x00030003).status, 0);
    HostQueue io(mem, *t);
    ASSERT_TRUE(io.accept(1, 63));
    EXPECT_EQ(sc_of(io.connect(kSub1, kHost, cntlid + 5u, 63)), kScConnectInvalidParam);
    uint8_t s1[kSqeLen], s2[kSqeLen];
    io.connect_sqe(s1, kSub1, kHost, cntlid, 63);
    io.connect_sqe(s2, kSub1, kHost, cntlid, 63);
    ASSERT_EQ(io.send_only(s1), CapsuleResult::Accepted);
    ASSERT_EQ(io.send_only(s2), CapsuleResult::Accepted);
    io.tx.pump(io.now);
    ASSERT_EQ(io.tx.cqes.size(), 3u);
    /* The second answered at once, the first when its data was read. */
    EXPECT_EQ(sc_of(io.tx.cqes[1]), kScCmdSeqError);
    EXPECT_EQ(io.tx.cqes[2].status, 0);
    uint32_t key;
    EXPECT_EQ(io.rw(kNvmRead, 1, 0, 1, 512, key).status, 0);
}

/* --- Identify, logs, features --- */

TEST_F(Fixture, IdentifyControllerAndNamespaces) {
    HostQueue a(mem, *t);
    const uint16_t cntlid = admin_up(a);
    uint32_t key;
    ASSERT_EQ(a.identify(kCnsController, 0, key).status, 0);
    const uint8_t *d = a.buf(key).data();
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(d + 4), 8), "SN-RAM-1");
    EXPECT_EQ(d[4 + 8], ' ');
    EXPECT_EQ(d[77], 4); /* MDTS: 64 KiB / 4 KiB = 2^4 */
    EXPECT_EQ(ld16(d + 78), cntlid);
    EXPECT_EQ(d[111], 1);
    EXPECT_EQ(ld32(d + 516), 3u); /* NN */
    EXPECT_EQ(ld16(d + 520), 0x0C);
    EXPECT_EQ(ld32(d + 536) & 0x00100005u, 0x00100005u);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(d + 768)), kSub1);
    EXPECT_EQ(ld32(d + 1792), (64u + 4096u) / 16);
    EXPECT_EQ(d[1803], 1);

    ASSERT_EQ(a.identify(kCnsActiveNsList, 0, key).status, 0);
    d = a.buf(key).data();
    EXPECT_EQ(ld32(d), 1u);
    EXPECT_EQ(ld32(d + 4), 3u);
    EXPECT_EQ(ld32(d + 8), 0u);
    ASSERT_EQ(a.identify(kCnsActiveNsList, 1, key).status, 0);
    EXPECT_EQ(ld32(a.buf(key).data()), 3u);

    ASSERT_EQ(a.identify(kCnsNamespace, 3, key).status, 0);
    d = a.buf(key).data();
    EXPECT_EQ(ld64(d), 256u); /* NSZE */
    EXPECT_EQ(d[130], 12);    /* LBADS 4096 */
    EXPECT_EQ(d[33] & 7, 1);  /* deallocated reads zeroes */
    uint8_t nguid[16];
    std::memcpy(nguid, d + 104, 16);
    EXPECT_NE(ld64(nguid) | ld64(nguid + 8), 0u);
    ASSERT_EQ(a.identify(kCnsNsDescList, 3, key).status, 0);
    d = a.buf(key).data();
    EXPECT_EQ(d[0], 2);
    EXPECT_EQ(d[1], 16);
    EXPECT_EQ(std::memcmp(d + 4, nguid, 16), 0);

    EXPECT_EQ(sc_of(a.identify(kCnsNamespace, 2, key)), kScInvalidNs);
    EXPECT_EQ(sc_of(a.identify(0x10, 0, key)), kScInvalidField);
    /* Identify with an SGL shorter or longer than 4 KiB. */
    EXPECT_EQ(sc_of(a.cmd_in(kAdminIdentify, 0, 4095, key, kCnsController)), kScSglInvalidDataLen);
    EXPECT_EQ(sc_of(a.cmd_in(kAdminIdentify, 0, 8192, key, kCnsController)), kScSglInvalidDataLen);
    EXPECT_EQ(t->counters().st_sgl_len, 2u);
    /* Unknown admin opcode. */
    EXPECT_EQ(sc_of(a.nodata(0xC5, 0)), kScInvalidOpcode);
}

TEST_F(Fixture, DiscoveryControllerAndLog) {
    HostQueue a(mem, *t);
    ASSERT_TRUE(a.accept(0));
    ASSERT_EQ(a.connect(kDiscoveryNqn, kStranger).status, 0);
    ASSERT_EQ(a.prop_set(kPropCc, 1).status, 0); /* a discovery controller has no I/O SQES */
    uint32_t key;
    ASSERT_EQ(a.identify(kCnsController, 0, key).status, 0);
    EXPECT_EQ(a.buf(key)[111], 2);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(a.buf(key).data() + 768)), kDiscoveryNqn);
    EXPECT_EQ(sc_of(a.identify(kCnsNamespace, 1, key)), kScInvalidField);
    /* Header first (as Linux does), then the whole page. */
    ASSERT_EQ(a.get_log(kLidDiscovery, 1024, key).status, 0);
    EXPECT_EQ(ld64(a.buf(key).data() + 8), 3u); /* itself + 2 NVM subsystems */
    ASSERT_EQ(a.get_log(kLidDiscovery, 4096, key).status, 0);
    const uint8_t *d = a.buf(key).data();
    const uint8_t *e = d + 1024;
    EXPECT_EQ(e[2], 3); /* current discovery subsystem */
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(e + 256)), kDiscoveryNqn);
    e += 1024;
    EXPECT_EQ(e[0], 1);
    EXPECT_EQ(e[1], 1);
    EXPECT_EQ(e[2], 2);
    EXPECT_EQ(ld16(e + 6), 0xFFFF);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(e + 32)), "4420");
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(e + 512)), "10.77.20.2");
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(e + 256)), kSub1);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(e + 1024 + 256)), kSub2);
    EXPECT_EQ(e[770], 1); /* RDMA-CM */
    /* A window at an offset. */
    ASSERT_EQ(a.get_log(kLidDiscovery, 1024, key, 3072).status, 0);
    EXPECT_EQ(std::string(reinterpret_cast<const char *>(a.buf(key).data() + 256)), kSub2);
    EXPECT_EQ(sc_of(a.get_log(kLidDiscovery, 1024, key, 8192)), kScInvalidField);
    EXPECT_EQ(sc_of(a.get_log(kLidDiscovery, 1024, key, 2)), kScInvalidField);
    /* No SMART on a discovery controller; no I/O queues either. */
    EXPECT_EQ(sc_of(a.get_log(kLidSmart, 512, key)), kScInvalidField);
    EXPECT_EQ(sc_of(a.nodata(kAdminSetFeatures, 0, kFidNumQueues, 0)), kScInvalidField);
}

TEST_F(Fixture, FeaturesKeepAliveAndAer) {
    HostQueue a(mem, *t);
    admin_up(a, kSub1, 5000);
    EXPECT_EQ(a.nodata(kAdminGetFeatures, 0, kFidKeepAlive).dw0, 5000u);
    EXPECT_EQ(a.nodata(kAdminSetFeatures, 0, kFidKeepAlive, 3000).status, 0);
    EXPECT_EQ(a.nodata(kAdminGetFeatures, 0, kFidKeepAlive).dw0, 3000u);
    EXPECT_EQ(a.nodata(kAdminSetFeatures, 0, kFidAsyncEventConfig, 0x900).status, 0);
    EXPECT_EQ(a.nodata(kAdminGetFeatures, 0, kFidAsyncEventConfig).dw0, 0x900u);
    EXPECT_EQ(a.nodata(kAdminGetFeatures, 0, kFidVolatileWc).dw0, 0u);
    EXPECT_EQ(sc_of(a.nodata(kAdminSetFeatures, 0, 0x7E, 0)), kScInvalidField);
    EXPECT_EQ(sc_of(a.nodata(kAdminSetFeatures, 0, kFidKeepAlive | (1u << 31), 1)),
              kScFeatureNotSaveable);
    EXPECT_EQ(a.nodata(kAdminSetFeatures, 0, kFidNumQueues, 0x00010001).dw0, 0x00010001u);
    EXPECT_EQ(a.nodata(kAdminGetFeatures, 0, kFidNumQueues).dw0, 0x00010001u);
    EXPECT_EQ(a.nodata(kAdminAbort, 0, 0).dw0 & 1, 1u);
    /* AERs are held: no response; the fifth is over the limit (AERL 3). */
    for (int i = 0; i < 4; ++i) {
        uint8_t s[kSqeLen];
        build_sqe(s, kAdminAsyncEvent, static_cast<uint16_t>(100 + i), 0);
        set_keyed_sgl(s, 0, 0, 0, false);
        const size_t n = a.tx.cqes.size();
        EXPECT_EQ(a.q->on_capsule(s, sizeof s, 0), CapsuleResult::Accepted);
        a.tx.pump();
        EXPECT_EQ(a.tx.cqes.size(), n);
    }
    EXPECT_EQ(t->counters().aer_held, 4u);
    Cqe c = a.nodata(kAdminAsyncEvent, 0);
    EXPECT_EQ(sct_of(c), kSctCmdSpecific);
    EXPECT_EQ(sc_of(c), kScAerLimit);
    /* Keep-alive: commands keep it alive, silence past KATO kills the controller. */
    a.now = 2'000'000'000ull;
    EXPECT_EQ(a.nodata(kAdminKeepAlive, 0).status, 0);
    t->poll(4'900'000'000ull);
    EXPECT_EQ(a.tx.disconnects, 0);
    t->poll(5'100'000'000ull);
    EXPECT_EQ(a.tx.disconnects, 1);
    EXPECT_EQ(t->counters().kato_expired, 1u);
    EXPECT_TRUE(a.q->drained()); /* the held AERs went with it */
}

/* --- NVM I/O --- */

TEST_F(Fixture, ReadWriteByRdmaAndInCapsule) {
    HostQueue a(mem, *t);
    const uint16_t cntlid = admin_up(a);
    HostQueue io(mem, *t);
    io_up(a, io, cntlid);
    /* 8 KiB write by RDMA READ, read back by RDMA WRITE. */
    uint32_t wkey;
    const uint64_t waddr = io.mr(8192, wkey);
    for (size_t i = 0; i < 8192; ++i)
        io.buf(wkey)[i] = static_cast<uint8_t>(i * 7 + 3);
    uint8_t s[kSqeLen];
    build_sqe(s, kNvmWrite, 0, 1);
    st32(s + 40, 100);
    st32(s + 48, 15);
    set_keyed_sgl(s, waddr, 8192, wkey, true);
    Cqe c = io.run(s);
    ASSERT_EQ(c.status, 0);
    EXPECT_EQ(c.sqid, 1);
    EXPECT_EQ(io.tx.log[io.tx.log.size() - 2].kind, Action::Read);
    EXPECT_TRUE(io.tx.log.back().invalidate);
    uint32_t rkey;
    ASSERT_EQ(io.rw(kNvmRead, 1, 100, 16, 512, rkey).status, 0);
    EXPECT_EQ(io.buf(rkey), io.buf(wkey));
    EXPECT_EQ(io.tx.log[io.tx.log.size() - 2].kind, Action::Write);
    /* 512 bytes in the capsule at LBA 2047 (the last block). */
    std::vector<uint8_t> icd(512, 0x5A);
    build_sqe(s, kNvmWrite, 0, 1);
    st32(s + 40, 2047);
    set_incapsule_sgl(s, 0, 512);
    const size_t reads = std::count_if(io.tx.log.begin(), io.tx.log.end(),
                                       [](const Action &x) { return x.kind == Action::Read; });
    ASSERT_EQ(io.run(s, icd).status, 0);
    EXPECT_EQ(std::count_if(io.tx.log.begin(), io.tx.log.end(),
                            [](const Action &x) { return x.kind == Action::Read; }),
              static_cast<long>(reads));
    EXPECT_FALSE(io.tx.log.back().invalidate);
    ASSERT_EQ(io.rw(kNvmRead, 1, 2047, 1, 512, rkey).status, 0);
    EXPECT_EQ(io.buf(rkey), icd);
    /* Namespace 3 (4 KiB blocks) is separate. */
    ASSERT_EQ(io.rw(kNvmRead, 3, 0, 1, 4096, rkey).status, 0);
    EXPECT_EQ(io.buf(rkey), std::vector<uint8_t>(4096, 0));
    /* SMART counts what was done. */
    uint32_t key;
    ASSERT_EQ(a.get_log(kLidSmart, 512, key).status, 0);
    const uint8_t *sm = a.buf(key).data();
    EXPECT_EQ(ld64(sm + 64), 3u); /* host reads */
    EXPECT_EQ(ld64(sm + 80), 2u); /* host writes */
    EXPECT_EQ(ld64(sm + 48), 1u); /* 17 units written -> 1 thousand */
    EXPECT_EQ(ld16(sm + 1), 0u);  /* no sensor */
    EXPECT_EQ(d1->outside + d3->outside, 0);
}

TEST_F(Fixture, BadIoAnsweredCountedAndNeverOutsideTheNamespace) {
    HostQueue a(mem, *t);
    const uint16_t cntlid = admin_up(a);
    HostQueue io(mem, *t);
    io_up(a, io, cntlid);
    uint32_t key;
    const int before = d1->ios;
    /* Past the end, straddling it, and an SLBA whose sum wraps. */
    EXPECT_EQ(sc_of(io.rw(kNvmWrite, 1, 2048, 1, 512, key)), kScLbaOutOfRange);
    EXPECT_EQ(sc_of(io.rw(kNvmWrite, 1, 2040, 16, 512, key)), kScLbaOutOfRange);
    EXPECT_EQ(sc_of(io.rw(kNvmRead, 1, ~0ull - 2, 8, 512, key)), kScLbaOutOfRange);
    EXPECT_EQ(sc_of(io.nodata(kNvmWriteZeroes, 1, 2047, 0, 1)), kScLbaOutOfRange);
    EXPECT_EQ(t->counters().st_lba_range, 4u);
    /* SGL longer and shorter than the command moves. */
    EXPECT_EQ(sc_of(io.rw(kNvmWrite, 1, 0, 1, 512, key, 1024)), kScSglInvalidDataLen);
    EXPECT_EQ(sc_of(io.rw(kNvmRead, 1, 0, 2, 512, key, 512)), kScSglInvalidDataLen);
    /* More than MDTS (64 KiB). */
    EXPECT_EQ(sc_of(io.rw(kNvmRead, 1, 0, 256, 512, key)), kScInvalidField);
    /* Unknown nsid, unknown opcode, broadcast nsid for a read. */
    EXPECT_EQ(sc_of(io.rw(kNvmRead, 2, 0, 1, 512, key)), kScInvalidNs);
    EXPECT_EQ(sc_of(io.rw(kNvmRead, 0xFFFFFFFF, 0, 1, 512, key)), kScInvalidNs);
    EXPECT_EQ(sc_of(io.nodata(0x7E, 1)), kScInvalidOpcode);
    EXPECT_EQ(sc_of(io.nodata(0x05, 1)), kScInvalidOpcode); /* Compare: not supported */
    /* In-capsule data larger than the capsule can hold. */
    uint8_t s[kSqeLen];
    build_sqe(s, kNvmWrite, 0, 1);
    st32(s + 48, 15);
    set_incapsule_sgl(s, 0, 8192);
    EXPECT_EQ(sc_of(io.run(s, std::vector<uint8_t>(4096))), kScSglInvalidOffset);
    /* In-capsule data the host did not send. */
    build_sqe(s, kNvmWrite, 0, 1);
    set_incapsule_sgl(s, 0, 512);
    EXPECT_EQ(sc_of(io.run(s, std::vector<uint8_t>(100))), kScSglInvalidDataLen);
    EXPECT_EQ(d1->ios, before); /* none of these reached the backend */
    EXPECT_EQ(d1->outside, 0);
    /* Errors are in the error log, newest first, and counted in SMART. */
    ASSERT_EQ(a.get_log(kLidErrorInfo, 1024, key).status, 0);
    const uint8_t *e = a.buf(key).data();
    EXPECT_EQ(ld64(e), 13u);
    EXPECT_EQ(ld16(e + 8), 1);
    EXPECT_EQ(status_sc(ld16(e + 12)), kScSglInvalidDataLen);
    EXPECT_EQ(ld64(e + 64), 12u);
    /* A capsule too short to answer, and one past the host's queue size. */
    EXPECT_EQ(io.q->on_capsule(s, 63, 0), CapsuleResult::TooShort);
    EXPECT_EQ(t->counters().capsule_too_short, 1u);
}

TEST_F(Fixture, CapsulesBeyondTheQueueDepthAreDropped) {
    HostQueue a(mem, *t);
    ASSERT_TRUE(a.accept(0, 1)); /* two slots */
    uint8_t s[kSqeLen];
    build_sqe(s, kAdminKeepAlive, 1, 0);
    set_keyed_sgl(s, 0, 0, 0, false);
    EXPECT_EQ(a.q->on_capsule(s, sizeof s, 0), CapsuleResult::Accepted);
    EXPECT_EQ(a.q->on_capsule(s, sizeof s, 0), CapsuleResult::Accepted);
    EXPECT_EQ(a.q->on_capsule(s, sizeof s, 0), CapsuleResult::NoSlot); /* sends pending */
    EXPECT_EQ(t->counters().capsule_no_slot, 1u);
    a.tx.pump();
    EXPECT_EQ(a.q->on_capsule(s, sizeof s, 0), CapsuleResult::Accepted);
}

TEST_F(Fixture, WriteZeroesDeallocateFlush) {
    HostQueue a(mem, *t);
    const uint16_t cntlid = admin_up(a);
    HostQueue io(mem, *t);
    io_up(a, io, cntlid);
    uint32_t key;
    const uint64_t addr = io.mr(4096, key);
    std::memset(io.buf(key).data(), 0xEE, 4096);
    uint8_t s[kSqeLen];
    build_sqe(s, kNvmWrite, 0, 1);
    st32(s + 48, 7);
    set_keyed_sgl(s, addr, 4096, key, false);
    ASSERT_EQ(io.run(s).status, 0);
    /* Write zeroes over blocks 2..3, DSM deallocate of 5..6 (two ranges: one empty). */
    ASSERT_EQ(io.nodata(kNvmWriteZeroes, 1, 2, 0, 1).status, 0);
    uint32_t dkey;
    const uint64_t daddr = io.mr(32, dkey);
    uint8_t *r = io.buf(dkey).data();
    st32(r + 4, 2);
    st64(r + 8, 5);
    st32(r + 16 + 4, 0);
    st64(r + 16 + 8, 0);
    build_sqe(s, kNvmDsm, 0, 1);
    st32(s + 40, 1); /* NR: 2 ranges */
    st32(s + 44, 4); /* AD */
    set_keyed_sgl(s, daddr, 32, dkey, false);
    ASSERT_EQ(io.run(s).status, 0);
    uint32_t rkey;
    ASSERT_EQ(io.rw(kNvmRead, 1, 0, 8, 512, rkey).status, 0);
    for (int b = 0; b < 8; ++b) {
        const bool zero = b == 2 || b == 3 || b == 5 || b == 6;
        EXPECT_EQ(io.buf(rkey)[b * 512 + 17], zero ? 0 : 0xEE) << "block " << b;
    }
    /* A DSM range outside the namespace fails as a whole. */
    st64(r + 16 + 8, 2047);
    st32(r + 16 + 4, 2);
    ASSERT_EQ(sc_of(io.run(s)), kScLbaOutOfRange);
    ASSERT_EQ(io.rw(kNvmRead, 1, 0, 8, 512, rkey).status, 0);
    EXPECT_EQ(io.buf(rkey)[7 * 512], 0xEE);
    EXPECT_EQ(io.nodata(kNvmFlush, 1).status, 0);
    EXPECT_EQ(io.nodata(kNvmFlush, 0xFFFFFFFF).status, 0);
    EXPECT_EQ(d1->outside + d3->outside, 0);
}

TEST_F(Fixture, ReadFailureAndPostFailure) {
    HostQueue a(mem, *t);
    const uint16_t cntlid = admin_up(a);
    HostQueue io(mem, *t);
    io_up(a, io, cntlid);
    io.tx.fail_reads = true;
    uint32_t key;
    Cqe c = io.rw(kNvmWrite, 1, 0, 1, 512, key);
    EXPECT_EQ(sc_of(c), kScDataXferError);
    EXPECT_FALSE(c.status & 0x8000); /* retryable */
    EXPECT_EQ(t->counters().read_failures, 1u);
}

/* --- file backend --- */

struct TmpFile {
    std::string path;
    TmpFile() {
        char p[] = "/var/tmp/nvmf_test_XXXXXX";
        int fd = mkstemp(p);
        if (fd >= 0)
            close(fd);
        path = p;
    }
    ~TmpFile() { unlink(path.c_str()); }
};

TEST(NvmfFileBdev, WritesPersistAcrossReopenAndDisconnectMidIoIsClean) {
    TmpFile f;
    std::string err;
    std::vector<uint8_t> pattern(64 * 1024);
    for (size_t i = 0; i < pattern.size(); ++i)
        pattern[i] = static_cast<uint8_t>(i ^ (i >> 8) ^ 0x3C);
    for (int round = 0; round < 2; ++round) {
        auto bdev = make_file_bdev(f.path, 4 << 20, 4096, 16, err);
        ASSERT_TRUE(bdev) << err;
        EXPECT_EQ(bdev->size_bytes(), 4u << 20);
        TargetConfig cfg;
        SubsystemConfig s;
        s.nqn = kSub1;
        s.allow_any_host = true;
        s.namespaces = {{1, bdev.get(), {}}};
        cfg.subsystems = {s};
        auto t = Target::create(cfg, err);
        ASSERT_TRUE(t) << err;
        HostMem mem;
        HostQueue a(mem, *t);
        ASSERT_TRUE(a.accept(0));
        const Cqe c = a.connect(kSub1, kHost);
        ASSERT_EQ(c.status, 0);
        ASSERT_EQ(a.enable().status, 0);
        ASSERT_EQ(a.nodata(kAdminSetFeatures, 0, kFidNumQueues, 0).status, 0);
        HostQueue io(mem, *t);
        ASSERT_TRUE(io.accept(1, 31));
        ASSERT_EQ(io.connect(kSub1, kHost, static_cast<uint16_t>(c.dw0), 31).status, 0);
        uint32_t key;
        if (round == 0) {
            const uint64_t addr = io.mr(65536, key);
            io.buf(key) = pattern;
            uint8_t sq[kSqeLen];
            build_sqe(sq, kNvmWrite, 0, 1);
            st32(sq + 40, 10);
            st32(sq + 48, 15);
            set_keyed_sgl(sq, addr, 65536, key, false);
            ASSERT_EQ(io.run(sq).status, 0);
            ASSERT_EQ(io.nodata(kNvmFlush, 1).status, 0);
            ASSERT_EQ(io.nodata(kNvmDsm, 1, 0, 4).status,
                      0 + status_field(0, kScSglInvalidDataLen, true))
                << "DSM without its ranges";
            /* A write in the backend when the host goes: no response, slot freed. */
            build_sqe(sq, kNvmWrite, 77, 1);
            st32(sq + 40, 100);
            st32(sq + 48, 15);
            set_keyed_sgl(sq, addr, 65536, key, false);
            const size_t n = io.tx.cqes.size();
            ASSERT_EQ(io.q->on_capsule(sq, sizeof sq, 0), CapsuleResult::Accepted);
            io.tx.pump(); /* the RDMA READ completes, the write goes to the worker */
            io.q->on_disconnect();
            for (int i = 0; i < 2000 && !io.q->drained(); ++i) {
                t->poll(0);
                usleep(100);
            }
            EXPECT_TRUE(io.q->drained());
            EXPECT_EQ(io.tx.cqes.size(), n);
            EXPECT_EQ(io.q->on_capsule(sq, sizeof sq, 0), CapsuleResult::DeadQueue);
        } else {
            ASSERT_EQ(io.rw(kNvmRead, 1, 10, 16, 4096, key).status, 0);
            EXPECT_EQ(io.buf(key), pattern);
            /* Deallocate reads back as zeroes. */
            uint32_t dk;
            const uint64_t da = io.mr(16, dk);
            st32(io.buf(dk).data() + 4, 1);
            st64(io.buf(dk).data() + 8, 12);
            uint8_t sq[kSqeLen];
            build_sqe(sq, kNvmDsm, 0, 1);
            st32(sq + 44, 4);
            set_keyed_sgl(sq, da, 16, dk, false);
            ASSERT_EQ(io.run(sq).status, 0);
            ASSERT_EQ(io.rw(kNvmRead, 1, 12, 1, 4096, key).status, 0);
            EXPECT_EQ(io.buf(key), std::vector<uint8_t>(4096, 0));
            ASSERT_EQ(io.nodata(kNvmWriteZeroes, 1, 11, 0, 0).status, 0);
            ASSERT_EQ(io.rw(kNvmRead, 1, 11, 1, 4096, key).status, 0);
            EXPECT_EQ(io.buf(key), std::vector<uint8_t>(4096, 0));
        }
    }
}

TEST(NvmfFileBdev, BadConfigurations) {
    std::string err;
    EXPECT_FALSE(make_file_bdev("/nonexistent/dir/x", 1 << 20, 4096, 4, err));
    EXPECT_FALSE(err.empty());
    EXPECT_FALSE(make_file_bdev("/tmp/x", 1 << 20, 1000, 4, err));
    EXPECT_FALSE(make_ram_bdev(1000, 512));
    TargetConfig cfg;
    cfg.max_io_bytes = 3000;
    EXPECT_FALSE(Target::create(cfg, err));
    cfg = TargetConfig{};
    SubsystemConfig s;
    s.nqn = kDiscoveryNqn;
    cfg.subsystems = {s};
    EXPECT_FALSE(Target::create(cfg, err));
}

} // namespace

namespace {

/* Per-I/O time through the core (capsule in to response out, fake transport) for 4 KiB
 * reads: RAM disk inline vs the O_DIRECT file through the worker thread and rte_ring.
 * Printed, not asserted (a loaded CI machine says little about speed). */
void measure(Bdev &b, const char *name) {
    TargetConfig cfg;
    SubsystemConfig s;
    s.nqn = kSub1;
    s.allow_any_host = true;
    s.namespaces = {{1, &b, {}}};
    cfg.subsystems = {s};
    std::string err;
    auto t = Target::create(cfg, err);
    ASSERT_TRUE(t) << err;
    HostMem mem;
    HostQueue a(mem, *t);
    ASSERT_TRUE(a.accept(0));
    const Cqe c = a.connect(kSub1, kHost);
    ASSERT_EQ(a.enable().status, 0);
    ASSERT_EQ(a.nodata(kAdminSetFeatures, 0, kFidNumQueues, 0).status, 0);
    HostQueue io(mem, *t);
    ASSERT_TRUE(io.accept(1, 31));
    ASSERT_EQ(io.connect(kSub1, kHost, static_cast<uint16_t>(c.dw0), 31).status, 0);
    uint32_t key;
    const uint64_t addr = io.mr(4096, key);
    uint8_t sq[kSqeLen];
    std::vector<double> ns;
    for (int i = 0; i < 2000; ++i) {
        build_sqe(sq, kNvmRead, static_cast<uint16_t>(i), 1);
        st32(sq + 40, static_cast<uint32_t>((i * 7919) % 256) * 8);
        st32(sq + 48, 7);
        set_keyed_sgl(sq, addr, 4096, key, false);
        const size_t n = io.tx.cqes.size();
        const auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(io.q->on_capsule(sq, sizeof sq, 0), CapsuleResult::Accepted);
        while (io.tx.cqes.size() == n)
            t->poll(0);
        const auto t1 = std::chrono::steady_clock::now();
        io.tx.pump();
        ASSERT_EQ(io.tx.cqes.back().status, 0);
        ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
    std::sort(ns.begin(), ns.end());
    printf("%s 4 KiB read, capsule to response: min %.0f ns, median %.0f ns, max %.0f ns "
           "(%zu I/Os)\n",
           name, ns.front(), ns[ns.size() / 2], ns.back(), ns.size());
}

} // namespace

TEST(NvmfLatency, RamVersusFileWorker) {
    auto ram = make_ram_bdev(8 << 20, 512);
    measure(*ram, "ram disk");
    TmpFile f;
    std::string err;
    auto file = make_file_bdev(f.path, 8 << 20, 512, 32, err);
    ASSERT_TRUE(file) << err;
    measure(*file, "file O_DIRECT (worker + rte_ring)");
}
