/* SPDX-License-Identifier: BSD-3-Clause */
/* Port adapters, one per PMD family: what droce may rely on for a port (from the PMD's
 * rte_eth_dev_info plus the facts that info hides) and the family's set-up (bifurcated
 * rte_flow steering on mlx5/mlx4, the kernel MTU behind af_packet/af_xdp/tap).
 *
 * Everything here runs at open_device time only: nothing on the per-packet path. */
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct rte_eth_dev_info;

namespace droce::drivers {

/** What memory a port's TX can take as an attached (external, zero-copy) buffer. */
enum class Reach : uint8_t {
    Copy,      /* nothing: every payload must be copied into the frame */
    VirtAddr,  /* any memory of this process: the PMD copies from virtual addresses
                * (af_packet, vhost, tap, pcap, memif in copy mode) or hands the mbuf over
                * (ring) */
    DpdkFd,    /* only the EAL's own fd-backed memory: what a vhost-user backend maps
                * through the memory table (virtio_user); malloc or rte_extmem memory is
                * not shared with it */
    DmaMapped, /* regions rte_dev_dma_map accepted, IOVA as VA (PCI and auxiliary NICs) */
};
const char *reach_str(Reach r);

/** What droce may rely on for one port. */
/* net_ring's queue_stride: its struct ring_queue is 24 bytes, so 4 queues apart any two
 * used queues' entries start 96 bytes apart and never share a 64-byte line. */
inline constexpr uint16_t kRingQueueStride = 4;

/* The queues a port needs for `workers` (>= 1) workers whose queues are `stride` apart:
 * worker w takes queue w * stride, so up to the last worker's. */
inline constexpr uint32_t queues_for(uint32_t workers, uint16_t stride) {
    return (workers - 1) * stride + 1;
}

struct Caps {
    std::string adapter; /* the family: "mlx5", "virtio_user", ..., "generic" */
    std::string driver;  /* rte_eth_dev_info::driver_name */
    uint16_t max_rx_queues = 1;
    uint16_t max_tx_queues = 1;
    bool rss_udp = false;      /* RSS on IPv4/UDP: droce spreads QPs over RX queues */
    bool multi_seg_tx = false; /* chained mbufs on TX (zero-copy needs them) */
    /* net_ring hands mbuf pointers to its peer: chains pass even without the offload
     * flag, but the peer's thread frees them (zero-copy only with one worker). */
    bool tx_passes_mbufs = false;
    /* The backend reads our TX mbufs in place on its own core (virtio_user): a recycled
     * mbuf's lines sit in its cache, so the engine prefetches them for write a few
     * frames ahead (lib/engine/engine_tx_stash.h). Elsewhere that is useless work. */
    bool peer_reads_tx = false;
    /* Workers take every queue_stride-th queue (as the port's queue count allows): the
     * PMD keeps per-queue state that every burst writes in one array, several queues to a
     * cache line (net_ring in DPDK 22.11: its packet counts, 24 bytes a queue), so two
     * workers on neighbouring queues would pass that line back and forth on every poll. */
    uint16_t queue_stride = 1;
    Reach reach = Reach::Copy;
    /* Payloads below this are copied even where zero-copy reaches (0: the engine's
     * default): where the PMD copies each segment anyway, an attached buffer saves
     * droce's copy but costs mbufs and a gather, so the crossover is the port's. */
    uint32_t zc_min_bytes = 0;
    bool tx_ipv4_cksum = false, tx_udp_cksum = false;
    bool rx_ipv4_cksum = false, rx_udp_cksum = false;
    uint32_t max_frame = 0;     /* Ethernet frame without FCS that the port carries */
    uint32_t max_mtu = 0;       /* the port's own MTU limit, when it enforces one (0: none) */
    bool mtu_hidden = false;    /* the PMD's MTU is not the kernel interface's */
    std::string kernel_if;      /* the kernel interface behind the port, if any */
    uint32_t kernel_mtu = 0;    /* its MTU, read once at set-up (0: none or unreadable) */
    bool can_steer = false;     /* rte_flow isolation + rules make sense on this family */
    bool steer_default = false; /* ...and are on unless the user says off (bifurcated) */
    /* The PMD runs its control channel on the EAL's interrupt thread and does not
     * serialize it with rte_eth_dev_stop / _close called elsewhere (memif in DPDK 22.11:
     * a peer's disconnect handled there while the port stops here frees the same regions
     * twice, "EAL: Error: Invalid memory", then a SIGSEGV on that thread). Stop and close
     * such a port while that thread is held (stop_port), and poll it through the poll gate
     * (poll_gate.h): a peer's disconnect there unmaps the rings under a running burst. */
    bool control_on_intr_thread = false;
    /* The port connects once, when it starts, and never again on its own: a peer that
     * refuses or drops it leaves its link down for good (a memif client in DPDK 22.11:
     * refused while its server's port has not started, dropped when that port stops or
     * its process ends). The engine stops and starts such a port while its link is down
     * (engine_link.cpp), as libmemif and VPP clients retry. */
    bool reconnect_by_restart = false;
    std::vector<std::string> notes; /* the facts the info hides, for people */

    /** The MTU droce should use when the user gives none: the kernel interface's where
     * the PMD hides it (clamped to max_frame), else 0 (ask the port). */
    uint32_t auto_mtu() const;
    /** One line per capability ("queues 4/4", "rss udp", ...), for logs and droce-info. */
    std::vector<std::string> lines() const;
};

/** One PMD family. */
class Adapter {
  public:
    virtual ~Adapter() = default;
    virtual const char *name() const = 0;
    /** Fills the facts rte_eth_dev_info does not carry (c already has the info's). */
    virtual void refine(uint16_t port, const rte_eth_dev_info &info, Caps &c) const = 0;
};

/** The adapter for a driver name (rte_eth_dev_info::driver_name); never null: an unknown
 * driver gets the generic one. */
const Adapter &adapter_for(const std::string &driver);
/** The names of every adapter, generic last (tests, docs). */
std::vector<std::string> adapter_names();

/** A port's capabilities: the info's, then its adapter's refinements. */
Caps probe(uint16_t port, const rte_eth_dev_info &info);

/** Runs step on the caller's thread while the EAL's interrupt thread waits in an alarm,
 * so that no PMD callback and no other alarm (a link watch, memif's control channel) runs
 * beside it. Returns whether the thread was held: true also when the caller is that
 * thread; false when it did not take the alarm within 5 s and step ran unserialized.
 * Control path only: it sleeps. */
bool with_intr_thread_held(const std::function<void()> &step);

/** What stop_port did: the return codes of rte_eth_dev_stop and rte_eth_dev_close (0 if
 * not asked), and whether the EAL's interrupt thread was held (or was the caller). */
struct PortStopResult {
    int stop_rc = 0;
    int close_rc = 0;
    bool intr_thread_held = true;
};
/** rte_eth_dev_stop, then rte_eth_dev_close if close, on the caller's thread; if
 * hold_intr_thread (Caps::control_on_intr_thread), while the EAL's interrupt thread waits
 * in an alarm, so that no PMD callback runs beside them. Teardown and error paths only:
 * it sleeps. */
PortStopResult stop_port(uint16_t port, bool close, bool hold_intr_thread);

/** The kernel MTU of an interface (SIOCGIFMTU); 0 if it cannot be read. */
uint32_t kernel_mtu(const std::string &ifname);
/** The value of key in a devargs string "k1=v1,k2=v2" ("" if absent). */
std::string devarg(const char *args, const std::string &key);

/* ---- bifurcated steering (rte_flow) ---- */

/** What droce's queues must receive, the rest staying with the kernel. */
struct SteerSpec {
    uint32_t ipv4_be = 0;             /* droce's address (network order) */
    uint16_t udp_port = 4791;         /* RoCEv2 */
    uint16_t rx_queues = 1;           /* droce's RX queues 0..n-1 */
    const uint8_t *rss_key = nullptr; /* 40 bytes: droce's key, so QP source ports steer */
};

/** What steering did on a port (droce-info). */
struct SteerReport {
    /* "off" (not asked / not this family), "isolated" (rules installed; the kernel keeps
     * everything else), "failed: whole port" (the defined fallback: no isolation, droce
     * receives every frame as without steering). */
    std::string mode = "off";
    std::vector<std::string> rules;  /* installed, as "pattern -> action" */
    std::vector<std::string> errors; /* why a rule or the isolation was refused */
};

/** Before rte_eth_dev_configure: isolated mode (only rule-matched traffic reaches DPDK;
 * PMDs accept it only on a stopped, unconfigured port). False (and r->errors) if the
 * PMD refuses. */
bool steer_isolate(uint16_t port, SteerReport *r);
/** After rte_eth_dev_start, on a port steer_isolate accepted: validate and create the
 * rules (RoCEv2 UDP to the address -> droce's queues; ARP for the address -> queue 0,
 * by target address where the PMD matches it, else by ethertype). On failure the rules
 * made are destroyed, isolation is undone (the port is restarted for that) and the
 * report says "failed: whole port"; the port then works as without steering. */
void steer_install(uint16_t port, const SteerSpec &s, SteerReport *r);

} // namespace droce::drivers
