/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the receive path: parse_frame + the RC QPs of a connected
 * simulator pair (lib/rc responder and completer, lib/mem checks), built with
 * ASan/UBSan. Each input gets a fresh pair put in one of a few states, then one frame:
 *
 *   byte 0 (control): bit 7 = template mode, bit 0 = recompute the ICRC (so that
 *   mutations reach the transport instead of dying at the ICRC check), bit 1 = aim the
 *   frame at the pair (rewrite destination IP and BTH DestQP), bits 2-3 = the state
 *   (idle / requests outstanding at A with every answer lost / B inside a WRITE /
 *   B owing READ responses with its TX full), bits 4-5 = which QP is aimed at.
 *   raw mode: the rest is a frame (the seeds are every frame of the packet vectors).
 *   template mode: byte 1 picks a valid frame from the transport's own repertoire,
 *   bytes 2-3 where its RETH/AtomicETH points (offset in the target's arena), byte 4
 *   which key it carries, bytes 5-6 the RETH length; the rest are (offset, xor) byte
 *   pairs applied to the built frame.
 *
 * Checked after the fabric has run: no crash, no out-of-bounds or use-after-free
 * (ASan), no UB (UBSan), every byte of both endpoints' arenas outside their registered
 * regions unchanged, and the requester PSN invariants of every QP (Fabric's checker). */
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "sim_fabric.h"
#include "wire_icrc.h"
#include "wire_packet.h"

using namespace droce;
using namespace droce::sim;

namespace {

[[noreturn]] void fail(const char *why, const std::string &more = {}) {
    std::fprintf(stderr, "fuzz_rx: %s %s\n", why, more.c_str());
    std::abort();
}

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kAll =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr size_t kArena = 64 << 10;
/* Registered windows of each arena; everything else must never change. */
constexpr size_t kWin1 = 8 << 10, kWin1Len = 16 << 10; /* all access */
constexpr size_t kWin2 = 32 << 10, kWin2Len = 8 << 10; /* REMOTE_READ only */
constexpr size_t kWin3 = 48 << 10, kWin3Len = 4 << 10; /* PD 2, all access */

/* The arena's initial contents; filled once (per-byte loops would be slow under the
 * coverage instrumentation). */
const std::vector<uint8_t> &pattern() {
    static const std::vector<uint8_t> p = [] {
        std::vector<uint8_t> v(kArena);
        for (size_t i = 0; i < kArena; ++i)
            v[i] = static_cast<uint8_t>(i * 29 + (i >> 9) + 1);
        return v;
    }();
    return p;
}

/* [from, to) ranges of the arena that no region covers. */
constexpr size_t kHoles[][2] = {{0, kWin1},
                                {kWin1 + kWin1Len, kWin2},
                                {kWin2 + kWin2Len, kWin3},
                                {kWin3 + kWin3Len, kArena}};

struct Side {
    std::vector<uint8_t> arena;
    mem::MemoryRegion all{}, ro{}, pd2{};
    uint64_t at(size_t off) const { return reinterpret_cast<uint64_t>(arena.data() + off); }
    void init(Endpoint &e) {
        arena = pattern();
        all = e.mrs.reg(1, arena.data() + kWin1, kWin1Len, kAll).value();
        ro = e.mrs.reg(1, arena.data() + kWin2, kWin2Len, kAccessRemoteRead).value();
        pd2 = e.mrs.reg(2, arena.data() + kWin3, kWin3Len, kAll).value();
    }
    void check(const char *who) const {
        for (const auto &h : kHoles)
            if (std::memcmp(arena.data() + h[0], pattern().data() + h[0], h[1] - h[0]) != 0)
                fail("unregistered memory changed on", std::string(who) + " in [" +
                                                           std::to_string(h[0]) + ", " +
                                                           std::to_string(h[1]) + ")");
    }
};

void refresh_icrc(std::vector<uint8_t> &f) {
    wire::ParsedPacket p;
    if (wire::parse_frame(f.data(), f.size(), p, false) != wire::ParseResult::Ok)
        return;
    const uint8_t *l3 = f.data() + p.l3_off;
    const size_t crc_len = p.frame_len - 4 - p.l3_off;
    wire::icrc_store(wire::icrc_compute(l3, crc_len, p.ipv6), f.data() + p.frame_len - 4);
}

struct World {
    Fabric fab{1};
    Endpoint a{fab, kIpA, 1}, b{fab, kIpB, 2};
    SimCq scq_a, rcq_a, scq_b, rcq_b;
    rc::Qp *qa, *qb, *qa2, *qb2;
    Side sa, sb;

    World() {
        QpCap cap;
        cap.max_send_wr = 16;
        cap.max_recv_wr = 16;
        qa = &a.create_qp(0x11, &scq_a, &rcq_a, cap);
        qb = &b.create_qp(0x22, &scq_b, &rcq_b, cap);
        qa2 = &a.create_qp(0x33, &scq_a, &rcq_a, cap);
        qb2 = &b.create_qp(0x44, &scq_b, &rcq_b, cap, {}, nullptr, 2);
        QpAttr x;
        x.max_rd_atomic = x.max_dest_rd_atomic = 4;
        /* every op must reach the code behind the rights checks */
        x.qp_access_flags =
            kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
        a.connect(*qa, b, *qb, 0x100, 0x200, x);
        b.connect(*qb, a, *qa, 0x200, 0x100, x);
        a.connect(*qa2, b, *qb2, 0xFFFFF0, 0x600, x); /* PSNs about to wrap */
        b.connect(*qb2, a, *qa2, 0x600, 0xFFFFF0, x);
        sa.init(a);
        sb.init(b);
        fab.check_invariants = true;
        /* receives for SENDs: some into registered memory, one with a bad lkey */
        for (int i = 0; i < 3; ++i) {
            RecvWr r;
            r.wr_id = i;
            r.num_sge = 2;
            r.sg_list[0] = {sb.at(kWin1 + 1000 * i), 700, sb.all.key};
            r.sg_list[1] = {sb.at(kWin1 + 8000 + 1000 * i), 900, i == 2 ? sb.ro.key : sb.all.key};
            qb->post_recv(r);
        }
    }

    SendWr wr(WrOpcode op, uint64_t id, uint64_t local, uint32_t len, uint32_t lkey,
              uint64_t remote, uint32_t rkey) {
        SendWr w;
        w.wr_id = id;
        w.opcode = op;
        w.send_flags = kSendSignaled;
        w.num_sge = 1;
        w.sg_list[0] = {local, len, lkey};
        w.remote_addr = remote;
        w.rkey = rkey;
        w.compare_add = 5;
        w.swap = 7;
        return w;
    }

    void run(Time ns) { fab.run_until([] { return false; }, fab.now + ns); }

    /* bits 2-3 of the control byte */
    void prepare(unsigned state) {
        switch (state) {
        case 0:
            break;
        case 1: {
            /* A's requests are out, every answer is lost: the completer waits for them */
            qa->post_send(wr(WrOpcode::RdmaWrite, 1, sa.at(kWin1), 3000, sa.all.key,
                             sb.at(kWin1 + 4096), sb.all.key));
            qa->post_send(wr(WrOpcode::RdmaRead, 2, sa.at(kWin1 + 4096), 5000, sa.all.key,
                             sb.at(kWin1), sb.all.key));
            qa->post_send(wr(WrOpcode::AtomicFetchAndAdd, 3, sa.at(kWin1 + 12288), 8,
                             sa.all.key, sb.at(kWin1 + 64), sb.all.key));
            qa->post_send(wr(WrOpcode::Send, 4, sa.at(kWin1), 1500, sa.all.key, 0, 0));
            fab.on_send = [this](std::vector<uint8_t> &f) {
                if (f.size() >= 12 && std::memcmp(f.data() + 6, b.mac, 6) == 0)
                    f.clear();
            };
            run(20'000);
            fab.on_send = nullptr;
            break;
        }
        case 2: {
            /* B inside a 4 KiB WRITE (FIRST received) */
            qa->post_send(wr(WrOpcode::RdmaWrite, 1, sa.at(kWin1), 4096, sa.all.key,
                             sb.at(kWin1 + 2048), sb.all.key));
            int n = 0;
            fab.on_send = [&n, this](std::vector<uint8_t> &f) {
                if (std::memcmp(f.data() + 6, a.mac, 6) == 0 && n++ > 0)
                    f.clear();
            };
            run(20'000);
            fab.on_send = nullptr;
            break;
        }
        default: {
            /* B owes READ responses and its TX is full */
            qa->post_send(wr(WrOpcode::RdmaRead, 1, sa.at(kWin1), 6000, sa.all.key,
                             sb.at(kWin1 + 100), sb.all.key));
            b.tx_budget = 0;
            run(5'000);
            break;
        }
        }
    }
};

/* Valid frames the transport itself sends, as the raw material of template mode. */
std::vector<uint8_t> make_template(World &w, uint8_t pick, uint16_t va_off, uint8_t key_pick,
                                   uint16_t dma_len) {
    const bool to_b = (pick & 1) == 0;
    rc::Qp &from = to_b ? *w.qa : *w.qb;
    wire::FrameSpec s{};
    s.eth = from.path().eth;
    wire::gid_from_ipv4(to_b ? kIpA : kIpB, s.src_gid);
    wire::gid_from_ipv4(to_b ? kIpB : kIpA, s.dst_gid);
    s.ttl = 64;
    s.udp_sport = from.path().udp_sport;
    s.bth.pkey = 0xFFFF;
    s.bth.dest_qp = to_b ? w.qb->qpn() : w.qa->qpn();
    /* B expects A's PSNs (from 0x100) and A's completer answers to the same range */
    s.bth.psn = 0x100;
    s.bth.ack_req = true;
    Side &tgt = to_b ? w.sb : w.sa;
    static const uint8_t kOps[] = {
        wire::kRcSendFirst,         wire::kRcSendMiddle,         wire::kRcSendLast,
        wire::kRcSendOnlyImm,       wire::kRcWriteFirst,         wire::kRcWriteMiddle,
        wire::kRcWriteLastImm,      wire::kRcWriteOnly,          wire::kRcReadRequest,
        wire::kRcReadResponseFirst, wire::kRcReadResponseMiddle, wire::kRcReadResponseLast,
        wire::kRcReadResponseOnly,  wire::kRcAcknowledge,        wire::kRcAtomicAcknowledge,
        wire::kRcCompareSwap,       wire::kRcFetchAdd,           wire::kRcSendOnlyInv,
        wire::kCnp,                 wire::kUdSendOnly};
    s.bth.opcode = kOps[(pick >> 1) % sizeof(kOps)];
    const wire::OpcodeInfo &op = wire::opcode_info(s.bth.opcode);
    /* where it points and with which key come from the input: any byte of the arena,
     * a region's key, a stale-looking variant of one, or garbage */
    const uint32_t keys[] = {tgt.all.key, tgt.ro.key, tgt.pd2.key, tgt.all.key ^ 0x01,
                             tgt.all.key + 0x100, 0, key_pick * 0x01010101u, tgt.all.key};
    const uint32_t key = keys[key_pick & 7];
    s.reth = {tgt.at(va_off % kArena), key, dma_len};
    s.atomic = {tgt.at(va_off % kArena), key, 1, 2};
    s.aeth = {static_cast<uint8_t>((pick & 0x80) ? 0x62 : 0x1F), 1};
    s.atomic_ack.orig = 0x1234;
    static uint8_t payload[1024];
    for (size_t i = 0; i < sizeof(payload); ++i)
        payload[i] = static_cast<uint8_t>(i);
    const uint32_t n = op.is(wire::kOpPayload) ? ((pick & 0x40) ? 1024 : 100) : 0;
    const wire::FrameSpec::Seg seg{payload, n};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = n;
    std::vector<uint8_t> f(wire::frame_len(s));
    f.resize(wire::build_frame(s, f.data(), f.size()));
    return f;
}

/* bit 1: aim at the pair — source and destination IP (the QP takes packets from its
 * peer only) and BTH DestQP of a parseable frame */
void retarget(std::vector<uint8_t> &f, World &w, unsigned which) {
    wire::ParsedPacket p;
    if (wire::parse_frame(f.data(), f.size(), p, false) != wire::ParseResult::Ok)
        return;
    const bool to_b = (which & 1) == 0;
    const uint32_t ip = to_b ? kIpB : kIpA, src = to_b ? kIpA : kIpB;
    uint32_t qpn;
    switch (which) {
    case 0:
        qpn = w.qb->qpn();
        break;
    case 1:
        qpn = w.qa->qpn();
        break;
    case 2:
        qpn = w.qb2->qpn();
        break;
    default:
        qpn = w.qa2->qpn();
    }
    uint8_t *l3 = f.data() + p.l3_off;
    if (p.ipv6) {
        uint8_t gid[16];
        wire::gid_from_ipv4(src, gid);
        std::memcpy(l3 + 8, gid, 16);
        wire::gid_from_ipv4(ip, gid);
        std::memcpy(l3 + 24, gid, 16); /* stays IPv6: the sim routes IPv4-mapped GIDs */
    } else {
        for (int i = 0; i < 4; ++i) {
            l3[12 + i] = static_cast<uint8_t>(src >> (24 - 8 * i));
            l3[16 + i] = static_cast<uint8_t>(ip >> (24 - 8 * i));
        }
    }
    uint8_t *bth = f.data() + p.bth_off;
    bth[5] = static_cast<uint8_t>(qpn >> 16);
    bth[6] = static_cast<uint8_t>(qpn >> 8);
    bth[7] = static_cast<uint8_t>(qpn);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2 || size > 9100)
        return 0;
    const uint8_t ctl = data[0];
    World w;
    w.prepare((ctl >> 2) & 3);

    std::vector<uint8_t> f;
    if (ctl & 0x80) {
        /* byte 1 template, 2-3 va offset in the arena, 4 key, 5-6 RETH length, then
         * (offset, xor) pairs */
        uint8_t b[6] = {};
        std::memcpy(b, data + 1, std::min<size_t>(6, size - 1));
        f = make_template(w, b[0], static_cast<uint16_t>(b[1] << 8 | b[2]), b[3],
                          static_cast<uint16_t>(b[4] << 8 | b[5]));
        for (size_t i = 7; i + 1 < size && !f.empty(); i += 2)
            f[data[i] % f.size()] ^= data[i + 1];
    } else {
        f.assign(data + 1, data + size);
    }
    if (ctl & 2)
        retarget(f, w, (ctl >> 4) & 3);
    if (ctl & 1)
        refresh_icrc(f);

    /* The parser alone, with and without the ICRC, on the exact bytes (ASan-sized). */
    {
        std::vector<uint8_t> exact(f);
        wire::ParsedPacket p;
        (void)wire::parse_frame(exact.data(), exact.size(), p, false);
    }
    w.fab.send(std::move(f));
    w.b.tx_budget = 64;
    w.run(2'000'000); /* 2 ms of virtual time: answers, retransmissions, completions */

    if (!w.fab.violation.empty())
        fail("QP invariant:", w.fab.violation);
    w.sa.check("A");
    w.sb.check("B");
    /* Completions must name real work requests of their QPs. */
    for (const Wc &wc : w.scq_a.q)
        if (wc.wr_id > 4)
            fail("completion for a WR never posted:", std::to_string(wc.wr_id) + " status " + std::to_string(int(wc.status)) + " qp " + std::to_string(wc.qp_num) + " op " + std::to_string(int(wc.opcode)));
    return 0;
}
