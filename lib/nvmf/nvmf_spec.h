/* SPDX-License-Identifier: BSD-3-Clause */
/* NVMe and NVMe over Fabrics wire constants (NVMe Base 1.4/2.0, NVMe-oF 1.1, the RDMA
 * transport binding): opcodes, status codes, property offsets, feature and log IDs, and
 * little-endian field access. Public: the glue and the tests speak these numbers. */
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace droce::nvmf {

static_assert(std::endian::native == std::endian::little,
              "NVMe fields are little-endian; the loads below copy bytes as they are");

inline uint16_t ld16(const uint8_t *p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}
inline uint32_t ld32(const uint8_t *p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline uint64_t ld64(const uint8_t *p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline void st16(uint8_t *p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void st32(uint8_t *p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void st64(uint8_t *p, uint64_t v) { std::memcpy(p, &v, 8); }

inline constexpr size_t kSqeLen = 64;
inline constexpr size_t kCqeLen = 16;
inline constexpr size_t kNqnLen = 256; /* NQN fields are 256 bytes, NUL-terminated */
inline constexpr size_t kConnectDataLen = 1024;
inline constexpr size_t kIdentifyLen = 4096;
inline constexpr char kDiscoveryNqn[] = "nqn.2014-08.org.nvmexpress.discovery";

/* Admin opcodes. */
enum AdminOpc : uint8_t {
    kAdminGetLogPage = 0x02,
    kAdminIdentify = 0x06,
    kAdminAbort = 0x08,
    kAdminSetFeatures = 0x09,
    kAdminGetFeatures = 0x0A,
    kAdminAsyncEvent = 0x0C,
    kAdminKeepAlive = 0x18,
};
inline constexpr uint8_t kOpcFabrics = 0x7F; /* on any queue */
/* NVM command set opcodes. */
enum NvmOpc : uint8_t {
    kNvmFlush = 0x00,
    kNvmWrite = 0x01,
    kNvmRead = 0x02,
    kNvmWriteZeroes = 0x08,
    kNvmDsm = 0x09,
};
/* Fabrics command types (SQE byte 4). */
enum FcType : uint8_t {
    kFcPropertySet = 0x00,
    kFcConnect = 0x01,
    kFcPropertyGet = 0x04,
};

/* Status code types and codes (CQE DW3 bits 31:17 = DNR, M, CRD, SCT, SC). */
enum Sct : uint8_t { kSctGeneric = 0, kSctCmdSpecific = 1, kSctMedia = 2 };
enum GenericSc : uint8_t {
    kScSuccess = 0x00,
    kScInvalidOpcode = 0x01,
    kScInvalidField = 0x02,
    kScDataXferError = 0x04,
    kScInternal = 0x06,
    kScAbortSqDeleted = 0x08,
    kScInvalidNs = 0x0B,
    kScCmdSeqError = 0x0C,
    kScSglInvalidLast = 0x0D,
    kScSglInvalidCount = 0x0E,
    kScSglInvalidDataLen = 0x0F, /* "Data SGL Length Invalid" */
    kScSglInvalidMetaLen = 0x10,
    kScSglInvalidType = 0x11, /* "SGL Descriptor Type Invalid" */
    kScSglInvalidOffset = 0x16,
    kScLbaOutOfRange = 0x80,
    kScCapExceeded = 0x81,
    kScNsNotReady = 0x82,
};
enum CmdSpecificSc : uint8_t {
    kScInvalidLogPage = 0x09,
    kScAerLimit = 0x05,
    kScFeatureNotSaveable = 0x0D,
    kScConnectIncompatibleFormat = 0x80,
    kScConnectCtrlBusy = 0x81,
    kScConnectInvalidParam = 0x82,
    kScConnectRestartDiscovery = 0x83,
    kScConnectInvalidHost = 0x84,
};
/* The status field as the CQE carries it in bits 15:1 of its last 16-bit word (phase bit 0
 * is always 0 on fabrics). */
inline constexpr uint16_t status_field(uint8_t sct, uint8_t sc, bool dnr) {
    return static_cast<uint16_t>((sc << 1) | ((sct & 7) << 9) | (dnr ? 0x8000 : 0));
}
inline constexpr uint8_t status_sct(uint16_t f) { return (f >> 9) & 7; }
inline constexpr uint8_t status_sc(uint16_t f) { return (f >> 1) & 0xFF; }

/* Controller properties (NVMe-oF 1.1 3.4): offsets and sizes. */
enum Prop : uint32_t {
    kPropCap = 0x00,  /* 8 bytes */
    kPropVs = 0x08,   /* 4 */
    kPropCc = 0x14,   /* 4 */
    kPropCsts = 0x1C, /* 4 */
    kPropNssr = 0x20, /* 4 */
};
inline constexpr uint32_t kCcEn = 1u;
inline constexpr uint32_t kCcShnShift = 14, kCcShnMask = 3u << 14;
inline constexpr uint32_t kCstsRdy = 1u, kCstsCfs = 2u;
inline constexpr uint32_t kCstsShstShift = 2;
inline constexpr uint32_t kCstsShstComplete = 2u << 2;

/* Feature identifiers. */
enum Fid : uint8_t {
    kFidArbitration = 0x01,
    kFidPowerMgmt = 0x02,
    kFidTempThreshold = 0x04,
    kFidErrorRecovery = 0x05,
    kFidVolatileWc = 0x06,
    kFidNumQueues = 0x07,
    kFidIrqCoalescing = 0x08,
    kFidWriteAtomicity = 0x0A,
    kFidAsyncEventConfig = 0x0B,
    kFidKeepAlive = 0x0F,
};
/* Log page identifiers. */
enum Lid : uint8_t {
    kLidErrorInfo = 0x01,
    kLidSmart = 0x02,
    kLidFwSlot = 0x03,
    kLidCmdEffects = 0x05,
    kLidDiscovery = 0x70,
};
/* Identify CNS values. */
enum Cns : uint8_t {
    kCnsNamespace = 0x00,
    kCnsController = 0x01,
    kCnsActiveNsList = 0x02,
    kCnsNsDescList = 0x03,
};

} // namespace droce::nvmf
