/* SPDX-License-Identifier: BSD-3-Clause */
#include "wire_opcode.h"

namespace droce::wire {

/* Compile-time checks of the layout the rest of droce relies on. */
static_assert(kOpcodeTable[kRcWriteOnlyImm].off_reth == 12 &&
              kOpcodeTable[kRcWriteOnlyImm].off_imm == 28 &&
              kOpcodeTable[kRcWriteOnlyImm].hdr_len == 32);
static_assert(kOpcodeTable[kRcAtomicAcknowledge].off_aeth == 12 &&
              kOpcodeTable[kRcAtomicAcknowledge].off_atomic_ack_eth == 16 &&
              kOpcodeTable[kRcAtomicAcknowledge].hdr_len == 24);
static_assert(kOpcodeTable[kUdSendOnlyImm].off_deth == 12 &&
              kOpcodeTable[kUdSendOnlyImm].off_imm == 20 &&
              kOpcodeTable[kUdSendOnlyImm].hdr_len == 24);
static_assert(kOpcodeTable[kRcCompareSwap].hdr_len == 40 && kOpcodeTable[kCnp].hdr_len == 28);
static_assert(kOpcodeTable[0x15].name == nullptr && kOpcodeTable[0x81].name != nullptr);

} // namespace droce::wire
