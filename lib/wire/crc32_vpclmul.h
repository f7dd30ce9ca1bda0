/* SPDX-License-Identifier: BSD-3-Clause */
/* Internal to lib/wire: the gather-list CRC folding kernels, each in its own translation
 * unit built with its own -m flags. Call one only when the CPU has what it needs
 * (wire_icrc.cpp checks __builtin_cpu_supports): 256-bit needs AVX2 + VPCLMULQDQ +
 * PCLMULQDQ, 512-bit AVX-512F + VPCLMULQDQ + PCLMULQDQ.
 *
 * Each folds the concatenation M of spans[] (total = |M| bytes, at least kMin of the
 * kernel; the caller sums the lengths) with CRC state `state` (zlib's ~crc) into a
 * 16-byte block whose init-0 CRC equals that of M started from `state`; the caller
 * finishes it to 32 bits. */
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire_icrc.h"

namespace droce::wire::detail {

inline constexpr size_t kGather256Min = 128;
inline constexpr size_t kGather512Min = 256;
void crc32_fold_gather256(const ByteSpan *spans, size_t total, uint32_t state, uint8_t acc[16]);
void crc32_fold_gather512(const ByteSpan *spans, size_t total, uint32_t state, uint8_t acc[16]);

} // namespace droce::wire::detail
