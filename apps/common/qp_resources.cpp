/* SPDX-License-Identifier: BSD-3-Clause */
#include "qp_resources.h"

#include <cstdio>

namespace droce::app {

namespace {
/* Set once before any QP exists (create_engine), read at each RTR/RTS. */
QpDefaults g_qp_defaults;
} // namespace

const QpDefaults &qp_defaults() { return g_qp_defaults; }
void set_qp_defaults(const QpDefaults &d) { g_qp_defaults = d; }

std::string create_rc_qp_in_init(ProtectionDomain &pd, CompletionQueue &cq, uint32_t max_send_wr,
                                 uint32_t max_recv_wr, uint8_t port, uint32_t access,
                                 std::unique_ptr<QueuePair> &qp) {
    QpInitAttr ia;
    ia.send_cq = &cq;
    ia.recv_cq = &cq;
    ia.cap.max_send_wr = max_send_wr;
    ia.cap.max_recv_wr = max_recv_wr;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    auto q = pd.create_qp(ia);
    if (!q)
        return "Couldn't create QP: " + q.status().message();
    qp = std::move(q.value());

    QpAttr a;
    a.qp_state = QpState::Init;
    a.pkey_index = 0;
    a.port_num = port;
    a.qp_access_flags = access;
    if (Status st = qp->modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags); !st)
        return "Failed to modify QP to INIT: " + st.message();
    return "";
}

std::string modify_rc_qp_to_rts(QueuePair &qp, uint32_t sq_psn, uint8_t max_rd_atomic) {
    QpAttr a;
    a.qp_state = QpState::Rts;
    a.timeout = g_qp_defaults.timeout;
    a.retry_cnt = g_qp_defaults.retry_cnt;
    a.rnr_retry = g_qp_defaults.rnr_retry;
    a.sq_psn = sq_psn;
    a.max_rd_atomic = max_rd_atomic;
    if (Status st = qp.modify(a, kQpState | kQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpSqPsn |
                                     kQpMaxQpRdAtomic);
        !st)
        return "Failed to modify QP to RTS: " + st.message();
    return "";
}

std::string QpResources::create_qp_in_init(uint32_t max_send_wr, uint32_t max_recv_wr, uint8_t port,
                                           uint32_t access) {
    return create_rc_qp_in_init(*pd, *cq, max_send_wr, max_recv_wr, port, access, qp);
}

std::string QpResources::modify_qp_to_rts(uint32_t sq_psn, uint8_t max_rd_atomic) {
    return modify_rc_qp_to_rts(*qp, sq_psn, max_rd_atomic);
}

void vprint_error(const std::string &prefix, const char *fmt, va_list ap) {
    std::fflush(stdout);
    std::fputs(prefix.c_str(), stderr);
    std::vfprintf(stderr, fmt, ap);
    std::fputc('\n', stderr);
}

} // namespace droce::app
