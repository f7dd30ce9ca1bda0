/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * The kernel path RDMA bypasses, for the end-to-end comparison (issue 9, bench/e2e.py):
 * plain blocking UDP sockets, run in two network namespaces joined by a veth pair.
 *
 *   udp_kernel pong   PORT                         echo every datagram back (until idle 2 s)
 *   udp_kernel ping   HOST PORT SIZE ITERS         ping-pong; RTT/2 percentiles in us
 *   udp_kernel sink   PORT                         count datagrams (until idle 1 s)
 *   udp_kernel stream HOST PORT SIZE SECS          send as fast as send() returns
 *
 * Each prints one JSON object. Times from CLOCK_MONOTONIC (the kernel path makes system
 * calls anyway; the clock's cost is noise next to them). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string_view>
#include <vector>

namespace {

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void die(const char *what) {
    std::fprintf(stderr, "udp_kernel: %s: %s\n", what, std::strerror(errno));
    std::exit(1);
}

int bound_socket(int port, double idle_s) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    int big = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    timeval tv{static_cast<time_t>(idle_s),
               static_cast<suseconds_t>(
                   (idle_s - static_cast<double>(static_cast<time_t>(idle_s))) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0)
        die("bind");
    return fd;
}

int connected_socket(const char *host, int port) {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        die("inet_pton");
    if (connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0)
        die("connect");
    timeval tv{1, 0}; // a lost datagram ends a ping run
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: udp_kernel pong|sink PORT | ping HOST PORT SIZE ITERS | "
                             "stream HOST PORT SIZE SECS\n");
        return 2;
    }
    const std::string_view role = argv[1];
    std::vector<char> buf(65536);
    if (role == "pong" || role == "sink") {
        // Pong waits up to 60 s for the first datagram, then stops after 2 s without one.
        int fd = bound_socket(std::atoi(argv[2]), role == "pong" ? 2.0 : 1.0);
        uint64_t n = 0, bytes = 0;
        double first = 0, last = 0;
        const double give_up = now_s() + 60;
        for (;;) {
            sockaddr_in from{};
            socklen_t fl = sizeof from;
            ssize_t r =
                recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr *>(&from), &fl);
            if (r < 0) {
                if ((errno == EAGAIN || errno == EWOULDBLOCK) && n == 0 && now_s() < give_up)
                    continue;
                break;
            }
            last = now_s();
            if (n == 0)
                first = last;
            ++n;
            bytes += static_cast<uint64_t>(r);
            if (role == "pong")
                sendto(fd, buf.data(), static_cast<size_t>(r), 0,
                       reinterpret_cast<sockaddr *>(&from), fl);
        }
        const double secs = std::max(last - first, 1e-9);
        std::printf(
            "{\"role\":\"%s\",\"datagrams\":%lu,\"secs\":%.6f,\"pps\":%.1f,\"gbps\":%.4f}\n",
            argv[1], static_cast<unsigned long>(n), secs, static_cast<double>(n) / secs,
            static_cast<double>(bytes) * 8 / secs / 1e9);
        return 0;
    }
    if (argc < 6) {
        std::fprintf(stderr, "udp_kernel %s: HOST PORT SIZE ITERS|SECS\n", argv[1]);
        return 2;
    }
    int fd = connected_socket(argv[2], std::atoi(argv[3]));
    const size_t size = std::min<size_t>(std::strtoul(argv[4], nullptr, 10), buf.size());
    if (role == "ping") {
        const long iters = std::atol(argv[5]);
        const long warmup = std::min(1000L, iters / 10);
        std::vector<double> half;
        half.reserve(static_cast<size_t>(iters));
        for (long i = 0; i < warmup + iters; ++i) {
            const double t0 = now_s();
            if (send(fd, buf.data(), size, 0) < 0)
                die("send");
            if (recv(fd, buf.data(), buf.size(), 0) < 0)
                die("recv (no answer within 1 s)");
            if (i >= warmup)
                half.push_back((now_s() - t0) * 1e6 / 2);
        }
        std::sort(half.begin(), half.end());
        auto pct = [&](double p) {
            return half[std::min(half.size() - 1,
                                 static_cast<size_t>(static_cast<double>(half.size()) * p))];
        };
        double sum = 0;
        for (double x : half)
            sum += x;
        std::printf(
            "{\"role\":\"ping\",\"iters\":%zu,\"size\":%zu,\"t_min\":%.3f,\"t_typical\":%.3f,"
            "\"t_avg\":%.3f,\"p99\":%.3f,\"p99_9\":%.3f,\"t_max\":%.3f}\n",
            half.size(), size, half.front(), pct(0.5), sum / static_cast<double>(half.size()),
            pct(0.99), pct(0.999), half.back());
        return 0;
    }
    if (role == "stream") {
        const double secs = std::atof(argv[5]);
        const double t0 = now_s();
        const double end = t0 + secs;
        uint64_t n = 0;
        double t = t0;
        while (t < end) {
            for (int i = 0; i < 64; ++i)
                if (send(fd, buf.data(), size, 0) >= 0)
                    ++n;
            t = now_s();
        }
        std::printf("{\"role\":\"stream\",\"datagrams\":%lu,\"secs\":%.6f,\"tx_pps\":%.1f}\n",
                    static_cast<unsigned long>(n), t - t0, static_cast<double>(n) / (t - t0));
        return 0;
    }
    std::fprintf(stderr, "udp_kernel: unknown role %s\n", argv[1]);
    return 2;
}
