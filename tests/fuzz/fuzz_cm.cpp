/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for the CM path of QP1: an input is either a whole frame (the seeds:
 * every frame of the vectors) or a bare MAD. A frame goes through parse_frame into a UD
 * QP1 (Q_Key, P_Key, GRH placement into a registered buffer, with guard bytes around it
 * that must not change); the MAD (the frame's payload, or the input itself) through
 * parse_cm_mad, and when accepted, build_cm_mad and parse again must agree; a REQ's
 * private data through the rdma_cm IP header parser. Then the input, cut into 256-byte
 * MADs, drives a CmManager that already holds an established passive connection and an
 * active one waiting for its REP (the first byte of each chunk may aim the MAD at one of
 * them by patching its comm IDs), with time advancing between MADs and every timer run
 * to the end: every MAD is counted exactly once (accepted or a named drop), everything the
 * machine sends parses, and its timers always run out (no endless retry). Any disagreement
 * aborts. */
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cm_conn.h"
#include "cm_mad.h"
#include "ud_qp.h"
#include "wire_packet.h"

using namespace droce;

namespace {

[[noreturn]] void fail(const char *why) {
    __builtin_printf("fuzz_cm: %s\n", why);
    std::abort();
}

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            fail(#c);                                                                              \
    } while (0)

struct NullPort : qp::TxPort {
    bool transmit(const wire::FrameSpec &) override { return true; }
};
struct CountCq : qp::CqSink {
    Wc last{};
    bool push(const Wc &wc) override {
        last = wc;
        return true;
    }
};

constexpr size_t kGuard = 64;
constexpr size_t kBuf = 40 + 256;

void check_mad(const uint8_t *p, size_t n) {
    cm::CmMad m{};
    if (cm::parse_cm_mad(p, n, m) != cm::MadError::Ok)
        return;
    uint8_t b[cm::kMadLen];
    CHECK(cm::build_cm_mad(m, b, sizeof b) == cm::kMadLen);
    cm::CmMad m2{};
    CHECK(cm::parse_cm_mad(b, sizeof b, m2) == cm::MadError::Ok);
    uint8_t b2[cm::kMadLen];
    CHECK(cm::build_cm_mad(m2, b2, sizeof b2) == cm::kMadLen);
    CHECK(std::memcmp(b, b2, sizeof b) == 0);
    if (m.hdr.attr_id == static_cast<uint16_t>(cm::CmAttr::Req)) {
        cm::IpCmHdr h;
        uint16_t ps, port;
        (void)cm::parse_ip_service_id(m.req.service_id, ps, port);
        if (cm::parse_ip_cm_hdr(m.req.private_data, cm::kReqPrivLen, h) == cm::IpCmError::Ok) {
            uint8_t hb[cm::kIpCmHdrLen];
            cm::encode(h, hb);
            /* Byte 1's low nibble is reserved: the parser ignores it, encode writes 0. */
            hb[1] = static_cast<uint8_t>(hb[1] | (m.req.private_data[1] & 0x0F));
            CHECK(std::memcmp(hb, m.req.private_data, cm::kIpCmHdrLen) == 0);
        }
    }
}

/* Everything the state machine sends must be a MAD the codec accepts. */
struct CheckSink : cm::MadSink {
    size_t sent = 0;
    bool send_mad(const cm::MadAddr &, const uint8_t *mad, size_t len) override {
        cm::CmMad m{};
        CHECK(len == cm::kMadLen);
        CHECK(cm::parse_cm_mad(mad, len, m) == cm::MadError::Ok);
        ++sent;
        return true;
    }
};
struct AppSink : cm::CmEventSink {
    cm::CmManager *cm = nullptr;
    uint64_t now = 0;
    uint8_t choice = 0;
    uint32_t last_request = 0;
    void on_cm_event(const cm::CmEvent &ev) override {
        if (ev.type != cm::CmEventType::ConnectRequest || !cm)
            return;
        last_request = ev.conn;
        /* The application's answer varies with the input: accept, reject or wait. */
        if (choice % 3 == 0) {
            cm::AcceptParams p;
            p.local_qpn = 0x40;
            cm->accept(ev.conn, p, now);
        } else if (choice % 3 == 1) {
            cm->reject(ev.conn, nullptr, 0, now);
        }
    }
};

void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; ++i)
        p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

uint64_t mad_total(const cm::CmManager &m) {
    using cm::CmCtr;
    return m.counter(CmCtr::rx_mad) + m.counter(CmCtr::drop_bad_length) +
           m.counter(CmCtr::drop_bad_base_version) + m.counter(CmCtr::drop_not_cm_class) +
           m.counter(CmCtr::drop_bad_class_version) + m.counter(CmCtr::drop_bad_method) +
           m.counter(CmCtr::drop_unknown_attribute) + m.counter(CmCtr::drop_bad_sidr_rep);
}

void drive_cm(const uint8_t *data, size_t size) {
    constexpr uint64_t kSid = 0x0000000001061C06ull;
    CheckSink out;
    AppSink app;
    cm::CmConfig cfg;
    cfg.max_conns = 4;
    cfg.local_ca_guid = 0xB0B0;
    cfg.cm_response_timeout = 10;
    cfg.packet_life_time = 8;
    cfg.max_cm_retries = 3;
    cm::CmManager m(cfg, out, app);
    app.cm = &m;
    cm::MadAddr peer;
    peer.gid[15] = 3;
    uint64_t now = 1000;
    app.now = now;
    CHECK(m.listen(kSid));
    /* An established passive connection: a REQ (accepted in the callback), its RTU. */
    cm::CmMad r{};
    r.hdr.attr_id = static_cast<uint16_t>(cm::CmAttr::Req);
    r.req.local_comm_id = 0x1111;
    r.req.service_id = kSid;
    r.req.local_ca_guid = 0xA0A0;
    r.req.local_qpn = 0x18;
    r.req.local_cm_response_timeout = 10;
    r.req.remote_cm_response_timeout = 10;
    r.req.max_cm_retries = 3;
    /* The path as the sender names it: from its own GID (a REQ naming another is refused). */
    std::memcpy(r.req.primary.local_gid, peer.gid, 16);
    uint8_t b[cm::kMadLen];
    CHECK(cm::build_cm_mad(r, b, sizeof b) == cm::kMadLen);
    m.on_mad(peer, b, sizeof b, now);
    const uint32_t passive = app.last_request;
    CHECK(m.state(passive) == cm::ConnState::RepSent);
    cm::CmMad u{};
    u.hdr.attr_id = static_cast<uint16_t>(cm::CmAttr::Rtu);
    u.rtu.local_comm_id = 0x1111;
    u.rtu.remote_comm_id = passive;
    CHECK(cm::build_cm_mad(u, b, sizeof b) == cm::kMadLen);
    m.on_mad(peer, b, sizeof b, now);
    CHECK(m.state(passive) == cm::ConnState::Established);
    /* An active connection waiting for its REP. */
    cm::ConnectParams cp;
    cp.service_id = kSid;
    cp.peer = peer;
    cp.local_qpn = 0x20;
    const uint32_t active = m.connect(cp, now);
    CHECK(active != 0);
    const uint32_t ids[2] = {passive, active};
    const uint64_t base = mad_total(m);

    /* The input as a sequence of MADs; the last chunk keeps its odd length (a
     * truncated MAD). Chunk byte 0 is the control byte, not MAD content. */
    size_t fed = 0;
    for (size_t off = 0; off < size; off += 1 + cm::kMadLen) {
        const uint8_t ctl = data[off];
        const size_t n = std::min(cm::kMadLen, size - off - 1);
        uint8_t mad[cm::kMadLen] = {};
        std::memcpy(mad, data + off + 1, n);
        if (n == cm::kMadLen && (ctl & 1)) {
            /* Aim at a live connection: its ID where every message but the REQ names
             * ours, the peer's where it names theirs. */
            put32(mad + cm::kMadHdrLen + 4, ids[(ctl >> 1) & 1]);
            if (ctl & 4)
                put32(mad + cm::kMadHdrLen, 0x1111);
        }
        app.choice = static_cast<uint8_t>(ctl >> 3);
        now += static_cast<uint64_t>(ctl >> 5) * 2'000'000; /* 0..14 ms: timers fire */
        app.now = now;
        m.on_time(now);
        m.on_mad(peer, mad, n, now);
        ++fed;
        CHECK(mad_total(m) == base + fed);
        CHECK(m.live_conns() <= 4);
    }
    /* Every timer runs out: retries are bounded, timewait ends. */
    for (int i = 0; i < 1000 && m.next_deadline() != UINT64_MAX; ++i) {
        now = std::max(now, m.next_deadline());
        app.now = now;
        m.on_time(now);
    }
    CHECK(m.next_deadline() == UINT64_MAX);
    /* What is left has no timer by design: established, or waiting for the app. */
    for (uint32_t id : ids) {
        const cm::ConnState st = m.state(id);
        CHECK(st == cm::ConnState::Idle || st == cm::ConnState::Established ||
              st == cm::ConnState::ReqRcvd || st == cm::ConnState::MraReqSent);
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    wire::ParsedPacket p{};
    if (wire::parse_frame(data, size, p, false) == wire::ParseResult::Ok) {
        static std::vector<uint8_t> mem(kGuard + kBuf + kGuard);
        std::memset(mem.data(), 0xA5, mem.size());
        mem::MrTable mrs(4);
        const uint32_t key = mrs.reg(1, mem.data() + kGuard, kBuf, kAccessLocalWrite)->key;
        NullPort port;
        CountCq cq;
        ud::QpConfig c;
        c.qpn = 1;
        c.pd = 1;
        c.port = &port;
        c.send_cq = &cq;
        c.recv_cq = &cq;
        c.mrs = &mrs;
        ud::Qp qp(c);
        QpAttr a{};
        a.qp_state = QpState::Init;
        a.qkey = ud::kGsiQkey;
        CHECK(qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey));
        a.qp_state = QpState::Rtr;
        CHECK(qp.modify(a, kQpState));
        RecvWr r;
        r.sg_list[0] = {reinterpret_cast<uint64_t>(mem.data() + kGuard), kBuf, key};
        r.num_sge = 1;
        CHECK(qp.post_recv(r));
        qp.on_packet(p, 0);
        for (size_t i = 0; i < kGuard; ++i)
            CHECK(mem[i] == 0xA5 && mem[kGuard + kBuf + i] == 0xA5);
        if (qp.counters().rx_packets)
            CHECK(cq.last.byte_len == 40 + p.payload_len);
        if (p.payload && p.bth.dest_qp == 1)
            check_mad(p.payload, p.payload_len);
    }
    check_mad(data, size);
    drive_cm(data, size);
    return 0;
}
