/* SPDX-License-Identifier: BSD-3-Clause */
/* IEEE 802.1Qbb Priority Flow Control frames: parse and build, pure code over bytes.
 *
 * A PFC frame is a MAC Control frame: destination 01:80:C2:00:00:01, EtherType 0x8808,
 * opcode 0x0101, a 16-bit class-enable vector (bit n = priority n; the upper octet is
 * reserved), then eight 16-bit pause times in quanta of 512 bit times at the port's
 * speed. 14 + 2 + 2 + 16 = 34 bytes, padded to the 60-byte minimum on a real wire.
 *
 * Classic 802.3x PAUSE (opcode 0x0001) is recognised and reported as ClassicPause, not
 * honoured: droce runs RoCE over PFC, and a MAC with PFC enabled has link-level PAUSE
 * off (the two are exclusive on ConnectX); honouring it would let any peer stop every
 * priority, which is exactly what PFC exists to avoid. The engine counts it. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "net.h"

namespace droce::net {

inline constexpr Mac kPfcDstMac = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};
inline constexpr uint16_t kEtherTypeMacControl = 0x8808;
inline constexpr uint16_t kMacCtlOpPause = 0x0001; /* 802.3x link PAUSE */
inline constexpr uint16_t kMacCtlOpPfc = 0x0101;   /* 802.1Qbb */
inline constexpr unsigned kPfcPriorities = 8;
inline constexpr size_t kPfcBodyLen = 34; /* Ethernet header .. last pause time */
inline constexpr uint32_t kPauseQuantumBits = 512;

/** A parsed PFC frame: which priorities it addresses and their pause times. */
struct PfcFrame {
    uint8_t enable = 0;                /* bit n: priority n's time is valid */
    uint16_t quanta[kPfcPriorities]{}; /* 0 for priorities not enabled */
};

/* Why a MAC Control frame was not taken as a PFC frame (engine counters
 * rx_mac_ctrl_<name>), Ok first. */
#define DROCE_PFC_RESULTS(X)                                                                       \
    X(Ok, ok)                                                                                      \
    X(TooShort, too_short)  /* fewer than the 34 bytes a PFC frame needs */                        \
    X(Oversized, oversized) /* longer than the 60-byte minimum frame MAC Control frames are */     \
    X(NotMacControl,                                                                               \
      not_mac_control)     /* EtherType is not 0x8808 (MAC Control is never VLAN tagged) */        \
    X(WrongDst, wrong_dst) /* not the reserved multicast 01:80:C2:00:00:01 */                      \
    X(ClassicPause, classic_pause)   /* 802.3x PAUSE (opcode 0x0001): recognised, not honoured */  \
    X(UnknownOpcode, unknown_opcode) /* another MAC Control opcode (GATE, REPORT, ...) */          \
    X(NoClassEnabled,                                                                              \
      no_class_enabled) /* a PFC frame whose class-enable vector addresses no priority */

enum class PfcResult : uint8_t {
#define DROCE_PFC_ENUM(n, s) n,
    DROCE_PFC_RESULTS(DROCE_PFC_ENUM)
#undef DROCE_PFC_ENUM
        Count_
};
const char *pfc_result_name(PfcResult r);

/** Parses a frame (len bytes from its Ethernet header, no FCS). On Ok, *out holds the
 * enabled priorities and their times; times of priorities not enabled are ignored (and
 * read as 0), as are the reserved octet of the vector and the padding, as 802.1Qbb says a
 * receiver does. */
PfcResult parse_pfc(const uint8_t *frame, size_t len, PfcFrame *out);

/** Builds a PFC frame from src (padded to kMinFrameLen with zeros). Returns its length,
 * or 0 when cap is too small. */
size_t build_pfc(const Mac &src, const PfcFrame &f, uint8_t *out, size_t cap);

/** How long quanta pause times last at line_rate_bps, in ns, rounded up (never resume
 * early). A rate of 0 is taken as 100 Gb/s. */
uint64_t pfc_pause_ns(uint16_t quanta, uint64_t line_rate_bps);

} // namespace droce::net
