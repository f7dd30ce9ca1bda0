/* SPDX-License-Identifier: BSD-3-Clause */
/* RoCEv2 header layouts (see shared/WIRE.md). Pure functions over bytes: every
 * header has a host-order struct, an encode() that writes exactly its wire size and
 * a decode_*() that reads it. No ports, no clocks, no allocation. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire_bytes.h"

namespace droce::wire {

inline constexpr uint16_t kRoceV2UdpPort = 4791;
inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
inline constexpr uint16_t kEtherTypeArp = 0x0806;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeRoceV1 = 0x8915;
inline constexpr uint16_t kDefaultPkey = 0xFFFF;

inline constexpr size_t kEthLen = 14;
inline constexpr size_t kVlanLen = 4;
inline constexpr size_t kIpv4Len = 20; /* no options: RoCEv2 senders never use them */
inline constexpr size_t kIpv6Len = 40;
inline constexpr size_t kUdpLen = 8;
inline constexpr size_t kBthLen = 12;
inline constexpr size_t kRethLen = 16;
inline constexpr size_t kAethLen = 4;
inline constexpr size_t kAtomicEthLen = 28;
inline constexpr size_t kAtomicAckEthLen = 8;
inline constexpr size_t kImmDtLen = 4;
inline constexpr size_t kIethLen = 4;
inline constexpr size_t kDethLen = 8;
inline constexpr size_t kIcrcLen = 4;
inline constexpr size_t kCnpPadLen = 16;

inline constexpr uint32_t kPsnMask = 0xFFFFFF;
inline constexpr uint32_t kQpnMask = 0xFFFFFF;

/* Ethernet (+ optional one 802.1Q tag). */
struct EthHdr {
    uint8_t dst[6];
    uint8_t src[6];
    bool has_vlan;
    uint16_t vlan_tci;  /* PCP(3) DEI(1) VID(12) */
    uint16_t ethertype; /* of the payload, i.e. after the tag */
};
size_t encoded_len(const EthHdr &h);        /* 14 or 18 */
size_t encode(const EthHdr &h, uint8_t *p); /* returns bytes written */
/* Returns header length (14/18) or 0 when len is too short. */
size_t decode_eth(const uint8_t *p, size_t len, EthHdr &h);

struct Ipv4Hdr {
    uint8_t tos; /* DSCP(6) ECN(2) */
    uint16_t total_len;
    uint16_t id;
    uint16_t frag; /* flags(3) + fragment offset(13); DF = 0x4000 */
    uint8_t ttl;
    uint8_t proto;
    uint16_t checksum; /* as found on decode; encode() computes it */
    uint32_t src;      /* host order */
    uint32_t dst;
};
void encode(const Ipv4Hdr &h, uint8_t *p); /* writes 20 bytes, fills a valid checksum */
/* false when not version 4 / IHL != 5 / short. */
bool decode_ipv4(const uint8_t *p, size_t len, Ipv4Hdr &h);
uint16_t ipv4_checksum(const uint8_t *hdr20);

struct Ipv6Hdr {
    uint8_t tclass;      /* DSCP(6) ECN(2) */
    uint32_t flow_label; /* 20 bits */
    uint16_t payload_len;
    uint8_t next_hdr;
    uint8_t hop_limit;
    uint8_t src[16];
    uint8_t dst[16];
};
void encode(const Ipv6Hdr &h, uint8_t *p); /* 40 bytes */
bool decode_ipv6(const uint8_t *p, size_t len, Ipv6Hdr &h);

struct UdpHdr {
    uint16_t sport;
    uint16_t dport;
    uint16_t len;
    uint16_t csum;
};
void encode(const UdpHdr &h, uint8_t *p);
UdpHdr decode_udp(const uint8_t *p);

/* Base Transport Header. */
struct Bth {
    uint8_t opcode;
    bool se;
    bool mig;
    uint8_t pad_cnt; /* 0..3 */
    uint8_t tver;    /* 0 */
    uint16_t pkey;
    bool fecn;
    bool becn;
    uint32_t dest_qp; /* 24 bits */
    bool ack_req;
    uint32_t psn; /* 24 bits */
};
void encode(const Bth &h, uint8_t *p);
Bth decode_bth(const uint8_t *p);
/* Same, into h in place: a 20-byte Bth returned by value goes through the stack, and
 * copying it into a ParsedPacket with wide loads right after the narrow stores stalled
 * on store forwarding (a third of parse_impl at 64 B in perf). Inline, from three
 * big-endian words: every received frame's first step. */
inline void decode_bth(const uint8_t *p, Bth &h) {
    const uint32_t w0 = load_be32(p), w1 = load_be32(p + 4), w2 = load_be32(p + 8);
    h.opcode = static_cast<uint8_t>(w0 >> 24);
    h.se = (w0 & 0x800000u) != 0;
    h.mig = (w0 & 0x400000u) != 0;
    h.pad_cnt = static_cast<uint8_t>((w0 >> 20) & 3);
    h.tver = static_cast<uint8_t>((w0 >> 16) & 0xF);
    h.pkey = static_cast<uint16_t>(w0);
    h.fecn = (w1 & 0x80000000u) != 0;
    h.becn = (w1 & 0x40000000u) != 0;
    h.dest_qp = w1 & kQpnMask;
    h.ack_req = (w2 & 0x80000000u) != 0;
    h.psn = w2 & kPsnMask;
}

struct Reth {
    uint64_t va;
    uint32_t rkey;
    uint32_t dma_len;
};
void encode(const Reth &h, uint8_t *p);
Reth decode_reth(const uint8_t *p);

/* AETH syndrome helpers (bits 7:5 = type). */
enum class AethType : uint8_t { Ack = 0, RnrNak = 1, Reserved = 2, Nak = 3 };
inline constexpr uint8_t kAethNakPsnSeqErr = 0x60;
inline constexpr uint8_t kAethNakInvalidRequest = 0x61;
inline constexpr uint8_t kAethNakRemoteAccessErr = 0x62;
inline constexpr uint8_t kAethNakRemoteOpErr = 0x63;
inline constexpr uint8_t kAethNakInvalidRdRequest = 0x64;
inline constexpr uint8_t kAethCreditInvalid = 0x1F; /* "unlimited" credit code */

struct Aeth {
    uint8_t syndrome;
    uint32_t msn; /* 24 bits */
    AethType type() const { return static_cast<AethType>(syndrome >> 5); }
    uint8_t value() const { return syndrome & 0x1F; } /* credit code, RNR timer code or NAK code */
};
void encode(const Aeth &h, uint8_t *p);
Aeth decode_aeth(const uint8_t *p);

struct AtomicEth {
    uint64_t va;
    uint32_t rkey;
    uint64_t swap_add;
    uint64_t compare;
};
void encode(const AtomicEth &h, uint8_t *p);
AtomicEth decode_atomic_eth(const uint8_t *p);

struct AtomicAckEth {
    uint64_t orig;
};
void encode(const AtomicAckEth &h, uint8_t *p);
AtomicAckEth decode_atomic_ack_eth(const uint8_t *p);

struct Deth {
    uint32_t qkey;
    uint32_t src_qp; /* 24 bits */
};
void encode(const Deth &h, uint8_t *p);
Deth decode_deth(const uint8_t *p);

/* ImmDt and IETH are one 32-bit big-endian word each; kept in host order here. */
void encode_u32(uint32_t v, uint8_t *p);
uint32_t decode_u32(const uint8_t *p);

/* 24-bit PSN serial arithmetic: <0 when a is before b, half space +-2^23. */
inline int32_t psn_diff(uint32_t a, uint32_t b) { return static_cast<int32_t>((a - b) << 8) >> 8; }
inline uint32_t psn_add(uint32_t psn, uint32_t n) { return (psn + n) & kPsnMask; }

/* RNR timer code (0..31) -> microseconds (IBTA table, code 0 = 655.36 ms). */
uint32_t rnr_timer_code_to_us(uint8_t code);
/* AETH credit code (0..30) -> credits. */
uint32_t credit_code_to_count(uint8_t code);

/* IB MTU enum (1..5) <-> bytes; 0 for an invalid value. */
uint32_t ib_mtu_to_bytes(uint8_t mtu_enum);
uint8_t ib_mtu_from_bytes(uint32_t bytes); /* exact match only */
/* Largest IB MTU whose RoCEv2 frame fits an Ethernet MTU (IPv4, no VLAN). */
uint8_t ib_mtu_for_eth_mtu(uint32_t eth_mtu);

} // namespace droce::wire
