/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/net units: ARP, ICMP echo, GID table, neighbour table, next hop. */
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "net.h"
#include "net_pfc.h"

using namespace droce;
using namespace droce::net;

namespace {

const Mac kOurMac = {0x02, 0x00, 0x00, 0x00, 0x01, 0x00};
const Mac kPeerMac = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
constexpr uint32_t kOurIp = 0x0A4D0064;  /* 10.77.0.100 */
constexpr uint32_t kPeerIp = 0x0A4D0002; /* 10.77.0.2 */

Iface iface() {
    Iface i;
    i.mac = kOurMac;
    i.ip = kOurIp;
    i.prefix_len = 24;
    return i;
}

/* A who-has request as Linux sends it (42 bytes + 18 bytes of padding). */
std::vector<uint8_t> arp_request(uint32_t target) {
    static const uint8_t head[38] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x52, 0x54, 0x00, 0x12,
                                     0x34, 0x56, 0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04,
                                     0x00, 0x01, 0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a, 0x4d,
                                     0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    std::vector<uint8_t> f(60, 0);
    std::memcpy(f.data(), head, sizeof(head));
    f[38] = static_cast<uint8_t>(target >> 24);
    f[39] = static_cast<uint8_t>(target >> 16);
    f[40] = static_cast<uint8_t>(target >> 8);
    f[41] = static_cast<uint8_t>(target);
    return f;
}

/* "ping -c1 -s 8 10.77.0.100" from the peer: id 0x1234, seq 1, 8 data bytes. */
std::vector<uint8_t> echo_request() {
    static const uint8_t bytes[50] = {0x02,
                                      0x00,
                                      0x00,
                                      0x00,
                                      0x01,
                                      0x00,
                                      0x52,
                                      0x54,
                                      0x00,
                                      0x12,
                                      0x34,
                                      0x56,
                                      0x08,
                                      0x00,
                                      /* IPv4 */ 0x45,
                                      0x00,
                                      0x00,
                                      0x24,
                                      0xab,
                                      0xcd,
                                      0x40,
                                      0x00,
                                      0x40,
                                      0x01,
                                      0x00,
                                      0x00,
                                      0x0a,
                                      0x4d,
                                      0x00,
                                      0x02,
                                      0x0a,
                                      0x4d,
                                      0x00,
                                      0x64,
                                      /* ICMP */ 0x08,
                                      0x00,
                                      0x00,
                                      0x00,
                                      0x12,
                                      0x34,
                                      0x00,
                                      0x01,
                                      /* data */ 'd',
                                      'r',
                                      'o',
                                      'c',
                                      'e',
                                      '!',
                                      0x00,
                                      0xff};
    std::vector<uint8_t> f(60, 0);
    std::memcpy(f.data(), bytes, sizeof(bytes));
    const uint16_t ipc = inet_checksum(f.data() + 14, 20);
    f[24] = static_cast<uint8_t>(ipc >> 8);
    f[25] = static_cast<uint8_t>(ipc);
    const uint16_t ic = inet_checksum(f.data() + 34, 16);
    f[36] = static_cast<uint8_t>(ic >> 8);
    f[37] = static_cast<uint8_t>(ic);
    return f;
}

} // namespace

TEST(NetArp, RepliesToRequestForOurIp) {
    NeighTable nt;
    NetCounters c;
    auto f = arp_request(kOurIp);
    ASSERT_EQ(handle_arp(iface(), f.data(), f.size(), 14, nt, 1000, c), ArpVerdict::Reply);
    const std::vector<uint8_t> want = {/* to the asker, from us */
                                       0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x02, 0x00, 0x00, 0x00,
                                       0x01, 0x00, 0x08, 0x06,
                                       /* Ethernet/IPv4, op 2 (reply) */
                                       0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02,
                                       /* sender: us */
                                       0x02, 0x00, 0x00, 0x00, 0x01, 0x00, 0x0a, 0x4d, 0x00, 0x64,
                                       /* target: the asker */
                                       0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0x0a, 0x4d, 0x00, 0x02};
    EXPECT_EQ(std::vector<uint8_t>(f.begin(), f.begin() + 42), want);
    EXPECT_EQ(c.arp_requests_received, 1u);
    EXPECT_EQ(c.arp_replies_sent, 1u);
    /* The asker was learned on the way. */
    const Neighbor *n = nt.lookup(kPeerIp);
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->state, NeighState::Reachable);
    EXPECT_EQ(n->mac, kPeerMac);
}

TEST(NetArp, IgnoresRequestForAnotherIpAndCountsIt) {
    NeighTable nt;
    NetCounters c;
    auto f = arp_request(0x0A4D0063);
    const auto before = f;
    EXPECT_EQ(handle_arp(iface(), f.data(), f.size(), 14, nt, 1000, c), ArpVerdict::Dropped);
    EXPECT_EQ(f, before);
    EXPECT_EQ(c.arp_drop_not_for_us, 1u);
    EXPECT_EQ(c.arp_replies_sent, 0u);
    EXPECT_EQ(nt.lookup(kPeerIp), nullptr) << "strangers are not learned from others' ARP";
}

TEST(NetArp, MalformedAndShortAreCounted) {
    NeighTable nt;
    NetCounters c;
    auto f = arp_request(kOurIp);
    EXPECT_EQ(handle_arp(iface(), f.data(), 30, 14, nt, 0, c), ArpVerdict::Dropped);
    EXPECT_EQ(c.arp_drop_too_short, 1u);
    f[14 + 1] = 6; /* hardware type 6 (IEEE 802) */
    EXPECT_EQ(handle_arp(iface(), f.data(), f.size(), 14, nt, 0, c), ArpVerdict::Dropped);
    EXPECT_EQ(c.arp_drop_malformed, 1u);
}

TEST(NetArp, ReplyTeachesNeighbour) {
    NeighTable nt;
    NetCounters c;
    Mac m;
    EXPECT_EQ(nt.resolve(kPeerIp, 0, 200, &m), ResolveStep::SendProbe);
    auto f = arp_request(kOurIp);
    f[21] = 2; /* make it a reply to us */
    EXPECT_EQ(handle_arp(iface(), f.data(), f.size(), 14, nt, 10, c), ArpVerdict::Learned);
    EXPECT_EQ(c.arp_replies_received, 1u);
    ASSERT_EQ(nt.resolve(kPeerIp, 20, 200, &m), ResolveStep::Resolved);
    EXPECT_EQ(m, kPeerMac);
}

TEST(NetArp, BuildsRequest) {
    uint8_t buf[64];
    ASSERT_EQ(build_arp_request(iface(), kPeerIp, buf, sizeof(buf)), 60u);
    ArpPacket p;
    ASSERT_TRUE(parse_arp(buf, 60, 14, &p));
    EXPECT_EQ(p.op, 1);
    EXPECT_EQ(p.spa, kOurIp);
    EXPECT_EQ(p.tpa, kPeerIp);
    EXPECT_EQ(p.sha, kOurMac);
    EXPECT_EQ(0, std::memcmp(buf, kBroadcastMac.data(), 6));
    EXPECT_EQ(buf[12], 0x08);
    EXPECT_EQ(buf[13], 0x06);
    EXPECT_EQ(build_arp_request(iface(), kPeerIp, buf, 59), 0u);
}

TEST(NetIcmp, EchoReplyBytesAndChecksums) {
    NetCounters c;
    auto f = echo_request();
    const auto req = f;
    const size_t n = handle_icmp(iface(), f.data(), f.size(), 14, c);
    ASSERT_EQ(n, 60u) << "a 50-byte reply is padded to the Ethernet minimum";
    EXPECT_EQ(c.icmp_echo_requests, 1u);
    EXPECT_EQ(c.icmp_echo_replies, 1u);
    /* L2 turned around */
    EXPECT_EQ(0, std::memcmp(f.data(), req.data() + 6, 6));
    EXPECT_EQ(0, std::memcmp(f.data() + 6, kOurMac.data(), 6));
    /* IP: addresses swapped, TTL 64, valid checksum */
    EXPECT_EQ(0, std::memcmp(f.data() + 26, req.data() + 30, 4));
    EXPECT_EQ(0, std::memcmp(f.data() + 30, req.data() + 26, 4));
    EXPECT_EQ(f[22], 64);
    EXPECT_EQ(inet_checksum(f.data() + 14, 20), 0);
    /* ICMP: type 0, id/seq/data kept, valid checksum */
    EXPECT_EQ(f[34], 0);
    EXPECT_EQ(f[35], 0);
    EXPECT_EQ(0, std::memcmp(f.data() + 38, req.data() + 38, 12));
    EXPECT_EQ(inet_checksum(f.data() + 34, 16), 0);
    /* Known answer: the only ICMP change is type 8 -> 0, so the checksum grows by 0x0800. */
    const uint16_t req_ck = static_cast<uint16_t>((req[36] << 8) | req[37]);
    const uint16_t rep_ck = static_cast<uint16_t>((f[36] << 8) | f[37]);
    uint32_t s = req_ck + 0x0800u;
    s = (s & 0xffff) + (s >> 16);
    EXPECT_EQ(rep_ck, s);
}

TEST(NetIcmp, DropsWithReasons) {
    NetCounters c;
    auto f = echo_request();
    f[37] ^= 1; /* ICMP checksum */
    EXPECT_EQ(handle_icmp(iface(), f.data(), f.size(), 14, c), 0u);
    EXPECT_EQ(c.icmp_drop_bad_checksum, 1u);

    f = echo_request();
    f[25] ^= 1; /* IP checksum */
    EXPECT_EQ(handle_icmp(iface(), f.data(), f.size(), 14, c), 0u);
    EXPECT_EQ(c.icmp_drop_bad_ip_header, 1u);

    Iface other = iface();
    other.ip = 0x0A4D0065;
    f = echo_request();
    EXPECT_EQ(handle_icmp(other, f.data(), f.size(), 14, c), 0u);
    EXPECT_EQ(c.icmp_drop_not_for_us, 1u);

    EXPECT_EQ(handle_icmp(iface(), f.data(), 40, 14, c), 0u);
    EXPECT_EQ(c.icmp_drop_too_short, 1u);
    EXPECT_EQ(c.icmp_echo_replies, 0u);
}

TEST(NetGid, LinkLocalEui64AndIpv4Mapped) {
    GidTable t(kPeerMac, {kOurIp});
    ASSERT_EQ(t.size(), 2u);
    /* 52:54:00:12:34:56 -> fe80::5054:ff:fe12:3456 (what `ip -6 addr` shows for it) */
    const uint8_t ll[16] = {0xfe, 0x80, 0,    0,    0,    0,    0,    0,
                            0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56};
    EXPECT_EQ(0, std::memcmp(t.at(0)->raw, ll, 16));
    const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 100};
    EXPECT_EQ(0, std::memcmp(t.at(1)->raw, v4, 16));
    EXPECT_EQ(t.at(2), nullptr);
    EXPECT_EQ(t.find(v4), 1);
    EXPECT_TRUE(GidTable::is_ipv4_mapped(*t.at(1)));
    EXPECT_FALSE(GidTable::is_ipv4_mapped(*t.at(0)));
    EXPECT_EQ(GidTable::to_ipv4(*t.at(1)), kOurIp);
    for (const auto &e : t.entries())
        EXPECT_STREQ(e.type, "RoCE v2");
}

TEST(NetNeigh, ResolveProbesThenRetriesOnSchedule) {
    NeighTable nt;
    Mac m;
    EXPECT_EQ(nt.resolve(kPeerIp, 1000, 200, &m), ResolveStep::SendProbe);
    EXPECT_EQ(nt.lookup(kPeerIp)->state, NeighState::Incomplete);
    EXPECT_EQ(nt.resolve(kPeerIp, 1100, 200, &m), ResolveStep::Wait);
    EXPECT_EQ(nt.resolve(kPeerIp, 1200, 200, &m), ResolveStep::SendProbe);
    EXPECT_EQ(nt.lookup(kPeerIp)->probes, 2u);
    ASSERT_TRUE(nt.update(kPeerIp, kPeerMac, 1300, false));
    EXPECT_EQ(nt.resolve(kPeerIp, 1400, 200, &m), ResolveStep::Resolved);
    EXPECT_EQ(m, kPeerMac);
    EXPECT_EQ(nt.lookup(kPeerIp)->updated_ns, 1300u);
}

TEST(NetNeigh, CapacityCollisionsAndRemove) {
    NeighTable nt(8);
    for (uint32_t i = 0; i < 8; ++i)
        ASSERT_TRUE(nt.update(0x0A000000 + i * 256, kPeerMac, i, true)) << i;
    EXPECT_FALSE(nt.update(0x0B000000, kPeerMac, 9, true)) << "full";
    Mac m;
    EXPECT_EQ(nt.resolve(0x0B000000, 9, 1, &m), ResolveStep::TableFull);
    nt.remove(0x0A000000 + 3 * 256);
    EXPECT_EQ(nt.size(), 7u);
    for (uint32_t i = 0; i < 8; ++i) {
        if (i != 3) {
            EXPECT_NE(nt.lookup(0x0A000000 + i * 256), nullptr) << i;
        }
    }
    EXPECT_EQ(nt.lookup(0x0A000000 + 3 * 256), nullptr);
}

TEST(NetNextHop, OnLinkOrClearError) {
    Result<uint32_t> r = next_hop(iface(), kPeerIp);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, kPeerIp);
    r = next_hop(iface(), 0x0A4E0002); /* 10.78.0.2 */
    ASSERT_FALSE(r);
    EXPECT_EQ(r.status().code(), ENETUNREACH);
    EXPECT_EQ(r.status().message(),
              "destination 10.78.0.2 is not on 10.77.0.0/24 and no gateway is configured");
    EXPECT_FALSE(next_hop(iface(), kOurIp));
}

TEST(NetAddr, ParseCidrAndMac) {
    uint32_t ip;
    uint8_t len;
    ASSERT_TRUE(parse_ipv4_cidr("10.77.0.100/24", &ip, &len));
    EXPECT_EQ(ip, kOurIp);
    EXPECT_EQ(len, 24);
    EXPECT_FALSE(parse_ipv4_cidr("10.77.0.300/24", &ip, &len));
    EXPECT_FALSE(parse_ipv4_cidr("10.77.0.1/33", &ip, &len));
    Mac m;
    ASSERT_TRUE(parse_mac("02:00:00:00:01:00", &m));
    EXPECT_EQ(m, kOurMac);
    EXPECT_FALSE(parse_mac("02:00:00:00:01", &m));
    EXPECT_EQ(mac_str(kPeerMac), "52:54:00:12:34:56");
}

/* ---- PFC (802.1Qbb) ---- */
namespace {

/* A PFC frame as a switch sends it: priority 3 for 0xFFFF quanta, priority 6 resumed. */
std::vector<uint8_t> pfc_frame() {
    std::vector<uint8_t> f(60, 0);
    const uint8_t head[] = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x52, 0x54, 0x00,
                            0x12, 0x34, 0x56, 0x88, 0x08, 0x01, 0x01, 0x00, 0x48};
    std::memcpy(f.data(), head, sizeof(head));
    f[18 + 6] = 0xFF; /* priority 3's time */
    f[19 + 6] = 0xFF;
    return f;
}

} // namespace

TEST(Pfc, ParsesEnabledPrioritiesAndTheirTimes) {
    auto f = pfc_frame();
    f[18 + 2] = 0x12; /* priority 1 not enabled: its time is ignored */
    PfcFrame p;
    ASSERT_EQ(parse_pfc(f.data(), f.size(), &p), PfcResult::Ok);
    EXPECT_EQ(p.enable, 0x48);
    EXPECT_EQ(p.quanta[3], 0xFFFF);
    EXPECT_EQ(p.quanta[6], 0); /* enabled with 0: resume */
    EXPECT_EQ(p.quanta[1], 0);
}

TEST(Pfc, UnpaddedFrameFromASoftwarePeerIsAccepted) {
    auto f = pfc_frame();
    PfcFrame p;
    EXPECT_EQ(parse_pfc(f.data(), kPfcBodyLen, &p), PfcResult::Ok);
    EXPECT_EQ(parse_pfc(f.data(), kPfcBodyLen - 1, &p), PfcResult::TooShort);
    EXPECT_EQ(parse_pfc(f.data(), 10, &p), PfcResult::TooShort);
}

TEST(Pfc, ReservedOctetAndPaddingAreIgnored) {
    auto f = pfc_frame();
    f[16] = 0xFF;
    f[59] = 0xAA;
    PfcFrame p;
    ASSERT_EQ(parse_pfc(f.data(), f.size(), &p), PfcResult::Ok);
    EXPECT_EQ(p.enable, 0x48);
}

TEST(Pfc, EveryBadInputHasItsName) {
    PfcFrame p;
    auto big = pfc_frame();
    big.resize(61);
    EXPECT_EQ(parse_pfc(big.data(), big.size(), &p), PfcResult::Oversized);
    auto et = pfc_frame();
    et[13] = 0x09;
    EXPECT_EQ(parse_pfc(et.data(), et.size(), &p), PfcResult::NotMacControl);
    auto dst = pfc_frame();
    std::memcpy(dst.data(), kOurMac.data(), 6);
    EXPECT_EQ(parse_pfc(dst.data(), dst.size(), &p), PfcResult::WrongDst);
    auto pause = pfc_frame();
    pause[15] = 0x01;
    pause[14] = 0x00;
    EXPECT_EQ(parse_pfc(pause.data(), pause.size(), &p), PfcResult::ClassicPause);
    EXPECT_EQ(parse_pfc(pause.data(), 20, &p), PfcResult::ClassicPause);
    auto op = pfc_frame();
    op[15] = 0x02; /* GATE */
    EXPECT_EQ(parse_pfc(op.data(), op.size(), &p), PfcResult::UnknownOpcode);
    auto none = pfc_frame();
    none[17] = 0;
    EXPECT_EQ(parse_pfc(none.data(), none.size(), &p), PfcResult::NoClassEnabled);
    for (unsigned r = 0; r < static_cast<unsigned>(PfcResult::Count_); ++r)
        EXPECT_STRNE(pfc_result_name(static_cast<PfcResult>(r)), "?");
}

TEST(Pfc, BuildThenParseRoundTrips) {
    PfcFrame f;
    f.enable = 0x81;
    f.quanta[0] = 7;
    f.quanta[7] = 0x1234;
    f.quanta[3] = 99; /* not enabled: not written */
    uint8_t buf[64];
    EXPECT_EQ(build_pfc(kPeerMac, f, buf, 59), 0u);
    ASSERT_EQ(build_pfc(kPeerMac, f, buf, sizeof(buf)), kMinFrameLen);
    EXPECT_EQ(std::memcmp(buf, kPfcDstMac.data(), 6), 0);
    EXPECT_EQ(std::memcmp(buf + 6, kPeerMac.data(), 6), 0);
    PfcFrame g;
    ASSERT_EQ(parse_pfc(buf, kMinFrameLen, &g), PfcResult::Ok);
    EXPECT_EQ(g.enable, 0x81);
    EXPECT_EQ(g.quanta[0], 7);
    EXPECT_EQ(g.quanta[7], 0x1234);
    EXPECT_EQ(g.quanta[3], 0);
}

TEST(Pfc, QuantaAre512BitTimesAtTheLinkSpeed) {
    EXPECT_EQ(pfc_pause_ns(0, 100'000'000'000ull), 0u);
    EXPECT_EQ(pfc_pause_ns(1, 100'000'000'000ull), 6u); /* 5.12 ns, rounded up */
    EXPECT_EQ(pfc_pause_ns(0xFFFF, 100'000'000'000ull), 335'540u);
    EXPECT_EQ(pfc_pause_ns(1000, 10'000'000'000ull), 51'200u);
    EXPECT_EQ(pfc_pause_ns(1000, 0), 5'120u);
}
