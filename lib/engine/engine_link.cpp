/* SPDX-License-Identifier: BSD-3-Clause */
/* Link state on the control path: a periodic check on the EAL alarm thread (never on the
 * data path) turns link transitions into PortErr / PortActive events and, on a bonding
 * port (net_bonding), follows the active member: a failover is counted and announced
 * with a gratuitous ARP, sent by worker 0 (whose TX queue carries ARP).
 *
 * Why a periodic check and not the LSC callback alone: the bonding PMD raises LSC on the
 * bond only when its first member comes up or its last goes down; a switch from one
 * member to another changes no link status and raises nothing. Its members are watched
 * by the PMD itself (their LSC interrupt, or its own 10 ms poll for members without
 * one, as net_ring).
 *
 * A port that connects only when it starts (Caps::reconnect_by_restart: a memif client)
 * and whose peer refused or dropped it is stopped and started again while its link stays
 * down. The restart runs on worker 0, the port's only poller (reconnect is on only for a
 * port with one RX and one TX queue), so that nothing is inside its burst functions when
 * they are swapped; never here on the alarm thread. */
#include <algorithm>
#include <atomic>
#include <cstring>

#include <rte_alarm.h>
#include <rte_errno.h>
#include <rte_eth_bond.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "engine_log.h"
#include "engine_runtime.h"

namespace droce::engine {

namespace {
/* The check's period; the bonding PMD polls members without LSC interrupts at 10 ms. */
constexpr uint64_t kLinkCheckUs = 10'000;
constexpr int kUnknown = -1;
/* Reconnect: the first restart after 0.5 s down, then the wait doubles up to 4 s (in link
 * checks). A memif handshake takes milliseconds; the doubling keeps a peer that answers
 * slowly from being cut off again and again. */
constexpr uint32_t kReconnectFirstChecks = 50, kReconnectMaxChecks = 400;
/* A restart queued to worker 0 and not run after 5 s (its mailbox was full, or an
 * embedded application stopped polling) is asked for again. */
constexpr uint32_t kRestartStaleChecks = 500;
} // namespace

struct LinkWatch {
    Runtime *rt = nullptr;
    Dev *dev = nullptr;
    uint16_t port = 0;
    bool bond = false;
    /* Alarm thread only. */
    int status = kUnknown;  /* last link status seen */
    int primary = kUnknown; /* bond: last active member */
    rte_ether_addr mac{};   /* bond: its MAC at open (mode 1 keeps it across failover) */
    std::atomic<bool> stop{false};
    /* send_garp found the TX queue full (frames a dead member refused wait there): the
     * next check asks again. */
    std::atomic<bool> garp_pending{false};
    /* Reconnect (alarm thread, but restart_queued, which worker 0 clears). */
    bool reconnect = false;
    uint32_t down_checks = 0;
    uint32_t retry_checks = kReconnectFirstChecks;
    uint32_t queued_checks = 0;
    std::atomic<bool> restart_queued{false};
    /* Read by counters() from any thread. */
    std::atomic<uint64_t> down{0}, up{0}, failovers{0}, mac_changed{0}, garp_sent{0}, forced{0};
    std::atomic<uint64_t> reconnects{0}, reconnect_failed{0};
};

bool is_bond_port(uint16_t port) {
    rte_eth_dev_info info{};
    return rte_eth_dev_info_get(port, &info) == 0 && info.driver_name != nullptr &&
           std::strcmp(info.driver_name, "net_bonding") == 0;
}

int bond_of_member(uint16_t port) {
    uint16_t p;
    RTE_ETH_FOREACH_DEV(p) {
        if (p == port || !is_bond_port(p))
            continue;
        uint16_t members[RTE_MAX_ETHPORTS];
        const int n = rte_eth_bond_slaves_get(p, members, RTE_MAX_ETHPORTS);
        for (int i = 0; i < n; ++i)
            if (members[i] == port)
                return p;
    }
    return -1;
}

namespace {

void link_check(void *arg);

void arm(LinkWatch *w) {
    if (!w->stop.load(std::memory_order_acquire))
        rte_eal_alarm_set(kLinkCheckUs, link_check, w);
}

/* Runs step on the watched device on worker 0, without waiting. Queued to that worker,
 * which looks the device up by port when it runs, so a command still queued when the
 * device goes away touches nothing freed. */
void on_worker0(LinkWatch *w, void (Dev::*step)()) {
    Runtime *rt = w->rt;
    const uint16_t port = w->port;
    rt->exec_detached(
        0,
        [rt, port, step] {
            for (const auto &d : rt->devices())
                if (d->port_id() == port)
                    (d.get()->*step)();
        },
        0);
}

void request_garp(LinkWatch *w) { on_worker0(w, &Dev::send_garp); }

/* While the link is down: a restart of the port on worker 0 after kReconnectFirstChecks,
 * then after twice as long each time, up to kReconnectMaxChecks. */
void reconnect_check(LinkWatch *w) {
    if (w->status == 1) {
        w->down_checks = 0;
        w->retry_checks = kReconnectFirstChecks;
        return;
    }
    if (w->restart_queued.load(std::memory_order_acquire) &&
        ++w->queued_checks < kRestartStaleChecks)
        return;
    if (++w->down_checks < w->retry_checks)
        return;
    w->down_checks = 0;
    w->retry_checks = std::min(w->retry_checks * 2, kReconnectMaxChecks);
    w->queued_checks = 0;
    w->restart_queued.store(true, std::memory_order_release);
    const uint64_t n = w->reconnects.fetch_add(1, std::memory_order_relaxed) + 1;
    logger().warn("{}: link down: the port is restarted to connect again (try {}; next in up "
                  "to {} ms)",
                  w->dev->name(), n, w->retry_checks * kLinkCheckUs / 1000);
    on_worker0(w, &Dev::restart_port);
}

/* The bond learns a member's link from the member's LSC interrupt, or from its own poll
 * where the member has none. A member that claims LSC and does not deliver it leaves the
 * bond sending into a dead link for good (seen with net_tap members on 22.11: the bond
 * kept a link-down tap active for seconds, until the test gave up). So the engine reads the
 * members' links itself: when the active one is down and another is up, it makes that one the
 * primary (rte_eth_bond_primary_set, which also moves the bond's MAC to it). Returns 0 when no
 * member has a link. */
int bond_check_members(LinkWatch *w) {
    uint16_t members[RTE_MAX_ETHPORTS];
    const int n = rte_eth_bond_slaves_get(w->port, members, RTE_MAX_ETHPORTS);
    if (n <= 0)
        return 0;
    const int prim = rte_eth_bond_primary_get(w->port);
    bool prim_up = false;
    int other_up = -1;
    for (int i = 0; i < n; ++i) {
        rte_eth_link l{};
        if (rte_eth_link_get_nowait(members[i], &l) != 0 || l.link_status != RTE_ETH_LINK_UP)
            continue;
        if (members[i] == prim)
            prim_up = true;
        else if (other_up < 0)
            other_up = members[i];
    }
    if (!prim_up && other_up >= 0 &&
        rte_eth_bond_primary_set(w->port, static_cast<uint16_t>(other_up)) == 0) {
        w->forced.fetch_add(1, std::memory_order_relaxed);
        logger().warn("{}: member port {} is down but still the bond's active one: port {} made "
                      "active",
                      w->dev->name(), prim, other_up);
    }
    return prim_up || other_up >= 0 ? 1 : 0;
}

void link_check(void *arg) {
    auto *w = static_cast<LinkWatch *>(arg);
    if (w->stop.load(std::memory_order_acquire))
        return;
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(w->port, &link) == 0) {
        int st = link.link_status == RTE_ETH_LINK_UP ? 1 : 0;
        if (w->bond && st)
            st = bond_check_members(w);
        if (w->status != kUnknown && st != w->status) {
            const AsyncEventType t = st ? AsyncEventType::PortActive : AsyncEventType::PortErr;
            w->dev->push_event(EngineEvent{t, 0, nullptr});
            (st ? w->up : w->down).fetch_add(1, std::memory_order_relaxed);
            if (st) {
                logger().info("{}: link up", w->dev->name());
            } else {
                logger().warn("{}: link down{}", w->dev->name(),
                              w->bond ? " (no active bond member)" : "");
            }
            /* Back up (on any member): the peers and switches learn where we are. */
            if (st)
                request_garp(w);
        }
        w->status = st;
    }
    if (w->garp_pending.exchange(false, std::memory_order_acq_rel))
        request_garp(w);
    if (w->reconnect && w->status != kUnknown)
        reconnect_check(w);
    if (w->bond && w->status == 1) {
        const int prim = rte_eth_bond_primary_get(w->port);
        if (prim >= 0 && w->primary != kUnknown && prim != w->primary) {
            w->failovers.fetch_add(1, std::memory_order_relaxed);
            rte_ether_addr now{};
            rte_eth_macaddr_get(w->port, &now);
            const bool same_mac = rte_is_same_ether_addr(&now, &w->mac);
            if (!same_mac)
                w->mac_changed.fetch_add(1, std::memory_order_relaxed);
            /* The bond enables promiscuous mode on its active member only; the bond's
             * own flag stays set, so enabling it on the bond again would do nothing. */
            if (rte_eth_promiscuous_get(w->port) == 1)
                rte_eth_promiscuous_enable(static_cast<uint16_t>(prim));
            logger().warn("{}: failover: active member port {} -> {}{}", w->dev->name(), w->primary,
                          prim, same_mac ? "" : " (bond MAC changed: peers follow by the ARP)");
            request_garp(w);
        }
        if (prim >= 0)
            w->primary = prim;
    }
    arm(w);
}

} // namespace

void Dev::watch_link() {
    if (link_ != nullptr)
        return;
    auto *w = new LinkWatch;
    w->rt = &rt_;
    w->dev = this;
    w->port = port_;
    w->bond = is_bond_port(port_);
    if (w->bond) {
        rte_eth_macaddr_get(port_, &w->mac);
        const int mode = rte_eth_bond_mode_get(port_);
        if (mode != BONDING_MODE_ACTIVE_BACKUP)
            logger().warn("{}: bonding mode {}: droce is tested over mode 1 (active-backup) "
                          "only",
                          name_, mode);
    }
    if (caps_.reconnect_by_restart && !hosted_) {
        w->reconnect = nrxq_ == 1 && ntxq_ == 1;
        if (!w->reconnect)
            logger().warn("{}: {} RX / {} TX queues: not restarted when its peer refuses or "
                          "drops it (only a port with one of each is: worker 0 polls it alone)",
                          name_, nrxq_, ntxq_);
    }
    link_ = w;
    arm(w);
}

void Dev::restart_port() {
    rte_eth_link link{};
    if (rte_eth_link_get_nowait(port_, &link) == 0 && link.link_status == RTE_ETH_LINK_UP &&
        !port_stopped_) {
        /* Connected while the request waited. */
        if (link_ != nullptr)
            link_->restart_queued.store(false, std::memory_order_release);
        return;
    }
    int start_rc = 0;
    drivers::with_intr_thread_held([&] {
        rte_eth_dev_stop(port_);
        start_rc = rte_eth_dev_start(port_);
    });
    port_stopped_ = start_rc != 0;
    if (start_rc != 0)
        logger().warn("{}: rte_eth_dev_start: {}: the port stays stopped until a later try", name_,
                      rte_strerror(-start_rc));
    if (link_ != nullptr) {
        if (start_rc != 0)
            link_->reconnect_failed.fetch_add(1, std::memory_order_relaxed);
        link_->restart_queued.store(false, std::memory_order_release);
    }
}

void Dev::unwatch_link() {
    if (link_ == nullptr)
        return;
    link_->stop.store(true, std::memory_order_release);
    /* Waits for a check that is running on the alarm thread, and removes a re-armed one
     * (never called from the alarm thread itself). */
    rte_eal_alarm_cancel(link_check, link_);
    delete link_;
    link_ = nullptr;
}

bool Dev::push_event(const EngineEvent &e) { return events_.push(e); }

void Dev::send_garp() {
    /* An ARP request for our own address (sender = target IP): RFC 5227's announcement,
     * what Linux bonding sends after a failover (num_grat_arp). */
    Shard &sh = *shards_[0];
    rte_mbuf *m = rte_pktmbuf_alloc(tx_pool_);
    if (m == nullptr) {
        ++sh.ec.tx_no_mbuf;
        if (link_ != nullptr)
            link_->garp_pending.store(true, std::memory_order_release);
        return;
    }
    const size_t n = net::build_arp_request(ifc_, ifc_.ip, rte_pktmbuf_mtod(m, uint8_t *),
                                            rte_pktmbuf_tailroom(m));
    m->data_len = static_cast<uint16_t>(n);
    m->pkt_len = static_cast<uint32_t>(n);
    if (!sh.queue_tx(m)) {
        ++sh.ec.tx_drop_reply_batch_full;
        rte_pktmbuf_free(m);
        if (link_ != nullptr)
            link_->garp_pending.store(true, std::memory_order_release);
        return;
    }
    if (link_ != nullptr)
        link_->garp_sent.fetch_add(1, std::memory_order_relaxed);
}

void Dev::link_counters(std::vector<std::pair<std::string, uint64_t>> &v) const {
    const LinkWatch *w = link_;
    auto get = [&](const std::atomic<uint64_t> LinkWatch::*f) {
        return w != nullptr ? (w->*f).load(std::memory_order_relaxed) : 0;
    };
    v.emplace_back("link_down_events", get(&LinkWatch::down));
    v.emplace_back("link_up_events", get(&LinkWatch::up));
    v.emplace_back("link_failovers", get(&LinkWatch::failovers));
    v.emplace_back("link_failover_mac_changed", get(&LinkWatch::mac_changed));
    v.emplace_back("link_garp_sent", get(&LinkWatch::garp_sent));
    v.emplace_back("link_member_forced", get(&LinkWatch::forced));
    v.emplace_back("link_reconnects", get(&LinkWatch::reconnects));
    v.emplace_back("link_reconnect_failed", get(&LinkWatch::reconnect_failed));
}

} // namespace droce::engine
