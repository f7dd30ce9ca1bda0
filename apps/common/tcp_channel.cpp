/* SPDX-License-Identifier: BSD-3-Clause */
#include "tcp_channel.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace droce::app {

void Fd::reset(int fd) {
    if (fd_ >= 0)
        ::close(fd_);
    fd_ = fd;
}

void set_nonblocking(int fd) {
    const int fl = ::fcntl(fd, F_GETFL, 0);
    if (fl >= 0)
        ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

WaitResult wait_fd(int fd, short events, const Waiter &w) {
    while (true) {
        int slice_ms = w.pump ? w.pump_slice_ms : 100;
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
            return WaitResult::Ready;
        if (w.pump)
            w.pump();
    }
}

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

int tcp_connect(const std::string &host, int port, int family, std::chrono::milliseconds retry_for,
                const Waiter &w, int *gai_error) {
    struct addrinfo hints = {};
    hints.ai_family = family;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *res = nullptr;
    const std::string service = std::to_string(port);
    *gai_error = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
    if (*gai_error != 0)
        return -1;
    const auto retry_until = std::chrono::steady_clock::now() + retry_for;
    Fd sock;
    while (!sock.valid()) {
        for (struct addrinfo *t = res; t != nullptr && !sock.valid(); t = t->ai_next) {
            Fd s(::socket(t->ai_family, t->ai_socktype, t->ai_protocol));
            if (!s.valid())
                continue;
            set_nonblocking(s.get());
            bool ok = ::connect(s.get(), t->ai_addr, t->ai_addrlen) == 0;
            if (!ok && errno == EINPROGRESS && wait_fd(s.get(), POLLOUT, w) == WaitResult::Ready) {
                int err = 0;
                socklen_t el = sizeof err;
                ok = ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0;
            }
            if (ok)
                sock.reset(s.release());
        }
        if (sock.valid() || w.expired() || std::chrono::steady_clock::now() >= retry_until)
            break;
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
        while (std::chrono::steady_clock::now() < until) {
            if (w.pump)
                w.pump();
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    ::freeaddrinfo(res);
    return sock.release();
}

AcceptResult accept_one(int listen_fd, const Waiter &w, int &fd) {
    while (true) {
        if (wait_fd(listen_fd, POLLIN, w) != WaitResult::Ready)
            return AcceptResult::WaitFailed;
        const int c = ::accept(listen_fd, nullptr, nullptr);
        if (c >= 0) {
            set_nonblocking(c);
            fd = c;
            return AcceptResult::Accepted;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
            return AcceptResult::Failed;
    }
}

} // namespace droce::app
