/* SPDX-License-Identifier: BSD-3-Clause */
/* An RC queue pair: state machine, send and receive queues, and the three protocol
 * roles Linux rxe splits it into — requester (rc_requester.cpp: WRs to packets),
 * completer (rc_completer.cpp: ACK/NAK/READ responses to completions, retransmission)
 * and responder (rc_responder.cpp: requests to memory, receive completions, ACKs).
 * Sans-I/O: packets in through on_packet(), out through TxPort; time is an argument. */
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "vocab_status.h"
#include "vocab_verbs.h"

#include "cc_params.h"
#include "mem_mr.h"
#include "qp_env.h"
#include "qp_recv_queue.h"
#include "qp_transport.h"
#include "rc_cc.h"
#include "rc_counters.h"
#include "rc_resp_checks.h"
#include "wire_packet.h"

namespace droce::rc {

/* The base RC shares with UD (lib/qp), by the names rc has always used. */
using qp::AsyncEvent;
using qp::AsyncEventSink;
using qp::CqSink;
using qp::pkey_match;
using qp::RecvQueue;
using qp::RecvWqe;
using qp::Time;
using qp::TxPort;

/** The resolved network path of a connected QP (set when it goes to RTR): everything the
 * frame builder needs below the BTH. */
struct Path {
    wire::EthHdr eth{}; /* dst = next hop MAC, src = port MAC, optional VLAN */
    bool ipv6 = false;
    bool rocev1 = false; /* GRH framing, ethertype 0x8915 (the sgid is a RoCEv1 GID) */
    uint8_t sgid[16] = {};
    uint8_t dgid[16] = {};
    uint8_t tos = 0;
    uint8_t ttl = 64;
    uint32_t flow_label = 0;
    uint16_t udp_sport = 0xC000;
};

/* PSNs a requester may have outstanding: fewer than half the 24-bit space, or 24-bit
 * comparisons of npsn against una invert. */
inline constexpr uint32_t kPsnWindow = 1u << 23;

/** Tunables that verbs does not expose; defaults follow rxe where interop depends on it. */
struct QpTuning {
    uint32_t max_inflight_pkts = 128; /* unacked PSNs the requester keeps (rxe: 128) */
    uint32_t ackreq_every = 64;       /* request an ACK at least every N packets (rxe: 64) */
    uint32_t ack_every = 64; /* responder ACKs unasked after N packets (0 = only on AckReq) */
    /* Duplicate requests re-ACKed (SEND/WRITE), replayed (atomic) or re-served (READ,
     * per resource) at
     * most once per this interval (0 = every one): a forged old PSN must not make the
     * responder answer 1:1 towards the real peer. A genuine retry still gets its answer
     * as long as the interval is below the peer's retransmission timeout (rxe's is at
     * least a jiffy, perftest's 67 ms): each re-ACK names the current ePSN - 1, so the
     * one that does leave acknowledges every duplicate it stood in for. Capped at a
     * quarter of the QP's own local ACK timeout for peers configured like this QP. */
    uint64_t dup_ack_interval_ns = 50'000;
    /* PSN sequence error NAKs for ahead PSNs (one per gap, as IBTA asks). A legitimate
     * packet re-arms the one-per-gap rule, so a forged ahead PSN between legitimate
     * packets would otherwise send the real peer back its whole window each time, and
     * a NAK costs the peer far more than a re-ACK. A real gap in a stream is followed
     * by ahead packets with consecutive PSNs; a forged frame slipped between legitimate
     * ones is alone, and repeated forged PSNs are not consecutive. So: after
     * seq_nak_after_run ahead packets with consecutive PSNs (none in sequence
     * between) the NAK leaves at most once per dup_ack_interval_ns; a lone ahead
     * packet is NAKed at most once per seq_nak_interval_ns (a gap with too few packets
     * behind it to make a run: the last packets of a burst). A suppressed gap is NAKed
     * by a later ahead packet, or the requester's timeout covers it. Both intervals
     * are capped at a quarter of the QP's own local ACK timeout (for peers configured
     * like this QP). seq_nak_after_run 0 or 1: every ahead packet counts as a run. */
    uint64_t seq_nak_interval_ns = 1'000'000;
    uint32_t seq_nak_after_run = 3;
};

/** Everything a QP is created with. Pointers must outlive the QP. */
struct QpConfig {
    uint32_t qpn = 0;
    uint32_t pd = 0;
    QpCap cap;
    bool sq_sig_all = false;
    TxPort *port = nullptr;
    CqSink *send_cq = nullptr;
    CqSink *recv_cq = nullptr;
    const mem::MrTable *mrs = nullptr;
    RecvQueue *srq = nullptr; /* shared receive queue; then post_recv() on the QP fails */
    Counters *counters = nullptr;
    AsyncEventSink *events = nullptr; /* asynchronous events; nullptr = not reported */
    QpTuning tuning;
    /* The port's P_Key table (ibv_query_pkey); kQpPkeyIndex selects the QP's P_Key from
     * it. nullptr = the one-entry default table {0xFFFF}. Must outlive the QP. */
    const uint16_t *pkey_table = nullptr;
    uint32_t pkey_table_len = 0;
    /* DCQCN (lib/cc): the parameters this QP starts with (copied at creation; per-QP
     * changes later do not touch the owner's struct) and the port's line rate, the RP's
     * maximum. nullptr = no congestion control at all: data leaves not-ECT, CE marks are
     * not looked at, CNPs are counted as ignored (the behaviour before DCQCN). */
    const cc::CcParams *cc = nullptr;
    uint64_t line_rate_bps = 0;
    /* > 0 (and cc set): the pacer holds the QP to the line rate even when the RP does not
     * limit it, with a bucket of this many full frames: a port without a wire of its own
     * (memif) otherwise takes a whole window at once. 0: a QP at line rate is unpaced. */
    uint32_t tx_burst_frames = 0;
};

/* Cache-line aligned: QPs of different workers are allocated next to each other, and a
 * line shared by the end of one and the start of the next would be written by both. */
class alignas(64) Qp {
  public:
    explicit Qp(const QpConfig &cfg);

    /* ---- verbs ---- */
    /** ibv_modify_qp: validates the transition and the attributes it needs (as the
     * libibverbs state table does). `path` is required with kQpAv. */
    Status modify(const QpAttr &attr, uint32_t mask, const Path *path = nullptr);
    /** ibv_post_send for one WR. Errors (bad state, full queue, bad WR) are returned and
     * nothing is queued. Access to the SGEs is checked when the WR starts. */
    Status post_send(const SendWr &wr);
    /** ibv_post_recv for one WR. Allowed from RESET on (as ibverbs allows from INIT). */
    Status post_recv(const RecvWr &wr);

    /* ---- driver ---- */
    /** A parsed packet whose BTH DestQP is this QP. */
    void on_packet(const wire::ParsedPacket &p, Time now);
    /** The responder's straight path (rc_responder.cpp): a request the fast parse read
     * (SEND ONLY, WRITE ONLY) that the responder would accept and execute, executed
     * from the view. false: not such a request, nothing changed; the caller hands the
     * packet to on_packet, which answers it. */
    bool on_small_frame(const wire::SmallFrame &f, Time now);
    /** Sends what the window allows, and any ACK/NAK/READ response still owed. */
    void progress(Time now);
    /** When on_timer() must be called next (0 = no timer armed). */
    Time next_deadline() const;
    void on_timer(Time now);
    /** Starts fetching the whole QP into the cache (a hint, no effect on state): the
     * engine calls it a packet ahead, as with many QPs each one's state is cold. */
    void prefetch() const {
        const char *p = reinterpret_cast<const char *>(this);
        for (size_t off = 0; off < sizeof(*this); off += 64)
            __builtin_prefetch(p + off);
    }
    /** True when progress() has something to send. */
    bool has_tx_work() const;
    /** True when progress() would send a plain ACK and nothing else: the driver may hold
     * it back briefly so that it leaves together with the application's next post. */
    bool ack_only_tx_work() const;

    uint32_t qpn() const { return cfg_.qpn; }
    QpState state() const { return state_; }
    const QpAttr &attr() const { return attr_; }
    const Path &path() const { return path_; }
    /** The next hop's MAC, learned after the QP went to RTR (non-blocking RTR). */
    void set_next_hop_mac(const uint8_t mac[6]) {
        std::memcpy(path_.eth.dst, mac, 6);
        renew_path_gen();
    }
    /** The P_Key this QP sends and accepts (from the P_Key table entry it was given). */
    uint16_t pkey() const { return pkey_; }
    uint32_t send_queue_depth() const { return req_.sq_tail - req_.sq_head; }
    uint32_t recv_queue_depth() const { return resp_.rcv->depth(); }
    /** One line of protocol state, for diagnostics (droce-info -q, test failures). */
    std::string debug_string() const;
    /* ---- DCQCN (rc_cc.cpp) ---- */
    /** Gives the QP these DCQCN parameters (validated against the line rate; the QP keeps
     * its own copy): a QP created without DCQCN gets it, one with DCQCN keeps its rate
     * state (lib/cc set_params). rp_enabled/np_enabled false switch the halves off. */
    Status set_cc_params(const cc::CcParams &p, Time now);
    /** The same at the time of the last event the QP saw. */
    Status set_cc_params(const cc::CcParams &p) { return set_cc_params(p, now_); }
    /** Removes DCQCN from the QP: line rate, data not-ECT, CNPs ignored (as nullptr cc). */
    void disable_cc();
    /** The QP's DCQCN state (enabled false and zeros without DCQCN). */
    CcState cc_state() const;
    /** Data is held by the pacer (a timer at next_deadline() releases it): the driver
     * should not sleep past that deadline. */
    bool pacer_holding() const { return pace_until_ != 0; }
    /** The parameters in force; nullptr without DCQCN. */
    const cc::CcParams *cc_params() const { return cc_ ? &cc_->params : nullptr; }

    /** Checks the requester's PSN invariants; empty when they hold (for tests). */
    std::string check_invariants() const;

  private:
    /* A send WQE with the requester's per-message state. */
    struct SendWqe {
        SendWr wr;
        uint32_t length; /* total bytes of the message */
        uint32_t first_psn;
        uint32_t last_psn; /* first + packets - 1 */
        uint32_t npkts;
        uint32_t read_off; /* READ: bytes of the response placed so far */
        bool started;
        bool signaled;
        uint8_t inline_data[kMaxInlineData]; /* kSendInline: payload copied at post time */
    };
    /* A READ (or atomic) the responder still owes or may have to re-serve. */
    struct ReadResource {
        uint32_t psn; /* PSN of the request = first response PSN */
        uint32_t npkts;
        uint64_t va;
        uint32_t rkey;
        uint32_t length;
        uint32_t sent_pkts; /* responses emitted so far */
        bool is_atomic;
        uint64_t atomic_orig; /* replay value of an executed atomic */
        bool valid;
        bool replayed; /* replayed (atomic) or re-served (READ) at replayed_at: the limit */
        Time replayed_at;
    };

    /* rc_qp.cpp: modify() runs these steps in order */
    Status check_transition(const QpAttr &a, uint32_t mask, QpState cur, QpState to) const;
    Status check_attr_values(const QpAttr &a, uint32_t mask, const Path *path) const;
    void apply_path_attrs(const QpAttr &a, uint32_t mask, const Path *path);
    void apply_responder_attrs(const QpAttr &a, uint32_t mask);
    void apply_requester_attrs(const QpAttr &a, uint32_t mask);
    void reset_queues_and_state();
    void enter_state(QpState cur, QpState to, const QpAttr &a, uint32_t mask);

    /* rc_qp.cpp */
    /* rxe's check_addr: the packet came from the path's remote GID to the path's own. */
    bool from_peer(const wire::ParsedPacket &p) const {
        return std::memcmp(reinterpret_cast<const uint8_t *>(&p) +
                               offsetof(wire::ParsedPacket, src_gid),
                           peer_gids_, sizeof peer_gids_) == 0;
    }
    /* Into ERR (no-op when there already): flushes, then raises `ev` if `raise_ev`, then
     * LAST_WQE_REACHED with an SRQ. */
    void enter_error(bool raise_ev = false, AsyncEventType ev = AsyncEventType::QpFatal);
    void error_events(bool raise_ev, AsyncEventType ev);
    void raise(AsyncEventType t, const CqSink *cq = nullptr);
    void cq_overflow(const CqSink *cq);
    void check_sq_drained();
    void flush_queues();
    void complete_send(SendWqe &w, WcStatus st);
    void complete_recv(const RecvWqe &r, WcStatus st, WcOpcode op, uint32_t byte_len,
                       uint32_t flags, uint32_t imm);
    /* Fills every member of f (path, BTH, the rest zero). Into the caller's spec rather
     * than returned: `f = base_frame(...)` copied the ~200-byte spec per packet. */
    void base_frame(wire::FrameSpec &f, uint8_t opcode, uint32_t psn) const;
    /* A new path generation (wire_data_template.h): after anything base_frame bakes into
     * every frame of the QP but the TOS (the path, the P_Key, the destination QP) may
     * have changed, so that no port serves a DataFrame from headers learnt before. */
    void renew_path_gen();
    /* IP TOS of data frames: with DCQCN the DSCP of the path and the ECN bits of
     * ecn_mode; without, the path's TOS as it is (ACKs/NAKs always use the path's). */
    uint8_t data_tos() const {
        return cc_ ? static_cast<uint8_t>((path_.tos & 0xFC) | data_ecn_) : path_.tos;
    }

    /* rc_cc.cpp */
    void cc_on_ce(Time now);
    void cc_on_cnp(Time now);
    void send_cnp();
    /* After any Rp event: device counters and the pacer's rate. */
    void cc_after_rp(Time now);
    void cc_timer(Time now);
    /* Paced QP: may this data frame leave now? No: pace_until_ is set, false returned. */
    bool cc_pace_admit(uint32_t wire_bytes, Time now);
    void cc_sent(uint32_t wire_bytes, Time now);
    static uint32_t pace_bytes(const wire::FrameSpec &f);
    uint32_t mtu() const { return mtu_bytes_; }

    /* post_send's checks: the first that refuses wr (its total length in *len), without
     * building a message; post_send_refused words it (out of line: the posting path
     * carries no string). */
    enum class PostRefusal : uint8_t;
    /* The most inline data a WR may carry: the QP's max_inline_data, within the WQE's. */
    uint32_t inline_cap() const { return std::min(cfg_.cap.max_inline_data, kMaxInlineData); }
    PostRefusal check_post_send(const SendWr &wr, uint64_t *len) const;
    [[gnu::cold, gnu::noinline]] Status post_send_refused(PostRefusal why, const SendWr &wr,
                                                          uint64_t len) const;

    /* rc_requester.cpp */
    void requester_progress(Time now);
    bool requester_can_send() const;
    /* Checks the WQE's local keys; *host0: where its first SGE lies, when it has bytes. */
    bool start_wqe(SendWqe &w, uint8_t **host0);
    bool start_wqe_psns(SendWqe &w);
    /* host0: the first SGE's host address if start_wqe checked it in this same call. */
    TxPort::Straight send_first_straight(SendWqe &w, Time now, uint8_t *host0);
    TxPort::Straight send_straight(const SendWqe &w, uint8_t opcode, uint8_t *host0);
    bool send_next_packet(SendWqe &w, Time now);
    uint32_t straight_pace_bytes(const SendWqe &w, uint8_t opcode) const;
    void packet_sent(const SendWqe &w, uint32_t psn, bool ack_req, uint32_t chunk, bool done_wqe,
                     Time now);
    bool gather(const SendWqe &w, uint32_t off, uint32_t len, wire::FrameSpec::Seg *segs,
                uint32_t *nsegs) const;
    void arm_retransmit(Time now);
    void rewind_to(uint32_t psn);

    /* rc_completer.cpp */
    void completer_on_packet(const wire::ParsedPacket &p, Time now);
    void ack_through(uint32_t psn, Time now);
    void catch_up_with_una();
    void on_read_response(const wire::ParsedPacket &p, SendWqe &w, Time now);
    void on_atomic_ack(const wire::ParsedPacket &p, SendWqe &w, Time now);
    void requester_error(uint32_t idx, WcStatus st);
    void retry_or_fail(Time now);

    /* rc_responder.cpp: responder_on_packet runs the steps below in order */
    void responder_on_packet(const wire::ParsedPacket &p, Time now);
    Verdict check_pending_read(const wire::ParsedPacket &p) const;
    Verdict check_request(const wire::ParsedPacket &p, uint8_t **host);
    void count_request(const wire::OpcodeInfo &op);
    Verdict execute(const wire::ParsedPacket &p, uint8_t *host);
    /* The steps both paths run: P is a ParsedPacket or a SmallFrame. */
    template <class P> Verdict execute_send(const P &p, const wire::OpcodeInfo &op);
    template <class P> void execute_write(const P &p, const wire::OpcodeInfo &op, uint8_t *dst);
    void execute_read(const wire::ParsedPacket &p);
    void execute_atomic(const wire::ParsedPacket &p, uint8_t *host);
    void queue_response(const ReadResource &res);
    template <class P> void acknowledge(const P &p);
    void respond(const wire::ParsedPacket &p, const Verdict &v, Time now);
    void responder_duplicate(const wire::ParsedPacket &p, Time now);
    void responder_ahead(const wire::ParsedPacket &p, Time now);
    void responder_progress();
    bool send_ack(uint8_t syndrome, uint32_t psn);
    bool transmit_ack(uint8_t syndrome, uint32_t psn);
    void owe_ack(uint32_t psn);
    /* Duplicate limit: true when a duplicate answered at (`*done`, `*at`) may be answered
     * again at `now`, and then records `now`; answer_allowed with another interval (the
     * sequence NAK limit). */
    bool dup_answer_allowed(bool *done, Time *at, Time now) const {
        return answer_allowed(done, at, now, cfg_.tuning.dup_ack_interval_ns);
    }
    bool answer_allowed(bool *done, Time *at, Time now, uint64_t interval) const;
    void flush_owed_ack();
    /* READ/atomic responses queued and not all sent; inline for the flag, the common
     * answer, the walk of the resources out of line. */
    bool read_responses_pending() const {
        return resp_.rd_maybe_pending && read_responses_queued();
    }
    bool read_responses_queued() const;
    bool overlaps_pending_read(uint64_t va, uint64_t len) const;
    bool flush_read_responses();
    bool conflicts_with_pending_read(const wire::ParsedPacket &p) const;
    void nak_and_error(uint8_t syndrome, uint32_t psn, bool raise_ev = true);
    bool send_read_responses(ReadResource &r);
    template <class P> bool copy_to_recv(const P &p);
    template <uint8_t Opc>
    bool straight_request_ok(const wire::SmallFrame &f, uint8_t **host) const;
    template <uint8_t Opc> bool responder_straight(const wire::SmallFrame &f, Time now);
    ReadResource *alloc_read_resource();

    QpConfig cfg_;
    QpState state_ = QpState::Reset;
    QpAttr attr_;
    Path path_;
    uint64_t path_gen_ = 0; /* renew_path_gen() */
    uint32_t mtu_bytes_ = 1024;
    uint16_t pkey_ = wire::kDefaultPkey;
    /* The (source, destination) GIDs a packet of this QP's peer carries: the path's dgid,
     * then its sgid; set with the path. One 32-byte compare against the ParsedPacket's
     * src_gid/dst_gid (adjacent there too) per packet: from_peer(). */
    uint8_t peer_gids_[32] = {};
    /* The same as the IPv4 (source, destination) pair of a frame, as on the wire, when
     * both GIDs are IPv4-mapped (peer_v4_): the straight path's from_peer. */
    uint32_t peer_ip_pair_[2] = {};
    bool peer_v4_ = false;

    /* ---- requester (rc_requester.cpp): the send queue and what of it has been sent ---- */
    struct Requester {
        std::vector<SendWqe> sq;
        uint32_t sq_mask = 0;
        uint32_t sq_head = 0;     /* oldest WQE not yet completed (the completer retires it) */
        uint32_t sq_cur = 0;      /* WQE being transmitted */
        uint32_t sq_tail = 0;     /* next free slot */
        uint32_t cur_off = 0;     /* bytes of sq_cur already sent */
        uint32_t npsn = 0;        /* next PSN to send */
        uint32_t ackreq_psn = 0;  /* PSN of the last packet sent with AckReq */
        uint32_t sent_hi_psn = 0; /* one past the highest PSN ever sent (retransmit count) */
        uint32_t rd_atomic_inflight = 0;
        bool sqd_notify = false; /* SQD entered with en_sqd_async_notify, not drained yet */
    };
    /* ---- completer (rc_completer.cpp): acknowledgements, retries and their timers ---- */
    struct Completer {
        uint32_t una_psn = 0; /* oldest unacknowledged PSN */
        Time retrans_deadline = 0;
        Time rnr_deadline = 0; /* sending paused until then after an RNR NAK */
        uint8_t retry_left = 7;
        uint8_t rnr_retry_left = 7;
    };
    /* ---- responder (rc_responder.cpp): the receive queue, requests in, ACKs out ---- */
    struct Responder {
        explicit Responder(const QpConfig &cfg)
            : rq(cfg.srq ? 1 : cfg.cap.max_recv_wr, cfg.cap.max_recv_sge),
              rcv(cfg.srq ? cfg.srq : &rq) {}
        Responder(const Responder &) = delete; /* rcv may point at rq */
        Responder &operator=(const Responder &) = delete;

        RecvQueue rq;       /* the QP's own receive queue (unused with an SRQ) */
        RecvQueue *rcv;     /* where receives come from: &rq or the SRQ */
        RecvWqe cur_recv{}; /* the receive a multi-packet SEND is filling (taken at FIRST) */
        uint32_t epsn = 0;  /* expected request PSN */
        uint32_t msn = 0;
        uint32_t recv_off = 0; /* bytes placed into the head receive of a SEND in flight */
        bool in_send = false;
        bool in_write = false;
        bool nak_sent = false;       /* one PSN sequence error NAK per gap */
        uint32_t ahead_run = 0;      /* consecutive ahead PSNs since the last one in sequence */
        uint32_t ahead_next_psn = 0; /* the PSN that continues that run */
        /* A new request arrived while READ responses were still queued: it was dropped (to
         * keep responses in PSN order and memory effects in request order) and a PSN
         * sequence NAK will restart the requester from it as soon as they are out. */
        bool busy_dropped = false;
        bool comm_est = false; /* CommEst raised in this RTR */
        WriteCursor write{};   /* the WRITE in flight: where its next payload goes */
        uint32_t pkts_since_ack = 0;
        /* an ACK/NAK not sent yet: a coalesced ACK (sent when the QP is next served for TX)
         * or one TX had no room for; the newest supersedes older ones */
        bool ack_owed = false;
        uint8_t ack_owed_syndrome = 0;
        uint32_t ack_owed_psn = 0;
        /* the last duplicate re-ACK (QpTuning::dup_ack_interval_ns) */
        bool dup_acked = false;
        Time dup_ack_at = 0;
        /* the last PSN sequence error NAK for an ahead PSN (QpTuning::seq_nak_interval_ns) */
        bool seq_naked = false;
        Time seq_nak_at = 0;
        std::vector<ReadResource> rd_res;
        uint32_t rd_res_next = 0;
        /* Some rd_res entry may still owe responses. A hint, set wherever an entry becomes
         * pending and cleared by a scan that finds none: the per-packet has_tx_work() then
         * does not walk 16 cold entries on every QP (the cost that grew with the QP count). */
        mutable bool rd_maybe_pending = false;
    };
    /* rxe's split: each role's state apart; the QP-wide part (configuration, state,
     * attributes, path) above, DCQCN below. */
    Requester req_;
    Completer comp_;
    /* CQs this QP reported CqErr for (once each until RESET). */
    const CqSink *cq_err_raised_[2] = {nullptr, nullptr};
    Responder resp_;

    /* ---- DCQCN ---- */
    std::unique_ptr<QpCc> cc_; /* nullptr: no DCQCN */
    /* cc::ecn_bits(cc_->params.ecn_mode), kept here: every data frame needs it, and
     * reading it from *cc_ cost a cold line per frame with many QPs. */
    uint8_t data_ecn_ = 0;
    /* cc_->rp.limited() as of the last RP event: only then has the RP deadlines. */
    bool rp_limited_ = false;
    /* The pacer limits this QP (its rate is not 0): the one test a line-rate QP pays. */
    bool paced_ = false;
    /* Data is held by the pacer until then (0 = not held): has_tx_work() is false and
     * next_deadline() includes it, so the driver's timer wakes the QP. */
    Time pace_until_ = 0;
    uint32_t pace_wait_bytes_ = 0; /* the frame it waits for (re-timed on a rate change) */
    /* Time of the event being handled (on_packet/progress/on_timer): READ responses are
     * sent from paths that do not carry it. */
    Time now_ = 0;
};

static_assert(qp::TransportQp<Qp>);

/** Local ACK timeout in ns for the 5-bit verbs value (0 = infinite -> 0). */
Time ack_timeout_ns(uint8_t timeout);

} // namespace droce::rc
