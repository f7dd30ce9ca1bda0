/* SPDX-License-Identifier: BSD-3-Clause */
/* The far end of an engine ring pair driven by hand: the test reads droce's frames raw
 * from it and injects its own (the tests on raw_peer_fixture.h, test_zc_virtio). Also what
 * those tests share around it: an embedded engine the test polls itself, a device counter,
 * and a QP connected to the peer's QP. */
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <droce/droce.h>

#include "net.h"

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

/** An engine in embedded mode on lcore 0 without hugepages: the test thread polls it,
 * so every poll is the test's and each one's effect can be seen. */
inline std::unique_ptr<Engine> embedded_engine(const char *prog, bool zero_copy = false) {
    static const char *args[] = {
        prog,   "--no-huge", "-m",          "512",       "--no-pci",       "--no-shconf",
        "-l",   "0",         "--log-level", "*:warning", "--no-telemetry", "--",
        nullptr};
    args[0] = prog;
    EngineOptions o;
    o.embedded = true;
    o.mbufs = 4095;
    o.zero_copy = zero_copy;
    o.log_level = "warn";
    int consumed = 0;
    auto e = Engine::create(12, const_cast<char **>(args), &consumed, o);
    EXPECT_TRUE(e) << e.status().message();
    return e ? std::move(*e) : nullptr;
}

/** One of d's counters; a test failure if d has no counter of that name. */
inline uint64_t device_counter(const Device &d, const std::string &name) {
    for (const auto &[k, v] : d.counters())
        if (k == name)
            return v;
    ADD_FAILURE() << "no counter " << name;
    return 0;
}

/** Frames from the peer into the device's RX ring, in one burst (no engine poll). */
inline void peer_send(uint16_t port, rte_mempool *pool,
                      const std::vector<std::vector<uint8_t>> &frames) {
    std::vector<rte_mbuf *> ms;
    for (const auto &f : frames) {
        rte_mbuf *m = rte_pktmbuf_alloc(pool);
        ASSERT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(f.size())), f.data(), f.size());
        ms.push_back(m);
    }
    ASSERT_EQ(rte_eth_tx_burst(port, 0, ms.data(), static_cast<uint16_t>(ms.size())), ms.size());
}

/** One RX burst (at most 32) of what the device sent, each frame flattened (zero-copy
 * frames are chains: a header mbuf, the attached payload and an ICRC mbuf). */
inline std::vector<std::vector<uint8_t>> peer_receive(uint16_t port) {
    std::vector<std::vector<uint8_t>> out;
    rte_mbuf *m[32];
    const uint16_t n = rte_eth_rx_burst(port, 0, m, 32);
    for (uint16_t i = 0; i < n; ++i) {
        std::vector<uint8_t> f(rte_pktmbuf_pkt_len(m[i]));
        const void *p = rte_pktmbuf_read(m[i], 0, f.size(), f.data());
        if (p != f.data())
            std::memcpy(f.data(), p, f.size());
        out.push_back(std::move(f));
        rte_pktmbuf_free(m[i]);
    }
    return out;
}

/** Where a QP connects on the raw peer: its QP, IPv4 address and the two PSNs. */
struct RawPath {
    uint32_t dest_qpn;
    uint32_t peer_ip; /* host order */
    uint32_t rq_psn;
    uint32_t sq_psn;
    uint8_t timeout; /* local ACK timeout exponent */
    uint32_t access; /* the QP's remote rights */
    Mtu mtu = Mtu::Mtu1024;
};

/** Init -> RTR -> RTS toward the raw peer (or another droce QP: its QPN and IPv4
 * address), 4 reads / atomics each way, 7 retries. Use under ASSERT_NO_FATAL_FAILURE. */
inline void connect_to_peer(QueuePair &qp, const RawPath &p) {
    QpAttr a;
    a.qp_state = QpState::Init;
    a.qp_access_flags = p.access;
    ASSERT_TRUE(qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags));
    a = QpAttr{};
    a.qp_state = QpState::Rtr;
    a.path_mtu = p.mtu;
    a.dest_qp_num = p.dest_qpn;
    a.rq_psn = p.rq_psn;
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.ah_attr.dgid = net::GidTable::ipv4_mapped(p.peer_ip);
    a.ah_attr.sgid_index = 1;
    Status s = qp.modify(a, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                kQpMaxDestRdAtomic | kQpMinRnrTimer);
    ASSERT_TRUE(s) << s.message();
    a = QpAttr{};
    a.qp_state = QpState::Rts;
    a.sq_psn = p.sq_psn;
    a.timeout = p.timeout;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 4;
    ASSERT_TRUE(qp.modify(a, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt | kQpRnrRetry |
                                 kQpMaxQpRdAtomic));
}

} // namespace droce::test
