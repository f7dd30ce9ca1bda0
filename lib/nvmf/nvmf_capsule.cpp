/* SPDX-License-Identifier: BSD-3-Clause */
#include "nvmf_capsule.h"

namespace droce::nvmf {

namespace {
constexpr uint8_t kSglKeyedAddr = 0x40;   /* Keyed SGL Data Block, subtype Address */
constexpr uint8_t kSglKeyedInv = 0x4F;    /* ..., subtype Invalidate Key */
constexpr uint8_t kSglDataOffset = 0x01;  /* SGL Data Block, subtype Offset */
constexpr uint8_t kPsdtSglMptrContig = 1; /* SGL for data, MPTR a plain address */
} // namespace

bool parse_command(const uint8_t *p, size_t len, Command &c) {
    if (!p || len < kSqeLen)
        return false;
    c = Command{};
    c.sqe = p;
    c.opc = p[0];
    c.fuse = p[1] & 3;
    c.psdt = (p[1] >> 6) & 3;
    c.cid = ld16(p + 2);
    c.nsid = ld32(p + 4);
    c.fctype = p[4];
    c.cdw10 = ld32(p + 40);
    c.cdw11 = ld32(p + 44);
    c.cdw12 = ld32(p + 48);
    c.cdw13 = ld32(p + 52);
    c.cdw14 = ld32(p + 56);
    c.cdw15 = ld32(p + 60);
    /* Fabrics commands take their direction from fctype; everything else from opcode. */
    c.xfer = static_cast<Xfer>((c.opc == kOpcFabrics ? c.fctype : c.opc) & 3);
    const uint8_t *d = p + 24;
    c.sgl_type = d[15];
    c.sgl.addr = ld64(d);
    if (c.sgl_type == kSglDataOffset) {
        c.sgl.kind = Sgl::Kind::InCapsule;
        c.sgl.len = ld32(d + 8);
    } else {
        c.sgl.kind = Sgl::Kind::Keyed;
        c.sgl.len = static_cast<uint32_t>(d[8]) | (static_cast<uint32_t>(d[9]) << 8) |
                    (static_cast<uint32_t>(d[10]) << 16);
        c.sgl.key = ld32(d + 11);
        c.sgl.invalidate = c.sgl_type == kSglKeyedInv;
    }
    return true;
}

uint16_t check_sgl(const Command &c, uint32_t icd_len, uint32_t icd_max) {
    if (c.psdt != kPsdtSglMptrContig || c.fuse != 0)
        return status_field(kSctGeneric, kScInvalidField, true);
    switch (c.sgl_type) {
    case kSglKeyedAddr:
    case kSglKeyedInv:
        return 0;
    case kSglDataOffset: {
        if (c.xfer != Xfer::HostToCtrl)
            return status_field(kSctGeneric, kScInvalidField, true);
        const uint64_t end = c.sgl.addr + c.sgl.len; /* may wrap: checked below */
        if (c.sgl.addr > icd_max || end < c.sgl.addr || end > icd_max)
            return status_field(kSctGeneric, kScSglInvalidOffset, true);
        /* Inside what the queue allows but beyond what the host actually sent. */
        if (end > icd_len)
            return status_field(kSctGeneric, kScSglInvalidDataLen, true);
        return 0;
    }
    default:
        return status_field(kSctGeneric, kScSglInvalidType, true);
    }
}

void encode_cqe(const Cqe &c, uint8_t *o) {
    st32(o, c.dw0);
    st32(o + 4, c.dw1);
    st16(o + 8, c.sqhd);
    st16(o + 10, c.sqid);
    st16(o + 12, c.cid);
    st16(o + 14, c.status);
}

Cqe decode_cqe(const uint8_t *i) {
    Cqe c;
    c.dw0 = ld32(i);
    c.dw1 = ld32(i + 4);
    c.sqhd = ld16(i + 8);
    c.sqid = ld16(i + 10);
    c.cid = ld16(i + 12);
    c.status = ld16(i + 14);
    return c;
}

void build_sqe(uint8_t *o, uint8_t opc, uint16_t cid, uint32_t nsid) {
    std::memset(o, 0, kSqeLen);
    o[0] = opc;
    o[1] = kPsdtSglMptrContig << 6;
    st16(o + 2, cid);
    st32(o + 4, nsid);
}

void set_keyed_sgl(uint8_t *o, uint64_t addr, uint32_t len, uint32_t key, bool invalidate) {
    uint8_t *d = o + 24;
    st64(d, addr);
    d[8] = len & 0xFF;
    d[9] = (len >> 8) & 0xFF;
    d[10] = (len >> 16) & 0xFF;
    st32(d + 11, key);
    d[15] = invalidate ? kSglKeyedInv : kSglKeyedAddr;
}

void set_incapsule_sgl(uint8_t *o, uint64_t offset, uint32_t len) {
    uint8_t *d = o + 24;
    std::memset(d, 0, 16);
    st64(d, offset);
    st32(d + 8, len);
    d[15] = kSglDataOffset;
}

} // namespace droce::nvmf
