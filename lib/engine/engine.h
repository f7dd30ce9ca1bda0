/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/engine: the DPDK binding of the sans-I/O core. EAL and mempool bring-up, one
 * Dev per port (RX classify -> lib/net or lib/wire + rc::Qp, TX batching), the worker
 * loop and the command mailbox through which control operations reach the worker.
 *
 * Threading contract: everything inside a Dev (QP table, rc::Qp state, MR table,
 * neighbour table, counters) is touched by exactly one thread — the worker lcore when it
 * runs, otherwise the thread calling Runtime::poll_once()/exec(). The application side
 * only touches the SPSC rings (SQ/RQ per QP in worker mode, one per CQ). */
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
#include <rte_mbuf_core.h>

#include "mem_mr.h"
#include "net.h"
#include "rc_qp.h"
#include "wire_packet.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_ring;

namespace droce::engine {

inline constexpr uint32_t kMaxQpsPerDevice = 1024; /* QPN table size (QPN < this) */
inline constexpr uint32_t kFirstQpn = 0x11;        /* 0 and 1 are the IB special QPs */
inline constexpr uint16_t kRxBurst = 32;
inline constexpr uint16_t kTxBatch = 64;
inline constexpr uint32_t kWrBurst = 32; /* WRs drained from a ring per QP per iteration */
inline constexpr uint64_t kArpRetryNs = 200'000'000;

/* Engine-level counters (mlx5 names where mlx5 has one). Parse drops are kept apart,
 * indexed by wire::ParseResult, and named rx_drop_<parse_result_name>. */
#define DROCE_ENGINE_COUNTERS(X)                                                                   \
    X(port_rcv_packets)                                                                            \
    X(port_rcv_bytes)                                                                              \
    X(port_xmit_packets)                                                                           \
    X(port_xmit_bytes)                                                                             \
    X(port_xmit_discards)       /* built frames the PMD did not take */                            \
    X(tx_no_mbuf)               /* transmit() refused: pool empty */                               \
    X(tx_batch_full)            /* transmit() refused: this iteration's batch is full */           \
    X(tx_frame_too_big)         /* frame larger than an mbuf (MTU misconfiguration) */             \
    X(tx_drop_reply_batch_full) /* ARP/ICMP reply dropped: batch full */                           \
    X(tx_bytes_zero_copy)       /* payload bytes attached as external buffers (not copied) */      \
    X(tx_bytes_copied)          /* payload bytes copied into the frame */                          \
    X(rx_multiseg_packets)      /* chained RoCE frames accepted (headers in the first segment) */  \
    X(rx_drop_multiseg)         /* chained frame not handled: headers not in the first segment, */ \
                                /* too many segments, or chained ARP/ICMP */                       \
    X(mr_extmem_register_failed) /* rte_extmem_register refused a region (note, not an error) */   \
    X(mr_dma_map_failed)         /* rte_dev_dma_map refused a region: no zero-copy for it */       \
    X(mr_dereg_inflight_refs)    /* zero-copy mbufs still out when their MR was deregistered */    \
    X(mr_dereg_timeout)          /* ... and still out when dereg gave up waiting (kept alive) */   \
    X(rx_drop_not_our_mac)                                                                         \
    X(rx_drop_unknown_ethertype)                                                                   \
    X(rx_drop_not_our_ip) /* RoCE packet for another IPv4 address */                               \
    X(rx_drop_unknown_qpn)                                                                         \
    X(sq_wr_rejected) /* WR refused by the QP on the worker: error completion */                   \
    X(rq_wr_rejected)

struct EngineCounters {
#define DROCE_ENGINE_FIELD(n) uint64_t n = 0;
    DROCE_ENGINE_COUNTERS(DROCE_ENGINE_FIELD)
#undef DROCE_ENGINE_FIELD
    uint64_t rx_drop_parse[static_cast<size_t>(wire::ParseResult::Count_)] = {};
};

/** A CQ: completions go from the worker to the application through an SPSC ring. */
struct CqCtx final : rc::CqSink {
    rte_ring *ring = nullptr;
    uint32_t refs = 0; /* QPs using it; touched on the worker only */
    bool push(const Wc &wc) override;
    int poll(Wc *wc, int max);
    ~CqCtx() override;
};

/** A QP as the engine keeps it. */
/* A shared receive queue; worker mode feeds it through an SPSC ring like a QP's RQ. */
struct SrqCtx {
    std::unique_ptr<rc::RecvQueue> q;
    rte_ring *ring = nullptr; /* worker mode: RecvWr, application -> worker */
    uint32_t refs = 0;        /* QPs using it */
    ~SrqCtx();
};

struct QpCtx {
    std::unique_ptr<rc::Qp> qp;
    SrqCtx *srq = nullptr;
    rte_ring *sq = nullptr; /* worker mode: SendWr, application -> worker */
    rte_ring *rq = nullptr; /* worker mode: RecvWr */
    CqCtx *scq = nullptr;
    CqCtx *rcq = nullptr;
    uint32_t max_send_wr = 0;
    uint32_t max_recv_wr = 0;
    ~QpCtx();
};

class Runtime;

/** Zero-copy state of one registered region. shinfo.refcnt counts the mbufs attached to
 * the region that the PMD (or, over net_ring, the peer) has not freed yet; the free
 * callback runs when it drops to zero. Every attach and free happens on the thread that
 * owns the Dev (the worker, or the embedded poller), which DPDK's non-atomic fast path of
 * rte_mbuf_ext_refcnt_update requires. A region outlives its MR while mbufs are out. */
struct ZcRegion {
    rte_mbuf_ext_shared_info shinfo{};
    uint32_t key = 0;
    uint8_t *ext_addr = nullptr; /* page-aligned envelope given to rte_extmem_register */
    size_t ext_len = 0;
    bool extmem = false;
    bool dma = false;
    bool usable = false; /* zero-copy allowed for this region on this port */
    uint64_t idle_events = 0;
    uint16_t outstanding() const;
    ~ZcRegion();
};

/** One DPDK port as a RoCEv2 device. */
class Dev final : public rc::TxPort {
  public:
    Dev(Runtime &rt, uint16_t port, std::string name, const net::Iface &ifc, uint32_t eth_mtu,
        uint32_t arp_timeout_ms);
    ~Dev() override;
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
    /** Set once, before any QP exists (QPs keep a pointer to the table). */
    void set_pkeys(std::vector<uint16_t> pkeys) { pkeys_ = std::move(pkeys); }
    const std::vector<uint16_t> &pkeys() const { return pkeys_; }

    /* ---- control: on the worker (through Runtime::exec) ---- */
    Result<uint32_t> create_qp(uint32_t pd, const QpInitAttr &attr, CqCtx *scq, CqCtx *rcq,
                               rte_ring *sq, rte_ring *rq, QpCtx **out, SrqCtx *srq = nullptr);
    SrqCtx *create_srq(uint32_t max_wr, uint32_t max_sge, rte_ring *ring);
    /** False (and nothing done) while QPs still use it. */
    bool destroy_srq(SrqCtx *s);
    /** Frees the QPN; the QP's rings are freed with it. */
    void destroy_qp(uint32_t qpn);
    QpCtx *qp(uint32_t qpn) { return qpn < kMaxQpsPerDevice ? qps_[qpn].get() : nullptr; }
    /** Neighbour resolution step; sends the ARP request itself when one is due. */
    net::ResolveStep resolve(uint32_t ip, uint64_t now, net::Mac *mac);
    mem::MrTable &mrs() { return mrs_; }
    /** MR registration with the zero-copy hook (extmem + DMA map where the port needs it). */
    Result<mem::MemoryRegion> reg_mr(uint32_t pd, const void *addr, uint64_t length,
                                     uint32_t access);
    /** Key invalid at once; *outstanding = zero-copy mbufs of the region still out (the
     * region's memory must not go away before they are back: see zc_reap). */
    Status dereg_mr(uint32_t key, uint32_t *outstanding);
    /** Releases deregistered regions whose mbufs are all back; true when the one of key
     * (if any) is gone. give_up: keep it alive for good and count a timeout. */
    bool zc_reap(uint32_t key, bool give_up = false);
    void set_zero_copy(bool on, bool needs_dma, uint32_t min_bytes);
    bool zero_copy() const { return zc_on_; }
    /** Snapshot of every counter. */
    std::vector<std::pair<std::string, uint64_t>> counters() const;
    /** Per live QP: its QPN and a one-line state summary (attributes, then
     * rc::Qp::debug_string()). On the worker. */
    std::vector<std::pair<uint32_t, std::string>> qp_summaries() const;
    size_t num_qps() const { return active_.size(); }
    void retire_cq(std::unique_ptr<CqCtx> cq) { retired_cqs_.push_back(std::move(cq)); }

    /* ---- data path ---- */
    /** One iteration: drain WR rings, RX, timers, progress, TX. Returns packets handled
     * (received + sent); *work gets everything done, for idle detection. */
    uint32_t poll(uint64_t now, uint32_t *work);
    bool transmit(const wire::FrameSpec &frame) override;
    /** RX of one frame (the engine owns m afterwards). Exposed for benchmarks. */
    void rx_one(rte_mbuf *m, uint64_t now);
    /** Sends the batch; returns frames the PMD took. */
    uint32_t flush_tx();
    /** Ports started, rings drained (worker-mode rings of QPs). */
    void set_worker_rings(bool on) { worker_rings_ = on; }

  private:
    uint32_t drain_rings(QpCtx &q);
    uint32_t drain_srq(SrqCtx &s);
    bool queue_tx(rte_mbuf *m);
    void send_arp_request(uint32_t ip);
    /* -1: cannot attach (fall back to copy); else transmit()'s result. */
    int transmit_zc(const wire::FrameSpec &frame);
    wire::ParseResult parse_chain(rte_mbuf *m, wire::ParsedPacket &pp, wire::ByteSpan *spans);

    Runtime &rt_;
    uint16_t port_;
    std::string name_;
    net::Iface ifc_;
    net::GidTable gids_;
    net::NeighTable neigh_;
    uint32_t eth_mtu_;
    uint32_t arp_timeout_ms_;
    bool worker_rings_ = false;

    mem::MrTable mrs_;
    std::vector<uint16_t> pkeys_ = {wire::kDefaultPkey};
    std::vector<std::unique_ptr<QpCtx>> qps_; /* indexed by QPN */
    std::vector<QpCtx *> active_;             /* scanned each iteration for timers/TX */
    std::vector<std::unique_ptr<SrqCtx>> srqs_;
    uint32_t next_qpn_ = kFirstQpn;
    std::vector<std::unique_ptr<CqCtx>> retired_cqs_;

    bool zc_on_ = false;
    bool zc_needs_dma_ = true;
    uint32_t zc_min_ = 0;
    std::vector<std::unique_ptr<ZcRegion>> zc_;         /* by MR slot */
    std::vector<std::unique_ptr<ZcRegion>> zc_retired_; /* deregistered, mbufs still out */

    rte_mbuf *tx_[kTxBatch];
    uint16_t ntx_ = 0;

    EngineCounters ec_;
    net::NetCounters nc_;
    rc::Counters rcc_;
};

/** EAL, mbuf pool, devices, worker. */
class Runtime {
  public:
    static Result<std::unique_ptr<Runtime>> create(int argc, char **argv, int *consumed,
                                                   const EngineOptions &opts);
    ~Runtime();

    Result<Dev *> open_device(const DeviceConfig &cfg);
    /** Two net_ring ports back to back (A's TX is B's RX and vice versa). */
    Result<std::pair<std::string, std::string>> create_ring_pair();
    Status start();
    void stop();
    /** One iteration over every device. Returns packets handled; *work (optional) gets
     * all work done including commands and WRs. */
    int poll_once(uint32_t *work = nullptr);
    bool embedded() const { return opts_.embedded; }
    bool worker_running() const { return running_.load(std::memory_order_acquire); }
    /** Runs fn where protocol state lives: queued to the worker when it runs (and waits
     * for it), inline otherwise. Control plane only. */
    void exec(const std::function<void()> &fn);
    /** TSC-derived nanoseconds. */
    uint64_t now_ns() const;
    rte_mempool *pool() const { return pool_; }
    /** Small mbufs for zero-copy frames: headers, external-buffer attachments, ICRC. */
    rte_mempool *zc_pool() const { return zc_pool_; }
    const std::vector<std::unique_ptr<Dev>> &devices() const { return devs_; }
    /** Lets a waiting control call move things along: one poll when nobody else polls,
     * a short sleep otherwise. */
    void wait_a_bit();
    /** Unique DPDK object names (rings, pools). */
    std::string unique_name(const char *prefix);
    /** Runs fn where protocol state lives, from a thread that is neither the worker nor
     * the application's poll thread (the telemetry thread): queued to the mailbox, drained
     * by the worker or, in embedded mode, by the application's next Engine::poll().
     * Returns false when nobody drained it within timeout_ms; fn may still run later, so
     * it must own (or share) everything it touches. */
    bool exec_detached(std::function<void()> fn, uint32_t timeout_ms);

  private:
    Runtime() = default;
    static int worker_main(void *arg);
    uint32_t drain_commands();

    struct Command {
        const std::function<void()> *fn;
        std::atomic<bool> done{false};
        /* exec_detached: the command owns its function and is freed by whichever of
         * the waiter and the drainer lets go last. */
        bool detached = false;
        std::function<void()> owned;
        std::atomic<int> refs{0};
    };

    EngineOptions opts_;
    rte_mempool *pool_ = nullptr;
    rte_mempool *zc_pool_ = nullptr;
    rte_ring *mailbox_ = nullptr;
    std::vector<std::unique_ptr<Dev>> devs_;
    std::vector<rte_ring *> pair_rings_;
    unsigned worker_lcore_ = 0;
    std::atomic<bool> running_{false};
    std::atomic<bool> stop_{false};
    uint64_t tsc_hz_ = 0;
    uint64_t ns_mult_ = 0; /* ns = cycles * ns_mult_ >> 32 */
    uint32_t max_frame_ = 0;
};

/** rte_telemetry commands (/droce/devices, /droce/info, /droce/counters, /droce/qps):
 * registered once per process, answered for every live Runtime's devices. */
void telemetry_attach(Runtime *rt);
void telemetry_detach(Runtime *rt);
/** Serialises Runtime::devices() changes against the telemetry thread reading them. */
std::mutex &telemetry_mutex();

} // namespace droce::engine
