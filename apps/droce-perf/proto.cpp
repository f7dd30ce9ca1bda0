/* SPDX-License-Identifier: BSD-3-Clause */
#include "proto.h"

#include <arpa/inet.h>
#include <endian.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace droce::perf {

namespace {

uint64_t dbl_bits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
}
double bits_dbl(uint64_t u) {
    double d;
    std::memcpy(&d, &u, sizeof d);
    return d;
}

} // namespace

std::array<char, kRecordLen> format_dest(const Dest &d) {
    std::array<char, kRecordLen> m{};
    int n = std::snprintf(m.data(), m.size(), "%04x:%04x:%06x:%06x:%08x:%016llx:", d.lid & 0xffff,
                          d.out_reads & 0xffff, d.qpn & 0xffffff, d.psn & 0xffffff, d.rkey,
                          static_cast<unsigned long long>(d.vaddr));
    for (int i = 0; i < 16 && n > 0; ++i)
        n += std::snprintf(m.data() + n, m.size() - static_cast<size_t>(n), "%02x:", d.gid.raw[i]);
    std::snprintf(m.data() + n, m.size() - static_cast<size_t>(n), "%08x:", d.srqn);
    return m;
}

bool parse_dest(const char *msg, size_t len, Dest &d) {
    char buf[kRecordLen + 1] = {};
    std::memcpy(buf, msg, std::min(len, kRecordLen));
    unsigned lid, outs, qpn, psn, rkey, srqn;
    unsigned long long vaddr;
    unsigned g[16];
    const int n = std::sscanf(
        buf, "%x:%x:%x:%x:%x:%llx:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x:%x", &lid, &outs,
        &qpn, &psn, &rkey, &vaddr, &g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6], &g[7], &g[8],
        &g[9], &g[10], &g[11], &g[12], &g[13], &g[14], &g[15], &srqn);
    if (n != 23)
        return false;
    d.lid = lid;
    d.out_reads = outs;
    d.qpn = qpn & 0xffffff;
    d.psn = psn & 0xffffff;
    d.rkey = rkey;
    d.vaddr = vaddr;
    for (int i = 0; i < 16; ++i)
        d.gid.raw[i] = static_cast<uint8_t>(g[i]);
    d.srqn = srqn;
    return true;
}

std::string gid_to_string(const Gid &g) {
    char s[64];
    std::snprintf(s, sizeof s,
                  "%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d",
                  g.raw[0], g.raw[1], g.raw[2], g.raw[3], g.raw[4], g.raw[5], g.raw[6], g.raw[7],
                  g.raw[8], g.raw[9], g.raw[10], g.raw[11], g.raw[12], g.raw[13], g.raw[14],
                  g.raw[15]);
    return s;
}

Conn::~Conn() { close(); }

void Conn::close() {
    if (fd_ >= 0)
        ::close(fd_);
    fd_ = -1;
}

bool Conn::connect(const std::string &host, int port, const Waiter &w) {
    // perftest's client gives up at once; retrying for a few seconds makes scripted
    // runs (server started just before) robust.
    int gai_error = 0;
    fd_ = app::tcp_connect(host, port, AF_INET, std::chrono::seconds(10), w, &gai_error);
    if (gai_error != 0) {
        std::fprintf(stderr, " %s for %s:%d\n", ::gai_strerror(gai_error), host.c_str(), port);
        return false;
    }
    if (fd_ < 0) {
        std::fprintf(stderr, "Couldn't connect to %s:%d\n", host.c_str(), port);
        return false;
    }
    return true;
}

bool Conn::accept(int port, const Waiter &w) {
    app::Fd ls(::socket(AF_INET, SOCK_STREAM, 0));
    if (!ls.valid())
        return false;
    int one = 1;
    ::setsockopt(ls.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (::bind(ls.get(), reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 ||
        ::listen(ls.get(), 1) != 0) {
        std::fprintf(stderr, "Couldn't listen to port %d: %s\n", port, std::strerror(errno));
        return false;
    }
    app::set_nonblocking(ls.get());
    switch (app::accept_one(ls.get(), w, fd_)) {
    case app::AcceptResult::Accepted:
        return true;
    case app::AcceptResult::WaitFailed:
        std::fprintf(stderr, "accept() failed%s\n", w.expired() ? " (--timeout)" : "");
        return false;
    case app::AcceptResult::Failed:
        std::fprintf(stderr, "accept() failed: %s\n", std::strerror(errno));
        return false;
    }
    return false;
}

bool Conn::write_all(const void *buf, size_t len, const Waiter &w) {
    return app::write_all(fd_, buf, len, w);
}

bool Conn::read_exact(void *buf, size_t len, const Waiter &w) {
    return app::read_exact(fd_, buf, len, w);
}

bool Conn::xchg(bool client, const void *mine, void *theirs, size_t len, const Waiter &w) {
    if (client)
        return write_all(mine, len, w) && read_exact(theirs, len, w);
    return read_exact(theirs, len, w) && write_all(mine, len, w);
}

long Conn::peek(void *buf, size_t max) {
    const ssize_t n = ::recv(fd_, buf, max, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0)
        return n;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return 0;
    return -1;
}

bool Conn::hand_shake(bool client, const Dest &mine, Dest &theirs, const Waiter &w) {
    const auto msg = format_dest(mine);
    char in[kRecordLen];
    if (!xchg(client, msg.data(), in, kRecordLen, w)) {
        std::fprintf(stderr, " Failed to exchange data between server and clients%s\n",
                     w.expired() ? " (--timeout)" : "");
        return false;
    }
    if (!parse_dest(in, kRecordLen, theirs)) {
        std::fprintf(stderr, " Malformed remote record '%.*s'\n", static_cast<int>(kRecordLen - 1),
                     in);
        return false;
    }
    return true;
}

bool Conn::xchg_reports(bool client, const BwReport &mine, BwReport &theirs, const Waiter &w) {
    const uint64_t out[5] = {htobe64(mine.size), htobe64(mine.iters),
                             htobe64(dbl_bits(mine.bw_peak)), htobe64(dbl_bits(mine.bw_avg)),
                             htobe64(dbl_bits(mine.msg_rate))};
    uint64_t in[5] = {};
    for (int i = 0; i < 5; ++i)
        if (!xchg(client, &out[i], &in[i], 8, w)) {
            std::fprintf(stderr, " Failed to exchange data between server and clients\n");
            return false;
        }
    theirs.size = be64toh(in[0]);
    theirs.iters = be64toh(in[1]);
    theirs.bw_peak = bits_dbl(be64toh(in[2]));
    theirs.bw_avg = bits_dbl(be64toh(in[3]));
    theirs.msg_rate = bits_dbl(be64toh(in[4]));
    return true;
}

void Conn::close_done(const Waiter &w) {
    if (fd_ >= 0)
        write_all("done", 5, w);
    close();
}

bool exchange_preamble(Conn &c, bool client, int &mtu_enum, const Waiter &w) {
    char ver[kVersionLen] = {};
    std::strncpy(ver, kVersion, sizeof ver - 1);
    char rver[kVersionLen] = {};
    if (!c.xchg(client, ver, rver, sizeof ver, w)) {
        std::fprintf(stderr, " Failed to exchange data between server and clients (versions)\n");
        return false;
    }
    rver[kVersionLen - 1] = '\0';
    if (std::atof(rver) < 5.70) {
        std::fprintf(
            stderr,
            "Current implementation is not compatible with versions older than 5.70 (peer: '%s')\n",
            rver);
        return false;
    }
    const uint32_t cyc = htonl(4096), cl = htonl(64);
    uint32_t rcyc = 0, rcl = 0;
    if (!c.xchg(client, &cyc, &rcyc, 4, w) || !c.xchg(client, &cl, &rcl, 4, w)) {
        std::fprintf(stderr, " Failed to exchange Page Size data between server and client\n");
        return false;
    }
    char cur[2] = {static_cast<char>('0' + mtu_enum), '\0'};
    char rem[2] = {};
    if (!c.xchg(client, cur, rem, 2, w)) {
        std::fprintf(stderr, " Failed to exchange data between server and clients (MTU)\n");
        return false;
    }
    const int r = rem[0] - '0';
    if (r >= 1 && r <= 5 && r < mtu_enum)
        mtu_enum = r;
    return true;
}

} // namespace droce::perf
