/* SPDX-License-Identifier: BSD-3-Clause */
#include "net_pfc.h"

#include <cstring>

#include "wire_bytes.h"

namespace droce::net {

using wire::load_be16;

const char *pfc_result_name(PfcResult r) {
    switch (r) {
#define DROCE_PFC_NAME(n, s)                                                                       \
    case PfcResult::n:                                                                             \
        return #s;
        DROCE_PFC_RESULTS(DROCE_PFC_NAME)
#undef DROCE_PFC_NAME
    case PfcResult::Count_:
        break;
    }
    return "?";
}

PfcResult parse_pfc(const uint8_t *p, size_t len, PfcFrame *out) {
    /* The opcode decides what the frame is, so read it before judging the length: a
     * classic PAUSE is 20 bytes of content and must not show up as a short PFC frame. */
    if (len < 16)
        return PfcResult::TooShort;
    if (load_be16(p + 12) != kEtherTypeMacControl)
        return PfcResult::NotMacControl;
    if (len > kMinFrameLen)
        return PfcResult::Oversized;
    const uint16_t op = load_be16(p + 14);
    if (op == kMacCtlOpPause)
        return PfcResult::ClassicPause; /* also sent to 01:80:C2:00:00:01 */
    if (op != kMacCtlOpPfc)
        return PfcResult::UnknownOpcode;
    if (len < kPfcBodyLen)
        return PfcResult::TooShort;
    if (std::memcmp(p, kPfcDstMac.data(), 6) != 0)
        return PfcResult::WrongDst;
    PfcFrame f;
    f.enable = p[17]; /* p[16]: the reserved octet, ignored on receipt */
    if (f.enable == 0)
        return PfcResult::NoClassEnabled;
    for (unsigned i = 0; i < kPfcPriorities; ++i)
        if (f.enable & (1u << i))
            f.quanta[i] = load_be16(p + 18 + 2 * i);
    *out = f;
    return PfcResult::Ok;
}

size_t build_pfc(const Mac &src, const PfcFrame &f, uint8_t *out, size_t cap) {
    if (cap < kMinFrameLen)
        return 0;
    std::memset(out, 0, kMinFrameLen);
    std::memcpy(out, kPfcDstMac.data(), 6);
    std::memcpy(out + 6, src.data(), 6);
    out[12] = kEtherTypeMacControl >> 8;
    out[13] = kEtherTypeMacControl & 0xFF;
    out[14] = kMacCtlOpPfc >> 8;
    out[15] = kMacCtlOpPfc & 0xFF;
    out[17] = f.enable;
    for (unsigned i = 0; i < kPfcPriorities; ++i) {
        const uint16_t q = (f.enable & (1u << i)) ? f.quanta[i] : 0;
        out[18 + 2 * i] = static_cast<uint8_t>(q >> 8);
        out[19 + 2 * i] = static_cast<uint8_t>(q);
    }
    return kMinFrameLen;
}

uint64_t pfc_pause_ns(uint16_t quanta, uint64_t line_rate_bps) {
    const uint64_t bps = line_rate_bps != 0 ? line_rate_bps : 100'000'000'000ull;
    /* At most 65535 * 512 * 1e9 ~ 3.4e16: no overflow in 64 bits. */
    const uint64_t bits_ns = uint64_t{quanta} * kPauseQuantumBits * 1'000'000'000ull;
    return (bits_ns + bps - 1) / bps;
}

} // namespace droce::net
