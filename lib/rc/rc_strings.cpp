/* SPDX-License-Identifier: BSD-3-Clause */
/* Names of verbs enums, as libibverbs prints them (ibv_wc_status_str). */
#include <droce/verbs.h>

namespace droce {

const char *qp_state_str(QpState s) {
    switch (s) {
    case QpState::Reset:
        return "RESET";
    case QpState::Init:
        return "INIT";
    case QpState::Rtr:
        return "RTR";
    case QpState::Rts:
        return "RTS";
    case QpState::Sqd:
        return "SQD";
    case QpState::Sqe:
        return "SQE";
    case QpState::Err:
        return "ERR";
    }
    return "?";
}

const char *wc_status_str(WcStatus s) {
    static const char *const names[] = {"success",
                                        "local length error",
                                        "local QP operation error",
                                        "local EE context operation error",
                                        "local protection error",
                                        "Work Request Flushed Error",
                                        "memory management operation error",
                                        "bad response error",
                                        "local access error",
                                        "remote invalid request error",
                                        "remote access error",
                                        "remote operation error",
                                        "transport retry counter exceeded",
                                        "RNR retry counter exceeded",
                                        "local RDD violation error",
                                        "remote invalid RD request",
                                        "operation aborted",
                                        "invalid EE context number",
                                        "invalid EE context state",
                                        "fatal error",
                                        "response timeout error",
                                        "general error"};
    const auto i = static_cast<unsigned>(s);
    return i < sizeof(names) / sizeof(names[0]) ? names[i] : "unknown";
}

} // namespace droce
