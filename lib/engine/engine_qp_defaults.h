/* SPDX-License-Identifier: BSD-3-Clause */
/* What every QP a device creates takes from the device's configuration: the P_Key table,
 * DCQCN and the port's line rate, the TX burst limit, the RC responder's pacing.
 *
 * Set once at open (Dev::qp_defaults()), before any QP exists: QPs keep pointers into it
 * (the P_Key table, the DCQCN parameters), and the telemetry thread reads it. */
#pragma once

#include <cstdint>
#include <vector>

#include <droce/droce.h>

#include "cc_params.h"
#include "rc_cc.h"
#include "rc_qp.h"
#include "wire_packet.h"

namespace droce::engine {

struct QpDefaults {
    std::vector<uint16_t> pkeys = {wire::kDefaultPkey};
    bool cc_on = false;
    cc::CcParams cc;
    uint64_t line_rate_bps = 0;   /* the port's: the reaction point's maximum, PFC's quanta */
    uint32_t tx_burst_frames = 0; /* DeviceConfig::tx_burst_frames (0: off) */
    DeviceConfig::RcPacing rc_pacing;

    /* DCQCN (p: nullptr for off; copied) and the port's line rate. */
    void set_cc(const cc::CcParams *p, uint64_t line) {
        cc_on = p != nullptr;
        if (p)
            cc = *p;
        line_rate_bps = line;
    }
    /* The DCQCN parameters new QPs get; nullptr: DCQCN off. */
    const cc::CcParams *cc_params() const { return cc_on ? &cc : nullptr; }

    /* From the device's configuration; ccp: the DCQCN parameters cfg resolves to (used
     * when cfg.dcqcn), line: the port's line rate. */
    static QpDefaults from(const DeviceConfig &cfg, const cc::CcParams &ccp, uint64_t line) {
        QpDefaults d;
        d.pkeys = cfg.pkeys;
        d.set_cc(cfg.dcqcn ? &ccp : nullptr, line);
        d.tx_burst_frames = cfg.tx_burst_frames;
        d.rc_pacing = cfg.rc_pacing;
        return d;
    }

    /* An RC QP's share of them (its config points into this). */
    void apply(rc::QpConfig &c) const {
        c.pkey_table = pkeys.data();
        c.pkey_table_len = static_cast<uint32_t>(pkeys.size());
        c.cc = cc_params();
        c.line_rate_bps = line_rate_bps;
        c.tx_burst_frames = tx_burst_frames;
        /* DeviceConfig's defaults are the library's: a device that sets nothing changes
         * nothing */
        static_assert(
            DeviceConfig::RcPacing{}.dup_ack_interval_ns == rc::QpTuning{}.dup_ack_interval_ns &&
            DeviceConfig::RcPacing{}.seq_nak_interval_ns == rc::QpTuning{}.seq_nak_interval_ns &&
            DeviceConfig::RcPacing{}.seq_nak_after_run == rc::QpTuning{}.seq_nak_after_run);
        c.tuning.dup_ack_interval_ns = rc_pacing.dup_ack_interval_ns;
        c.tuning.seq_nak_interval_ns = rc_pacing.seq_nak_interval_ns;
        c.tuning.seq_nak_after_run = rc_pacing.seq_nak_after_run;
        if (!cc_on && tx_burst_frames != 0)
            c.cc = &rc::kShapeOnlyCc; /* held to the line rate, but DCQCN stays off */
    }
};

} // namespace droce::engine
