/* SPDX-License-Identifier: BSD-3-Clause */
/* Completion channels and asynchronous events (ibv_comp_channel, ibv_req_notify_cq,
 * ibv_get_cq_event, ibv_get_async_event's descriptor) through droce's API, in embedded and
 * worker mode: an armed CQ raises one event for the next completion and no more until
 * armed again; solicited-only arming waits for a solicited message or an error; several
 * CQs share a channel; a CQ destroyed with its event pending takes it along; a blocked
 * get_event wakes; the device's async descriptor is readable exactly while events wait. */
#include <fcntl.h>
#include <poll.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <droce/droce.h>

#include "cq_test_pair.h"

using namespace droce;
using namespace std::chrono_literals;

namespace {

using cq_test::kMsg;
using cq_test::Side;

void set_nonblocking(int fd) {
    const int fl = fcntl(fd, F_GETFL);
    ASSERT_GE(fl, 0);
    ASSERT_EQ(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

bool readable_now(int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

class CqEvents : public cq_test::CqApi {
  protected:
    /* Both sides' CQs on their channels, made non-blocking (the tests look, never wait,
     * except the one that blocks on purpose). */
    void open_with_channels(uint32_t rcq_depth = 64) {
        open(rcq_depth, true);
        set_nonblocking(a.channel->fd());
        set_nonblocking(b.channel->fd());
    }
    /* Drives the engine (embedded) until fd is readable or limit passes. */
    bool readable_within(int fd, std::chrono::milliseconds limit = 5s) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            if (readable_now(fd))
                return true;
            drive();
        }
        return readable_now(fd);
    }
    /* A SEND from s to o's posted receive; flags beyond kSendSignaled (kSendSolicited). */
    Status send_from(Side &s, uint64_t id, uint32_t flags = 0, uint32_t lkey = 0) {
        SendWr wr;
        wr.wr_id = id;
        wr.opcode = WrOpcode::Send;
        wr.send_flags = kSendSignaled | flags;
        wr.sg_list[0] =
            Sge{reinterpret_cast<uint64_t>(s.buf.data()), kMsg, lkey != 0 ? lkey : s.mr->lkey()};
        wr.num_sge = 1;
        return s.qp->post_send(wr);
    }
    Status recv_at(Side &s, uint64_t id) {
        RecvWr wr;
        wr.wr_id = id;
        wr.sg_list[0] = Sge{reinterpret_cast<uint64_t>(s.buf.data() + (id % 32 + 32) * kMsg), kMsg,
                            s.mr->lkey()};
        wr.num_sge = 1;
        return s.qp->post_recv(wr);
    }
    /* One completion of cq (driving the engine), its status checked. */
    void expect_completion(CompletionQueue &cq, WcStatus st = WcStatus::Success) {
        auto w = wait(cq, 1);
        ASSERT_EQ(w.size(), 1u);
        EXPECT_EQ(w[0].status, st) << wc_status_str(w[0].status);
    }
    /* Lets the engine run a while: whatever would raise an event has raised it. */
    void settle() {
        const auto until = std::chrono::steady_clock::now() + 50ms;
        while (std::chrono::steady_clock::now() < until)
            drive();
    }
};

TEST_P(CqEvents, OneEventPerArm) {
    open_with_channels();
    const int fd = b.channel->fd();
    /* Not armed: a completion raises nothing. */
    ASSERT_TRUE(recv_at(b, 1));
    ASSERT_TRUE(send_from(a, 101));
    expect_completion(*b.rcq);
    settle();
    EXPECT_FALSE(readable_now(fd));
    auto none = b.channel->get_event();
    ASSERT_FALSE(none);
    EXPECT_EQ(none.status().code(), EAGAIN);

    /* Armed: the next completion raises exactly one event, naming the CQ. */
    ASSERT_TRUE(b.rcq->req_notify());
    ASSERT_TRUE(recv_at(b, 2));
    ASSERT_TRUE(send_from(a, 102));
    ASSERT_TRUE(readable_within(fd));
    auto ev = b.channel->get_event();
    ASSERT_TRUE(ev) << ev.status().message();
    EXPECT_EQ(ev.value(), b.rcq.get());
    EXPECT_FALSE(readable_now(fd));
    expect_completion(*b.rcq);

    /* Not armed again: the next completion raises nothing. */
    ASSERT_TRUE(recv_at(b, 3));
    ASSERT_TRUE(send_from(a, 103));
    expect_completion(*b.rcq);
    settle();
    EXPECT_FALSE(readable_now(fd));
    /* The sender's CQs were never armed: its channel stayed quiet throughout. */
    EXPECT_FALSE(readable_now(a.channel->fd()));
}

TEST_P(CqEvents, SolicitedOnlyWaitsForASolicitedMessage) {
    open_with_channels();
    const int fd = b.channel->fd();
    ASSERT_TRUE(b.rcq->req_notify(true));
    ASSERT_TRUE(recv_at(b, 1));
    ASSERT_TRUE(send_from(a, 101)); /* not solicited */
    expect_completion(*b.rcq);
    settle();
    EXPECT_FALSE(readable_now(fd));
    ASSERT_TRUE(recv_at(b, 2));
    ASSERT_TRUE(send_from(a, 102, kSendSolicited));
    ASSERT_TRUE(readable_within(fd));
    auto ev = b.channel->get_event();
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev.value(), b.rcq.get());
    auto w = wait(*b.rcq, 1);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].wc_flags & kWcSolicited, 0u); /* the message asked for it */
}

/* IBA 11.4.2.2: an unsuccessful completion raises a solicited-only arm too. */
TEST_P(CqEvents, ErrorCompletionWakesASolicitedOnlyArm) {
    open_with_channels();
    ASSERT_TRUE(a.scq->req_notify(true));
    ASSERT_TRUE(send_from(a, 101, 0, a.mr->lkey() ^ 0x5a5a00)); /* no such lkey */
    ASSERT_TRUE(readable_within(a.channel->fd()));
    auto ev = a.channel->get_event();
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev.value(), a.scq.get());
    expect_completion(*a.scq, WcStatus::LocProtErr);
}

TEST_P(CqEvents, TwoCqsShareAChannelEachRaisesOnce) {
    open_with_channels();
    ASSERT_TRUE(a.scq->req_notify());
    ASSERT_TRUE(a.rcq->req_notify());
    ASSERT_TRUE(recv_at(a, 1));
    ASSERT_TRUE(recv_at(b, 2));
    ASSERT_TRUE(send_from(a, 101)); /* a's send CQ */
    ASSERT_TRUE(send_from(b, 201)); /* a's receive CQ */
    expect_completion(*a.rcq);
    expect_completion(*a.scq);
    std::set<CompletionQueue *> got;
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(readable_within(a.channel->fd()));
        auto ev = a.channel->get_event();
        ASSERT_TRUE(ev);
        got.insert(ev.value());
    }
    EXPECT_EQ(got, (std::set<CompletionQueue *>{a.scq.get(), a.rcq.get()}));
    settle();
    EXPECT_FALSE(readable_now(a.channel->fd()));
    /* Arming twice before an event still gives one event. */
    ASSERT_TRUE(a.scq->req_notify());
    ASSERT_TRUE(a.scq->req_notify());
    ASSERT_TRUE(recv_at(b, 3));
    ASSERT_TRUE(send_from(a, 102));
    expect_completion(*a.scq);
    ASSERT_TRUE(readable_within(a.channel->fd()));
    ASSERT_TRUE(a.channel->get_event());
    settle();
    EXPECT_FALSE(readable_now(a.channel->fd()));
}

TEST_P(CqEvents, DestroyedCqTakesItsPendingEvent) {
    open_with_channels();
    ASSERT_TRUE(b.rcq->req_notify());
    ASSERT_TRUE(recv_at(b, 1));
    ASSERT_TRUE(send_from(a, 101));
    ASSERT_TRUE(readable_within(b.channel->fd()));
    b.qp.reset();
    b.rcq.reset();
    auto ev = b.channel->get_event(); /* the count is read, the token dropped */
    ASSERT_FALSE(ev);
    EXPECT_EQ(ev.status().code(), EAGAIN);
    EXPECT_FALSE(readable_now(b.channel->fd()));
}

TEST_P(CqEvents, BlockedGetEventWakes) {
    open(64, true); /* b's channel stays blocking */
    ASSERT_TRUE(b.rcq->req_notify());
    std::atomic<CompletionQueue *> woke{nullptr};
    std::thread waiter([&] {
        auto ev = b.channel->get_event();
        woke = ev ? ev.value() : nullptr;
    });
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(woke.load(), nullptr);
    ASSERT_TRUE(recv_at(b, 1));
    ASSERT_TRUE(send_from(a, 101));
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (woke.load() == nullptr && std::chrono::steady_clock::now() < deadline)
        drive();
    waiter.join(); /* a hang here is the failure */
    EXPECT_EQ(woke.load(), b.rcq.get());
}

TEST_P(CqEvents, ReqNotifyNeedsAChannel) {
    open(64, false);
    const Status st = b.rcq->req_notify();
    EXPECT_FALSE(st);
    EXPECT_EQ(st.code(), EINVAL);
}

/* The device's async descriptor: readable while events wait, not after they are taken;
 * wait_async_event on it (non-blocking) gives them in order, then EAGAIN. */
TEST_P(CqEvents, AsyncFdFollowsTheEventQueue) {
    open(4);
    const int fd = b.dev->async_fd();
    ASSERT_GE(fd, 0);
    set_nonblocking(fd);
    EXPECT_FALSE(readable_now(fd));
    for (uint64_t i = 0; i < 10; ++i)
        ASSERT_TRUE(recv(i));
    for (uint64_t i = 0; i < 10; ++i)
        ASSERT_TRUE(send(1000 + i)); /* overruns b's receive CQ of 4 */
    ASSERT_TRUE(readable_within(fd));
    AsyncEvent ev;
    ASSERT_TRUE(b.dev->wait_async_event(ev));
    EXPECT_EQ(ev.type, AsyncEventType::CqErr);
    EXPECT_EQ(ev.cq, b.rcq.get());
    ASSERT_TRUE(readable_within(fd));
    ASSERT_TRUE(b.dev->wait_async_event(ev));
    EXPECT_EQ(ev.type, AsyncEventType::QpFatal);
    EXPECT_EQ(ev.qp_num, b.qp->qp_num());
    settle();
    EXPECT_FALSE(readable_now(fd));
    const Status none = b.dev->wait_async_event(ev);
    EXPECT_EQ(none.code(), EAGAIN);
}

INSTANTIATE_TEST_SUITE_P(Modes, CqEvents, ::testing::Values(true, false),
                         [](const auto &i) { return i.param ? "Embedded" : "Worker"; });

} // namespace
