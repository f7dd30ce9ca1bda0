/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The addresses of librdmacm's calls, IPv4 and IPv6 alike: a sockaddr read into a GID
 * (RoCE's form of an IP address: IPv6, or IPv4-mapped ::ffff:a.b.c.d) with its port, and
 * written back in the caller's family. An AF_INET6 address that is IPv4-mapped is IPv4 on
 * the wire (the kernel's rdma_cm treats it so), and keeps its family in the id. */
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>

namespace droce::rdmacm {

struct CmAddr {
    sa_family_t family = AF_INET; /**< the caller's: AF_INET or AF_INET6 */
    uint8_t gid[16] = {};         /**< IPv6, or ::ffff:a.b.c.d */
    uint16_t port = 0;            /**< host order */

    /** IPv4 on the wire (an AF_INET address, or an IPv4-mapped AF_INET6 one). */
    bool is_v4() const;
    /** The IPv4 address, host order (0 unless is_v4()). */
    uint32_t v4() const;
    /** INADDR_ANY or in6addr_any. */
    bool any() const;
    /** fe80::/10: reached through the link-local GID. */
    bool link_local() const;
};

/** a as a CmAddr: 0, EINVAL (null) or EAFNOSUPPORT (neither IPv4 nor IPv6). */
int parse_addr(const sockaddr *a, CmAddr &out);
/** An IPv4 address (host order) as a CmAddr of family AF_INET. */
CmAddr v4_addr(uint32_t ip, uint16_t port);
/** A GID as a CmAddr: AF_INET when it is IPv4-mapped, else AF_INET6. */
CmAddr gid_addr(const uint8_t gid[16], uint16_t port);
/** Writes a into out (room for a sockaddr_storage), in a's family. */
void write_addr(const CmAddr &a, sockaddr_storage &out);

} // namespace droce::rdmacm
