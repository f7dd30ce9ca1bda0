/* SPDX-License-Identifier: BSD-3-Clause */
/* The fixture the engine tests share that drive one RC QP frame by frame
 * (test_engine_ack_hold, test_engine_rx_fast, test_engine_rc_pacing, test_engine_zc_retx):
 * a device on one port of a net_ring pair, a raw DPDK peer on the other (raw_peer.h), and
 * the QP with its PD, CQs and a 64 KiB MR. Each test opens its device its own way, then
 * calls start_peer and create_qp_objects; TearDown takes it all down in the order the
 * engine needs (verbs objects, the peer's port, the engine, the peer's pool). */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mempool.h>

#include <droce/droce.h>

#include "raw_peer.h"

namespace droce::test {

class RawPeerQpTest : public ::testing::Test {
  protected:
    /** The raw peer on the pair's second port, made known to the device by an ARP
     * who-has from (peer_mac, peer_ip) for dev_ip (VLAN-tagged when vlan != 0); four polls
     * later, what the device sent meanwhile is read away. Under ASSERT_NO_FATAL_FAILURE. */
    void start_peer(const std::string &port_name, const char *pool_prefix,
                    const uint8_t peer_mac[6], const uint8_t peer_ip[4], const uint8_t dev_ip[4],
                    uint16_t vlan = 0) {
        ASSERT_NO_FATAL_FAILURE(start_raw_peer(port_name, pool_prefix, peer, pool));
        auto arp = arp_who_has(peer_mac, peer_ip, dev_ip);
        if (vlan != 0) {
            const uint8_t tag[4] = {0x81, 0x00, static_cast<uint8_t>(vlan >> 8),
                                    static_cast<uint8_t>(vlan)};
            arp.insert(arp.begin() + 12, tag, tag + 4);
        }
        ASSERT_NO_FATAL_FAILURE(peer_send(peer, pool, {arp}));
        polls(4);
        peer_receive(peer);
    }

    /** pd, scq and rcq (64 entries; on `cq_worker` when >= 0; rcq is scq when one_cq), a
     * zeroed 64 KiB buf registered with `access`, and an RC qp on them (in RESET). */
    void create_qp_objects(uint32_t access, int cq_worker = -1, bool one_cq = false) {
        pd = std::move(*dev->alloc_pd());
        auto make_cq = [&] {
            return cq_worker >= 0 ? std::move(*dev->create_cq(64, cq_worker))
                                  : std::move(*dev->create_cq(64));
        };
        scq = make_cq();
        if (!one_cq)
            rcq = make_cq();
        buf.assign(64 << 10, 0);
        auto m = pd->reg_mr(buf.data(), buf.size(), access);
        ASSERT_TRUE(m) << m.status().message();
        mr = std::move(*m);
        QpInitAttr qa;
        qa.send_cq = scq.get();
        qa.recv_cq = one_cq ? scq.get() : rcq.get();
        auto q = pd->create_qp(qa);
        ASSERT_TRUE(q) << q.status().message();
        qp = std::move(*q);
    }

    void TearDown() override {
        qp.reset();
        mr.reset();
        scq.reset();
        rcq.reset();
        pd.reset();
        if (pool != nullptr) {
            rte_eth_dev_stop(peer);
            rte_eth_dev_close(peer);
        }
        engine.reset();
        rte_mempool_free(pool);
    }

    void polls(int n) {
        for (int i = 0; i < n; ++i)
            engine->poll();
    }

    std::unique_ptr<Engine> engine;
    Device *dev = nullptr;
    uint16_t peer = 0;
    rte_mempool *pool = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<CompletionQueue> scq, rcq;
    std::vector<uint8_t> buf;
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<QueuePair> qp;
};

} // namespace droce::test
