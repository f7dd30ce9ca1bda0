/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce inside the application's process: the engine the first device-listing verb starts
 * from the configuration file DROCE_CONFIG names (config/'s format, as the droce tools read
 * it), its devices as ibv_get_device_list lists them, and the teardown at exit. */
#pragma once

#include <vector>

#include "verbs_objects.h"

namespace droce::verbs {

/** The environment variable naming the configuration file (droce-run sets it). */
inline constexpr const char *kConfigEnv = "DROCE_CONFIG";

/** The devices, the engine started on the first call. Empty (errno set, the reason
 * printed once on stderr) when droce cannot run: no DROCE_CONFIG, a bad file, a port that
 * does not open. Also empty, without starting anything, when called while the engine is
 * starting (a DPDK driver that links libibverbs asking during rte_eal_init). */
const std::vector<DeviceEntry *> &devices();
/** True (errno ENODEV, the reason printed once) in a child forked after the engine started
 * in its parent: nothing runs droce there, so its verbs fail instead of waiting forever. */
bool forked_after_start();

/** Objects alive, so that exit can destroy them (children first) before the engine. */
enum class Kind { Qp, Ah, Srq, Mr, Cq, Channel, Pd, Count_ };
void live_add(Kind k, void *wrapper);
void live_remove(Kind k, void *wrapper);

/** Events name droce's objects; these find the application's and count the event as
 * handed out (Cq / Qp *_delivered) under the registry's lock, so that a destroy that
 * removed the object first sees the final count. nullptr: the object is gone. */
Cq *deliver_comp_event(const CompletionQueue *dcq);
Cq *deliver_cq_async_event(const CompletionQueue *dcq);
Qp *deliver_qp_async_event(const Device *dev, uint32_t qp_num);

} // namespace droce::verbs
