/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_headers.h"

#include <cstring>

namespace droce::wire {

namespace {

inline uint16_t ld16(const uint8_t *p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t ld24(const uint8_t *p) {
    return (static_cast<uint32_t>(p[0]) << 16) | (static_cast<uint32_t>(p[1]) << 8) | p[2];
}
inline uint32_t ld32(const uint8_t *p) {
    return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
           (static_cast<uint32_t>(p[2]) << 8) | p[3];
}
inline uint64_t ld64(const uint8_t *p) {
    return (static_cast<uint64_t>(ld32(p)) << 32) | ld32(p + 4);
}
inline void st16(uint16_t v, uint8_t *p) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline void st24(uint32_t v, uint8_t *p) {
    p[0] = static_cast<uint8_t>(v >> 16);
    p[1] = static_cast<uint8_t>(v >> 8);
    p[2] = static_cast<uint8_t>(v);
}
inline void st32(uint32_t v, uint8_t *p) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}
inline void st64(uint64_t v, uint8_t *p) {
    st32(static_cast<uint32_t>(v >> 32), p);
    st32(static_cast<uint32_t>(v), p + 4);
}

} // namespace

/* ---- Ethernet ---- */

size_t encoded_len(const EthHdr &h) { return h.has_vlan ? kEthLen + kVlanLen : kEthLen; }

size_t encode(const EthHdr &h, uint8_t *p) {
    std::memcpy(p, h.dst, 6);
    std::memcpy(p + 6, h.src, 6);
    if (h.has_vlan) {
        st16(kEtherTypeVlan, p + 12);
        st16(h.vlan_tci, p + 14);
        st16(h.ethertype, p + 16);
        return kEthLen + kVlanLen;
    }
    st16(h.ethertype, p + 12);
    return kEthLen;
}

size_t decode_eth(const uint8_t *p, size_t len, EthHdr &h) {
    if (len < kEthLen)
        return 0;
    std::memcpy(h.dst, p, 6);
    std::memcpy(h.src, p + 6, 6);
    uint16_t et = ld16(p + 12);
    if (et == kEtherTypeVlan) {
        if (len < kEthLen + kVlanLen)
            return 0;
        h.has_vlan = true;
        h.vlan_tci = ld16(p + 14);
        h.ethertype = ld16(p + 16);
        return kEthLen + kVlanLen;
    }
    h.has_vlan = false;
    h.vlan_tci = 0;
    h.ethertype = et;
    return kEthLen;
}

/* ---- IPv4 ---- */

uint16_t ipv4_checksum(const uint8_t *hdr20) {
    uint32_t sum = 0;
    for (size_t i = 0; i < kIpv4Len; i += 2) {
        if (i == 10)
            continue; /* the checksum field itself */
        sum += ld16(hdr20 + i);
    }
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

void encode(const Ipv4Hdr &h, uint8_t *p) {
    p[0] = 0x45;
    p[1] = h.tos;
    st16(h.total_len, p + 2);
    st16(h.id, p + 4);
    st16(h.frag, p + 6);
    p[8] = h.ttl;
    p[9] = h.proto;
    st32(h.src, p + 12);
    st32(h.dst, p + 16);
    st16(ipv4_checksum(p), p + 10);
}

bool decode_ipv4(const uint8_t *p, size_t len, Ipv4Hdr &h) {
    if (len < kIpv4Len || p[0] != 0x45)
        return false;
    h.tos = p[1];
    h.total_len = ld16(p + 2);
    h.id = ld16(p + 4);
    h.frag = ld16(p + 6);
    h.ttl = p[8];
    h.proto = p[9];
    h.checksum = ld16(p + 10);
    h.src = ld32(p + 12);
    h.dst = ld32(p + 16);
    return true;
}

/* ---- IPv6 ---- */

void encode(const Ipv6Hdr &h, uint8_t *p) {
    uint32_t w = (6u << 28) | (static_cast<uint32_t>(h.tclass) << 20) | (h.flow_label & 0xFFFFF);
    st32(w, p);
    st16(h.payload_len, p + 4);
    p[6] = h.next_hdr;
    p[7] = h.hop_limit;
    std::memcpy(p + 8, h.src, 16);
    std::memcpy(p + 24, h.dst, 16);
}

bool decode_ipv6(const uint8_t *p, size_t len, Ipv6Hdr &h) {
    if (len < kIpv6Len || (p[0] >> 4) != 6)
        return false;
    uint32_t w = ld32(p);
    h.tclass = static_cast<uint8_t>(w >> 20);
    h.flow_label = w & 0xFFFFF;
    h.payload_len = ld16(p + 4);
    h.next_hdr = p[6];
    h.hop_limit = p[7];
    std::memcpy(h.src, p + 8, 16);
    std::memcpy(h.dst, p + 24, 16);
    return true;
}

/* ---- UDP ---- */

void encode(const UdpHdr &h, uint8_t *p) {
    st16(h.sport, p);
    st16(h.dport, p + 2);
    st16(h.len, p + 4);
    st16(h.csum, p + 6);
}

UdpHdr decode_udp(const uint8_t *p) {
    return UdpHdr{ld16(p), ld16(p + 2), ld16(p + 4), ld16(p + 6)};
}

/* ---- BTH ---- */

void encode(const Bth &h, uint8_t *p) {
    p[0] = h.opcode;
    p[1] = static_cast<uint8_t>((h.se ? 0x80 : 0) | (h.mig ? 0x40 : 0) | ((h.pad_cnt & 3) << 4) |
                                (h.tver & 0xF));
    st16(h.pkey, p + 2);
    p[4] = static_cast<uint8_t>((h.fecn ? 0x80 : 0) | (h.becn ? 0x40 : 0));
    st24(h.dest_qp & kQpnMask, p + 5);
    p[8] = h.ack_req ? 0x80 : 0;
    st24(h.psn & kPsnMask, p + 9);
}

Bth decode_bth(const uint8_t *p) {
    Bth h{};
    decode_bth(p, h);
    return h;
}

void decode_bth(const uint8_t *p, Bth &h) {
    h.opcode = p[0];
    h.se = (p[1] & 0x80) != 0;
    h.mig = (p[1] & 0x40) != 0;
    h.pad_cnt = (p[1] >> 4) & 3;
    h.tver = p[1] & 0xF;
    h.pkey = ld16(p + 2);
    h.fecn = (p[4] & 0x80) != 0;
    h.becn = (p[4] & 0x40) != 0;
    h.dest_qp = ld24(p + 5);
    h.ack_req = (p[8] & 0x80) != 0;
    h.psn = ld24(p + 9);
}

/* ---- extended headers ---- */

void encode(const Reth &h, uint8_t *p) {
    st64(h.va, p);
    st32(h.rkey, p + 8);
    st32(h.dma_len, p + 12);
}
Reth decode_reth(const uint8_t *p) { return Reth{ld64(p), ld32(p + 8), ld32(p + 12)}; }

void encode(const Aeth &h, uint8_t *p) {
    p[0] = h.syndrome;
    st24(h.msn & 0xFFFFFF, p + 1);
}
Aeth decode_aeth(const uint8_t *p) { return Aeth{p[0], ld24(p + 1)}; }

void encode(const AtomicEth &h, uint8_t *p) {
    st64(h.va, p);
    st32(h.rkey, p + 8);
    st64(h.swap_add, p + 12);
    st64(h.compare, p + 20);
}
AtomicEth decode_atomic_eth(const uint8_t *p) {
    return AtomicEth{ld64(p), ld32(p + 8), ld64(p + 12), ld64(p + 20)};
}

void encode(const AtomicAckEth &h, uint8_t *p) { st64(h.orig, p); }
AtomicAckEth decode_atomic_ack_eth(const uint8_t *p) { return AtomicAckEth{ld64(p)}; }

void encode(const Deth &h, uint8_t *p) {
    st32(h.qkey, p);
    p[4] = 0;
    st24(h.src_qp & kQpnMask, p + 5);
}
Deth decode_deth(const uint8_t *p) { return Deth{ld32(p), ld24(p + 5)}; }

void encode_u32(uint32_t v, uint8_t *p) { st32(v, p); }
uint32_t decode_u32(const uint8_t *p) { return ld32(p); }

/* ---- tables ---- */

uint32_t rnr_timer_code_to_us(uint8_t code) {
    static constexpr uint32_t kUs[32] = {
        655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
        480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
        20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
    return kUs[code & 0x1F];
}

uint32_t credit_code_to_count(uint8_t code) {
    static constexpr uint32_t kCredits[31] = {0,    1,    2,    3,     4,     6,     8,    12,
                                              16,   24,   32,   48,    64,    96,    128,  192,
                                              256,  384,  512,  768,   1024,  1536,  2048, 3072,
                                              4096, 6144, 8192, 12288, 16384, 24576, 32768};
    return code < 31 ? kCredits[code] : 0;
}

uint32_t ib_mtu_to_bytes(uint8_t mtu_enum) {
    return (mtu_enum >= 1 && mtu_enum <= 5) ? (128u << mtu_enum) : 0;
}

uint8_t ib_mtu_from_bytes(uint32_t bytes) {
    for (uint8_t e = 1; e <= 5; ++e)
        if (ib_mtu_to_bytes(e) == bytes)
            return e;
    return 0;
}

uint8_t ib_mtu_for_eth_mtu(uint32_t eth_mtu) {
    /* IPv4 + UDP + BTH + largest extended header set (AtomicETH, 28) + ICRC. rxe agrees:
     * active_mtu 1024 at Ethernet MTU 1500, 4096 at 4200. */
    constexpr uint32_t kOverhead = kIpv4Len + kUdpLen + kBthLen + kAtomicEthLen + kIcrcLen;
    if (eth_mtu < kOverhead)
        return 0;
    for (uint8_t e = 5; e >= 1; --e)
        if (ib_mtu_to_bytes(e) <= eth_mtu - kOverhead)
            return e;
    return 0;
}

} // namespace droce::wire
