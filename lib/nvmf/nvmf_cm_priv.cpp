/* SPDX-License-Identifier: BSD-3-Clause */
#include "nvmf_cm_priv.h"

#include <cstring>

#include "nvmf_spec.h"

namespace droce::nvmf {

const char *cm_priv_error_name(CmPrivError e) {
    switch (e) {
    case CmPrivError::Ok:
        return "ok";
    case CmPrivError::TooShort:
        return "too short";
    case CmPrivError::BadRecfmt:
        return "bad recfmt";
    }
    return "?";
}

CmPrivError parse_cm_req_priv(const uint8_t *p, size_t len, CmReqPriv &o) {
    if (!p || len < kCmReqPrivLen)
        return CmPrivError::TooShort;
    o.recfmt = ld16(p);
    o.qid = ld16(p + 2);
    o.hrqsize = ld16(p + 4);
    o.hsqsize = ld16(p + 6);
    o.cntlid = ld16(p + 8);
    return o.recfmt == kCmRecfmt ? CmPrivError::Ok : CmPrivError::BadRecfmt;
}

CmPrivError parse_cm_rep_priv(const uint8_t *p, size_t len, CmRepPriv &o) {
    if (!p || len < kCmRepPrivLen)
        return CmPrivError::TooShort;
    o.recfmt = ld16(p);
    o.crqsize = ld16(p + 2);
    return o.recfmt == kCmRecfmt ? CmPrivError::Ok : CmPrivError::BadRecfmt;
}

CmPrivError parse_cm_rej_priv(const uint8_t *p, size_t len, CmRejPriv &o) {
    if (!p || len < kCmRejPrivLen)
        return CmPrivError::TooShort;
    o.recfmt = ld16(p);
    o.status = static_cast<CmRejStatus>(ld16(p + 2));
    return o.recfmt == kCmRecfmt ? CmPrivError::Ok : CmPrivError::BadRecfmt;
}

size_t encode_cm_req_priv(const CmReqPriv &v, uint8_t *p, size_t cap) {
    if (cap < kCmReqPrivLen)
        return 0;
    std::memset(p, 0, kCmReqPrivLen);
    st16(p, v.recfmt);
    st16(p + 2, v.qid);
    st16(p + 4, v.hrqsize);
    st16(p + 6, v.hsqsize);
    st16(p + 8, v.cntlid);
    return kCmReqPrivLen;
}

size_t encode_cm_rep_priv(const CmRepPriv &v, uint8_t *p, size_t cap) {
    if (cap < kCmRepPrivLen)
        return 0;
    std::memset(p, 0, kCmRepPrivLen);
    st16(p, v.recfmt);
    st16(p + 2, v.crqsize);
    return kCmRepPrivLen;
}

size_t encode_cm_rej_priv(const CmRejPriv &v, uint8_t *p, size_t cap) {
    if (cap < kCmRejPrivLen)
        return 0;
    st16(p, v.recfmt);
    st16(p + 2, static_cast<uint16_t>(v.status));
    return kCmRejPrivLen;
}

} // namespace droce::nvmf
