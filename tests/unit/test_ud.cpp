/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/ud: the UD QP state rules, a SEND built as rxe builds it (ud_pingpong.pcap), and
 * two QPs exchanging datagrams through a tiny in-memory port (frames built, parsed and
 * delivered): GRH layout, immediate data, Q_Key and MTU rules, multicast refused. */
#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "cm_mad.h"
#include "pcap_read.h"
#include "ud_qp.h"
#include "wire_packet.h"

using namespace droce;
using namespace droce::ud;

namespace {

/* Builds every frame it is given; the test decides what happens to them. */
struct FakePort : qp::TxPort {
    std::deque<std::vector<uint8_t>> frames;
    bool busy = false;
    bool transmit(const wire::FrameSpec &f) override {
        if (busy)
            return false;
        std::vector<uint8_t> b(wire::frame_len(f));
        if (wire::build_frame(f, b.data(), b.size()) != b.size())
            return false;
        frames.push_back(std::move(b));
        return true;
    }
};

struct VecCq : qp::CqSink {
    std::vector<Wc> wcs;
    bool push(const Wc &wc) override {
        wcs.push_back(wc);
        return true;
    }
};

constexpr uint8_t kMacA[6] = {0x52, 0x54, 0, 0x4d, 0, 3};
constexpr uint8_t kMacB[6] = {0x52, 0x54, 0, 0x4d, 0, 2};

struct Endpoint {
    mem::MrTable mrs{16};
    std::vector<uint8_t> buf = std::vector<uint8_t>(8192);
    uint32_t lkey = 0;
    FakePort port;
    VecCq scq, rcq;
    Counters ctr;
    std::unique_ptr<Qp> qp;

    explicit Endpoint(uint32_t qpn, Mtu mtu = Mtu::Mtu1024) {
        lkey = mrs.reg(1, buf.data(), buf.size(), kAccessLocalWrite)->key;
        QpConfig c;
        c.qpn = qpn;
        c.pd = 1;
        c.port = &port;
        c.send_cq = &scq;
        c.recv_cq = &rcq;
        c.mrs = &mrs;
        c.counters = &ctr;
        c.mtu = mtu;
        c.sq_sig_all = true;
        c.cap.max_inline_data = 64;
        qp = std::make_unique<Qp>(c);
    }
    Status up(uint32_t qkey, uint32_t sq_psn = 0) {
        QpAttr a{};
        a.qp_state = QpState::Init;
        a.qkey = qkey;
        if (Status s = qp->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey); !s)
            return s;
        a.qp_state = QpState::Rtr;
        if (Status s = qp->modify(a, kQpState); !s)
            return s;
        a.qp_state = QpState::Rts;
        a.sq_psn = sq_psn;
        return qp->modify(a, kQpState | kQpSqPsn);
    }
    Status recv(uint64_t wr_id, uint32_t off, uint32_t len) {
        RecvWr r;
        r.wr_id = wr_id;
        r.sg_list[0] = {reinterpret_cast<uint64_t>(buf.data() + off), len, lkey};
        r.num_sge = 1;
        return qp->post_recv(r);
    }
    UdSendWr send(const ud::AddressHandle &ah, uint32_t rqpn, uint32_t off, uint32_t len,
                  uint32_t qkey = kQkeyUseQp) {
        UdSendWr u;
        u.wr.wr_id = 77;
        u.wr.sg_list[0] = {reinterpret_cast<uint64_t>(buf.data() + off), len, lkey};
        u.wr.num_sge = 1;
        u.ah = &ah;
        u.remote_qpn = rqpn;
        u.remote_qkey = qkey;
        return u;
    }
};

ud::AddressHandle ah_v4(uint32_t src, uint32_t dst, const uint8_t *smac, const uint8_t *dmac) {
    ud::AddressHandle ah;
    std::memcpy(ah.eth.src, smac, 6);
    std::memcpy(ah.eth.dst, dmac, 6);
    wire::gid_from_ipv4(src, ah.sgid);
    wire::gid_from_ipv4(dst, ah.dgid);
    ah.hop_limit = 64;
    return ah;
}

/* Moves every frame `from` transmitted into `to`'s QP (parsed, ICRC checked). */
size_t deliver(Endpoint &from, Endpoint &to) {
    size_t n = 0;
    from.qp->progress(0);
    while (!from.port.frames.empty()) {
        const std::vector<uint8_t> f = from.port.frames.front();
        from.port.frames.pop_front();
        wire::ParsedPacket p{};
        EXPECT_EQ(wire::parse_frame(f.data(), f.size(), p, true), wire::ParseResult::Ok);
        to.qp->on_packet(p, 0);
        ++n;
    }
    return n;
}

TEST(UdQp, StateRules) {
    Endpoint e(0x20);
    QpAttr a{};
    a.qp_state = QpState::Init;
    a.qkey = 0x1234;
    /* RESET -> INIT needs the Q_Key. */
    EXPECT_EQ(e.qp->modify(a, kQpState | kQpPkeyIndex | kQpPort).code(), EINVAL);
    /* Connected-QP attributes are refused. */
    EXPECT_EQ(e.qp->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey | kQpAccessFlags).code(),
              EINVAL);
    ASSERT_TRUE(e.qp->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey));
    EXPECT_EQ(e.qp->qkey(), 0x1234u);
    a.qp_state = QpState::Rtr;
    EXPECT_EQ(e.qp->modify(a, kQpState | kQpAv).code(), EINVAL);
    EXPECT_EQ(e.qp->modify(a, kQpState | kQpDestQpn).code(), EINVAL);
    EXPECT_EQ(e.qp->modify(a, kQpState | kQpPathMtu).code(), EINVAL);
    ASSERT_TRUE(e.qp->modify(a, kQpState));
    ud::AddressHandle ah = ah_v4(0x0A4D0003, 0x0A4D0002, kMacA, kMacB);
    EXPECT_EQ(e.qp->post_send(e.send(ah, 0x21, 0, 8)).code(), EINVAL); /* not RTS */
    a.qp_state = QpState::Rts;
    EXPECT_EQ(e.qp->modify(a, kQpState).code(), EINVAL); /* sq_psn required */
    a.sq_psn = 5;
    ASSERT_TRUE(e.qp->modify(a, kQpState | kQpSqPsn));
    a.qkey = 0x5678;
    ASSERT_TRUE(e.qp->modify(a, kQpQkey)); /* RTS -> RTS may change the Q_Key */
    EXPECT_EQ(e.qp->qkey(), 0x5678u);
    UdSendWr w = e.send(ah, 0x21, 0, 8);
    w.wr.opcode = WrOpcode::RdmaWrite;
    EXPECT_EQ(e.qp->post_send(w).code(), EINVAL);
    a.qp_state = QpState::Reset;
    ASSERT_TRUE(e.qp->modify(a, kQpState));
    EXPECT_EQ(e.qp->state(), QpState::Reset);
}

TEST(UdQp, Qp1QkeyIsFixed) {
    Endpoint e(1);
    EXPECT_EQ(e.qp->qkey(), kGsiQkey);
    EXPECT_EQ(e.up(0x11111111).code(), EINVAL);
    EXPECT_TRUE(e.up(kGsiQkey));
}

/* Frames built by the QP for each UD SEND of ibv_ud_pingpong equal rxe's, byte for byte,
 * except the IPv4 identification (rxe's per-socket counter), hence also the IPv4 checksum
 * and the ICRC (which covers the identification); our ICRC must be valid on its own. */
TEST(UdQp, SendMatchesRxeCapture) {
    std::string err;
    const auto frames = test::read_eth_capture(test::vectors_dir() + "/rxe/ud_pingpong.pcap", err);
    ASSERT_TRUE(err.empty()) << err;
    size_t compared = 0;
    for (const auto &f : frames) {
        wire::ParsedPacket p{};
        if (wire::parse_frame(f.data(), f.size(), p, true) != wire::ParseResult::Ok ||
            p.bth.opcode != wire::kUdSendOnly)
            continue;
        Endpoint e(p.deth.src_qp, Mtu::Mtu1024);
        ASSERT_TRUE(e.up(p.deth.qkey, p.bth.psn));
        std::memcpy(e.buf.data(), p.payload, p.payload_len);
        ud::AddressHandle ah;
        ah.eth = p.eth;
        std::memcpy(ah.sgid, p.src_gid, 16);
        std::memcpy(ah.dgid, p.dst_gid, 16);
        ah.traffic_class = static_cast<uint8_t>(p.dscp << 2 | p.ecn);
        ah.hop_limit = p.ttl;
        /* The WR asks for the QP's Q_Key (high bit set), as ibv_ud_pingpong does not but
         * must come out the same. */
        ASSERT_TRUE(e.qp->post_send(e.send(ah, p.bth.dest_qp, 0, p.payload_len, 0x80000000)));
        e.qp->progress(0);
        ASSERT_EQ(e.port.frames.size(), 1u);
        const std::vector<uint8_t> &mine = e.port.frames.front();
        ASSERT_EQ(mine.size(), f.size());
        for (size_t i = 0; i < f.size(); ++i) {
            const bool ip_id_or_csum = (i >= 18 && i < 20) || (i >= 24 && i < 26);
            const bool icrc = i >= f.size() - 4;
            if (!ip_id_or_csum && !icrc) {
                ASSERT_EQ(mine[i], f[i]) << "byte " << i << " of frame " << compared;
            }
        }
        wire::ParsedPacket q{};
        ASSERT_EQ(wire::parse_frame(mine.data(), mine.size(), q, true), wire::ParseResult::Ok);
        ASSERT_EQ(e.scq.wcs.size(), 1u);
        EXPECT_EQ(e.scq.wcs[0].status, WcStatus::Success);
        EXPECT_EQ(e.scq.wcs[0].byte_len, p.payload_len);
        ++compared;
    }
    EXPECT_GE(compared, 4u);
}

TEST(UdQp, ExchangeWithGrh) {
    Endpoint a(0x12), b(0x13);
    ASSERT_TRUE(a.up(0x11111111));
    ASSERT_TRUE(b.up(0x11111111));
    ud::AddressHandle ah = ah_v4(0x0A4D0003, 0x0A4D0002, kMacA, kMacB);
    ah.traffic_class = 0x68; /* DSCP 26 */
    ah.hop_limit = 17;
    for (uint32_t i = 0; i < 100; ++i)
        a.buf[i] = static_cast<uint8_t>(i * 7);
    ASSERT_TRUE(b.recv(1, 1000, 40 + 100));
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 100)));
    EXPECT_EQ(deliver(a, b), 1u);
    ASSERT_EQ(b.rcq.wcs.size(), 1u);
    const Wc &wc = b.rcq.wcs[0];
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.opcode, WcOpcode::Recv);
    EXPECT_EQ(wc.byte_len, 140u);
    EXPECT_EQ(wc.src_qp, 0x12u);
    EXPECT_EQ(wc.qp_num, 0x13u);
    EXPECT_EQ(wc.wc_flags, static_cast<uint32_t>(kWcGrh));
    /* GRH for RoCEv2 over IPv4, as rxe: 20 zero bytes, then the IPv4 header. */
    const uint8_t *g = b.buf.data() + 1000;
    for (int i = 0; i < 20; ++i)
        EXPECT_EQ(g[i], 0) << i;
    EXPECT_EQ(g[20], 0x45);
    EXPECT_EQ(g[21], 0x68); /* TOS */
    EXPECT_EQ(g[28], 17);   /* TTL */
    EXPECT_EQ(g[29], 17);   /* UDP */
    const uint8_t src[4] = {10, 77, 0, 3}, dst[4] = {10, 77, 0, 2};
    EXPECT_EQ(0, std::memcmp(g + 32, src, 4));
    EXPECT_EQ(0, std::memcmp(g + 36, dst, 4));
    EXPECT_EQ(wire::ipv4_checksum(g + 20), g[30] << 8 | g[31]); /* valid, as received */
    EXPECT_EQ(0, std::memcmp(g + 40, a.buf.data(), 100));
    EXPECT_EQ(a.ctr.tx_packets, 1u);
    EXPECT_EQ(b.ctr.rx_packets, 1u);
    EXPECT_EQ(a.scq.wcs.size(), 1u);

    /* SEND_WITH_IMM, scattered over two SGEs (the GRH split across them). */
    RecvWr r;
    r.wr_id = 2;
    r.sg_list[0] = {reinterpret_cast<uint64_t>(b.buf.data() + 2000), 30, b.lkey};
    r.sg_list[1] = {reinterpret_cast<uint64_t>(b.buf.data() + 3000), 200, b.lkey};
    r.num_sge = 2;
    ASSERT_TRUE(b.qp->post_recv(r));
    UdSendWr w = a.send(ah, 0x13, 0, 50);
    w.wr.opcode = WrOpcode::SendWithImm;
    w.wr.imm_data = 0xCAFEF00D;
    ASSERT_TRUE(a.qp->post_send(w));
    deliver(a, b);
    ASSERT_EQ(b.rcq.wcs.size(), 2u);
    EXPECT_EQ(b.rcq.wcs[1].wc_flags, static_cast<uint32_t>(kWcGrh | kWcWithImm));
    EXPECT_EQ(b.rcq.wcs[1].imm_data, 0xCAFEF00Du);
    EXPECT_EQ(b.rcq.wcs[1].byte_len, 90u);
    /* GRH bytes 30..39 went to the second SGE: the source address is at its offset 2. */
    EXPECT_EQ(0, std::memcmp(b.buf.data() + 3002, src, 4));
    EXPECT_EQ(0, std::memcmp(b.buf.data() + 3000 + 10, a.buf.data(), 50));
}

/* kSendInline: verbs copies the payload at post, so the buffer (here freed at once: ASan
 * reports a later read) is the caller's again when post_send returns, although the
 * datagram leaves only on the next progress(). Above the inline limit: refused. */
TEST(UdQp, InlinePayloadIsCopiedAtPost) {
    Endpoint a(0x12), b(0x13);
    ASSERT_TRUE(a.up(0x11111111));
    ASSERT_TRUE(b.up(0x11111111));
    const ud::AddressHandle ah = ah_v4(0x0A4D0003, 0x0A4D0002, kMacA, kMacB);
    ASSERT_TRUE(b.recv(1, 0, 40 + 64));
    auto src = std::make_unique<uint8_t[]>(64);
    for (uint32_t i = 0; i < 64; ++i)
        src[i] = static_cast<uint8_t>(i * 3 + 1);
    std::vector<uint8_t> want(src.get(), src.get() + 64);
    UdSendWr u = a.send(ah, 0x13, 0, 64);
    u.wr.send_flags = kSendInline;
    u.wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.get()), 40, 0xdead}; /* lkey ignored */
    u.wr.sg_list[1] = {reinterpret_cast<uint64_t>(src.get() + 40), 24, 0};
    u.wr.num_sge = 2;
    ASSERT_TRUE(a.qp->post_send(u));
    std::memset(src.get(), 0xEE, 64);
    src.reset();
    EXPECT_EQ(deliver(a, b), 1u);
    ASSERT_EQ(b.rcq.wcs.size(), 1u);
    EXPECT_EQ(b.rcq.wcs[0].status, WcStatus::Success);
    EXPECT_EQ(b.rcq.wcs[0].byte_len, 40u + 64);
    EXPECT_EQ(0, std::memcmp(b.buf.data() + 40, want.data(), 64)) << "sent what was posted";

    UdSendWr big = a.send(ah, 0x13, 0, 65);
    big.wr.send_flags = kSendInline;
    EXPECT_EQ(a.qp->post_send(big).code(), EINVAL) << "above max_inline_data (64)";
}

TEST(UdQp, GrhIpv6) {
    Endpoint a(0x12), b(0x13);
    ASSERT_TRUE(a.up(7));
    ASSERT_TRUE(b.up(7));
    ud::AddressHandle ah;
    std::memcpy(ah.eth.src, kMacA, 6);
    std::memcpy(ah.eth.dst, kMacB, 6);
    const uint8_t s6[16] = {0xfd, 0x77, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3};
    const uint8_t d6[16] = {0xfd, 0x77, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    std::memcpy(ah.sgid, s6, 16);
    std::memcpy(ah.dgid, d6, 16);
    ah.hop_limit = 9;
    ah.flow_label = 0x12345;
    ASSERT_TRUE(b.recv(1, 0, 4096));
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 10)));
    deliver(a, b);
    ASSERT_EQ(b.rcq.wcs.size(), 1u);
    const uint8_t *g = b.buf.data();
    EXPECT_EQ(g[0] >> 4, 6);
    EXPECT_EQ(((g[1] & 0xF) << 16 | g[2] << 8 | g[3]), 0x12345);
    EXPECT_EQ(g[6], 17); /* next header UDP */
    EXPECT_EQ(g[7], 9);
    EXPECT_EQ(0, std::memcmp(g + 8, s6, 16));
    EXPECT_EQ(0, std::memcmp(g + 24, d6, 16));
}

TEST(UdQp, QkeyMismatchIsACountedDrop) {
    Endpoint a(0x12), b(0x13);
    ASSERT_TRUE(a.up(0x11111111));
    ASSERT_TRUE(b.up(0x11111111));
    ud::AddressHandle ah = ah_v4(0x0A4D0003, 0x0A4D0002, kMacA, kMacB);
    ASSERT_TRUE(b.recv(1, 0, 1000));
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 10, 0x22222222)));
    deliver(a, b);
    EXPECT_EQ(b.ctr.rx_qkey_mismatch, 1u);
    EXPECT_TRUE(b.rcq.wcs.empty());
    EXPECT_EQ(b.qp->recv_queue_depth(), 1u); /* the WQE is still there */
    /* The right one is then delivered. */
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 10, 0x11111111)));
    deliver(a, b);
    EXPECT_EQ(b.rcq.wcs.size(), 1u);
    /* No WQE: counted, no completion, the QP stays up (UD has no RNR). */
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 10)));
    deliver(a, b);
    EXPECT_EQ(b.ctr.rx_no_wqe, 1u);
    EXPECT_EQ(b.qp->state(), QpState::Rts);
}

TEST(UdQp, MtuLimit) {
    Endpoint a(0x12, Mtu::Mtu1024);
    ASSERT_TRUE(a.up(1));
    ud::AddressHandle ah = ah_v4(0x0A4D0003, 0x0A4D0002, kMacA, kMacB);
    const Status s = a.qp->post_send(a.send(ah, 0x13, 0, 1025));
    EXPECT_EQ(s.code(), EMSGSIZE);
    EXPECT_NE(s.message().find("path MTU"), std::string::npos) << s.message();
    EXPECT_EQ(a.ctr.post_mtu_refused, 1u);
    EXPECT_EQ(a.qp->send_queue_depth(), 0u);
    EXPECT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 1024)));
    a.qp->progress(0);
    ASSERT_EQ(a.port.frames.size(), 1u);
    /* Headers (14+20+8+12+8) + 1024 + ICRC. */
    EXPECT_EQ(a.port.frames[0].size(), 62u + 1024 + 4);
}

/* A datagram larger than the receiver's MTU (a peer with a bigger MTU) is not a UD message
 * there: dropped and counted, even with a receive buffer big enough for it. */
TEST(UdQp, OverMtuReceiveIsACountedDrop) {
    Endpoint a(0x12, Mtu::Mtu4096), b(0x13, Mtu::Mtu1024);
    ASSERT_TRUE(a.up(1));
    ASSERT_TRUE(b.up(1));
    ud::AddressHandle ah = ah_v4(0x0A4D0003, 0x0A4D0002, kMacA, kMacB);
    ASSERT_TRUE(b.recv(5, 0, 4096));
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 2048)));
    deliver(a, b);
    EXPECT_EQ(b.ctr.rx_over_mtu, 1u);
    EXPECT_TRUE(b.rcq.wcs.empty());
    EXPECT_EQ(b.qp->recv_queue_depth(), 1u);
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 1024)));
    deliver(a, b);
    ASSERT_EQ(b.rcq.wcs.size(), 1u);
    EXPECT_EQ(b.rcq.wcs[0].byte_len, 40u + 1024);
}

TEST(UdQp, MulticastRefused) {
    Endpoint a(0x12), b(0x13);
    ASSERT_TRUE(a.up(1));
    ASSERT_TRUE(b.up(1));
    ud::AddressHandle mc = ah_v4(0x0A4D0003, 0xE0000001, kMacA, kMacB); /* 224.0.0.1 */
    Status s = check_ah(mc);
    EXPECT_EQ(s.code(), EOPNOTSUPP);
    EXPECT_NE(s.message().find("multicast"), std::string::npos);
    EXPECT_EQ(a.qp->post_send(a.send(mc, 0x13, 0, 8)).code(), EOPNOTSUPP);
    ud::AddressHandle ah = ah_v4(0x0A4D0003, 0x0A4D0002, kMacA, kMacB);
    EXPECT_EQ(a.qp->post_send(a.send(ah, kMulticastQpn, 0, 8)).code(), EOPNOTSUPP);
    /* A multicast frame arriving anyway is a counted drop. */
    ASSERT_TRUE(b.recv(1, 0, 1000));
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 8)));
    a.qp->progress(0);
    wire::ParsedPacket p{};
    ASSERT_EQ(wire::parse_frame(a.port.frames[0].data(), a.port.frames[0].size(), p, true),
              wire::ParseResult::Ok);
    p.bth.dest_qp = kMulticastQpn;
    b.qp->on_packet(p, 0);
    EXPECT_EQ(b.ctr.rx_multicast, 1u);
    EXPECT_TRUE(b.rcq.wcs.empty());
}

TEST(UdQp, ShortBufferAndPortBusy) {
    Endpoint a(0x12), b(0x13);
    ASSERT_TRUE(a.up(1));
    ASSERT_TRUE(b.up(1));
    ud::AddressHandle ah = ah_v4(0x0A4D0003, 0x0A4D0002, kMacA, kMacB);
    /* Port busy: the WR waits and goes on the next progress(). */
    a.port.busy = true;
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 20)));
    a.qp->progress(0);
    EXPECT_EQ(a.ctr.tx_port_busy, 1u);
    EXPECT_EQ(a.qp->send_queue_depth(), 1u);
    a.port.busy = false;
    /* A buffer with no room for GRH + payload: the datagram is dropped and counted, the
     * receive stays posted and the QP in RTS (rxe's responder, RESPST_ERR_LENGTH on a
     * UD QP without SRQ: class D, drop_msg, no completion, no error state). A sender
     * must not be able to kill a UD QP with one datagram. */
    ASSERT_TRUE(b.recv(1, 0, 40 + 19));
    deliver(a, b);
    EXPECT_TRUE(b.rcq.wcs.empty());
    EXPECT_EQ(b.qp->state(), QpState::Rts);
    EXPECT_EQ(b.qp->recv_queue_depth(), 1u);
    EXPECT_EQ(b.ctr.rx_too_long, 1u);
    /* A datagram that fits the same receive still lands in it. */
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 19)));
    deliver(a, b);
    ASSERT_EQ(b.rcq.wcs.size(), 1u);
    EXPECT_EQ(b.rcq.wcs[0].status, WcStatus::Success);
    EXPECT_EQ(b.rcq.wcs[0].wr_id, 1u);
    EXPECT_EQ(b.rcq.wcs[0].byte_len, 40u + 19);
    EXPECT_EQ(b.ctr.rx_packets, 1u);
    /* In ERR a frame is a counted drop. */
    QpAttr e{};
    e.qp_state = QpState::Err;
    ASSERT_TRUE(b.qp->modify(e, kQpState));
    ASSERT_TRUE(a.qp->post_send(a.send(ah, 0x13, 0, 20)));
    deliver(a, b);
    EXPECT_EQ(b.ctr.rx_bad_state, 1u);
}

} // namespace

namespace {

/* QP1 end to end: rping's REQ frame into a UD QP1, the MAD read back from the receive
 * buffer after the GRH and decoded. */
TEST(UdQp, Qp1ReceivesCapturedCmReq) {
    std::string err;
    const auto frames = test::read_eth_capture(test::vectors_dir() + "/rxe/rping.pcap", err);
    ASSERT_TRUE(err.empty()) << err;
    wire::ParsedPacket p{};
    ASSERT_EQ(wire::parse_frame(frames.at(0).data(), frames[0].size(), p, true),
              wire::ParseResult::Ok);
    ASSERT_EQ(p.bth.dest_qp, 1u);
    Endpoint gsi(1);
    ASSERT_TRUE(gsi.up(kGsiQkey));
    ASSERT_TRUE(gsi.recv(9, 0, kGrhLen + cm::kMadLen));
    gsi.qp->on_packet(p, 0);
    ASSERT_EQ(gsi.rcq.wcs.size(), 1u);
    const Wc &wc = gsi.rcq.wcs[0];
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.src_qp, 1u); /* the CM sends from its own QP1 */
    EXPECT_EQ(wc.byte_len, kGrhLen + cm::kMadLen);
    cm::CmMad m{};
    ASSERT_EQ(cm::parse_cm_mad(gsi.buf.data() + kGrhLen, cm::kMadLen, m), cm::MadError::Ok);
    EXPECT_EQ(m.hdr.attr_id, static_cast<uint16_t>(cm::CmAttr::Req));
    EXPECT_EQ(m.req.service_id, cm::ip_service_id(cm::kRdmaPsTcp, 7174));
    /* The GRH names the sender: 10.77.0.3. */
    const uint8_t src[4] = {10, 77, 0, 3};
    EXPECT_EQ(0, std::memcmp(gsi.buf.data() + 32, src, 4));
    /* A P_Key of another partition is a counted drop. */
    p.bth.pkey = 0x8001;
    ASSERT_TRUE(gsi.recv(10, 0, kGrhLen + cm::kMadLen));
    gsi.qp->on_packet(p, 0);
    EXPECT_EQ(gsi.ctr.rx_pkey_mismatch, 1u);
    EXPECT_EQ(gsi.rcq.wcs.size(), 1u);
}

/* A datagram to QP1 longer than a MAD (up to the port's MTU, so lib/ud's MTU rule lets
 * it through) does not fit the GSI's receive slot: it is dropped and counted, QP1 stays
 * in RTS with its slots posted, and the next MAD is received. Before, the length error
 * took QP1 to ERR and nothing brought it back: the CM was deaf for good. */
TEST(UdQp, Qp1SurvivesAnOversizedDatagram) {
    Endpoint peer(1), gsi(1);
    ASSERT_TRUE(peer.up(kGsiQkey));
    ASSERT_TRUE(gsi.up(kGsiQkey));
    ASSERT_TRUE(gsi.recv(9, 0, kGrhLen + cm::kMadLen));
    ASSERT_TRUE(gsi.recv(10, 512, kGrhLen + cm::kMadLen));
    ud::AddressHandle ah = ah_v4(0x0A4D0003, 0x0A4D0002, kMacA, kMacB);
    ASSERT_TRUE(peer.qp->post_send(peer.send(ah, 1, 0, 1000)));
    ASSERT_EQ(deliver(peer, gsi), 1u);
    EXPECT_EQ(gsi.ctr.rx_too_long, 1u);
    EXPECT_TRUE(gsi.rcq.wcs.empty());
    EXPECT_EQ(gsi.qp->state(), QpState::Rts);
    EXPECT_EQ(gsi.qp->recv_queue_depth(), 2u);
    ASSERT_TRUE(peer.qp->post_send(peer.send(ah, 1, 0, cm::kMadLen)));
    ASSERT_EQ(deliver(peer, gsi), 1u);
    ASSERT_EQ(gsi.rcq.wcs.size(), 1u);
    EXPECT_EQ(gsi.rcq.wcs[0].status, WcStatus::Success);
    EXPECT_EQ(gsi.rcq.wcs[0].wr_id, 9u);
    EXPECT_EQ(gsi.rcq.wcs[0].byte_len, kGrhLen + cm::kMadLen);
}

} // namespace
