/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_packet.h"

#include <array>
#include <cstring>

#include <emmintrin.h>

#include "crc32_slice8.h"
#include "wire_bytes.h"
#include "wire_icrc.h"
#include "wire_rocev1.h"

namespace droce::wire {

namespace {

/* Zeroes a header struct in place. `x = {}` and a memset of these sizes compile to
 * `rep stos` (GCC, -march=corei7): ~5 ns each, two of them a third of an ACK's parse
 * in perf. Explicit 16-byte stores (the last one overlapping) instead. */
template <class T> inline void zero(T &x) {
    constexpr size_t n = sizeof(T);
    auto *p = reinterpret_cast<unsigned char *>(&x);
    if constexpr (n < 16) {
        std::memset(p, 0, n);
    } else {
        const __m128i z = _mm_setzero_si128();
        for (size_t i = 0; i + 16 <= n; i += 16)
            _mm_storeu_si128(reinterpret_cast<__m128i *>(p + i), z);
        if constexpr (n % 16 != 0)
            _mm_storeu_si128(reinterpret_cast<__m128i *>(p + n - 16), z);
    }
}

constexpr uint8_t kIpProtoUdp = 17;
constexpr uint16_t kEtherTypeQinQ = 0x88A8;
constexpr uint16_t kIpv4Df = 0x4000;
constexpr uint16_t kIpv4MfOffset = 0x3FFF; /* MF flag + fragment offset */

/* Ethertype policy: IPv4 / IPv6 / RoCEv1 (0x8915) are parsed; a stacked or 802.1ad tag,
 * or a value that is an 802.3 length (< 0x0600) rather than an Ethernet II type, is
 * BadEthertype; every other type (ARP, LLDP, ...) is well-formed traffic that is simply
 * not ours: NotRoce. */
inline bool bad_ethertype(uint16_t et) {
    return et < 0x0600 || et == kEtherTypeVlan || et == kEtherTypeQinQ;
}

} // namespace

const char *parse_result_name(ParseResult r) {
    switch (r) {
    case ParseResult::Ok:
        return "ok";
    case ParseResult::NotRoce:
        return "not_roce";
    case ParseResult::TooShort:
        return "too_short";
    case ParseResult::BadEthertype:
        return "bad_ethertype";
    case ParseResult::BadIpHeader:
        return "bad_ip_header";
    case ParseResult::IpFragment:
        return "ip_fragment";
    case ParseResult::BadUdpLength:
        return "bad_udp_length";
    case ParseResult::BadTver:
        return "bad_tver";
    case ParseResult::BadOpcode:
        return "bad_opcode";
    case ParseResult::BadPadLength:
        return "bad_pad_length";
    case ParseResult::BadIcrc:
        return "bad_icrc";
    case ParseResult::Count_:
        break;
    }
    return "unknown";
}

/* Rejection order: L2 -> L3 -> UDP port (NotRoce) -> UDP length -> BTH -> ext headers ->
 * pad -> ICRC. Every read is preceded by a bound check against len (or against the
 * IP-declared end, which is itself checked against len first). The IPv4 header checksum
 * is not verified: the ICRC masks it, rxe ignores it, and NICs check it in hardware. */
namespace {
/* Where the layers of a frame are, as its L3 header declares them (offsets from l3). */
struct L3Layout {
    size_t ip_end = 0;   /* end of the IP datagram */
    size_t l4_off = 0;   /* the UDP header (RoCEv2) */
    size_t udp_len = 0;  /* as the IP header declares it (RoCEv2) */
    size_t bth_off = 0;  /* the BTH */
    size_t roce_len = 0; /* BTH .. ICRC */
};

/* The parse steps below are called once per frame from parse_impl, on the per-packet
 * path: always inlined into it, so the split costs no call. */

/* GRH: an IPv6 header in layout; a version other than 6 or a next header other than BTH
 * is a malformed RoCEv1 frame (nothing else uses this ethertype). */
[[gnu::always_inline]] inline ParseResult parse_grh(const uint8_t *l3, size_t avail, size_t contig,
                                                    ParsedPacket &out, L3Layout &lay) {
    out.ipv6 = out.rocev1 = true;
    zero(out.ip4);
    zero(out.udp);
    if (avail < kGrhLen || contig < kGrhLen)
        return ParseResult::TooShort;
    if (!decode_ipv6(l3, avail, out.ip6) || out.ip6.next_hdr != kGrhNextHdrBth)
        return ParseResult::BadIpHeader;
    if (kGrhLen + size_t{out.ip6.payload_len} > avail)
        return ParseResult::TooShort;
    lay.ip_end = kGrhLen + out.ip6.payload_len;
    lay.roce_len = out.ip6.payload_len;
    lay.bth_off = kGrhLen;
    return ParseResult::Ok;
}

[[gnu::always_inline]] inline ParseResult parse_ipv4(const uint8_t *l3, size_t avail, size_t contig,
                                                     ParsedPacket &out, L3Layout &lay) {
    out.ipv6 = out.rocev1 = false;
    zero(out.ip6);
    if (avail < kIpv4Len || contig < kIpv4Len)
        return ParseResult::TooShort;
    if ((l3[0] >> 4) != 4 || (l3[0] & 0xF) < 5)
        return ParseResult::BadIpHeader;
    if ((l3[0] & 0xF) != 5) /* options: never on RoCEv2, fine on anything else */
        return l3[9] == kIpProtoUdp ? ParseResult::BadIpHeader : ParseResult::NotRoce;
    decode_ipv4(l3, avail, out.ip4);
    if (out.ip4.total_len < kIpv4Len)
        return ParseResult::BadIpHeader;
    if (out.ip4.total_len > avail)
        return ParseResult::TooShort;
    if (out.ip4.proto != kIpProtoUdp)
        return ParseResult::NotRoce;
    if (out.ip4.frag & kIpv4MfOffset)
        return ParseResult::IpFragment;
    lay.l4_off = kIpv4Len;
    lay.ip_end = out.ip4.total_len;
    lay.udp_len = lay.ip_end - kIpv4Len;
    return ParseResult::Ok;
}

[[gnu::always_inline]] inline ParseResult parse_ipv6(const uint8_t *l3, size_t avail, size_t contig,
                                                     ParsedPacket &out, L3Layout &lay) {
    out.ipv6 = true;
    out.rocev1 = false;
    zero(out.ip4);
    if (avail < kIpv6Len || contig < kIpv6Len)
        return ParseResult::TooShort;
    if (!decode_ipv6(l3, avail, out.ip6))
        return ParseResult::BadIpHeader;
    if (kIpv6Len + size_t{out.ip6.payload_len} > avail)
        return ParseResult::TooShort;
    if (out.ip6.next_hdr != kIpProtoUdp) /* extension headers are not used by RoCEv2 */
        return ParseResult::NotRoce;
    lay.l4_off = kIpv6Len;
    lay.ip_end = kIpv6Len + out.ip6.payload_len;
    lay.udp_len = out.ip6.payload_len;
    return ParseResult::Ok;
}

/* The UDP header of a RoCEv2 frame: port 4791, a length that agrees with the IP header's. */
[[gnu::always_inline]] inline ParseResult parse_udp(const uint8_t *l3, size_t contig,
                                                    ParsedPacket &out, L3Layout &lay) {
    if (lay.udp_len < kUdpLen)
        return ParseResult::BadUdpLength;
    if (lay.l4_off + kUdpLen > contig)
        return ParseResult::TooShort;
    out.udp = decode_udp(l3 + lay.l4_off);
    if (out.udp.dport != kRoceV2UdpPort)
        return ParseResult::NotRoce;
    if (out.udp.len != lay.udp_len)
        return ParseResult::BadUdpLength;
    lay.roce_len = lay.udp_len - kUdpLen;
    lay.bth_off = lay.l4_off + kUdpLen;
    return ParseResult::Ok;
}

/* GIDs, ECN, DSCP and TTL from the IP header (or the GRH). */
[[gnu::always_inline]] inline void l3_summary(ParsedPacket &out) {
    if (out.ipv6) {
        std::memcpy(out.src_gid, out.ip6.src, 16);
        std::memcpy(out.dst_gid, out.ip6.dst, 16);
        out.ecn = out.ip6.tclass & 3;
        out.dscp = out.ip6.tclass >> 2;
        out.ttl = out.ip6.hop_limit;
    } else {
        gid_from_ipv4(out.ip4.src, out.src_gid);
        gid_from_ipv4(out.ip4.dst, out.dst_gid);
        out.ecn = out.ip4.tos & 3;
        out.dscp = out.ip4.tos >> 2;
        out.ttl = out.ip4.ttl;
    }
}

/* The extended headers (all inside hdr_len, checked before); those this opcode does not
 * carry are zero, as a fresh ParsedPacket would have them. */
[[gnu::always_inline]] inline void decode_ext_headers(const uint8_t *bth, const OpcodeInfo &op,
                                                      ParsedPacket &out) {
    out.reth = op.off_reth ? decode_reth(bth + op.off_reth) : Reth{};
    if (op.off_atomic_eth)
        out.atomic = decode_atomic_eth(bth + op.off_atomic_eth);
    else
        zero(out.atomic);
    out.deth = op.off_deth ? decode_deth(bth + op.off_deth) : Deth{};
    out.aeth = op.off_aeth ? decode_aeth(bth + op.off_aeth) : Aeth{};
    out.atomic_ack =
        op.off_atomic_ack_eth ? decode_atomic_ack_eth(bth + op.off_atomic_ack_eth) : AtomicAckEth{};
    out.imm = op.off_imm ? decode_u32(bth + op.off_imm) : 0;
    out.ieth = op.off_ieth ? decode_u32(bth + op.off_ieth) : 0;
}

/* BTH, opcode, header length, pad, then the extended headers and the payload's place. */
[[gnu::always_inline]] inline ParseResult parse_transport(const uint8_t *bth, size_t roce_len,
                                                          size_t contig, ParsedPacket &out) {
    if (roce_len < kBthLen + kIcrcLen || out.bth_off + kBthLen > contig)
        return ParseResult::TooShort;
    decode_bth(bth, out.bth);
    if (out.bth.tver != 0)
        return ParseResult::BadTver;
    const OpcodeInfo &op = opcode_info(out.bth.opcode);
    if (!op.valid())
        return ParseResult::BadOpcode;
    out.op = &op;
    if (roce_len < size_t{op.hdr_len} + kIcrcLen || out.bth_off + size_t{op.hdr_len} > contig)
        return ParseResult::TooShort;
    const size_t data_area = roce_len - op.hdr_len - kIcrcLen; /* payload + pad */
    if (out.bth.pad_cnt > data_area)
        return ParseResult::BadPadLength;
    decode_ext_headers(bth, op, out);
    out.payload_off = static_cast<uint32_t>(out.bth_off + op.hdr_len);
    out.payload_len = static_cast<uint32_t>(data_area - out.bth.pad_cnt);
    return ParseResult::Ok;
}

/* The ICRC of a contiguous frame: loaded, and checked when asked. The trailer is loaded
 * after the CRC pass, which streams the frame up to it: loaded first, a frame written by
 * another core (memif zero-copy, virtio_user RX) paid a demand miss on its last line
 * before the fold began. The contiguous ICRC reads the frame in place, 8 bytes before l3
 * included (l2 >= 14). */
[[gnu::always_inline]] inline ParseResult check_icrc(const uint8_t *l3, size_t ip_end,
                                                     bool verify_icrc, ParsedPacket &out) {
    if (!verify_icrc) {
        out.icrc = icrc_load(l3 + ip_end - kIcrcLen);
        return ParseResult::Ok;
    }
    const uint32_t crc = out.rocev1 ? icrc_v1_compute(l3, ip_end - kIcrcLen)
                                    : icrc_compute_contig(l3, ip_end - kIcrcLen, out.ipv6);
    out.icrc = icrc_load(l3 + ip_end - kIcrcLen);
    return crc == out.icrc ? ParseResult::Ok : ParseResult::BadIcrc;
}

/* contig: bytes readable at frame (== len for a contiguous frame). Header reads are
 * bounded by contig, length consistency by len. */
ParseResult parse_impl(const uint8_t *frame, size_t contig, size_t len, ParsedPacket &out,
                       bool verify_icrc) {
    /* No `out = ParsedPacket{}`: zeroing the whole struct (a 288-byte rep stos) cost a
     * tenth of the server's time at 64 B. Instead every path to Ok writes every field
     * (those a frame does not carry are zeroed where the path knows it); a rejected parse
     * leaves the fields it did not reach as they were. */
    out.payload = nullptr;
    out.payload_segs = nullptr;
    out.payload_nsegs = 0;
    out.icrc = 0;
    out.op = nullptr;
    const size_t l2 = decode_eth(frame, contig, out.eth);
    if (l2 == 0)
        return ParseResult::TooShort;
    const uint16_t et = out.eth.ethertype;
    const uint8_t *l3 = frame + l2;
    L3Layout lay;
    ParseResult r;
    if (et == kEtherTypeIpv4)
        r = parse_ipv4(l3, len - l2, contig - l2, out, lay);
    else if (et == kEtherTypeIpv6)
        r = parse_ipv6(l3, len - l2, contig - l2, out, lay);
    else if (et == kEtherTypeRoceV1)
        r = parse_grh(l3, len - l2, contig - l2, out, lay);
    else
        return bad_ethertype(et) ? ParseResult::BadEthertype : ParseResult::NotRoce;
    if (r == ParseResult::Ok && !out.rocev1)
        r = parse_udp(l3, contig - l2, out, lay);
    if (r != ParseResult::Ok)
        return r;
    l3_summary(out);
    out.l3_off = static_cast<uint16_t>(l2);
    out.bth_off = static_cast<uint16_t>(l2 + lay.bth_off);
    const uint8_t *bth = l3 + lay.bth_off;
    if ((r = parse_transport(bth, lay.roce_len, contig, out)) != ParseResult::Ok)
        return r;
    out.frame_len = static_cast<uint32_t>(l2 + lay.ip_end);
    if (l2 + lay.ip_end > contig) /* scattered: the caller reads payload and ICRC */
        return ParseResult::Ok;
    out.payload = bth + out.op->hdr_len;
    return check_icrc(l3, lay.ip_end, verify_icrc, out);
}
} // namespace

ParseResult parse_frame(const uint8_t *frame, size_t len, ParsedPacket &out, bool verify_icrc) {
    return parse_impl(frame, len, len, out, verify_icrc);
}

namespace {
/* gid_from_ipv4 inline, from the address as it lies in the frame (network order). */
inline void gid_v4(const uint8_t *ip, uint8_t gid[16]) {
    static constexpr uint8_t kHead[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    std::memcpy(gid, kHead, 12);
    std::memcpy(gid + 12, ip, 4);
}
} // namespace

namespace {
/* The ICRC's masked bytes of the fixed part (IP TOS, TTL, checksum; UDP checksum; BTH
 * byte 4) and the IP ID: what AckIcrcCache does not compare. 0xFF = compared. */
alignas(16) constexpr uint8_t kAckCmpMask[48] = {
    0xFF, 0,    0xFF, 0xFF, 0,    0,    0xFF, 0xFF, 0,    0xFF, 0, 0,
    0xFF, 0xFF, 0xFF, 0xFF,                                           /* IP */
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, /* IP end, UDP */
    0xFF, 0xFF, 0xFF, 0xFF, 0,    0xFF, 0xFF, 0xFF,                   /* BTH 0..7 */
    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0, 0};
/* The CRC-32 (no init, no final xor: the linear part) of byte b at position p of the 44
 * bytes AckIcrcCache::crc_fixed covers, all others zero: what a change of b there adds
 * to the CRC. For the IP ID (L3 bytes 4 and 5, buffer 12 and 13), which some senders
 * (Linux rxe) change in every frame. */
using DeltaTable = std::array<uint32_t, 256>;
constexpr DeltaTable make_delta(size_t p) {
    DeltaTable t{};
    for (uint32_t b = 0; b < 256; ++b) {
        uint32_t c = slice8::kT[0][b];
        for (size_t k = p + 1; k < 8 + AckIcrcCache::kFixed; ++k)
            c = slice8::kT[0][c & 0xFF] ^ (c >> 8);
        t[b] = c;
    }
    return t;
}
constexpr DeltaTable kIdHi = make_delta(8 + 4), kIdLo = make_delta(8 + 5);
} // namespace

uint32_t AckIcrcCache::compute(const uint8_t *l3) {
    /* Same bytes where they count (the masked ones never do): 36 bytes as 16 + 16 + the
     * last 16 overlapping, under the mask. */
    const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(l3));
    const __m128i a1 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(l3 + 16));
    const __m128i a2 = _mm_loadu_si128(reinterpret_cast<const __m128i *>(l3 + kFixed - 16));
    const __m128i d0 =
        _mm_and_si128(_mm_xor_si128(a0, _mm_loadu_si128(reinterpret_cast<const __m128i *>(fixed))),
                      _mm_load_si128(reinterpret_cast<const __m128i *>(kAckCmpMask)));
    const __m128i d1 = _mm_and_si128(
        _mm_xor_si128(a1, _mm_loadu_si128(reinterpret_cast<const __m128i *>(fixed + 16))),
        _mm_load_si128(reinterpret_cast<const __m128i *>(kAckCmpMask + 16)));
    const __m128i d2 = _mm_and_si128(
        _mm_xor_si128(a2, _mm_loadu_si128(reinterpret_cast<const __m128i *>(fixed + kFixed - 16))),
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(kAckCmpMask + kFixed - 16)));
    const __m128i d = _mm_or_si128(_mm_or_si128(d0, d1), d2);
    if (valid && _mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) == 0xFFFF) {
        ++hits;
        const uint32_t crc = crc_fixed ^ kIdHi[static_cast<uint8_t>(l3[4] ^ fixed[4])] ^
                             kIdLo[static_cast<uint8_t>(l3[5] ^ fixed[5])];
        return slice8::crc32_continue8(crc, l3 + kFixed);
    }
    ++misses;
    /* The fixed part as the ICRC sees it (AckTemplate::learn's masks, IPv4): 0xFF
     * prefix, IP TOS, TTL and checksum, UDP checksum and BTH byte 4 set to all ones. */
    uint8_t buf[8 + kFixed];
    std::memset(buf, 0xFF, 8);
    std::memcpy(buf + 8, l3, kFixed);
    uint8_t *h = buf + 8;
    h[1] = 0xFF;
    h[8] = 0xFF;
    h[10] = h[11] = 0xFF;
    h[kIpv4Len + 6] = h[kIpv4Len + 7] = 0xFF;
    h[kIpv4Len + kUdpLen + 4] = 0xFF;
    crc_fixed = crc32_eth(buf, sizeof buf);
    std::memcpy(fixed, l3, kFixed);
    valid = true;
    return slice8::crc32_continue8(crc_fixed, l3 + kFixed);
}

namespace {
/* Header bytes (BTH and extended headers) of the opcodes parse_frame_rc_small takes, 0 for
 * the rest. */
constexpr std::array<uint8_t, kRcAcknowledge + 1> small_hdr_lens() {
    std::array<uint8_t, kRcAcknowledge + 1> t{};
    t[kRcSendOnly] = kBthLen;
    t[kRcSendOnlyImm] = kBthLen + 4;
    t[kRcWriteOnly] = kBthLen + kRethLen;
    t[kRcWriteOnlyImm] = kBthLen + kRethLen + 4;
    t[kRcAcknowledge] = kBthLen + kAethLen;
    return t;
}
constexpr auto kSmallHdrLen = small_hdr_lens();
} // namespace

bool parse_small_frame(const uint8_t *f, size_t len, SmallFrame &out, AckIcrcCache *acks) {
    /* Offsets of an untagged IPv4 frame without options: L3 at 14, UDP at 34, BTH at 42.
     * Each test below is one parse_impl makes (or implies) on the way to Ok for such a
     * frame; the generic path's other branches cannot be taken by it. */
    constexpr size_t l2 = kEthLen, bo = kEthLen + kIpv4Len + kUdpLen;
    if (len < bo + kBthLen + kIcrcLen) /* the shortest: an empty SEND ONLY, 58 bytes */
        return false;
    if (f[12] != 0x08 || f[13] != 0x00 || f[l2] != 0x45 || f[l2 + 9] != kIpProtoUdp)
        return false;
    const uint8_t *bth = f + bo;
    const uint8_t opc = bth[0];
    /* The write_bw and write_lat frames first, as two compares. */
    size_t hdr_len;
    if (opc == kRcWriteOnly)
        hdr_len = kBthLen + kRethLen;
    else if (opc == kRcAcknowledge)
        hdr_len = kBthLen + kAethLen;
    else if (opc < kRcAcknowledge && kSmallHdrLen[opc] != 0)
        hdr_len = kSmallHdrLen[opc];
    else
        return false;
    const uint8_t *l3 = f + l2;
    const uint16_t total = load_be16(l3 + 2);
    /* total covers IP + UDP + headers + ICRC; within len; not a fragment. */
    if (total < kIpv4Len + kUdpLen + hdr_len + kIcrcLen || total > len - l2 ||
        (load_be16(l3 + 6) & kIpv4MfOffset) != 0)
        return false;
    const size_t udp_len = total - kIpv4Len;
    const uint8_t *udp = l3 + kIpv4Len;
    if (load_be16(udp + 2) != kRoceV2UdpPort || load_be16(udp + 4) != udp_len)
        return false;
    if ((bth[1] & 0x0F) != 0) /* TVer */
        return false;
    const uint32_t pad = (bth[1] >> 4) & 3;
    const size_t data_area = udp_len - kUdpLen - hdr_len - kIcrcLen;
    if (pad > data_area)
        return false;
    const size_t crc_len = total - kIcrcLen;
    const uint32_t crc = acks != nullptr && opc == kRcAcknowledge && crc_len == 44
                             ? acks->compute(l3)
                             : icrc_compute_contig(l3, crc_len, false);
    out.icrc = icrc_load(l3 + crc_len);
    if (crc != out.icrc)
        return false;

    const uint32_t w0 = load_be32(bth), w1 = load_be32(bth + 4), w2 = load_be32(bth + 8);
    out.bth.opcode = opc;
    out.bth.se = (w0 & 0x00800000u) != 0;      /* BTH byte 1 bit 7 */
    out.bth.ack_req = (w2 & 0x80000000u) != 0; /* BTH byte 8 bit 7 */
    out.bth.pkey = static_cast<uint16_t>(w0);
    out.bth.dest_qp = w1 & 0xFFFFFF;
    out.bth.psn = w2 & 0xFFFFFF;
    out.op = &opcode_info(opc);
    out.ecn = l3[1] & 3;
    out.hdr_len = static_cast<uint8_t>(hdr_len);
    std::memcpy(out.ip_pair, l3 + 12, 8);
    out.dst_ip = load_be32(l3 + 16);
    const uint8_t *ext = bth + kBthLen;
    out.imm = 0;
    if (opc == kRcAcknowledge) {
        out.reth = Reth{};
        out.aeth = Aeth{ext[0], load_be24(ext + 1)};
    } else {
        out.aeth = Aeth{};
        if (opc == kRcWriteOnly || opc == kRcWriteOnlyImm) {
            out.reth = Reth{(uint64_t{load_be32(ext)} << 32) | load_be32(ext + 4),
                            load_be32(ext + 8), load_be32(ext + 12)};
            ext += kRethLen;
        } else {
            out.reth = Reth{};
        }
        if (opc == kRcWriteOnlyImm || opc == kRcSendOnlyImm)
            out.imm = load_be32(ext);
    }
    out.frame = f;
    out.payload = bth + hdr_len;
    out.payload_len = static_cast<uint32_t>(data_area - pad);
    return true;
}

void expand_small_frame(const SmallFrame &s, ParsedPacket &out) {
    constexpr size_t l2 = kEthLen, bo = kEthLen + kIpv4Len + kUdpLen;
    const uint8_t *f = s.frame, *l3 = f + l2, *udp = l3 + kIpv4Len;
    const uint16_t total = load_be16(l3 + 2);
    std::memcpy(out.eth.dst, f, 6);
    std::memcpy(out.eth.src, f + 6, 6);
    out.eth.has_vlan = false;
    out.eth.vlan_tci = 0;
    out.eth.ethertype = kEtherTypeIpv4;
    out.ipv6 = out.rocev1 = false;
    zero(out.ip6);
    out.ip4.tos = l3[1];
    out.ip4.total_len = total;
    out.ip4.id = load_be16(l3 + 4);
    out.ip4.frag = load_be16(l3 + 6);
    out.ip4.ttl = l3[8];
    out.ip4.proto = kIpProtoUdp;
    out.ip4.checksum = load_be16(l3 + 10);
    out.ip4.src = load_be32(l3 + 12);
    out.ip4.dst = s.dst_ip;
    out.udp = UdpHdr{load_be16(udp), kRoceV2UdpPort, static_cast<uint16_t>(total - kIpv4Len),
                     load_be16(udp + 6)};
    gid_v4(l3 + 12, out.src_gid);
    gid_v4(l3 + 16, out.dst_gid);
    out.ecn = out.ip4.tos & 3;
    out.dscp = out.ip4.tos >> 2;
    out.ttl = out.ip4.ttl;
    out.l3_off = static_cast<uint16_t>(l2);
    out.bth_off = static_cast<uint16_t>(bo);
    decode_bth(f + bo, out.bth);
    out.op = s.op;
    zero(out.atomic);
    zero(out.deth);
    zero(out.atomic_ack);
    out.ieth = 0;
    out.imm = s.imm;
    out.reth = s.reth;
    out.aeth = s.aeth;
    out.payload = s.payload;
    out.payload_len = s.payload_len;
    out.payload_segs = nullptr;
    out.payload_nsegs = 0;
    out.payload_off = static_cast<uint32_t>(bo + s.hdr_len);
    out.icrc = s.icrc;
    out.frame_len = static_cast<uint32_t>(l2 + total);
}

bool parse_frame_rc_small(const uint8_t *f, size_t len, ParsedPacket &out, AckIcrcCache *acks) {
    SmallFrame s;
    if (!parse_small_frame(f, len, s, acks))
        return false;
    expand_small_frame(s, out);
    return true;
}

ParseResult parse_frame_headers(const uint8_t *frame, size_t contig_len, size_t frame_len,
                                ParsedPacket &out) {
    if (contig_len > frame_len)
        contig_len = frame_len;
    const ParseResult r = parse_impl(frame, contig_len, frame_len, out, false);
    out.payload = nullptr;
    out.icrc = 0;
    return r;
}

/* ---- build ---- */

size_t headers_len(const FrameSpec &s) {
    const OpcodeInfo &op = opcode_info(s.bth.opcode);
    if (!op.valid())
        return 0;
    if (s.rocev1)
        return encoded_len(s.eth) + kGrhLen + op.hdr_len;
    return encoded_len(s.eth) + (s.ipv6 ? kIpv6Len : kIpv4Len) + kUdpLen + op.hdr_len;
}

namespace {
inline uint32_t pad_for(uint32_t payload_len) { return (4 - (payload_len & 3)) & 3; }
} // namespace

size_t frame_len(const FrameSpec &s) {
    const size_t h = headers_len(s);
    if (h == 0)
        return 0;
    return h + s.payload_len + pad_for(s.payload_len) + kIcrcLen;
}

namespace detail {
uint8_t *write_transport_headers(const FrameSpec &s, const OpcodeInfo &op, uint32_t pad,
                                 uint8_t *bth) {
    Bth b = s.bth;
    b.pad_cnt = static_cast<uint8_t>(pad);
    encode(b, bth);
    if (op.off_reth)
        encode(s.reth, bth + op.off_reth);
    if (op.off_atomic_eth)
        encode(s.atomic, bth + op.off_atomic_eth);
    if (op.off_deth)
        encode(s.deth, bth + op.off_deth);
    if (op.off_aeth)
        encode(s.aeth, bth + op.off_aeth);
    if (op.off_atomic_ack_eth)
        encode(s.atomic_ack, bth + op.off_atomic_ack_eth);
    if (op.off_imm)
        encode_u32(s.imm, bth + op.off_imm);
    if (op.off_ieth)
        encode_u32(s.ieth, bth + op.off_ieth);
    if (op.has(kHdrCnpPad))
        std::memset(bth + op.hdr_len - kCnpPadLen, 0, kCnpPadLen);
    return bth + op.hdr_len;
}

size_t finish_frame(const FrameSpec &s, uint8_t *l3, uint8_t *p) {
    uint8_t *const start = p;
    const uint32_t pad = pad_len(s.payload_len);
    uint32_t left = s.payload_len;
    if (left != 0 && s.nsegs == 1 && s.segs[0].len >= left) { /* one segment: most packets */
        copy_payload(p, s.segs[0].addr, left);
        p += left;
        left = 0;
    }
    for (uint32_t i = 0; i < s.nsegs && left > 0; ++i) {
        const uint32_t n = s.segs[i].len < left ? s.segs[i].len : left;
        copy_payload(p, s.segs[i].addr, n);
        p += n;
        left -= n;
    }
    if (left != 0) /* segs hold fewer bytes than payload_len */
        return 0;
    std::memset(p, 0, pad);
    p += pad;
    const auto n = static_cast<size_t>(p - l3);
    icrc_store(s.rocev1 ? icrc_v1_compute(l3, n) : icrc_compute_inplace(l3, n, s.ipv6), p);
    return static_cast<size_t>(p - start) + kIcrcLen;
}
} // namespace detail

namespace {
/* Writes L2..extended headers; returns the pointer to the payload start. */
uint8_t *write_headers(const FrameSpec &s, uint8_t *out) {
    const OpcodeInfo &op = opcode_info(s.bth.opcode);
    const uint32_t pad = pad_for(s.payload_len);
    const size_t ip_len = s.ipv6 ? kIpv6Len : kIpv4Len;
    const size_t udp_len = kUdpLen + op.hdr_len + s.payload_len + pad + kIcrcLen;

    EthHdr eth = s.eth;
    eth.ethertype = s.rocev1 ? kEtherTypeRoceV1 : s.ipv6 ? kEtherTypeIpv6 : kEtherTypeIpv4;
    const size_t l2 = encode(eth, out);
    uint8_t *l3 = out + l2;
    if (s.rocev1) {
        write_grh(s.tos, s.flow_label, static_cast<uint16_t>(udp_len - kUdpLen), s.ttl, s.src_gid,
                  s.dst_gid, l3);
        return detail::write_transport_headers(s, op, pad, l3 + kGrhLen);
    }

    if (s.ipv6) {
        Ipv6Hdr ip{};
        ip.tclass = s.tos;
        ip.flow_label = s.flow_label;
        ip.payload_len = static_cast<uint16_t>(udp_len);
        ip.next_hdr = kIpProtoUdp;
        ip.hop_limit = s.ttl;
        std::memcpy(ip.src, s.src_gid, 16);
        std::memcpy(ip.dst, s.dst_gid, 16);
        encode(ip, l3);
    } else {
        Ipv4Hdr ip{};
        ip.tos = s.tos;
        ip.total_len = static_cast<uint16_t>(kIpv4Len + udp_len);
        ip.id = s.ip_id;
        ip.frag = kIpv4Df;
        ip.ttl = s.ttl;
        ip.proto = kIpProtoUdp;
        ip.src = gid_to_ipv4(s.src_gid);
        ip.dst = gid_to_ipv4(s.dst_gid);
        encode(ip, l3);
    }
    uint8_t *udp = l3 + ip_len;
    encode(UdpHdr{s.udp_sport, kRoceV2UdpPort, static_cast<uint16_t>(udp_len), 0}, udp);

    return detail::write_transport_headers(s, op, pad, udp + kUdpLen);
}

bool ip_len_ok(const FrameSpec &s) {
    const size_t h = headers_len(s);
    const size_t l2 = encoded_len(s.eth);
    return h != 0 && h - l2 + s.payload_len + pad_for(s.payload_len) + kIcrcLen <= 0xFFFF;
}
} // namespace

size_t build_headers(const FrameSpec &s, uint8_t *out, size_t cap) {
    const size_t h = headers_len(s);
    if (h == 0 || h > cap || !ip_len_ok(s))
        return 0;
    write_headers(s, out);
    return h;
}

size_t build_frame(const FrameSpec &s, uint8_t *out, size_t cap) {
    const size_t total = frame_len(s);
    if (total == 0 || total > cap || !ip_len_ok(s))
        return 0;
    uint8_t *p = write_headers(s, out);
    if (detail::finish_frame(s, out + encoded_len(s.eth), p) == 0)
        return 0;
    return total;
}

/* ---- helpers ---- */

void gid_from_ipv4(uint32_t ip, uint8_t gid[16]) {
    std::memset(gid, 0, 10);
    gid[10] = gid[11] = 0xFF;
    gid[12] = static_cast<uint8_t>(ip >> 24);
    gid[13] = static_cast<uint8_t>(ip >> 16);
    gid[14] = static_cast<uint8_t>(ip >> 8);
    gid[15] = static_cast<uint8_t>(ip);
}

bool gid_is_ipv4(const uint8_t gid[16]) {
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    return std::memcmp(gid, kPrefix, 12) == 0;
}

uint32_t gid_to_ipv4(const uint8_t gid[16]) { return load_be32(gid + 12); }

/* Linux hash_32(): multiplicative hash with GOLDEN_RATIO_32, top `bits` bits. rxe
 * (rxe_qp.c, rxe_qp_init_req) hashes its *own* (source) QPN, not the BTH DestQP. In the
 * vectors this only shows on UD (DETH.SrcQP 0x12 -> 63494) and QP1 (-> 55410), where both
 * ends happen to have the same QPN; RC QPs use the flow-label rule below instead. */
uint16_t udp_sport_for_qpn(uint32_t qpn) {
    const uint32_t h = (qpn * 0x61C88647u) >> (32 - 14);
    return static_cast<uint16_t>(0xC000 | (h & 0x3FFF));
}

uint32_t rdma_calc_flow_label(uint32_t lqpn, uint32_t rqpn) {
    uint64_t v = static_cast<uint64_t>(lqpn) * rqpn;
    v ^= v >> 20;
    v ^= v >> 40;
    return static_cast<uint32_t>(v & 0xFFFFF);
}

uint16_t udp_sport_for_flow_label(uint32_t fl) {
    return static_cast<uint16_t>(0xC000 | ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)));
}

} // namespace droce::wire
