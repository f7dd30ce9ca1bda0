/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_opcode.h"

#include <array>

#include "wire_headers.h"

namespace droce::wire {

namespace {

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

constexpr std::array<OpcodeInfo, 256> kTable = make_table();

/* Compile-time checks of the layout the rest of droce relies on. */
static_assert(kTable[kRcWriteOnlyImm].off_reth == 12 && kTable[kRcWriteOnlyImm].off_imm == 28 &&
              kTable[kRcWriteOnlyImm].hdr_len == 32);
static_assert(kTable[kRcAtomicAcknowledge].off_aeth == 12 &&
              kTable[kRcAtomicAcknowledge].off_atomic_ack_eth == 16 &&
              kTable[kRcAtomicAcknowledge].hdr_len == 24);
static_assert(kTable[kUdSendOnlyImm].off_deth == 12 && kTable[kUdSendOnlyImm].off_imm == 20 &&
              kTable[kUdSendOnlyImm].hdr_len == 24);
static_assert(kTable[kRcCompareSwap].hdr_len == 40 && kTable[kCnp].hdr_len == 28);
static_assert(kTable[0x15].name == nullptr && kTable[0x81].name != nullptr);

} // namespace

const OpcodeInfo &opcode_info(uint8_t opcode) { return kTable[opcode]; }

} // namespace droce::wire
