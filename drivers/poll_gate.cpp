/* SPDX-License-Identifier: BSD-3-Clause */
/* The poll gate (poll_gate.h): the keeper on the EAL's interrupt thread, the
 * pollers' slots, and the turn between them. */
/* rte_intr_instance_alloc and its setters: experimental in 22.11, and the only way to give
 * the interrupt thread an fd of our own. */
#define ALLOW_EXPERIMENTAL_API 1

#include "poll_gate.h"

#include <rte_ethdev.h>
#include <rte_interrupts.h>
#include <rte_pause.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

namespace droce::drivers {

namespace gate_detail {
Closed g_closed;
std::atomic<uint32_t> g_ports{0};
} // namespace gate_detail

namespace {

using gate_detail::g_closed;
using gate_detail::g_ports;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kFree = 0, kOnline = 1, kOffline = 2;
constexpr unsigned kMaxPollers = 256;
/* How long pollers run between two turns of the interrupt thread. A turn parks them for
 * the thread's pending work plus an alarm's round trip (bench/README.md has the cost);
 * other alarms (a link watch) and memif's messages wait up to this long. */
constexpr auto kHold = std::chrono::milliseconds(20);
/* While a gated port's link is down its handshake is under way (memif: one message per
 * turn each way), and that port carries nothing: turn more often. */
constexpr auto kHoldLinkDown = std::chrono::milliseconds(1);
/* Waits longer than a few hundred pauses sleep: on a machine with fewer cores than busy
 * threads the interrupt thread (or a poller) needs the CPU of the one waiting, and only a
 * CPU that goes idle makes the scheduler move it there at once (a yield does not). */
constexpr unsigned kSpins = 256;
constexpr auto kNap = std::chrono::microseconds(10);
/* A poller that does not reach a pass for this long is stuck in something else: go on
 * without it (counted and logged) rather than stop the interrupt thread for good. */
constexpr auto kAckLimit = std::chrono::seconds(1);

struct Gate {
    PollerSlot slots[kMaxPollers];
    std::atomic<unsigned> used{0}; /* slots [0, used) have been handed out */
    std::mutex mu;                 /* ports, slot hand-out, keeper arming */
    std::vector<uint16_t> ports;
    bool keeper_armed = false;
    /* The keeper's turns: an eventfd the interrupt thread watches, written to ask for the
     * next turn (not an alarm: the EAL runs every expired alarm in one go, so a keeper
     * that re-armed itself at once would run again before the thread's epoll saw memif's
     * sockets; an fd is taken in the same epoll batch as they are). */
    int efd = -1;
    rte_intr_handle *ih = nullptr;
    std::atomic<uint64_t> turns{0}, ack_timeouts{0}, parks_retired{0};
};

/* Never destroyed: the keeper may still be in its turn on the interrupt thread while the
 * process runs its static destructors. */
Gate &gate() {
    static Gate *g = new Gate;
    return *g;
}

/* The calling thread's slot; given back when the thread ends. */
struct ThreadSlot {
    PollerSlot *s = nullptr;
    ~ThreadSlot() {
        if (s != nullptr)
            poll_gate_leave(s);
    }
};
thread_local ThreadSlot t_slot;

bool any_port_down(Gate &g) {
    std::lock_guard<std::mutex> lk(g.mu);
    for (const uint16_t p : g.ports) {
        rte_eth_link l{};
        if (rte_eth_link_get_nowait(p, &l) == 0 && l.link_status == RTE_ETH_LINK_DOWN)
            return true;
    }
    return false;
}

/* Closes the gate and waits until no poller may be inside a burst. */
void close_and_wait(Gate &g) {
    g_closed.v.store(1, std::memory_order_seq_cst);
    g.turns.fetch_add(1, std::memory_order_relaxed);
    const auto deadline = Clock::now() + kAckLimit;
    const unsigned n = g.used.load(std::memory_order_acquire);
    for (unsigned i = 0; i < n; ++i) {
        PollerSlot &s = g.slots[i];
        unsigned spins = 0;
        while (s.state.load(std::memory_order_seq_cst) == kOnline) {
            if (++spins < kSpins) {
                rte_pause();
                continue;
            }
            if (Clock::now() > deadline) {
                g.ack_timeouts.fetch_add(1, std::memory_order_relaxed);
                spdlog::warn("poll gate: poller {} (thread {}) did not pass in {} ms; the "
                             "interrupt thread runs without it",
                             i, s.tid, std::chrono::milliseconds(kAckLimit).count());
                break;
            }
            std::this_thread::sleep_for(kNap);
        }
    }
}

/* Asks the interrupt thread for a turn of the keeper. */
bool ring(Gate &g) {
    const uint64_t one = 1;
    return write(g.efd, &one, sizeof one) == static_cast<ssize_t>(sizeof one);
}

void keeper(void *) {
    Gate &g = gate();
    uint64_t v;
    while (read(g.efd, &v, sizeof v) > 0) {
    }
    {
        std::lock_guard<std::mutex> lk(g.mu);
        if (g.ports.empty()) {
            /* The last gated port closed: the thread is free again, pollers run on. */
            g.keeper_armed = false;
            g_closed.v.store(0, std::memory_order_release);
            return;
        }
    }
    g_closed.v.store(0, std::memory_order_release); /* open: pollers run while we hold */
    std::this_thread::sleep_for(any_port_down(g) ? std::chrono::microseconds(kHoldLinkDown)
                                                 : std::chrono::microseconds(kHold));
    close_and_wait(g);
    /* The next turn once the thread has run what its epoll holds now. */
    if (!ring(g)) {
        std::lock_guard<std::mutex> lk(g.mu);
        g.keeper_armed = false;
        g_closed.v.store(0, std::memory_order_release);
        spdlog::error("poll gate: eventfd write failed: pollers of gated ports are no longer "
                      "kept apart from the interrupt thread");
    }
}

/* The eventfd and its callback on the interrupt thread, once. Under g.mu. */
bool keeper_install(Gate &g) {
    if (g.ih != nullptr)
        return true;
    g.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (g.efd < 0)
        return false;
    /* Private (malloc) memory: the interrupt thread keeps watching it after rte_eal_cleanup
     * has let the EAL's own memory go. */
    g.ih = rte_intr_instance_alloc(RTE_INTR_INSTANCE_F_PRIVATE);
    if (g.ih == nullptr || rte_intr_fd_set(g.ih, g.efd) != 0 ||
        rte_intr_type_set(g.ih, RTE_INTR_HANDLE_EXT) != 0 ||
        rte_intr_callback_register(g.ih, keeper, nullptr) != 0) {
        if (g.ih != nullptr)
            rte_intr_instance_free(g.ih);
        g.ih = nullptr;
        close(g.efd);
        g.efd = -1;
        return false;
    }
    return true;
}

} // namespace

namespace gate_detail {
void park(PollerSlot *s) {
    do {
        s->state.store(kOffline, std::memory_order_seq_cst);
        s->parks.store(s->parks.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        unsigned spins = 0;
        while (g_closed.v.load(std::memory_order_acquire) != 0) {
            /* The turn is short; past that, let the interrupt thread have this CPU. */
            if (++spins < kSpins)
                rte_pause();
            else
                std::this_thread::sleep_for(kNap);
        }
        s->state.store(kOnline, std::memory_order_seq_cst);
    } while (g_closed.v.load(std::memory_order_seq_cst) != 0);
}
} // namespace gate_detail

/* DROCE_POLL_GATE=off: no port is gated (A/B measurements of the gate's cost; a process
 * so run is open to the crash the gate prevents, and says so). */
bool gate_disabled() {
    static const bool off = [] {
        const char *e = std::getenv("DROCE_POLL_GATE");
        const bool o = e != nullptr && std::strcmp(e, "off") == 0;
        if (o)
            spdlog::warn("poll gate off (DROCE_POLL_GATE=off): a memif peer that leaves can "
                         "crash this process");
        return o;
    }();
    return off;
}

void poll_gate_add_port(uint16_t port) {
    if (gate_disabled())
        return;
    Gate &g = gate();
    std::lock_guard<std::mutex> lk(g.mu);
    if (std::find(g.ports.begin(), g.ports.end(), port) != g.ports.end())
        return;
    g.ports.push_back(port);
    g_ports.store(static_cast<uint32_t>(g.ports.size()), std::memory_order_relaxed);
    if (g.keeper_armed)
        return;
    /* Closed until the keeper holds the thread: the thread may be in a callback now. */
    g_closed.v.store(1, std::memory_order_seq_cst);
    if (keeper_install(g) && ring(g)) {
        g.keeper_armed = true;
    } else {
        g_closed.v.store(0, std::memory_order_release);
        spdlog::error("poll gate: no keeper on the interrupt thread: port {} is polled "
                      "beside it",
                      port);
    }
}

void poll_gate_remove_port(uint16_t port) {
    Gate &g = gate();
    std::lock_guard<std::mutex> lk(g.mu);
    auto it = std::find(g.ports.begin(), g.ports.end(), port);
    if (it == g.ports.end())
        return;
    g.ports.erase(it);
    g_ports.store(static_cast<uint32_t>(g.ports.size()), std::memory_order_relaxed);
}

PollerSlot *poll_gate_join() {
    if (t_slot.s != nullptr)
        return t_slot.s;
    Gate &g = gate();
    std::lock_guard<std::mutex> lk(g.mu);
    const unsigned used = g.used.load(std::memory_order_relaxed);
    for (unsigned i = 0; i < kMaxPollers; ++i) {
        PollerSlot &s = g.slots[i];
        if (s.state.load(std::memory_order_relaxed) != kFree)
            continue;
        s.parks.store(0, std::memory_order_relaxed);
        s.tid = static_cast<int>(gettid());
        s.state.store(kOffline, std::memory_order_release);
        if (i >= used)
            g.used.store(i + 1, std::memory_order_release);
        t_slot.s = &s;
        return &s;
    }
    spdlog::error("poll gate: all {} poller slots taken", kMaxPollers);
    return nullptr;
}

void poll_gate_leave(PollerSlot *s) {
    if (s == nullptr)
        return;
    Gate &g = gate();
    s->state.store(kOffline, std::memory_order_release);
    std::lock_guard<std::mutex> lk(g.mu);
    g.parks_retired.fetch_add(s->parks.load(std::memory_order_relaxed), std::memory_order_relaxed);
    s->parks.store(0, std::memory_order_relaxed);
    s->state.store(kFree, std::memory_order_release);
    if (t_slot.s == s)
        t_slot.s = nullptr;
}

void poll_gate_online(PollerSlot *s) {
    s->state.store(kOnline, std::memory_order_seq_cst);
    if (g_closed.v.load(std::memory_order_seq_cst) != 0)
        gate_detail::park(s);
}

void poll_gate_offline(PollerSlot *s) { s->state.store(kOffline, std::memory_order_release); }

PollerSlot *poll_gate_thread_slot() { return t_slot.s; }

PollSection::PollSection() {
    if (!poll_gate_active())
        return;
    slot_ = poll_gate_join();
    if (slot_ == nullptr)
        return;
    was_online_ = slot_->state.load(std::memory_order_relaxed) == kOnline;
    if (was_online_)
        poll_gate_pass(slot_);
    else
        poll_gate_online(slot_);
}

PollSection::~PollSection() {
    if (slot_ != nullptr && !was_online_)
        poll_gate_offline(slot_);
}

PollOffline::PollOffline() {
    PollerSlot *s = t_slot.s;
    if (s != nullptr && s->state.load(std::memory_order_relaxed) == kOnline) {
        slot_ = s;
        poll_gate_offline(s);
    }
}

PollOffline::~PollOffline() {
    if (slot_ != nullptr)
        poll_gate_online(slot_);
}

PollGateStats poll_gate_stats() {
    Gate &g = gate();
    std::lock_guard<std::mutex> lk(g.mu);
    PollGateStats st;
    st.turns = g.turns.load(std::memory_order_relaxed);
    st.ack_timeouts = g.ack_timeouts.load(std::memory_order_relaxed);
    st.parks = g.parks_retired.load(std::memory_order_relaxed);
    const unsigned n = g.used.load(std::memory_order_acquire);
    for (unsigned i = 0; i < n; ++i)
        if (g.slots[i].state.load(std::memory_order_relaxed) != kFree) {
            ++st.pollers;
            st.parks += g.slots[i].parks.load(std::memory_order_relaxed);
        }
    st.ports = static_cast<uint32_t>(g.ports.size());
    return st;
}

} // namespace droce::drivers
