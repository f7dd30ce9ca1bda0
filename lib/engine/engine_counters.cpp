/* SPDX-License-Identifier: BSD-3-Clause */
/* A device's counters: each shard's, the port's (rte_eth_stats and xstats), merged by
 * name when read, and the per-QP summaries droce-info shows. Read-side only: nothing
 * here runs on the per-packet path. */
#include <string>
#include <utility>
#include <vector>

#include <rte_ethdev.h>

#include "engine_counters.h"
#include "engine_ud.h"

namespace droce::engine {

std::vector<std::pair<std::string, uint64_t>> Shard::counters() const {
    std::vector<std::pair<std::string, uint64_t>> v;
#define DROCE_ENGINE_VISIT(n) v.emplace_back(#n, ec.n);
    DROCE_ENGINE_COUNTERS(DROCE_ENGINE_VISIT)
#undef DROCE_ENGINE_VISIT
    for (size_t r = 1; r < static_cast<size_t>(wire::ParseResult::Count_); ++r)
        v.emplace_back(std::string("rx_drop_") +
                           wire::parse_result_name(static_cast<wire::ParseResult>(r)),
                       ec.rx_drop_parse[r]);
    v.emplace_back("rx_ack_icrc_cached", ack_icrc_.hits); /* ACK ICRCs from the cache */
    /* Gauges of this worker's scheduling state. */
    v.emplace_back("tx_queue_depth", tx_.size());
    v.emplace_back("tx_queue_depth_max", tx_.high_water()); /* (the most, when merged) */
    v.emplace_back("ready_qps", ready_.size());
    v.emplace_back("armed_timers", timers_.size());
    v.emplace_back("qps", nqps_);
    /* PFC, named as mlx5's ethtool -S names them (durations in microseconds). */
    for (unsigned i = 0; i < net::kPfcPriorities; ++i) {
        const std::string pr = "prio" + std::to_string(i) + "_pause";
        v.emplace_back("rx_" + pr, pfc_.rx_pause[i]);
        v.emplace_back("rx_" + pr + "_duration", pfc_.rx_pause_ns[i] / 1000);
        v.emplace_back("rx_" + pr + "_transition", pfc_.rx_transition[i]);
        v.emplace_back("tx_" + pr, pfc_.tx_pause[i]);
        v.emplace_back("tx_" + pr + "_duration", pfc_.tx_pause_ns[i] / 1000);
    }
    for (size_t r = 1; r < static_cast<size_t>(net::PfcResult::Count_); ++r)
        v.emplace_back(std::string("rx_mac_ctrl_") +
                           net::pfc_result_name(static_cast<net::PfcResult>(r)),
                       pfc_.rx_result[r]);
    v.emplace_back("tx_pfc_held", pfc_.tx_held);
    v.emplace_back("tx_pfc_nombuf", pfc_.tx_nombuf);
    v.emplace_back("pfc_qps_parked", pfc_.qps_parked);
    v.emplace_back("rx_pfc_pause_storm", pfc_.storms);
    v.emplace_back("rx_pfc_pause_other_prio", pfc_.other_prio);
    ud_counters(v);
    v.emplace_back("pfc_paused_qps", parked_qps()); /* gauges */
    v.emplace_back("pfc_paused_prios", paused_mask_);
    v.emplace_back("pfc_storm_prios", storm_mask_);
    nc.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    nc6.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    rcc.for_each([&](const char *n, uint64_t x) { v.emplace_back(n, x); });
    return v;
}

std::vector<std::pair<std::string, uint64_t>> Dev::port_counters() const {
    std::vector<std::pair<std::string, uint64_t>> v;
    rte_eth_stats st{};
    if (rte_eth_stats_get(port_, &st) == 0) {
        /* What the port itself lost before we saw it (mlx5: rx_out_of_buffer). */
        v.emplace_back("rx_out_of_buffer", st.imissed + st.rx_nombuf);
        v.emplace_back("port_rcv_errors", st.ierrors);
    }
    /* Engine-wide: mbufs not in the pools (in rings, TX queues, PMD queues). After the
     * traffic stops it must come back to what the ports hold; a leak shows here. */
    v.emplace_back("mbufs_in_use", rt_.mbufs_in_use());
    v.emplace_back("workers", shards_.size());
    capture_counters(v);
    link_counters(v);
    /* The PMD's own pause counters, where it has any (ixgbe/i40e: *xon*, *xoff*; mlx5
     * reads the kernel's): whether the port's hardware sent or honoured pause, which
     * droce's software counters cannot see. Prefixed pmd_, as the PMD names them. */
    const int n = rte_eth_xstats_get_names(port_, nullptr, 0);
    if (n > 0) {
        std::vector<rte_eth_xstat_name> names(static_cast<size_t>(n));
        std::vector<rte_eth_xstat> vals(static_cast<size_t>(n));
        if (rte_eth_xstats_get_names(port_, names.data(), static_cast<unsigned>(n)) == n &&
            rte_eth_xstats_get(port_, vals.data(), static_cast<unsigned>(n)) == n) {
            for (const rte_eth_xstat &x : vals) {
                if (x.id >= static_cast<uint64_t>(n))
                    continue;
                const std::string nm = names[x.id].name;
                if (nm.find("pause") != std::string::npos || nm.find("pfc") != std::string::npos ||
                    nm.find("xon") != std::string::npos || nm.find("xoff") != std::string::npos)
                    v.emplace_back("pmd_" + nm, x.value);
            }
        }
    }
    return v;
}

std::vector<std::pair<std::string, uint64_t>>
Dev::merge_counters(const std::vector<std::vector<std::pair<std::string, uint64_t>>> &parts) const {
    std::vector<std::pair<std::string, uint64_t>> v;
    for (const auto &part : parts) {
        if (v.empty()) {
            v = part;
            continue;
        }
        /* Every shard lists the same names in the same order. */
        for (size_t i = 0; i < v.size() && i < part.size(); ++i) {
            if (v[i].first == "tx_queue_depth_max")
                v[i].second = std::max(v[i].second, part[i].second);
            else
                v[i].second += part[i].second;
        }
    }
    for (auto &kv : port_counters())
        v.push_back(std::move(kv));
    return v;
}

std::vector<std::pair<std::string, uint64_t>> Dev::counters() const {
    std::vector<std::vector<std::pair<std::string, uint64_t>>> parts;
    for (const auto &sh : shards_)
        parts.push_back(sh->counters());
    std::vector<std::pair<std::string, uint64_t>> v = merge_counters(parts);
    v.emplace_back("zc_mbufs_outstanding", zc_.outstanding());
    const ZcCounters &z = zc_.counters();
    v.emplace_back("mr_extmem_register_failed", z.extmem_register_failed);
    v.emplace_back("mr_dma_map_failed", z.dma_map_failed);
    v.emplace_back("mr_dereg_inflight_refs", z.dereg_inflight_refs);
    v.emplace_back("mr_dereg_timeout", z.dereg_timeout);
    return v;
}

namespace {
const char *paused_str(uint8_t prio) {
    static const char *const s[net::kPfcPriorities] = {
        " paused prio 0", " paused prio 1", " paused prio 2", " paused prio 3",
        " paused prio 4", " paused prio 5", " paused prio 6", " paused prio 7"};
    return prio < net::kPfcPriorities ? s[prio] : "";
}
std::pair<uint32_t, std::string> qp_summary(const QpCtx &q, const ud::Qp &u) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "UD state %s qkey 0x%08x sq %u rq %u worker %u%s",
                  qp_state_str(u.state()), u.qkey(), u.send_queue_depth(), u.recv_queue_depth(),
                  q.worker, paused_str(q.parked_prio));
    return {u.qpn(), buf};
}

std::pair<uint32_t, std::string> qp_summary(const QpCtx &q, const rc::Qp &qp) {
    const QpAttr &a = qp.attr();
    char buf[288];
    std::snprintf(buf, sizeof buf,
                  "state %s dest_qp_num 0x%06x path_mtu %u sq_psn 0x%06x rq_psn 0x%06x "
                  "timeout %u retry_cnt %u rnr_retry %u min_rnr_timer %u max_rd_atomic %u "
                  "max_dest_rd_atomic %u access 0x%x srq %d worker %u%s",
                  qp_state_str(qp.state()), a.dest_qp_num, mtu_bytes(a.path_mtu), a.sq_psn,
                  a.rq_psn, a.timeout, a.retry_cnt, a.rnr_retry, a.min_rnr_timer, a.max_rd_atomic,
                  a.max_dest_rd_atomic, a.qp_access_flags, q.srq != nullptr ? 1 : 0, q.worker,
                  paused_str(q.parked_prio));
    return {qp.qpn(), std::string(buf) + " | " + qp.debug_string()};
}
} // namespace

std::vector<std::pair<uint32_t, std::string>> Dev::qp_summaries(uint32_t w) const {
    std::vector<std::pair<uint32_t, std::string>> v;
    const uint32_t nw = workers();
    for (uint32_t qpn = w; qpn < max_qps_; qpn += nw) {
        const QpCtx *q = qps_[qpn].get();
        if (q == nullptr)
            continue;
        v.emplace_back(q->visit([&](const auto &t) { return qp_summary(*q, t); }));
    }
    return v;
}

} // namespace droce::engine
