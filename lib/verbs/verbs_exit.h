/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The engine's teardown at exit, safe when several threads call exit() at once (rping's
 * CM thread exits when its channel is destroyed under it, while main exits too).
 *
 * glibc runs the exit handlers of concurrent exit() calls side by side, and a thread that
 * empties a block of the handler list frees it while another thread may still be inside
 * a handler taken from that block; that thread then crashes on return. A handler that
 * takes milliseconds (stopping the engine) turns that window into a likely crash.
 *
 * So the teardown is registered with a gate just below it: whichever thread runs the
 * teardown first owns it; a thread that comes to either while the owner is inside waits,
 * and when the owner is done it hands the rest of exit() to that waiting thread, whose
 * place in the list is intact, and parks for good (the process ends with the waiter's
 * exit). A thread that comes once the teardown is over goes on as glibc would. */
#pragma once

namespace droce::verbs {

/** Registers teardown to run once at exit, as described above. Call it once. */
void register_exit_teardown(void (*teardown)());

} // namespace droce::verbs
