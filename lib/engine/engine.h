/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/engine: the DPDK binding of the sans-I/O core. EAL and mempool bring-up, one
 * Dev per port (RX classify -> lib/net or lib/wire + rc::Qp, TX batching), the worker
 * loop and the command mailbox through which control operations reach the worker.
 *
 * Threading contract (shared nothing): a device is split into one Shard per worker.
 * Everything a shard holds (its QPs and their rc::Qp state, SRQs, timers, ready list,
 * TX queue, counters) is touched by exactly one thread — its worker lcore when workers
 * run, otherwise the thread calling Runtime::poll_once()/exec_on(). QPN n belongs to
 * worker n % workers. State every worker reads (MR table, zero-copy regions) changes
 * only with every worker parked (Runtime::exec_all). The application side touches only
 * the SPSC rings (SQ/RQ per QP in worker mode, one per CQ), the doorbell flags and
 * rings, and the retired counters the worker publishes. */
#pragma once

/* The engine's parts, each in a header of its own; this one includes them all. */
#include "engine_cc.h"
#include "engine_counters.h"
#include "engine_cq.h"
#include "engine_dev.h"
#include "engine_link.h"
#include "engine_qp_ctx.h"
#include "engine_qp_tx.h"
#include "engine_ring.h"
#include "engine_runtime.h"
#include "engine_shard.h"
#include "engine_srq.h"
#include "engine_telemetry.h"
