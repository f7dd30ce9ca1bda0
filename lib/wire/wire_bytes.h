/* SPDX-License-Identifier: BSD-3-Clause */
/* Big-endian loads and stores of header fields: every wire format droce speaks (Ethernet,
 * IPv4/IPv6, UDP, the IBTA transport and CM headers, MAC control) is network order, most
 * significant byte first. Byte by byte, so alignment never matters; GCC and Clang turn
 * each into one load or store and a byte swap. Header-only: any library may use it. */
#pragma once

#include <cstdint>

namespace droce::wire {

inline uint16_t load_be16(const uint8_t *p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
inline uint32_t load_be24(const uint8_t *p) {
    return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
}
inline uint32_t load_be32(const uint8_t *p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline uint64_t load_be64(const uint8_t *p) {
    return (uint64_t{load_be32(p)} << 32) | load_be32(p + 4);
}

inline void store_be16(uint8_t *p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}
inline void store_be24(uint8_t *p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 16);
    p[1] = static_cast<uint8_t>(v >> 8);
    p[2] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t *p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}
inline void store_be64(uint8_t *p, uint64_t v) {
    store_be32(p, static_cast<uint32_t>(v >> 32));
    store_be32(p + 4, static_cast<uint32_t>(v));
}

} // namespace droce::wire
