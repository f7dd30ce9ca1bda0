/* SPDX-License-Identifier: BSD-3-Clause */
#include "cm_event.h"

namespace droce::cm {

const char *conn_state_name(ConnState s) {
    switch (s) {
    case ConnState::Idle:
        return "idle";
    case ConnState::ReqSent:
        return "req_sent";
    case ConnState::MraReqRcvd:
        return "mra_req_rcvd";
    case ConnState::ReqRcvd:
        return "req_rcvd";
    case ConnState::MraReqSent:
        return "mra_req_sent";
    case ConnState::RepSent:
        return "rep_sent";
    case ConnState::MraRepRcvd:
        return "mra_rep_rcvd";
    case ConnState::Established:
        return "established";
    case ConnState::DreqSent:
        return "dreq_sent";
    case ConnState::Timewait:
        return "timewait";
    case ConnState::SidrReqSent:
        return "sidr_req_sent";
    case ConnState::SidrReqRcvd:
        return "sidr_req_rcvd";
    }
    return "?";
}

const char *cm_event_name(CmEventType t) {
    switch (t) {
    case CmEventType::ConnectRequest:
        return "connect_request";
    case CmEventType::Established:
        return "established";
    case CmEventType::Rejected:
        return "rejected";
    case CmEventType::Unreachable:
        return "unreachable";
    case CmEventType::ConnectError:
        return "connect_error";
    case CmEventType::Disconnected:
        return "disconnected";
    case CmEventType::TimewaitExit:
        return "timewait_exit";
    case CmEventType::SidrRequest:
        return "sidr_request";
    case CmEventType::SidrResolved:
        return "sidr_resolved";
    case CmEventType::SidrRejected:
        return "sidr_rejected";
    case CmEventType::SidrUnreachable:
        return "sidr_unreachable";
    }
    return "?";
}

} // namespace droce::cm
