/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * droce-perf -R: perftest's rdma_cm mode (perftest 4.5's -R, which turns on its
 * "comm_rdma_cm" too), both roles, against the real tool.
 *
 * Observed between two perftest 4.5 peers (../shared/vectors/rxe/write_bw_cm.pcap) and
 * read in perftest's perftest_communication.c:
 *   1. A control connection through RDMA-CM to the server's port (-p, 18515): one RC QP
 *      each side, one receive of 56 bytes posted before connect/accept.
 *   2. Everything perftest sends over TCP otherwise goes as one RC SEND per item, the
 *      client sending first and the server answering (ctx_xchg_data_rdma): versions
 *      (16 bytes), cycle buffer and cache line (4-byte big-endian ints), the MTU ("%d",
 *      2 bytes), and the handshake records as the binary struct pingpong_dest (56 bytes,
 *      every field big-endian: lid, out_reads, qpn, psn, rkey, 4 bytes padding, vaddr,
 *      gid[16], srqn, gid_index). bw reports: the 5 values, 8 bytes each.
 *   3. A handshake, then the test's QPs connect through RDMA-CM to the same port (the
 *      client connects -q of them, the server accepts them in order), then another
 *      handshake; from there on the TCP flow's handshakes (2q + 1, ...), the test, the
 *      reports and the closing handshake, without "done": the client disconnects every
 *      connection (DREQ) instead. */
#pragma once

#include <csignal>
#include <cstdint>
#include <vector>

#include <droce/droce.h>

#include "app_engine.h"
#include "options.h"
#include "side.h"

namespace droce::perf {

struct CmRunArgs {
    SideConfig side;                            /**< this role's Side */
    int mtu_enum = 3;                           /**< ours, before the exchange */
    std::vector<uint64_t> sizes;                /**< the message sizes to run (client) */
    uint32_t pre_test_handshakes = 3;           /**< the TCP flow's, before the test */
    volatile std::sig_atomic_t *stop = nullptr; /**< set by SIGINT/SIGTERM */
};

/** Runs one side of the test over RDMA-CM on dev (the engine is started). Returns the
 * exit code. */
int run_cm(app::EngineRun &run, const Options &opt, Device &dev, const CmRunArgs &args);

} // namespace droce::perf
