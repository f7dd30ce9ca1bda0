/* SPDX-License-Identifier: BSD-3-Clause */
/* The poll gate: the pollers of ports whose PMD runs its control channel on the EAL's
 * interrupt thread (Caps::control_on_intr_thread, memif) take turns with that thread.
 *
 * DPDK 22.11's memif handles a peer's disconnect on the interrupt thread and unmaps the
 * shared regions there, with no quiescence against a poller inside rte_eth_rx_burst /
 * rte_eth_tx_burst on another thread: a peer that leaves (exits, is killed, stops its port)
 * at the wrong microsecond crashes the process still polling. The gate makes that
 * impossible from outside the PMD:
 *
 *   - while any gated port is open, the interrupt thread is kept in a callback of the
 *     gate's (the keeper, on an eventfd of ours), and pollers poll only while the keeper
 *     holds it: the gate is open;
 *   - every 20 ms (1 ms while a gated port's link is down, so a handshake's messages are
 *     not slowed) the keeper closes the gate, waits until every poller is
 *     between bursts (parked or offline), and lets the thread go: memif's callbacks, other
 *     alarms and interrupts run then, with no poller inside a burst, and the keeper's next
 *     turn (its eventfd, written as it left, so taken in the thread's next epoll batch with
 *     whatever else is ready) opens the gate again.
 *
 * A poller costs one load per poll iteration of a line written twice per turn. A thread
 * that polls only now and then (an application polling an embedded engine, a post that
 * transmits inline) is online only for that section (PollSection). A poller that blocks
 * (waits for the interrupt thread, parks for a control call) goes offline first:
 * with_intr_thread_held does so for the calling thread by itself. */
#pragma once

#include <atomic>
#include <cstdint>

namespace droce::drivers {

/** One poller thread's state, alone on its cache line: written by its thread, read by the
 * keeper while it closes the gate. */
struct alignas(64) PollerSlot {
    std::atomic<uint32_t> state{0}; /* kFree, kOnline (may be in a burst), kOffline */
    std::atomic<uint64_t> parks{0}; /* times this poller waited at a closed gate (its own) */
    int tid = 0;                    /* the poller's thread (logs) */
};

/** What the gate did, process-wide (tests, counters). */
struct PollGateStats {
    uint64_t turns = 0;        /* times the gate closed to let the interrupt thread run */
    uint64_t ack_timeouts = 0; /* closes that gave up waiting for a poller (1 s; logged) */
    uint64_t parks = 0;        /* waits at a closed gate, over every poller that left or is live */
    uint32_t pollers = 0;      /* slots in use */
    uint32_t ports = 0;        /* gated ports open */
};

namespace gate_detail {
/* Read once per poll iteration by every poller: nothing else on its line. */
struct alignas(64) Closed {
    std::atomic<uint32_t> v{0};
};
extern Closed g_closed;
extern std::atomic<uint32_t> g_ports;
void park(PollerSlot *s);
} // namespace gate_detail

/** A port whose pollers must take turns with the interrupt thread: the first one starts
 * the keeper. remove before the port stops for good (its link is then no longer read).
 * With DROCE_POLL_GATE=off in the environment, add does nothing (A/B runs; logged). */
void poll_gate_add_port(uint16_t port);
void poll_gate_remove_port(uint16_t port);
/** Whether any gated port is open (one relaxed load). */
inline bool poll_gate_active() { return gate_detail::g_ports.load(std::memory_order_relaxed) != 0; }

/** The calling thread becomes a poller: a slot, offline. nullptr if all slots are taken
 * (then the thread must not poll a gated port; logged). */
PollerSlot *poll_gate_join();
/** Gives the slot back (offline first). The thread's last use of it. */
void poll_gate_leave(PollerSlot *s);
/** Online: from here on the thread may be inside a burst until it passes or goes offline.
 * Waits while the gate is closed. */
void poll_gate_online(PollerSlot *s);
/** Offline: the thread promises no burst until online again. */
void poll_gate_offline(PollerSlot *s);

/** Once per poll iteration of an online poller, before its bursts: parks while the gate
 * is closed. */
inline void poll_gate_pass(PollerSlot *s) {
    if (gate_detail::g_closed.v.load(std::memory_order_acquire) != 0) [[unlikely]]
        gate_detail::park(s);
}

/** The slot of the calling thread (joined by poll_gate_join), or nullptr. */
PollerSlot *poll_gate_thread_slot();

/** A section of bursts on a thread that is not a steady poller: online for its scope,
 * then back to how it was. Nothing when no gated port is open. */
class PollSection {
  public:
    PollSection();
    ~PollSection();
    PollSection(const PollSection &) = delete;
    PollSection &operator=(const PollSection &) = delete;

  private:
    PollerSlot *slot_ = nullptr;
    bool was_online_ = false;
};

/** The calling thread offline for a scope (a wait on another thread that may need the
 * interrupt thread, or a park), then back to how it was. */
class PollOffline {
  public:
    PollOffline();
    ~PollOffline();
    PollOffline(const PollOffline &) = delete;
    PollOffline &operator=(const PollOffline &) = delete;

  private:
    PollerSlot *slot_ = nullptr;
};

PollGateStats poll_gate_stats();

} // namespace droce::drivers
