/* SPDX-License-Identifier: BSD-3-Clause */
/* The responder's checks one at a time (lib/rc/rc_resp_checks.h), each against the
 * verdicts it may give, and the scatter routine they share with the completer and UD
 * (lib/mem/mem_sgl.h). The simulator tests cover them together, on the wire. */
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "mem_sgl.h"
#include "rc_resp_checks.h"

using namespace droce;
using rc::Verdict;

namespace {

constexpr uint32_t kPd = 1;
constexpr uint32_t kMtu = 1024;

const wire::OpcodeInfo &op(uint8_t opcode) { return wire::opcode_info(opcode); }

wire::ParsedPacket packet(uint8_t opcode, uint32_t payload_len = 0) {
    wire::ParsedPacket p{};
    p.bth.opcode = opcode;
    p.op = &op(opcode);
    p.payload_len = payload_len;
    return p;
}

/* The verdict's kind and counter: what the responder will do and count. */
void expect(const Verdict &v, Verdict::Kind kind, uint64_t rc::Counters::*counter = nullptr,
            uint8_t syndrome = 0) {
    EXPECT_EQ(v.kind, kind);
    EXPECT_EQ(v.counter, counter);
    if (kind == Verdict::NakError) {
        EXPECT_EQ(v.syndrome, syndrome);
    }
}

void expect_invalid(const Verdict &v) {
    expect(v, Verdict::NakError, &rc::Counters::resp_invalid_request, wire::kAethNakInvalidRequest);
}

void expect_access(const Verdict &v) {
    expect(v, Verdict::NakError, &rc::Counters::resp_remote_access_error,
           wire::kAethNakRemoteAccessErr);
}

} // namespace

TEST(RespCheckPsn, InSequenceDuplicateAheadAcrossTheWrap) {
    expect(rc::check_psn(0x100, 0x100), Verdict::Accept);
    expect(rc::check_psn(0x0FF, 0x100), Verdict::Duplicate, &rc::Counters::duplicate_request);
    expect(rc::check_psn(0x101, 0x100), Verdict::OutOfSequence, &rc::Counters::out_of_sequence);
    /* 24-bit PSNs: 0 follows 0xFFFFFF, so it is ahead of it and 0xFFFFFF behind 0. */
    expect(rc::check_psn(0x000000, 0xFFFFFF), Verdict::OutOfSequence,
           &rc::Counters::out_of_sequence);
    expect(rc::check_psn(0xFFFFFF, 0x000000), Verdict::Duplicate, &rc::Counters::duplicate_request);
    /* Half the space behind is still a duplicate (an old retry), not a gap. */
    expect(rc::check_psn((0x100 - 0x7FFFFF) & wire::kPsnMask, 0x100), Verdict::Duplicate,
           &rc::Counters::duplicate_request);
}

TEST(RespCheckOpSeq, MessageInProgressContinuesElseOneStarts) {
    /* Idle: only a first (or only) packet starts a message. */
    expect(rc::check_op_seq(op(wire::kRcSendFirst), false, false), Verdict::Accept);
    expect(rc::check_op_seq(op(wire::kRcWriteOnly), false, false), Verdict::Accept);
    expect(rc::check_op_seq(op(wire::kRcReadRequest), false, false), Verdict::Accept);
    expect_invalid(rc::check_op_seq(op(wire::kRcSendMiddle), false, false));
    expect_invalid(rc::check_op_seq(op(wire::kRcWriteLast), false, false));
    /* A SEND in progress: its middle/last continue; a new message or a WRITE's does not. */
    expect(rc::check_op_seq(op(wire::kRcSendLast), true, false), Verdict::Accept);
    expect_invalid(rc::check_op_seq(op(wire::kRcSendFirst), true, false));
    expect_invalid(rc::check_op_seq(op(wire::kRcWriteMiddle), true, false));
    expect_invalid(rc::check_op_seq(op(wire::kRcReadRequest), true, false));
    /* A WRITE in progress. */
    expect(rc::check_op_seq(op(wire::kRcWriteMiddle), false, true), Verdict::Accept);
    expect_invalid(rc::check_op_seq(op(wire::kRcSendLast), false, true));
    /* A UD opcode at an RC QP. */
    expect_invalid(rc::check_op_seq(op(wire::kUdSendOnly), false, false));
}

TEST(RespCheckOpValid, TheQpsRightsPerOp) {
    const uint32_t none = 0;
    expect(rc::check_op_valid(op(wire::kRcSendOnly), none), Verdict::Accept);
    const struct {
        uint8_t opcode;
        uint32_t right;
    } cases[] = {{wire::kRcWriteOnly, kAccessRemoteWrite},
                 {wire::kRcReadRequest, kAccessRemoteRead},
                 {wire::kRcFetchAdd, kAccessRemoteAtomic},
                 {wire::kRcCompareSwap, kAccessRemoteAtomic}};
    const uint32_t all = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
    for (const auto &c : cases) {
        expect(rc::check_op_valid(op(c.opcode), c.right), Verdict::Accept);
        expect(rc::check_op_valid(op(c.opcode), all & ~c.right), Verdict::NakError,
               &rc::Counters::resp_op_not_allowed, wire::kAethNakInvalidRequest);
    }
}

TEST(RespCheckLength, PayloadAgainstTheMtu) {
    /* ONLY and LAST: up to one MTU. */
    expect(rc::check_length(op(wire::kRcSendOnly), kMtu, kMtu), Verdict::Accept);
    expect(rc::check_length(op(wire::kRcSendOnly), 0, kMtu), Verdict::Accept);
    expect_invalid(rc::check_length(op(wire::kRcSendOnly), kMtu + 1, kMtu));
    expect_invalid(rc::check_length(op(wire::kRcWriteOnly), kMtu + 1, kMtu));
    expect_invalid(rc::check_length(op(wire::kRcWriteLast), kMtu + 1, kMtu));
    expect(rc::check_length(op(wire::kRcWriteLast), 1, kMtu), Verdict::Accept);
    /* FIRST and MIDDLE: exactly one MTU. */
    expect(rc::check_length(op(wire::kRcSendFirst), kMtu, kMtu), Verdict::Accept);
    expect_invalid(rc::check_length(op(wire::kRcSendFirst), kMtu - 1, kMtu));
    expect_invalid(rc::check_length(op(wire::kRcWriteMiddle), kMtu - 1, kMtu));
    /* No payload to check. */
    expect(rc::check_length(op(wire::kRcReadRequest), 0, kMtu), Verdict::Accept);
}

TEST(RespCheckResource, FirstSendAndLastWriteWithImmediateNeedAReceive) {
    expect(rc::check_resource(op(wire::kRcSendFirst), true), Verdict::Rnr,
           &rc::Counters::rnr_nak_sent);
    expect(rc::check_resource(op(wire::kRcSendOnlyImm), true), Verdict::Rnr,
           &rc::Counters::rnr_nak_sent);
    expect(rc::check_resource(op(wire::kRcWriteLastImm), true), Verdict::Rnr,
           &rc::Counters::rnr_nak_sent);
    expect(rc::check_resource(op(wire::kRcSendFirst), false), Verdict::Accept);
    /* The rest of a SEND has its receive (taken at FIRST); a plain WRITE needs none. */
    expect(rc::check_resource(op(wire::kRcSendLast), true), Verdict::Accept);
    expect(rc::check_resource(op(wire::kRcWriteOnly), true), Verdict::Accept);
    expect(rc::check_resource(op(wire::kRcReadRequest), true), Verdict::Accept);
}

namespace {

struct Region {
    Region() : mrs(16), buf(4096, 0) {
        const uint32_t rights =
            kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
        mr = mrs.reg(kPd, buf.data(), buf.size(), rights).value();
        ro = mrs.reg(kPd, buf.data(), buf.size(), kAccessRemoteRead).value();
    }
    uint64_t va(uint64_t off) const { return mr.addr + off; }
    mem::MrTable mrs;
    std::vector<uint8_t> buf;
    mem::MemoryRegion mr{}, ro{};
};

wire::ParsedPacket write_first(uint8_t opcode, const Region &r, uint64_t off, uint32_t dma_len,
                               uint32_t payload_len) {
    wire::ParsedPacket p = packet(opcode, payload_len);
    p.reth = {r.va(off), r.mr.key, dma_len};
    return p;
}

} // namespace

TEST(RespCheckRkey, WritePacketsAddUpToTheRethLength) {
    Region r;
    const rc::WriteCursor none{};
    uint8_t *host = nullptr;
    /* ONLY: payload == RETH length; longer or shorter is an invalid request. */
    expect(
        rc::check_rkey(write_first(wire::kRcWriteOnly, r, 64, 100, 100), r.mrs, kPd, none, &host),
        Verdict::Accept);
    EXPECT_EQ(host, r.buf.data() + 64);
    expect_invalid(
        rc::check_rkey(write_first(wire::kRcWriteOnly, r, 64, 100, 101), r.mrs, kPd, none, &host));
    expect_invalid(
        rc::check_rkey(write_first(wire::kRcWriteOnly, r, 64, 100, 99), r.mrs, kPd, none, &host));
    /* FIRST of a message shorter than its first packet. */
    expect_invalid(rc::check_rkey(write_first(wire::kRcWriteFirst, r, 0, kMtu - 1, kMtu), r.mrs,
                                  kPd, none, &host));
    /* A continuing packet against the cursor: more than is left, or a LAST short of it. */
    const rc::WriteCursor cur{r.va(1024), r.mr.key, 600, 1624};
    expect(rc::check_rkey(packet(wire::kRcWriteLast, 600), r.mrs, kPd, cur, &host),
           Verdict::Accept);
    EXPECT_EQ(host, r.buf.data() + 1024);
    expect_invalid(rc::check_rkey(packet(wire::kRcWriteLast, 599), r.mrs, kPd, cur, &host));
    expect_invalid(rc::check_rkey(packet(wire::kRcWriteMiddle, 601), r.mrs, kPd, cur, &host));
}

TEST(RespCheckRkey, KeysBoundsRightsAndTheirOrder) {
    Region r;
    const rc::WriteCursor none{};
    uint8_t *host = nullptr;
    /* The whole WRITE must lie in the region, not only its first packet. */
    expect_access(rc::check_rkey(write_first(wire::kRcWriteFirst, r, 0, 8192, kMtu), r.mrs, kPd,
                                 none, &host));
    /* A bad key wins over packets that do not add up (checked first, as before). */
    wire::ParsedPacket bad = write_first(wire::kRcWriteOnly, r, 0, 100, 101);
    bad.reth.rkey ^= 1;
    expect_access(rc::check_rkey(bad, r.mrs, kPd, none, &host));
    /* A region deregistered after FIRST: the next packet's key no longer checks. */
    const uint32_t gone =
        r.mrs.reg(kPd, r.buf.data(), r.buf.size(), kAccessLocalWrite | kAccessRemoteWrite)->key;
    ASSERT_TRUE(r.mrs.dereg(gone).is_ok());
    const rc::WriteCursor cur{r.va(1024), gone, 600, 1624};
    expect_access(rc::check_rkey(packet(wire::kRcWriteLast, 600), r.mrs, kPd, cur, &host));
    /* READ: over 2^31 bytes is invalid before the key is looked at; a region without
     * the right is an access error; zero bytes need no key. */
    wire::ParsedPacket rd = packet(wire::kRcReadRequest);
    rd.reth = {r.va(0), 0xDEAD00, 0x80000001u};
    expect_invalid(rc::check_rkey(rd, r.mrs, kPd, none, &host));
    rd.reth.dma_len = 0;
    expect(rc::check_rkey(rd, r.mrs, kPd, none, &host), Verdict::Accept);
    rd.reth = {r.va(0), r.ro.key, 4096};
    expect(rc::check_rkey(rd, r.mrs, kPd, none, &host), Verdict::Accept);
    rd.reth.dma_len = 4097;
    expect_access(rc::check_rkey(rd, r.mrs, kPd, none, &host));
    /* Atomics: misaligned is invalid (before the key); a read-only region refuses. */
    wire::ParsedPacket at = packet(wire::kRcFetchAdd);
    at.atomic = {};
    at.atomic.va = r.va(12);
    at.atomic.rkey = r.mr.key;
    expect_invalid(rc::check_rkey(at, r.mrs, kPd, none, &host));
    at.atomic.va = r.va(16);
    expect(rc::check_rkey(at, r.mrs, kPd, none, &host), Verdict::Accept);
    EXPECT_EQ(host, r.buf.data() + 16);
    at.atomic.rkey = r.ro.key;
    expect_access(rc::check_rkey(at, r.mrs, kPd, none, &host));
    /* Another PD's QP. */
    expect_access(
        rc::check_rkey(write_first(wire::kRcWriteOnly, r, 0, 8, 8), r.mrs, kPd + 1, none, &host));
}

TEST(SglWriter, ScattersAcrossSgesFromAnOffsetAndChecksEachKey) {
    Region r;
    const Sge sgl[3] = {
        {r.va(0), 10, r.mr.key}, {r.va(100), 0, r.mr.key}, {r.va(200), 20, r.mr.key}};
    uint8_t src[30];
    for (int i = 0; i < 30; ++i)
        src[i] = static_cast<uint8_t>(i + 1);
    /* From message byte 5: 5 bytes into the first SGE, the rest into the third. */
    mem::SglWriter out(r.mrs, kPd, sgl, 3, 5);
    ASSERT_TRUE(out.put(src, 3));
    ASSERT_TRUE(out.put(src + 3, 12)); /* continues, crossing the empty SGE */
    for (int i = 0; i < 5; ++i)
        EXPECT_EQ(r.buf[5 + i], i + 1);
    for (int i = 0; i < 10; ++i)
        EXPECT_EQ(r.buf[200 + i], i + 6);
    EXPECT_EQ(r.buf[210], 0);
    /* The list ends before the bytes do. */
    EXPECT_FALSE(out.put(src, 11));
    /* A key that no longer checks (another PD here): nothing written through it. */
    std::fill(r.buf.begin(), r.buf.end(), 0);
    mem::SglWriter other_pd(r.mrs, kPd + 1, sgl, 3, 0);
    EXPECT_FALSE(other_pd.put(src, 4));
    EXPECT_EQ(r.buf[0], 0);
    /* An SGE the message does not reach is not looked at. */
    const Sge tail_bad[2] = {{r.va(0), 8, r.mr.key}, {r.va(8), 8, 0xBAD00}};
    mem::SglWriter short_msg(r.mrs, kPd, tail_bad, 2, 0);
    EXPECT_TRUE(short_msg.put(src, 8));
}
