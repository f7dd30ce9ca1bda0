/* SPDX-License-Identifier: BSD-3-Clause */
/* Two devices over a net_ring pair, one RC QP each (a sends, b receives), in embedded or
 * worker mode (the test parameter: true = embedded): the fixture of the CQ tests
 * (test_engine_cq.cpp, test_cq_events.cpp). Each test binary needs a worker lcore. */
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <droce/droce.h>

namespace cq_test {

using namespace droce;
using namespace std::chrono_literals;

inline std::unique_ptr<Engine> make_engine(bool embedded) {
    static const char *args[] = {"test_cq_pair", "--no-huge",   "-m",       "1024",
                                 "--no-pci",     "--no-shconf", "--lcores", "0@0,1@1",
                                 "--log-level",  "*:warning",   "--",       nullptr};
    EngineOptions o;
    o.embedded = embedded;
    o.workers = 1;
    o.idle_polls_before_sleep = 200;
    o.idle_sleep_us = 50;
    o.log_level = "warn";
    int consumed = 0;
    auto e = Engine::create(11, const_cast<char **>(args), &consumed, o);
    EXPECT_TRUE(e) << e.status().message();
    return e ? std::move(*e) : nullptr;
}

constexpr uint32_t kRights = kAccessLocalWrite | kAccessRemoteWrite;
constexpr uint32_t kMsg = 64;

struct Side {
    Device *dev = nullptr;
    std::unique_ptr<ProtectionDomain> pd;
    std::vector<uint8_t> buf = std::vector<uint8_t>(64 * kMsg);
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<CompletionChannel> channel; /* open(.., true): both CQs report here */
    std::unique_ptr<CompletionQueue> scq, rcq;
    std::unique_ptr<QueuePair> qp;
};

class CqApi : public ::testing::TestWithParam<bool> {
  protected:
    /* rcq_depth: the receiver's (b's) receive CQ; channels: each side's two CQs on a
     * completion channel of its own (Side::channel). */
    void open(uint32_t rcq_depth, bool channels = false) {
        engine = make_engine(GetParam());
        ASSERT_TRUE(engine);
        auto ports = engine->create_ring_pair();
        ASSERT_TRUE(ports) << ports.status().message();
        DeviceConfig ca;
        ca.port = ports->first;
        ca.ipv4_cidr = "10.79.0.1/24";
        ca.mac = "02:00:00:00:03:01";
        ca.mtu = 1500;
        DeviceConfig cb = ca;
        cb.port = ports->second;
        cb.ipv4_cidr = "10.79.0.2/24";
        cb.mac = "02:00:00:00:03:02";
        auto da = engine->open_device(ca);
        auto db = engine->open_device(cb);
        ASSERT_TRUE(da && db);
        ASSERT_TRUE(engine->start());
        a.dev = *da;
        b.dev = *db;
        for (Side *s : {&a, &b}) {
            s->pd = std::move(*s->dev->alloc_pd());
            auto m = s->pd->reg_mr(s->buf.data(), s->buf.size(), kRights);
            ASSERT_TRUE(m) << m.status().message();
            s->mr = std::move(*m);
            if (channels) {
                auto ch = s->dev->create_comp_channel();
                ASSERT_TRUE(ch) << ch.status().message();
                s->channel = std::move(*ch);
            }
            auto sc = s->dev->create_cq(256, -1, s->channel.get());
            auto rc = s->dev->create_cq(s == &b ? rcq_depth : 256, -1, s->channel.get());
            ASSERT_TRUE(sc && rc);
            s->scq = std::move(*sc);
            s->rcq = std::move(*rc);
            QpInitAttr ia;
            ia.send_cq = s->scq.get();
            ia.recv_cq = s->rcq.get();
            ia.cap.max_send_wr = ia.cap.max_recv_wr = 64;
            auto q = s->pd->create_qp(ia);
            ASSERT_TRUE(q) << q.status().message();
            s->qp = std::move(*q);
        }
        for (auto [s, o] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
            QpAttr at;
            at.qp_state = QpState::Init;
            at.qp_access_flags = kRights;
            ASSERT_TRUE(s->qp->modify(at, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags));
            at.qp_state = QpState::Rtr;
            at.path_mtu = Mtu::Mtu1024;
            at.dest_qp_num = o->qp->qp_num();
            at.rq_psn = 0x100;
            at.max_dest_rd_atomic = 1;
            at.min_rnr_timer = 1;
            at.ah_attr.dgid = o->dev->gids().at(1).gid;
            at.ah_attr.sgid_index = 1;
            ASSERT_TRUE(s->qp->modify(at, kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                                              kQpMaxDestRdAtomic | kQpMinRnrTimer));
            at.qp_state = QpState::Rts;
            at.sq_psn = 0x100;
            at.timeout = 14;
            at.retry_cnt = 7;
            at.rnr_retry = 7;
            at.max_rd_atomic = 1;
            ASSERT_TRUE(s->qp->modify(at, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCnt |
                                              kQpRnrRetry | kQpMaxQpRdAtomic));
        }
    }
    void TearDown() override {
        for (Side *s : {&a, &b}) {
            s->qp.reset();
            s->scq.reset();
            s->rcq.reset();
            s->channel.reset();
            s->mr.reset();
            s->pd.reset();
        }
        engine.reset();
    }
    void drive() {
        if (engine->embedded())
            engine->poll();
        else
            std::this_thread::sleep_for(20us);
    }
    Status send(uint64_t id) {
        SendWr wr;
        wr.wr_id = id;
        wr.opcode = WrOpcode::Send;
        wr.send_flags = kSendSignaled;
        wr.sg_list[0] = Sge{reinterpret_cast<uint64_t>(a.buf.data()), kMsg, a.mr->lkey()};
        wr.num_sge = 1;
        return a.qp->post_send(wr);
    }
    Status recv(uint64_t id) {
        RecvWr wr;
        wr.wr_id = id;
        wr.sg_list[0] =
            Sge{reinterpret_cast<uint64_t>(b.buf.data() + (id % 64) * kMsg), kMsg, b.mr->lkey()};
        wr.num_sge = 1;
        return b.qp->post_recv(wr);
    }
    /* Up to n completions of cq, polled max at a time, within limit. */
    std::vector<Wc> wait(CompletionQueue &cq, size_t n, int max = 16,
                         std::chrono::milliseconds limit = 5s) {
        std::vector<Wc> out;
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
            Wc wc[64];
            const int k = cq.poll(wc, max);
            out.insert(out.end(), wc, wc + k);
            if (k == 0)
                drive();
        }
        return out;
    }
    std::vector<AsyncEvent> events(Device &d, size_t n, std::chrono::milliseconds limit = 5s) {
        std::vector<AsyncEvent> out;
        const auto deadline = std::chrono::steady_clock::now() + limit;
        AsyncEvent ev;
        while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
            if (d.get_async_event(ev))
                out.push_back(ev);
            else
                drive();
        }
        return out;
    }
    uint64_t counter(const Device &d, const std::string &name) {
        for (const auto &[k, v] : d.counters())
            if (k == name)
                return v;
        ADD_FAILURE() << "no counter " << name;
        return 0;
    }
    std::unique_ptr<Engine> engine;
    Side a, b;
};

} // namespace cq_test
