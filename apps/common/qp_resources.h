/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The scaffolding of one side of a droce tool's test (PingpongEndpoint, perf's Side):
 * the verbs objects it owns, torn down children first as ibv_* requires, and its
 * one-line error messages. */
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>

#include <droce/droce.h>

#include "device_options.h"

namespace droce::app {

/** A side's work buffer (droce::alloc_buf or std::aligned_alloc) and verbs objects.
 * Declaration order is the reverse of destruction order: the QP goes first, then the CQ,
 * MR and PD, then the buffer. */
struct QpResources {
    struct FreeBuffer {
        /* free_buf tells alloc_buf's DPDK memory from ordinary memory itself. */
        void operator()(uint8_t *p) const { free_buf(p); }
    };

    std::unique_ptr<uint8_t, FreeBuffer> buf;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<QueuePair> qp;

    /** Creates the RC QP on pd (send and receive completions on cq, one SGE each way) and
     * moves it to INIT (P_Key index 0, port, access flags). Returns "" or the message:
     * "Couldn't create QP: why" or "Failed to modify QP to INIT: why". */
    std::string create_qp_in_init(uint32_t max_send_wr, uint32_t max_recv_wr, uint8_t port,
                                  uint32_t access);

    /** RTR -> RTS as ibv_rc_pingpong and perftest do it: timeout 14, retry_cnt 7, rnr_retry
     * 7 (or qp_defaults()), sq_psn, max_rd_atomic. Returns "" or "Failed to modify QP to
     * RTS: why". */
    std::string modify_qp_to_rts(uint32_t sq_psn, uint8_t max_rd_atomic);
};

/** Creates an RC QP on pd (send and receive completions on cq, one SGE each way) into
 * qp and moves it to INIT (P_Key index 0, port, access flags). Returns "" or the message:
 * "Couldn't create QP: why" or "Failed to modify QP to INIT: why". For tools with
 * several QPs; QpResources::create_qp_in_init is this on its own members. */
std::string create_rc_qp_in_init(ProtectionDomain &pd, CompletionQueue &cq, uint32_t max_send_wr,
                                 uint32_t max_recv_wr, uint8_t port, uint32_t access,
                                 std::unique_ptr<QueuePair> &qp);

/** RTR -> RTS as ibv_rc_pingpong and perftest do it: timeout 14, retry_cnt 7, rnr_retry 7
 * (or qp_defaults()), sq_psn, max_rd_atomic. Returns "" or "Failed to modify QP to RTS: why". */
std::string modify_rc_qp_to_rts(QueuePair &qp, uint32_t sq_psn, uint8_t max_rd_atomic);

/** The QP attributes modify_rc_qp_to_rts and the tools' RTR use: QpDefaults' values
 * unless set_qp_defaults ran (create_engine sets them from the DeviceOptions: --config's
 * [qp]). */
const QpDefaults &qp_defaults();
void set_qp_defaults(const QpDefaults &d);

/** Flushes stdout, then prints prefix, the formatted message and a newline to stderr. */
void vprint_error(const std::string &prefix, const char *fmt, va_list ap);

} // namespace droce::app
