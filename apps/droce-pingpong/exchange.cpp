/* SPDX-License-Identifier: BSD-3-Clause */
#include "exchange.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace droce::pingpong {

namespace {

int hex_nibble(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

using app::Fd;
using app::read_exact;
using app::write_all;

void report_timeout(const Waiter &w, const char *what) {
    if (w.expired())
        std::fprintf(stderr, "Timed out (--timeout) %s\n", what);
}

} // namespace

std::array<char, kDestMsgLen> format_dest(const Dest &d) {
    std::array<char, kDestMsgLen> msg{};
    char gid[33];
    for (int i = 0; i < 16; ++i)
        std::snprintf(&gid[2 * i], 3, "%02x", d.gid.raw[i]);
    std::snprintf(msg.data(), msg.size(), "%04x:%06x:%06x:%s", d.lid & 0xffff, d.qpn & 0xffffff,
                  d.psn & 0xffffff, gid);
    return msg;
}

bool parse_dest(const char *msg, size_t len, Dest &d) {
    // "llll:qqqqqq:pppppp:" + 32 hex digits, NUL-terminated within len.
    char buf[kDestMsgLen + 1] = {};
    std::memcpy(buf, msg, std::min(len, kDestMsgLen));
    unsigned lid = 0, qpn = 0, psn = 0;
    char gid[33] = {};
    if (std::sscanf(buf, "%x:%x:%x:%32s", &lid, &qpn, &psn, gid) != 4)
        return false;
    if (std::strlen(gid) != 32)
        return false;
    for (int i = 0; i < 16; ++i) {
        const int hi = hex_nibble(gid[2 * i]);
        const int lo = hex_nibble(gid[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        d.gid.raw[i] = static_cast<uint8_t>(hi << 4 | lo);
    }
    d.lid = lid & 0xffff;
    d.qpn = qpn & 0xffffff;
    d.psn = psn & 0xffffff;
    return true;
}

std::string gid_to_string(const Gid &g) {
    char s[INET6_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET6, g.raw, s, sizeof s) == nullptr)
        return "?";
    return s;
}

bool gid_is_zero(const Gid &g) {
    return std::all_of(std::begin(g.raw), std::end(g.raw), [](uint8_t b) { return b == 0; });
}

bool client_exchange(const std::string &servername, int port, const Dest &mine, Dest &remote,
                     const Waiter &w) {
    int gai_error = 0;
    Fd sock(
        app::tcp_connect(servername, port, AF_UNSPEC, std::chrono::milliseconds(0), w, &gai_error));
    if (gai_error != 0) {
        std::fprintf(stderr, "%s for %s:%d\n", ::gai_strerror(gai_error), servername.c_str(), port);
        return false;
    }
    if (!sock.valid()) {
        report_timeout(w, "while connecting");
        std::fprintf(stderr, "Couldn't connect to %s:%d\n", servername.c_str(), port);
        return false;
    }

    const auto msg = format_dest(mine);
    if (!write_all(sock.get(), msg.data(), msg.size(), w)) {
        std::fprintf(stderr, "Couldn't send local address\n");
        return false;
    }
    char in[kDestMsgLen];
    size_t got = 0;
    if (!read_exact(sock.get(), in, sizeof in, w, &got) ||
        !write_all(sock.get(), "done", kDoneMsgLen, w)) {
        report_timeout(w, "waiting for the server's address");
        std::fprintf(stderr, "%zu/%zu: Couldn't read/write remote address\n", got, sizeof in);
        return false;
    }
    if (!parse_dest(in, sizeof in, remote)) {
        std::fprintf(stderr, "Malformed remote address '%.*s'\n", static_cast<int>(sizeof in), in);
        return false;
    }
    return true;
}

bool server_exchange(int port, const Dest &mine, Dest &remote,
                     const std::function<bool(const Dest &)> &connect, const Waiter &w) {
    struct addrinfo hints = {};
    hints.ai_flags = AI_PASSIVE;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *res = nullptr;
    const std::string service = std::to_string(port);
    const int rc = ::getaddrinfo(nullptr, service.c_str(), &hints, &res);
    if (rc != 0) {
        std::fprintf(stderr, "%s for port %d\n", ::gai_strerror(rc), port);
        return false;
    }
    Fd lsock;
    for (struct addrinfo *t = res; t != nullptr; t = t->ai_next) {
        Fd s(::socket(t->ai_family, t->ai_socktype, t->ai_protocol));
        if (!s.valid())
            continue;
        int one = 1;
        ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (::bind(s.get(), t->ai_addr, t->ai_addrlen) == 0) {
            lsock.reset(s.release());
            break;
        }
    }
    ::freeaddrinfo(res);
    if (!lsock.valid() || ::listen(lsock.get(), 1) != 0) {
        std::fprintf(stderr, "Couldn't listen to port %d\n", port);
        return false;
    }
    app::set_nonblocking(lsock.get());
    int accepted = -1;
    switch (app::accept_one(lsock.get(), w, accepted)) {
    case app::AcceptResult::Accepted:
        break;
    case app::AcceptResult::WaitFailed:
        report_timeout(w, "waiting for a client");
        std::fprintf(stderr, "accept() failed\n");
        return false;
    case app::AcceptResult::Failed:
        std::fprintf(stderr, "accept() failed: %s\n", std::strerror(errno));
        return false;
    }
    Fd conn(accepted);
    lsock.reset();

    char in[kDestMsgLen];
    size_t got = 0;
    if (!read_exact(conn.get(), in, sizeof in, w, &got)) {
        report_timeout(w, "waiting for the client's address");
        std::fprintf(stderr, "%zu/%zu: Couldn't read remote address\n", got, sizeof in);
        return false;
    }
    if (!parse_dest(in, sizeof in, remote)) {
        std::fprintf(stderr, "Malformed remote address '%.*s'\n", static_cast<int>(sizeof in), in);
        return false;
    }
    if (!connect(remote)) {
        std::fprintf(stderr, "Couldn't connect to remote QP\n");
        return false;
    }
    const auto msg = format_dest(mine);
    char done[kDoneMsgLen];
    if (!write_all(conn.get(), msg.data(), msg.size(), w) ||
        !read_exact(conn.get(), done, sizeof done, w, &got)) {
        report_timeout(w, "waiting for the client's \"done\"");
        std::fprintf(stderr, "Couldn't send/recv local address\n");
        return false;
    }
    return true;
}

} // namespace droce::pingpong
