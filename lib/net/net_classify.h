/* SPDX-License-Identifier: BSD-3-Clause */
/* What a received Ethernet frame is, from its bytes alone: RoCE (v2 over IPv4/IPv6, or v1),
 * ARP, ICMP, ICMPv6 (ND, echo), MAC Control (PFC, pause), other IP, or a drop with its
 * reason. The engine switches on the verdict. RoCE is told by its addressing (UDP port
 * 4791, ethertype 0x8915) and comes with its offsets; whether its headers hold (lengths,
 * BTH, ICRC) is lib/wire's to check, and which GID it may reach is the engine's.
 *
 * Pure: no mbufs, no engine, no DPDK. The frame may be chained (only its first segment is
 * readable here): ARP/ICMP/ND replies are built in place, so those must be contiguous. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "net.h"
#include "net_ipv6.h"

namespace droce::net {

/** Why the classifier refused a frame; each is one of the engine's drop counters. */
enum class FrameDrop : uint8_t {
    None = 0,
    TooShort,         /* shorter than an Ethernet header (rx_drop_parse too_short) */
    Multiseg,         /* headers past the first segment, or a reply to build on a chain */
    NotOurMac,        /* not our unicast MAC, broadcast, nor a multicast MAC we joined */
    VlanMismatch,     /* a VID none of our addresses is on */
    UnknownEthertype, /* neither IP, ARP, RoCEv1 nor MAC Control */
    BadEthertype,     /* a stacked (QinQ) tag, or a tag the frame is too short for */
    Count_
};
const char *frame_drop_name(FrameDrop d); /* "not_our_mac", ... */

enum class FrameKind : uint8_t {
    RoceV2,     /* IPv4/IPv6 to UDP port 4791: l4_off, bth_off set */
    RoceV1,     /* ethertype 0x8915: GRH, no UDP; bth_off set */
    IpOther,    /* other IPv4 (not ICMP) or IPv6 (not ICMPv6): the RoCE parser names why */
    Arp,        /* on the port's VLAN */
    Icmp,       /* IPv4 ICMP on the port's VLAN */
    Icmp6,      /* neighbour discovery and echo */
    MacControl, /* 0x8808: PFC or 802.3x pause, before any MAC filter */
    Drop,
};

struct FrameVerdict {
    FrameKind kind = FrameKind::Drop;
    FrameDrop drop = FrameDrop::None; /* set when kind == Drop */
    uint8_t l2_len = 0;               /* 14, or 18 with an 802.1Q tag: the L3 offset */
    uint16_t vid = 0;                 /* 0: untagged or priority-tagged */
    uint16_t ethertype = 0;           /* after the tag */
    uint16_t l4_off = 0;              /* RoceV2: the UDP header */
    uint16_t bth_off = 0;             /* RoceV2, RoceV1: the BTH */
};

/** Our link-layer addresses: what a frame must be sent to, and on which VLANs. */
struct RxL2Addrs {
    Mac mac{};
    uint16_t port_vid = 0;              /* the IPv4 address's VLAN (0: untagged) */
    const uint16_t *gid_vids = nullptr; /* further VLANs some GID is on */
    uint32_t ngid_vids = 0;
    const Iface6 *ifc6 = nullptr; /* the multicast MACs joined (ND); none when null */
};

/** bytes: the readable first segment (contig bytes); len: the whole frame; chained: it
 * has more segments. Reads at most contig bytes. */
struct RxFrameBytes {
    const uint8_t *p;
    uint32_t contig;
    uint32_t len;
    bool chained;
};

FrameVerdict classify_frame(const RxFrameBytes &f, const RxL2Addrs &a);

} // namespace droce::net
