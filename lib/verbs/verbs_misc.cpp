/* SPDX-License-Identifier: BSD-3-Clause */
/* The verbs that need no device: strings, rate conversions, fork protection, sysfs. */
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "verbs_objects.h"

namespace {

/* Static rates (enum ibv_rate) as Gb/s x 1000 / 2500 multiples and Mb/s: the IB spec's
 * table; IBV_RATE_MAX (0) and unknown values give 0 / -1. */
struct RateRow {
    ibv_rate rate;
    int mult; /* of 2.5 Gb/s; 0 where the rate is not a multiple */
    int mbps;
};
constexpr RateRow kRates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},     {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},  {IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},     {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 10, 25781},
    {IBV_RATE_100_GBPS, 40, 103125},  {IBV_RATE_200_GBPS, 80, 206250},
    {IBV_RATE_300_GBPS, 120, 309375}, {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},    {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},
};

} // namespace

extern "C" {

const char *ibv_wc_status_str(ibv_wc_status status) {
    return droce::wc_status_str(static_cast<droce::WcStatus>(status));
}

const char *ibv_event_type_str(ibv_event_type event) {
    return droce::async_event_str(static_cast<droce::AsyncEventType>(event));
}

const char *ibv_node_type_str(ibv_node_type node_type) {
    switch (node_type) {
    case IBV_NODE_CA:
        return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
        return "InfiniBand switch";
    case IBV_NODE_ROUTER:
        return "InfiniBand router";
    case IBV_NODE_RNIC:
        return "iWARP NIC";
    case IBV_NODE_USNIC:
        return "usNIC";
    case IBV_NODE_USNIC_UDP:
        return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED:
        return "unspecified";
    default:
        return "unknown";
    }
}

const char *ibv_port_state_str(ibv_port_state port_state) {
    static const char *const names[] = {"PORT_NOP",   "PORT_DOWN",   "PORT_INIT",
                                        "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"};
    const auto i = static_cast<unsigned>(port_state);
    return i < sizeof(names) / sizeof(names[0]) ? names[i] : "invalid state";
}

int ibv_rate_to_mult(ibv_rate rate) {
    for (const auto &r : kRates)
        if (r.rate == rate)
            return r.mult != 0 ? r.mult : -1;
    return rate == IBV_RATE_MAX ? 0 : -1;
}

ibv_rate mult_to_ibv_rate(int mult) {
    for (const auto &r : kRates)
        if (r.mult != 0 && r.mult == mult)
            return r.rate;
    return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(ibv_rate rate) {
    for (const auto &r : kRates)
        if (r.rate == rate)
            return r.mbps;
    return rate == IBV_RATE_MAX ? 0 : -1;
}

ibv_rate mbps_to_ibv_rate(int mbps) {
    for (const auto &r : kRates)
        if (r.mbps == mbps)
            return r.rate;
    return IBV_RATE_MAX;
}

/* Fork protection keeps a kernel's DMA mappings out of a child; droce pins nothing in a
 * kernel, so there is nothing to protect. (A child does not inherit droce's engine.) */
int ibv_fork_init(void) { return 0; }
ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }
int ibv_dontfork_range(void *, size_t) { return 0; }
int ibv_dofork_range(void *, size_t) { return 0; }

/* libibverbs' sysfs helpers (driver.h). droce devices have no sysfs entries (their paths
 * name nothing); other files are read as the real library reads them. */
const char *ibv_get_sysfs_path(void) { return "/sys"; }

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size) {
    char path[4096];
    if (dir == nullptr || file == nullptr || buf == nullptr || size == 0 ||
        std::snprintf(path, sizeof(path), "%s/%s", dir, file) >= static_cast<int>(sizeof(path))) {
        errno = EINVAL;
        return -1;
    }
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    const ssize_t n = read(fd, buf, size);
    close(fd);
    if (n < 0)
        return -1;
    size_t len = static_cast<size_t>(n);
    if (len == size)
        --len;
    buf[len] = '\0';
    if (len > 0 && buf[len - 1] == '\n')
        buf[--len] = '\0';
    return static_cast<int>(len);
}

} // extern "C"
