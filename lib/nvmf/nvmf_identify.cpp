/* SPDX-License-Identifier: BSD-3-Clause */
/* Identify data structures (NVMe Base 1.4 figures 247, 249; NVMe-oF 1.1 for the fabrics
 * part of Identify Controller): what the controller and its namespaces say about
 * themselves. Every claim here is one the code keeps. */
#include "nvmf_internal.h"

namespace droce::nvmf {

void Ops::identify_ctrl(const Target &t, const Controller &c, uint8_t *o) {
    const TargetConfig &cfg = t.config();
    const Subsystem &s = *c.sub;
    /* VID/SSVID 0: no PCI vendor. */
    put_ascii(o + 4, 20, s.serial);
    put_ascii(o + 24, 40, s.model);
    put_ascii(o + 64, 8, "0.1");
    o[72] = 6; /* RAB */
    /* MDTS in units of CAP.MPSMIN (4 KiB), a power of two. */
    o[77] = static_cast<uint8_t>(__builtin_ctz(cfg.max_io_bytes / 4096));
    st16(o + 78, c.cntlid);
    st32(o + 80, 0x00010400); /* VER 1.4 */
    /* OAES 0: this controller sends no asynchronous events (held AERs stay held). */
    o[111] = s.discovery ? 2 : 1; /* CNTRLTYPE: discovery / I/O controller */
    o[258] = 3;                   /* ACL: 4 Aborts (all answered "not aborted") */
    o[259] = static_cast<uint8_t>(cfg.aer_limit ? cfg.aer_limit - 1 : 0); /* AERL */
    o[260] = 0x3;  /* FRMW: slot 1 read-only, one slot */
    o[261] = 0x04; /* LPA: extended Get Log Page (NUMDU, offsets) */
    o[262] = static_cast<uint8_t>(kErrLogEntries - 1); /* ELPE */
    st16(o + 320, 10); /* KAS: keep-alive granularity 1 s (units of 100 ms) */
    o[512] = 0x66;     /* SQES: 64 bytes */
    o[513] = 0x44;     /* CQES: 16 bytes */
    st16(o + 514, s.discovery ? cfg.max_admin_depth : cfg.max_io_depth); /* MAXCMD */
    if (!s.discovery) {
        st32(o + 516, s.ns.empty() ? 0 : s.ns.back().nsid); /* NN: highest valid nsid */
        st16(o + 520, 0x000C); /* ONCS: Dataset Management, Write Zeroes */
        o[525] = 0;            /* VWC: no volatile write cache */
    }
    /* SGLS: SGLs with byte-aligned data, keyed SGL data blocks, SGL offsets (in-capsule). */
    st32(o + 536, 0x00100005);
    put_str(o + 768, kNqnLen, s.nqn);
    /* Fabrics: IOCCSZ / IORCSZ in 16-byte units, in-capsule data right after the SQE,
     * dynamic controller model, one SGL descriptor per command. */
    st32(o + 1792, static_cast<uint32_t>((kSqeLen + cfg.in_capsule_bytes) / 16));
    st32(o + 1796, kCqeLen / 16);
    st16(o + 1800, 0);
    o[1802] = 0;
    o[1803] = 1;
}

void Ops::identify_ns(const Namespace &n, uint8_t *o) {
    st64(o + 0, n.nsze);  /* NSZE */
    st64(o + 8, n.nsze);  /* NCAP */
    st64(o + 16, n.nsze); /* NUSE: no thin provisioning accounting, all of it */
    o[25] = 0;            /* NLBAF: one format */
    o[26] = 0;            /* FLBAS: format 0, no metadata */
    o[33] = 0x01;         /* DLFEAT: deallocated blocks read as zeroes */
    std::memcpy(o + 104, n.nguid.data(), 16);
    o[128 + 2] = n.lbads; /* LBAF0: LBADS, no metadata, best relative performance */
}

void Ops::active_ns_list(const Subsystem &s, uint32_t after, uint8_t *o) {
    size_t k = 0;
    for (const auto &n : s.ns)
        if (n.nsid > after && k < kIdentifyLen / 4)
            st32(o + 4 * k++, n.nsid);
}

void Ops::ns_desc_list(const Namespace &n, uint8_t *o) {
    o[0] = 2;  /* NIDT: NGUID */
    o[1] = 16; /* NIDL */
    std::memcpy(o + 4, n.nguid.data(), 16);
}

} // namespace droce::nvmf
