/* SPDX-License-Identifier: BSD-3-Clause */
/* Log pages: the discovery log (one entry per NVM subsystem on this port), the error
 * information log (the last kErrLogEntries non-success completions), SMART / health
 * (counted, never invented: no temperature sensor, no spare, no wear) and the commands
 * supported and effects log. Each builds the whole page; Get Log Page cuts its window. */
#include "nvmf_internal.h"

namespace droce::nvmf {

namespace {
/* SMART's data units: thousands of 512-byte units, rounded up. */
void put128(uint8_t *p, uint64_t v) {
    st64(p, v);
    st64(p + 8, 0);
}
} // namespace

size_t Ops::discovery_log(const Target &t, uint8_t *o, size_t cap) {
    const Target::Impl &im = impl(t);
    const TargetConfig &cfg = t.config();
    /* Every subsystem on the port: first this discovery subsystem itself ("current
     * discovery subsystem", SUBTYPE 3, as NVMe-oF TP 8013 and nvmet list it), then the
     * NVM subsystems (SUBTYPE 2). im.subs[0] is the discovery subsystem. */
    const size_t nrec = im.subs.size();
    const size_t len = 1024 * (nrec + 1);
    if (len > cap)
        return 0;
    st64(o + 0, im.genctr); /* GENCTR: the configuration never changes at run time */
    st64(o + 8, nrec);      /* NUMREC */
    st16(o + 16, 0);        /* RECFMT */
    for (size_t i = 0; i < nrec; ++i) {
        const Subsystem &s = im.subs[i];
        uint8_t *e = o + 1024 * (i + 1);
        e[0] = 1;                          /* TRTYPE: RDMA */
        e[1] = cfg.adrfam;                 /* ADRFAM */
        e[2] = s.discovery ? 3 : 2;        /* SUBTYPE */
        e[3] = 0;                          /* TREQ: secure channel not specified */
        st16(e + 4, cfg.port_id);          /* PORTID */
        st16(e + 6, 0xFFFF);               /* CNTLID: dynamic */
        st16(e + 8, cfg.max_admin_depth);  /* ASQSZ */
        put_str(e + 32, 32, cfg.trsvcid);  /* TRSVCID */
        put_str(e + 256, kNqnLen, s.nqn);  /* SUBNQN */
        put_str(e + 512, 256, cfg.traddr); /* TRADDR */
        /* TSAS for RDMA: reliable connected QP, no provider type, RDMA-CM. */
        e[768] = 1;
        e[769] = 1;
        e[770] = 1;
    }
    return len;
}

size_t Ops::error_log(const Controller &c, uint8_t *o, size_t cap) {
    const size_t len = 64 * kErrLogEntries;
    if (len > cap)
        return 0;
    /* Newest first. */
    for (size_t i = 0; i < kErrLogEntries && i < c.err_count; ++i) {
        const ErrorEntry &e = c.err[(c.err_next + kErrLogEntries - 1 - i) % kErrLogEntries];
        uint8_t *p = o + 64 * i;
        st64(p, e.count);
        st16(p + 8, e.sqid);
        st16(p + 10, e.cid);
        st16(p + 12, e.status);
        st16(p + 14, 0xFFFF); /* parameter error location: not given */
        st64(p + 16, e.lba);
        st32(p + 24, e.nsid);
        p[29] = 1; /* TRTYPE: RDMA */
    }
    return len;
}

size_t Ops::smart_log(const Controller &c, uint64_t now, uint8_t *o, size_t cap) {
    if (cap < 512)
        return 0;
    /* Critical warning 0; composite temperature 0 (no sensor: 0 K says "not reported");
     * available spare and its threshold 0; percentage used 0. */
    put128(o + 32, (c.units_read + 999) / 1000);
    put128(o + 48, (c.units_written + 999) / 1000);
    put128(o + 64, c.host_reads);
    put128(o + 80, c.host_writes);
    put128(o + 112, 1); /* power cycles: this process is the one */
    put128(o + 128, (now - c.created_ns) / 3600000000000ull); /* power-on hours */
    put128(o + 160, c.media_errors);
    put128(o + 176, c.err_count);
    return 512;
}

size_t Ops::effects_log(uint8_t *o, size_t cap) {
    if (cap < 4096)
        return 0;
    /* CSUPP for each command this controller runs; LBCC for the ones that change data. */
    const uint8_t admin[] = {kAdminGetLogPage,  kAdminIdentify,   kAdminAbort,    kAdminSetFeatures,
                             kAdminGetFeatures, kAdminAsyncEvent, kAdminKeepAlive};
    for (uint8_t a : admin)
        st32(o + 4 * a, 1);
    st32(o + 1024 + 4 * kNvmFlush, 1);
    st32(o + 1024 + 4 * kNvmRead, 1);
    st32(o + 1024 + 4 * kNvmWrite, 0x3);
    st32(o + 1024 + 4 * kNvmWriteZeroes, 0x3);
    st32(o + 1024 + 4 * kNvmDsm, 0x3);
    return 4096;
}

} // namespace droce::nvmf
