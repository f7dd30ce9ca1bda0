/* SPDX-License-Identifier: BSD-3-Clause */
/* Test harness for lib/cm's state machine: recording sinks, and two CmManagers joined by
 * an in-memory link that loses MADs deterministically (by attribute and occurrence) and
 * runs on a virtual clock, jumping to the next timer whenever nothing is in flight. */
#pragma once

#include <cstring>
#include <deque>
#include <functional>
#include <vector>

#include "cm_conn.h"
#include "cm_mad.h"

namespace droce::cm::test {

struct SentMad {
    MadAddr to;
    std::vector<uint8_t> bytes;
    CmMad decode() const {
        CmMad m{};
        parse_cm_mad(bytes.data(), bytes.size(), m);
        return m;
    }
    uint16_t attr() const { return decode().hdr.attr_id; }
};

struct RecordSink : MadSink {
    std::vector<SentMad> sent;
    bool refuse = false;
    bool send_mad(const MadAddr &to, const uint8_t *mad, size_t len) override {
        if (refuse)
            return false;
        sent.push_back(SentMad{to, std::vector<uint8_t>(mad, mad + len)});
        return true;
    }
};

struct LoggedEvent {
    CmEvent ev;
    std::vector<uint8_t> pd;
};

/* Records events; `on` runs after recording (an application's reaction). */
struct EventLog : CmEventSink {
    std::vector<LoggedEvent> events;
    std::function<void(const CmEvent &)> on;
    void on_cm_event(const CmEvent &ev) override {
        LoggedEvent l{ev, {}};
        if (ev.private_data)
            l.pd.assign(ev.private_data, ev.private_data + ev.private_data_len);
        l.ev.private_data = nullptr;
        events.push_back(l);
        if (on)
            on(ev);
    }
    size_t count(CmEventType t) const {
        size_t n = 0;
        for (const auto &e : events)
            n += e.ev.type == t;
        return n;
    }
    const LoggedEvent *first(CmEventType t) const {
        for (const auto &e : events)
            if (e.ev.type == t)
                return &e;
        return nullptr;
    }
};

inline MadAddr addr_v4(uint32_t ip) {
    MadAddr a;
    a.gid[10] = a.gid[11] = 0xFF;
    a.gid[12] = static_cast<uint8_t>(ip >> 24);
    a.gid[13] = static_cast<uint8_t>(ip >> 16);
    a.gid[14] = static_cast<uint8_t>(ip >> 8);
    a.gid[15] = static_cast<uint8_t>(ip);
    return a;
}

/* Small timeouts so that the virtual clock needs few steps: packet life 2^8 * 4 us,
 * response 2^10 * 4 us, 3 retries. */
inline CmConfig test_config(uint64_t guid, const MadAddr &self) {
    CmConfig c;
    c.max_conns = 8;
    c.local_ca_guid = guid;
    std::memcpy(c.local_gid, self.gid, 16);
    c.cm_response_timeout = 10;
    c.max_cm_retries = 3;
    c.packet_life_time = 8;
    c.mra_service_timeout = 14;
    c.comm_id_seed = static_cast<uint32_t>(guid);
    return c;
}

struct Node;

/* One direction's wire: queues what its node sends, loss decided at send time. */
struct LinkSink : MadSink {
    std::deque<std::vector<uint8_t>> q;
    /* (attr, nth occurrence of that attr on this direction, 0-based) -> lose it */
    std::function<bool(uint16_t, unsigned)> lose;
    unsigned seen[32] = {};
    unsigned lost = 0;
    bool send_mad(const MadAddr &, const uint8_t *mad, size_t len) override {
        CmMad m{};
        parse_cm_mad(mad, len, m);
        const unsigned n = seen[m.hdr.attr_id & 31]++;
        if (lose && lose(m.hdr.attr_id, n)) {
            ++lost;
            return true; /* lost on the wire: the sender cannot tell */
        }
        q.emplace_back(mad, mad + len);
        return true;
    }
};

struct Node {
    MadAddr self;
    LinkSink wire;
    EventLog log;
    CmManager cm;
    Node(uint64_t guid, uint32_t ip) : self(addr_v4(ip)), cm(test_config(guid, self), wire, log) {}
};

struct Link {
    Node a{0xA0A0A0A0A0A0A0A0ull, 0x0A4D0003}; /* active */
    Node b{0xB0B0B0B0B0B0B0B0ull, 0x0A4D0002}; /* passive */
    uint64_t now = 1'000'000;
    unsigned steps = 0;

    /* Delivers what is in flight, then jumps to the next timer; until nothing is left
     * to happen or max_steps. Returns false when it stopped on max_steps (a hang). */
    bool run(unsigned max_steps = 10'000) {
        for (; steps < max_steps; ++steps) {
            if (!a.wire.q.empty() || !b.wire.q.empty()) {
                deliver(a, b);
                deliver(b, a);
                continue;
            }
            const uint64_t d = std::min(a.cm.next_deadline(), b.cm.next_deadline());
            if (d == UINT64_MAX)
                return true;
            now = std::max(now, d);
            a.cm.on_time(now);
            b.cm.on_time(now);
        }
        return false;
    }
    /* Runs until `until` (virtual ns) at most, delivering and firing timers. */
    void run_until(uint64_t until) {
        for (; steps < 100'000; ++steps) {
            if (!a.wire.q.empty() || !b.wire.q.empty()) {
                deliver(a, b);
                deliver(b, a);
                continue;
            }
            const uint64_t d = std::min(a.cm.next_deadline(), b.cm.next_deadline());
            if (d > until) {
                now = std::max(now, until);
                return;
            }
            now = std::max(now, d);
            a.cm.on_time(now);
            b.cm.on_time(now);
        }
    }

  private:
    void deliver(Node &from, Node &to) {
        while (!from.wire.q.empty()) {
            std::vector<uint8_t> m = std::move(from.wire.q.front());
            from.wire.q.pop_front();
            to.cm.on_mad(from.self, m.data(), m.size(), now);
        }
    }
};

} // namespace droce::cm::test
