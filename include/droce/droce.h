/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce public API: a software RoCEv2 NIC with verbs semantics.
 *
 * Objects and their lifetimes mirror ibverbs: an Engine owns Devices (one per DPDK
 * port); a Device makes ProtectionDomains and CompletionQueues; a ProtectionDomain
 * makes MemoryRegions, QueuePairs and SharedReceiveQueues. Destroy children before
 * parents (as ibv_* requires): QPs before their CQs, SRQ and PD; MRs before their PD;
 * everything before the Engine. Objects returned as std::unique_ptr are the caller's
 * (their destructor is the ibv_destroy_* / ibv_dereg_mr); Device pointers belong to
 * the Engine and stay valid until it is destroyed. The engine reports misuse (a PD
 * destroyed before its QPs, a CQ still in use) in its log instead of crashing.
 *
 * Memory: a registered region must stay allocated, and must not move, until its
 * MemoryRegion is destroyed; buffers named by a work request belong to the engine from
 * post_send/post_recv until the WR's completion is polled (or the QP is destroyed).
 * alloc_buf (buffer.h) gives memory that zero-copy TX can attach on every port.
 *
 * Errors: control calls return Status / Result<T> (status.h); nothing throws.
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

#include "buffer.h"
#include "dcqcn.h"
#include "status.h"
#include "verbs.h"

namespace droce {

class Device;
class ProtectionDomain;
class MemoryRegion;
class CompletionQueue;
class CompletionChannel;
class QueuePair;
class SharedReceiveQueue;

/** Engine-wide options (droce's own, after the EAL's). */
struct EngineOptions {
    /** No worker lcore: the application calls Engine::poll() itself. */
    bool embedded = false;
    /** Lcore for the worker; -1 = the first worker lcore the EAL gave (-l). With
     * workers > 1, the first of the worker lcores used (the others follow in -l order). */
    int worker_lcore = -1;
    /** Worker lcores (shared nothing: each owns a shard of the CQs, QPs and SRQs and one
     * RX and TX queue per port); 0 = one per worker lcore the EAL gave. In embedded mode
     * the application's threads are the workers: each calls Engine::poll(w) for its own. */
    uint32_t workers = 1;
    /** After this many empty poll iterations the worker sleeps idle_sleep_us (0 = never
     * sleep: pure busy polling, lowest latency). Useful on shared/emulated machines. */
    uint32_t idle_polls_before_sleep = 0;
    /** How long the idle worker sleeps, in microseconds. */
    uint32_t idle_sleep_us = 50;
    /** mbufs in the engine's pool. */
    uint32_t mbufs = 8191;
    /** Zero-copy TX: payload segments in registered memory are attached to the frame as
     * external-buffer mbufs instead of being copied, on ports that take chained mbufs. */
    bool zero_copy = true;
    /** Payloads shorter than this are copied even with zero_copy (copying a small
     * payload is cheaper than three mbufs); 0 = the engine's measured default. */
    uint32_t zero_copy_min_bytes = 0;
    /** spdlog level name for the control plane: trace, debug, info, warn, error, off.
     * It is the level of droce's own logger only: the process's spdlog default logger,
     * global level and pattern stay as the host set them (droce writes to the default
     * logger's sinks as they are when it first logs). */
    std::string log_level = "warn";
    /** The host initialised the EAL itself (SPDK and other data planes do): droce does
     * not call rte_eal_init and reads no EAL arguments (create's argv may be empty), and
     * changes nothing process-wide: no atexit handler, no mode change of the EAL's
     * runtime directory. An EAL up before droce's first engine is taken as the host's
     * even without this flag. See Engine::attach and doc/embedding.md. */
    bool host_eal = false;
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
    /** QueuePair::modify to RTR never waits for ARP / ND: with the next hop not resolved
     * yet it returns at once, and the QP's frames (requests, ACKs) are held until the
     * neighbour answers; posted WRs wait. No answer within arp_timeout_ms moves the QP
     * to ERR (its WRs flushed) and raises AsyncEventType::QpFatal. Counters
     * rtr_neigh_wait / rtr_neigh_resolved / rtr_neigh_timeout. For QPs of worker 0 (all
     * of them with one worker); QPs of other workers wait as without it. The CM's RTR
     * step (CmDevice) goes through the same call. */
    bool rtr_nonblocking = false;
    /** A port the host configured and started itself (an SPDK-style process owns its
     * NIC): set host_mempool, and droce takes the port `port` names as it is, polls only
     * RX queue host_rx_queue and TX queue host_tx_queue, builds its frames from
     * host_mempool, and never configures, starts, stops, closes or changes the MTU,
     * promiscuous mode or flow rules of the port. The host must not poll those two
     * queues itself while the device is open; it closes the port after the Engine is
     * destroyed. One worker only (Engine::workers() == 1); zero-copy TX is off; mtu,
     * when set, is droce's own limit. nullptr = droce owns and configures the port.
     * The host's `struct rte_mempool *`, untyped here so that no DPDK type is part of
     * droce's API (an application that does not embed a port never sees DPDK). */
    void *host_mempool = nullptr;
    uint16_t host_rx_queue = 0;
    uint16_t host_tx_queue = 0;
    /** The port's P_Key table; a QP's pkey_index picks its P_Key from it. Packets whose
     * P_Key does not match their QP's are dropped (counter rx_pkey_violation). */
    std::vector<uint16_t> pkeys = {0xFFFF};
    /** Size of the QPN space (QPNs 0x11 .. max_qps-1); at most 2^24. */
    uint32_t max_qps = 65536;
    /** DCQCN congestion control for the device's QPs; false = none (data not-ECT, CE
     * marks not answered, CNPs counted as rp_cnp_ignored, no pacing). */
    bool dcqcn = true;
    /** The parameters every QP starts with (validated by open_device), including the
     * port's ECN mode; QueuePair::set_dcqcn changes one QP. The line rate (the maximum
     * rate) is the port's link speed. */
    DcqcnParams dcqcn_params;
    /** The port's line rate in bit/s: DCQCN's maximum rate (where a limited QP recovers
     * to and where its first cut starts) and the length of a PFC pause quantum. 0 = the
     * link's speed; a port that reports none (memif, net_ring, vhost) is then taken as
     * 100 Gb/s, so set it where a virtual port stands for a slower link. */
    uint64_t line_rate_bps = 0;
    /** > 0: every QP is held to the line rate by its pacer, with bursts of at most this
     * many frames, even when DCQCN does not limit it (and with DCQCN off, then without
     * ECN). A real port's wire does this; a virtual port would take a whole RC window in
     * one go. 0 = off: a QP at line rate is not paced (pays nothing). */
    uint32_t tx_burst_frames = 0;
    /** With several workers, worker w takes RX and TX queue w * queue_stride. 0 = what the
     * port's adapter says: every 4th queue of net_ring, whose PMD keeps all queues'
     * packet counts in one array that every burst writes (neighbouring workers would
     * pass its cache line back and forth on every poll), as far apart as the port's queue
     * count allows; 1 (neighbours) everywhere else. 1..64 asks for that spacing:
     * open_device refuses it (EINVAL) where the port has fewer queues than it needs,
     * ((workers - 1) * queue_stride + 1), or spreads flows by RSS (which aims at
     * queue = worker) and queue_stride is not 1. The queues between stay idle. */
    uint16_t queue_stride = 0;
    /** queue_stride's largest (open_device refuses more): past it no port has the queues. */
    static constexpr uint16_t kMaxQueueStride = 64;
    /** How often an RC responder answers duplicate and out-of-sequence requests (a
     * forged PSN must not make it answer 1:1 toward the real peer; lib/rc QpTuning has
     * the reasoning). For QPs created from now on; the defaults are rxe-safe. */
    struct RcPacing {
        /** Duplicate requests re-ACKed / replayed / re-served at most once per this
         * (0 = every one); also the PSN sequence NAK interval after a run of ahead PSNs. */
        uint64_t dup_ack_interval_ns = 50'000;
        /** A lone ahead PSN (no run behind it) is NAKed at most once per this. */
        uint64_t seq_nak_interval_ns = 1'000'000;
        /** Ahead packets with consecutive PSNs that make a run (0 or 1: every one). */
        uint32_t seq_nak_after_run = 3;
    } rc_pacing;
    /** PFC (802.1Qbb): the priority to make lossless on the port through the PMD's
     * rte_eth_dev_priority_flow_ctrl_set (0..7); -1 = do not ask. Where the PMD does not
     * implement it (the vdevs, mlx5), open_device says so in one line (and droce-info).
     * Either way, PFC frames the port hands up are honoured in software: TX of a paused
     * priority (VLAN PCP, or DSCP >> 3 for untagged frames) waits for the pause to end. */
    int pfc_priority = -1;
    /** Pause-storm watchdog: a priority paused without a break for this long is reported
     * (counter rx_pfc_pause_storm, a log line, AsyncEventType::PauseStorm); 0 = off. */
    uint32_t pfc_storm_ms = 100;
    /** PFC sent by droce (off: 0): when this many frames wait in a shard's RX queue
     * (rte_eth_rx_queue_count where the PMD has it, else the fill of the burst just
     * read), it sends a pause for pfc_priority (0xFFFF quanta, repeated at half that
     * time) and quanta 0 once the queue is down to pfc_tx_xon frames. Needs pfc_priority
     * >= 0 and pfc_tx_xon < pfc_tx_xoff. Counters tx_prioN_pause(_duration). */
    uint32_t pfc_tx_xoff = 0;
    uint32_t pfc_tx_xon = 0;
    /** Bifurcated steering with rte_flow (isolated mode: UDP/4791 and ARP for ipv4_cidr's
     * address to droce, everything else to the kernel): -1 = the port's adapter decides
     * (on for mlx5/mlx4), 0 = off, 1 = on where the PMD implements rte_flow (net_tap). If
     * the PMD refuses a rule, the port runs without steering and droce-info says why. */
    int flow_steering = -1;
    /** Capture of the device's RoCE traffic to this pcapng file from open on; "" = none.
     * Received frames are written once accepted for a QP (dropped ones are only
     * counted), sent frames (including ARP/ICMP replies) just before the port takes
     * them. A writer thread writes the file; copies it cannot keep up with are dropped
     * and counted (capture_drop_*), never the traffic. Device::start_capture does the
     * same later, and telemetry's /droce/capture in a running process. */
    std::string capture;
    /** Bytes kept of each captured frame; 0 = whole frames. */
    uint32_t capture_snaplen = 0;
    /** Our IPv6 addresses with prefix, e.g. "fd77:20::2/64" (at most 7): GID indexes 2..
     * after the IPv4 one. "fd77:20::2/64@200" puts the address (its GID, ND and echo) on
     * VLAN 200 (0..4094, 0 = untagged), as a Linux VLAN netdev's address; without "@" it
     * is on `vlan`. GID 0, fe80::EUI-64 of the MAC, is an IPv6 address of ours too.
     * Neighbour solicitations for them are answered and ICMPv6 echo replied to. */
    std::vector<std::string> ipv6_cidrs;
    /** Default gateways for peers off our subnets ("" = none: such a peer is an error):
     * frames go to the gateway's MAC (ARP / ND resolved) with the peer's address. */
    std::string gateway;
    std::string gateway6;
    /** 802.1Q VLAN of the port's RoCE traffic (1..4094; 0 = untagged): of GIDs 0 and 1
     * (link-local, IPv4; ARP and ICMP) and of IPv6 addresses without their own "@VID".
     * A QP's frames carry the VLAN of its sgid_index entry with PCP = SL & 7 of its
     * address handle; a received frame on another VLAN than that of the GID it is
     * addressed to, or on none of ours, is dropped (rx_drop_vlan_mismatch). */
    uint16_t vlan = 0;
    /** Device-wide overrides of the address handle's traffic class (DSCP << 2 | ECN; with
     * DCQCN data frames still carry the ECN mode's bits) and TTL / hop limit, like mlx5's
     * per-port traffic_class / ttl settings; -1 = the address handle's. */
    int force_tclass = -1;
    int force_hop_limit = -1;
    /** RoCEv1 GIDs too (ethertype 0x8915, GRH, not routable; droce <-> droce only, rxe
     * has no RoCEv1): the table gets, after its RoCE v2 entries (indexes unchanged), one
     * "IB/RoCE v1" entry per v2 one, same GIDs in the same order. A QP whose sgid_index
     * names such an entry sends RoCEv1; RoCEv1 frames are accepted for those GIDs. */
    bool rocev1_gids = false;
};

/** The engine: EAL, mempool, worker loop. Create once per process (the EAL can be
 * initialised only once; a later Engine in the same process reuses it).
 *
 * Destroying the Engine stops the worker and closes every Device; destroy all objects
 * made from its devices first. EAL telemetry, when enabled (no --no-telemetry), answers
 * /droce/devices, /droce/info, /droce/counters and /droce/qps: what droce-info shows; and
 * /droce/capture (Device::start_capture from outside the process). */
class Engine {
  public:
    /** Stops the worker, closes the devices' ports and frees the engine's DPDK objects
     * (the EAL itself stays initialised). */
    virtual ~Engine() = default;

    /** Initialises the EAL from argv (EAL arguments come first, up to "--"), like
     * rte_eal_init. *consumed is set to the number of argv entries used, so the
     * application's own arguments start at argv[*consumed]. */
    static Result<std::unique_ptr<Engine>> create(int argc, char **argv, int *consumed,
                                                  const EngineOptions &opts = {});
    /** An engine on the EAL the host already initialised (EngineOptions::host_eal):
     * create(0, nullptr, nullptr, opts) with host_eal set. EINVAL if the EAL is not up. */
    static Result<std::unique_ptr<Engine>> attach(EngineOptions opts = {});

    /** Creates two net_ring ports back to back (A's TX ring is B's RX ring and vice
     * versa) and returns their DPDK names, to be opened with open_device(): the default
     * demo and test topology (one process, no hugepages, no NIC). */
    virtual Result<std::pair<std::string, std::string>> create_ring_pair() = 0;
    /** The same for `queues` workers (queue i of A feeds queue i of B): each port has
     * their queues, spaced so that no two workers' queues share the ring PMD's per-queue
     * cache line (more queues than asked; the ones between stay idle). */
    virtual Result<std::pair<std::string, std::string>> create_ring_pair(uint16_t queues) = 0;
    /** Opens a DPDK port as a device (before start() in worker mode). The engine keeps
     * ownership: the pointer is valid until the Engine is destroyed. */
    virtual Result<Device *> open_device(const DeviceConfig &cfg) = 0;
    /** Starts the worker lcore (no-op in embedded mode). Devices may be opened before. */
    virtual Status start() = 0;
    /** Embedded mode: one iteration of the poll loop (RX, timers, TX). Returns the number
     * of packets handled. Calling it in worker mode is an error (returns -1). */
    virtual int poll() = 0;
    /** Embedded mode with several workers: one iteration of worker `worker` only. Each
     * worker is polled by one application thread (an SPDK-style reactor per core); control
     * calls and other workers' polls are serialised against it (a per-worker lock taken
     * once per iteration, not per packet). Returns packets handled, -1 in worker mode or
     * for a worker out of range. */
    virtual int poll(uint32_t worker) = 0;
    /** Stops the worker; devices stay valid until the engine is destroyed. Control calls
     * made afterwards run inline on the calling thread. */
    virtual void stop() = 0;
    /** True when created with EngineOptions::embedded (the application polls). */
    virtual bool embedded() const = 0;
    /** Number of workers (1 in embedded mode). */
    virtual uint32_t workers() const = 0;
};

class CompletionQueue;

/** ibv_async_event: what Device::get_async_event() returns. */
struct AsyncEvent {
    AsyncEventType type = AsyncEventType::DeviceFatal;
    /** The QP an affiliated QP event names (0 otherwise). */
    uint32_t qp_num = 0;
    /** The CQ of a CqErr (nullptr otherwise; valid while the application keeps it). */
    CompletionQueue *cq = nullptr;
};

/** A RoCEv2 device on one port (one IB port, number 1). Owned by the Engine; all its
 * methods may be called from any application thread. */
class Device {
  public:
    virtual ~Device() = default;
    /** The DPDK port name, e.g. "net_ring_droce0a" or "0000:03:00.0": the device name
     * droce-info and ibv-style tools show. */
    virtual const std::string &name() const = 0;
    /** The DPDK port id. */
    virtual uint16_t port_id() const = 0;
    /** Our MAC address. */
    virtual std::string mac() const = 0;
    /** GID table: 0 = link-local from the MAC, then one IPv4-mapped GID per IP. */
    virtual std::vector<GidEntry> gids() const = 0;
    /** Largest IB MTU (bytes) the port's Ethernet MTU carries. */
    virtual uint32_t active_mtu() const = 0;
    /** Ethernet MTU of the port. */
    virtual uint32_t eth_mtu() const = 0;
    /** Every counter: engine RX/TX and drop reasons, ARP/ICMP, transport. A snapshot
     * taken on the worker (mlx5 names where mlx5 has one). */
    virtual std::vector<std::pair<std::string, uint64_t>> counters() const = 0;
    /** ibv_get_async_event without blocking: the oldest pending event, if any (true).
     * A CQ overrun (CqErr) is reported once per CQ, and the QPs whose completions were
     * lost go to ERR (QpFatal); responder errors raise QpReqErr / QpAccessErr. Events
     * beyond the queue's 4096 are dropped and counted (async_event_dropped). */
    virtual bool get_async_event(AsyncEvent &ev) = 0;
    /** ibv_get_async_event: the oldest pending event, waiting for one unless async_fd()
     * was made non-blocking (fcntl O_NONBLOCK: then EAGAIN when none waits). */
    virtual Status wait_async_event(AsyncEvent &ev) = 0;
    /** ibv_context::async_fd: a descriptor that is readable while an event waits, for
     * poll/epoll (it may also wake once for an event get_async_event already took). */
    virtual int async_fd() const = 0;
    /** Starts writing the device's traffic to a pcapng file (see DeviceConfig::capture);
     * snaplen 0 = whole frames. EBUSY while a capture runs. */
    virtual Status start_capture(const std::string &path, uint32_t snaplen = 0) = 0;
    /** Stops the capture: what the workers copied is written, then the file is closed. */
    virtual Status stop_capture() = 0;

    /** ibv_alloc_pd. Destroy the PD after every MR, QP and SRQ made from it. */
    virtual Result<std::unique_ptr<ProtectionDomain>> alloc_pd() = 0;
    /** A completion queue with room for at least cqe completions (1..1048576). Destroy
     * it after the QPs that use it. A full CQ drops completions (counter cq_overflow):
     * size it for every WR that may complete before the application polls. With several
     * workers, CQs are spread over them round-robin. */
    virtual Result<std::unique_ptr<CompletionQueue>> create_cq(uint32_t cqe) = 0;
    /** The same, on a given worker (0 .. Engine::workers()-1); -1 = round-robin. A QP
     * runs on the worker of its CQs (send and receive CQ must share one). */
    virtual Result<std::unique_ptr<CompletionQueue>> create_cq(uint32_t cqe, int worker) = 0;
    /** The same with completion events: the CQ's events (CompletionQueue::req_notify)
     * arrive on channel (nullptr: none, as the two above). */
    virtual Result<std::unique_ptr<CompletionQueue>> create_cq(uint32_t cqe, int worker,
                                                               CompletionChannel *channel) = 0;
    /** ibv_create_comp_channel: where armed CQs report that a completion arrived. */
    virtual Result<std::unique_ptr<CompletionChannel>> create_comp_channel() = 0;
};

/** A completion channel (ibv_comp_channel): an application that would rather sleep
 * than poll arms its CQs (CompletionQueue::req_notify) and waits here; the worker
 * raises the event when a completion arrives (a system call then, once per arm; CQs
 * without a channel pay nothing). Several CQs, of any worker, may share one channel. */
class CompletionChannel {
  public:
    /** ibv_destroy_comp_channel. A CQ still on it keeps what it needs alive; its events
     * then go nowhere. */
    virtual ~CompletionChannel() = default;
    /** Readable while an event waits (poll/epoll). Set O_NONBLOCK on it (fcntl) for a
     * get_event that does not wait. */
    virtual int fd() const = 0;
    /** ibv_get_cq_event: the CQ whose event fired, oldest first; waits for one unless
     * fd() is non-blocking (then EAGAIN when none waits). One event per arm: arm again
     * (req_notify), then poll the CQ, before waiting for the next. A CQ destroyed with an
     * event pending takes that event with it. */
    virtual Result<CompletionQueue *> get_event() = 0;
};

/** ibv_srq_init_attr. */
struct SrqInitAttr {
    /** Receive WRs the SRQ holds (1..16384). */
    uint32_t max_wr = 128;
    /** Scatter entries per receive WR (1..kMaxSge). */
    uint32_t max_sge = kMaxSge;
    /** The worker it lives on (0 .. Engine::workers()-1): QPs using it must have their
     * CQs on the same worker. */
    uint32_t worker = 0;
};

/** ibv_qp_init_attr. */
struct QpInitAttr {
    /** Where send-queue completions go (required; must outlive the QP). */
    CompletionQueue *send_cq = nullptr;
    /** Where receive completions go (required; may be send_cq; must outlive the QP). */
    CompletionQueue *recv_cq = nullptr;
    /** Receives come from this shared receive queue; post_recv on the QP then fails. */
    SharedReceiveQueue *srq = nullptr;
    /** Queue sizes (max_send_wr, max_recv_wr 1..16384; SGEs up to kMaxSge). */
    QpCap cap;
    /** Every send WR completes with a Wc, not only those with kSendSignaled. */
    bool sq_sig_all = false;
    /** Rc, or Ud: datagrams of at most the active MTU, each send WR naming its address
     * handle, remote QPN and Q_Key; a receive buffer gets the 40-byte GRH first (verbs
     * IBV_WC_GRH), then the payload, and its Wc names the sender (src_qp). */
    QpType qp_type = QpType::Rc;
};

/** An address handle (ibv_ah): a resolved destination for UD sends (the peer's MAC is
 * looked up by ARP when it is created). Destroy it after the WRs naming it complete. */
class AddressHandle {
  public:
    virtual ~AddressHandle() = default;
    /** What it was created with. */
    virtual const AhAttr &attr() const = 0;
};

/** A protection domain (ibv_pd): MRs are usable only by QPs of the same PD. */
class ProtectionDomain {
  public:
    /** ibv_dealloc_pd; its MRs, QPs and SRQs must be destroyed already. */
    virtual ~ProtectionDomain() = default;
    /** ibv_reg_mr: registers [addr, addr + length) with Access rights (kAccess*). The
     * memory must stay allocated until the MemoryRegion is destroyed. */
    virtual Result<std::unique_ptr<MemoryRegion>> reg_mr(void *addr, size_t length,
                                                         uint32_t access) = 0;
    /** ibv_create_qp: an RC (or, with QpInitAttr::qp_type, UD) QP in RESET. Bring it to
     * RTS with QueuePair::modify (UD: RESET->INIT with pkey_index, port and qkey; INIT->RTR;
     * RTR->RTS with sq_psn). */
    virtual Result<std::unique_ptr<QueuePair>> create_qp(const QpInitAttr &attr) = 0;
    /** ibv_create_ah: the destination of UD sends. Resolves the next hop's MAC (ARP for
     * an IPv4-mapped dgid, ND for an IPv6 one, up to the device's arp_timeout_ms); tagged
     * on a VLAN port (PCP = sl & 7); a multicast dgid is refused (EOPNOTSUPP). */
    virtual Result<std::unique_ptr<AddressHandle>> create_ah(const AhAttr &attr) = 0;
    /** Creates a shared receive queue (ibv_create_srq). Destroy its QPs first. */
    virtual Result<std::unique_ptr<SharedReceiveQueue>> create_srq(const SrqInitAttr &attr) = 0;
};

/** A receive queue several QPs of one device take receives from (ibv_srq). WRs left on it
 * are not flushed when a QP fails: they stay for the other QPs. */
class SharedReceiveQueue {
  public:
    /** ibv_destroy_srq. Destroy its QPs first. */
    virtual ~SharedReceiveQueue() = default;
    /** ibv_post_srq_recv: never blocks; errors as values. */
    virtual Status post_recv(const RecvWr &wr) = 0;
};

/** A registered memory region (ibv_mr). */
class MemoryRegion {
  public:
    /** ibv_dereg_mr. No WR naming the region should be outstanding; one that is fails
     * with LocProtErr (QP to ERR) at the next packet it would read or write the region
     * with, a retransmission included (counted as req_local_prot_error for sends). When
     * this returns the device no longer touches the memory: it may be freed. */
    virtual ~MemoryRegion() = default;
    /** Key for local SGEs (Sge::lkey). */
    virtual uint32_t lkey() const = 0;
    /** Key a peer names in RDMA and atomic WRs (SendWr::rkey). */
    virtual uint32_t rkey() const = 0;
    /** Start of the region. */
    virtual void *addr() const = 0;
    /** Length of the region in bytes. */
    virtual size_t length() const = 0;
};

/** A completion queue (ibv_cq). Poll it from one application thread. */
class CompletionQueue {
  public:
    /** ibv_destroy_cq. Destroy its QPs first (a CQ still in use is kept alive until
     * the device closes, and the misuse is logged). */
    virtual ~CompletionQueue() = default;
    /** Non-blocking: moves up to max completions into wc; returns how many. */
    virtual int poll(Wc *wc, int max) = 0;
    /** ibv_req_notify_cq: the next completion added to the CQ from now on (with
     * solicited_only: the next one of a message sent with kSendSolicited, or an
     * unsuccessful one) raises one event on the CQ's channel. Completions already in the
     * CQ raise none: arm, then poll once more, then wait. EINVAL on a CQ made without a
     * channel. */
    virtual Status req_notify(bool solicited_only = false) = 0;
};

/** An RC queue pair (ibv_qp). Post to it and poll its CQs from one application
 * thread. */
class QueuePair {
  public:
    /** ibv_destroy_qp: the QP stops at once; outstanding WRs get no completion. */
    virtual ~QueuePair() = default;
    /** The QP number the peer names as its destination QP. */
    virtual uint32_t qp_num() const = 0;
    /** ibv_modify_qp. Going to RTR resolves the peer's MAC (ARP) and may block up to the
     * device's arp_timeout_ms; failure is an error value that says so. With
     * DeviceConfig::rtr_nonblocking it never waits: see there. */
    virtual Status modify(const QpAttr &attr, uint32_t mask) = 0;
    /** Current state and attributes. */
    virtual Status query(QpAttr &attr) = 0;
    /** ibv_post_send: never blocks; errors as values (queue full, bad state, bad WR).
     * The buffers the WR names belong to the engine until its completion. */
    virtual Status post_send(const SendWr &wr) = 0;
    /** ibv_post_recv: never blocks; fails on a QP that uses an SRQ. The buffers belong
     * to the engine until the WR's completion. */
    virtual Status post_recv(const RecvWr &wr) = 0;
    /** ibv_post_send with a chain of n WRs (ibv_send_wr's next links, as an array): posted
     * in order, in one call (one scheduling of the QP in embedded mode). On the first WR
     * refused, the error is returned and *bad_index (optional) names it: the WRs before
     * it are posted, it and those after it are not (ibv_post_send's bad_wr). On success
     * *bad_index = n. E.g. an NVMe-oF read's data RDMA WRITE and its response SEND. */
    virtual Status post_send(const SendWr *wrs, uint32_t n, uint32_t *bad_index = nullptr);
    /** The same for receives (ibv_post_recv's chain and bad_wr). */
    virtual Status post_recv(const RecvWr *wrs, uint32_t n, uint32_t *bad_index = nullptr);
    /** DCQCN for this QP only: new parameters (a QP already limited keeps its rate
     * state), also on a device without DCQCN. A bad value is refused with a message
     * naming the field; nothing changes then. */
    virtual Status set_dcqcn(const DcqcnParams &params) = 0;
    /** Switches DCQCN off for this QP: line rate, data not-ECT, CNPs ignored. */
    virtual Status disable_dcqcn() = 0;
    /** The QP's DCQCN state: rate, target, alpha, stage. */
    virtual Status query_dcqcn(DcqcnState &state) = 0;
};

} // namespace droce
