/* SPDX-License-Identifier: BSD-3-Clause */
/* Names of verbs enums, as libibverbs prints them (ibv_wc_status_str, ibv_event_type_str):
 * the vocabulary's (vocab_verbs.h) functions, in the base RC and UD share. */
#include "vocab_verbs.h"

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

const char *async_event_str(AsyncEventType t) {
    static const char *const names[] = {"CQ error",
                                        "local work queue catastrophic error",
                                        "invalid request local work queue error",
                                        "local access violation work queue error",
                                        "communication established",
                                        "send queue drained",
                                        "path migrated",
                                        "path migration request error",
                                        "local catastrophic error",
                                        "port active",
                                        "port error",
                                        "LID change",
                                        "P_Key change",
                                        "SM change",
                                        "SRQ catastrophic error",
                                        "SRQ limit reached",
                                        "last WQE reached",
                                        "client reregistration",
                                        "GID table change",
                                        "WQ fatal",
                                        "PFC pause storm"};
    const auto i = static_cast<unsigned>(t);
    return i < sizeof(names) / sizeof(names[0]) ? names[i] : "unknown";
}

} // namespace droce
