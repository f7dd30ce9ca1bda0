/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * Strict number parsing for the droce tools' command lines: the whole argument must be
 * the number, in range, or the parse fails (the caller prints "invalid value ..."). */
#pragma once

#include <cstdint>

namespace droce::app {

/** Unsigned, decimal, 0x hex or 0 octal (as strtoull(..., 0)); no sign; <= max. */
bool parse_u64(const char *s, uint64_t max, uint64_t &out);

/** Signed, decimal, 0x hex or 0 octal (as strtoll(..., 0)); min..max. */
bool parse_i64(const char *s, int64_t min, int64_t max, int64_t &out);

/** Bytes: unsigned (as parse_u64) with an optional suffix K, M or G (2^10, 2^20, 2^30,
 * either case): "4096", "64K", "1G"; <= max bytes. */
bool parse_size_bytes(const char *s, uint64_t max, uint64_t &out);

/** A rate in bit/s: a decimal number with an optional suffix k, m or g (10^3, 10^6,
 * 10^9; "1g" = 1 Gb/s, "2.5g" allowed), 1 bit/s .. 10 Tb/s (--line-rate). */
bool parse_rate_bps(const char *s, uint64_t &out);

/** Seconds as a decimal or floating-point number, 0..1e6 (--timeout). */
bool parse_seconds(const char *s, double &out);

} // namespace droce::app
