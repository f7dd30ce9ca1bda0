/* SPDX-License-Identifier: BSD-3-Clause */
/* The engine's counters of one shard (Shard::ec), named as mlx5 names them where it
 * has a name. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire_packet.h"

namespace droce::engine {

/* Engine-level counters (mlx5 names where mlx5 has one). Parse drops are kept apart,
 * indexed by wire::ParseResult, and named rx_drop_<parse_result_name>. */
#define DROCE_ENGINE_COUNTERS(X)                                                                   \
    X(port_rcv_packets)                                                                            \
    X(port_rcv_bytes)                                                                              \
    X(port_xmit_packets)                                                                           \
    X(port_xmit_bytes)                                                                             \
    X(tx_burst_refused)     /* rte_eth_tx_burst took fewer frames than offered (kept queued) */    \
    X(tx_queue_full)        /* transmit() refused: the shard's TX queue is full (QP retries) */    \
    X(tx_no_mbuf)           /* transmit() refused: pool empty */                                   \
    X(tx_handoff)           /* frames given to the shard that owns the single TX queue */          \
    X(tx_handoff_full)      /* ... refused by that ring: kept queued, retried */                   \
    X(tx_ack_held)          /* ACKs held one poll to leave with the next post */                   \
    X(tx_ack_answered)      /* ... sent by the post that answered them, not at the next poll */    \
    X(rx_handoff)           /* packets for a QP of another worker, passed to it over a ring */     \
    X(rx_drop_handoff_full) /* ... and dropped: that worker's ring was full */                     \
    X(rx_foreign_pool)      /* received frames another worker's pool built (zero-copy aside) */    \
    X(doorbells)            /* QPs and SRQs woken by the application (worker mode) */              \
    X(ring_watch_released)  /* watched QPs idle long enough: their doorbell needed again */        \
    X(ring_watch_full)      /* doorbells served unwatched: the watch was full */                   \
    X(timer_expirations)    /* QP timers fired (retransmission, RNR) */                            \
    X(async_events)         /* asynchronous events queued for the application */                   \
    X(async_event_dropped)  /* ... and dropped: the application does not read them */              \
    X(tx_frame_too_big)     /* frame larger than an mbuf (MTU misconfiguration) */                 \
    X(tx_drop_reply_batch_full) /* ARP/ICMP reply dropped: batch full */                           \
    X(tx_bytes_zero_copy)       /* payload bytes attached as external buffers (not copied) */      \
    X(tx_bytes_copied)          /* payload bytes copied into the frame */                          \
    X(tx_straight)              /* one-packet requests built by the straight path (DataFrame) */   \
    X(rx_multiseg_packets)      /* chained RoCE frames accepted (headers in the first segment) */  \
    X(rx_rocev1_packets)        /* RoCEv1 frames (0x8915) accepted for one of our v1 GIDs */       \
    X(rx_fast_path)     /* small ACK, SEND / WRITE ONLY frames taken by the RX fast path */        \
    X(rx_drop_multiseg) /* chained frame not handled: headers not in the first segment, */         \
                        /* too many segments, or chained ARP/ICMP */                               \
    X(rx_drop_not_our_mac)                                                                         \
    X(rx_drop_unknown_ethertype)                                                                   \
    X(rx_drop_not_our_ip)    /* RoCE packet for another IPv4/IPv6 address */                       \
    X(rx_drop_vlan_mismatch) /* on a VLAN none of our GIDs is on, or not that of its GID */        \
    X(rx_drop_unknown_qpn)                                                                         \
    X(sq_wr_rejected) /* WR refused by the QP on the worker: error completion */                   \
    X(rq_wr_rejected)                                                                              \
    X(rtr_neigh_wait)      /* QPs that went to RTR before their next hop's MAC was known */        \
    X(rtr_neigh_resolved)  /* ... and whose frames were released when it answered */               \
    X(rtr_neigh_timeout)   /* ... and that went to ERR: no answer within arp_timeout_ms */         \
    X(tx_loopback_packets) /* frames of QPs connected to a QP of this device: to its RX */         \
    X(tx_loopback_bytes)   /* ... their bytes (never on the port: not in port_xmit_*) */           \
    X(tx_loopback_dropped) /* ... dropped: the receiving shard's ring was full */                  \
    X(rx_loopback_packets) /* looped frames received (not in port_rcv_*) */

struct EngineCounters {
#define DROCE_ENGINE_FIELD(n) uint64_t n = 0;
    DROCE_ENGINE_COUNTERS(DROCE_ENGINE_FIELD)
#undef DROCE_ENGINE_FIELD
    uint64_t rx_drop_parse[static_cast<size_t>(wire::ParseResult::Count_)] = {};
};

} // namespace droce::engine
