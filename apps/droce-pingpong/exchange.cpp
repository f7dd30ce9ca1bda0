/* SPDX-License-Identifier: BSD-3-Clause */
#include "exchange.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

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

/** Closes an fd on scope exit. */
struct Fd {
    int fd = -1;
    explicit Fd(int f = -1) : fd(f) {}
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    ~Fd() {
        if (fd >= 0)
            ::close(fd);
    }
    void reset(int f = -1) {
        if (fd >= 0)
            ::close(fd);
        fd = f;
    }
};

enum class WaitResult { Ready, Timeout, Error };

/** Waits until fd has `events`, running the pump (if any) meanwhile. */
WaitResult wait_fd(int fd, short events, const Waiter &w) {
    while (true) {
        int slice_ms = w.pump ? 1 : 100;
        if (w.has_deadline) {
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                                  w.deadline - std::chrono::steady_clock::now())
                                  .count();
            if (left <= 0)
                return WaitResult::Timeout;
            slice_ms = static_cast<int>(std::min<long long>(slice_ms, left));
        }
        struct pollfd p = {fd, events, 0};
        const int n = ::poll(&p, 1, slice_ms);
        if (n < 0 && errno != EINTR)
            return WaitResult::Error;
        if (n > 0)
            return WaitResult::Ready; // including POLLERR/POLLHUP: the next call reports it
        if (w.pump)
            w.pump();
    }
}

/** Sends all of buf (non-blocking socket). */
bool write_all(int fd, const void *buf, size_t len, const Waiter &w) {
    const auto *p = static_cast<const char *>(buf);
    size_t done = 0;
    while (done < len) {
        const ssize_t n = ::send(fd, p + done, len - done, MSG_NOSIGNAL);
        if (n > 0) {
            done += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (wait_fd(fd, POLLOUT, w) != WaitResult::Ready)
                return false;
            continue;
        }
        return false;
    }
    return true;
}

/** Reads exactly len bytes (TCP may split the message); false on EOF/error/timeout.
 * *got says how many arrived. */
bool read_exact(int fd, void *buf, size_t len, const Waiter &w, size_t *got) {
    auto *p = static_cast<char *>(buf);
    size_t done = 0;
    while (done < len) {
        const ssize_t n = ::recv(fd, p + done, len - done, 0);
        if (n > 0) {
            done += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (wait_fd(fd, POLLIN, w) != WaitResult::Ready)
                break;
            continue;
        }
        break; // EOF or error
    }
    if (got)
        *got = done;
    return done == len;
}

void set_nonblocking(int fd) {
    const int fl = ::fcntl(fd, F_GETFL, 0);
    if (fl >= 0)
        ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

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
    struct addrinfo hints = {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *res = nullptr;
    const std::string service = std::to_string(port);
    const int rc = ::getaddrinfo(servername.c_str(), service.c_str(), &hints, &res);
    if (rc != 0) {
        std::fprintf(stderr, "%s for %s:%d\n", ::gai_strerror(rc), servername.c_str(), port);
        return false;
    }
    Fd sock;
    for (struct addrinfo *t = res; t != nullptr; t = t->ai_next) {
        Fd s(::socket(t->ai_family, t->ai_socktype, t->ai_protocol));
        if (s.fd < 0)
            continue;
        set_nonblocking(s.fd);
        if (::connect(s.fd, t->ai_addr, t->ai_addrlen) != 0) {
            if (errno != EINPROGRESS)
                continue;
            if (wait_fd(s.fd, POLLOUT, w) != WaitResult::Ready)
                continue;
            int err = 0;
            socklen_t el = sizeof err;
            if (::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0)
                continue;
        }
        sock.reset(s.fd);
        s.fd = -1;
        break;
    }
    ::freeaddrinfo(res);
    if (sock.fd < 0) {
        report_timeout(w, "while connecting");
        std::fprintf(stderr, "Couldn't connect to %s:%d\n", servername.c_str(), port);
        return false;
    }

    const auto msg = format_dest(mine);
    if (!write_all(sock.fd, msg.data(), msg.size(), w)) {
        std::fprintf(stderr, "Couldn't send local address\n");
        return false;
    }
    char in[kDestMsgLen];
    size_t got = 0;
    if (!read_exact(sock.fd, in, sizeof in, w, &got) ||
        !write_all(sock.fd, "done", kDoneMsgLen, w)) {
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
        if (s.fd < 0)
            continue;
        int one = 1;
        ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (::bind(s.fd, t->ai_addr, t->ai_addrlen) == 0) {
            lsock.reset(s.fd);
            s.fd = -1;
            break;
        }
    }
    ::freeaddrinfo(res);
    if (lsock.fd < 0 || ::listen(lsock.fd, 1) != 0) {
        std::fprintf(stderr, "Couldn't listen to port %d\n", port);
        return false;
    }
    set_nonblocking(lsock.fd);
    Fd conn;
    while (conn.fd < 0) {
        const WaitResult wr = wait_fd(lsock.fd, POLLIN, w);
        if (wr != WaitResult::Ready) {
            report_timeout(w, "waiting for a client");
            std::fprintf(stderr, "accept() failed\n");
            return false;
        }
        const int c = ::accept(lsock.fd, nullptr, nullptr);
        if (c < 0 &&
            (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED))
            continue;
        if (c < 0) {
            std::fprintf(stderr, "accept() failed: %s\n", std::strerror(errno));
            return false;
        }
        conn.reset(c);
    }
    lsock.reset();
    set_nonblocking(conn.fd);

    char in[kDestMsgLen];
    size_t got = 0;
    if (!read_exact(conn.fd, in, sizeof in, w, &got)) {
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
    if (!write_all(conn.fd, msg.data(), msg.size(), w) ||
        !read_exact(conn.fd, done, sizeof done, w, &got)) {
        report_timeout(w, "waiting for the client's \"done\"");
        std::fprintf(stderr, "Couldn't send/recv local address\n");
        return false;
    }
    return true;
}

} // namespace droce::pingpong
