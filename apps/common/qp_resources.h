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

namespace droce::app {

/** A side's work buffer (std::aligned_alloc) and verbs objects. Declaration order is the
 * reverse of destruction order: the QP goes first, then the CQ, MR and PD, then the
 * buffer. */
struct QpResources {
    struct FreeBuffer {
        void operator()(uint8_t *p) const { std::free(p); }
    };

    std::unique_ptr<uint8_t, FreeBuffer> buf;
    std::unique_ptr<ProtectionDomain> pd;
    std::unique_ptr<MemoryRegion> mr;
    std::unique_ptr<CompletionQueue> cq;
    std::unique_ptr<QueuePair> qp;
};

/** Flushes stdout, then prints prefix, the formatted message and a newline to stderr. */
void vprint_error(const std::string &prefix, const char *fmt, va_list ap);

} // namespace droce::app
