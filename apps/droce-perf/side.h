/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * One side of a perftest test as a non-blocking state machine: setup() builds the buffer,
 * PD, MR, one CQ per worker used and the QPs (INIT, receives posted for send tests);
 * connect() takes the QPs to RTR/RTS; start(size) arms one run; step() polls once and
 * advances. bw tests may run several QPs (-q) as perftest does: one buffer of 2 x qps
 * slices (QP i sends from slice i and receives into slice qps + i), every QP runs -n
 * iterations, posts go round-robin over the QPs and the run counts all of them. QP i's
 * CQ is on worker i % workers (droce polls each CQ on its own worker). Several sides and the
 * engine's poll loop can so share one thread (--loopback). The data path follows perftest's
 * loops: bw clients keep tx_depth WRs in flight; the send_bw server counts receives;
 * write_lat/send_lat ping-pong (write_lat: the server writes first and each side polls
 * the last byte of its receive half; send_lat: the client sends first); read/atomic
 * clients post one WR at a time in lat tests. Servers of write/read/atomic are passive. */
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <droce/droce.h>

#include "options.h"
#include "peak.h"
#include "proto.h"
#include "qp_resources.h"
#include "tsc_clock.h"

namespace droce::perf {

/* The TSC (tsc_clock.h): no system call per timestamp in the measurement loop. */
using Clock = TscClock;

struct SideConfig {
    Verb verb = Verb::Write;
    Kind kind = Kind::Bw;
    bool client = false;
    uint64_t max_size = 65536; /**< buffer half size */
    uint32_t iters = 1000;     /**< per QP */
    uint32_t num_qps = 1;
    uint32_t tx_depth = 128;
    /** bw clients: every cq_mod-th WR of a QP (and its last) is signaled, and its
     * completion accounts for the cq_mod WRs up to it (perftest's -Q). */
    uint32_t cq_mod = 1;
    /** bw tests (-N): stamp only the first post and the last completion (no peak). */
    bool no_peak = false;
    /** bw clients: WRs posted per post_send call (perftest's -l); cq_mod divides it. */
    uint32_t post_list = 1;
    uint32_t rx_depth = 512;
    uint32_t out_reads = 16;
    int gid_idx = 1;
    uint8_t sl = 0; /**< -S: the address handle's SL (VLAN PCP = SL & 7) */
    bool atomic_cas = false;
    double duration_s = 0;   /**< > 0: run for this long (iters ignored) */
    bool ud = false;         /**< -c UD: UD QPs, Q_Key 0x11111111, receives with the GRH area */
    bool buf_malloc = false; /**< --buf-malloc: aligned_alloc, not droce::alloc_buf */
    bool events = false;     /**< -e: the CQs on a completion channel (event_fd, rearm) */
    std::string prefix;
};

/* Cache-line aligned: --threads puts one Side per thread on the heap, and a neighbour's
 * counters must not share a line with this one's. */
class alignas(64) Side {
  public:
    enum class Step { Progress, Idle, Done, Failed };

    explicit Side(SideConfig cfg);
    Side(const Side &) = delete;
    Side &operator=(const Side &) = delete;

    /** Builds everything on dev with the QPs spread over `workers` workers, the first
     * being worker first_worker (--threads: one worker per side); each QP gets a random
     * PSN. */
    bool setup(Device &dev, uint32_t workers, uint32_t first_worker = 0);
    /** --threads: take o's time origin, so that the sides' timestamps (tposted,
     * tcompleted) compare and one report can span them all. */
    void share_clock(const Side &o) { t0_ = o.t0_; }
    /** RTR + RTS of QP i towards remote[i] with path MTU mtu (one Dest per QP). */
    bool connect(const std::vector<Dest> &remote, Mtu mtu);
    /** -R: the QPs were connected by RDMA-CM (RTS already); only the peer's records
     * (rkey, vaddr) are taken. */
    void attach(const std::vector<Dest> &remote) { remote_ = remote; }
    /** Arms a run of `size`-byte messages. */
    bool start(uint64_t size);
    Step step();
    /** -e: the channel's descriptor (non-blocking) while a run is on; -1 otherwise. */
    int event_fd() const;
    /** -e: takes the events that fired and arms every CQ again, so that the next step()
     * polls what came; false (with the reason printed) on an error. */
    bool rearm();
    /** Ends a duration run / a passive server at once (the client said it is done). */
    void finish();
    bool running() const { return running_; }
    bool done() const { return done_; }
    bool is_passive() const;

    const Dest &local() const { return local_[0]; }
    const std::vector<Dest> &locals() const { return local_; }
    uint32_t num_qps() const { return cfg_.num_qps; }
    /** QP i's send and receive slices of the buffer (for --loopback's data check). */
    const uint8_t *send_slice(uint32_t i) const { return buf() + size_t{i} * half_; }
    const uint8_t *recv_slice(uint32_t i) const {
        return buf() + (size_t{cfg_.num_qps} + i) * half_ + (cfg_.ud ? kGrh : 0);
    }
    /** Completions of QP i in the last run (bw clients and the send_bw server). */
    uint64_t qp_completed(uint32_t i) const { return qp_ccnt_[i]; }
    const SideConfig &config() const { return cfg_; }
    /** The verbs objects (tests check the rights they were given). */
    MemoryRegion &mr() const { return *mr_; }
    QueuePair &qp(uint32_t i) const { return *qps_[i]; }

    /** Timestamps of the last run (ns since an arbitrary origin). tposted: one per post of
     * a latency test; a bw client's first post only (its report reads no other). */
    const std::vector<double> &tposted() const { return tposted_; }
    /** When WRs completed: one stamp per completion read, with the WRs it retired (a
     * signaled WR's CQE retires its whole -Q batch; perftest too stamps per CQE). */
    const std::vector<CompletionStamp> &tcompleted() const { return tcompleted_; }
    /** Completions of all QPs in the last run. */
    uint64_t completed() const { return ccnt_; }
    uint64_t size() const { return size_; }
    double run_seconds() const;
    /** When the last run started and ended (a timed run's window). */
    Clock::time_point started_at() const { return t_start_; }
    Clock::time_point ended_at() const { return t_end_; }
    /** Periodic reports for --run_infinitely: completions and seconds since the last call. */
    void take_period(uint64_t &ops, double &seconds);

  private:
    bool fail(const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    uint8_t *buf() const { return buf_.get(); }
    uint8_t *send_buf(uint32_t i) const { return buf() + size_t{i} * half_; }
    uint8_t *recv_buf(uint32_t i) const { return buf() + (size_t{cfg_.num_qps} + i) * half_; }
    Status post_one(uint32_t qp);
    /* A QP's nth WR (from 1) is signaled every cq_mod-th and at its last (perftest's -Q). */
    void set_signaled(SendWr &wr, uint64_t nth) const;
    /* The per-QP fields of wr (prepare_wr built the rest). */
    void fill_wr(SendWr &wr, uint32_t qp);
    /* -l: posts one list of cfg_.post_list WRs on QP q (signaling every cq_mod-th). */
    Status post_list(uint32_t q);
    void prepare_wr();
    bool post_recv(uint32_t qp, int n);
    /** Polls every CQ once (up to max in all); false on an error completion. */
    bool poll_cq(Wc *wc, int max, int &n);
    Step step_bw_client();
    Step step_send_server();
    Step step_lat_write();
    Step step_lat_send();
    Step step_lat_single();
    double now_ns() const;
    bool duration_over() const;

    SideConfig cfg_;
    Device *dev_ = nullptr;
    size_t half_ = 0; /**< one slice (perftest's BUFF_SIZE) */
    // Declared so that they are destroyed QPs first, then CQs, MR, PD and buffer.
    std::unique_ptr<uint8_t, app::QpResources::FreeBuffer> buf_; /**< 2 x num_qps slices */
    std::unique_ptr<ProtectionDomain> pd_;
    std::unique_ptr<MemoryRegion> mr_;
    std::unique_ptr<CompletionChannel> channel_; /**< -e (its CQs below go first) */
    SendWr wr_{};              /* the run's work request (prepare_wr), patched per post */
    std::vector<SendWr> list_; /* -l: cfg_.post_list copies of wr_, patched per list */
    std::vector<std::unique_ptr<CompletionQueue>> cqs_; /**< one per worker used */
    std::vector<std::unique_ptr<QueuePair>> qps_;
    std::vector<std::unique_ptr<AddressHandle>> ahs_; /**< -c UD: QP i's peer (before PD) */
    static constexpr uint32_t kGrh = 40;              /* UD: the GRH in front of a receive */
    static constexpr uint32_t kUdQkey = 0x11111111;   /* perftest's DEF_QKEY */
    bool connect_ud(size_t i, const Dest &r);
    size_t next_cq_ = 0; /**< where poll_cq starts */
    std::vector<Dest> local_;
    std::vector<Dest> remote_;
    std::vector<uint64_t> qp_scnt_, qp_ccnt_; /**< per QP, this run */
    /** QPs that may take another WR, each at most once, in the order room appeared: the
     * client's post loop visits only these (a pass over all QPs per poll, as perftest
     * makes, costs more than the transport at 16,384 QPs). */
    std::vector<uint32_t> room_;
    std::vector<uint8_t> queued_;
    size_t room_head_ = 0, room_count_ = 0;
    void room_push(uint32_t q);

    bool running_ = false;
    bool done_ = false;
    bool failed_ = false;
    uint64_t size_ = 0;
    uint64_t target_ = 0;    /**< iterations of this run, all QPs (UINT64_MAX: duration) */
    uint64_t qp_target_ = 0; /**< per QP */
    uint64_t scnt_ = 0, ccnt_ = 0, rcnt_ = 0, consumed_ = 0; /**< all QPs */
    int lat_state_ = 0;
    /* A bw run stamps its first post alone (the client's first WR, the send_bw server's
     * first receive); the per-post stamps perftest keeps fed a peak the report computes
     * from completions, and cost the client loop a clock read per WR. */
    void stamp_first_post();
    std::vector<double> tposted_;
    std::vector<CompletionStamp> tcompleted_;
    void stamp_completion(uint64_t wrs);
    /* A bw run's end (client or send_bw server). */
    Step bw_done();
    Clock::time_point t0_, t_start_, t_end_, t_deadline_, t_period_;
    uint64_t period_ccnt_ = 0;
};

} // namespace droce::perf
