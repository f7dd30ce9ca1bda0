/* SPDX-License-Identifier: BSD-3-Clause */
/* PFC sent by droce (issue 16, optional, DeviceConfig::pfc_tx_xoff): a shard whose RX
 * queue holds pfc_tx_xoff frames asks the link partner to pause the lossless priority, as
 * a NIC's receive buffer does, so the partner holds its frames instead of the port
 * dropping them; it sends quanta 0 once the queue is back to pfc_tx_xon. The level is
 * rte_eth_rx_queue_count plus the burst just read where the PMD implements it (the frames
 * waiting when this poll came), else the burst's fill alone, which only sees up to
 * kRxBurst frames. Each shard judges its own RX queue: with several, one queue's XON can
 * end another's pause early, which a partner's refreshes then repeat at worst.
 * Off, poll() pays one predictable branch per burst. */
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "engine_dev.h"

namespace droce::engine {

namespace {
constexpr uint16_t kXoffQuanta = 0xFFFF; /* the full pause time, as ConnectX sends */
}

bool Shard::pfc_tx_send(uint16_t quanta) {
    const auto prio = static_cast<uint8_t>(dev_.pfc_.prio);
    rte_mbuf *m = rte_pktmbuf_alloc(pool_);
    char *d = m ? rte_pktmbuf_append(m, static_cast<uint16_t>(net::kMinFrameLen)) : nullptr;
    net::PfcFrame f;
    f.enable = static_cast<uint8_t>(1u << prio);
    f.quanta[prio] = quanta;
    if (d == nullptr ||
        net::build_pfc(dev_.iface().mac, f, reinterpret_cast<uint8_t *>(d), net::kMinFrameLen) ==
            0 ||
        !queue_tx(m)) {
        if (m != nullptr)
            rte_pktmbuf_free(m);
        ++pfc_.tx_nombuf;
        return false;
    }
    ++pfc_.tx_pause[prio];
    return true;
}

void Shard::pfc_tx_check(uint16_t nrx, uint64_t now) {
    uint32_t level = nrx;
    if (dev_.pfc_.tx_count) {
        const int c = rte_eth_rx_queue_count(dev_.port_, rxq_);
        if (c > 0)
            level += static_cast<uint32_t>(c);
    }
    const auto prio = static_cast<size_t>(dev_.pfc_.prio);
    if (!pfc_tx_paused_) {
        if (level >= dev_.pfc_.tx_xoff && pfc_tx_send(kXoffQuanta)) {
            pfc_tx_paused_ = true;
            pfc_tx_sent_at_ = pfc_tx_since_ = now;
        }
        return;
    }
    if (level <= dev_.pfc_.tx_xon) {
        if (pfc_tx_send(0)) {
            pfc_tx_paused_ = false;
            pfc_.tx_pause_ns[prio] += now - pfc_tx_since_;
        }
        return;
    }
    /* a standing XOFF is repeated before the partner's pause runs out */
    if (now - pfc_tx_sent_at_ >= net::pfc_pause_ns(kXoffQuanta, dev_.qpd_.line_rate_bps) / 2 &&
        pfc_tx_send(kXoffQuanta)) {
        pfc_.tx_pause_ns[prio] += now - pfc_tx_since_;
        pfc_tx_sent_at_ = pfc_tx_since_ = now;
    }
}

} // namespace droce::engine
