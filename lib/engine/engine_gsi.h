/* SPDX-License-Identifier: BSD-3-Clause */
/* QP1, the General Services Interface (IBTA 13.5), as the engine offers it to a CM layer.
 *
 * Connection management speaks MADs: 256-byte datagrams sent on UD to QP1 of the peer
 * with Q_Key 0x80010000 and the default P_Key 0xffff. The engine binds a UD QP to QPN 1
 * (Dev::create_ud_qp with fixed_qpn 1) and wraps it here in the smallest interface a
 * sans-I/O CM state machine (lib/cm) needs:
 *
 *     auto gsi = Gsi::open(rt, dev);          // QP1 of the device, in RTS
 *     gsi->send(peer_ah_attr, 1, mad, 256);    // a MAD to the peer's QP1
 *     MadIn in[8];
 *     int n = gsi->poll(in, 8);                // MADs received, with who sent them
 *
 * Glue for the CM: feed every MadIn to the state machine with its source (src_gid,
 * src_qp, pkey); send what it emits with send(), addressing the peer as the MAD came
 * (an AhAttr whose dgid is MadIn::src_gid, remote QPN MadIn::src_qp). Timers are the CM's
 * own (its retries are control-plane, milliseconds).
 *
 * Threading: poll() and send() belong to one control thread (the CM's). They work in
 * both modes: the QP lives on its worker like any other (QPN 1 % workers); sends and
 * receive re-posts reach it through Runtime::exec_on (a mailbox round trip in worker
 * mode, inline in embedded mode: CM traffic is a few MADs per connection, so the data
 * path's lock-free rings are not needed here), completions come back through CQ rings.
 * In embedded mode the application must keep calling Engine::poll() for MADs to move.
 *
 * Drops are counted by the UD QP (ud_* counters: a wrong Q_Key, no receive buffer,
 * a datagram bigger than the port's MTU, or bigger than a slot: ud_rx_too_long, the
 * slot stays posted and QP1 up); a MAD whose content is malformed is the CM's to
 * count. */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <droce/droce.h>

#include "engine.h"

namespace droce::engine {

/** Bytes of a MAD (IBTA 13.4.2): what QP1 sends and receives. */
inline constexpr uint32_t kMadLen = 256;
/** The PD QP1's buffers are registered under (no application PD has this id). */
inline constexpr uint32_t kGsiPd = 0xFFFFFFF0u;

/** One received MAD and where it came from. */
struct MadIn {
    uint8_t data[kMadLen];
    uint32_t len = 0;    /* payload bytes (a MAD: 256) */
    Gid src_gid{};       /* the sender's GID (IPv4-mapped for RoCEv2 over IPv4), from the GRH */
    uint32_t src_qp = 0; /* the sender's QP (1 for a CM peer) */
    uint8_t traffic_class = 0;
    uint8_t hop_limit = 0;
};

class Gsi {
  public:
    /** Binds QP1 of dev (EBUSY if already bound), registers its buffers, posts `slots`
     * receive buffers and brings it to RTS. */
    static Result<std::unique_ptr<Gsi>> open(Runtime &rt, Dev &dev, uint32_t slots = 64);
    ~Gsi();
    Gsi(const Gsi &) = delete;
    Gsi &operator=(const Gsi &) = delete;

    /** Sends one MAD (len <= kMadLen) to remote_qpn at `to` (ARP on first use; the
     * neighbour table caches it) with the GSI Q_Key. EAGAIN when every send slot is
     * still in flight. */
    Status send(const AhAttr &to, uint32_t remote_qpn, const uint8_t *mad, uint32_t len);
    /** Moves up to max received MADs into out and re-posts their buffers. */
    int poll(MadIn *out, int max);
    /** Sends completed in error (the QP's own counters say why). */
    uint64_t send_errors() const { return send_errors_; }
    uint32_t qpn() const { return 1; }

  private:
    Gsi(Runtime &rt, Dev &dev) : rt_(rt), dev_(dev) {}
    Status post_recv_slot(uint32_t slot);
    void reap_sends();

    static constexpr uint32_t kSlot = ud::kGrhLen + kMadLen; /* receive: GRH, then the MAD */
    Runtime &rt_;
    Dev &dev_;
    QpCtx *q_ = nullptr;
    std::unique_ptr<CqCtx> scq_, rcq_;
    std::vector<uint8_t> buf_; /* recv slots, then send slots */
    uint32_t lkey_ = 0;
    bool mr_ = false;
    uint32_t nrecv_ = 0, nsend_ = 0;
    uint32_t send_next_ = 0; /* next send slot (round robin) */
    uint32_t send_out_ = 0;  /* sends not completed yet */
    uint64_t send_errors_ = 0;
};

} // namespace droce::engine
