/* SPDX-License-Identifier: BSD-3-Clause */
/* One DPDK port as a RoCEv2 device (engine_dev.cpp and the files it names). */
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <droce/droce.h>

#include "drivers.h"
#include "engine_capture.h"
#include "engine_event_queue.h"
#include "engine_pfc_port.h"
#include "engine_qp_defaults.h"
#include "engine_qpn_owner.h"
#include "engine_shard.h"
#include "engine_zc_registry.h"
#include "mem_mr.h"
#include "net.h"
#include "net_ipv6.h"

struct rte_mbuf;
struct rte_ring;

namespace droce::engine {

class Runtime;
struct LinkWatch;

/** One DPDK port as a RoCEv2 device, split into one Shard per worker. */
class Dev final {
  public:
    /* queue_stride: worker w's queues are w * queue_stride (drivers::Caps::queue_stride). */
    Dev(Runtime &rt, uint16_t port, std::string name, const net::Iface &ifc, uint32_t eth_mtu,
        uint32_t arp_timeout_ms, uint32_t max_qps, uint32_t workers, uint16_t nrxq, uint16_t ntxq,
        uint16_t queue_stride = 1);
    ~Dev();
    Dev(const Dev &) = delete;
    Dev &operator=(const Dev &) = delete;

    /* ---- identity (immutable after open: any thread) ---- */
    const std::string &name() const { return name_; }
    uint16_t port_id() const { return port_; }
    const net::Iface &iface() const { return ifc_; }
    const net::GidTable &gids() const { return gids_; }
    uint32_t eth_mtu() const { return eth_mtu_; }
    uint32_t active_mtu() const; /* bytes */
    uint32_t arp_timeout_ms() const { return arp_timeout_ms_; }
    uint32_t max_qps() const { return max_qps_; }
    uint32_t workers() const { return static_cast<uint32_t>(shards_.size()); }
    uint16_t rx_queues() const { return nrxq_; }
    uint16_t tx_queues() const { return ntxq_; }
    /** What new QPs take from the configuration (engine_qp_defaults.h): set once at
     * open, before any QP exists. */
    QpDefaults &qp_defaults() { return qpd_; }
    const QpDefaults &qp_defaults() const { return qpd_; }
    uint64_t line_rate_bps() const { return qpd_.line_rate_bps; }
    /** PFC as configured at open (engine_pfc_port.h); set before any worker polls. */
    PfcSettings &pfc() { return pfc_; }
    const PfcSettings &pfc() const { return pfc_; }
    /** The port's adapter and capabilities, and what its steering set up (droce-info). */
    void set_port_info(drivers::Caps caps, drivers::SteerReport steer) {
        caps_ = std::move(caps);
        steer_ = std::move(steer);
    }
    const drivers::Caps &caps() const { return caps_; }
    const drivers::SteerReport &steering() const { return steer_; }
    Shard &shard(uint32_t w) { return *shards_[w]; }
    const Shard &shard(uint32_t w) const { return *shards_[w]; }
    /** The worker that owns a QPN. */
    uint32_t owner(uint32_t qpn) const { return owner_(qpn); }

    /* ---- control: on the owning worker (Runtime::exec_on) unless said otherwise ---- */
    /** On the worker of scq (== rcq's, == srq's). */
    Result<uint32_t> create_qp(uint32_t pd, const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq,
                               rte_ring *sq, rte_ring *rq, QpCtx **out, SrqCtx *srq = nullptr);
    /** A UD QP (engine_ud.cpp), on the worker of scq (== rcq's). fixed_qpn 1 binds it to
     * QP1, the GSI QP a CM layer uses (see engine_gsi.h); 0 allocates a QPN as for RC.
     * In worker mode sq carries SendWr with the UD fields (ah, remote_qpn, remote_qkey). */
    Result<uint32_t> create_ud_qp(uint32_t pd, const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq,
                                  rte_ring *sq, rte_ring *rq, QpCtx **out, uint32_t fixed_qpn = 0);
    SrqCtx *create_srq(uint32_t worker, uint32_t max_wr, uint32_t max_sge, rte_ring *ring);
    /** False (and nothing done) while QPs still use it. */
    bool destroy_srq(SrqCtx *s);
    /** Frees the QPN (after quarantine); the QP's rings are freed with it. */
    void destroy_qp(uint32_t qpn);
    /** On the owning worker only (or with every worker parked). */
    QpCtx *qp(uint32_t qpn) { return qpn < max_qps_ ? qps_[qpn].get() : nullptr; }
    /** Neighbour resolution step (worker 0: ARP lives there); sends the request itself
     * when one is due. */
    net::ResolveStep resolve(uint32_t ip, uint64_t now, net::Mac *mac);
    /** The same for IPv6 (neighbour solicitation). engine_l3.cpp. */
    net::ResolveStep resolve6(const uint8_t ip[16], uint64_t now, net::Mac *mac);
    /** IPv6 addresses, gateways, VLAN and the forced traffic class / hop limit of cfg
     * (set once at open, before any QP exists): rebuilds the GID table. */
    Status set_l3(const DeviceConfig &cfg);
    const net::Iface6 &iface6() const { return ifc6_; }
    uint16_t vlan() const { return vlan_; }
    /** vid is the VLAN of one of our GIDs besides the port's (an IPv6 address's "@VID"). */
    bool gid_vlan(uint16_t vid) const {
        for (uint32_t i = 0; i < ngid_vlans_; ++i)
            if (gid_vlans_[i] == vid)
                return true;
        return false;
    }
    int force_tclass() const { return force_tclass_; }
    int force_hop_limit() const { return force_hop_limit_; }
    /* MR table and zero-copy regions are read by every worker: change them only with
     * every worker parked (Runtime::exec_all). */
    mem::MrTable &mrs() { return mrs_; }
    const mem::MrTable &mrs() const { return mrs_; }
    /** MR registration with the zero-copy hook (extmem + DMA map where the port needs it). */
    Result<mem::MemoryRegion> reg_mr(uint32_t pd, const void *addr, uint64_t length,
                                     uint32_t access);
    /** Key invalid at once; *outstanding = zero-copy mbufs of the region still out (the
     * region's memory must not go away before they are back: see zc_reap). */
    Status dereg_mr(uint32_t key, uint32_t *outstanding);
    /** Releases deregistered regions whose mbufs are all back; true when the one of key
     * (if any) is gone. give_up: keep it alive for good and count a timeout. */
    bool zc_reap(uint32_t key, bool give_up = false);
    /** Zero-copy: the port's reach and threshold (configure at open), the regions. */
    ZcRegistry &zero_copy() { return zc_; }
    const ZcRegistry &zero_copy() const { return zc_; }
    /** Every counter, all shards summed (every worker parked, or inline). */
    std::vector<std::pair<std::string, uint64_t>> counters() const;
    /** Port-level counters and gauges (any thread). */
    std::vector<std::pair<std::string, uint64_t>> port_counters() const;
    /** Sums per-shard snapshots (Shard::counters) and adds the port-level ones. */
    std::vector<std::pair<std::string, uint64_t>>
    merge_counters(const std::vector<std::vector<std::pair<std::string, uint64_t>>> &shards) const;
    /** RSS on: the port spreads IPv4/UDP over its RX queues with `key` (40 bytes) and a
     * redirection table of reta_size entries. */
    void set_rss(const uint8_t *key, uint32_t reta_size);
    bool rss() const { return rss_; }
    /** The UDP source port for a QP's packets to dst_ip: with RSS, one that lands them on
     * the peer's queue for dest_qpn's worker (assuming the peer is a droce with as many
     * workers, its RSS key and a default redirection table); else `fallback`. */
    uint16_t udp_sport_for(uint32_t dst_ip, uint32_t dest_qpn, uint16_t fallback) const;
    /** Schedules q on its worker (after a control call or an embedded-mode post). */
    void touch(QpCtx &q) { shards_[q.worker]->schedule(q); }
    /** An embedded-mode post: touch(q), and when q's ACK is held the reply and that ACK
     * leave now (answer_held, engine_ack_hold.cpp). Inline: every other post pays only
     * the test of a flag on the line schedule() just wrote. */
    void posted(QpCtx &q) {
        /* A post adds send work and changes nothing else schedule() reads (deadlines,
         * pacer, parking): a QP already queued for TX stays as it is. perftest-style
         * loops post a burst of WRs at a time, and all but the first skip the call
         * (3 ns a message of the 64 B write_bw client). */
        if (q.in_ready && !q.ack_held && !worker_rings_)
            return;
        shards_[q.worker]->schedule(q);
        if (q.ack_held) [[unlikely]]
            answer_held(q);
    }
    void answer_held(QpCtx &q);
    /** The oldest pending asynchronous event (any thread). */
    bool next_event(EngineEvent *ev) { return events_.pop(ev); }
    /** The same, waiting unless event_fd() is non-blocking: 0 or an errno. */
    int wait_event(EngineEvent *ev) { return events_.wait(ev); }
    /** Readable while asynchronous events wait (ibv_context::async_fd). */
    int event_fd() const { return events_.fd(); }
    /** Per live QP of worker w: its QPN and a one-line state summary. On worker w. */
    std::vector<std::pair<uint32_t, std::string>> qp_summaries(uint32_t w) const;
    size_t num_qps() const;
    void retire_cq(std::unique_ptr<CqCtx> cq) { retired_cqs_.push_back(std::move(cq)); }
    /** Runs a function on worker w (Runtime::exec_on, or exec_detached from the
     * telemetry thread); false when the worker did not take it. */
    using RunOn = std::function<bool(uint32_t, std::function<void()>)>;
    /** Capture of the device's traffic to a pcapng file (engine_capture.cpp); snaplen 0
     * = whole frames. Any thread; each worker starts/stops copying through run_on. */
    Status capture_start(const std::string &path, uint32_t snaplen, const RunOn &run_on);
    /** DeviceConfig::capture at open_device, before any worker polls the device (the
     * shards are set inline); "open_device: why" on failure. */
    Status capture_at_open(const std::string &path, uint32_t snaplen);
    Status capture_stop(const RunOn &run_on);
    /** The file being written, or "" (any thread). */
    std::string capture_path() const;
    /** capture_* counters (any thread). */
    void capture_counters(std::vector<std::pair<std::string, uint64_t>> &v) const;
    /* ---- a port the host hands over (engine_hosted.cpp) ---- */
    /** The host configured and started the port: droce polls rxq/txq only, allocates its
     * frames from pool, and never reconfigures, stops or closes the port. Before any QP. */
    void set_hosted(uint16_t rxq, uint16_t txq, rte_mempool *pool);
    bool hosted() const { return hosted_; }

    /* ---- non-blocking RTR (engine_neigh_wait.cpp): on worker 0, for its QPs ---- */
    /** The QP went to RTR while its next hop was unresolved (ip: IPv4 host order, or
     * ip6): its frames are held until the neighbour answers, then its path gets the MAC;
     * no answer by deadline_ns puts it in ERR (QpFatal event). Replaces a former wait. */
    void neigh_hold(uint32_t qpn, bool v4, uint32_t ip, const uint8_t ip6[16],
                    uint64_t deadline_ns);
    /** Forgets qpn's wait (a new path was given, or the QP is destroyed). */
    void neigh_unhold(uint32_t qpn);
    /** Worker 0, once per poll while QPs wait: resolves, releases or fails them. */
    void neigh_step(uint64_t now);
    bool neigh_waiting() const { return !neigh_wait_.empty(); }
    /** DeviceConfig::rtr_nonblocking. */
    bool rtr_nonblocking() const { return rtr_nonblocking_; }
    void set_rtr_nonblocking(bool on) { rtr_nonblocking_ = on; }

    /** Ports started, rings drained (worker-mode rings of QPs). */
    void set_worker_rings(bool on) { worker_rings_ = on; }
    bool worker_rings() const { return worker_rings_; }

    /* ---- link state (engine_link.cpp): control path, on the EAL alarm thread ---- */
    /** Starts the periodic link check: PortErr/PortActive events; on a bonding port, the
     * active member followed (failover counted, gratuitous ARP). Once, after open. */
    void watch_link();
    /** Stops it (before the port is stopped). */
    void unwatch_link();
    /** Queues an asynchronous event for the application (any thread). */
    bool push_event(const EngineEvent &e);
    /** On worker 0: a gratuitous ARP for our address (after a failover). */
    void send_garp();
    /** On worker 0, asked by the link watch (Caps::reconnect_by_restart): stops and starts
     * the port while the EAL's interrupt thread is held, so that it connects again. A start
     * that fails leaves the port stopped and unpolled until a later try succeeds. */
    void restart_port();
    /** link_* counters (any thread). */
    void link_counters(std::vector<std::pair<std::string, uint64_t>> &v) const;

    /* ---- data path (single-worker convenience: shard 0, for benchmarks/embedded) ---- */
    uint32_t poll(uint64_t now, uint32_t *work) { return shards_[0]->poll(now, work); }
    void rx_one(rte_mbuf *m, uint64_t now) { shards_[0]->rx_one(m, now); }
    uint32_t flush_tx() { return shards_[0]->flush_tx(); }

  private:
    friend class Shard;
    /* The end of create_qp and create_ud_qp: the rings, CQs and worker into the built
     * QpCtx, CQ references taken, and the QPN's table slot filled. Returns qpn. */
    uint32_t install_qp(std::unique_ptr<QpCtx> ctx, uint32_t qpn, uint32_t w,
                        const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq, rte_ring *sq, rte_ring *rq,
                        QpCtx **out);
    void send_arp_request(uint32_t ip);
    void send_ns(const uint8_t ip[16]);

    Runtime &rt_;
    uint16_t port_;
    std::string name_;
    net::Iface ifc_;
    net::GidTable gids_;
    net::NeighTable neigh_; /* worker 0 */
    uint32_t eth_mtu_;
    uint32_t arp_timeout_ms_;
    uint32_t max_qps_;
    uint16_t nrxq_, ntxq_;
    uint16_t queue_stride_;
    rte_mempool *tx_pool_; /* frames we build: the engine's pool, or the host's */
    bool worker_rings_ = false;
    /* Worker 0: restart_port's start failed; the port is not polled (a stopped port's burst
     * functions are ethdev's dummies, which complain). */
    bool port_stopped_ = false;
    LinkWatch *link_ = nullptr; /* engine_link.cpp */
    uint16_t vlan_ = 0;         /* VID; 0 = untagged (read per frame: in the padding here) */

    mem::MrTable mrs_;
    QpDefaults qpd_;
    PfcSettings pfc_;
    drivers::Caps caps_;
    drivers::SteerReport steer_;
    /* Indexed by QPN; entry n belongs to worker n % workers and only it touches it. */
    std::vector<std::unique_ptr<QpCtx>> qps_;
    std::vector<std::unique_ptr<Shard>> shards_;
    QpnOwner owner_; /* qpn % workers */
    std::vector<std::unique_ptr<CqCtx>> retired_cqs_;
    EventQueue events_; /* workers and the link watch -> the application's threads */
    bool rss_ = false;
    uint8_t rss_key_[40] = {};
    uint32_t reta_size_ = 0;

    ZcRegistry zc_; /* zero-copy regions by MR slot (engine_zc_registry.h) */
    /* IP policy (engine_l3.cpp), last: only IPv6 frames and the control path read it. */
    net::Iface6 ifc6_;        /* link-local + configured IPv6 addresses */
    net::NeighTable6 neigh6_; /* worker 0 */
    int force_tclass_ = -1;
    int force_hop_limit_ = -1;
    /* The GIDs' VLANs other than vlan_ (per-address "@VID"): frames on them pass the
     * port's VLAN filter and are then matched against their GID's VLAN. */
    uint16_t gid_vlans_[net::kMaxIp6Addrs] = {};
    uint32_t ngid_vlans_ = 0;

    bool hosted_ = false;
    bool rtr_nonblocking_ = false;
    struct NeighWait {
        uint32_t qpn;
        bool v4;
        uint32_t ip;
        uint8_t ip6[16];
        uint64_t deadline;
    };
    std::vector<NeighWait> neigh_wait_; /* worker 0 */

    /* Capture: declared last, so the first member destroyed (its file is closed before
     * the counters and the lock go). */
    mutable std::mutex capture_mu_;
    CaptureCounters capture_ctr_;
    std::shared_ptr<Capture> capture_;
};

} // namespace droce::engine
