/* SPDX-License-Identifier: BSD-3-Clause */
/* net::classify_frame: every frame of the rxe and synthetic captures gets the verdict its
 * protocol calls for (and a RoCE verdict's offsets are those lib/wire's parser finds), and
 * hand-made frames get each drop reason. Buffers are sized to the frame, so a read past
 * what the classifier is given shows under ASan. */
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "net_classify.h"
#include "net_pfc.h"
#include "pcap_read.h"
#include "wire_packet.h"

using namespace droce;
using namespace droce::net;

namespace {

using Frame = std::vector<uint8_t>;

std::vector<Frame> capture(const std::string &name) {
    std::string err;
    auto frames = test::read_eth_capture(test::vectors_dir() + "/" + name, err);
    EXPECT_TRUE(err.empty()) << name << ": " << err;
    EXPECT_FALSE(frames.empty()) << name;
    return frames;
}

FrameVerdict classify(const Frame &f, const RxL2Addrs &a, bool chained = false,
                      uint32_t contig = UINT32_MAX) {
    const uint32_t len = static_cast<uint32_t>(f.size());
    return classify_frame({f.data(), contig < len ? contig : len, len, chained}, a);
}

/* The frame's own destination and VLAN as ours: what its receiver would hold. */
RxL2Addrs receiver_of(const Frame &f) {
    RxL2Addrs a;
    std::memcpy(a.mac.data(), f.data(), 6);
    if (f.size() >= 18 && f[12] == 0x81 && f[13] == 0x00)
        a.port_vid = static_cast<uint16_t>(((f[14] << 8) | f[15]) & 0xFFF);
    return a;
}

/* Every frame of a capture, classified as its receiver would: RoCE that lib/wire parses
 * is RoCE at the offsets lib/wire finds, and nothing else is. Returns the kinds seen. */
std::map<FrameKind, int> check_capture(const std::string &name) {
    std::map<FrameKind, int> kinds;
    for (const Frame &f : capture(name)) {
        if (f.size() >= 6 && (f[0] & 1))
            continue; /* broadcast/multicast: its receiver is not in the frame */
        const FrameVerdict v = classify(f, receiver_of(f));
        ++kinds[v.kind];
        wire::ParsedPacket pp{};
        const wire::ParseResult r = wire::parse_frame(f.data(), f.size(), pp, false);
        if (r == wire::ParseResult::Ok) {
            EXPECT_TRUE(v.kind == (pp.rocev1 ? FrameKind::RoceV1 : FrameKind::RoceV2))
                << name << ": a RoCE frame classified " << static_cast<int>(v.kind);
            EXPECT_EQ(v.bth_off, pp.bth_off) << name;
            EXPECT_EQ(v.l2_len, pp.l3_off) << name;
        } else {
            EXPECT_NE(v.kind, FrameKind::RoceV1) << name;
        }
    }
    return kinds;
}

/* A minimal Ethernet header to dst with ethertype et, then body. */
Frame eth(const Mac &dst, uint16_t et, std::vector<uint8_t> body = {}) {
    Frame f(dst.begin(), dst.end());
    const uint8_t src[6] = {0x02, 0, 0, 0, 0, 0x99};
    f.insert(f.end(), src, src + 6);
    f.push_back(static_cast<uint8_t>(et >> 8));
    f.push_back(static_cast<uint8_t>(et));
    f.insert(f.end(), body.begin(), body.end());
    return f;
}

/* An IPv4 header (IHL ihl) with proto, then 8 bytes of UDP to dport, then pad bytes. */
std::vector<uint8_t> ipv4(uint8_t proto, uint16_t dport, uint8_t ihl = 5, size_t pad = 20) {
    std::vector<uint8_t> b(4u * ihl, 0);
    b[0] = static_cast<uint8_t>(0x40 | ihl);
    b[9] = proto;
    const uint8_t udp[8] = {
        0x12, 0x34, static_cast<uint8_t>(dport >> 8), static_cast<uint8_t>(dport), 0, 8, 0, 0};
    b.insert(b.end(), udp, udp + 8);
    b.insert(b.end(), pad, 0);
    return b;
}

std::vector<uint8_t> vlan_tag(uint16_t vid, uint16_t inner_et) {
    return {static_cast<uint8_t>(vid >> 8), static_cast<uint8_t>(vid),
            static_cast<uint8_t>(inner_et >> 8), static_cast<uint8_t>(inner_et)};
}

std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::vector<uint8_t> &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

constexpr Mac kOurs = {0x02, 0x00, 0x00, 0x00, 0x01, 0x00};
constexpr Mac kOther = {0x02, 0x00, 0x00, 0x00, 0x02, 0x00};
constexpr Mac kPfcDst = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};

RxL2Addrs ours(uint16_t port_vid = 0) {
    RxL2Addrs a;
    a.mac = kOurs;
    a.port_vid = port_vid;
    return a;
}

} // namespace

TEST(NetClassify, RxeCapturesAgreeWithTheRoceParser) {
    for (const char *name :
         {"rxe/rc_pingpong.pcap", "rxe/ud_pingpong.pcap", "rxe/write_bw.pcap",
          "rxe/write_bw_4k.pcap", "rxe/read_bw.pcap", "rxe/send_lat.pcap", "rxe/atomic_fadd.pcap",
          "rxe/atomic_cas.pcap", "rxe/rping.pcap", "rxe/ucmatose.pcap", "rxe/write_bw_cm.pcap",
          "rxe/userspace_peer_bad_icrc_retransmit.pcap", "synthetic/good_write_ipv4.pcap",
          "synthetic/good_write_ipv6.pcap", "synthetic/good_cnp.pcap",
          "synthetic/good_published_cx4lx_cnp.pcap", "synthetic/good_ud_send.pcap"}) {
        const auto kinds = check_capture(name);
        EXPECT_GT(kinds.count(FrameKind::RoceV2) ? kinds.at(FrameKind::RoceV2) : 0, 0) << name;
    }
}

TEST(NetClassify, TcpBesideRoceIsOtherIp) {
    /* perftest's and rc_pingpong's TCP exchange rides along in these captures. */
    const auto kinds = check_capture("rxe/rc_pingpong.pcap");
    EXPECT_GT(kinds.count(FrameKind::IpOther) ? kinds.at(FrameKind::IpOther) : 0, 0);
}

TEST(NetClassify, ArpOfAUserSpacePeer) {
    int arp = 0, roce = 0;
    for (const Frame &f : capture("rxe/userspace_peer_rc_pingpong_with_arp.pcap")) {
        RxL2Addrs a = receiver_of(f);
        const FrameVerdict v = classify(f, a); /* broadcast requests: accepted as broadcast */
        arp += v.kind == FrameKind::Arp;
        roce += v.kind == FrameKind::RoceV2;
        if (f[12] == 0x08 && f[13] == 0x06) {
            EXPECT_EQ(v.kind, FrameKind::Arp);
        }
    }
    EXPECT_GT(arp, 0);
    EXPECT_GT(roce, 0);
}

TEST(NetClassify, VlanCaptureOnItsVlanOrAGidsOrNeither) {
    int roce = 0;
    for (const Frame &f : capture("rxe-features/rc_pingpong_vlan_pcp3.pcap")) {
        if (f[0] & 1)
            continue;
        RxL2Addrs a = receiver_of(f);
        const bool tagged = f[12] == 0x81 && f[13] == 0x00;
        FrameVerdict v = classify(f, a);
        if (!tagged)
            continue;
        EXPECT_EQ(v.l2_len, 18);
        EXPECT_EQ(v.vid, 100);
        if (v.kind != FrameKind::RoceV2)
            continue;
        ++roce;
        /* The port untagged: the frame is dropped, unless a GID is on VLAN 100. */
        const uint16_t vid = a.port_vid;
        a.port_vid = 0;
        EXPECT_EQ(classify(f, a).drop, FrameDrop::VlanMismatch);
        a.gid_vids = &vid;
        a.ngid_vids = 1;
        EXPECT_EQ(classify(f, a).kind, FrameKind::RoceV2);
    }
    EXPECT_GT(roce, 0);
}

TEST(NetClassify, Ipv6NeighbourDiscoveryAndRoce) {
    int nd = 0, roce = 0;
    const std::string name = "rxe-features/rc_pingpong_ipv6.pcap";
    for (const Frame &f : capture(name)) {
        RxL2Addrs a = receiver_of(f);
        if (f[0] & 1) {
            if (std::memcmp(f.data(), kBroadcastMac.data(), 6) == 0)
                continue; /* ARP of the IPv4 side channel */
            /* Multicast (a solicitation to a group we did not join): not ours. */
            a.mac = kOurs;
            EXPECT_EQ(classify(f, a).drop, FrameDrop::NotOurMac);
            continue;
        }
        const Iface6 ifc6 = make_iface6(a.mac);
        a.ifc6 = &ifc6;
        const FrameVerdict v = classify(f, a);
        nd += v.kind == FrameKind::Icmp6;
        roce += v.kind == FrameKind::RoceV2;
        if (v.kind == FrameKind::RoceV2) {
            EXPECT_EQ(v.bth_off, 14 + 40 + 8);
        }
    }
    EXPECT_GT(nd, 0);
    EXPECT_GT(roce, 0);
    check_capture(name);
}

TEST(NetClassify, MacControlBeforeTheMacFilter) {
    const Frame pfc = eth(kPfcDst, kEtherTypeMacControl, std::vector<uint8_t>(46, 0));
    const FrameVerdict v = classify(pfc, ours());
    EXPECT_EQ(v.kind, FrameKind::MacControl);
    /* Even chained: the engine reads it with rte_pktmbuf_read. */
    EXPECT_EQ(classify(pfc, ours(), true, 20).kind, FrameKind::MacControl);
}

TEST(NetClassify, EachDropReason) {
    const Frame arp = eth(kBroadcastMac, kEtherTypeArp, std::vector<uint8_t>(28, 0));
    EXPECT_EQ(classify(arp, ours()).kind, FrameKind::Arp);
    /* Runt. */
    Frame runt(arp.begin(), arp.begin() + 13);
    EXPECT_EQ(classify(runt, ours()).drop, FrameDrop::TooShort);
    EXPECT_EQ(classify(arp, ours(), false, 13).drop, FrameDrop::TooShort);
    /* Not our MAC. */
    EXPECT_EQ(classify(eth(kOther, kEtherTypeArp, std::vector<uint8_t>(28, 0)), ours()).drop,
              FrameDrop::NotOurMac);
    /* ARP on a VLAN that is not the port's, even if a GID is on it. */
    const Frame tagged_arp =
        eth(kOurs, kEtherTypeVlan, cat(vlan_tag(7, kEtherTypeArp), std::vector<uint8_t>(28, 0)));
    RxL2Addrs a = ours();
    const uint16_t seven = 7;
    a.gid_vids = &seven;
    a.ngid_vids = 1;
    EXPECT_EQ(classify(tagged_arp, a).drop, FrameDrop::VlanMismatch);
    EXPECT_EQ(classify(tagged_arp, ours()).drop, FrameDrop::VlanMismatch);
    EXPECT_EQ(classify(tagged_arp, ours(7)).kind, FrameKind::Arp);
    /* Unknown ethertype (LLDP), an 802.3 length, a stacked tag, a truncated tag. */
    EXPECT_EQ(classify(eth(kOurs, 0x88CC, std::vector<uint8_t>(46, 0)), ours()).drop,
              FrameDrop::UnknownEthertype);
    EXPECT_EQ(classify(eth(kOurs, 0x0040, std::vector<uint8_t>(46, 0)), ours()).drop,
              FrameDrop::UnknownEthertype);
    EXPECT_EQ(classify(eth(kOurs, kEtherTypeVlan,
                           cat(vlan_tag(0, kEtherTypeVlan), vlan_tag(0, kEtherTypeIpv4))),
                       ours())
                  .drop,
              FrameDrop::BadEthertype);
    EXPECT_EQ(classify(eth(kOurs, kEtherTypeVlan, {0x00, 0x05}), ours()).drop, FrameDrop::TooShort);
    /* Priority-tagged (VID 0) counts as untagged. */
    EXPECT_EQ(classify(eth(kOurs, kEtherTypeVlan,
                           cat(vlan_tag(0x6000, kEtherTypeIpv4), ipv4(kIpProtoUdp, 4791))),
                       ours())
                  .kind,
              FrameKind::RoceV2);
}

TEST(NetClassify, ChainsWhereRepliesAreBuiltInPlace) {
    const Frame arp = eth(kOurs, kEtherTypeArp, std::vector<uint8_t>(28, 0));
    EXPECT_EQ(classify(arp, ours(), true, 17).drop, FrameDrop::Multiseg); /* headers cut */
    EXPECT_EQ(classify(arp, ours(), true, 30).drop, FrameDrop::Multiseg); /* ARP reply */
    const Frame icmp = eth(kOurs, kEtherTypeIpv4, ipv4(kIpProtoIcmp, 0));
    EXPECT_EQ(classify(icmp, ours()).kind, FrameKind::Icmp);
    EXPECT_EQ(classify(icmp, ours(), true, 40).drop, FrameDrop::Multiseg);
    const Frame roce = eth(kOurs, kEtherTypeIpv4, ipv4(kIpProtoUdp, 4791));
    EXPECT_EQ(classify(roce, ours(), true, 23).drop, FrameDrop::Multiseg); /* no protocol */
    const FrameVerdict v = classify(roce, ours(), true, 42); /* UDP header in the first */
    EXPECT_EQ(v.kind, FrameKind::RoceV2);
    EXPECT_EQ(v.bth_off, 42);
    /* The UDP header past the first segment: IP, for the parser to call multiseg. */
    EXPECT_EQ(classify(roce, ours(), true, 36).kind, FrameKind::IpOther);
    std::vector<uint8_t> nd(40, 0);
    nd[0] = 0x60;
    nd[6] = 58;
    nd.resize(72, 0);
    const Frame icmp6 = eth(kOurs, 0x86DD, nd);
    EXPECT_EQ(classify(icmp6, ours()).kind, FrameKind::Icmp6);
    EXPECT_EQ(classify(icmp6, ours(), true, 60).drop, FrameDrop::Multiseg);
}

TEST(NetClassify, RoceOffsetsAndWhatIsNotRoce) {
    FrameVerdict v = classify(eth(kOurs, kEtherTypeIpv4, ipv4(kIpProtoUdp, 4791, 6)), ours());
    EXPECT_EQ(v.kind, FrameKind::RoceV2); /* options: offsets follow IHL (the parser refuses) */
    EXPECT_EQ(v.l4_off, 14 + 24);
    EXPECT_EQ(v.bth_off, 14 + 24 + 8);
    EXPECT_EQ(classify(eth(kOurs, kEtherTypeIpv4, ipv4(kIpProtoUdp, 4792)), ours()).kind,
              FrameKind::IpOther);
    EXPECT_EQ(classify(eth(kOurs, kEtherTypeIpv4, ipv4(6, 4791)), ours()).kind, FrameKind::IpOther);
    EXPECT_EQ(classify(eth(kOurs, kEtherTypeIpv4, ipv4(kIpProtoUdp, 4791, 4)), ours()).kind,
              FrameKind::IpOther); /* IHL below 5 */
    /* ICMP shorter than an IPv4 header: not answered, the parser calls it too short. */
    EXPECT_EQ(classify(eth(kOurs, kEtherTypeIpv4, {0x45, 0, 0, 0, 0, 0, 0, 0, 0, 1}), ours()).kind,
              FrameKind::IpOther);
    v = classify(eth(kOurs, 0x8915, std::vector<uint8_t>(60, 0)), ours());
    EXPECT_EQ(v.kind, FrameKind::RoceV1);
    EXPECT_EQ(v.bth_off, 14 + 40);
}

TEST(NetClassify, EveryPrefixOfEveryFrameIsSafe) {
    /* Each prefix in a buffer of exactly its size: a read past it is an ASan error. */
    std::vector<Frame> frames = capture("rxe/userspace_peer_rc_pingpong_with_arp.pcap");
    for (const Frame &f : capture("rxe-features/rc_pingpong_vlan_pcp3.pcap"))
        frames.push_back(f);
    for (const Frame &f : capture("rxe-features/rc_pingpong_ipv6.pcap"))
        frames.push_back(f);
    size_t n = 0;
    for (const Frame &f : frames) {
        if (++n > 64)
            break;
        const RxL2Addrs a = receiver_of(f);
        for (size_t len = 0; len <= f.size() && len <= 128; ++len) {
            const Frame cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(len));
            const FrameVerdict v = classify(cut, a);
            if (len < 14) {
                EXPECT_EQ(v.drop, FrameDrop::TooShort);
            }
            if (v.kind == FrameKind::RoceV2) {
                EXPECT_LE(v.bth_off, len);
            }
        }
    }
}

TEST(NetClassify, DropNames) {
    EXPECT_STREQ(frame_drop_name(FrameDrop::NotOurMac), "not_our_mac");
    EXPECT_STREQ(frame_drop_name(FrameDrop::Multiseg), "multiseg");
    EXPECT_STREQ(frame_drop_name(FrameDrop::Count_), "unknown");
}
