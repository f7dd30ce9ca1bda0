/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal: request slots, subsystems, controllers and the command handlers shared by the
 * files of lib/nvmf. Not installed; the glue uses nvmf.h only. */
#pragma once

#include <cstring>
#include <vector>

#include "nvmf.h"
#include "nvmf_capsule.h"

namespace droce::nvmf {

struct Request {
    enum class State : uint8_t { Free, Reading, Executing, Backend, Held, Sending };
    State st = State::Free;
    uint16_t tag = 0;
    Queue *q = nullptr;
    uint8_t sqe[kSqeLen] = {};
    Command cmd;
    uint8_t *buf = nullptr; /* slot_bytes of data buffer */
    uint32_t xfer = 0;      /* bytes the command moves */
    Cqe cqe;
    BdevIo io;
    struct Namespace *ns = nullptr;
    uint32_t seq = 0, seq_n = 0; /* DSM ranges / flush-all namespaces done so far, total */
};

struct Namespace {
    uint32_t nsid = 0;
    Bdev *bdev = nullptr;
    uint64_t nsze = 0; /* blocks */
    uint32_t bs = 512;
    uint8_t lbads = 9;
    std::array<uint8_t, 16> nguid{};
};

struct Subsystem {
    std::string nqn, serial, model;
    bool discovery = false;
    bool allow_any_host = false;
    std::vector<std::string> hosts;
    std::vector<Namespace> ns; /* ascending nsid */
    Namespace *find(uint32_t nsid) {
        for (auto &n : ns)
            if (n.nsid == nsid)
                return &n;
        return nullptr;
    }
};

inline constexpr size_t kErrLogEntries = 16;
struct ErrorEntry {
    uint64_t count = 0;
    uint16_t sqid = 0, cid = 0, status = 0;
    uint64_t lba = 0;
    uint32_t nsid = 0;
};

struct Controller {
    bool used = false;
    uint16_t cntlid = 0;
    Subsystem *sub = nullptr;
    char hostnqn[kNqnLen + 1] = {};
    uint8_t hostid[16] = {};
    uint32_t cc = 0, csts = 0;
    uint32_t kato_ms = 0;
    uint64_t last_ka_ns = 0;
    uint64_t created_ns = 0;
    uint16_t nq = 0; /* I/O queues granted (Set Features Number of Queues) */
    bool nq_set = false;
    uint32_t aec = 0;
    std::vector<Queue *> queues; /* [0] admin, [qid] */
    std::vector<uint16_t> aer;   /* held AER tags (admin queue) */
    /* Error log (newest last written at err_next - 1) and SMART counters. */
    ErrorEntry err[kErrLogEntries];
    uint64_t err_count = 0;
    size_t err_next = 0;
    uint64_t units_read = 0, units_written = 0; /* 512-byte units */
    uint64_t host_reads = 0, host_writes = 0, media_errors = 0;
};

struct Target::Impl {
    std::vector<Subsystem> subs; /* [0] the discovery subsystem */
    std::vector<Controller> ctrls;
    std::vector<std::unique_ptr<Queue>> queues;
    std::vector<uint8_t> scratch; /* log page assembly */
    uint64_t genctr = 1;
    BdevIo *done[64];
};

/* Handlers, one group per file. Each returns true when the request is finished (cqe set),
 * false when it waits (backend, held AER). prepare_* set r.xfer (or a status in r.cqe). */
struct Ops {
    /* nvmf_queue.cpp */
    static void complete(Queue &q, Request &r, uint16_t status);
    static void finish(Queue &q, Request &r);
    static void execute(Queue &q, Request &r, uint64_t now);
    static void bdev_done(Request &r);
    /* nvmf_fabrics.cpp */
    static bool prepare_fabrics(Queue &q, Request &r);
    static bool exec_fabrics(Queue &q, Request &r, uint64_t now);
    static void release_controller(Target &t, Controller &c);
    /* nvmf_admin.cpp */
    static bool prepare_admin(Queue &q, Request &r);
    static bool exec_admin(Queue &q, Request &r, uint64_t now);
    static bool admin_identify(Queue &q, Request &r);
    static bool admin_get_log_page(Queue &q, Request &r, uint64_t now);
    static bool admin_set_features(Queue &q, Request &r, uint64_t now);
    static bool admin_get_features(Queue &q, Request &r);
    static bool admin_async_event(Queue &q, Request &r);
    /* nvmf_identify.cpp */
    static void identify_ctrl(const Target &t, const Controller &c, uint8_t *out);
    static void identify_ns(const Namespace &n, uint8_t *out);
    static void active_ns_list(const Subsystem &s, uint32_t after, uint8_t *out);
    static void ns_desc_list(const Namespace &n, uint8_t *out);
    /* nvmf_log.cpp: the whole page into out (cap bytes), returns its length */
    static size_t discovery_log(const Target &t, uint8_t *out, size_t cap);
    static size_t error_log(const Controller &c, uint8_t *out, size_t cap);
    static size_t smart_log(const Controller &c, uint64_t now, uint8_t *out, size_t cap);
    static size_t effects_log(uint8_t *out, size_t cap);
    /* nvmf_io.cpp */
    static bool prepare_io(Queue &q, Request &r);
    static bool exec_io(Queue &q, Request &r);
    static bool io_continue(Queue &q, Request &r); /* after a backend step */
    /* helpers */
    static Target &target(Queue &q) { return q.t_; }
    static TransportActions &tx(Queue &q) { return q.tx_; }
    static Counters &cnt(Target &t) { return t.cnt_; }
    static Target::Impl &impl(Target &t) { return *t.impl_; }
    static const Target::Impl &impl(const Target &t) { return *t.impl_; }
    static Controller *&ctrl(Queue &q) { return q.ctrl_; }
    static Request *&connecting(Queue &q) { return q.connecting_; }
    static uint16_t &sqsize(Queue &q) { return q.sqsize_; }
    static uint32_t slot_bytes(const Queue &q) { return q.slot_bytes_; }
};

inline uint16_t st_generic(uint8_t sc) { return status_field(kSctGeneric, sc, true); }
inline uint16_t st_cmd(uint8_t sc) { return status_field(kSctCmdSpecific, sc, true); }

/* A fixed-width ASCII field, space padded (Identify SN/MN/FR). */
inline void put_ascii(uint8_t *dst, size_t width, const std::string &s) {
    std::memset(dst, ' ', width);
    std::memcpy(dst, s.data(), s.size() < width ? s.size() : width);
}
/* A NUL-padded string field (NQNs, TRADDR). */
inline void put_str(uint8_t *dst, size_t width, const std::string &s) {
    std::memset(dst, 0, width);
    std::memcpy(dst, s.data(), s.size() < width - 1 ? s.size() : width - 1);
}

} // namespace droce::nvmf
