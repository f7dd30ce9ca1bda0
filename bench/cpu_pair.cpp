/* SPDX-License-Identifier: BSD-3-Clause */
/* cpu_pair: what moving data between the two CPUs the benchmarks run on (0 and 1) costs
 * right now, with no DPDK and no droce. bench/e2e.py runs it before each bandwidth run.
 *
 * Why: on the AMD EPYC VM the two vCPUs sometimes share an L3 (a cache line moves from one
 * to the other in ~30 ns) and sometimes do not (~160 ns, for minutes at a time). Every
 * run whose payload lines cross the cores (vhost -> virtio_user: net_vhost writes them on
 * CPU 0, the receiver reads them on CPU 1) then runs at a fraction of its speed, while the
 * raw link, which never touches a payload, barely notices (bench/README.md, "Where 64 KiB
 * goes on the AMD VM"). This makes such runs recognisable in the results.
 *
 * Two figures, one JSON line:
 *   hop_ns   one cache line bounced between the CPUs: ns per one-way hand-over;
 *   frame_ns CPU 0 writes 4 KiB frames into a 256-slot ring (1 MiB), CPU 1 reads each one
 *            and hands its slot back: ns per frame, the payload pattern of a one-way
 *            4 KiB stream between two processes. */
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

constexpr long kHops = 400000;
constexpr size_t kSlots = 256, kFrame = 4096;
constexpr long kFrames = 100000;

alignas(128) std::atomic<long> g_flag{0};
alignas(128) std::atomic<long> g_head{0};
alignas(128) std::atomic<long> g_tail{0};
uint8_t *g_ring;
volatile uint64_t g_sink;

void *pong(void *) {
    pin(1);
    for (long i = 1; i < kHops; i += 2) {
        while (g_flag.load(std::memory_order_acquire) != i) {
        }
        g_flag.store(i + 1, std::memory_order_release);
    }
    return nullptr;
}

void *consume(void *) {
    pin(1);
    uint64_t s = 0;
    for (long i = 0; i < kFrames; ++i) {
        while (g_head.load(std::memory_order_acquire) <= i) {
        }
        const uint64_t *p = reinterpret_cast<const uint64_t *>(g_ring + (i % kSlots) * kFrame);
        for (size_t k = 0; k < kFrame / 8; ++k)
            s += p[k];
        g_tail.store(i + 1, std::memory_order_release);
    }
    g_sink = s;
    return nullptr;
}

} // namespace

int main() {
    pin(0);
    pthread_t t;
    pthread_create(&t, nullptr, pong, nullptr);
    double t0 = now_s();
    for (long i = 0; i < kHops; i += 2) {
        g_flag.store(i + 1, std::memory_order_release);
        while (g_flag.load(std::memory_order_acquire) != i + 2) {
        }
    }
    const double hop_ns = (now_s() - t0) * 1e9 / kHops;
    pthread_join(t, nullptr);

    std::vector<uint8_t> ring(kSlots * kFrame + 4096), src(kFrame, 3);
    g_ring = ring.data() + (4096 - reinterpret_cast<uintptr_t>(ring.data()) % 4096) % 4096;
    pthread_create(&t, nullptr, consume, nullptr);
    t0 = now_s();
    for (long i = 0; i < kFrames; ++i) {
        while (i - g_tail.load(std::memory_order_acquire) >= static_cast<long>(kSlots) - 8) {
        }
        std::memcpy(g_ring + (i % kSlots) * kFrame, src.data(), kFrame);
        g_head.store(i + 1, std::memory_order_release);
    }
    pthread_join(t, nullptr);
    const double frame_ns = (now_s() - t0) * 1e9 / kFrames;
    std::printf("{\"hop_ns\":%.1f,\"frame_ns\":%.0f}\n", hop_ns, frame_ns);
    return 0;
}
