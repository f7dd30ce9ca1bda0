/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce public API: a software RoCEv2 NIC with verbs semantics.
 *
 * Objects and their lifetimes mirror ibverbs: an Engine owns Devices (one per DPDK
 * port); a Device makes ProtectionDomains and CompletionQueues; a ProtectionDomain
 * makes MemoryRegions and QueuePairs. Destroy children before parents (as ibv_*
 * requires); the engine reports misuse instead of crashing.
 *
 * Threading: by default the engine runs its poll loop on a DPDK worker lcore (the
 * "NIC"), and the application talks to it through single-producer/single-consumer
 * rings: post_send/post_recv never lock or make a system call. In embedded mode
 * (EngineOptions::embedded) no worker is started and the application's own loop calls
 * Engine::poll(), as SPDK-style data planes do. The API is the same in both modes.
 * A QueuePair and its CQs must be used from one application thread.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "status.h"
#include "verbs.h"

namespace droce {

class Device;
class ProtectionDomain;
class MemoryRegion;
class CompletionQueue;
class QueuePair;

/** Engine-wide options (droce's own, after the EAL's). */
struct EngineOptions {
    /** No worker lcore: the application calls Engine::poll() itself. */
    bool embedded = false;
    /** Lcore for the worker; -1 = the first worker lcore the EAL gave (-l). */
    int worker_lcore = -1;
    /** After this many empty poll iterations the worker sleeps idle_sleep_us (0 = never
     * sleep: pure busy polling, lowest latency). Useful on shared/emulated machines. */
    uint32_t idle_polls_before_sleep = 0;
    uint32_t idle_sleep_us = 50;
    /** mbufs in the engine's pool. */
    uint32_t mbufs = 8191;
    /** spdlog level name for the control plane: trace, debug, info, warn, error, off. */
    std::string log_level = "warn";
};

/** One DPDK port as a RoCEv2 device. */
struct DeviceConfig {
    /** DPDK port: its id ("0") or its name ("net_af_packet0"); empty = the first free. */
    std::string port;
    /** Our IPv4 address with prefix, e.g. "10.77.0.100/24". Becomes GID index 1. */
    std::string ipv4_cidr;
    /** Our MAC, "02:00:00:00:01:00"; empty = the port's own. */
    std::string mac;
    /** Ethernet MTU; 0 = the port's current MTU. */
    uint32_t mtu = 0;
    /** How long to wait for an ARP reply when a QP goes to RTR. */
    uint32_t arp_timeout_ms = 3000;
    /** The port's P_Key table; a QP's pkey_index picks its P_Key from it. Packets whose
     * P_Key does not match their QP's are dropped (counter rx_pkey_violation). */
    std::vector<uint16_t> pkeys = {0xFFFF};
};

/** The engine: EAL, mempool, worker loop. Create once per process. */
class Engine {
  public:
    virtual ~Engine() = default;

    /** Initialises the EAL from argv (EAL arguments come first, up to "--"), like
     * rte_eal_init. *consumed is set to the number of argv entries used, so the
     * application's own arguments start at argv[*consumed]. */
    static Result<std::unique_ptr<Engine>> create(int argc, char **argv, int *consumed,
                                                  const EngineOptions &opts = {});

    /** Creates two net_ring ports back to back (A's TX ring is B's RX ring and vice
     * versa) and returns their DPDK names, to be opened with open_device(): the default
     * demo and test topology (one process, no hugepages, no NIC). */
    virtual Result<std::pair<std::string, std::string>> create_ring_pair() = 0;
    /** Opens a DPDK port as a device. The engine keeps ownership. */
    virtual Result<Device *> open_device(const DeviceConfig &cfg) = 0;
    /** Starts the worker lcore (no-op in embedded mode). Devices may be opened before. */
    virtual Status start() = 0;
    /** Embedded mode: one iteration of the poll loop (RX, timers, TX). Returns the number
     * of packets handled. Calling it in worker mode is an error (returns -1). */
    virtual int poll() = 0;
    /** Stops the worker; devices stay valid until the engine is destroyed. */
    virtual void stop() = 0;
    virtual bool embedded() const = 0;
};

/** A GID table entry. */
struct GidEntry {
    Gid gid;
    /** "RoCE v2" for every entry droce makes. */
    const char *type;
};

/** A RoCEv2 device on one port. */
class Device {
  public:
    virtual ~Device() = default;
    virtual const std::string &name() const = 0;
    virtual uint16_t port_id() const = 0;
    /** Our MAC address. */
    virtual std::string mac() const = 0;
    /** GID table: 0 = link-local from the MAC, then one IPv4-mapped GID per IP. */
    virtual std::vector<GidEntry> gids() const = 0;
    /** Largest IB MTU (bytes) the port's Ethernet MTU carries. */
    virtual uint32_t active_mtu() const = 0;
    /** Ethernet MTU of the port. */
    virtual uint32_t eth_mtu() const = 0;
    /** Every counter: engine RX/TX and drop reasons, ARP/ICMP, transport. */
    virtual std::vector<std::pair<std::string, uint64_t>> counters() const = 0;

    virtual Result<std::unique_ptr<ProtectionDomain>> alloc_pd() = 0;
    /** A completion queue with room for at least cqe completions. */
    virtual Result<std::unique_ptr<CompletionQueue>> create_cq(uint32_t cqe) = 0;
};

/** ibv_qp_init_attr. */
struct QpInitAttr {
    CompletionQueue *send_cq = nullptr;
    CompletionQueue *recv_cq = nullptr;
    QpCap cap;
    bool sq_sig_all = false;
};

class ProtectionDomain {
  public:
    virtual ~ProtectionDomain() = default;
    /** Registers application memory with Access rights. */
    virtual Result<std::unique_ptr<MemoryRegion>> reg_mr(void *addr, size_t length,
                                                         uint32_t access) = 0;
    /** Creates an RC QP in RESET. */
    virtual Result<std::unique_ptr<QueuePair>> create_qp(const QpInitAttr &attr) = 0;
};

class MemoryRegion {
  public:
    virtual ~MemoryRegion() = default; /**< deregisters */
    virtual uint32_t lkey() const = 0;
    virtual uint32_t rkey() const = 0;
    virtual void *addr() const = 0;
    virtual size_t length() const = 0;
};

class CompletionQueue {
  public:
    virtual ~CompletionQueue() = default;
    /** Non-blocking: moves up to max completions into wc; returns how many. */
    virtual int poll(Wc *wc, int max) = 0;
};

class QueuePair {
  public:
    virtual ~QueuePair() = default;
    virtual uint32_t qp_num() const = 0;
    /** ibv_modify_qp. Going to RTR resolves the peer's MAC (ARP) and may block up to the
     * device's arp_timeout_ms; failure is an error value that says so. */
    virtual Status modify(const QpAttr &attr, uint32_t mask) = 0;
    /** Current state and attributes. */
    virtual Status query(QpAttr &attr) = 0;
    /** ibv_post_send: never blocks; errors as values (queue full, bad state, bad WR). */
    virtual Status post_send(const SendWr &wr) = 0;
    virtual Status post_recv(const RecvWr &wr) = 0;
};

} // namespace droce
