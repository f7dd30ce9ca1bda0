/* SPDX-License-Identifier: BSD-3-Clause */
/* The opcode table: one row per BTH opcode says which extended headers follow the
 * BTH, at which offsets, and what the packet means to the transport. Everything
 * that needs header offsets (parser, builder, requester, responder) reads it here. */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "wire_headers.h"

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

    constexpr bool valid() const { return name != nullptr; }
    constexpr bool has(uint16_t hdr) const { return (hdrs & hdr) != 0; }
    constexpr bool is(uint16_t flag) const { return (flags & flag) != 0; }
};

namespace detail {
/* Builds one row: offsets follow rxe's order after the BTH — RETH / AtomicETH / DETH,
 * then AETH, AtomicAckETH, then ImmDt / IETH (for UD: DETH then ImmDt; WRITE_ONLY_IMM:
 * RETH then ImmDt; ATOMIC_ACK: AETH then AtomicAckETH), then the CNP pad. */
constexpr OpcodeInfo row(const char *name, Transport t, uint16_t hdrs, uint16_t flags) {
    OpcodeInfo r{name, t, hdrs, flags, 0, 0, 0, 0, 0, 0, 0, 0};
    size_t off = kBthLen;
    auto place = [&](uint16_t bit, size_t len, uint8_t &field) {
        if (hdrs & bit) {
            field = static_cast<uint8_t>(off);
            off += len;
        }
    };
    place(kHdrReth, kRethLen, r.off_reth);
    place(kHdrAtomicEth, kAtomicEthLen, r.off_atomic_eth);
    place(kHdrDeth, kDethLen, r.off_deth);
    place(kHdrAeth, kAethLen, r.off_aeth);
    place(kHdrAtomicAckEth, kAtomicAckEthLen, r.off_atomic_ack_eth);
    place(kHdrImmDt, kImmDtLen, r.off_imm);
    place(kHdrIeth, kIethLen, r.off_ieth);
    if (hdrs & kHdrCnpPad)
        off += kCnpPadLen;
    r.hdr_len = static_cast<uint8_t>(off);
    return r;
}

constexpr Transport transport_of(unsigned op) {
    switch (op >> 5) {
    case 0:
        return Transport::Rc;
    case 1:
        return Transport::Uc;
    case 2:
        return Transport::Rd;
    case 3:
        return Transport::Ud;
    case 4:
        return Transport::Cnp;
    default:
        return Transport::Reserved;
    }
}

constexpr uint16_t kReq = kOpRequest, kRsp = kOpResponse;
constexpr uint16_t kF = kOpFirst, kM = kOpMiddle, kL = kOpLast, kFL = kOpFirst | kOpLast;
constexpr uint16_t kSendP = kOpSend | kOpPayload, kWriteP = kOpWrite | kOpPayload;
constexpr uint16_t kReadP = kOpRead | kOpPayload;

constexpr std::array<OpcodeInfo, 256> make_table() {
    std::array<OpcodeInfo, 256> t{};
    for (unsigned i = 0; i < 256; ++i)
        t[i] = OpcodeInfo{nullptr, transport_of(i), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const auto rc = Transport::Rc;
    t[kRcSendFirst] = row("RC SEND_FIRST", rc, 0, kReq | kF | kSendP);
    t[kRcSendMiddle] = row("RC SEND_MIDDLE", rc, 0, kReq | kM | kSendP);
    t[kRcSendLast] = row("RC SEND_LAST", rc, 0, kReq | kL | kSendP);
    t[kRcSendLastImm] =
        row("RC SEND_LAST_WITH_IMMEDIATE", rc, kHdrImmDt, kReq | kL | kSendP | kOpImm);
    t[kRcSendOnly] = row("RC SEND_ONLY", rc, 0, kReq | kFL | kSendP);
    t[kRcSendOnlyImm] =
        row("RC SEND_ONLY_WITH_IMMEDIATE", rc, kHdrImmDt, kReq | kFL | kSendP | kOpImm);
    t[kRcWriteFirst] = row("RC RDMA_WRITE_FIRST", rc, kHdrReth, kReq | kF | kWriteP);
    t[kRcWriteMiddle] = row("RC RDMA_WRITE_MIDDLE", rc, 0, kReq | kM | kWriteP);
    t[kRcWriteLast] = row("RC RDMA_WRITE_LAST", rc, 0, kReq | kL | kWriteP);
    t[kRcWriteLastImm] =
        row("RC RDMA_WRITE_LAST_WITH_IMMEDIATE", rc, kHdrImmDt, kReq | kL | kWriteP | kOpImm);
    t[kRcWriteOnly] = row("RC RDMA_WRITE_ONLY", rc, kHdrReth, kReq | kFL | kWriteP);
    t[kRcWriteOnlyImm] = row("RC RDMA_WRITE_ONLY_WITH_IMMEDIATE", rc, kHdrReth | kHdrImmDt,
                             kReq | kFL | kWriteP | kOpImm);
    t[kRcReadRequest] = row("RC RDMA_READ_REQUEST", rc, kHdrReth, kReq | kFL | kOpRead);
    t[kRcReadResponseFirst] = row("RC RDMA_READ_RESPONSE_FIRST", rc, kHdrAeth, kRsp | kF | kReadP);
    t[kRcReadResponseMiddle] = row("RC RDMA_READ_RESPONSE_MIDDLE", rc, 0, kRsp | kM | kReadP);
    t[kRcReadResponseLast] = row("RC RDMA_READ_RESPONSE_LAST", rc, kHdrAeth, kRsp | kL | kReadP);
    t[kRcReadResponseOnly] = row("RC RDMA_READ_RESPONSE_ONLY", rc, kHdrAeth, kRsp | kFL | kReadP);
    t[kRcAcknowledge] = row("RC ACKNOWLEDGE", rc, kHdrAeth, kRsp | kFL | kOpAck);
    t[kRcAtomicAcknowledge] =
        row("RC ATOMIC_ACKNOWLEDGE", rc, kHdrAeth | kHdrAtomicAckEth, kRsp | kFL | kOpAtomic);
    t[kRcCompareSwap] = row("RC COMPARE_SWAP", rc, kHdrAtomicEth, kReq | kFL | kOpAtomic);
    t[kRcFetchAdd] = row("RC FETCH_ADD", rc, kHdrAtomicEth, kReq | kFL | kOpAtomic);
    t[kRcSendLastInv] =
        row("RC SEND_LAST_WITH_INVALIDATE", rc, kHdrIeth, kReq | kL | kSendP | kOpInv);
    t[kRcSendOnlyInv] =
        row("RC SEND_ONLY_WITH_INVALIDATE", rc, kHdrIeth, kReq | kFL | kSendP | kOpInv);
    t[kUdSendOnly] = row("UD SEND_ONLY", Transport::Ud, kHdrDeth, kReq | kFL | kSendP);
    t[kUdSendOnlyImm] = row("UD SEND_ONLY_WITH_IMMEDIATE", Transport::Ud, kHdrDeth | kHdrImmDt,
                            kReq | kFL | kSendP | kOpImm);
    t[kCnp] = row("CNP", Transport::Cnp, kHdrCnpPad, 0);
    return t;
}
} // namespace detail

/* The table, a constant: code that knows its opcode at compile time (the responder's
 * straight path, per opcode) reads its row's flags as constants. */
inline constexpr std::array<OpcodeInfo, 256> kOpcodeTable = detail::make_table();

/* Always returns a row; check valid(). Constant-time table lookup. */
inline const OpcodeInfo &opcode_info(uint8_t opcode) { return kOpcodeTable[opcode]; }

} // namespace droce::wire
