/* SPDX-License-Identifier: BSD-3-Clause */
/* A program of the installed headers only, linked to libdroce.so only (no static piece):
 * it names every function the headers declare and the library defines, so that its link
 * fails when lib/droce_version.map hides one (test_exports.sh checks the other way: that
 * nothing beyond them is exported). What needs no EAL also runs: an rping-like CM session
 * between two CmChannels, a QueuePair subclass (QueuePair's vtable and its list posts
 * come from the library), the *_str functions.
 *
 *   api_probe           runs the checks, prints "api_probe: OK" */
#include <droce/cm.h>
#include <droce/cm_device.h>
#include <droce/droce.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <typeinfo>
#include <vector>

namespace {

int fails = 0;

void check(bool ok, const char *what) {
    if (!ok) {
        std::printf("FAIL: %s\n", what);
        ++fails;
    }
}

/* Two channels on one in-memory QP1 link. */
struct Side : droce::CmQp1Transport, droce::CmQpHook {
    uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    std::deque<std::vector<uint8_t>> out;
    int ready = 0;
    droce::CmChannel ch;
    explicit Side(uint32_t ip) : ch(config(ip), *this, this) {
        for (int i = 0; i < 4; ++i)
            gid[12 + i] = static_cast<uint8_t>(ip >> (24 - 8 * i));
    }
    static droce::CmChannelConfig config(uint32_t ip) {
        droce::CmChannelConfig c;
        c.local_ipv4 = ip;
        c.ca_guid = ip;
        return c;
    }
    bool send_mad(const uint8_t *, const uint8_t *mad, size_t len) override {
        out.emplace_back(mad, mad + len);
        return true;
    }
    void ready_qp(uint32_t, const droce::CmQpParams &) override { ++ready; }
    droce::CmEventKind next(droce::CmEventInfo &ev) {
        return ch.poll_event(ev) ? ev.kind : droce::CmEventKind::TimewaitExit;
    }
};

void pump(Side &a, Side &b, uint64_t now) {
    while (!a.out.empty() || !b.out.empty())
        for (Side *s : {&a, &b})
            for (Side *d = s == &a ? &b : &a; !s->out.empty(); s->out.pop_front())
                d->ch.on_mad(s->gid, s->out.front().data(), s->out.front().size(), now);
}

void cm_session() {
    Side srv(0x0A4D0002), cli(0x0A4D0003);
    uint64_t now = 1000;
    check(srv.ch.listen(7174), "CmChannel::listen");
    droce::CmConnectParam cp;
    cp.qpn = 0x18;
    const uint32_t cid = cli.ch.connect(0x0A4D0002, 7174, cp, now);
    check(cid != 0, "CmChannel::connect");
    const uint8_t ip6[16] = {0xfd};
    check(cli.ch.connect6(ip6, 7174, cp, now) == 0, "CmChannel::connect6 without local_ipv6");
    pump(cli, srv, now);
    droce::CmEventInfo ev;
    check(srv.next(ev) == droce::CmEventKind::ConnectRequest, "ConnectRequest");
    droce::CmAcceptParam ap;
    ap.qpn = 0x19;
    check(srv.ch.accept(ev.id, ap, now), "CmChannel::accept");
    check(!srv.ch.reject(ev.id + 100, nullptr, 0, now), "CmChannel::reject of no connection");
    pump(cli, srv, now);
    check(cli.next(ev) == droce::CmEventKind::Established && srv.ready == 1 && cli.ready == 1,
          "Established, both QP hooks called");
    check(!cli.ch.notify_comm_est(cid + 100, now), "CmChannel::notify_comm_est of no connection");
    check(cli.ch.disconnect(cid, now), "CmChannel::disconnect");
    pump(cli, srv, now);
    check(srv.ch.next_deadline() != 0, "CmChannel::next_deadline");
    srv.ch.on_time(now + 1);
    check(srv.ch.unlisten(7174), "CmChannel::unlisten");
    const char *name = nullptr;
    uint64_t value = 0;
    check(srv.ch.counter(0, name, value) && name != nullptr, "CmChannel::counter");
    check(std::strcmp(droce::cm_event_kind_name(droce::CmEventKind::Established), "") != 0,
          "cm_event_kind_name");
}

/* The UDP port space: SIDR_REQ, accepted, then one rejected. */
void sidr_session() {
    Side srv(0x0A4D0002), cli(0x0A4D0003);
    uint64_t now = 1000;
    check(srv.ch.listen_ud(7174), "CmChannel::listen_ud");
    droce::CmSidrParam sp;
    check(cli.ch.resolve_ud(0x0A4D0002, 7174, sp, now) != 0, "CmChannel::resolve_ud");
    pump(cli, srv, now);
    droce::CmEventInfo ev;
    check(srv.next(ev) == droce::CmEventKind::SidrRequest, "SidrRequest");
    check(srv.ch.sidr_accept(ev.id, 0x20, droce::kRdmaUdpQkey, nullptr, 0, now),
          "CmChannel::sidr_accept");
    pump(cli, srv, now);
    check(cli.next(ev) == droce::CmEventKind::SidrResolved, "SidrResolved");
    check(cli.ch.resolve_ud(0x0A4D0002, 7174, sp, now) != 0, "a second resolve_ud");
    pump(cli, srv, now);
    check(srv.next(ev) == droce::CmEventKind::SidrRequest &&
              srv.ch.sidr_reject(ev.id, nullptr, 0, now),
          "CmChannel::sidr_reject");
    check(srv.ch.unlisten_ud(7174), "CmChannel::unlisten_ud");
}

/* A mock QP as a program's test would write: the list posts are the library's. */
struct MockQp : droce::QueuePair {
    int sends = 0, recvs = 0;
    uint32_t qp_num() const override { return 0x11; }
    droce::Status modify(const droce::QpAttr &, uint32_t) override { return {}; }
    droce::Status query(droce::QpAttr &) override { return {}; }
    droce::Status post_send(const droce::SendWr &) override {
        ++sends;
        return {};
    }
    droce::Status post_recv(const droce::RecvWr &) override {
        ++recvs;
        return {};
    }
    using droce::QueuePair::post_recv;
    using droce::QueuePair::post_send;
    droce::Status set_dcqcn(const droce::DcqcnParams &) override { return {}; }
    droce::Status disable_dcqcn() override { return {}; }
    droce::Status query_dcqcn(droce::DcqcnState &) override { return {}; }
};

void queue_pair() {
    MockQp qp;
    droce::SendWr s[3];
    droce::RecvWr r[2];
    uint32_t bad = 0;
    droce::QueuePair &base = qp;
    check(base.post_send(s, 3, &bad).is_ok() && bad == 3 && qp.sends == 3,
          "QueuePair::post_send(list)");
    check(base.post_recv(r, 2, &bad).is_ok() && bad == 2 && qp.recvs == 2,
          "QueuePair::post_recv(list)");
    check(dynamic_cast<MockQp *>(&base) == &qp, "dynamic_cast from QueuePair");
    check(typeid(base) == typeid(MockQp), "typeid of a QueuePair subclass");
}

/* Every other function of the API; called only with an impossible argc, to be linked. */
int link_only(int argc, char **argv) {
    auto e = droce::Engine::create(argc, argv, nullptr);
    auto a = droce::Engine::attach();
    auto d = (*e)->open_device({});
    auto cm = droce::CmDevice::open(**e, **d);
    auto b = droce::alloc_buf(**d, 4096);
    const bool zc = droce::buf_zero_copy(*b, 4096);
    droce::free_buf(*b);
    return zc + a.is_ok() + cm.is_ok();
}

} // namespace

int main(int argc, char **argv) {
    if (argc > 99)
        return link_only(argc, argv);
    check(std::strcmp(droce::wc_status_str(droce::WcStatus::Success), "success") == 0,
          "wc_status_str");
    check(std::strcmp(droce::qp_state_str(droce::QpState::Rts), "RTS") == 0, "qp_state_str");
    check(std::strcmp(droce::async_event_str(droce::AsyncEventType::CqErr), "") != 0,
          "async_event_str");
    cm_session();
    sidr_session();
    queue_pair();
    if (fails != 0) {
        std::printf("api_probe: %d failed\n", fails);
        return 1;
    }
    std::printf("api_probe: OK\n");
    return 0;
}
