/* SPDX-License-Identifier: BSD-3-Clause */
/* An unreliable-datagram queue pair (IBTA 9.8.4, verbs IBV_QPT_UD). Sans-I/O like
 * lib/rc, on the base both share (lib/qp): packets in through on_packet(), frames out
 * through qp::TxPort, completions through qp::CqSink, time as an argument. No ACKs, no
 * retransmission: a send completes when its frame has been handed to the port; a receive with no
 * WQE posted is a counted drop (UD has no RNR). */
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "vocab_status.h"
#include "vocab_verbs.h"

#include "mem_mr.h"
#include "qp_env.h"
#include "qp_recv_queue.h"
#include "qp_transport.h"
#include "wire_packet.h"

namespace droce::ud {

using qp::Time;

/** The Q_Key of QP1 (GSI, IBTA 13.5.1): CM MADs carry it, QP1 accepts nothing else. */
inline constexpr uint32_t kGsiQkey = 0x80010000;
/** A WR Q_Key with this bit set means "send with the QP's own Q_Key" (IBTA 10.2.5,
 * C10-15: a consumer cannot send a controlled Q_Key that way). */
inline constexpr uint32_t kQkeyUseQp = 0x80000000;
/** The GRH area in front of a UD receive's payload (verbs: IBV_WC_GRH). */
inline constexpr uint32_t kGrhLen = 40;
/** BTH DestQP of a multicast packet. */
inline constexpr uint32_t kMulticastQpn = 0xFFFFFF;

/** An address handle (ibv_ah_attr for RoCEv2), resolved: the next hop's MAC is known.
 * IPv4 destinations are IPv4-mapped GIDs (::ffff:a.b.c.d). */
struct AddressHandle {
    wire::EthHdr eth{}; /* dst = next hop MAC, src = port MAC, optional VLAN */
    uint8_t sgid[16] = {};
    uint8_t dgid[16] = {};
    uint8_t traffic_class = 0; /* DSCP<<2 | ECN */
    uint8_t hop_limit = 64;
    uint32_t flow_label = 0; /* IPv6 only */
    bool rocev1 = false;     /* a RoCEv1 sgid: GRH framing (ethertype 0x8915), no IP/UDP */
};

/** True for a multicast GID: ff00::/8, or an IPv4-mapped 224.0.0.0/4. */
bool gid_is_multicast(const uint8_t gid[16]);
/** Checks an address handle (ibv_create_ah): EINVAL for an unusable one, EOPNOTSUPP for
 * a multicast destination (droce has no multicast groups). */
Status check_ah(const AddressHandle &ah);

/** One UD send WR: the verbs WR plus its wr.ud part (ah, remote_qpn, remote_qkey). */
struct UdSendWr {
    SendWr wr;
    const AddressHandle *ah = nullptr; /* copied at post: it may go away afterwards */
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0; /* kQkeyUseQp bit set: the QP's Q_Key */
};

#define DROCE_UD_COUNTERS(X)                                                                       \
    X(tx_packets)                                                                                  \
    X(tx_bytes)     /* payload bytes sent */                                                       \
    X(tx_port_busy) /* transmit() said no room: retried on a later progress() */                   \
    X(rx_packets)   /* delivered to a receive WQE */                                               \
    X(rx_bytes)                                                                                    \
    X(rx_qkey_mismatch) /* DETH Q_Key not the QP's: silently dropped */                            \
    X(rx_pkey_mismatch) /* BTH P_Key does not match the QP's */                                    \
    X(rx_bad_state)     /* QP not in RTR/RTS */                                                    \
    X(rx_bad_opcode)    /* not UD SEND_ONLY[_WITH_IMMEDIATE] */                                    \
    X(rx_multicast)     /* multicast QPN or destination GID: not supported */                      \
    X(rx_no_wqe)        /* receive queue empty */                                                  \
    X(rx_too_long)      /* GRH + payload larger than the head WQE: dropped, WQE kept */            \
    X(rx_over_mtu)      /* payload larger than the port's MTU: not a valid UD datagram */          \
    X(rx_bad_lkey)      /* a receive SGE no longer valid: LocProtErr completion */                 \
    X(post_mtu_refused) /* post_send of a message longer than the path MTU */                      \
    X(cq_overflow)

struct Counters {
#define DROCE_UD_FIELD(n) uint64_t n = 0;
    DROCE_UD_COUNTERS(DROCE_UD_FIELD)
#undef DROCE_UD_FIELD
    /** Calls f(name, value) for each counter. */
    template <class F> void for_each(F &&f) const {
#define DROCE_UD_VISIT(n) f(#n, n);
        DROCE_UD_COUNTERS(DROCE_UD_VISIT)
#undef DROCE_UD_VISIT
    }
};

/** Everything a UD QP is created with. Pointers must outlive the QP. */
struct QpConfig {
    uint32_t qpn = 0; /* 1 = QP1 (GSI): Q_Key fixed at kGsiQkey */
    uint32_t pd = 0;
    QpCap cap;
    bool sq_sig_all = false;
    qp::TxPort *port = nullptr;
    qp::CqSink *send_cq = nullptr;
    qp::CqSink *recv_cq = nullptr;
    const mem::MrTable *mrs = nullptr;
    Counters *counters = nullptr; /* nullptr: the QP's own */
    /* The port's active MTU in IB terms (UD has no path MTU attribute: IBTA 10.2.5, the
     * message must fit one packet of the port's MTU). */
    Mtu mtu = Mtu::Mtu1024;
    const uint16_t *pkey_table = nullptr; /* nullptr = {0xFFFF} */
    uint32_t pkey_table_len = 0;
};

/* Cache-line aligned: QPs of different workers are allocated next to each other, and a
 * line shared by the end of one and the start of the next would be written by both. */
class alignas(64) Qp {
  public:
    explicit Qp(const QpConfig &cfg);

    /* ---- verbs ---- */
    /** ibv_modify_qp with the UD rules of the libibverbs state table: RESET->INIT needs
     * kQpPkeyIndex|kQpPort|kQpQkey, INIT->RTR takes nothing more (kQpPkeyIndex|kQpQkey
     * optional), RTR->RTS needs kQpSqPsn; connected-QP attributes (kQpAv, kQpDestQpn,
     * kQpPathMtu, ...) are refused. Any state -> RESET or ERR. */
    Status modify(const QpAttr &attr, uint32_t mask);
    /** ibv_post_send for one UD WR (RTS only): SEND or SEND_WITH_IMM, one packet. */
    Status post_send(const UdSendWr &wr);
    /** ibv_post_recv (from RESET on). Each buffer must leave room for the 40-byte GRH. */
    Status post_recv(const RecvWr &wr);

    /* ---- driver ---- */
    /** A parsed packet whose BTH DestQP is this QP. */
    void on_packet(const wire::ParsedPacket &p, Time now);
    /* The fast parse reads RC frames only: nothing of UD's, on_packet counts them. */
    bool on_small_frame(const wire::SmallFrame &, Time) { return false; }
    /** Transmits queued sends (as many as the port takes). */
    void progress(Time now);
    bool has_tx_work() const { return sq_head_ != sq_tail_ && state_ == QpState::Rts; }
    /* The rest of qp::TransportQp, as the constants UD has: no ACKs to hold back, no
     * retransmission or RNR timer, no pacer; nothing worth prefetching ahead of a packet. */
    bool ack_only_tx_work() const { return false; }
    Time next_deadline() const { return 0; }
    void on_timer(Time) {}
    bool pacer_holding() const { return false; }
    void prefetch() const {}

    uint32_t qpn() const { return cfg_.qpn; }
    QpState state() const { return state_; }
    const QpAttr &attr() const { return attr_; }
    uint32_t qkey() const { return attr_.qkey; }
    uint16_t pkey() const { return pkey_; }
    uint32_t max_msg_size() const;
    uint32_t send_queue_depth() const { return sq_tail_ - sq_head_; }
    uint32_t recv_queue_depth() const { return rq_.depth(); }
    const Counters &counters() const { return *ctr_; }

  private:
    /* The most inline data a WR may carry: the QP's cap, at most what a WQE holds. */
    uint32_t inline_cap() const { return std::min(cfg_.cap.max_inline_data, kMaxInlineData); }

    struct SendWqe {
        SendWr wr;
        AddressHandle ah;
        uint32_t remote_qpn;
        uint32_t qkey; /* resolved at post */
        uint32_t length;
        bool signaled;
        uint8_t inline_data[kMaxInlineData]; /* kSendInline: the payload, copied at post */
    };

    bool transmit(SendWqe &w);
    void complete_send(const SendWqe &w, WcStatus st);
    bool push(qp::CqSink *cq, const Wc &wc);
    void to_error();

    QpConfig cfg_;
    Counters own_ctr_;
    Counters *ctr_;
    QpState state_ = QpState::Reset;
    QpAttr attr_{};
    uint16_t pkey_ = wire::kDefaultPkey;
    uint32_t psn_ = 0;
    uint16_t ip_id_ = 0;
    uint16_t sport_;
    std::vector<SendWqe> sq_;
    uint32_t sq_mask_ = 0;
    uint32_t sq_head_ = 0;
    uint32_t sq_tail_ = 0;
    qp::RecvQueue rq_;
};

static_assert(qp::TransportQp<Qp>);

} // namespace droce::ud
