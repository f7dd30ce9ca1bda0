/* SPDX-License-Identifier: BSD-3-Clause */
/* The RDMA-CM private data of the NVMe-oF RDMA transport binding (NVMe-oF 1.1 / the RDMA
 * transport spec 3.x): what the host puts after rdma_cm's 36-byte IP header in the CM REQ,
 * what the target answers in REP, and the REJ status. 32 bytes each (REJ: 4), little-endian.
 * Pure codec: no state. */
#pragma once

#include <cstddef>
#include <cstdint>

namespace droce::nvmf {

inline constexpr size_t kCmReqPrivLen = 32;
inline constexpr size_t kCmRepPrivLen = 32;
inline constexpr size_t kCmRejPrivLen = 4;
inline constexpr uint16_t kCmRecfmt = 0; /* the only record format defined */

struct CmReqPriv {
    uint16_t recfmt = 0;
    uint16_t qid = 0;     /* 0: admin queue */
    uint16_t hrqsize = 0; /* host receive queue size (1's based) */
    uint16_t hsqsize = 0; /* host send queue size (0's based, like SQSIZE) */
    uint16_t cntlid = 0;  /* NVMe-oF 1.1: 0xFFFF/unset on the admin queue */
};
struct CmRepPriv {
    uint16_t recfmt = 0;
    uint16_t crqsize = 0; /* controller receive queue size (1's based) */
};
/* NVMe-oF RDMA REJ status values. */
enum class CmRejStatus : uint16_t {
    InvalidLength = 0x01,
    InvalidRecfmt = 0x02,
    InvalidQid = 0x03,
    InvalidHsqsize = 0x04,
    InvalidHrqsize = 0x05,
    NoResources = 0x06,
    InvalidIrd = 0x07,
    InvalidOrd = 0x08,
    InvalidCntlid = 0x09,
};
struct CmRejPriv {
    uint16_t recfmt = 0;
    CmRejStatus status = CmRejStatus::InvalidLength;
};

enum class CmPrivError : uint8_t { Ok, TooShort, BadRecfmt };
const char *cm_priv_error_name(CmPrivError e);

/* p points at the NVMe-oF part (after the IP CM header); len what is left of the REQ's
 * private data. A bad recfmt is reported, the fields still decoded. */
CmPrivError parse_cm_req_priv(const uint8_t *p, size_t len, CmReqPriv &out);
CmPrivError parse_cm_rep_priv(const uint8_t *p, size_t len, CmRepPriv &out);
CmPrivError parse_cm_rej_priv(const uint8_t *p, size_t len, CmRejPriv &out);
/* Encoders write exactly k*PrivLen bytes (reserved bytes zero); return that length or 0
 * when cap is too small. */
size_t encode_cm_req_priv(const CmReqPriv &v, uint8_t *p, size_t cap);
size_t encode_cm_rep_priv(const CmRepPriv &v, uint8_t *p, size_t cap);
size_t encode_cm_rej_priv(const CmRejPriv &v, uint8_t *p, size_t cap);

} // namespace droce::nvmf
