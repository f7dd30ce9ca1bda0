/* SPDX-License-Identifier: BSD-3-Clause */
/* memif_peer: a memif client that connects, sends frames as fast as its port takes them
 * (and drains what it receives), then leaves: the peer that test_memif_leave and
 * test_fabric_leave.sh bring and take away while the other side polls at full rate.
 *
 *   memif_peer --socket PATH [--leave exit|stop|kill] [--ms N] [--size B] [--src-mac M]
 *
 *   --leave exit  after --ms of traffic (counted once the other side has read 3 rings' worth
 *                 of frames) the process ends without stopping its port (the
 *                 kernel closes the control socket: the server sees it hang up)
 *   --leave stop  after --ms it stops its port (memif sends its disconnect), then ends
 *   --leave kill  it sends until killed (the test sends SIGKILL)
 * It prints "up" once its link is up, and exits 2 if the link does not come up in 10 s. */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
    std::string socket;
    std::string leave = "kill";
    uint32_t ms = 20;
    uint16_t size = 1024;
    uint8_t src_mac[6] = {0x02, 0, 0, 0, 0x4d, 0x01};
};

[[noreturn]] void usage(const char *why) {
    std::fprintf(stderr,
                 "memif_peer: %s\nusage: memif_peer --socket PATH [--leave exit|stop|kill] "
                 "[--ms N] [--size B] [--src-mac aa:bb:cc:dd:ee:ff]\n",
                 why);
    std::exit(64);
}

Args parse(int argc, char **argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        const std::string k = argv[i];
        if (i + 1 >= argc)
            usage(("missing value for " + k).c_str());
        const char *v = argv[++i];
        if (k == "--socket") {
            a.socket = v;
        } else if (k == "--leave") {
            a.leave = v;
            if (a.leave != "exit" && a.leave != "stop" && a.leave != "kill")
                usage("--leave takes exit, stop or kill");
        } else if (k == "--ms") {
            a.ms = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
        } else if (k == "--size") {
            const unsigned long s = std::strtoul(v, nullptr, 10);
            if (s < 60 || s > 2048)
                usage("--size takes 60..2048");
            a.size = static_cast<uint16_t>(s);
        } else if (k == "--src-mac") {
            unsigned m[6];
            if (std::sscanf(v, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
                usage("bad --src-mac");
            for (int j = 0; j < 6; ++j)
                a.src_mac[j] = static_cast<uint8_t>(m[j]);
        } else {
            usage(("unknown option " + k).c_str());
        }
    }
    if (a.socket.empty())
        usage("--socket is required");
    return a;
}

/* A broadcast frame of a local experimental ethertype: a fabric floods it, droce counts it
 * as not its own, a raw poller frees it. */
void fill(rte_mbuf *m, const Args &a) {
    auto *p = rte_pktmbuf_mtod(m, uint8_t *);
    std::memset(p, 0xff, 6);
    std::memcpy(p + 6, a.src_mac, 6);
    p[12] = 0x88;
    p[13] = 0xb5;
    std::memset(p + 14, 0x5a, a.size - 14u);
    m->data_len = a.size;
    m->pkt_len = a.size;
}

} // namespace

int main(int argc, char **argv) {
    const Args a = parse(argc, argv);
    const std::string prefix = "memif-peer-" + std::to_string(getpid());
    const std::string vdev = "net_memif_peer,role=client,socket-abstract=no,socket=" + a.socket;
    std::vector<const char *> eal = {"memif_peer",    "--no-huge",    "-m",          "128",
                                     "--no-pci",      "--no-shconf",  "-l",          "0",
                                     "--file-prefix", prefix.c_str(), "--log-level", "*:error",
                                     "--vdev",        vdev.c_str()};
    if (rte_eal_init(static_cast<int>(eal.size()), const_cast<char **>(eal.data())) < 0) {
        std::fprintf(stderr, "memif_peer: rte_eal_init failed\n");
        return 1;
    }
    rte_mempool *mp = rte_pktmbuf_pool_create("peer_pool", 4095, 256, 0, 2176, rte_socket_id());
    uint16_t port = 0;
    rte_eth_conf conf{};
    if (mp == nullptr || rte_eth_dev_get_port_by_name("net_memif_peer", &port) != 0 ||
        rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
        rte_eth_rx_queue_setup(port, 0, 1024, 0, nullptr, mp) != 0 ||
        rte_eth_tx_queue_setup(port, 0, 1024, 0, nullptr) != 0 || rte_eth_dev_start(port) != 0) {
        std::fprintf(stderr, "memif_peer: port set-up failed\n");
        return 1;
    }
    const auto up_by = Clock::now() + std::chrono::seconds(10);
    rte_eth_link link{};
    while (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status != RTE_ETH_LINK_UP) {
        if (Clock::now() > up_by) {
            std::fprintf(stderr, "memif_peer: link not up in 10 s\n");
            return 2;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::printf("up\n");
    std::fflush(stdout);

    const bool timed = a.leave != "kill";
    /* The --ms count from the moment the other side has drained our TX ring a few times
     * over (it polls), so that it leaves mid-flood, not before the first burst is read. */
    constexpr uint64_t kDrained = 4096;
    uint64_t sent = 0;
    auto leave_at = Clock::time_point::max();
    rte_mbuf *burst[32];
    rte_mbuf *rx[32];
    for (;;) {
        const uint16_t got = rte_eth_rx_burst(port, 0, rx, 32);
        rte_pktmbuf_free_bulk(rx, got);
        if (rte_pktmbuf_alloc_bulk(mp, burst, 32) == 0) {
            for (auto *m : burst)
                fill(m, a);
            const uint16_t k = rte_eth_tx_burst(port, 0, burst, 32);
            rte_pktmbuf_free_bulk(burst + k, 32u - k);
            sent += k;
        }
        if (!timed)
            continue;
        if (leave_at == Clock::time_point::max() && sent >= kDrained)
            leave_at = Clock::now() + std::chrono::milliseconds(a.ms);
        if (Clock::now() >= leave_at)
            break;
    }
    if (a.leave == "stop") {
        rte_eth_dev_stop(port);
        rte_eth_dev_close(port);
        rte_eal_cleanup();
    }
    std::_Exit(0); /* "exit": as a process that ends without a goodbye */
}
