/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * What a droce-perf loop does when a pass found nothing to do: back off (app::Backoff),
 * or with -e sleep on the running sides' completion channels, as perftest's use_event
 * does, for at most a millisecond (the loops also watch the clock and the control
 * connection); then each side takes its events and arms its CQs again. */
#pragma once

#include <poll.h>

#include <cstdint>
#include <vector>

#include "app_engine.h"
#include "side.h"

namespace droce::perf {

class IdleWait {
  public:
    IdleWait(bool busy_poll, bool events, std::vector<Side *> sides, uint32_t spins)
        : b_(busy_poll, spins), events_(events), sides_(std::move(sides)) {}
    void progress() { b_.progress(); }
    void idle() {
        pollfd fds[kMaxSides];
        nfds_t n = 0;
        if (events_)
            for (Side *s : sides_)
                if (s->event_fd() >= 0 && n < kMaxSides)
                    fds[n++] = pollfd{s->event_fd(), POLLIN, 0};
        if (n == 0) {
            b_.idle();
            return;
        }
        poll(fds, n, 1); /* EINTR: the loop looks at g_stop */
        for (Side *s : sides_)
            if (s->event_fd() >= 0)
                s->rearm(); /* a failure fails the side: its next step() says so */
    }

  private:
    static constexpr nfds_t kMaxSides = 4;
    app::Backoff b_;
    bool events_;
    std::vector<Side *> sides_;
};

} // namespace droce::perf
