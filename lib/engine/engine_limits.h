/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's fixed sizes and times: how many of a thing a device, a shard or a burst
 * holds, and the few durations the engine waits on its own. */
#pragma once

#include <cstdint>

#include "vocab_verbs.h"

namespace droce::engine {

inline constexpr uint32_t kDefaultMaxQps = 65536; /* QPN space of a device by default */
inline constexpr uint32_t kMaxQpn = 1u << 24;     /* the 24-bit QPN space */
inline constexpr uint32_t kFirstQpn = 0x11;       /* 0 and 1 are the IB special QPs */
inline constexpr uint32_t kMaxWorkers = 16;
inline constexpr uint16_t kRxBurst = 32;
/* RX prefetches a frame's lines up to this many bytes (a 64 B WRITE is 138; a larger frame's
 * ICRC streams through the rest with the hardware prefetcher). */
inline constexpr uint32_t kRxPrefetchBytes = 256;
inline constexpr uint32_t kMaxZcSegs = kMaxSge; /* payload segments of a zero-copy frame */
inline constexpr uint32_t kMaxRxSegs = 32;      /* segments of a received chain */
inline constexpr uint16_t kTxBurst = 64;        /* frames handed to one rte_eth_tx_burst */
inline constexpr uint16_t kTxQueueCap = 512;    /* frames a shard keeps queued for its port */
/* Packets one ready QP may emit before the next ready QP gets its turn (round-robin):
 * one busy QP cannot starve the others, and a small quantum keeps per-QP latency fair. */
inline constexpr uint32_t kTxQuantum = 16;
inline constexpr uint32_t kWrBurst = 32; /* WRs drained from a ring per QP per doorbell */
inline constexpr uint64_t kArpRetryNs = 200'000'000;
/* A destroyed QP's number is not handed out again before this long (its late packets
 * must find no QP rather than a new one) — longer than any packet lives in a fabric. */
inline constexpr uint64_t kQpnQuarantineNs = 1'000'000'000;
/* Doorbell ring entries: a QPN, or kDoorbellSrq | SRQ index. */
inline constexpr uint32_t kDoorbellSrq = 0x80000000u;
/* rte_mbuf::port of a frame looped inside the device (no port received it; a real port
 * id is below RTE_MAX_ETHPORTS, and frames we build carry RTE_MBUF_PORT_INVALID). */
inline constexpr uint16_t kLoopbackPort = 0xFFFE;

} // namespace droce::engine
