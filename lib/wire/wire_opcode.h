/* SPDX-License-Identifier: BSD-3-Clause */
/* The opcode table: one row per BTH opcode says which extended headers follow the
 * BTH, at which offsets, and what the packet means to the transport. Everything
 * that needs header offsets (parser, builder, requester, responder) reads it here. */
#pragma once

#include <cstdint>

namespace droce::wire {

enum Opcode : uint8_t {
    kRcSendFirst = 0x00,
    kRcSendMiddle = 0x01,
    kRcSendLast = 0x02,
    kRcSendLastImm = 0x03,
    kRcSendOnly = 0x04,
    kRcSendOnlyImm = 0x05,
    kRcWriteFirst = 0x06,
    kRcWriteMiddle = 0x07,
    kRcWriteLast = 0x08,
    kRcWriteLastImm = 0x09,
    kRcWriteOnly = 0x0A,
    kRcWriteOnlyImm = 0x0B,
    kRcReadRequest = 0x0C,
    kRcReadResponseFirst = 0x0D,
    kRcReadResponseMiddle = 0x0E,
    kRcReadResponseLast = 0x0F,
    kRcReadResponseOnly = 0x10,
    kRcAcknowledge = 0x11,
    kRcAtomicAcknowledge = 0x12,
    kRcCompareSwap = 0x13,
    kRcFetchAdd = 0x14,
    kRcSendLastInv = 0x16,
    kRcSendOnlyInv = 0x17,
    kUdSendOnly = 0x64,
    kUdSendOnlyImm = 0x65,
    kCnp = 0x81,
};

enum class Transport : uint8_t { Rc = 0, Uc = 1, Rd = 2, Ud = 3, Cnp = 4, Reserved = 0xFF };

/* Which extended headers an opcode carries (bit set). */
enum ExtHdr : uint16_t {
    kHdrReth = 1u << 0,
    kHdrAeth = 1u << 1,
    kHdrAtomicEth = 1u << 2,
    kHdrAtomicAckEth = 1u << 3,
    kHdrImmDt = 1u << 4,
    kHdrIeth = 1u << 5,
    kHdrDeth = 1u << 6,
    kHdrCnpPad = 1u << 7, /* 16 reserved bytes of a CNP */
};

/* What the packet is, for the transport. */
enum OpFlag : uint16_t {
    kOpRequest = 1u << 0, /* requester -> responder */
    kOpResponse = 1u << 1, /* responder -> requester (ACK, READ response, atomic ACK) */
    kOpFirst = 1u << 2, /* first packet of a message (ONLY = FIRST|LAST) */
    kOpMiddle = 1u << 3,
    kOpLast = 1u << 4,
    kOpSend = 1u << 5,
    kOpWrite = 1u << 6,
    kOpRead = 1u << 7, /* READ request or READ response */
    kOpAtomic = 1u << 8, /* CMP_SWAP / FETCH_ADD request, or atomic ACK */
    kOpAck = 1u << 9, /* ACKNOWLEDGE */
    kOpPayload = 1u << 10, /* may carry payload */
    kOpImm = 1u << 11,
    kOpInv = 1u << 12,
};

struct OpcodeInfo {
    const char *name; /* "RC SEND_FIRST"; nullptr for an opcode droce does not know */
    Transport transport;
    uint16_t hdrs; /* ExtHdr bits */
    uint16_t flags; /* OpFlag bits */
    uint8_t hdr_len; /* BTH + all extended headers */
    /* byte offset from the start of the BTH of each extended header (0 = absent) */
    uint8_t off_reth, off_aeth, off_atomic_eth, off_atomic_ack_eth, off_imm, off_ieth, off_deth;

    bool valid() const { return name != nullptr; }
    bool has(uint16_t hdr) const { return (hdrs & hdr) != 0; }
    bool is(uint16_t flag) const { return (flags & flag) != 0; }
};

/* Always returns a row; check valid(). Constant-time table lookup. */
const OpcodeInfo &opcode_info(uint8_t opcode);

} // namespace droce::wire
