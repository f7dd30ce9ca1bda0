/* SPDX-License-Identifier: BSD-3-Clause */
/* droce NVMe-oF target core (public API). Transport-independent and sans-I/O: the glue
 * (RDMA-CM + RC QPs on droce) feeds it CM private data, received command capsules and
 * work completions; the core answers with transport actions (RDMA READ host->target,
 * RDMA WRITE target->host, SEND of the response capsule, disconnect) through the
 * TransportActions the glue implements. Time is passed in (ns, any monotonic origin).
 *
 * Threading: one Target and everything under it belong to one poll loop; nothing here
 * locks. Memory: queues allocate their request slots and data buffers when created (the
 * CM handshake); nothing on the I/O path allocates, blocks or makes a system call.
 *
 * Ordering contract with the glue: the core posts RDMA WRITE then SEND for a read-type
 * command back to back on the same RC QP (RC ordering delivers the data before the
 * response), so only READ and SEND completions come back (on_read_done, on_send_done). The
 * glue sizes its send queue for 3 WRs per request slot, so a post never finds it full; a
 * post that fails anyway is counted and the queue disconnected. */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nvmf_bdev.h"
#include "nvmf_cm_priv.h"

namespace droce::nvmf {

struct NamespaceConfig {
    uint32_t nsid = 1;
    Bdev *bdev = nullptr; /* not owned */
    std::array<uint8_t, 16> nguid{};
};

struct SubsystemConfig {
    std::string nqn;
    std::string serial = "droce0000000001";
    std::string model = "droce NVMe-oF target";
    std::vector<NamespaceConfig> namespaces;
    std::vector<std::string> allowed_hosts; /* host NQNs */
    bool allow_any_host = false;
};

struct TargetConfig {
    std::vector<SubsystemConfig> subsystems;
    /* What the discovery log page says about this port. */
    std::string traddr = "0.0.0.0";
    std::string trsvcid = "4420";
    uint8_t adrfam = 1; /* 1 IPv4, 2 IPv6 */
    uint16_t port_id = 1;
    uint16_t max_controllers = 16;
    uint16_t max_io_queues = 8;         /* per controller */
    uint16_t max_io_depth = 128;        /* entries per I/O queue (CAP.MQES + 1) */
    uint16_t max_admin_depth = 32;      /* entries on the admin queue */
    uint32_t max_io_bytes = 128 * 1024; /* MDTS, power of two >= 4096 */
    uint32_t in_capsule_bytes = 8192;   /* receive buffers are 64 + this */
    uint8_t aer_limit = 4;              /* AERs held per controller */
};

/* Every bad input and every answer that is not Success, by kind. */
struct Counters {
    uint64_t capsules = 0, responses = 0;
    uint64_t capsule_too_short = 0;  /* < 64 bytes: dropped, nothing to answer to */
    uint64_t capsule_no_slot = 0;    /* host exceeded its SQ size: dropped */
    uint64_t capsule_dead_queue = 0; /* arrived after disconnect */
    uint64_t st_invalid_opcode = 0, st_invalid_field = 0, st_invalid_ns = 0;
    uint64_t st_cmd_seq = 0, st_sgl_len = 0, st_sgl_type = 0, st_sgl_offset = 0;
    uint64_t st_lba_range = 0, st_connect_invalid = 0, st_connect_host = 0;
    uint64_t st_connect_busy = 0, st_connect_format = 0, st_aer_limit = 0;
    uint64_t st_internal = 0, st_media = 0, st_xfer = 0, st_other = 0;
    uint64_t connect_unknown_subsys = 0;
    uint64_t connect_in_flight = 0; /* a Connect on a queue with one in flight or done */
    uint64_t cm_rejects = 0, cm_accepts = 0;
    uint64_t read_failures = 0; /* RDMA READ completed in error */
    uint64_t post_failures = 0; /* the glue refused an action */
    uint64_t bdev_busy = 0, bdev_errors = 0;
    uint64_t kato_expired = 0;
    uint64_t aer_held = 0;
};

/* The actions the core asks of the transport. tag names the request slot (< depth). */
class TransportActions {
  public:
    virtual ~TransportActions() = default;
    /* Host -> target: len bytes from (raddr, rkey) into local. Completion: on_read_done. */
    virtual bool rdma_read(uint16_t tag, void *local, uint32_t len, uint64_t raddr,
                           uint32_t rkey) = 0;
    /* Target -> host; no completion wanted (the SEND behind it completes after it). */
    virtual bool rdma_write(uint16_t tag, const void *local, uint32_t len, uint64_t raddr,
                            uint32_t rkey) = 0;
    /* The 16-byte response capsule; invalidate: SEND with Invalidate of rkey. Completion:
     * on_send_done. */
    virtual bool send(uint16_t tag, const uint8_t *cqe, bool invalidate, uint32_t rkey) = 0;
    /* Tear the connection down (keep-alive expiry, controller gone, protocol violation). */
    virtual void disconnect() = 0;
};

class Target;
struct Controller;
struct Request;

enum class CapsuleResult : uint8_t { Accepted, TooShort, NoSlot, DeadQueue };

/* One RDMA queue pair's NVMe-oF queue (admin when qid 0). */
class Queue {
  public:
    Queue(Target &t, uint16_t qid, uint16_t depth, TransportActions &tx);
    ~Queue();
    Queue(const Queue &) = delete;
    Queue &operator=(const Queue &) = delete;

    /* A received SEND: the command capsule (SQE + in-capsule data). The bytes are copied
     * out before this returns, so the receive buffer can be reposted at once. */
    CapsuleResult on_capsule(const uint8_t *p, size_t len, uint64_t now_ns);
    void on_read_done(uint16_t tag, bool ok, uint64_t now_ns);
    void on_send_done(uint16_t tag);
    /* The connection is gone: no more actions; requests still in a backend finish silently. */
    void on_disconnect();
    bool drained() const; /* no request slot busy */

    /* The data buffers the actions point into (one block: register it as one MR). */
    uint8_t *buffer_base() const { return bufs_.get(); }
    size_t buffer_bytes() const { return buf_bytes_; }
    uint16_t qid() const { return qid_; }
    uint16_t depth() const { return depth_; }
    uint32_t recv_bytes() const; /* receive buffer size the glue posts: 64 + in-capsule */
    Controller *controller() const { return ctrl_; }

  private:
    friend class Target;
    friend struct Ops;
    struct FreeDeleter {
        void operator()(uint8_t *p) const;
    };
    Target &t_;
    uint16_t qid_, depth_;
    TransportActions &tx_;
    Controller *ctrl_ = nullptr;
    /* The request slot whose Connect is in flight (reading its data or executing): a
     * queue takes one Connect at a time, and none once it belongs to a controller. */
    Request *connecting_ = nullptr;
    bool dead_ = false;
    uint16_t sqhd_ = 0;
    uint16_t sqsize_ = 0; /* from Connect */
    std::unique_ptr<Request[]> reqs_;
    std::vector<uint16_t> free_;
    std::unique_ptr<uint8_t[], FreeDeleter> bufs_;
    size_t buf_bytes_ = 0;
    uint32_t slot_bytes_ = 0;
};

struct AcceptResult {
    Queue *queue = nullptr;           /* null: rejected */
    uint8_t priv[kCmRepPrivLen] = {}; /* REP or REJ private data to send */
    size_t priv_len = 0;
};

class Target {
  public:
    /* Null and err set when the configuration is unusable. */
    static std::unique_ptr<Target> create(const TargetConfig &cfg, std::string &err);
    ~Target();

    /* A CM REQ's NVMe-oF private data (after the IP CM header): accept (a new Queue whose
     * actions go to tx; send REP with priv) or reject (send REJ with priv). */
    AcceptResult accept(const uint8_t *priv, size_t len, TransportActions &tx);
    /* After on_disconnect and drained(): frees the queue (control path). */
    void destroy_queue(Queue *q);
    /* Backend completions and keep-alive expiry. */
    void poll(uint64_t now_ns);

    const Counters &counters() const { return cnt_; }
    const TargetConfig &config() const { return cfg_; }

    struct Impl; /* opaque (nvmf_internal.h) */

  private:
    friend class Queue;
    friend struct Ops;
    Target() = default;
    std::unique_ptr<Impl> impl_;
    TargetConfig cfg_;
    Counters cnt_;
};

} // namespace droce::nvmf
