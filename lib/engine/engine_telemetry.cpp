/* SPDX-License-Identifier: BSD-3-Clause */
/* rte_telemetry commands: what droce-info (ibv_devinfo / show_gids for droce) asks a
 * running droce process through its dpdk_telemetry.v2 socket.
 *
 *   /droce/devices          array of device names (every live engine of the process)
 *   /droce/info,<dev>       port, driver, MAC, IPv4, link state, MTUs, GID table, DCQCN
 *                           (on/off and its profile: connectx, fair or custom), the
 *                           port's adapter, capabilities and rte_flow rules
 *   /droce/counters,<dev>   every counter of Device::counters()
 *   /droce/qps,<dev>        per live QP (key: QPN in hex): its state summary, cut into
 *                           strings of < RTE_TEL_MAX_STRING_LEN to be joined with ' '
 *   /droce/capture,<dev>[,start,<file>[,<snaplen>]|,stop]
 *                           capture state and counters; starts or stops writing the
 *                           device's traffic to a pcapng file (no ',' in the file name)
 *
 * Callbacks run on DPDK's telemetry thread. Immutable device identity is read there;
 * counters and QP state live on the worker (or the application's poll thread in
 * embedded mode) and are fetched through the mailbox (Runtime::exec_detached), with a
 * timeout so that a process that stopped polling still answers (with an error). */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include <rte_ethdev.h>
#include <rte_telemetry.h>

#include "cc_profile.h"
#include "engine_runtime.h"

namespace droce::engine {

namespace {

constexpr uint32_t kTelemetryTimeoutMs = 2000;

std::mutex g_mu; /* registry + Runtime::devices() changes */
std::vector<Runtime *> g_runtimes;
bool g_registered = false;

/* Under g_mu. */
std::pair<Runtime *, Dev *> find_dev(const char *name) {
    if (name == nullptr || *name == '\0')
        return {nullptr, nullptr};
    for (Runtime *rt : g_runtimes)
        for (const auto &d : rt->devices())
            if (d->name() == name)
                return {rt, d.get()};
    return {nullptr, nullptr};
}

std::string gid_str(const Gid &g) {
    char b[40];
    std::snprintf(
        b, sizeof b, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
        g.raw[0], g.raw[1], g.raw[2], g.raw[3], g.raw[4], g.raw[5], g.raw[6], g.raw[7], g.raw[8],
        g.raw[9], g.raw[10], g.raw[11], g.raw[12], g.raw[13], g.raw[14], g.raw[15]);
    return b;
}

/* EUI-64 from the MAC, the way rxe derives its node GUID. */
std::string node_guid(const net::Mac &m) {
    char b[24];
    std::snprintf(b, sizeof b, "%02x%02x:%02xff:fe%02x:%02x%02x", m[0] ^ 2, m[1], m[2], m[3], m[4],
                  m[5]);
    return b;
}

/* A list of strings under key (each cut at RTE_TEL_MAX_STRING_LEN by telemetry). */
void add_strings(rte_tel_data *d, const char *key, const std::vector<std::string> &v) {
    rte_tel_data *a = rte_tel_data_alloc();
    if (a == nullptr)
        return;
    rte_tel_data_start_array(a, RTE_TEL_STRING_VAL);
    for (const std::string &x : v)
        rte_tel_data_add_array_string(a, x.c_str());
    rte_tel_data_add_dict_container(d, key, a, 0);
}

int no_device(rte_tel_data *d, const char *params) {
    /* An error as data: the client prints it. */
    rte_tel_data_start_dict(d);
    const std::string msg = std::string("no droce device '") + (params ? params : "") + "'";
    rte_tel_data_add_dict_string(d, "error", msg.c_str());
    return 0;
}

int timed_out(rte_tel_data *d) {
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "error",
                                 "the engine did not answer within 2 s (worker stopped, or "
                                 "the embedded application is not calling Engine::poll())");
    return 0;
}

int cmd_devices(const char *, const char *, rte_tel_data *d) {
    std::lock_guard<std::mutex> lk(g_mu);
    rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
    for (Runtime *rt : g_runtimes)
        for (const auto &dev : rt->devices())
            rte_tel_data_add_array_string(d, dev->name().c_str());
    return 0;
}

int cmd_info(const char *, const char *params, rte_tel_data *d) {
    std::lock_guard<std::mutex> lk(g_mu);
    auto [rt, dev] = find_dev(params);
    if (dev == nullptr)
        return no_device(d, params);
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "name", dev->name().c_str());
    rte_tel_data_add_dict_int(d, "port_id", dev->port_id());
    rte_tel_data_add_dict_int(d, "pid", static_cast<int>(getpid()));
    rte_eth_dev_info info{};
    if (rte_eth_dev_info_get(dev->port_id(), &info) == 0 && info.driver_name)
        rte_tel_data_add_dict_string(d, "driver", info.driver_name);
    rte_tel_data_add_dict_string(d, "mac", net::mac_str(dev->iface().mac).c_str());
    rte_tel_data_add_dict_string(d, "node_guid", node_guid(dev->iface().mac).c_str());
    const std::string ip =
        net::ipv4_str(dev->iface().ip) + "/" + std::to_string(dev->iface().prefix_len);
    rte_tel_data_add_dict_string(d, "ipv4", ip.c_str());
    rte_eth_link link{};
    const bool have_link = rte_eth_link_get_nowait(dev->port_id(), &link) == 0;
    rte_tel_data_add_dict_string(d, "state",
                                 have_link && link.link_status ? "PORT_ACTIVE" : "PORT_DOWN");
    if (have_link)
        rte_tel_data_add_dict_u64(d, "link_speed_mbps", link.link_speed);
    rte_tel_data_add_dict_u64(d, "eth_mtu", dev->eth_mtu());
    rte_tel_data_add_dict_u64(d, "active_mtu", dev->active_mtu());
    /* The largest path MTU droce carries (frames up to 9216 bytes): IB's largest. */
    rte_tel_data_add_dict_u64(d, "max_mtu", 4096);
    rte_tel_data_add_dict_string(d, "link_layer", "Ethernet");
    rte_tel_data_add_dict_string(d, "mode", rt->embedded() ? "embedded" : "worker");
    rte_tel_data_add_dict_string(d, "pfc", dev->pfc().status.c_str());
    /* DCQCN as new QPs get it: off, or the named profile its parameters are ("custom" when
     * [dcqcn] keys changed a profile's values), so a device's fairness setup is visible. */
    const cc::CcParams *ccp = dev->qp_defaults().cc_params();
    rte_tel_data_add_dict_string(d, "dcqcn", ccp ? "on" : "off");
    rte_tel_data_add_dict_string(d, "dcqcn_profile", ccp ? cc::profile_name(*ccp) : "none");
    rte_tel_data_add_dict_string(d, "adapter", dev->caps().adapter.c_str());
    rte_tel_data_add_dict_string(d, "steering", dev->steering().mode.c_str());
    add_strings(d, "capabilities", dev->caps().lines());
    add_strings(d, "flow_rules", dev->steering().rules);
    add_strings(d, "steering_errors", dev->steering().errors);
    const std::string cap = dev->capture_path();
    rte_tel_data_add_dict_string(d, "capture", cap.empty() ? "off" : cap.c_str());

    rte_tel_data *gids = rte_tel_data_alloc();
    rte_tel_data *types = rte_tel_data_alloc();
    rte_tel_data *vlans = rte_tel_data_alloc();
    if (gids && types && vlans) {
        rte_tel_data_start_array(gids, RTE_TEL_STRING_VAL);
        rte_tel_data_start_array(types, RTE_TEL_STRING_VAL);
        rte_tel_data_start_array(vlans, RTE_TEL_U64_VAL);
        for (const GidEntry &e : dev->gids().entries()) {
            rte_tel_data_add_array_string(gids, gid_str(e.gid).c_str());
            rte_tel_data_add_array_string(types, e.type);
            rte_tel_data_add_array_u64(vlans, e.vlan);
        }
        rte_tel_data_add_dict_container(d, "gid", gids, 0);
        rte_tel_data_add_dict_container(d, "gid_type", types, 0);
        rte_tel_data_add_dict_container(d, "gid_vlan", vlans, 0);
    } else {
        rte_tel_data_free(gids);
        rte_tel_data_free(types);
        rte_tel_data_free(vlans);
    }
    return 0;
}

int cmd_counters(const char *, const char *params, rte_tel_data *d) {
    std::lock_guard<std::mutex> lk(g_mu);
    auto [rt, dev] = find_dev(params);
    if (dev == nullptr)
        return no_device(d, params);
    /* Each worker snapshots its own shard; the sum is made here. */
    std::vector<std::vector<std::pair<std::string, uint64_t>>> parts;
    for (uint32_t w = 0; w < dev->workers(); ++w) {
        auto out = std::make_shared<std::vector<std::pair<std::string, uint64_t>>>();
        if (!rt->exec_detached(
                w, [out, dev = dev, w] { *out = dev->shard(w).counters(); }, kTelemetryTimeoutMs))
            return timed_out(d);
        parts.push_back(std::move(*out));
    }
    rte_tel_data_start_dict(d);
    for (const auto &[name, value] : dev->merge_counters(parts))
        rte_tel_data_add_dict_u64(d, name.c_str(), value);
    return 0;
}

int cmd_qps(const char *, const char *params, rte_tel_data *d) {
    std::lock_guard<std::mutex> lk(g_mu);
    auto [rt, dev] = find_dev(params);
    if (dev == nullptr)
        return no_device(d, params);
    auto out = std::make_shared<std::vector<std::pair<uint32_t, std::string>>>();
    for (uint32_t w = 0; w < dev->workers(); ++w) {
        auto part = std::make_shared<std::vector<std::pair<uint32_t, std::string>>>();
        if (!rt->exec_detached(
                w, [part, dev = dev, w] { *part = dev->qp_summaries(w); }, kTelemetryTimeoutMs))
            return timed_out(d);
        out->insert(out->end(), part->begin(), part->end());
    }
    std::sort(out->begin(), out->end());
    rte_tel_data_start_dict(d);
    size_t n = 0;
    for (const auto &[qpn, text] : *out) {
        if (++n > RTE_TEL_MAX_DICT_ENTRIES)
            break; /* a telemetry dict holds at most 256 entries */
        rte_tel_data *parts = rte_tel_data_alloc();
        if (parts == nullptr)
            break;
        rte_tel_data_start_array(parts, RTE_TEL_STRING_VAL);
        /* Strings are cut at RTE_TEL_MAX_STRING_LEN: split at spaces. */
        size_t pos = 0;
        while (pos < text.size()) {
            size_t len = std::min<size_t>(text.size() - pos, RTE_TEL_MAX_STRING_LEN - 1);
            if (pos + len < text.size()) {
                const size_t sp = text.rfind(' ', pos + len);
                if (sp != std::string::npos && sp > pos)
                    len = sp - pos;
            }
            rte_tel_data_add_array_string(parts, text.substr(pos, len).c_str());
            pos += len;
            while (pos < text.size() && text[pos] == ' ')
                ++pos;
        }
        char key[16];
        std::snprintf(key, sizeof key, "0x%06x", qpn);
        rte_tel_data_add_dict_container(d, key, parts, 0);
    }
    return 0;
}

int cmd_capture(const char *, const char *params, rte_tel_data *d) {
    /* Parameters: device, then an optional action and its arguments, comma-separated. */
    std::vector<std::string> args;
    std::string cur;
    for (const char *c = params ? params : ""; *c; ++c) {
        if (*c == ',') {
            args.push_back(cur);
            cur.clear();
        } else {
            cur += *c;
        }
    }
    args.push_back(cur);
    std::lock_guard<std::mutex> lk(g_mu);
    auto [rt, dev] = find_dev(args[0].c_str());
    if (dev == nullptr)
        return no_device(d, args[0].c_str());
    auto error = [d](const std::string &msg) {
        rte_tel_data_start_dict(d);
        rte_tel_data_add_dict_string(d, "error", msg.c_str());
        return 0;
    };
    /* Each worker switches its own shards, through its mailbox (it keeps polling). */
    const Dev::RunOn run_on = [rt = rt](uint32_t w, std::function<void()> fn) {
        return rt->exec_detached(w, std::move(fn), kTelemetryTimeoutMs);
    };
    if (args.size() >= 2 && args[1] == "start") {
        if (args.size() < 3 || args.size() > 4 || args[2].empty())
            return error("usage: /droce/capture,<dev>,start,<file>[,<snaplen>]");
        uint32_t snap = 0;
        if (args.size() == 4) {
            char *end = nullptr;
            const unsigned long v = std::strtoul(args[3].c_str(), &end, 10);
            if (args[3].empty() || *end != '\0' || v > 65535)
                return error("snaplen must be 0..65535 (0 = whole frames)");
            snap = static_cast<uint32_t>(v);
        }
        if (Status s = dev->capture_start(args[2], snap, run_on); !s)
            return error(s.message());
    } else if (args.size() == 2 && args[1] == "stop") {
        if (Status s = dev->capture_stop(run_on); !s)
            return error(s.message());
    } else if (args.size() != 1) {
        return error("usage: /droce/capture,<dev>[,start,<file>[,<snaplen>]|,stop]");
    }
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_string(d, "file", dev->capture_path().c_str());
    std::vector<std::pair<std::string, uint64_t>> v;
    dev->capture_counters(v);
    for (const auto &[name, value] : v)
        rte_tel_data_add_dict_u64(d, name.c_str(), value);
    return 0;
}

} // namespace

std::vector<Runtime *> debug_runtimes() {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_runtimes;
}

std::mutex &telemetry_mutex() { return g_mu; }

void telemetry_attach(Runtime *rt) {
    std::lock_guard<std::mutex> lk(g_mu);
    if (!g_registered) {
        /* Registering works whether or not the EAL started telemetry (--no-telemetry):
         * the commands are then simply never asked. */
        rte_telemetry_register_cmd("/droce/devices", cmd_devices,
                                   "droce devices of this process. No parameters");
        rte_telemetry_register_cmd("/droce/info", cmd_info,
                                   "Port, MTUs, link state and GID table. Parameters: device");
        rte_telemetry_register_cmd("/droce/counters", cmd_counters,
                                   "Every engine and transport counter. Parameters: device");
        rte_telemetry_register_cmd("/droce/qps", cmd_qps,
                                   "State of every live QP. Parameters: device");
        rte_telemetry_register_cmd("/droce/capture", cmd_capture,
                                   "pcapng capture of a device's traffic. Parameters: "
                                   "device[,start,file[,snaplen]|,stop]");
        g_registered = true;
    }
    g_runtimes.push_back(rt);
}

void telemetry_detach(Runtime *rt) {
    std::lock_guard<std::mutex> lk(g_mu);
    g_runtimes.erase(std::remove(g_runtimes.begin(), g_runtimes.end(), rt), g_runtimes.end());
}

} // namespace droce::engine
