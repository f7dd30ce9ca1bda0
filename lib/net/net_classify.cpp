/* SPDX-License-Identifier: BSD-3-Clause */
/* Received-frame classification (net_classify.h). The order of the tests is the order in
 * which a frame's drop reasons are counted: MAC Control before the MAC filter (PFC goes
 * to a reserved multicast address), the MAC filter before the VLAN, the VLAN before the
 * protocol. */
#include "net_classify.h"

#include <cstring>

#include "net_pfc.h"

namespace droce::net {

namespace {

constexpr uint32_t kEthLen = 14;
constexpr uint32_t kVlanTagLen = 4;
constexpr uint16_t kEtherTypeRoceV1 = 0x8915;
constexpr uint32_t kUdpLen = 8;
constexpr uint16_t kRoceV2Port = 4791;

uint16_t be16(const uint8_t *p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }

FrameVerdict drop(FrameDrop why) {
    FrameVerdict v;
    v.drop = why;
    return v;
}

bool ours(const uint8_t *dst, const RxL2Addrs &a) {
    return std::memcmp(dst, a.mac.data(), 6) == 0 ||
           std::memcmp(dst, kBroadcastMac.data(), 6) == 0 ||
           (a.ifc6 != nullptr && a.ifc6->accepts_multicast_mac(dst));
}

/* The port's VLAN, or one a GID is on. Priority-tagged frames (VID 0) count as untagged. */
bool vid_ours(uint16_t vid, const RxL2Addrs &a) {
    if (vid == a.port_vid)
        return true;
    for (uint32_t i = 0; i < a.ngid_vids; ++i)
        if (a.gid_vids[i] == vid)
            return true;
    return false;
}

/* An IP frame that is not ICMP: RoCEv2 when it is UDP to port 4791 with the UDP header
 * readable (IPv6: no extension headers, as RoCEv2 uses none). */
FrameVerdict classify_ip(const RxFrameBytes &f, FrameVerdict v) {
    const uint8_t *l3 = f.p + v.l2_len;
    uint32_t l4 = 0;
    if (v.ethertype == kEtherTypeIpv4) {
        if (f.contig >= v.l2_len + 20u && (l3[0] >> 4) == 4 && l3[9] == kIpProtoUdp)
            l4 = v.l2_len + 4u * (l3[0] & 0xF);
    } else if (f.contig >= v.l2_len + kIpv6HdrLen && l3[6] == kIpProtoUdp) {
        l4 = v.l2_len + static_cast<uint32_t>(kIpv6HdrLen);
    }
    v.kind = FrameKind::IpOther;
    if (l4 >= v.l2_len + 20u && f.contig >= l4 + kUdpLen && be16(f.p + l4 + 2) == kRoceV2Port) {
        v.kind = FrameKind::RoceV2;
        v.l4_off = static_cast<uint16_t>(l4);
        v.bth_off = static_cast<uint16_t>(l4 + kUdpLen);
    }
    return v;
}

/* After L2: what the payload is. v carries l2_len, vid and ethertype. */
FrameVerdict classify_l3(const RxFrameBytes &f, const RxL2Addrs &a, FrameVerdict v) {
    const uint8_t *p = f.p;
    const uint32_t l2 = v.l2_len;
    const uint16_t et = v.ethertype;
    if (et == kEtherTypeIpv6 && f.contig >= l2 + kIpv6HdrLen && p[l2 + 6] == kIpProtoIcmpv6) {
        if (f.chained)
            return drop(FrameDrop::Multiseg); /* replies are built in place */
        v.kind = FrameKind::Icmp6;
        return v;
    }
    const bool arp = et == kEtherTypeArp;
    if (f.chained &&
        (arp || (et == kEtherTypeIpv4 && (f.contig <= l2 + 9 || p[l2 + 9] == kIpProtoIcmp))))
        return drop(FrameDrop::Multiseg); /* an ARP/ICMP reply, or IPv4 headers cut short */
    const bool icmp =
        et == kEtherTypeIpv4 && f.contig > l2 + 9 && f.len >= l2 + 20 && p[l2 + 9] == kIpProtoIcmp;
    if (arp || icmp) {
        if (v.vid != a.port_vid)
            return drop(FrameDrop::VlanMismatch); /* the IPv4 address is on that VLAN only */
        v.kind = arp ? FrameKind::Arp : FrameKind::Icmp;
        return v;
    }
    switch (et) {
    case kEtherTypeIpv4:
    case kEtherTypeIpv6:
        return classify_ip(f, v);
    case kEtherTypeRoceV1:
        v.kind = FrameKind::RoceV1;
        v.bth_off = static_cast<uint16_t>(l2 + kIpv6HdrLen); /* after the GRH */
        return v;
    case kEtherTypeVlan: /* a second tag, or a tag with no room for itself */
        return drop(f.len < kEthLen + kVlanTagLen ? FrameDrop::TooShort : FrameDrop::BadEthertype);
    default:
        return drop(FrameDrop::UnknownEthertype);
    }
}

} // namespace

const char *frame_drop_name(FrameDrop d) {
    switch (d) {
    case FrameDrop::None:
        return "none";
    case FrameDrop::TooShort:
        return "too_short";
    case FrameDrop::Multiseg:
        return "multiseg";
    case FrameDrop::NotOurMac:
        return "not_our_mac";
    case FrameDrop::VlanMismatch:
        return "vlan_mismatch";
    case FrameDrop::UnknownEthertype:
        return "unknown_ethertype";
    case FrameDrop::BadEthertype:
        return "bad_ethertype";
    case FrameDrop::Count_:
        break;
    }
    return "unknown";
}

FrameVerdict classify_frame(const RxFrameBytes &f, const RxL2Addrs &a) {
    if (f.chained && f.contig < kEthLen + kVlanTagLen)
        return drop(FrameDrop::Multiseg);
    if (f.len < kEthLen || f.contig < kEthLen)
        return drop(FrameDrop::TooShort);
    const uint8_t *p = f.p;
    FrameVerdict v;
    v.ethertype = be16(p + 12);
    if (v.ethertype == kEtherTypeMacControl) {
        v.kind = FrameKind::MacControl;
        v.l2_len = kEthLen;
        return v;
    }
    if (!ours(p, a)) /* our MAC may differ from the port's (promiscuous then) */
        return drop(FrameDrop::NotOurMac);
    v.l2_len = kEthLen;
    if (v.ethertype == kEtherTypeVlan && f.contig >= kEthLen + kVlanTagLen) {
        v.l2_len = kEthLen + kVlanTagLen;
        v.vid = be16(p + 14) & 0xFFF;
        v.ethertype = be16(p + 16);
    }
    if (!vid_ours(v.vid, a))
        return drop(FrameDrop::VlanMismatch);
    return classify_l3(f, a, v);
}

} // namespace droce::net
