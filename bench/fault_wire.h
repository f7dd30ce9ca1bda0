/* SPDX-License-Identifier: BSD-3-Clause */
/* A faulty wire between two droce devices in one process, for the soak: two net_ring ports
 * whose TX rings are not each other's RX rings, so every frame crosses only through pump(),
 * which copies it (a wire carries bytes, not pointers to the sender's memory: a zero-copy
 * frame held here cannot see its buffer refilled later) and applies the profile's faults:
 *   loss     the frame is freed;
 *   dup      a second copy follows it;
 *   reorder  the frame is held back and leaves after the next one in that direction;
 *   corrupt  one random byte past the Ethernet header is flipped (the receiver must drop it:
 *            an IP checksum or ICRC failure, never data);
 * each with its own probability per frame, decided by a seeded generator so a run repeats.
 * Single-threaded: call pump() from the loop that polls the engine (embedded mode). */
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

namespace droce::bench {

struct FaultProfile {
    double loss = 0, dup = 0, reorder = 0, corrupt = 0;
    bool any() const { return loss > 0 || dup > 0 || reorder > 0 || corrupt > 0; }
};

struct FaultCounters {
    uint64_t frames = 0, lost = 0, duplicated = 0, reordered = 0, corrupted = 0;
    uint64_t copy_failed = 0, ring_full = 0; /* the wire's own drops (no mbuf, RX ring full) */
};

class FaultWire {
  public:
    /* Creates ports "<prefix>_a" and "<prefix>_b"; returns "" or what failed. */
    std::string open(const std::string &prefix, const FaultProfile &p, uint64_t seed) {
        prof_ = p;
        rng_.seed(seed);
        pool_ =
            rte_pktmbuf_pool_create((prefix + "_pool").c_str(), 32767, 256, 0,
                                    RTE_MBUF_DEFAULT_BUF_SIZE, static_cast<int>(rte_socket_id()));
        if (pool_ == nullptr)
            return "mbuf pool for the fault wire";
        for (int s = 0; s < 2; ++s) {
            const std::string n = prefix + (s ? "_b" : "_a");
            rx_[s] = rte_ring_create((n + "_rx").c_str(), 4096, static_cast<int>(rte_socket_id()),
                                     RING_F_SP_ENQ | RING_F_SC_DEQ);
            tx_[s] = rte_ring_create((n + "_tx").c_str(), 4096, static_cast<int>(rte_socket_id()),
                                     RING_F_SP_ENQ | RING_F_SC_DEQ);
            if (!rx_[s] || !tx_[s])
                return "rings for " + n;
            const int port = rte_eth_from_rings(n.c_str(), &rx_[s], 1, &tx_[s], 1,
                                                static_cast<unsigned>(rte_socket_id()));
            char dev[RTE_ETH_NAME_MAX_LEN];
            if (port < 0 || rte_eth_dev_get_name_by_port(static_cast<uint16_t>(port), dev) != 0)
                return "rte_eth_from_rings " + n;
            name_[s] = dev; /* the ring PMD prefixes "net_ring_" */
        }
        return "";
    }
    const std::string &port_a() const { return name_[0]; }
    const std::string &port_b() const { return name_[1]; }
    const FaultCounters &counters() const { return ctr_; }

    /* Moves what each side sent to the other side's RX ring; returns frames moved. */
    unsigned pump() { return move(0) + move(1); }

    ~FaultWire() {
        for (auto *h : held_)
            if (h)
                rte_pktmbuf_free(h);
    }

  private:
    bool chance(double p) { return p > 0 && uni_(rng_) < p; }

    void deliver(int to, rte_mbuf *m) {
        if (rte_ring_enqueue(rx_[to], m) != 0) {
            ++ctr_.ring_full;
            rte_pktmbuf_free(m);
        }
    }

    unsigned move(int from) {
        const int to = 1 - from;
        rte_mbuf *in[32];
        const unsigned n =
            rte_ring_dequeue_burst(tx_[from], reinterpret_cast<void **>(in), 32, nullptr);
        for (unsigned i = 0; i < n; ++i) {
            ++ctr_.frames;
            rte_mbuf *c = rte_pktmbuf_copy(in[i], pool_, 0, UINT32_MAX);
            rte_pktmbuf_free(in[i]);
            if (c == nullptr) {
                ++ctr_.copy_failed;
                continue;
            }
            if (chance(prof_.loss)) {
                ++ctr_.lost;
                rte_pktmbuf_free(c);
                continue;
            }
            if (chance(prof_.corrupt) && c->data_len > 14) {
                ++ctr_.corrupted;
                const uint32_t at = 14 + static_cast<uint32_t>(rng_() % (c->data_len - 14u));
                rte_pktmbuf_mtod(c, uint8_t *)[at] ^= static_cast<uint8_t>(1u << (rng_() % 8));
            }
            rte_mbuf *dup = nullptr;
            if (chance(prof_.dup)) {
                dup = rte_pktmbuf_copy(c, pool_, 0, UINT32_MAX);
                if (dup)
                    ++ctr_.duplicated;
            }
            if (held_[from] == nullptr && chance(prof_.reorder)) {
                ++ctr_.reordered;
                held_[from] = c; /* leaves after the next frame */
            } else {
                deliver(to, c);
                if (held_[from]) {
                    deliver(to, held_[from]);
                    held_[from] = nullptr;
                }
            }
            if (dup)
                deliver(to, dup);
        }
        if (n == 0 && held_[from]) { /* nothing followed: let it go now */
            deliver(to, held_[from]);
            held_[from] = nullptr;
        }
        return n;
    }

    FaultProfile prof_;
    std::mt19937_64 rng_;
    std::uniform_real_distribution<double> uni_{0.0, 1.0};
    rte_mempool *pool_ = nullptr;
    rte_ring *rx_[2] = {}, *tx_[2] = {};
    std::string name_[2];
    rte_mbuf *held_[2] = {};
    FaultCounters ctr_;
};

} // namespace droce::bench
