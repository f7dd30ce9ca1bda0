/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for droce::wire::parse_frame: parses with and without the ICRC check,
 * and when the frame is accepted, rebuilds it from the decoded fields and parses the
 * result again; any disagreement aborts. */
#include <cstdlib>
#include <cstring>
#include <vector>

#include "wire_icrc.h"
#include "wire_packet.h"
#include "wire_rocev1.h"

using namespace droce::wire;

namespace {

[[noreturn]] void fail(const char *why) {
    __builtin_printf("fuzz_parse: %s\n", why);
    std::abort();
}

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            fail(#c);                                                                              \
    } while (0)

FrameSpec spec_from(const ParsedPacket &p, FrameSpec::Seg &seg) {
    FrameSpec s{};
    s.eth = p.eth;
    s.ipv6 = p.ipv6;
    s.rocev1 = p.rocev1; /* else a RoCEv1 frame came back as IPv6 RoCEv2 */
    std::memcpy(s.src_gid, p.src_gid, 16);
    std::memcpy(s.dst_gid, p.dst_gid, 16);
    s.tos = static_cast<uint8_t>(p.dscp << 2 | p.ecn);
    s.ttl = p.ttl;
    s.flow_label = p.ipv6 ? p.ip6.flow_label : 0;
    s.ip_id = p.ipv6 ? 0 : p.ip4.id;
    s.udp_sport = p.udp.sport;
    s.bth = p.bth;
    s.reth = p.reth;
    s.aeth = p.aeth;
    s.atomic = p.atomic;
    s.atomic_ack = p.atomic_ack;
    s.deth = p.deth;
    s.imm = p.imm;
    s.ieth = p.ieth;
    seg = FrameSpec::Seg{p.payload, p.payload_len};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = p.payload_len;
    return s;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ParsedPacket p, v;
    const ParseResult r = parse_frame(data, size, p, false);
    const ParseResult rv = parse_frame(data, size, v, true);
    /* the ICRC check can only turn Ok into BadIcrc */
    CHECK(r == rv || (r == ParseResult::Ok && rv == ParseResult::BadIcrc));
    if (r != ParseResult::Ok)
        return 0;

    /* bounds of what was decoded */
    CHECK(p.frame_len <= size);
    CHECK(p.op != nullptr && p.op->valid());
    CHECK(p.bth_off > p.l3_off && p.bth_off + p.op->hdr_len + 4u <= p.frame_len);
    CHECK(p.payload == data + p.bth_off + p.op->hdr_len);
    CHECK(p.bth_off + p.op->hdr_len + p.payload_len + p.bth.pad_cnt + 4u == p.frame_len);
    CHECK(p.icrc == icrc_load(data + p.frame_len - 4));
    if (rv == ParseResult::Ok)
        CHECK((p.rocev1
                   ? icrc_v1_compute(data + p.l3_off, p.frame_len - 4 - p.l3_off)
                   : icrc_compute(data + p.l3_off, p.frame_len - 4 - p.l3_off, p.ipv6)) == p.icrc);

    /* rebuild and re-parse */
    FrameSpec::Seg seg;
    const FrameSpec s = spec_from(p, seg);
    const size_t n = frame_len(s);
    CHECK(n != 0);
    std::vector<uint8_t> out(n);
    if (build_frame(s, out.data(), out.size()) != n) {
        /* only possible when the rebuilt datagram would exceed 64 KiB */
        CHECK(n > 0xFFFF);
        return 0;
    }
    ParsedPacket q;
    CHECK(parse_frame(out.data(), out.size(), q, true) == ParseResult::Ok);
    CHECK(q.frame_len == n);
    CHECK(std::memcmp(&q.eth.dst, &p.eth.dst, 6) == 0 &&
          std::memcmp(&q.eth.src, &p.eth.src, 6) == 0);
    CHECK(q.eth.has_vlan == p.eth.has_vlan && q.eth.vlan_tci == p.eth.vlan_tci);
    CHECK(q.eth.ethertype == p.eth.ethertype && q.ipv6 == p.ipv6 && q.rocev1 == p.rocev1);
    CHECK(std::memcmp(q.src_gid, p.src_gid, 16) == 0 && std::memcmp(q.dst_gid, p.dst_gid, 16) == 0);
    CHECK(q.ecn == p.ecn && q.dscp == p.dscp && q.ttl == p.ttl);
    if (p.ipv6)
        CHECK(q.ip6.flow_label == p.ip6.flow_label);
    else
        CHECK(q.ip4.id == p.ip4.id);
    CHECK(q.udp.sport == p.udp.sport && q.udp.dport == p.udp.dport);
    CHECK(q.bth.opcode == p.bth.opcode && q.bth.se == p.bth.se && q.bth.mig == p.bth.mig);
    CHECK(q.bth.pkey == p.bth.pkey && q.bth.fecn == p.bth.fecn && q.bth.becn == p.bth.becn);
    CHECK(q.bth.dest_qp == p.bth.dest_qp && q.bth.ack_req == p.bth.ack_req);
    CHECK(q.bth.psn == p.bth.psn && q.bth.tver == 0);
    CHECK(q.op == p.op);
    CHECK(q.reth.va == p.reth.va && q.reth.rkey == p.reth.rkey && q.reth.dma_len == p.reth.dma_len);
    CHECK(q.aeth.syndrome == p.aeth.syndrome && q.aeth.msn == p.aeth.msn);
    CHECK(q.atomic.va == p.atomic.va && q.atomic.rkey == p.atomic.rkey);
    CHECK(q.atomic.swap_add == p.atomic.swap_add && q.atomic.compare == p.atomic.compare);
    CHECK(q.atomic_ack.orig == p.atomic_ack.orig);
    CHECK(q.deth.qkey == p.deth.qkey && q.deth.src_qp == p.deth.src_qp);
    CHECK(q.imm == p.imm && q.ieth == p.ieth);
    CHECK(q.payload_len == p.payload_len);
    CHECK(p.payload_len == 0 || std::memcmp(q.payload, p.payload, p.payload_len) == 0);
    CHECK((q.payload_len + q.bth.pad_cnt) % 4 == 0);

    /* a frame that is already canonical (what droce itself sends) rebuilds bit-exact */
    if (rv == ParseResult::Ok && p.frame_len == n && n == size) {
        std::vector<uint8_t> canon(data, data + size);
        if (std::memcmp(canon.data(), out.data(), n) != 0) {
            /* allowed differences: fields the builder normalises */
            /* RoCEv1: the BTH follows the GRH, no UDP header */
            const size_t l3 = p.l3_off, udp = l3 + (p.ipv6 ? 40u : 20u),
                         bth = p.rocev1 ? udp : udp + 8;
            if (!p.ipv6) {
                canon[l3 + 6] = out[l3 + 6], canon[l3 + 7] = out[l3 + 7];     /* flags/frag */
                canon[l3 + 10] = out[l3 + 10], canon[l3 + 11] = out[l3 + 11]; /* checksum */
            }
            if (!p.rocev1)
                canon[udp + 6] = out[udp + 6], canon[udp + 7] = out[udp + 7]; /* UDP checksum */
            canon[bth + 4] = out[bth + 4];                                /* FECN/BECN + resv */
            canon[bth + 8] = out[bth + 8];                                /* AckReq + resv */
            if (p.op->off_deth)
                canon[bth + p.op->off_deth + 4] = out[bth + p.op->off_deth + 4]; /* resv */
            /* masked or ignored fields changed: the rebuilt ICRC may differ */
            canon[n - 4] = out[n - 4], canon[n - 3] = out[n - 3];
            canon[n - 2] = out[n - 2], canon[n - 1] = out[n - 1];
            CHECK(std::memcmp(canon.data(), out.data(), n) == 0);
        }
    }
    return 0;
}
