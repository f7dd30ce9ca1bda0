/* SPDX-License-Identifier: BSD-3-Clause */
/* The exit teardown and its gate (verbs_exit.h). */
#include "verbs_exit.h"

#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace droce::verbs {
namespace {

enum class Phase { Before, Running, Done };

struct ExitState {
    std::mutex mu;
    std::condition_variable cv;
    Phase phase = Phase::Before;
    pid_t owner = 0;      /* the thread running the teardown */
    bool waiting = false; /* another thread waits to be handed the rest of exit() */
    bool handed = false;
    void (*teardown)() = nullptr;
};

/* Never destroyed: exit handlers and static destructors may run after it would be. */
ExitState &state() {
    static ExitState *s = new ExitState();
    return *s;
}

[[noreturn]] void park() {
    for (;;)
        pause();
}

/* A thread other than the owner, while the teardown runs: waits to be handed the rest of
 * exit(). Called with the lock held. */
void wait_for_handoff(ExitState &s, std::unique_lock<std::mutex> &lk) {
    s.waiting = true;
    s.cv.wait(lk, [&s] { return s.handed; });
}

void run_teardown() {
    ExitState &s = state();
    std::unique_lock<std::mutex> lk(s.mu);
    if (s.phase == Phase::Running) {
        wait_for_handoff(s, lk);
        return;
    }
    if (s.phase == Phase::Done)
        return;
    s.phase = Phase::Running;
    s.owner = gettid();
    lk.unlock();
    s.teardown();
    lk.lock();
    s.phase = Phase::Done;
    if (!s.waiting)
        return;
    /* Another thread is in exit() too and may have freed the handler block this call
     * came from: it finishes exit() and this thread never returns into it. */
    s.handed = true;
    s.cv.notify_all();
    lk.unlock();
    park();
}

void gate() {
    ExitState &s = state();
    std::unique_lock<std::mutex> lk(s.mu);
    if (s.phase == Phase::Running && s.owner != gettid())
        wait_for_handoff(s, lk);
}

} // namespace

void register_exit_teardown(void (*teardown)()) {
    state().teardown = teardown;
    std::atexit(gate);
    std::atexit(run_teardown);
}

} // namespace droce::verbs
