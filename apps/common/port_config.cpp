/* SPDX-License-Identifier: BSD-3-Clause */
#include "port_config.h"

namespace droce::app {

void apply_congestion_options(const DeviceOptions &o, DeviceConfig &cfg) {
    cfg.dcqcn = o.dcqcn;
    cfg.dcqcn_params = o.dcqcn_params; /* --config's [dcqcn] (the library's defaults) */
    if (o.ecn >= 0)
        cfg.dcqcn_params.ecn_mode = static_cast<EcnMode>(o.ecn);
    cfg.pfc_priority = o.pfc; /* --pfc: ask the PMD to make that priority lossless */
    cfg.pfc_storm_ms = o.pfc_storm_ms;
    cfg.pfc_tx_xoff = o.pfc_tx_xoff;
    cfg.pfc_tx_xon = o.pfc_tx_xon;
    cfg.line_rate_bps = o.line_rate_bps; /* --line-rate: the RP's maximum, PFC quanta */
    cfg.rc_pacing = o.rc_pacing;
    cfg.tx_burst_frames = o.tx_burst; /* --tx-burst: QPs held to the line rate */
}

/* Both sides of --loopback get the VLAN and the forced values; the gateways are for a
 * real port only (port_device_config). */
void apply_l3_options(const DeviceOptions &o, DeviceConfig &cfg) {
    cfg.vlan = o.vlan;
    cfg.rocev1_gids = o.rocev1_gids; /* --gid-type v1 */
    cfg.force_tclass = o.force_dscp >= 0 ? o.force_dscp << 2 : -1;
    cfg.force_hop_limit = o.force_ttl;
}

DeviceConfig port_device_config(const DeviceOptions &o) {
    DeviceConfig cfg;
    apply_congestion_options(o, cfg);
    cfg.port = o.dpdk_port;
    cfg.ipv4_cidr = o.ip;
    cfg.ipv6_cidrs = o.ip6;
    cfg.gateway = o.gateway;
    cfg.gateway6 = o.gateway6;
    apply_l3_options(o, cfg);
    cfg.mac = o.mac;
    cfg.mtu = o.eth_mtu;
    cfg.capture = o.capture;
    cfg.capture_snaplen = o.capture_snaplen;
    cfg.rtr_nonblocking = o.rtr_nonblocking;
    cfg.queue_stride = o.queue_stride;
    return cfg;
}

} // namespace droce::app
