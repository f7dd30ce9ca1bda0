/* SPDX-License-Identifier: BSD-3-Clause */
/* librdmacm's addresses as GIDs (rdmacm_addr.h). */
#include "rdmacm_addr.h"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>

namespace droce::rdmacm {
namespace {

constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};

void map_v4(uint32_t ip, uint8_t gid[16]) {
    std::memcpy(gid, kMappedPrefix, sizeof kMappedPrefix);
    gid[12] = static_cast<uint8_t>(ip >> 24);
    gid[13] = static_cast<uint8_t>(ip >> 16);
    gid[14] = static_cast<uint8_t>(ip >> 8);
    gid[15] = static_cast<uint8_t>(ip);
}

} // namespace

bool CmAddr::is_v4() const { return std::memcmp(gid, kMappedPrefix, sizeof kMappedPrefix) == 0; }

uint32_t CmAddr::v4() const {
    if (!is_v4())
        return 0;
    return (uint32_t{gid[12]} << 24) | (uint32_t{gid[13]} << 16) | (uint32_t{gid[14]} << 8) |
           gid[15];
}

bool CmAddr::any() const {
    if (is_v4())
        return v4() == INADDR_ANY;
    static constexpr uint8_t kZero[16] = {};
    return std::memcmp(gid, kZero, sizeof kZero) == 0;
}

bool CmAddr::link_local() const { return gid[0] == 0xFE && (gid[1] & 0xC0) == 0x80; }

int parse_addr(const sockaddr *a, CmAddr &out) {
    if (a == nullptr)
        return EINVAL;
    out = CmAddr{};
    out.family = a->sa_family;
    if (a->sa_family == AF_INET) {
        sockaddr_in in;
        std::memcpy(&in, a, sizeof in);
        map_v4(ntohl(in.sin_addr.s_addr), out.gid);
        out.port = ntohs(in.sin_port);
        return 0;
    }
    if (a->sa_family == AF_INET6) {
        sockaddr_in6 in6;
        std::memcpy(&in6, a, sizeof in6);
        std::memcpy(out.gid, in6.sin6_addr.s6_addr, 16);
        out.port = ntohs(in6.sin6_port);
        return 0;
    }
    return EAFNOSUPPORT;
}

CmAddr v4_addr(uint32_t ip, uint16_t port) {
    CmAddr a;
    a.family = AF_INET;
    map_v4(ip, a.gid);
    a.port = port;
    return a;
}

CmAddr gid_addr(const uint8_t gid[16], uint16_t port) {
    CmAddr a;
    std::memcpy(a.gid, gid, 16);
    a.family = a.is_v4() ? AF_INET : AF_INET6;
    a.port = port;
    return a;
}

void write_addr(const CmAddr &a, sockaddr_storage &out) {
    std::memset(&out, 0, sizeof out);
    if (a.family == AF_INET) {
        sockaddr_in in{};
        in.sin_family = AF_INET;
        in.sin_addr.s_addr = htonl(a.v4());
        in.sin_port = htons(a.port);
        std::memcpy(&out, &in, sizeof in);
        return;
    }
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    std::memcpy(in6.sin6_addr.s6_addr, a.gid, 16);
    in6.sin6_port = htons(a.port);
    std::memcpy(&out, &in6, sizeof in6);
}

} // namespace droce::rdmacm
