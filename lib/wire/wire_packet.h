/* SPDX-License-Identifier: BSD-3-Clause */
/* Whole-frame parse and build for RoCEv2 (Ethernet [802.1Q] / IPv4|IPv6 / UDP 4791 /
 * BTH / extended headers / payload / pad / ICRC), and RoCEv1 (ethertype 0x8915, GRH
 * instead of IP/UDP: wire_rocev1.h). The parser never reads outside
 * [frame, frame+len) and reports every rejection as a named reason, which the
 * engine turns into a drop counter. */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "wire_headers.h"
#include "wire_icrc.h"
#include "wire_opcode.h"

namespace droce::wire {

/* Why a frame was not accepted as RoCEv2. Each value is a drop counter name. */
enum class ParseResult : uint8_t {
    Ok = 0,
    NotRoce, /* well-formed but not UDP 4791 (ARP, ICMP, other UDP...): not an error */
    TooShort, /* shorter than the headers it claims */
    BadEthertype,
    BadIpHeader, /* version/IHL/length inconsistent */
    IpFragment,
    BadUdpLength,
    BadTver,
    BadOpcode, /* unknown or unsupported opcode */
    BadPadLength, /* pad count larger than the payload area */
    BadIcrc,
    Count_
};
const char *parse_result_name(ParseResult r); /* "bad_icrc", "too_short", ... */

struct ParsedPacket {
    /* L2 */
    EthHdr eth;
    /* L3: addresses kept in GID form (IPv4 as ::ffff:a.b.c.d) */
    bool ipv6;   /* IPv6 header, or a RoCEv1 GRH (decoded into ip6 too) */
    bool rocev1; /* ethertype 0x8915: GRH, no UDP (udp is zero) */
    uint8_t src_gid[16];
    uint8_t dst_gid[16];
    uint8_t ecn; /* 0..3 (3 = CE) */
    uint8_t dscp;
    uint8_t ttl; /* TTL or hop limit */
    Ipv4Hdr ip4; /* valid when !ipv6 */
    Ipv6Hdr ip6; /* valid when ipv6 */
    UdpHdr udp;
    /* transport */
    Bth bth;
    const OpcodeInfo *op;
    Reth reth;
    Aeth aeth;
    AtomicEth atomic;
    AtomicAckEth atomic_ack;
    Deth deth;
    uint32_t imm; /* ImmDt, host order */
    uint32_t ieth; /* IETH (rkey to invalidate), host order */
    const uint8_t *payload; /* after extended headers, pad excluded; nullptr when the
                               payload is scattered (payload_segs) */
    uint32_t payload_len;
    /* Scattered payload (chained mbufs): payload_nsegs spans adding up to payload_len.
     * Empty for a contiguous frame. Use for_each_payload_chunk() to read either form. */
    const ByteSpan *payload_segs;
    uint32_t payload_nsegs;
    uint32_t payload_off; /* from the frame start */
    uint32_t icrc; /* as stored */
    /* offsets into the frame */
    uint16_t l3_off;
    uint16_t bth_off;
    uint32_t frame_len; /* L2 start to end of ICRC (trailing bytes, e.g. FCS or
                           Ethernet minimum padding, excluded) */
};

/* Parses a frame. verify_icrc=false skips the CRC (e.g. snaplen-truncated captures,
 * or a port that checked it already). The frame is only read. On Ok every field of out
 * is written (what the frame does not carry is zero; payload_segs empty), so a reused
 * ParsedPacket reads as a fresh one would; on a rejection only the result counts: the
 * fields the parse did not reach keep whatever out held before. */
ParseResult parse_frame(const uint8_t *frame, size_t len, ParsedPacket &out, bool verify_icrc);

/* A small RC frame read at fixed offsets, for the receive fast path: an untagged IPv4
 * RoCEv2 ACKNOWLEDGE, SEND ONLY or RDMA WRITE ONLY (either with immediate or without),
 * contiguous, its ICRC verified (parse_small_frame). Holds what the transport's straight
 * paths read and nothing else (a ParsedPacket is ten times its size, and filling it was
 * most of a small frame's parse); the members it has are named as ParsedPacket's, so
 * code written for a packet type reads either. expand_small_frame() gives the
 * ParsedPacket for the paths that need one. */
struct SmallFrame {
    struct Bth {
        uint8_t opcode;
        bool se;
        bool ack_req;
        uint16_t pkey;
        uint32_t dest_qp; /* 24 bits */
        uint32_t psn;     /* 24 bits */
    } bth;
    const OpcodeInfo *op;
    uint8_t ecn;
    uint8_t hdr_len;      /* BTH and extended headers */
    uint32_t ip_pair[2];  /* IPv4 source, destination as on the wire (network order) */
    uint32_t dst_ip;      /* the destination, host order */
    Reth reth;            /* WRITE ONLY [IMM]; zero for the others */
    Aeth aeth;            /* ACKNOWLEDGE; zero for the others */
    uint32_t imm;         /* ImmDt, host order; 0 without one */
    const uint8_t *frame; /* its first byte (L2) */
    const uint8_t *payload;
    uint32_t payload_len;
    uint32_t icrc; /* as stored */
    /* Contiguous always: for_each_payload_chunk reads it as a ParsedPacket's. */
    static constexpr const ByteSpan *payload_segs = nullptr;
    static constexpr uint32_t payload_nsegs = 0;
};

/* true: frame is one of the frames SmallFrame describes, well formed, ICRC verified, and
 * out describes it; parse_frame(frame, len, ..., true) gives Ok for it. false: anything
 * else (bad ICRC included); out is then garbage. With acks, an ACK's ICRC comes from
 * that cache (below). */
struct AckIcrcCache;
bool parse_small_frame(const uint8_t *frame, size_t len, SmallFrame &out,
                       AckIcrcCache *acks = nullptr);
/* The ParsedPacket parse_frame(frame, len, out, true) gives for a frame that
 * parse_small_frame took, from the view and the frame's bytes (no ICRC pass again). */
void expand_small_frame(const SmallFrame &s, ParsedPacket &out);

/* parse_small_frame, then expand_small_frame: true where parse_small_frame is, and out then
 * holds exactly what parse_frame(frame, len, out, true) gives (it returns Ok then);
 * false: out is garbage and the caller must run parse_frame, which classifies (and the
 * engine counts) the frame as before. */
bool parse_frame_rc_small(const uint8_t *frame, size_t len, ParsedPacket &out,
                          AckIcrcCache *acks = nullptr);

/* The ICRC of an untagged IPv4 ACK without the CRC pass over its fixed part: the ACKs of
 * one QP differ only in their last 8 covered bytes (BTH AckReq + PSN, AETH), so the CRC
 * of the masked 0xFF prefix and the first 36 bytes of L3 (IP, UDP, BTH up to DestQP) is
 * kept with those bytes, and an ACK whose first 36 bytes are the same continues it over
 * its last 8 (slicing-by-8) — the RX side of AckTemplate. Bytes the ICRC masks (TOS, TTL,
 * IP and UDP checksums, BTH byte 4) are not compared; a changed IP ID (Linux rxe changes
 * it in every frame) is folded in from per-byte tables (the CRC is linear). A frame with
 * other bytes there (another QP) recomputes and replaces the entry. The entry is the CRC
 * of exactly the bytes kept, so any frame is verified right whatever it held before.
 * One per RX worker (not thread-safe). */
struct AckIcrcCache {
    static constexpr size_t kFixed = 36; /* L3 bytes before BTH byte 8 */
    uint8_t fixed[kFixed] = {};
    uint32_t crc_fixed = 0;
    bool valid = false;
    uint64_t hits = 0, misses = 0;
    /* The ICRC over l3[0..44) of an IPv4 ACK (IP 20, UDP 8, BTH 12, AETH 4). */
    uint32_t compute(const uint8_t *l3);
};

/* Headers only, for a frame of frame_len bytes of which only the first contig_len are
 * contiguous at frame (a chained mbuf's first segment). Every header must lie inside
 * contig_len (else TooShort); the payload and the ICRC are neither read nor verified:
 * out.payload is nullptr, out.payload_off/payload_len/frame_len locate them and the
 * caller verifies the ICRC (icrc_compute_segments) and fills payload_segs. */
ParseResult parse_frame_headers(const uint8_t *frame, size_t contig_len, size_t frame_len,
                                ParsedPacket &out);

/* Calls f(const uint8_t *p, uint32_t n) for each contiguous piece of the payload, in order. */
template <class P, class F>
[[gnu::always_inline]] inline void for_each_payload_chunk(const P &p, F &&f) {
    if (p.payload_nsegs == 0) {
        if (p.payload_len)
            f(p.payload, p.payload_len);
        return;
    }
    for (uint32_t i = 0; i < p.payload_nsegs; ++i)
        if (p.payload_segs[i].len)
            f(p.payload_segs[i].addr, p.payload_segs[i].len);
}

/* Everything needed to build one RoCEv2 frame. Extended headers are taken from the
 * fields below according to the opcode table; unused ones are ignored. */
struct FrameSpec {
    EthHdr eth; /* ethertype is set by the builder */
    bool ipv6;
    uint8_t src_gid[16];
    uint8_t dst_gid[16];
    uint8_t tos; /* DSCP<<2 | ECN; IPv6 traffic class */
    uint8_t ttl; /* or hop limit */
    uint32_t flow_label; /* IPv6 only */
    uint16_t ip_id;
    uint16_t udp_sport;
    Bth bth; /* pad_cnt is computed by the builder from payload_len */
    Reth reth;
    Aeth aeth;
    AtomicEth atomic;
    AtomicAckEth atomic_ack;
    Deth deth;
    uint32_t imm;
    uint32_t ieth;
    /* payload gather list (copied by build_frame; build_headers leaves it out) */
    struct Seg {
        const uint8_t *addr;
        uint32_t len;
        /* lkey/rkey of the registered region addr lies in (0: not registered memory, e.g.
         * inline data): the engine may attach such a segment zero-copy. */
        uint32_t mr_key = 0;
    };
    const Seg *segs;
    uint32_t nsegs;
    uint32_t payload_len; /* sum of segs[].len */
    /* RoCEv1: a GRH (from src_gid, dst_gid, tos, ttl, flow_label) instead of IP/UDP;
     * ipv6, ip_id and udp_sport are then ignored. */
    bool rocev1 = false;
    /* The sender's path generation (wire_data_template.h), 0 for none: a one-packet RC
     * request built from this spec teaches the QP's DataTemplate its headers. */
    uint64_t path_gen = 0;
};

/* Bytes of headers (L2..last extended header) for this spec. */
size_t headers_len(const FrameSpec &s);
/* Whole frame length: headers + payload + pad + ICRC. */
size_t frame_len(const FrameSpec &s);
/* Writes the whole frame (headers, payload copy, zero pad, ICRC) into out; returns its
 * length, or 0 when cap is too small. */
size_t build_frame(const FrameSpec &s, uint8_t *out, size_t cap);
/* Writes the headers only (L2..last extended header, lengths as for the whole frame);
 * returns headers_len(s), or 0 when cap is too small. Payload, pad and ICRC are the
 * caller's (zero-copy TX). */
size_t build_headers(const FrameSpec &s, uint8_t *out, size_t cap);
/* Pad bytes after a payload of this length. */
inline uint32_t pad_len(uint32_t payload_len) { return (4 - (payload_len & 3)) & 3; }

/* Pieces of build_frame shared with HeaderTemplate (wire_template.h); not for other use. */
namespace detail {
/* Writes the BTH (pad count `pad`) and the extended headers of op at bth; returns the
 * payload start. */
uint8_t *write_transport_headers(const FrameSpec &s, const OpcodeInfo &op, uint32_t pad,
                                 uint8_t *bth);
/* Copies the payload to p, zero-pads it and appends the ICRC over [l3, end of pad);
 * returns the bytes written from p (payload + pad + ICRC), 0 when segs hold fewer than
 * payload_len bytes. */
size_t finish_frame(const FrameSpec &s, uint8_t *l3, uint8_t *p);
/* A small message's payload (16..64 bytes: the 64 B write_bw's) as two fixed-size,
 * possibly overlapping copies the compiler inlines, not a call into libc's memcpy
 * (most of the copy's cost on the 64 B client, where it was a call). */
[[gnu::always_inline]] inline void copy_payload(uint8_t *d, const uint8_t *src, uint32_t n) {
    if (n >= 32 && n <= 64) {
        std::memcpy(d, src, 32);
        std::memcpy(d + n - 32, src + n - 32, 32);
    } else if (n >= 16 && n < 32) {
        std::memcpy(d, src, 16);
        std::memcpy(d + n - 16, src + n - 16, 16);
    } else {
        std::memcpy(d, src, n);
    }
}
} // namespace detail

/* Converts between IPv4 addresses (host order) and IPv4-mapped GIDs. */
void gid_from_ipv4(uint32_t ip, uint8_t gid[16]);
bool gid_is_ipv4(const uint8_t gid[16]);
uint32_t gid_to_ipv4(const uint8_t gid[16]);

/* rxe's UDP source port rule for a QP: 0xC000 | (hash_32(qpn, 14) & 0x3fff), qpn being
 * the *sending* (local) QP. rxe uses it as is for UD QPs and QP1 (verified on the vectors:
 * UD SEND_ONLY sport == this of DETH.SrcQP). */
uint16_t udp_sport_for_qpn(uint32_t qpn);

/* RC QPs on rxe (Linux core _ib_modify_qp, RoCEv2): when the AV carries no flow label the
 * core sets flow_label = rdma_calc_flow_label(local QPN, remote QPN) and rxe then uses
 * rdma_flow_label_to_udp_sport(flow_label) instead of the rule above. Symmetric in the
 * two QPNs, so both directions of a connection use the same sport. Verified on every
 * verbs-connected RC capture in vectors/rxe (RDMA-CM connections take the flow label
 * from the CM, a hash of the rdma_cm ports, which these helpers cannot reproduce). */
uint32_t rdma_calc_flow_label(uint32_t lqpn, uint32_t rqpn);
uint16_t udp_sport_for_flow_label(uint32_t flow_label);

} // namespace droce::wire
