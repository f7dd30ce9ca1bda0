/* SPDX-License-Identifier: BSD-3-Clause */
/* NVMe-oF command capsules and response capsules over RDMA: the 64-byte SQE with its SGL1
 * (a keyed SGL data block, with or without "invalidate key", or an offset data block
 * pointing at in-capsule data) and the 16-byte CQE. Pure functions over bytes: a capsule
 * too short to hold an SQE is the only thing that cannot be answered (there is no CID to
 * answer to); every other problem is an NVMe status the caller sends back. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "nvmf_spec.h"

namespace droce::nvmf {

/* SGL1 as the RDMA binding allows it. */
struct Sgl {
    enum class Kind : uint8_t { Keyed, InCapsule };
    Kind kind = Kind::Keyed;
    bool invalidate = false; /* keyed, subtype 0xF: answer with SEND with Invalidate */
    uint64_t addr = 0;       /* keyed: host virtual address; in-capsule: offset */
    uint32_t len = 0;        /* keyed: 24-bit length; in-capsule: 32-bit length */
    uint32_t key = 0;        /* keyed: the host's rkey */
};

/* Direction of the data (opcode bits 1:0, fctype bits 1:0 for Fabrics commands). */
enum class Xfer : uint8_t { None = 0, HostToCtrl = 1, CtrlToHost = 2, Bidi = 3 };

struct Command {
    const uint8_t *sqe = nullptr; /* the 64 bytes, for handlers that read raw fields */
    uint8_t opc = 0;
    uint8_t fuse = 0;
    uint8_t psdt = 0;
    uint8_t fctype = 0; /* Fabrics commands only */
    uint16_t cid = 0;
    uint32_t nsid = 0;
    uint32_t cdw10 = 0, cdw11 = 0, cdw12 = 0, cdw13 = 0, cdw14 = 0, cdw15 = 0;
    Xfer xfer = Xfer::None;
    Sgl sgl;
    uint8_t sgl_type = 0; /* SGL1 byte 15 as received */
};

/* Parse the SQE at p[0..len): false only when len < 64. The SGL is decoded but not judged
 * (check_sgl does that, it needs to know what the queue accepts). */
bool parse_command(const uint8_t *p, size_t len, Command &out);

/* Judges SGL1 for the RDMA binding: PSDT must say "SGL, metadata in MPTR" (01b), no fused
 * operation, the descriptor a keyed data block (0x40/0x4F) or an offset data block (0x01)
 * whose data lies inside the in-capsule bytes received (icd_len) and the queue's limit
 * (icd_max), and in-capsule data only for host-to-controller commands. Returns 0 or a CQE
 * status field. */
uint16_t check_sgl(const Command &c, uint32_t icd_len, uint32_t icd_max);

/* Response capsule. */
struct Cqe {
    uint32_t dw0 = 0;
    uint32_t dw1 = 0;
    uint16_t sqhd = 0;
    uint16_t sqid = 0;
    uint16_t cid = 0;
    uint16_t status = 0; /* status_field(): phase bit 0 */
};
void encode_cqe(const Cqe &c, uint8_t out[kCqeLen]);
Cqe decode_cqe(const uint8_t in[kCqeLen]);

/* Builders for tests and the fuzz target: an SQE with a keyed SGL / in-capsule SGL. */
void build_sqe(uint8_t out[kSqeLen], uint8_t opc, uint16_t cid, uint32_t nsid);
void set_keyed_sgl(uint8_t sqe[kSqeLen], uint64_t addr, uint32_t len, uint32_t key,
                   bool invalidate);
void set_incapsule_sgl(uint8_t sqe[kSqeLen], uint64_t offset, uint32_t len);

} // namespace droce::nvmf
