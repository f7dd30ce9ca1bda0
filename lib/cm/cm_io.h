/* SPDX-License-Identifier: BSD-3-Clause */
/* What the CM state machine needs from the world to send a MAD: where it goes (the QP1 of
 * a peer, by GID) and a sink that puts the 256 bytes on the wire as a UD SEND to that QP.
 * The engine glue implements MadSink over its QP1 (GSI) hook; tests implement it with an
 * in-memory link. Received MADs come in through CmManager::on_mad with a MadAddr built
 * from the packet (its source GID and QPN), and answers go back to that address. */
#pragma once

#include <cstddef>
#include <cstdint>

namespace droce::cm {

inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;

/* A peer's CM endpoint: the address vector of a UD send to its QP1. */
struct MadAddr {
    uint8_t gid[16] = {}; /* RoCEv2: the IPv4-mapped or IPv6 address */
    uint32_t qpn = kGsiQpn;
    uint32_t qkey = kGsiQkey;
    uint16_t pkey = 0xFFFF;
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 64;
    uint32_t flow_label = 0;
};

/* Sends one MAD (exactly kMadLen bytes). Returns false when it could not be queued; the
 * CM counts that (tx_failed) and relies on its retransmission timer, as it would for a
 * MAD lost on the wire. Must not call back into the CmManager that called it. */
class MadSink {
  public:
    virtual ~MadSink() = default;
    virtual bool send_mad(const MadAddr &to, const uint8_t *mad, size_t len) = 0;
};

} // namespace droce::cm
