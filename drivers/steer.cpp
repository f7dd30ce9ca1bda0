/* SPDX-License-Identifier: BSD-3-Clause */
/* Bifurcated steering with rte_flow: in isolated mode a port hands DPDK only the frames
 * its rules match, the kernel netdev (mlx5/mlx4) keeps everything else — TCP for
 * perftest's exchange, SSH. droce needs two kinds of frames: RoCEv2 (UDP/4791 to its
 * address) on its RX queues, and ARP for its address on queue 0 (ARP lives on worker 0). */
#include <cerrno>
#include <cstring>
#include <vector>

#include <arpa/inet.h>

#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_flow.h>
#include <spdlog/spdlog.h>

#include "drivers.h"

namespace droce::drivers {

namespace {

std::string flow_err(int rc, const rte_flow_error &e) {
    std::string s = rte_strerror(rc < 0 ? -rc : rc);
    if (e.message != nullptr)
        s = std::string(e.message) + " (" + s + ")";
    return s;
}

std::string ip_str(uint32_t be) {
    char b[INET_ADDRSTRLEN] = {};
    in_addr a{};
    a.s_addr = be;
    inet_ntop(AF_INET, &a, b, sizeof b);
    return b;
}

/* Validates then creates one rule; on refusal, records why and returns null. */
rte_flow *make_rule(uint16_t port, const char *what, const rte_flow_item *pattern,
                    const rte_flow_action *actions, SteerReport *r) {
    rte_flow_attr attr{};
    attr.ingress = 1;
    rte_flow_error err{};
    int rc = rte_flow_validate(port, &attr, pattern, actions, &err);
    if (rc != 0) {
        r->errors.push_back(std::string("rte_flow_validate(") + what + "): " + flow_err(rc, err));
        return nullptr;
    }
    err = {};
    rte_flow *f = rte_flow_create(port, &attr, pattern, actions, &err);
    if (f == nullptr)
        r->errors.push_back(std::string("rte_flow_create(") + what +
                            "): " + flow_err(rte_errno, err));
    return f;
}

} // namespace

bool steer_isolate(uint16_t port, SteerReport *r) {
    rte_flow_error err{};
    const int rc = rte_flow_isolate(port, 1, &err);
    if (rc != 0) {
        r->errors.push_back("rte_flow_isolate: " + flow_err(rc, err));
        r->mode = "failed: whole port";
        return false;
    }
    r->mode = "isolating";
    return true;
}

void steer_install(uint16_t port, const SteerSpec &s, SteerReport *r) {
    std::vector<rte_flow *> made;
    const std::string ip = ip_str(s.ipv4_be);

    /* RoCEv2: IPv4 to droce's address, UDP destination 4791. */
    rte_flow_item_ipv4 ip_spec{}, ip_mask{};
    ip_spec.hdr.dst_addr = s.ipv4_be;
    ip_mask.hdr.dst_addr = 0xffffffffu;
    rte_flow_item_udp udp_spec{}, udp_mask{};
    udp_spec.hdr.dst_port = htons(s.udp_port);
    udp_mask.hdr.dst_port = 0xffff;
    const rte_flow_item roce[] = {
        {RTE_FLOW_ITEM_TYPE_ETH, nullptr, nullptr, nullptr},
        {RTE_FLOW_ITEM_TYPE_IPV4, &ip_spec, nullptr, &ip_mask},
        {RTE_FLOW_ITEM_TYPE_UDP, &udp_spec, nullptr, &udp_mask},
        {RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr},
    };
    /* Several queues: RSS with droce's own key, so the UDP source ports droce picks for
     * its QPs land on the owning worker as with port-level RSS. */
    uint16_t queues[RTE_MAX_QUEUES_PER_PORT];
    const uint16_t nq = s.rx_queues == 0 ? 1 : s.rx_queues;
    for (uint16_t q = 0; q < nq; ++q)
        queues[q] = q;
    rte_flow_action_rss rss{};
    rss.func = RTE_ETH_HASH_FUNCTION_TOEPLITZ;
    rss.types = RTE_ETH_RSS_NONFRAG_IPV4_UDP;
    rss.key = s.rss_key;
    rss.key_len = s.rss_key != nullptr ? 40 : 0;
    rss.queue_num = nq;
    rss.queue = queues;
    rte_flow_action_queue q0{};
    q0.index = 0;
    const rte_flow_action to_droce[] = {
        nq > 1 ? rte_flow_action{RTE_FLOW_ACTION_TYPE_RSS, &rss}
               : rte_flow_action{RTE_FLOW_ACTION_TYPE_QUEUE, &q0},
        {RTE_FLOW_ACTION_TYPE_END, nullptr},
    };
    const std::string roce_what =
        "eth / ipv4 dst " + ip + " / udp dst " + std::to_string(s.udp_port) + " -> " +
        (nq > 1 ? "rss queues 0-" + std::to_string(nq - 1) : std::string("queue 0"));
    bool ok = true;
    if (rte_flow *f = make_rule(port, roce_what.c_str(), roce, to_droce, r)) {
        made.push_back(f);
        r->rules.push_back(roce_what);
    } else {
        ok = false;
    }

    /* ARP for droce's address (requests for it, replies to it): by target address where
     * the PMD matches ARP fields, else every ARP frame (the kernel then loses ARP on this
     * port: said in the report). */
    const rte_flow_action to_q0[] = {
        {RTE_FLOW_ACTION_TYPE_QUEUE, &q0},
        {RTE_FLOW_ACTION_TYPE_END, nullptr},
    };
    rte_flow_item_eth arp_eth{}, arp_eth_mask{};
    arp_eth.hdr.ether_type = htons(RTE_ETHER_TYPE_ARP);
    arp_eth_mask.hdr.ether_type = 0xffff;
    rte_flow_item_arp_eth_ipv4 arp{}, arp_mask{};
    arp.tpa = s.ipv4_be;
    arp_mask.tpa = 0xffffffffu;
    const rte_flow_item arp_by_tip[] = {
        {RTE_FLOW_ITEM_TYPE_ETH, &arp_eth, nullptr, &arp_eth_mask},
        {RTE_FLOW_ITEM_TYPE_ARP_ETH_IPV4, &arp, nullptr, &arp_mask},
        {RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr},
    };
    const rte_flow_item arp_any[] = {
        {RTE_FLOW_ITEM_TYPE_ETH, &arp_eth, nullptr, &arp_eth_mask},
        {RTE_FLOW_ITEM_TYPE_END, nullptr, nullptr, nullptr},
    };
    if (ok) {
        const std::string w1 = "eth type 0x0806 / arp target " + ip + " -> queue 0";
        const std::string w2 = "eth type 0x0806 -> queue 0";
        if (rte_flow *f = make_rule(port, w1.c_str(), arp_by_tip, to_q0, r)) {
            made.push_back(f);
            r->rules.push_back(w1);
        } else if (rte_flow *g = make_rule(port, w2.c_str(), arp_any, to_q0, r)) {
            made.push_back(g);
            r->rules.push_back(w2 + " (every ARP frame: the kernel sees none on this port)");
        } else {
            ok = false;
        }
    }
    if (ok) {
        r->mode = "isolated";
        return;
    }

    /* The defined fallback: no rules, no isolation; the port behaves as without
     * steering (droce receives every frame, classifies and counts what is not its). The
     * PMDs change isolation only on a stopped port. */
    for (rte_flow *f : made) {
        rte_flow_error err{};
        rte_flow_destroy(port, f, &err);
    }
    r->rules.clear();
    r->mode = "failed: whole port";
    rte_eth_dev_stop(port);
    rte_flow_error err{};
    if (int rc = rte_flow_isolate(port, 0, &err); rc != 0)
        r->errors.push_back("rte_flow_isolate(off): " + flow_err(rc, err));
    if (int rc = rte_eth_dev_start(port); rc != 0)
        r->errors.push_back(std::string("rte_eth_dev_start after undoing isolation: ") +
                            rte_strerror(-rc));
}

} // namespace droce::drivers
