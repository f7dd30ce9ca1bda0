/* SPDX-License-Identifier: BSD-3-Clause */
/* The responder's checks, as rxe's responder is built (rxe_resp.c: check_psn,
 * check_op_seq, check_op_valid, check_resource, check_length, check_rkey): a request
 * passes them in order before anything executes, and the first that fails decides the
 * answer, a Verdict. Each is a function of the packet and of the state it is handed,
 * nothing else, so each can be tested alone; rc_responder.cpp runs them and acts on the
 * verdict. The order is the wire behaviour (which NAK a request with two faults gets),
 * so it is kept as it was when the checks were one function. Inline: per packet. */
#pragma once

#include <cstdint>

#include "vocab_verbs.h"

#include "mem_mr.h"
#include "rc_counters.h"
#include "wire_packet.h"

namespace droce::rc {

/** What a responder step decided about a request. */
struct Verdict {
    enum Kind : uint8_t {
        Accept,        /* on to the next step */
        Duplicate,     /* PSN behind ePSN: re-ACK, replay or re-serve (C9-105) */
        OutOfSequence, /* PSN ahead of ePSN: a sequence NAK, one per gap and interval */
        Busy,          /* would overtake queued READ responses: dropped, NAKed after them */
        Rnr,           /* no receive posted: RNR NAK, the QP unchanged for the retry */
        NakError,      /* NAK with `syndrome`, the QP to ERR */
    };
    Kind kind = Accept;
    uint8_t syndrome = 0;    /* NakError: the AETH syndrome */
    bool raise_event = true; /* NakError: raise the affiliated event (false: a WC says it) */
    uint64_t Counters::*counter = nullptr; /* bumped when the verdict is acted on */

    bool accepted() const { return kind == Accept; }
    static Verdict nak_error(uint8_t syndrome, uint64_t Counters::*counter) {
        return {NakError, syndrome, true, counter};
    }
    static Verdict invalid_request() {
        return nak_error(wire::kAethNakInvalidRequest, &Counters::resp_invalid_request);
    }
    static Verdict access_error() {
        return nak_error(wire::kAethNakRemoteAccessErr, &Counters::resp_remote_access_error);
    }
};

/** Where the payload of a WRITE in flight goes. Kept as (rkey, va), not as a host
 * pointer: every packet re-checks the key, so a region deregistered between two packets
 * of a message is never written after its dereg. */
struct WriteCursor {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t left = 0; /* bytes the RETH announced that have not arrived */
    uint32_t len = 0;  /* the RETH's length (a WRITE with immediate's byte_len) */
};

/* The RETH's DMA length field has 32 bits but a message has at most 2^31 bytes (IBTA's
 * maximum message size, verbs max_msg_sz; rxe's check_length): a longer READ is an
 * invalid request. */
inline constexpr uint32_t kMaxReadBytes = 1u << 31;

/** In sequence, a duplicate (behind ePSN), or ahead of it (a gap: packets were lost). */
inline Verdict check_psn(uint32_t psn, uint32_t epsn) {
    const int32_t d = wire::psn_diff(psn, epsn);
    if (d > 0)
        return {Verdict::OutOfSequence, 0, false, &Counters::out_of_sequence};
    if (d < 0)
        return {Verdict::Duplicate, 0, false, &Counters::duplicate_request};
    return {};
}

/** A message in progress continues, anything else starts one; RC opcodes only. */
inline Verdict check_op_seq(const wire::OpcodeInfo &op, bool in_send, bool in_write) {
    const bool first = op.is(wire::kOpFirst);
    const bool seq_ok = in_send    ? (op.is(wire::kOpSend) && !first)
                        : in_write ? (op.is(wire::kOpWrite) && !first)
                                   : first;
    if (!seq_ok || op.transport != wire::Transport::Rc)
        return Verdict::invalid_request();
    return {};
}

/** The QP's own rights come before resources, lengths and keys (rxe's check_op_valid,
 * verbs' class C error): an op this QP never allowed is an invalid request (0x61) on
 * every packet of it, even zero-length or with no receive posted; a missing right of
 * the MR is found later with the rkey (remote access error, 0x62). */
inline Verdict check_op_valid(const wire::OpcodeInfo &op, uint32_t qp_access_flags) {
    const uint32_t need = op.is(wire::kOpWrite)    ? uint32_t{kAccessRemoteWrite}
                          : op.is(wire::kOpRead)   ? uint32_t{kAccessRemoteRead}
                          : op.is(wire::kOpAtomic) ? uint32_t{kAccessRemoteAtomic}
                                                   : 0u;
    if ((qp_access_flags & need) != need)
        return Verdict::nak_error(wire::kAethNakInvalidRequest, &Counters::resp_op_not_allowed);
    return {};
}

/** A packet's payload: at most one MTU, exactly one unless it ends its message. Before
 * check_resource: a malformed SEND is an invalid request even with no receive posted. */
inline Verdict check_length(const wire::OpcodeInfo &op, uint32_t payload_len, uint32_t mtu) {
    if (op.is(wire::kOpPayload) &&
        (payload_len > mtu || (!op.is(wire::kOpLast) && payload_len != mtu)))
        return Verdict::invalid_request();
    return {};
}

/** A request that consumes a receive WQE needs one posted (the first packet of a SEND;
 * the last of a WRITE with immediate), else RNR NAK with the QP's min_rnr_timer.
 * Before anything is written, so an RNR retry finds the responder unchanged. */
inline Verdict check_resource(const wire::OpcodeInfo &op, bool recv_empty) {
    const bool consumes_recv = op.is(wire::kOpSend) ? op.is(wire::kOpFirst)
                                                    : (op.is(wire::kOpImm) && op.is(wire::kOpLast));
    if (consumes_recv && recv_empty)
        return {Verdict::Rnr, 0, false, &Counters::rnr_nak_sent};
    return {};
}

/** check_rkey of a WRITE packet (below), from the fields it reads. Inlined: the
 * responder's straight path calls it with the opcode's flags as constants. */
[[gnu::always_inline]] inline Verdict check_write_rkey(const wire::OpcodeInfo &op,
                                                       const wire::Reth &reth, uint32_t payload_len,
                                                       const mem::MrTable &mrs, uint32_t pd,
                                                       const WriteCursor &w, uint8_t **host) {
    const bool first = op.is(wire::kOpFirst);
    if (first && reth.dma_len > 0 &&
        mrs.check(reth.rkey, pd, reth.va, reth.dma_len, kAccessRemoteWrite, host) !=
            mem::AccessResult::Ok)
        return Verdict::access_error();
    const uint32_t left = first ? reth.dma_len : w.left;
    if (payload_len > left || (op.is(wire::kOpLast) && payload_len != left))
        return Verdict::invalid_request(); /* the packets do not add up to the RETH length */
    /* A FIRST packet's bytes lie inside the message just checked (*host is its start). */
    if (!first && payload_len != 0 &&
        mrs.check(w.rkey, pd, w.va, payload_len, kAccessRemoteWrite, host) != mem::AccessResult::Ok)
        return Verdict::access_error();
    return {};
}

/** The region a READ, atomic or WRITE names: its size and alignment, then the key
 * (bounds, PD, the MR's rights), for a WRITE then whether its packets add up to the
 * RETH length and the key for this packet's bytes (the region may have been deregistered
 * since the FIRST packet). On Accept, *host is where an atomic or a WRITE's payload
 * goes. `w` is the WRITE in flight (unused on a FIRST packet, which starts one). */
inline Verdict check_rkey(const wire::ParsedPacket &p, const mem::MrTable &mrs, uint32_t pd,
                          const WriteCursor &w, uint8_t **host) {
    const wire::OpcodeInfo &op = *p.op;
    if (op.is(wire::kOpRead)) {
        if (p.reth.dma_len > kMaxReadBytes)
            return Verdict::invalid_request();
        if (p.reth.dma_len > 0 && mrs.check(p.reth.rkey, pd, p.reth.va, p.reth.dma_len,
                                            kAccessRemoteRead, host) != mem::AccessResult::Ok)
            return Verdict::access_error();
        return {};
    }
    if (op.is(wire::kOpAtomic)) {
        if (p.atomic.va & 7)
            return Verdict::invalid_request();
        if (mrs.check(p.atomic.rkey, pd, p.atomic.va, 8, kAccessRemoteAtomic, host) !=
            mem::AccessResult::Ok)
            return Verdict::access_error();
        return {};
    }
    if (!op.is(wire::kOpWrite))
        return {};
    return check_write_rkey(op, p.reth, p.payload_len, mrs, pd, w, host);
}

} // namespace droce::rc
