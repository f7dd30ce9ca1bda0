/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_headers.h"

#include <cstring>

#include "wire_bytes.h"

namespace droce::wire {

/* ---- Ethernet ---- */

size_t encoded_len(const EthHdr &h) { return h.has_vlan ? kEthLen + kVlanLen : kEthLen; }

size_t encode(const EthHdr &h, uint8_t *p) {
    std::memcpy(p, h.dst, 6);
    std::memcpy(p + 6, h.src, 6);
    if (h.has_vlan) {
        store_be16(p + 12, kEtherTypeVlan);
        store_be16(p + 14, h.vlan_tci);
        store_be16(p + 16, h.ethertype);
        return kEthLen + kVlanLen;
    }
    store_be16(p + 12, h.ethertype);
    return kEthLen;
}

size_t decode_eth(const uint8_t *p, size_t len, EthHdr &h) {
    if (len < kEthLen)
        return 0;
    std::memcpy(h.dst, p, 6);
    std::memcpy(h.src, p + 6, 6);
    uint16_t et = load_be16(p + 12);
    if (et == kEtherTypeVlan) {
        if (len < kEthLen + kVlanLen)
            return 0;
        h.has_vlan = true;
        h.vlan_tci = load_be16(p + 14);
        h.ethertype = load_be16(p + 16);
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
        sum += load_be16(hdr20 + i);
    }
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

void encode(const Ipv4Hdr &h, uint8_t *p) {
    p[0] = 0x45;
    p[1] = h.tos;
    store_be16(p + 2, h.total_len);
    store_be16(p + 4, h.id);
    store_be16(p + 6, h.frag);
    p[8] = h.ttl;
    p[9] = h.proto;
    store_be32(p + 12, h.src);
    store_be32(p + 16, h.dst);
    store_be16(p + 10, ipv4_checksum(p));
}

bool decode_ipv4(const uint8_t *p, size_t len, Ipv4Hdr &h) {
    if (len < kIpv4Len || p[0] != 0x45)
        return false;
    h.tos = p[1];
    h.total_len = load_be16(p + 2);
    h.id = load_be16(p + 4);
    h.frag = load_be16(p + 6);
    h.ttl = p[8];
    h.proto = p[9];
    h.checksum = load_be16(p + 10);
    h.src = load_be32(p + 12);
    h.dst = load_be32(p + 16);
    return true;
}

/* ---- IPv6 ---- */

void encode(const Ipv6Hdr &h, uint8_t *p) {
    uint32_t w = (6u << 28) | (static_cast<uint32_t>(h.tclass) << 20) | (h.flow_label & 0xFFFFF);
    store_be32(p, w);
    store_be16(p + 4, h.payload_len);
    p[6] = h.next_hdr;
    p[7] = h.hop_limit;
    std::memcpy(p + 8, h.src, 16);
    std::memcpy(p + 24, h.dst, 16);
}

bool decode_ipv6(const uint8_t *p, size_t len, Ipv6Hdr &h) {
    if (len < kIpv6Len || (p[0] >> 4) != 6)
        return false;
    uint32_t w = load_be32(p);
    h.tclass = static_cast<uint8_t>(w >> 20);
    h.flow_label = w & 0xFFFFF;
    h.payload_len = load_be16(p + 4);
    h.next_hdr = p[6];
    h.hop_limit = p[7];
    std::memcpy(h.src, p + 8, 16);
    std::memcpy(h.dst, p + 24, 16);
    return true;
}

/* ---- UDP ---- */

void encode(const UdpHdr &h, uint8_t *p) {
    store_be16(p, h.sport);
    store_be16(p + 2, h.dport);
    store_be16(p + 4, h.len);
    store_be16(p + 6, h.csum);
}

UdpHdr decode_udp(const uint8_t *p) {
    return UdpHdr{load_be16(p), load_be16(p + 2), load_be16(p + 4), load_be16(p + 6)};
}

/* ---- BTH ---- */

void encode(const Bth &h, uint8_t *p) {
    /* Three big-endian words (opcode, flags, P_Key | FECN, BECN, QPN | AckReq, PSN): three
     * stores instead of eleven byte stores. */
    const uint32_t flags = (h.se ? 0x80u : 0u) | (h.mig ? 0x40u : 0u) |
                           ((uint32_t{h.pad_cnt} & 3) << 4) | (uint32_t{h.tver} & 0xF);
    store_be32(p, uint32_t{h.opcode} << 24 | flags << 16 | h.pkey);
    store_be32(p + 4,
               (h.fecn ? 0x80000000u : 0u) | (h.becn ? 0x40000000u : 0u) | (h.dest_qp & kQpnMask));
    store_be32(p + 8, (h.ack_req ? 0x80000000u : 0u) | (h.psn & kPsnMask));
}

Bth decode_bth(const uint8_t *p) {
    Bth h{};
    decode_bth(p, h);
    return h;
}

/* ---- extended headers ---- */

void encode(const Reth &h, uint8_t *p) {
    store_be64(p, h.va);
    store_be32(p + 8, h.rkey);
    store_be32(p + 12, h.dma_len);
}
Reth decode_reth(const uint8_t *p) {
    return Reth{load_be64(p), load_be32(p + 8), load_be32(p + 12)};
}

void encode(const Aeth &h, uint8_t *p) {
    p[0] = h.syndrome;
    store_be24(p + 1, h.msn & 0xFFFFFF);
}
Aeth decode_aeth(const uint8_t *p) { return Aeth{p[0], load_be24(p + 1)}; }

void encode(const AtomicEth &h, uint8_t *p) {
    store_be64(p, h.va);
    store_be32(p + 8, h.rkey);
    store_be64(p + 12, h.swap_add);
    store_be64(p + 20, h.compare);
}
AtomicEth decode_atomic_eth(const uint8_t *p) {
    return AtomicEth{load_be64(p), load_be32(p + 8), load_be64(p + 12), load_be64(p + 20)};
}

void encode(const AtomicAckEth &h, uint8_t *p) { store_be64(p, h.orig); }
AtomicAckEth decode_atomic_ack_eth(const uint8_t *p) { return AtomicAckEth{load_be64(p)}; }

void encode(const Deth &h, uint8_t *p) {
    store_be32(p, h.qkey);
    p[4] = 0;
    store_be24(p + 5, h.src_qp & kQpnMask);
}
Deth decode_deth(const uint8_t *p) { return Deth{load_be32(p), load_be24(p + 5)}; }

void encode_u32(uint32_t v, uint8_t *p) { store_be32(p, v); }
uint32_t decode_u32(const uint8_t *p) { return load_be32(p); }

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
