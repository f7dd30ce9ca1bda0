/* SPDX-License-Identifier: BSD-3-Clause */
/* Hostile peer: forged frames (built with lib/wire, so they are well-formed unless the
 * case says otherwise) injected at a connected RC QP of the simulator. For each case:
 * the answer on the wire (the right NAK, or nothing and a named drop counter), the
 * target memory byte-for-byte (an arena holding every region of the victim plus the
 * unregistered bytes between them), the victim QP's state (alive where the spec keeps
 * it alive, then legitimate traffic on it), and another QP pair that must keep working
 * whatever happened. Plus MR key generations and an MR deregistered while its READ
 * response waits for TX room. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <sys/mman.h>
#include <vector>

#include "sim_fabric.h"
#include "wire_icrc.h"

using namespace droce;
using namespace droce::sim;

namespace {

constexpr uint32_t kIpA = 0x0A000001, kIpB = 0x0A000002;
constexpr uint32_t kPsnA = 0x100, kPsnB = 0x200; /* B's responder expects kPsnB first */
constexpr uint32_t kAll =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr size_t kArena = 256 << 10;
/* Regions of B inside the arena (offset, length); the bytes between are unregistered. */
constexpr size_t kOffAll = 16 << 10, kOffRo = 48 << 10, kOffWo = 80 << 10, kOffPd2 = 112 << 10,
                 kOffTmp = 144 << 10, kMrLen = 16 << 10;

uint8_t pattern(size_t i) { return static_cast<uint8_t>(i * 131 + (i >> 8) + 7); }

/* A frame as the hostile peer writes it: starts as what QP A would send to QP B. */
struct Forge {
    wire::FrameSpec s{};
    std::vector<uint8_t> payload;
    /* applied to the built bytes; fix_icrc recomputes the ICRC afterwards */
    std::function<void(std::vector<uint8_t> &)> tamper;
    bool fix_icrc = true;
};

/* Recomputes the ICRC of an untagged IPv4 RoCEv2 frame whose IP total length is right. */
void refresh_icrc(std::vector<uint8_t> &f) {
    const size_t total = (size_t{f[16]} << 8) | f[17];
    ASSERT_LE(14 + total, f.size());
    wire::icrc_store(wire::icrc_compute(f.data() + 14, total - 4, false), f.data() + 14 + total - 4);
}

struct World {
    explicit World(uint32_t qb_access = kAll, QpAttr extra = {}, uint32_t b_pkey_index = 0,
                   std::vector<uint16_t> pkeys = {0xFFFF})
        : fab(42), a(fab, kIpA, 1), b(fab, kIpB, 2) {
        a.pkeys = pkeys;
        b.pkeys = pkeys;
        qa = &a.create_qp(0x11, &scq_a, &rcq_a);
        qb = &b.create_qp(0x22, &scq_b, &rcq_b);
        qa2 = &a.create_qp(0x33, &scq_a2, &rcq_a2);
        qb2 = &b.create_qp(0x44, &scq_b2, &rcq_b2);
        extra.max_dest_rd_atomic = 4;
        extra.max_rd_atomic = 4;
        /* Rights are asked for explicitly: connect() grants none by itself. */
        QpAttr xa = extra, xb = extra, x2;
        xa.qp_access_flags = kAll;
        xb.qp_access_flags = qb_access;
        x2.qp_access_flags = kAll;
        xa.pkey_index = xb.pkey_index = static_cast<uint16_t>(b_pkey_index);
        a.connect(*qa, b, *qb, kPsnA, kPsnB, xa);
        b.connect(*qb, a, *qa, kPsnB, kPsnA, xb);
        a.connect(*qa2, b, *qb2, 0x500, 0x600, x2);
        b.connect(*qb2, a, *qa2, 0x600, 0x500, x2);

        arena.resize(kArena);
        for (size_t i = 0; i < kArena; ++i)
            arena[i] = pattern(i);
        buf_a.assign(64 << 10, 0);
        buf_a2.assign(64 << 10, 0);
        buf_b2.assign(64 << 10, 0);
        mr_all = b.mrs.reg(1, arena.data() + kOffAll, kMrLen, kAll).value();
        mr_ro = b.mrs.reg(1, arena.data() + kOffRo, kMrLen, kAccessRemoteRead).value();
        mr_wo = b.mrs.reg(1, arena.data() + kOffWo, kMrLen, kAccessLocalWrite | kAccessRemoteWrite)
                    .value();
        mr_pd2 = b.mrs.reg(2, arena.data() + kOffPd2, kMrLen, kAll).value();
        /* registered, deregistered, registered again (slots rotate: another slot) */
        const uint32_t k = b.mrs.reg(1, arena.data() + kOffTmp, kMrLen, kAll).value().key;
        EXPECT_TRUE(b.mrs.dereg(k));
        mr_tmp = b.mrs.reg(1, arena.data() + kOffTmp, kMrLen, kAll).value();
        stale_key = k;
        mr_a = a.mrs.reg(1, buf_a.data(), buf_a.size(), kAll).value();
        mr_a2 = a.mrs.reg(1, buf_a2.data(), buf_a2.size(), kAll).value();
        mr_b2 = b.mrs.reg(1, buf_b2.data(), buf_b2.size(), kAll).value();
        fab.on_send = [this](std::vector<uint8_t> &f) {
            if (f.size() >= 12 && std::memcmp(f.data() + 6, b.mac, 6) == 0)
                from_b.push_back(f);
        };
    }

    uint64_t va(size_t arena_off) const { return reinterpret_cast<uint64_t>(arena.data() + arena_off); }

    /* A request from A's QP to B's, as A's requester would build it. */
    Forge req(uint8_t opcode, uint32_t psn, uint32_t payload_len = 0) const {
        Forge f;
        f.s.eth = qa->path().eth;
        wire::gid_from_ipv4(kIpA, f.s.src_gid);
        wire::gid_from_ipv4(kIpB, f.s.dst_gid);
        f.s.ttl = 64;
        f.s.udp_sport = qa->path().udp_sport;
        f.s.bth.opcode = opcode;
        f.s.bth.pkey = qa->pkey();
        f.s.bth.dest_qp = qb->qpn();
        f.s.bth.psn = psn;
        f.s.bth.ack_req = true;
        f.payload.resize(payload_len);
        for (uint32_t i = 0; i < payload_len; ++i)
            f.payload[i] = static_cast<uint8_t>(0xA5 ^ i);
        return f;
    }
    Forge write(uint8_t opcode, uint32_t psn, uint64_t va_, uint32_t rkey, uint32_t dma_len,
                uint32_t payload_len) const {
        Forge f = req(opcode, psn, payload_len);
        f.s.reth = {va_, rkey, dma_len};
        return f;
    }
    Forge atomic(uint8_t opcode, uint64_t va_, uint32_t rkey) const {
        Forge f = req(opcode, epsn());
        f.s.atomic = {va_, rkey, 0x1111111111111111ull, 0};
        return f;
    }

    std::vector<uint8_t> bytes(const Forge &f) const {
        wire::FrameSpec s = f.s;
        wire::FrameSpec::Seg seg{f.payload.data(), static_cast<uint32_t>(f.payload.size())};
        s.segs = &seg;
        s.nsegs = 1;
        s.payload_len = seg.len;
        std::vector<uint8_t> out(wire::frame_len(s) + 64);
        out.resize(wire::build_frame(s, out.data(), out.size()));
        EXPECT_FALSE(out.empty());
        if (f.tamper) {
            f.tamper(out);
            if (f.fix_icrc)
                refresh_icrc(out);
        }
        return out;
    }

    void inject(const Forge &f) { fab.send(bytes(f)); }
    /* Delivers what is in flight and lets every QP react. */
    void settle(Time ns = 5'000'000) {
        fab.run_until([] { return false; }, fab.now + ns);
    }

    /* B's expected request PSN, from its diagnostics line. */
    uint32_t epsn() const {
        const std::string d = qb->debug_string();
        const size_t at = d.find("epsn 0x");
        return static_cast<uint32_t>(std::stoul(d.substr(at + 7, 6), nullptr, 16));
    }

    struct Ack {
        uint8_t opcode, syndrome;
        uint32_t psn, dest_qp;
    };
    std::vector<Ack> acks_from_b() const {
        std::vector<Ack> v;
        for (const auto &f : from_b) {
            wire::ParsedPacket p;
            if (wire::parse_frame(f.data(), f.size(), p, true) == wire::ParseResult::Ok)
                v.push_back({p.bth.opcode, p.aeth.syndrome, p.bth.psn, p.bth.dest_qp});
        }
        return v;
    }

    /* Legitimate RDMA WRITE of n bytes from `from` to `to`; true when it completed fine
     * and the bytes arrived. */
    bool legit_write(rc::Qp &from, SimCq &scq, const mem::MemoryRegion &src, uint64_t dst_va,
                     uint32_t rkey, uint32_t n, uint8_t seed) {
        auto *p = reinterpret_cast<uint8_t *>(src.addr);
        for (uint32_t i = 0; i < n; ++i)
            p[i] = static_cast<uint8_t>(seed + i * 3);
        SendWr wr;
        wr.wr_id = seed;
        wr.opcode = WrOpcode::RdmaWrite;
        wr.send_flags = kSendSignaled;
        wr.num_sge = 1;
        wr.sg_list[0] = {src.addr, n, src.key};
        wr.remote_addr = dst_va;
        wr.rkey = rkey;
        if (!from.post_send(wr))
            return false;
        const size_t before = scq.q.size();
        if (!fab.run_until([&] { return scq.q.size() > before; }, fab.now + 1'000'000'000))
            return false;
        const Wc wc = scq.q.back();
        return wc.status == WcStatus::Success && wc.wr_id == seed &&
               std::memcmp(p, reinterpret_cast<const void *>(dst_va), n) == 0;
    }
    /* The bystander pair (qa2 -> qb2) always works. */
    bool bystander_ok() {
        return legit_write(*qa2, scq_a2, mr_a2, mr_b2.addr + 512, mr_b2.key, 3000, 0x5A);
    }

    /* Arena bytes that differ from the pattern, outside [allow_off, allow_off+allow_len). */
    std::string arena_damage(size_t allow_off = 0, size_t allow_len = 0) const {
        for (size_t i = 0; i < kArena; ++i) {
            if (i >= allow_off && i < allow_off + allow_len)
                continue;
            if (arena[i] != pattern(i))
                return "arena byte " + std::to_string(i) + " changed";
        }
        return {};
    }

    Fabric fab;
    Endpoint a, b;
    SimCq scq_a, rcq_a, scq_b, rcq_b, scq_a2, rcq_a2, scq_b2, rcq_b2;
    rc::Qp *qa, *qb, *qa2, *qb2;
    std::vector<uint8_t> arena, buf_a, buf_a2, buf_b2;
    mem::MemoryRegion mr_all{}, mr_ro{}, mr_wo{}, mr_pd2{}, mr_tmp{}, mr_a{}, mr_a2{}, mr_b2{};
    uint32_t stale_key = 0;
    std::vector<std::vector<uint8_t>> from_b;
};

enum class Expect {
    NakAccess,  /* NAK remote access error 0x62, QP B to ERR */
    NakInvalid, /* NAK invalid request 0x61, QP B to ERR */
    NakSeq,     /* NAK PSN sequence error 0x60, QP B alive */
    Drop,       /* nothing on the wire, QP B alive */
    DupAck,     /* a duplicate: re-ACKed, nothing executed, QP B alive */
};

struct Case {
    const char *name;
    /* frames to inject, in order, given the world */
    std::function<std::vector<Forge>(World &)> frames;
    Expect expect;
    /* the counter that must have moved by one (B's transport counters or endpoint drops) */
    std::function<uint64_t(World &)> counter;
    /* arena bytes a legitimate earlier packet of the case may have written */
    size_t allow_off = 0, allow_len = 0;
    uint32_t qb_access = kAll;
};

uint64_t rc_counter(const rc::Counters &c, const char *name) {
    uint64_t v = ~0ull;
    c.for_each([&](const char *n, uint64_t x) {
        if (std::strcmp(n, name) == 0)
            v = x;
    });
    EXPECT_NE(v, ~0ull) << "no counter " << name;
    return v;
}
std::function<uint64_t(World &)> rcc(const char *name) {
    return [name](World &w) { return rc_counter(w.b.counters, name); };
}
std::function<uint64_t(World &)> parse_drop(wire::ParseResult r) {
    return [r](World &w) { return w.b.rx_drop_parse[static_cast<size_t>(r)]; };
}

void run_case(const Case &c) {
    SCOPED_TRACE(c.name);
    World w(c.qb_access);
    const uint32_t epsn0 = w.epsn();
    const uint64_t cnt0 = c.counter(w);
    std::vector<Forge> frames = c.frames(w);
    for (size_t i = 0; i < frames.size(); ++i) {
        frames[i].s.bth.ack_req = i + 1 == frames.size(); /* one answer, to the last */
        w.inject(frames[i]);
        w.settle();
    }
    EXPECT_EQ(c.counter(w), cnt0 + 1) << "the named counter moved by one";
    EXPECT_EQ(w.arena_damage(c.allow_off, c.allow_len), "");
    const auto acks = w.acks_from_b();
    uint8_t want = 0;
    switch (c.expect) {
    case Expect::NakAccess:
        want = wire::kAethNakRemoteAccessErr;
        break;
    case Expect::NakInvalid:
        want = wire::kAethNakInvalidRequest;
        break;
    case Expect::NakSeq:
        want = wire::kAethNakPsnSeqErr;
        break;
    case Expect::DupAck:
        want = 0x1F;
        break;
    case Expect::Drop:
        break;
    }
    if (c.expect == Expect::Drop) {
        EXPECT_TRUE(acks.empty()) << "a silent drop sends nothing, got " << acks.size();
    } else {
        /* Exactly one answer, an ACKNOWLEDGE (never a READ response or atomic ACK). */
        ASSERT_EQ(acks.size(), 1u);
        EXPECT_EQ(acks[0].opcode, wire::kRcAcknowledge);
        EXPECT_EQ(acks[0].syndrome, want) << std::hex << int(acks[0].syndrome);
        EXPECT_EQ(acks[0].dest_qp, w.qa->qpn());
        if (c.expect == Expect::DupAck) {
            EXPECT_EQ(acks[0].psn, wire::psn_add(epsn0, wire::kPsnMask)) << "ACK of epsn - 1";
        } else if (c.expect == Expect::NakSeq) {
            EXPECT_EQ(acks[0].psn, epsn0) << "NAK names the expected PSN";
        }
    }
    const bool dies = c.expect == Expect::NakAccess || c.expect == Expect::NakInvalid;
    EXPECT_EQ(w.qb->state(), dies ? QpState::Err : QpState::Rts) << w.qb->debug_string();
    /* No WQE can report a responder's request error: verbs raises it as an event. */
    std::vector<AsyncEventType> want_ev;
    if (c.expect == Expect::NakAccess)
        want_ev = {AsyncEventType::QpAccessErr};
    else if (c.expect == Expect::NakInvalid)
        want_ev = {AsyncEventType::QpReqErr};
    EXPECT_EQ(w.b.events.of(w.qb->qpn()), want_ev);
    EXPECT_TRUE(w.a.events.log.empty());
    EXPECT_EQ(w.qa->state(), QpState::Rts) << "the forged frames never reach A's own state";
    /* Other QPs always keep working. */
    EXPECT_TRUE(w.bystander_ok()) << w.qb2->debug_string();
    if (!dies) {
        /* The victim QP itself goes on: a legitimate WRITE from A lands. */
        EXPECT_TRUE(w.legit_write(*w.qa, w.scq_a, w.mr_a, w.va(kOffAll + 100), w.mr_all.key, 2500, 9))
            << w.qb->debug_string();
    }
}

} // namespace

/* ---- remote keys, protection domains, permissions, bounds ---- */
TEST(Hostile, RemoteAccessErrors) {
    using namespace wire;
    const auto bad_key = [](auto keyf) {
        return [keyf](World &w) {
            return std::vector<Forge>{w.write(kRcWriteOnly, w.epsn(), w.va(kOffAll), keyf(w), 64, 64)};
        };
    };
    const Case cases[] = {
        {"WRITE wrong rkey (unused slot)", bad_key([](World &w) { return w.mr_all.key + 0x1000; }),
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"WRITE wrong rkey (right slot, wrong generation)",
         bad_key([](World &w) { return w.mr_all.key ^ 0x40; }), Expect::NakAccess,
         rcc("resp_remote_access_error")},
        {"WRITE rkey 0", bad_key([](World &) { return 0u; }), Expect::NakAccess,
         rcc("resp_remote_access_error")},
        {"WRITE with another PD's rkey",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), w.va(kOffPd2), w.mr_pd2.key, 64, 64)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"WRITE with a stale rkey (region re-registered)",
         [](World &w) {
             EXPECT_NE(w.stale_key, w.mr_tmp.key);
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), w.va(kOffTmp), w.stale_key, 64, 64)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"WRITE va below the region",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), w.va(kOffAll) - 8, w.mr_all.key, 64, 64)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"WRITE running past the end",
         [](World &w) {
             return std::vector<Forge>{w.write(kRcWriteOnly, w.epsn(), w.va(kOffAll + kMrLen - 32),
                                               w.mr_all.key, 64, 64)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"WRITE va + len wrapping 2^64",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), ~0ull - 15, w.mr_all.key, 64, 64)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"WRITE huge RETH length (first packet fits)",
         [](World &w) {
             return std::vector<Forge>{w.write(kRcWriteFirst, w.epsn(), w.va(kOffAll), w.mr_all.key,
                                               0xFFFFFFFF, 1024)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"WRITE to a region without REMOTE_WRITE",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), w.va(kOffRo), w.mr_ro.key, 64, 64)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"WRITE on a QP without REMOTE_WRITE",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), w.va(kOffAll), w.mr_all.key, 64, 64)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0,
         kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteAtomic},
        {"READ from a region without REMOTE_READ",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcReadRequest, w.epsn(), w.va(kOffWo), w.mr_wo.key, 64, 0)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"READ on a QP without REMOTE_READ",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcReadRequest, w.epsn(), w.va(kOffAll), w.mr_all.key, 64, 0)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0,
         kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteAtomic},
        {"READ past the end",
         [](World &w) {
             return std::vector<Forge>{w.write(kRcReadRequest, w.epsn(), w.va(kOffAll + 8),
                                               w.mr_all.key, kMrLen, 0)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"READ with another PD's rkey",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcReadRequest, w.epsn(), w.va(kOffPd2), w.mr_pd2.key, 64, 0)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"READ with a stale rkey",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcReadRequest, w.epsn(), w.va(kOffTmp), w.stale_key, 64, 0)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"atomic on a region without REMOTE_ATOMIC",
         [](World &w) {
             return std::vector<Forge>{w.atomic(kRcFetchAdd, w.va(kOffWo), w.mr_wo.key)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"atomic on a QP without REMOTE_ATOMIC",
         [](World &w) {
             return std::vector<Forge>{w.atomic(kRcCompareSwap, w.va(kOffAll), w.mr_all.key)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0,
         kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead},
        {"atomic past the end",
         [](World &w) {
             return std::vector<Forge>{
                 w.atomic(kRcFetchAdd, w.va(kOffAll + kMrLen), w.mr_all.key)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"atomic with another PD's rkey",
         [](World &w) {
             return std::vector<Forge>{w.atomic(kRcFetchAdd, w.va(kOffPd2), w.mr_pd2.key)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error")},
        {"misaligned atomic",
         [](World &w) {
             return std::vector<Forge>{w.atomic(kRcCompareSwap, w.va(kOffAll + 4), w.mr_all.key)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request")},
    };
    for (const Case &c : cases)
        run_case(c);
}

/* ---- the QP's access flags: checked before resources, lengths and keys (rxe's
 * check_op_valid), so an op the QP does not allow is an invalid request (0x61) whatever
 * else is wrong with it; only a QP that allows the op gets to the MR check (0x62). ---- */
TEST(Hostile, QpRightsComeFirst) {
    using namespace wire;
    constexpr uint32_t kNoWrite = kAccessLocalWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    constexpr uint32_t kNoRead = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteAtomic;
    constexpr uint32_t kNoAtomic = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead;
    const Case cases[] = {
        {"zero-length WRITE on a QP without REMOTE_WRITE (no rkey needed, still refused)",
         [](World &w) { return std::vector<Forge>{w.write(kRcWriteOnly, w.epsn(), 0, 0, 0, 0)}; },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0, kNoWrite},
        {"zero-length READ on a QP without REMOTE_READ",
         [](World &w) { return std::vector<Forge>{w.write(kRcReadRequest, w.epsn(), 0, 0, 0, 0)}; },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0, kNoRead},
        {"WRITE with immediate, no receive posted, on a QP without REMOTE_WRITE: not RNR",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnlyImm, w.epsn(), w.va(kOffAll), w.mr_all.key, 64, 64)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0, kNoWrite},
        {"WRITE with a forged rkey on a QP without REMOTE_WRITE",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), w.va(kOffAll), w.mr_all.key ^ 0x40, 64, 64)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0, kNoWrite},
        {"WRITE to a region without REMOTE_WRITE on a QP without it either",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), w.va(kOffRo), w.mr_ro.key, 64, 64)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0, kNoWrite},
        {"READ past the end on a QP without REMOTE_READ",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcReadRequest, w.epsn(), w.va(kOffAll + 8), w.mr_all.key, kMrLen, 0)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0, kNoRead},
        {"misaligned atomic on a QP without REMOTE_ATOMIC",
         [](World &w) {
             return std::vector<Forge>{w.atomic(kRcFetchAdd, w.va(kOffAll + 4), w.mr_all.key)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0, kNoAtomic},
        {"FETCH_ADD on a QP that allows only WRITE",
         [](World &w) {
             return std::vector<Forge>{w.atomic(kRcFetchAdd, w.va(kOffAll), w.mr_all.key)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0,
         kAccessLocalWrite | kAccessRemoteWrite},
        {"READ on a QP that allows only ATOMIC",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcReadRequest, w.epsn(), w.va(kOffAll), w.mr_all.key, 64, 0)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0,
         kAccessLocalWrite | kAccessRemoteAtomic},
        {"WRITE on a QP that allows only READ",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), w.va(kOffAll), w.mr_all.key, 64, 64)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0, kAccessRemoteRead},
        {"a QP with no remote right at all (SEND/RECV only) refuses WRITE",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcWriteOnly, w.epsn(), w.va(kOffAll), w.mr_all.key, 64, 64)};
         },
         Expect::NakInvalid, rcc("resp_op_not_allowed"), 0, 0, kAccessLocalWrite},
        /* The QP allows it, the MR does not: the MR check answers, remote access error. */
        {"READ allowed by the QP, refused by a write-only region",
         [](World &w) {
             return std::vector<Forge>{
                 w.write(kRcReadRequest, w.epsn(), w.va(kOffWo), w.mr_wo.key, 64, 0)};
         },
         Expect::NakAccess, rcc("resp_remote_access_error"), 0, 0,
         kAccessLocalWrite | kAccessRemoteRead},
    };
    for (const Case &c : cases)
        run_case(c);
}

/* ---- malformed packets, framing, opcode sequence, lengths ---- */
TEST(Hostile, MalformedAndOutOfSequence) {
    using namespace wire;
    const auto wr_ok = [](World &w, uint8_t op, uint32_t psn, uint32_t dma, uint32_t n) {
        return w.write(op, psn, w.va(kOffAll), w.mr_all.key, dma, n);
    };
    const Case cases[] = {
        {"wrong P_Key",
         [=](World &w) {
             Forge f = wr_ok(w, kRcWriteOnly, w.epsn(), 64, 64);
             f.s.bth.pkey = 0x8123;
             return std::vector<Forge>{f};
         },
         Expect::Drop, rcc("rx_pkey_violation")},
        {"invalid P_Key 0x8000",
         [=](World &w) {
             Forge f = wr_ok(w, kRcWriteOnly, w.epsn(), 64, 64);
             f.s.bth.pkey = 0x8000;
             return std::vector<Forge>{f};
         },
         Expect::Drop, rcc("rx_pkey_violation")},
        {"unknown QPN",
         [=](World &w) {
             Forge f = wr_ok(w, kRcWriteOnly, w.epsn(), 64, 64);
             f.s.bth.dest_qp = 0x777;
             return std::vector<Forge>{f};
         },
         Expect::Drop, [](World &w) { return w.b.rx_drop_unknown_qpn; }},
        {"UD SEND_ONLY at an RC QP",
         [=](World &w) {
             Forge f = w.req(kUdSendOnly, w.epsn(), 32);
             f.s.deth = {0x11111111, w.qa->qpn()};
             return std::vector<Forge>{f};
         },
         Expect::Drop, rcc("rx_transport_drop")},
        {"CNP with PSN = the expected PSN",
         [=](World &w) { return std::vector<Forge>{w.req(kCnp, w.epsn())}; }, Expect::Drop,
         rcc("rp_cnp_ignored")},
        {"bad ICRC",
         [=](World &w) {
             Forge f = wr_ok(w, kRcWriteOnly, w.epsn(), 64, 64);
             f.tamper = [](std::vector<uint8_t> &b) { b.back() ^= 1; };
             f.fix_icrc = false;
             return std::vector<Forge>{f};
         },
         Expect::Drop, parse_drop(ParseResult::BadIcrc)},
        {"payload byte flipped (ICRC not fixed)",
         [=](World &w) {
             Forge f = wr_ok(w, kRcWriteOnly, w.epsn(), 64, 64);
             f.tamper = [](std::vector<uint8_t> &b) { b[b.size() - 10] ^= 0x80; };
             f.fix_icrc = false;
             return std::vector<Forge>{f};
         },
         Expect::Drop, parse_drop(ParseResult::BadIcrc)},
        {"truncated frame",
         [=](World &w) {
             Forge f = wr_ok(w, kRcWriteOnly, w.epsn(), 64, 64);
             f.tamper = [](std::vector<uint8_t> &b) { b.resize(b.size() - 20); };
             f.fix_icrc = false;
             return std::vector<Forge>{f};
         },
         Expect::Drop, parse_drop(ParseResult::TooShort)},
        {"truncated inside the RETH (lengths consistent)",
         [=](World &w) {
             Forge f = wr_ok(w, kRcWriteOnly, w.epsn(), 64, 0);
             f.tamper = [](std::vector<uint8_t> &b) {
                 /* cut 12 bytes of RETH out, fix IP and UDP lengths */
                 b.erase(b.begin() + 14 + 20 + 8 + 12 + 4, b.begin() + 14 + 20 + 8 + 12 + 16);
                 const uint16_t ip = static_cast<uint16_t>(b.size() - 14),
                                udp = static_cast<uint16_t>(ip - 20);
                 b[16] = static_cast<uint8_t>(ip >> 8);
                 b[17] = static_cast<uint8_t>(ip);
                 b[14 + 20 + 4] = static_cast<uint8_t>(udp >> 8);
                 b[14 + 20 + 5] = static_cast<uint8_t>(udp);
             };
             return std::vector<Forge>{f};
         },
         Expect::Drop, parse_drop(ParseResult::TooShort)},
        {"pad count beyond the payload area",
         [=](World &w) {
             Forge f = wr_ok(w, kRcWriteOnly, w.epsn(), 0, 0);
             f.tamper = [](std::vector<uint8_t> &b) { b[14 + 20 + 8 + 1] |= 0x30; };
             return std::vector<Forge>{f};
         },
         Expect::Drop, parse_drop(ParseResult::BadPadLength)},
        {"wrong pad count (payload shorter than RETH)",
         [=](World &w) {
             Forge f = wr_ok(w, kRcWriteOnly, w.epsn(), 64, 64);
             f.tamper = [](std::vector<uint8_t> &b) { b[14 + 20 + 8 + 1] |= 0x30; };
             return std::vector<Forge>{f};
         },
         Expect::NakInvalid, rcc("resp_invalid_request")},
        {"wrong pad count on a MIDDLE packet",
         [=](World &w) {
             Forge f1 = wr_ok(w, kRcWriteFirst, w.epsn(), 4096, 1024);
             Forge f2 = wr_ok(w, kRcWriteMiddle, psn_add(w.epsn(), 1), 0, 1024);
             f2.tamper = [](std::vector<uint8_t> &b) { b[14 + 20 + 8 + 1] |= 0x10; };
             return std::vector<Forge>{f1, f2};
         },
         Expect::NakInvalid, rcc("resp_invalid_request"), kOffAll, 1024},
        {"payload larger than the path MTU",
         [=](World &w) {
             return std::vector<Forge>{wr_ok(w, kRcWriteOnly, w.epsn(), 2048, 2048)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request")},
        {"SEND larger than the path MTU",
         [=](World &w) {
             EXPECT_TRUE(w.qb->post_recv(RecvWr{1, {{w.va(kOffAll), 8192, w.mr_all.key}}, 1}));
             return std::vector<Forge>{w.req(kRcSendOnly, w.epsn(), 2048)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request")},
        {"MIDDLE without FIRST",
         [=](World &w) { return std::vector<Forge>{w.req(kRcWriteMiddle, w.epsn(), 1024)}; },
         Expect::NakInvalid, rcc("resp_invalid_request")},
        {"LAST without FIRST",
         [=](World &w) { return std::vector<Forge>{w.req(kRcWriteLast, w.epsn(), 16)}; },
         Expect::NakInvalid, rcc("resp_invalid_request")},
        {"SEND MIDDLE without FIRST",
         [=](World &w) {
             EXPECT_TRUE(w.qb->post_recv(RecvWr{1, {{w.va(kOffAll), 8192, w.mr_all.key}}, 1}));
             return std::vector<Forge>{w.req(kRcSendMiddle, w.epsn(), 1024)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request")},
        {"FIRST while a WRITE is open",
         [=](World &w) {
             return std::vector<Forge>{wr_ok(w, kRcWriteFirst, w.epsn(), 4096, 1024),
                                       wr_ok(w, kRcWriteFirst, psn_add(w.epsn(), 1), 4096, 1024)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request"), kOffAll, 1024},
        {"SEND LAST inside a WRITE",
         [=](World &w) {
             return std::vector<Forge>{wr_ok(w, kRcWriteFirst, w.epsn(), 4096, 1024),
                                       w.req(kRcSendLast, psn_add(w.epsn(), 1), 16)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request"), kOffAll, 1024},
        {"READ inside a WRITE",
         [=](World &w) {
             return std::vector<Forge>{
                 wr_ok(w, kRcWriteFirst, w.epsn(), 4096, 1024),
                 w.write(kRcReadRequest, psn_add(w.epsn(), 1), w.va(kOffAll), w.mr_all.key, 8, 0)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request"), kOffAll, 1024},
        {"WRITE_ONLY longer than its RETH",
         [=](World &w) { return std::vector<Forge>{wr_ok(w, kRcWriteOnly, w.epsn(), 100, 200)}; },
         Expect::NakInvalid, rcc("resp_invalid_request")},
        {"WRITE_FIRST longer than its RETH",
         [=](World &w) { return std::vector<Forge>{wr_ok(w, kRcWriteFirst, w.epsn(), 100, 1024)}; },
         Expect::NakInvalid, rcc("resp_invalid_request")},
        {"WRITE LAST carrying bytes past the RETH length",
         [=](World &w) {
             /* RETH says 1500: FIRST 1024 is fine, LAST brings 1024 where 476 are left */
             return std::vector<Forge>{wr_ok(w, kRcWriteFirst, w.epsn(), 1500, 1024),
                                       wr_ok(w, kRcWriteLast, psn_add(w.epsn(), 1), 0, 1024)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request"), kOffAll, 1024},
        {"WRITE MIDDLE past the RETH length",
         [=](World &w) {
             return std::vector<Forge>{wr_ok(w, kRcWriteFirst, w.epsn(), 1500, 1024),
                                       wr_ok(w, kRcWriteMiddle, psn_add(w.epsn(), 1), 0, 1024)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request"), kOffAll, 1024},
        {"WRITE_ONLY shorter than its RETH",
         [=](World &w) { return std::vector<Forge>{wr_ok(w, kRcWriteOnly, w.epsn(), 200, 100)}; },
         Expect::NakInvalid, rcc("resp_invalid_request")},
        {"WRITE LAST ending short of the RETH length",
         [=](World &w) {
             return std::vector<Forge>{wr_ok(w, kRcWriteFirst, w.epsn(), 4096, 1024),
                                       wr_ok(w, kRcWriteLast, psn_add(w.epsn(), 1), 0, 100)};
         },
         Expect::NakInvalid, rcc("resp_invalid_request"), kOffAll, 1024},
        {"PSN ahead of the window",
         [=](World &w) {
             return std::vector<Forge>{wr_ok(w, kRcWriteOnly, psn_add(w.epsn(), 5), 64, 64)};
         },
         Expect::NakSeq, rcc("out_of_sequence")},
        {"PSN far ahead (half the space)",
         [=](World &w) {
             return std::vector<Forge>{wr_ok(w, kRcWriteOnly, psn_add(w.epsn(), 0x7FFFFF), 64, 64)};
         },
         Expect::NakSeq, rcc("out_of_sequence")},
        {"PSN behind (a forged duplicate WRITE)",
         [=](World &w) {
             return std::vector<Forge>{wr_ok(w, kRcWriteOnly, psn_add(w.epsn(), 0xFFFFF0), 64, 64)};
         },
         Expect::DupAck, rcc("duplicate_request")},
        {"PSN behind with a bad rkey (no check, no effect)",
         [=](World &w) {
             return std::vector<Forge>{w.write(kRcWriteOnly, psn_add(w.epsn(), 0xFFFFFF), w.va(0),
                                               0xDEAD00, 64, 64)};
         },
         Expect::DupAck, rcc("duplicate_request")},
    };
    for (const Case &c : cases)
        run_case(c);
}

/* A request PSN far behind: a forged duplicate READ/atomic finds no resource and gets
 * no answer at all; nothing is read or executed. */
TEST(Hostile, ForgedDuplicateReadAndAtomicAreNotServed) {
    World w;
    const uint32_t e = w.epsn();
    wire::ParsedPacket unused;
    (void)unused;
    Forge r = w.write(wire::kRcReadRequest, wire::psn_add(e, 0xFFFF00), w.va(kOffAll), w.mr_all.key,
                      4096, 0);
    Forge at = w.atomic(wire::kRcFetchAdd, w.va(kOffAll), w.mr_all.key);
    at.s.bth.psn = wire::psn_add(e, 0xFFFF80);
    w.inject(r);
    w.inject(at);
    w.settle();
    EXPECT_TRUE(w.acks_from_b().empty());
    EXPECT_EQ(w.b.counters.duplicate_request, 2u);
    EXPECT_EQ(w.arena_damage(), "");
    EXPECT_EQ(w.qb->state(), QpState::Rts);
    EXPECT_TRUE(w.legit_write(*w.qa, w.scq_a, w.mr_a, w.va(kOffAll), w.mr_all.key, 100, 1));
}

/* A flood of forged duplicate WRITEs (old PSN) is re-ACKed at most once per
 * QpTuning::dup_ack_interval_ns, not once per frame: no 1:1 amplification towards the
 * real peer. Each frame arrives in its own RX burst (one per link delay, 1 us), so ACK
 * coalescing alone would answer every one. After a quiet interval a duplicate is
 * answered again (a genuinely lost ACK still gets its re-ACK), and the QP goes on. */
TEST(Hostile, ForgedDuplicateFloodIsReAckedOncePerInterval) {
    World w;
    const uint32_t e = w.epsn();
    const uint64_t gap = rc::QpTuning{}.dup_ack_interval_ns;
    ASSERT_GE(gap, 10'000u);
    const Time t0 = w.fab.now;
    while (w.fab.now - t0 < 10 * gap) {
        w.inject(w.write(wire::kRcWriteOnly, wire::psn_add(e, 0xFFFFF0), w.va(kOffAll),
                         w.mr_all.key, 64, 64));
        w.settle(1);
    }
    w.settle();
    const uint64_t dups = w.b.counters.duplicate_request;
    EXPECT_GT(dups, 10 * gap / 2000) << "the flood ran (one frame per link delay)";
    auto acks = w.acks_from_b();
    EXPECT_GE(acks.size(), 9u);
    EXPECT_LE(acks.size(), 11u) << "one re-ACK per interval, not one per forged frame";
    for (const auto &a : acks) {
        EXPECT_EQ(a.syndrome, 0x1F);
        EXPECT_EQ(a.psn, wire::psn_add(e, wire::kPsnMask)) << "ACK of epsn - 1";
    }
    EXPECT_EQ(w.b.counters.duplicate_ack_suppressed, dups - acks.size());

    w.fab.now += gap; /* quiet (the fabric's clock only moves with events) */
    w.inject(w.write(wire::kRcWriteOnly, wire::psn_add(e, 0xFFFFFF), w.va(kOffAll), w.mr_all.key,
                     64, 64));
    w.settle();
    const size_t n = acks.size();
    acks = w.acks_from_b();
    ASSERT_EQ(acks.size(), n + 1) << "answered again once the interval has passed";
    EXPECT_EQ(acks.back().psn, wire::psn_add(e, wire::kPsnMask));
    EXPECT_EQ(w.arena_damage(), "");
    EXPECT_EQ(w.qb->state(), QpState::Rts);
    EXPECT_TRUE(w.legit_write(*w.qa, w.scq_a, w.mr_a, w.va(kOffAll), w.mr_all.key, 100, 1));
}

/* A flood of replayed READ requests (the PSN of one B already served) is re-served at
 * most once per QpTuning::dup_ack_interval_ns, as atomics are replayed: each re-serve
 * reads memory and sends the whole response again, so 1:1 would let a forger make B
 * stream to the real peer. After a quiet interval a retry is served again. */
TEST(Hostile, ReplayedReadFloodIsReServedOncePerInterval) {
    World w;
    const uint32_t e = w.epsn();
    const uint64_t gap = rc::QpTuning{}.dup_ack_interval_ns;
    ASSERT_GE(gap, 10'000u);
    const Forge rd = w.write(wire::kRcReadRequest, e, w.va(kOffAll), w.mr_all.key, 64, 0);
    auto responses = [&] {
        size_t n = 0;
        for (const auto &a : w.acks_from_b())
            n += a.opcode == wire::kRcReadResponseOnly && a.psn == e;
        return n;
    };
    w.inject(rd);
    w.settle();
    ASSERT_EQ(w.b.counters.rx_read_requests, 1u);
    ASSERT_EQ(responses(), 1u) << "the original READ is served";
    const Time t0 = w.fab.now;
    while (w.fab.now - t0 < 10 * gap) {
        w.inject(rd);
        w.settle(1);
    }
    w.settle();
    const uint64_t dups = w.b.counters.duplicate_request;
    EXPECT_GT(dups, 10 * gap / 2000) << "the flood ran (one frame per link delay)";
    const size_t n = responses() - 1;
    EXPECT_GE(n, 9u);
    EXPECT_LE(n, 11u) << "one re-serve per interval, not one per replayed request";
    EXPECT_EQ(w.b.counters.duplicate_read_suppressed, dups - n);
    EXPECT_EQ(w.b.counters.rx_read_requests, 1u);

    w.fab.now += gap; /* quiet */
    w.inject(rd);
    w.settle();
    EXPECT_EQ(responses(), n + 2) << "served again once the interval has passed";
    EXPECT_EQ(w.arena_damage(), "");
    EXPECT_EQ(w.qb->state(), QpState::Rts); /* (A's PSN e was taken by the forged READ) */
}

/* A READ's RETH DMA length is 32 bits but IBTA caps a message at 2^31 bytes (verbs
 * max_msg_sz). A hostile READ of up to 2^32 - 1 bytes of a region that large must be an
 * invalid request (NAK 0x61, QP to ERR), not served: (len + mtu - 1) in 32 bits wrapped
 * to a packet count of 0 (2^32 - 1 at MTU 1024), so nothing was sent and the expected
 * PSN did not move. Exactly 2^31 is legal and served. The region is 4 GiB of address
 * space reserved without memory (only its first page is ever read). */
TEST(Hostile, ReadLongerThan2GiBIsAnInvalidRequest) {
    constexpr uint64_t kBig = 1ull << 32;
    void *big = mmap(nullptr, kBig, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    ASSERT_NE(big, MAP_FAILED);
    const uint64_t bva = reinterpret_cast<uint64_t>(big);
    for (const uint32_t len : {0xFFFFFFFFu, 0x80000001u}) {
        SCOPED_TRACE(len);
        World w;
        const uint32_t key = w.b.mrs.reg(1, big, kBig, kAccessRemoteRead).value().key;
        const uint64_t inv0 = w.b.counters.resp_invalid_request;
        w.inject(w.write(wire::kRcReadRequest, w.epsn(), bva, key, len, 0));
        w.settle();
        const auto acks = w.acks_from_b();
        ASSERT_EQ(acks.size(), 1u) << w.qb->debug_string();
        EXPECT_EQ(acks[0].opcode, wire::kRcAcknowledge);
        EXPECT_EQ(acks[0].syndrome, wire::kAethNakInvalidRequest);
        EXPECT_EQ(w.b.counters.resp_invalid_request, inv0 + 1);
        EXPECT_EQ(w.qb->state(), QpState::Err);
        EXPECT_TRUE(w.bystander_ok());
    }
    {
        World w;
        const uint32_t key = w.b.mrs.reg(1, big, kBig, kAccessRemoteRead).value().key;
        const uint32_t e = w.epsn();
        w.b.tx_budget = 0; /* accepted, its responses held back */
        w.inject(w.write(wire::kRcReadRequest, e, bva, key, 0x80000000u, 0));
        w.settle();
        EXPECT_EQ(w.epsn(), wire::psn_add(e, 0x80000000u / 1024)) << "one PSN per response";
        EXPECT_EQ(w.qb->state(), QpState::Rts);
        w.b.tx_budget = 1;
        w.fab.step();
        const auto acks = w.acks_from_b();
        ASSERT_FALSE(acks.empty());
        EXPECT_EQ(acks[0].opcode, wire::kRcReadResponseFirst);
        EXPECT_EQ(acks[0].psn, e);
        w.b.destroy_qp(w.qb->qpn());
    }
    munmap(big, kBig);
}

/* Forged ahead-PSN frames between legitimate requests: each legitimate one clears the
 * one-NAK-per-gap flag, so without a limit every forged frame sends a PSN sequence
 * error NAK and the real requester resends everything outstanding. At most one NAK per
 * QpTuning::seq_nak_interval_ns leaves; the legitimate WRITEs all land and are ACKed;
 * after a quiet interval an ahead PSN is NAKed again (a genuine gap is still reported). */
TEST(Hostile, ForgedAheadPsnBetweenLegitIsNakedOncePerInterval) {
    World w;
    const uint64_t gap = rc::QpTuning{}.seq_nak_interval_ns;
    ASSERT_GE(gap, 10'000u);
    ASSERT_GT(gap, rc::QpTuning{}.dup_ack_interval_ns) << "a NAK costs more than a re-ACK";
    ASSERT_LE(gap, rc::ack_timeout_ns(QpAttr{}.timeout) / 4) << "not capped in this world";
    auto naks = [&] {
        size_t n = 0;
        for (const auto &a : w.acks_from_b())
            n += a.syndrome == wire::kAethNakPsnSeqErr;
        return n;
    };
    const Time t0 = w.fab.now;
    uint32_t legit = 0;
    uint32_t e = w.epsn(); /* counted here: frames are still in flight when the next is sent */
    while (w.fab.now - t0 < 10 * gap) {
        w.inject(
            w.write(wire::kRcWriteOnly, wire::psn_add(e, 5), w.va(kOffAll), w.mr_all.key, 64, 64));
        w.settle(1);
        /* the legitimate next request (as A would send it): accepted, clears nak_sent_ */
        w.inject(w.write(wire::kRcWriteOnly, e, w.va(kOffAll), w.mr_all.key, 64, 64));
        w.settle(1);
        e = wire::psn_add(e, 1);
        ++legit;
    }
    w.settle();
    EXPECT_GT(legit, 10 * gap / 4000) << "the flood ran (two frames per round)";
    EXPECT_EQ(w.b.counters.rx_write_requests, legit) << "every legitimate WRITE executed";
    EXPECT_EQ(w.b.counters.out_of_sequence, legit);
    const size_t n = naks();
    EXPECT_GE(n, 9u);
    EXPECT_LE(n, 11u) << "one sequence NAK per interval, not one per forged frame";
    EXPECT_EQ(w.b.counters.nak_seq_suppressed, legit - n);

    w.fab.now += gap; /* quiet */
    w.inject(w.write(wire::kRcWriteOnly, wire::psn_add(w.epsn(), 3), w.va(kOffAll), w.mr_all.key,
                     64, 64));
    w.settle();
    ASSERT_EQ(naks(), n + 1) << "NAKed again once the interval has passed";
    EXPECT_EQ(w.qb->state(), QpState::Rts);
}

/* The sequence NAK interval is capped at a quarter of the QP's local ACK timeout: with
 * a short timeout (8: ~1 ms) a genuine gap is NAKed again after ~262 us, not after
 * seq_nak_interval_ns; and it is its own limit, not the duplicate re-ACK's. */
TEST(Hostile, SeqNakIntervalIsCappedByTheQpTimeout) {
    QpAttr x;
    x.timeout = 8;
    World w(kAll, x);
    const uint64_t cap = rc::ack_timeout_ns(8) / 4;
    ASSERT_LT(cap, rc::QpTuning{}.seq_nak_interval_ns) << "the cap must be what limits here";
    ASSERT_GT(cap, rc::QpTuning{}.dup_ack_interval_ns);
    auto naks = [&] {
        size_t n = 0;
        for (const auto &a : w.acks_from_b())
            n += a.syndrome == wire::kAethNakPsnSeqErr;
        return n;
    };
    /* An ahead PSN, then the legitimate packet (re-arms the one-NAK-per-gap rule). */
    auto round = [&] {
        const uint32_t e = w.epsn();
        w.inject(
            w.write(wire::kRcWriteOnly, wire::psn_add(e, 5), w.va(kOffAll), w.mr_all.key, 64, 64));
        w.settle();
        w.inject(w.write(wire::kRcWriteOnly, e, w.va(kOffAll), w.mr_all.key, 64, 64));
        w.settle();
    };
    round();
    ASSERT_EQ(naks(), 1u);
    const Time t0 = w.fab.now;
    w.fab.now = t0 + rc::QpTuning{}.dup_ack_interval_ns + 1'000;
    round();
    EXPECT_EQ(naks(), 1u) << "past the re-ACK interval, inside the NAK interval: suppressed";
    EXPECT_EQ(w.b.counters.nak_seq_suppressed, 1u);
    w.fab.now = t0 + cap + 1'000;
    round();
    EXPECT_EQ(naks(), 2u) << "past the cap: NAKed again";
    EXPECT_EQ(w.qb->state(), QpState::Rts);
}

/* A real gap in a stream is a run of ahead packets: with seq_nak_after_run of them in a
 * row it is NAKed at the short (re-ACK) interval, not the long one a lone forged frame
 * gets, so loss recovery keeps its pace. */
TEST(Hostile, RunOfAheadPacketsIsNakedAtTheShortInterval) {
    World w;
    const rc::QpTuning t;
    ASSERT_GE(t.seq_nak_after_run, 2u);
    auto naks = [&] {
        size_t n = 0;
        for (const auto &a : w.acks_from_b())
            n += a.syndrome == wire::kAethNakPsnSeqErr;
        return n;
    };
    /* PSN e lost, e+1.. arrive; then e itself (the retransmission) ends the gap. */
    auto gap = [&](uint32_t run) {
        const uint32_t e = w.epsn();
        for (uint32_t i = 1; i <= run; ++i) {
            w.inject(w.write(wire::kRcWriteOnly, wire::psn_add(e, i), w.va(kOffAll), w.mr_all.key,
                             64, 64));
            w.settle();
        }
        w.inject(w.write(wire::kRcWriteOnly, e, w.va(kOffAll), w.mr_all.key, 64, 64));
        w.settle();
    };
    gap(1);
    ASSERT_EQ(naks(), 1u);
    const Time t0 = w.fab.now;
    w.fab.now = t0 + t.dup_ack_interval_ns + 1'000;
    gap(t.seq_nak_after_run - 1);
    EXPECT_EQ(naks(), 1u) << "too short a run: the long interval";
    w.fab.now += t.dup_ack_interval_ns + 1'000;
    gap(t.seq_nak_after_run);
    EXPECT_EQ(naks(), 2u) << "a run: NAKed at the short interval";
    EXPECT_EQ(w.qb->state(), QpState::Rts);
}

/* Forged responses at a requester: nothing outstanding, so nothing may be written. */
TEST(Hostile, ForgedResponsesAtIdleRequester) {
    World w;
    std::fill(w.buf_a.begin(), w.buf_a.end(), 0xEE);
    const auto resp = [&](uint8_t op, uint32_t psn, uint32_t n) {
        Forge f = w.req(op, psn, n);
        /* from B to A */
        f.s.eth = w.qb->path().eth;
        wire::gid_from_ipv4(kIpB, f.s.src_gid);
        wire::gid_from_ipv4(kIpA, f.s.dst_gid);
        f.s.bth.dest_qp = w.qa->qpn();
        f.s.aeth = {0x1F, 1};
        return f;
    };
    for (uint32_t psn : {kPsnA, kPsnA + 1, kPsnA - 1, 0u, 0xFFFFFFu}) {
        w.inject(resp(wire::kRcReadResponseOnly, psn, 512));
        w.inject(resp(wire::kRcReadResponseFirst, psn, 1024));
        w.inject(resp(wire::kRcAtomicAcknowledge, psn, 0));
        w.inject(resp(wire::kRcAcknowledge, psn, 0));
    }
    Forge nak = resp(wire::kRcAcknowledge, kPsnA, 0);
    nak.s.aeth.syndrome = wire::kAethNakRemoteAccessErr;
    w.inject(nak);
    w.settle();
    for (uint8_t x : w.buf_a)
        ASSERT_EQ(x, 0xEE);
    EXPECT_EQ(w.qa->state(), QpState::Rts);
    EXPECT_GE(w.a.counters.rx_ghost_response, 1u);
    EXPECT_TRUE(w.scq_a.q.empty());
    EXPECT_TRUE(w.legit_write(*w.qa, w.scq_a, w.mr_a, w.va(kOffAll), w.mr_all.key, 2000, 3));
}

/* ---- the source address: a connected QP takes packets from its peer only ---- */

/* On the network, the peer of no QP here: it knows (or guesses) B's QPN, the PSN window
 * and a region's rkey, and forges its packets with its own source address. */
constexpr uint32_t kIpC = 0x0A000003;

Forge from_c(Forge f) {
    wire::gid_from_ipv4(kIpC, f.s.src_gid);
    return f;
}

/* rxe's check_addr: the source GID must be the QP's remote GID (the AV's dgid) and the
 * destination GID its own (sgid). Every request from another source is a silent drop,
 * counted in rx_drop_src_addr, whatever else in it is right. */
TEST(Hostile, RequestsFromAnotherSourceAreDropped) {
    using namespace wire;
    const Case cases[] = {
        {"WRITE from an off-path source (right QPN, PSN and rkey)",
         [](World &w) {
             return std::vector<Forge>{
                 from_c(w.write(kRcWriteOnly, w.epsn(), w.va(kOffAll), w.mr_all.key, 64, 64))};
         },
         Expect::Drop, rcc("rx_drop_src_addr")},
        {"READ from an off-path source",
         [](World &w) {
             return std::vector<Forge>{
                 from_c(w.write(kRcReadRequest, w.epsn(), w.va(kOffAll), w.mr_all.key, 64, 0))};
         },
         Expect::Drop, rcc("rx_drop_src_addr")},
        {"FETCH_ADD from an off-path source",
         [](World &w) {
             return std::vector<Forge>{from_c(w.atomic(kRcFetchAdd, w.va(kOffAll), w.mr_all.key))};
         },
         Expect::Drop, rcc("rx_drop_src_addr")},
        {"SEND from an off-path source (no receive posted: no RNR NAK either)",
         [](World &w) { return std::vector<Forge>{from_c(w.req(kRcSendOnly, w.epsn(), 32))}; },
         Expect::Drop, rcc("rx_drop_src_addr")},
        {"invalid opcode sequence from an off-path source (no NAK, QP alive)",
         [](World &w) {
             return std::vector<Forge>{from_c(
                 w.write(kRcWriteMiddle, w.epsn(), w.va(kOffAll), w.mr_all.key, 1024, 1024))};
         },
         Expect::Drop, rcc("rx_drop_src_addr")},
        {"ahead PSN from an off-path source (no sequence NAK)",
         [](World &w) {
             return std::vector<Forge>{from_c(
                 w.write(kRcWriteOnly, psn_add(w.epsn(), 5), w.va(kOffAll), w.mr_all.key, 64, 64))};
         },
         Expect::Drop, rcc("rx_drop_src_addr")},
        {"CNP from an off-path source",
         [](World &w) { return std::vector<Forge>{from_c(w.req(kCnp, 0))}; }, Expect::Drop,
         rcc("rx_drop_src_addr")},
    };
    for (const Case &c : cases)
        run_case(c);
}

/* The destination half of check_addr: a packet from the peer's address to one of this
 * host's other addresses is not for the QP (its path names the address it uses). The
 * simulator routes by destination address, so the parsed packet is handed to the QP. */
TEST(Hostile, RequestToAnotherOfOurAddressesIsDropped) {
    World w;
    Forge f = w.write(wire::kRcWriteOnly, w.epsn(), w.va(kOffAll), w.mr_all.key, 64, 64);
    wire::gid_from_ipv4(kIpB + 7, f.s.dst_gid);
    const std::vector<uint8_t> b = w.bytes(f);
    wire::ParsedPacket pp;
    ASSERT_EQ(wire::parse_frame(b.data(), b.size(), pp, true), wire::ParseResult::Ok);
    w.qb->on_packet(pp, w.fab.now);
    w.settle();
    EXPECT_EQ(w.b.counters.rx_drop_src_addr, 1u);
    EXPECT_EQ(w.b.counters.rx_write_requests, 0u);
    EXPECT_EQ(w.arena_damage(), "");
    EXPECT_TRUE(w.acks_from_b().empty());
    EXPECT_EQ(w.qb->state(), QpState::Rts);
}

/* Responses at a requester with a WRITE outstanding (B holds its real ACK back): a
 * forged ACK, NAKs and a READ response from an off-path source with the PSN of the
 * outstanding WRITE neither complete it nor fail it nor move the QP to ERR. When B's
 * ACK comes, the WRITE completes as usual. */
TEST(Hostile, ResponsesFromAnotherSourceAreDropped) {
    World w;
    w.fab.check_invariants = true;
    w.b.tx_budget = 0;
    SendWr wr;
    wr.wr_id = 5;
    wr.opcode = WrOpcode::RdmaWrite;
    wr.send_flags = kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {w.mr_a.addr, 64, w.mr_a.key};
    wr.remote_addr = w.va(kOffAll);
    wr.rkey = w.mr_all.key;
    ASSERT_TRUE(w.qa->post_send(wr));
    ASSERT_TRUE(w.fab.run_until([&] { return w.b.counters.rx_write_requests == 1; },
                                w.fab.now + 1'000'000));
    const auto resp = [&](uint8_t op, uint8_t syndrome) {
        Forge f = w.req(op, kPsnA);
        f.s.eth = w.qb->path().eth;
        wire::gid_from_ipv4(kIpC, f.s.src_gid);
        wire::gid_from_ipv4(kIpA, f.s.dst_gid);
        f.s.bth.dest_qp = w.qa->qpn();
        f.s.aeth = {syndrome, 1};
        return f;
    };
    w.inject(resp(wire::kRcAcknowledge, 0x1F));
    w.inject(resp(wire::kRcAcknowledge, wire::kAethNakRemoteAccessErr));
    w.inject(resp(wire::kRcAcknowledge, wire::kAethNakInvalidRequest));
    w.inject(resp(wire::kRcAcknowledge, wire::kAethNakPsnSeqErr));
    w.inject(resp(wire::kRcAcknowledge, 0x20 | 14)); /* RNR NAK */
    w.fab.run_until([] { return false; }, w.fab.now + 10'000);
    EXPECT_EQ(w.a.counters.rx_drop_src_addr, 5u);
    EXPECT_TRUE(w.scq_a.q.empty()) << "a forged response completed the WRITE";
    EXPECT_EQ(w.qa->state(), QpState::Rts);
    EXPECT_EQ(w.a.counters.packet_seq_err + w.a.counters.req_remote_access_errors +
                  w.a.counters.req_remote_invalid_request + w.a.counters.rnr_nak_retry_err,
              0u);
    w.b.tx_budget = 64;
    ASSERT_TRUE(w.fab.run_until([&] { return !w.scq_a.q.empty(); }, w.fab.now + 100'000'000));
    EXPECT_EQ(w.fab.violation, "");
    EXPECT_EQ(w.scq_a.q.back().status, WcStatus::Success) << wc_status_str(w.scq_a.q.back().status);
    EXPECT_EQ(w.a.counters.local_ack_timeout_err, 0u) << "B's own ACK completed it";
    EXPECT_TRUE(w.bystander_ok());
}

/* ---- P_Key: the QP's P_Key comes from the port's table by pkey_index ---- */
TEST(Hostile, PkeyFromTable) {
    /* Both ports: {default, full member of partition 5, limited member of 5} */
    World w(kAll, {}, 1, {0xFFFF, 0x8005, 0x0005});
    EXPECT_EQ(w.qa->pkey(), 0x8005);
    EXPECT_EQ(w.qb->pkey(), 0x8005);
    std::vector<uint16_t> seen;
    w.fab.on_send = [&](std::vector<uint8_t> &f) {
        wire::ParsedPacket p;
        if (wire::parse_frame(f.data(), f.size(), p, true) == wire::ParseResult::Ok &&
            (p.bth.dest_qp == w.qa->qpn() || p.bth.dest_qp == w.qb->qpn()))
            seen.push_back(p.bth.pkey);
    };
    EXPECT_TRUE(w.legit_write(*w.qa, w.scq_a, w.mr_a, w.va(kOffAll), w.mr_all.key, 3000, 1));
    ASSERT_FALSE(seen.empty());
    for (uint16_t k : seen)
        EXPECT_EQ(k, 0x8005) << "requests and ACKs carry the QP's P_Key";
    /* Matching: same partition, one side full. The default 0xFFFF is another partition. */
    struct {
        uint16_t pkey;
        bool accepted;
    } const probes[] = {{0xFFFF, false}, {0x7FFF, false}, {0x8006, false}, {0x0000, false},
                        {0x8000, false}, {0x0005, true},  {0x8005, true}};
    for (const auto &pr : probes) {
        const uint64_t viol = w.b.counters.rx_pkey_violation;
        const uint32_t e = w.epsn();
        Forge f = w.write(wire::kRcWriteOnly, e, w.va(kOffAll), w.mr_all.key, 8, 8);
        f.s.bth.pkey = pr.pkey;
        w.inject(f);
        w.settle();
        EXPECT_EQ(w.b.counters.rx_pkey_violation, viol + !pr.accepted) << std::hex << pr.pkey;
        EXPECT_EQ(w.epsn(), pr.accepted ? wire::psn_add(e, 1) : e) << std::hex << pr.pkey;
    }
    /* pkey_index out of the table is refused */
    SimCq cq;
    rc::Qp &q = w.b.create_qp(0x99, &cq, &cq);
    QpAttr at;
    at.qp_state = QpState::Init;
    at.pkey_index = 3;
    at.qp_access_flags = kAll;
    const Status s = q.modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags);
    EXPECT_FALSE(s);
    EXPECT_NE(s.message().find("pkey_index 3 out of range"), std::string::npos) << s.message();
}

TEST(Hostile, PkeyBothLimitedMembersDoNotTalk) {
    World w(kAll, {}, 2, {0xFFFF, 0x8005, 0x0005});
    EXPECT_EQ(w.qb->pkey(), 0x0005);
    const uint32_t e = w.epsn();
    w.inject(w.write(wire::kRcWriteOnly, e, w.va(kOffAll), w.mr_all.key, 8, 8));
    w.settle();
    EXPECT_EQ(w.b.counters.rx_pkey_violation, 1u);
    EXPECT_EQ(w.epsn(), e);
    EXPECT_EQ(w.arena_damage(), "");
    EXPECT_TRUE(w.bystander_ok());
}

/* ---- an MR deregistered (and freed) while its READ response waits for TX room ---- */
TEST(Hostile, DeregWhileReadResponseQueued) {
    for (uint32_t sent_before : {0u, 2u}) {
        SCOPED_TRACE("responses sent before the dereg: " + std::to_string(sent_before));
        World w;
        auto *heap = new uint8_t[8192];
        std::memset(heap, 0x3C, 8192);
        const uint32_t key = w.b.mrs.reg(1, heap, 8192, kAll).value().key;
        /* B may send `sent_before` READ responses, then its TX is full. */
        uint32_t responses = 0;
        bool stop = false;
        w.fab.on_send = [&](std::vector<uint8_t> &f) {
            wire::ParsedPacket p;
            if (wire::parse_frame(f.data(), f.size(), p, true) != wire::ParseResult::Ok)
                return;
            if (std::memcmp(f.data() + 6, w.b.mac, 6) == 0)
                w.from_b.push_back(f);
            if (p.op->is(wire::kOpResponse) && p.op->is(wire::kOpRead) &&
                ++responses >= sent_before) {
                w.b.tx_budget = 0;
                stop = true;
            }
        };
        if (sent_before == 0)
            w.b.tx_budget = 0;
        SendWr wr;
        wr.wr_id = 77;
        wr.opcode = WrOpcode::RdmaRead;
        wr.send_flags = kSendSignaled;
        wr.num_sge = 1;
        wr.sg_list[0] = {w.mr_a.addr, 8192, w.mr_a.key};
        wr.remote_addr = reinterpret_cast<uint64_t>(heap);
        wr.rkey = key;
        ASSERT_TRUE(w.qa->post_send(wr));
        ASSERT_TRUE(w.fab.run_until(
            [&] {
                return (sent_before == 0 ? w.b.counters.rx_read_requests == 1 : stop) &&
                       w.qb->has_tx_work();
            },
            w.fab.now + 1'000'000));
        /* The application deregisters and frees the buffer. ASan reports any later read. */
        ASSERT_TRUE(w.b.mrs.dereg(key));
        delete[] heap;
        w.b.tx_budget = 64;
        ASSERT_TRUE(w.fab.run_until([&] { return !w.scq_a.q.empty(); }, w.fab.now + 100'000'000));
        EXPECT_EQ(w.scq_a.q.back().status, WcStatus::RemAccessErr)
            << wc_status_str(w.scq_a.q.back().status);
        EXPECT_EQ(responses, sent_before) << "no response after the dereg";
        EXPECT_EQ(w.b.counters.resp_remote_access_error, 1u);
        EXPECT_EQ(w.qb->state(), QpState::Err);
        /* The NAK names the first response that could not be served. */
        const auto acks = w.acks_from_b();
        ASSERT_FALSE(acks.empty());
        EXPECT_EQ(acks.back().syndrome, wire::kAethNakRemoteAccessErr);
        EXPECT_EQ(acks.back().psn, wire::psn_add(kPsnA, sent_before));
        for (size_t i = 0; i < size_t{sent_before} * 1024; ++i)
            ASSERT_EQ(w.buf_a[i], 0x3C);
        EXPECT_TRUE(w.bystander_ok());
    }
}

/* ---- MR keys: generation per registration, key 0 never valid ---- */
TEST(MrKeys, ReRegistrationChangesTheKeyAndKillsTheOldOne) {
    mem::MrTable t(1); /* one slot: it must be reused */
    std::vector<uint8_t> buf(4096);
    uint8_t *host = nullptr;
    const uint32_t k1 = t.reg(1, buf.data(), buf.size(), kAll).value().key;
    ASSERT_TRUE(t.dereg(k1));
    const uint32_t k2 = t.reg(1, buf.data(), buf.size(), kAll).value().key;
    EXPECT_EQ(k1 >> 8, k2 >> 8) << "the slot is reused";
    EXPECT_NE(k1, k2) << "with a new key";
    EXPECT_EQ(t.check(k1, 1, reinterpret_cast<uint64_t>(buf.data()), 8, 0, &host),
              mem::AccessResult::BadKey);
    EXPECT_EQ(t.check(k2, 1, reinterpret_cast<uint64_t>(buf.data()), 8, 0, &host),
              mem::AccessResult::Ok);
    EXPECT_FALSE(t.dereg(k1)) << "a stale key cannot deregister the new region";
    EXPECT_EQ(t.live_regions(), 1u);
    EXPECT_EQ(t.check(k2, 2, reinterpret_cast<uint64_t>(buf.data()), 8, 0, &host),
              mem::AccessResult::WrongPd);
}

TEST(MrKeys, GenerationsCycleWithoutRepeatingAndKeyZeroIsInvalid) {
    mem::MrTable t(4);
    std::vector<uint8_t> buf(64);
    const uint64_t va = reinterpret_cast<uint64_t>(buf.data());
    uint8_t *host = nullptr;
    EXPECT_EQ(t.check(0, 0, va, 1, 0, &host), mem::AccessResult::BadKey);
    EXPECT_FALSE(t.dereg(0));
    /* 256 registrations (64 of each slot, as they rotate): no key repeats, none is ever
     * the generation 0 key. */
    std::vector<uint32_t> keys;
    for (int i = 0; i < 256; ++i) {
        const uint32_t k = t.reg(0, buf.data(), buf.size(), kAll).value().key;
        EXPECT_NE(k & 0xFF, 0u);
        EXPECT_NE(k >> 8, 0u) << "slot 0 is never handed out";
        /* the 254 keys before it are all dead */
        for (size_t j = keys.size() > 254 ? keys.size() - 254 : 0; j < keys.size(); ++j)
            EXPECT_EQ(t.check(keys[j], 0, va, 1, 0, &host), mem::AccessResult::BadKey) << i;
        keys.push_back(k);
        ASSERT_TRUE(t.dereg(k));
    }
    for (size_t i = 0; i < keys.size(); ++i)
        for (size_t j = i + 1; j < keys.size() && j < i + 255; ++j)
            ASSERT_NE(keys[i], keys[j]) << i << " " << j;
    /* Every live region has its own key; key 0 stays invalid with the table full. */
    std::vector<uint32_t> live;
    for (int i = 0; i < 4; ++i)
        live.push_back(t.reg(0, buf.data(), buf.size(), kAll).value().key);
    EXPECT_FALSE(t.reg(0, buf.data(), buf.size(), kAll)) << "table full";
    for (size_t i = 0; i < live.size(); ++i)
        for (size_t j = i + 1; j < live.size(); ++j)
            EXPECT_NE(live[i], live[j]);
    EXPECT_EQ(t.check(0, 0, va, 1, 0, &host), mem::AccessResult::BadKey);
    EXPECT_EQ(t.check(0xFF, 0, va, 1, 0, &host), mem::AccessResult::BadKey);
}

/* A peer may still hold the rkey of a region long deregistered. With an 8-bit generation
 * a slot re-registered 255 times handed that very key out again, and the stale key
 * reached the new region. A key must never come back: slots rotate (a freed slot is
 * reused after every other free one) and a slot whose generations are used up is
 * retired; registering then fails with a clear error once no slot is left. */
TEST(MrKeys, StaleKeyNeverComesBackAfterManyReRegistrations) {
    constexpr uint32_t kSlots = 2;
    mem::MrTable t(kSlots);
    std::vector<uint8_t> buf(64);
    const uint64_t va = reinterpret_cast<uint64_t>(buf.data());
    uint8_t *host = nullptr;
    const uint32_t stale = t.reg(1, buf.data(), buf.size(), kAll).value().key;
    ASSERT_TRUE(t.dereg(stale));
    std::vector<uint32_t> keys{stale};
    for (;;) {
        auto r = t.reg(1, buf.data(), buf.size(), kAll);
        if (!r) {
            EXPECT_NE(r.status().message().find("key space"), std::string::npos)
                << r.status().message();
            break;
        }
        const uint32_t k = r.value().key;
        ASSERT_NE(k, stale) << "the stale key came back after " << keys.size() << " registrations";
        EXPECT_EQ(t.check(stale, 1, va, 8, 0, &host), mem::AccessResult::BadKey);
        keys.push_back(k);
        ASSERT_TRUE(t.dereg(k));
        ASSERT_LE(keys.size(), 1000u);
    }
    EXPECT_EQ(keys.size(), size_t{kSlots} * 255) << "every slot served its 255 keys";
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end()) << "no key twice";
    EXPECT_EQ(t.retired_slots(), kSlots);
    EXPECT_EQ(t.live_regions(), 0u);
}

/* Slots rotate: a deregistered slot is handed out again only after the other free ones,
 * so a key's generation advances once per table-wide cycle, not per registration. */
TEST(MrKeys, FreedSlotsRotate) {
    mem::MrTable t(4);
    std::vector<uint8_t> buf(64);
    std::vector<uint32_t> slots;
    for (int i = 0; i < 8; ++i) {
        const uint32_t k = t.reg(1, buf.data(), buf.size(), kAll).value().key;
        slots.push_back(k >> 8);
        ASSERT_TRUE(t.dereg(k));
    }
    for (size_t i = 4; i < slots.size(); ++i)
        EXPECT_EQ(slots[i], slots[i - 4]) << i;
    EXPECT_EQ(std::set<uint32_t>(slots.begin(), slots.end()).size(), 4u);
}

/* Found by fuzz_rx: a forged plain ACK whose PSN falls inside an outstanding READ's
 * range moved una past PSNs whose responses had not come; the real responses were then
 * dropped as duplicates and the requester rewound behind una (npsn < una), stuck until
 * its retries ran out. The READ must complete normally. */
TEST(Hostile, ForgedAckInsideOutstandingRead) {
    World w;
    w.fab.check_invariants = true;
    w.b.tx_budget = 0; /* B holds its READ responses back until the forged ACK is in */
    SendWr wr;
    wr.wr_id = 5;
    wr.opcode = WrOpcode::RdmaRead;
    wr.send_flags = kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {w.mr_a.addr, 6000, w.mr_a.key};
    wr.remote_addr = w.va(kOffAll);
    wr.rkey = w.mr_all.key;
    ASSERT_TRUE(w.qa->post_send(wr));
    ASSERT_TRUE(w.fab.run_until([&] { return w.b.counters.rx_read_requests == 1; },
                                w.fab.now + 1'000'000));
    for (uint32_t psn : {kPsnA, kPsnA + 2}) {
        Forge ack = w.req(wire::kRcAcknowledge, psn);
        ack.s.eth = w.qb->path().eth;
        wire::gid_from_ipv4(kIpB, ack.s.src_gid);
        wire::gid_from_ipv4(kIpA, ack.s.dst_gid);
        ack.s.bth.dest_qp = w.qa->qpn();
        ack.s.aeth = {0x1F, 0};
        w.inject(ack);
    }
    w.fab.run_until([] { return false; }, w.fab.now + 10'000);
    w.b.tx_budget = 64;
    ASSERT_TRUE(w.fab.run_until([&] { return !w.scq_a.q.empty(); }, w.fab.now + 100'000'000));
    EXPECT_EQ(w.fab.violation, "");
    EXPECT_EQ(w.scq_a.q.back().status, WcStatus::Success) << wc_status_str(w.scq_a.q.back().status);
    EXPECT_EQ(0, std::memcmp(w.buf_a.data(), w.arena.data() + kOffAll, 6000));
    EXPECT_EQ(w.a.counters.local_ack_timeout_err, 0u) << "no retransmission was needed";
}

/* ---- an MR deregistered between the packets of one message ---- */

/* A 16 KiB WRITE (16 packets at MTU 1024) into a region of B that B deregisters right
 * after the first packet landed. The buffer stays allocated (the application may reuse
 * it at once): after the dereg no byte of it may change. Verbs: the remote access fails
 * from then on: NAK remote access error at the next packet, B's QP to ERR, A's WR
 * completes with REM_ACCESS_ERR. */
TEST(Hostile, DeregBetweenWritePackets) {
    World w;
    constexpr uint32_t kLen = 16 << 10;
    std::vector<uint8_t> target(kLen, 0xC3);
    const uint32_t key = w.b.mrs.reg(1, target.data(), kLen, kAll).value().key;
    for (uint32_t i = 0; i < kLen; ++i)
        w.buf_a[i] = static_cast<uint8_t>(i * 7 + 1);
    w.a.tx_budget = 1; /* A sends one packet per step: B sees them one at a time */
    SendWr wr;
    wr.wr_id = 42;
    wr.opcode = WrOpcode::RdmaWrite;
    wr.send_flags = kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {w.mr_a.addr, kLen, w.mr_a.key};
    wr.remote_addr = reinterpret_cast<uint64_t>(target.data());
    wr.rkey = key;
    ASSERT_TRUE(w.qa->post_send(wr));
    ASSERT_TRUE(
        w.fab.run_until([&] { return w.b.counters.rx_bytes_copied > 0; }, w.fab.now + 1'000'000));
    ASSERT_EQ(w.b.counters.rx_bytes_copied, 1024u) << "exactly the first packet landed";
    ASSERT_EQ(w.b.counters.rx_write_requests, 1u);
    ASSERT_TRUE(w.b.mrs.dereg(key));
    const std::vector<uint8_t> at_dereg = target;
    w.a.tx_budget = 64;
    ASSERT_TRUE(w.fab.run_until([&] { return !w.scq_a.q.empty(); }, w.fab.now + 100'000'000));
    EXPECT_EQ(w.scq_a.q.back().status, WcStatus::RemAccessErr)
        << wc_status_str(w.scq_a.q.back().status);
    EXPECT_EQ(w.scq_a.q.back().wr_id, 42u);
    size_t changed = 0;
    for (uint32_t i = 0; i < kLen; ++i)
        changed += target[i] != at_dereg[i];
    EXPECT_EQ(changed, 0u) << "bytes written after the dereg";
    EXPECT_EQ(w.b.counters.rx_bytes_copied, 1024u);
    EXPECT_EQ(w.b.counters.resp_remote_access_error, 1u);
    EXPECT_EQ(w.qb->state(), QpState::Err);
    EXPECT_EQ(w.qa->state(), QpState::Err);
    /* The NAK names the first packet that found the key gone. */
    const auto acks = w.acks_from_b();
    ASSERT_FALSE(acks.empty());
    EXPECT_EQ(acks.back().syndrome, wire::kAethNakRemoteAccessErr);
    EXPECT_EQ(acks.back().psn, wire::psn_add(kPsnA, 1));
    EXPECT_EQ(w.b.events.of(w.qb->qpn()), std::vector<AsyncEventType>{AsyncEventType::QpAccessErr});
    EXPECT_TRUE(w.a.events.log.empty()) << "A's error is reported by its completion";
    EXPECT_TRUE(w.bystander_ok());
}

/* The requester side: A's READ lands in a local region that A deregisters after the
 * first response arrived. No later response may be written there; the WR completes
 * with LOC_PROT_ERR and A's QP goes to ERR. */
TEST(Hostile, DeregLocalMrBetweenReadResponses) {
    World w;
    constexpr uint32_t kLen = 16 << 10;
    std::vector<uint8_t> dst(kLen, 0x5D);
    const uint32_t key = w.a.mrs.reg(1, dst.data(), kLen, kAll).value().key;
    /* B sends the first READ response, then its TX is closed until the dereg. */
    w.fab.on_send = [&](std::vector<uint8_t> &f) {
        wire::ParsedPacket p;
        if (std::memcmp(f.data() + 6, w.b.mac, 6) == 0 &&
            wire::parse_frame(f.data(), f.size(), p, true) == wire::ParseResult::Ok &&
            p.op->is(wire::kOpResponse) && p.op->is(wire::kOpRead))
            w.b.tx_budget = 0;
    };
    SendWr wr;
    wr.wr_id = 43;
    wr.opcode = WrOpcode::RdmaRead;
    wr.send_flags = kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(dst.data()), kLen, key};
    wr.remote_addr = w.va(kOffAll);
    wr.rkey = w.mr_all.key;
    ASSERT_TRUE(w.qa->post_send(wr));
    ASSERT_TRUE(
        w.fab.run_until([&] { return w.a.counters.rx_bytes_copied > 0; }, w.fab.now + 1'000'000));
    ASSERT_EQ(w.a.counters.rx_bytes_copied, 1024u) << "exactly the first response landed";
    ASSERT_TRUE(w.a.mrs.dereg(key));
    const std::vector<uint8_t> at_dereg = dst;
    w.fab.on_send = nullptr;
    w.b.tx_budget = 64;
    ASSERT_TRUE(w.fab.run_until([&] { return !w.scq_a.q.empty(); }, w.fab.now + 100'000'000));
    EXPECT_EQ(w.scq_a.q.front().status, WcStatus::LocProtErr)
        << wc_status_str(w.scq_a.q.front().status);
    EXPECT_EQ(w.scq_a.q.front().wr_id, 43u);
    EXPECT_EQ(w.scq_a.q.size(), 1u) << "one completion for the WR";
    w.settle();
    size_t changed = 0;
    for (uint32_t i = 0; i < kLen; ++i)
        changed += dst[i] != at_dereg[i];
    EXPECT_EQ(changed, 0u) << "bytes written after the dereg";
    EXPECT_EQ(w.a.counters.rx_bytes_copied, 1024u);
    EXPECT_EQ(w.a.counters.req_cqe_error, 1u);
    EXPECT_EQ(w.qa->state(), QpState::Err);
    EXPECT_TRUE(w.a.events.log.empty()) << "a local protection error is a completion, no event";
    EXPECT_TRUE(w.bystander_ok());
}

/* The send side: A's 16 KiB WRITE reads a region of A that A deregisters, overwrites and
 * frees while the WR is in flight (verbs forbids it; droce must still never read the
 * region again: ASan reports any read of the freed buffer). First after 4 of the 16
 * packets left; then with every packet sent but the ACKs lost, before the retry. Either
 * way the WR completes with LOC_PROT_ERR (counted as req_local_prot_error), no byte of
 * the overwritten buffer reaches B, and nothing is retransmitted from it. */
TEST(Hostile, DeregSourceMrWhileWriteInFlight) {
    for (const bool acks_lost : {false, true}) {
        SCOPED_TRACE(acks_lost ? "every packet sent, ACKs lost" : "4 packets sent");
        World w;
        constexpr uint32_t kLen = 16 << 10;
        auto src = std::make_unique<uint8_t[]>(kLen);
        for (uint32_t i = 0; i < kLen; ++i)
            src[i] = static_cast<uint8_t>(i % 127); /* never 0xEE */
        const uint32_t key = w.a.mrs.reg(1, src.get(), kLen, kAll).value().key;
        uint32_t data_sent = 0;
        w.fab.on_send = [&](std::vector<uint8_t> &f) {
            const bool from_a = std::memcmp(f.data() + 6, w.a.mac, 6) == 0;
            if (from_a && ++data_sent == 4 && !acks_lost)
                w.a.tx_budget = 0; /* A's TX is closed until the dereg */
            if (!from_a && acks_lost)
                f.clear(); /* lost */
        };
        SendWr wr;
        wr.wr_id = 44;
        wr.opcode = WrOpcode::RdmaWrite;
        wr.send_flags = kSendSignaled;
        wr.num_sge = 1;
        wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.get()), kLen, key};
        wr.remote_addr = w.va(kOffAll);
        wr.rkey = w.mr_all.key;
        ASSERT_TRUE(w.qa->post_send(wr));
        const uint32_t want = acks_lost ? kLen : 4 * 1024;
        ASSERT_TRUE(w.fab.run_until([&] { return w.b.counters.rx_bytes_copied == want; },
                                    w.fab.now + 1'000'000));
        const std::vector<uint8_t> at_dereg(w.arena.begin() + kOffAll,
                                            w.arena.begin() + kOffAll + kLen);
        ASSERT_TRUE(w.a.mrs.dereg(key));
        std::memset(src.get(), 0xEE, kLen);
        src.reset();
        w.fab.on_send = nullptr;
        w.a.tx_budget = 64;
        const uint64_t retx = w.a.counters.retransmitted_packets;
        ASSERT_TRUE(
            w.fab.run_until([&] { return !w.scq_a.q.empty(); }, w.fab.now + 10'000'000'000));
        EXPECT_EQ(w.scq_a.q.front().status, WcStatus::LocProtErr)
            << wc_status_str(w.scq_a.q.front().status);
        EXPECT_EQ(w.scq_a.q.front().wr_id, 44u);
        EXPECT_EQ(w.a.counters.req_local_prot_error, 1u);
        EXPECT_EQ(w.a.counters.retransmitted_packets, retx) << "nothing resent from the region";
        w.settle();
        EXPECT_EQ(w.b.counters.rx_bytes_copied, want) << "no packet after the dereg";
        size_t changed = 0;
        for (uint32_t i = 0; i < kLen; ++i)
            changed += w.arena[kOffAll + i] != at_dereg[i];
        EXPECT_EQ(changed, 0u) << "bytes of the region sent after the dereg";
        EXPECT_EQ(w.qa->state(), QpState::Err);
        EXPECT_TRUE(w.bystander_ok());
    }
}

/* Same for an atomic: the original value must not land in a region deregistered while
 * the atomic ACK was on its way. */
TEST(Hostile, DeregLocalMrBeforeAtomicAck) {
    World w;
    std::vector<uint8_t> dst(64, 0x6E);
    const uint32_t key = w.a.mrs.reg(1, dst.data(), dst.size(), kAll).value().key;
    w.b.tx_budget = 0; /* B holds the atomic ACK */
    SendWr wr;
    wr.wr_id = 44;
    wr.opcode = WrOpcode::AtomicFetchAndAdd;
    wr.send_flags = kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(dst.data()), 8, key};
    wr.remote_addr = w.va(kOffAll);
    wr.rkey = w.mr_all.key;
    wr.compare_add = 1;
    ASSERT_TRUE(w.qa->post_send(wr));
    ASSERT_TRUE(w.fab.run_until([&] { return w.b.counters.rx_atomic_requests == 1; },
                                w.fab.now + 1'000'000));
    ASSERT_TRUE(w.a.mrs.dereg(key));
    w.b.tx_budget = 64;
    ASSERT_TRUE(w.fab.run_until([&] { return !w.scq_a.q.empty(); }, w.fab.now + 100'000'000));
    EXPECT_EQ(w.scq_a.q.front().status, WcStatus::LocProtErr)
        << wc_status_str(w.scq_a.q.front().status);
    EXPECT_EQ(w.scq_a.q.front().wr_id, 44u);
    for (uint8_t x : dst)
        ASSERT_EQ(x, 0x6E) << "the atomic result was written after the dereg";
    EXPECT_EQ(w.qa->state(), QpState::Err);
    EXPECT_TRUE(w.bystander_ok());
}

/* A WR whose lkey fails when it starts, behind a WR still waiting for its ACK: one
 * completion per WR, in SQ order (the earlier one flushed, then the error). Before, the
 * failed WR was completed twice (error, then flush) and the earlier one never. */
TEST(Hostile, LocalProtErrorBehindOutstandingWr) {
    World w;
    SendWr ok;
    ok.wr_id = 1;
    ok.opcode = WrOpcode::RdmaWrite;
    ok.send_flags = kSendSignaled;
    ok.num_sge = 1;
    ok.sg_list[0] = {w.mr_a.addr, 16 << 10, w.mr_a.key};
    ok.remote_addr = w.va(kOffAll);
    ok.rkey = w.mr_all.key;
    SendWr bad = ok;
    bad.wr_id = 2;
    bad.sg_list[0].lkey ^= 0x40; /* right slot, wrong generation */
    ASSERT_TRUE(w.qa->post_send(ok));
    ASSERT_TRUE(w.qa->post_send(bad));
    w.settle();
    ASSERT_EQ(w.scq_a.q.size(), 2u);
    EXPECT_EQ(w.scq_a.q[0].wr_id, 1u);
    EXPECT_EQ(w.scq_a.q[0].status, WcStatus::WrFlushErr);
    EXPECT_EQ(w.scq_a.q[1].wr_id, 2u);
    EXPECT_EQ(w.scq_a.q[1].status, WcStatus::LocProtErr);
    EXPECT_EQ(w.qa->send_queue_depth(), 0u);
    EXPECT_EQ(w.qa->state(), QpState::Err);
}
