/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/net IPv6 (ND, ICMPv6 echo, neighbour cache, next hop, VLAN push) and the RoCEv2
 * over IPv6 / 802.1Q frames of the rxe-features vectors: droce answers rxe's neighbour
 * solicitation with the bytes rxe's kernel sent, the RoCE frames parse with a valid ICRC,
 * and the frames droce builds from the QP state alone equal rxe's. */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "net_ipv6.h"
#include "pcap_read.h"
#include "wire_packet.h"

using namespace droce;
using namespace droce::net;

namespace {

Ip6 ip6(const char *s) {
    Ip6 a{};
    EXPECT_TRUE(parse_ipv6(s, &a)) << s;
    return a;
}

constexpr Mac kMac2 = {0x52, 0x54, 0x00, 0x4d, 0x14, 0x02}; /* rxe VM, fd77:20::2 */
constexpr Mac kMac3 = {0x52, 0x54, 0x00, 0x4d, 0x14, 0x03}; /* rxe VM, fd77:20::3 */

Iface6 vm_iface(const Mac &mac, const char *addr) {
    Iface6 f = make_iface6(mac);
    EXPECT_TRUE(f.add(ip6(addr), 64));
    return f;
}

std::vector<std::vector<uint8_t>> capture(const char *name) {
    std::string err;
    auto frames = test::read_eth_capture(test::vectors_dir() + "/rxe-features/" + name, err);
    EXPECT_TRUE(err.empty()) << name << ": " << err;
    return frames;
}

} // namespace

TEST(NetIpv6, ParseAndFormat) {
    Ip6 a;
    uint8_t len = 0;
    ASSERT_TRUE(parse_ipv6_cidr("fd77:20::2/64", &a, &len));
    EXPECT_EQ(len, 64);
    EXPECT_EQ(ipv6_str(a.data()), "fd77:20::2");
    EXPECT_FALSE(parse_ipv6_cidr("fd77:20::2", &a, &len)); /* the prefix is required */
    EXPECT_FALSE(parse_ipv6_cidr("fd77:20::2/129", &a, &len));
    EXPECT_FALSE(parse_ipv6_cidr("fd77:20::g/64", &a, &len));
    EXPECT_FALSE(parse_ipv6_cidr("ff02::1/64", &a, &len));
    EXPECT_FALSE(parse_ipv6_cidr("::/0", &a, &len));
}

TEST(NetIpv6, LinkLocalSolicitedNodeAndMulticastMac) {
    const Iface6 f = vm_iface(kMac3, "fd77:20::3");
    EXPECT_EQ(ipv6_str(f.addrs[0].addr.data()), "fe80::5054:ff:fe4d:1403");
    const Ip6 sn = solicited_node(ip6("fd77:20::3").data());
    EXPECT_EQ(ipv6_str(sn.data()), "ff02::1:ff00:3");
    const Mac m = ipv6_multicast_mac(sn.data());
    EXPECT_EQ(m, (Mac{0x33, 0x33, 0xff, 0x00, 0x00, 0x03}));
    EXPECT_TRUE(f.accepts_multicast_mac(m.data()));
    const uint8_t all_nodes[6] = {0x33, 0x33, 0, 0, 0, 1};
    EXPECT_TRUE(f.accepts_multicast_mac(all_nodes));
    const uint8_t other[6] = {0x33, 0x33, 0xff, 0x00, 0x00, 0x09};
    EXPECT_FALSE(f.accepts_multicast_mac(other));
}

TEST(NetIpv6, GidTableHoldsIpv6AfterIpv4) {
    Gid g6{};
    std::memcpy(g6.raw, ip6("fd77:20::3").data(), 16);
    const GidTable t(kMac3, {0x0A4D1403}, {g6});
    ASSERT_EQ(t.size(), 3u);
    EXPECT_TRUE(GidTable::is_ipv4_mapped(*t.at(1)));
    EXPECT_EQ(t.find(g6.raw), 2); /* the rxe VMs' IPv6 GID index too */
}

TEST(NetIpv6, NextHopOnLinkGatewayOrError) {
    Iface6 f = vm_iface(kMac3, "fd77:20::3");
    Result<Ip6> r = next_hop6(f, ip6("fd77:20::2").data());
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, ip6("fd77:20::2"));
    r = next_hop6(f, ip6("fe80::1").data()); /* link-local: always on the link */
    ASSERT_TRUE(r);
    r = next_hop6(f, ip6("fd77:99::2").data());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ENETUNREACH);
    f.gateway = ip6("fd77:20::1");
    r = next_hop6(f, ip6("fd77:99::2").data());
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, ip6("fd77:20::1"));
    EXPECT_EQ(source_for(f, ip6("fe80::1").data()), f.addrs[0].addr);
    EXPECT_EQ(source_for(f, ip6("fd77:20::2").data()), ip6("fd77:20::3"));
}

TEST(NetIpv4, NextHopThroughGateway) {
    Iface f;
    f.ip = 0x0A4D0064;
    f.prefix_len = 24;
    EXPECT_FALSE(next_hop(f, 0x0A4E0002));
    f.gateway = 0x0A4D0001;
    Result<uint32_t> r = next_hop(f, 0x0A4E0002);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, 0x0A4D0001u);
    r = next_hop(f, 0x0A4D0002); /* on-link stays direct */
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, 0x0A4D0002u);
}

/* Frame 8 of the IPv6 capture is .2's NS for fd77:20::3; frame 9 is .3's kernel answer.
 * droce in .3's place must answer with exactly those bytes, and learn .2's MAC. */
TEST(NetIpv6Vectors, AnswersRxeSolicitationByteForByte) {
    const auto frames = capture("rc_pingpong_ipv6.pcap");
    ASSERT_GE(frames.size(), 17u);
    for (const auto &[ns_i, na_i, mac, addr, peer_mac] :
         {std::tuple{7, 8, kMac3, "fd77:20::3", kMac2},
          std::tuple{15, 16, kMac2, "fd77:20::2", kMac3}}) {
        SCOPED_TRACE(addr);
        const Iface6 f = vm_iface(mac, addr);
        std::vector<uint8_t> buf = frames[ns_i];
        buf.resize(256);
        NeighTable6 nt;
        Net6Counters c;
        const size_t n = handle_icmp6(f, buf.data(), frames[ns_i].size(), buf.size(), 14, nt, 1, c);
        ASSERT_EQ(n, frames[na_i].size());
        EXPECT_EQ(std::vector<uint8_t>(buf.begin(), buf.begin() + static_cast<long>(n)),
                  frames[na_i]);
        EXPECT_EQ(c.nd_solicits_received, 1u);
        EXPECT_EQ(c.nd_adverts_sent, 1u);
        const Neighbor6 *nb = nt.lookup(frames[ns_i].data() + 14 + 8);
        ASSERT_NE(nb, nullptr);
        EXPECT_EQ(nb->mac, peer_mac);
    }
}

/* Resolution: our NS is well formed (the other side's droce answers it), and the NA in
 * the capture resolves a pending entry; an unsolicited one is counted, not learned. */
TEST(NetIpv6Vectors, ResolvesByNsAndLearnsAdvert) {
    const Iface6 a = vm_iface(kMac2, "fd77:20::2");
    const Iface6 b = vm_iface(kMac3, "fd77:20::3");
    NeighTable6 na, nb;
    Net6Counters ca, cb;
    Mac mac{};
    const Ip6 tb = ip6("fd77:20::3");
    ASSERT_EQ(na.resolve(tb.data(), 0, 1000, &mac), ResolveStep::SendProbe);
    EXPECT_EQ(na.resolve(tb.data(), 10, 1000, &mac), ResolveStep::Wait);
    uint8_t frame[256];
    const size_t n = build_ns(a, tb.data(), frame, sizeof frame);
    ASSERT_EQ(n, kNdFrameLen);
    EXPECT_TRUE(b.accepts_multicast_mac(frame));
    const size_t r = handle_icmp6(b, frame, n, sizeof frame, 14, nb, 1, cb);
    ASSERT_EQ(r, kNdFrameLen);
    EXPECT_EQ(std::memcmp(frame, kMac2.data(), 6), 0);
    EXPECT_EQ(handle_icmp6(a, frame, r, sizeof frame, 14, na, 2, ca), 0u);
    EXPECT_EQ(ca.nd_adverts_received, 1u);
    ASSERT_EQ(na.resolve(tb.data(), 20, 1000, &mac), ResolveStep::Resolved);
    EXPECT_EQ(mac, kMac3);

    /* The capture's NA (to .3) arrives at a .3 that never asked. */
    const auto frames = capture("rc_pingpong_ipv6.pcap");
    std::vector<uint8_t> na_frame = frames[16];
    NeighTable6 fresh;
    Net6Counters cf;
    EXPECT_EQ(handle_icmp6(b, na_frame.data(), na_frame.size(), na_frame.size(), 14, fresh, 1, cf),
              0u);
    EXPECT_EQ(cf.nd_drop_unsolicited_advert, 1u);
    EXPECT_EQ(fresh.size(), 0u);
}

TEST(NetIpv6, BadNdAndEchoAreCounted) {
    const Iface6 a = vm_iface(kMac2, "fd77:20::2");
    const Iface6 b = vm_iface(kMac3, "fd77:20::3");
    NeighTable6 nt;
    uint8_t ns[128];
    const size_t n = build_ns(a, ip6("fd77:20::3").data(), ns, sizeof ns);
    {
        uint8_t f[128];
        std::memcpy(f, ns, n);
        f[14 + 7] = 254; /* crossed a router */
        Net6Counters c;
        EXPECT_EQ(handle_icmp6(b, f, n, sizeof f, 14, nt, 0, c), 0u);
        EXPECT_EQ(c.icmp6_drop_bad_nd, 1u);
    }
    {
        uint8_t f[128];
        std::memcpy(f, ns, n);
        f[n - 1] ^= 1;
        Net6Counters c;
        EXPECT_EQ(handle_icmp6(b, f, n, sizeof f, 14, nt, 0, c), 0u);
        EXPECT_EQ(c.icmp6_drop_bad_checksum, 1u);
    }
    {
        uint8_t f[128];
        std::memcpy(f, ns, n);
        Net6Counters c;
        EXPECT_EQ(handle_icmp6(a, f, n, sizeof f, 14, nt, 0, c), 0u); /* target is b's */
        EXPECT_EQ(c.icmp6_drop_not_for_us, 1u);
        EXPECT_EQ(handle_icmp6(b, f, n - 1, sizeof f, 14, nt, 0, c), 0u);
        EXPECT_EQ(c.icmp6_drop_too_short, 1u);
        EXPECT_EQ(handle_icmp6(b, f, n, n - 1, 14, nt, 0, c), 0u);
        EXPECT_EQ(c.icmp6_drop_no_room, 1u);
    }
    /* Echo: request a -> b, b replies with addresses swapped and a valid checksum. */
    uint8_t e[14 + 40 + 16] = {};
    std::memcpy(e, kMac3.data(), 6);
    std::memcpy(e + 6, kMac2.data(), 6);
    e[12] = 0x86;
    e[13] = 0xdd;
    e[14] = 0x60;
    e[14 + 5] = 16;
    e[14 + 6] = kIpProtoIcmpv6;
    e[14 + 7] = 64;
    std::memcpy(e + 14 + 8, ip6("fd77:20::2").data(), 16);
    std::memcpy(e + 14 + 24, ip6("fd77:20::3").data(), 16);
    uint8_t *m = e + 54;
    m[0] = 128;
    m[4] = 0x12;
    m[8] = 'p';
    const uint16_t ck = icmp6_checksum(e + 14, m, 16);
    m[2] = static_cast<uint8_t>(ck >> 8);
    m[3] = static_cast<uint8_t>(ck);
    Net6Counters c;
    ASSERT_EQ(handle_icmp6(b, e, sizeof e, sizeof e, 14, nt, 0, c), sizeof e);
    EXPECT_EQ(c.icmp6_echo_replies, 1u);
    EXPECT_EQ(m[0], 129);
    EXPECT_EQ(icmp6_checksum(e + 14, m, 16), 0);
    EXPECT_EQ(std::memcmp(e + 14 + 8, ip6("fd77:20::3").data(), 16), 0);
    EXPECT_EQ(std::memcmp(e, kMac2.data(), 6), 0);
    m[0] = 133; /* router solicitation: not ours to answer */
    m[2] = m[3] = 0;
    const uint16_t ck2 = icmp6_checksum(e + 14, m, 16);
    m[2] = static_cast<uint8_t>(ck2 >> 8);
    m[3] = static_cast<uint8_t>(ck2);
    EXPECT_EQ(handle_icmp6(b, e, sizeof e, sizeof e, 14, nt, 0, c), 0u);
    EXPECT_EQ(c.icmp6_drop_unhandled_type, 1u);
}

TEST(NetVlan, PushAndNsTagged) {
    Iface6 a = vm_iface(kMac2, "fd77:20::2");
    a.vlan_tci = (3 << 13) | 100;
    uint8_t f[128];
    const size_t n = build_ns(a, ip6("fd77:20::3").data(), f, sizeof f);
    ASSERT_EQ(n, kNdFrameLen + 4);
    EXPECT_EQ(f[12], 0x81);
    EXPECT_EQ(f[14], 0x60); /* PCP 3, VID 100 */
    EXPECT_EQ(f[15], 100);
    EXPECT_EQ(f[16], 0x86);
    Iface6 b = vm_iface(kMac3, "fd77:20::3");
    NeighTable6 nt;
    Net6Counters c;
    /* An address answers on its own VLAN only: b untagged refuses it, b on 100 answers. */
    EXPECT_EQ(handle_icmp6(b, f, n, sizeof f, 18, nt, 0, c), 0u);
    EXPECT_EQ(c.icmp6_drop_wrong_vlan, 1u);
    b.vlan_tci = 100;
    EXPECT_EQ(handle_icmp6(b, f, n, sizeof f, 18, nt, 0, c), n); /* reply keeps the tag */
    EXPECT_EQ(f[12], 0x81);
    EXPECT_EQ(f[15], 100);

    uint8_t g[64] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0x08, 0x06, 0xAA};
    EXPECT_EQ(vlan_push(g, 60, 64, 0x2064), 64u);
    EXPECT_EQ(g[12], 0x81);
    EXPECT_EQ(g[13], 0x00);
    EXPECT_EQ(g[14], 0x20);
    EXPECT_EQ(g[15], 0x64);
    EXPECT_EQ(g[16], 0x08);
    EXPECT_EQ(g[18], 0xAA);
    EXPECT_EQ(vlan_push(g, 61, 64, 1), 0u);
}

/* ---- RoCEv2 frames of the rxe-features captures ---- */

namespace {
struct RoceCount {
    int roce = 0, ok = 0;
};
RoceCount parse_all(const std::vector<std::vector<uint8_t>> &frames, bool want_ipv6,
                    bool want_vlan) {
    RoceCount rc;
    for (const auto &f : frames) {
        wire::ParsedPacket p;
        const wire::ParseResult r = wire::parse_frame(f.data(), f.size(), p, true);
        if (r == wire::ParseResult::NotRoce)
            continue;
        ++rc.roce;
        if (r != wire::ParseResult::Ok) {
            ADD_FAILURE() << wire::parse_result_name(r);
            continue;
        }
        EXPECT_EQ(p.ipv6, want_ipv6);
        EXPECT_EQ(p.eth.has_vlan, want_vlan);
        if (want_vlan) {
            EXPECT_EQ(p.eth.vlan_tci, (3u << 13) | 100u); /* PCP 3, VID 100 */
        }
        EXPECT_EQ(
            wire::icrc_compute_reference(f.data() + p.l3_off, p.frame_len - 4 - p.l3_off, p.ipv6),
            p.icrc);
        ++rc.ok;
    }
    return rc;
}

/* Builds the frame for the parsed packet's transport fields, with the L2/L3 fields from
 * the QP's path only (not from the packet): MACs, GIDs, TOS 0, hop limit 64, flow label
 * 0 and the rxe sport for QPNs lqpn/rqpn. */
std::vector<uint8_t> rebuild_from_path(const wire::ParsedPacket &p, const Mac &src, const Mac &dst,
                                       const Ip6 &sgid, const Ip6 &dgid, uint16_t tci,
                                       uint32_t lqpn, uint32_t rqpn, wire::FrameSpec::Seg &seg) {
    wire::FrameSpec s{};
    std::memcpy(s.eth.src, src.data(), 6);
    std::memcpy(s.eth.dst, dst.data(), 6);
    s.eth.has_vlan = tci != 0;
    s.eth.vlan_tci = tci;
    s.ipv6 = !wire::gid_is_ipv4(dgid.data());
    std::memcpy(s.src_gid, sgid.data(), 16);
    std::memcpy(s.dst_gid, dgid.data(), 16);
    s.tos = 0;
    s.ttl = 64;
    s.flow_label = 0; /* rxe leaves it 0 in the IPv6 header; the QPN hash goes to the sport */
    s.ip_id = p.ipv6 ? 0 : p.ip4.id;
    s.udp_sport = wire::udp_sport_for_flow_label(wire::rdma_calc_flow_label(lqpn, rqpn));
    s.bth = p.bth;
    s.reth = p.reth;
    s.aeth = p.aeth;
    s.imm = p.imm;
    seg.addr = p.payload;
    seg.len = p.payload_len;
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = p.payload_len;
    std::vector<uint8_t> out(wire::frame_len(s));
    out.resize(wire::build_frame(s, out.data(), out.size()));
    return out;
}
} // namespace

TEST(WireIpv6Vectors, RxePingpongParsesVerifiesAndRebuilds) {
    const auto frames = capture("rc_pingpong_ipv6.pcap");
    ASSERT_EQ(frames.size(), 533u);
    const RoceCount rc = parse_all(frames, true, false);
    EXPECT_EQ(rc.roce, 516);
    EXPECT_EQ(rc.ok, 516);
    int rebuilt = 0;
    for (const auto &f : frames) {
        wire::ParsedPacket p;
        if (wire::parse_frame(f.data(), f.size(), p, true) != wire::ParseResult::Ok)
            continue;
        const bool from3 = std::memcmp(f.data() + 6, kMac3.data(), 6) == 0;
        wire::FrameSpec::Seg seg;
        const auto out =
            rebuild_from_path(p, from3 ? kMac3 : kMac2, from3 ? kMac2 : kMac3,
                              ip6(from3 ? "fd77:20::3" : "fd77:20::2"),
                              ip6(from3 ? "fd77:20::2" : "fd77:20::3"), 0, 0x11, 0x11, seg);
        ASSERT_EQ(out, std::vector<uint8_t>(f.begin(), f.begin() + p.frame_len));
        ++rebuilt;
    }
    EXPECT_EQ(rebuilt, 516);
}

TEST(WireVlanVectors, RxePingpongPcp3ParsesVerifiesAndRebuilds) {
    const auto frames = capture("rc_pingpong_vlan_pcp3.pcap");
    ASSERT_EQ(frames.size(), 519u);
    const RoceCount rc = parse_all(frames, false, true);
    EXPECT_EQ(rc.roce, 500);
    EXPECT_EQ(rc.ok, 500);
    int rebuilt = 0;
    for (const auto &f : frames) {
        wire::ParsedPacket p;
        if (wire::parse_frame(f.data(), f.size(), p, true) != wire::ParseResult::Ok)
            continue;
        Mac src, dst;
        std::memcpy(src.data(), f.data() + 6, 6);
        std::memcpy(dst.data(), f.data(), 6);
        Ip6 sg, dg;
        std::memcpy(sg.data(), p.src_gid, 16);
        std::memcpy(dg.data(), p.dst_gid, 16);
        /* PCP = SL & 7 with SL 3: what egress-qos-map 0:3 gave rxe's frames. */
        const uint16_t tci = static_cast<uint16_t>(((3 & 7) << 13) | 100);
        wire::FrameSpec::Seg seg;
        const auto out = rebuild_from_path(p, src, dst, sg, dg, tci, 0x12, 0x12, seg);
        ASSERT_EQ(out, std::vector<uint8_t>(f.begin(), f.begin() + p.frame_len));
        ++rebuilt;
    }
    EXPECT_EQ(rebuilt, 500);
}
