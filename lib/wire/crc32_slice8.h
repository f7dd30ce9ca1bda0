/* SPDX-License-Identifier: BSD-3-Clause */
/* Continuing a finished CRC-32 (Ethernet, reflected 0xEDB88320, zlib's crc32(crc, p, 8))
 * over exactly 8 more bytes with slicing-by-8 tables: eight independent lookups, where a
 * call into the folding kernels costs more than the bytes. The RX ACK ICRC cache
 * (wire_packet.cpp) and the prebuilt TX ACK (wire_ack_template.cpp) use it. */
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace droce::wire::slice8 {

using Tables = std::array<std::array<uint32_t, 256>, 8>;
/* T[0] is the byte-at-a-time table, T[k][i] runs i through k more zero bytes. */
constexpr Tables make_tables() {
    Tables t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int b = 0; b < 8; ++b)
            c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        t[0][i] = c;
    }
    for (size_t k = 1; k < 8; ++k)
        for (uint32_t i = 0; i < 256; ++i)
            t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    return t;
}
inline constexpr Tables kT = make_tables();

inline uint32_t ld32le(const uint8_t *p) {
    return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

inline uint32_t crc32_continue8(uint32_t crc, const uint8_t *p) {
    const uint32_t lo = ~crc ^ ld32le(p);
    const uint32_t hi = ld32le(p + 4);
    return ~(kT[7][lo & 0xFF] ^ kT[6][(lo >> 8) & 0xFF] ^ kT[5][(lo >> 16) & 0xFF] ^
             kT[4][lo >> 24] ^ kT[3][hi & 0xFF] ^ kT[2][(hi >> 8) & 0xFF] ^
             kT[1][(hi >> 16) & 0xFF] ^ kT[0][hi >> 24]);
}

} // namespace droce::wire::slice8
