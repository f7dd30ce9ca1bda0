/* SPDX-License-Identifier: BSD-3-Clause */
/* The far end of an engine ring pair driven by hand: the test reads droce's frames raw
 * from it and injects its own (test_engine_zc_retx, test_engine_ack_hold). */
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

namespace droce::test {

/** Starts port `name` (the pair's second port) with one RX and one TX queue and a pool of
 * its own named `pool_prefix` + a sequence number. Use under ASSERT_NO_FATAL_FAILURE. */
inline void start_raw_peer(const std::string &name, const char *pool_prefix, uint16_t &port,
                           rte_mempool *&pool) {
    ASSERT_EQ(rte_eth_dev_get_port_by_name(name.c_str(), &port), 0);
    static int seq = 0;
    const std::string pn = pool_prefix + std::to_string(seq++);
    pool = rte_pktmbuf_pool_create(pn.c_str(), 255, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    ASSERT_NE(pool, nullptr);
    rte_eth_conf conf{};
    ASSERT_EQ(rte_eth_dev_configure(port, 1, 1, &conf), 0);
    ASSERT_EQ(rte_eth_rx_queue_setup(port, 0, 256, SOCKET_ID_ANY, nullptr, pool), 0);
    ASSERT_EQ(rte_eth_tx_queue_setup(port, 0, 256, SOCKET_ID_ANY, nullptr), 0);
    ASSERT_EQ(rte_eth_dev_start(port), 0);
}

/** A broadcast ARP who-has from (mac, ip) for `target`, padded to 60 bytes: the peer
 * makes itself known, so a QP toward it goes to RTR without waiting. */
inline std::vector<uint8_t> arp_who_has(const uint8_t mac[6], const uint8_t ip[4],
                                        const uint8_t target[4]) {
    std::vector<uint8_t> f(14);
    std::memset(f.data(), 0xff, 6);
    std::memcpy(f.data() + 6, mac, 6);
    f[12] = 0x08;
    f[13] = 0x06;
    const uint8_t head[] = {0, 1, 8, 0, 6, 4, 0, 1}; /* Ethernet, IPv4, request */
    f.insert(f.end(), head, head + sizeof(head));
    f.insert(f.end(), mac, mac + 6);
    f.insert(f.end(), ip, ip + 4);
    f.insert(f.end(), 6, 0); /* target MAC unknown */
    f.insert(f.end(), target, target + 4);
    f.resize(60, 0);
    return f;
}

} // namespace droce::test
