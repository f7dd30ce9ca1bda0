/* SPDX-License-Identifier: BSD-3-Clause */
/* Gather-list CRC-32 (crc32_eth_gather, the VPCLMULQDQ fold across segment boundaries)
 * and the ICRC built on it, against the existing single-buffer implementations. */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "wire_headers.h"
#include "wire_icrc.h"

using namespace droce::wire;

namespace {

/* Byte-table CRC-32 (zlib crc32(crc, p, n)): independent of every kernel under test. */
uint32_t crc32_table(uint32_t crc, const uint8_t *p, size_t n) {
    static const auto table = [] {
        std::vector<uint32_t> t(256);
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = (c & 1) ? (0xEDB88320u ^ (c >> 1)) : (c >> 1);
            t[i] = c;
        }
        return t;
    }();
    uint32_t st = ~crc;
    for (size_t i = 0; i < n; ++i)
        st = table[(st ^ p[i]) & 0xFF] ^ (st >> 8);
    return ~st;
}

/* Cuts [p, p+n) into up to max_segs spans at random points (empty spans included). */
std::vector<ByteSpan> random_split(const uint8_t *p, size_t n, std::mt19937 &rng, int max_segs) {
    const int k = 1 + static_cast<int>(rng() % static_cast<unsigned>(max_segs));
    std::vector<size_t> cuts{0, n};
    for (int i = 1; i < k; ++i)
        cuts.push_back(n ? rng() % (n + 1) : 0);
    std::sort(cuts.begin(), cuts.end());
    std::vector<ByteSpan> s;
    for (size_t i = 0; i + 1 < cuts.size(); ++i)
        s.push_back({p + cuts[i], static_cast<uint32_t>(cuts[i + 1] - cuts[i])});
    return s;
}

std::vector<CrcKernel> gather_kernels() {
    std::vector<CrcKernel> ks{CrcKernel::Auto, CrcKernel::Dpdk};
    for (CrcKernel k : {CrcKernel::Fold256, CrcKernel::Fold512})
        if (crc_kernel_available(k))
            ks.push_back(k);
    return ks;
}

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> b(n);
    for (auto &c : b)
        c = static_cast<uint8_t>(rng());
    return b;
}

} // namespace

/* Every length 0..2048 at every start alignment 0..63, as one span and cut at random
 * into up to 5 (empty ones too), each kernel forced, against rte_net_crc (the existing
 * single-buffer path) and the byte table. */
TEST(WireCrcGather, EveryLengthEveryAlignment) {
    const std::vector<uint8_t> buf = random_bytes(2048 + 64, 1);
    std::mt19937 rng(2);
    const auto ks = gather_kernels();
    for (size_t len = 0; len <= 2048; ++len) {
        for (size_t off = 0; off < 64; ++off) {
            const uint8_t *p = buf.data() + off;
            const uint32_t want = crc32_eth_kernel(p, len, CrcKernel::Dpdk);
            if (off == 0 || len % 61 == 0) {
                ASSERT_EQ(want, crc32_table(0, p, len)) << len;
            }
            const ByteSpan one{p, static_cast<uint32_t>(len)};
            const std::vector<ByteSpan> cut = random_split(p, len, rng, 5);
            for (CrcKernel k : ks) {
                ASSERT_EQ(crc32_eth_gather_kernel(0, &one, 1, k), want)
                    << "kernel " << int(k) << " len " << len << " off " << off;
                ASSERT_EQ(
                    crc32_eth_gather_kernel(0, cut.data(), static_cast<uint32_t>(cut.size()), k),
                    want)
                    << "kernel " << int(k) << " len " << len << " off " << off << " in "
                    << cut.size();
            }
        }
    }
}

/* Random lengths up to 9 KiB, random cuts (up to 34 spans: chained mbufs), random seeds
 * (a CRC continued from an earlier part). */
TEST(WireCrcGather, RandomLengthsSplitsAndSeeds) {
    const std::vector<uint8_t> buf = random_bytes(9216 + 64, 3);
    std::mt19937 rng(4);
    const auto ks = gather_kernels();
    for (int it = 0; it < 4000; ++it) {
        const size_t len = rng() % 9217, off = rng() % 64;
        const uint8_t *p = buf.data() + off;
        const uint32_t seed = (it & 1) ? static_cast<uint32_t>(rng()) : 0;
        const uint32_t want = crc32_table(seed, p, len);
        const std::vector<ByteSpan> cut = random_split(p, len, rng, it % 3 ? 34 : 3);
        for (CrcKernel k : ks)
            ASSERT_EQ(
                crc32_eth_gather_kernel(seed, cut.data(), static_cast<uint32_t>(cut.size()), k),
                want)
                << "kernel " << int(k) << " len " << len << " off " << off << " seed " << seed;
    }
}

/* Incremental use: the CRC of a prefix, continued over the rest, equals the whole's. */
TEST(WireCrcGather, ChainedEqualsWhole) {
    const std::vector<uint8_t> buf = random_bytes(9000, 5);
    for (size_t split : {0u, 1u, 4u, 15u, 100u, 511u, 512u, 2048u, 4000u, 8999u, 9000u}) {
        const ByteSpan rest{buf.data() + split, static_cast<uint32_t>(buf.size() - split)};
        EXPECT_EQ(crc32_eth_gather(crc32_eth(buf.data(), split), &rest, 1),
                  crc32_eth(buf.data(), buf.size()))
            << split;
    }
}

/* The ICRC over a frame's l3 part plus payload segments as mbufs hand them (2 KiB data
 * rooms, the header mbuf shorter), IPv4 and IPv6, against the table reference over the
 * contiguous frame; variant fields (TTL/hop limit, TOS, flow label, UDP checksum, FECN)
 * changed in between must not change it. */
TEST(WireCrcGather, IcrcSegmentsMatchReference) {
    std::mt19937 rng(6);
    for (bool v6 : {false, true}) {
        const size_t hl = (v6 ? kIpv6Len : kIpv4Len) + kUdpLen + kBthLen + 16; /* + RETH */
        for (size_t pay = 0; pay <= 4200; pay += (pay < 600 ? 1 : 13)) {
            std::vector<uint8_t> f = random_bytes(hl + pay, static_cast<unsigned>(pay + 7));
            const uint32_t ref = icrc_compute_reference(f.data(), f.size(), v6);
            /* Variant fields to other values: same ICRC. */
            std::vector<uint8_t> g = f;
            if (v6) {
                g[1] ^= 0x5A;
                g[7] ^= 0x33;
            } else {
                g[1] ^= 0x5A;
                g[8] ^= 0x33;
                g[10] ^= 0x11;
            }
            const size_t udp = v6 ? kIpv6Len : kIpv4Len;
            g[udp + 6] ^= 0x77;
            g[udp + kUdpLen + 4] ^= 0x80;
            const size_t first = hl + (pay ? rng() % (pay < 2000 ? pay + 1 : 2000) : 0);
            std::vector<ByteSpan> segs;
            for (size_t o = first; o < g.size(); o += 2048)
                segs.push_back(
                    {g.data() + o, static_cast<uint32_t>(std::min<size_t>(2048, g.size() - o))});
            ASSERT_EQ(icrc_compute_segments(g.data(), first, segs.data(),
                                            static_cast<uint32_t>(segs.size()), v6),
                      ref)
                << (v6 ? "v6" : "v4") << " payload " << pay << " first " << first;
            ASSERT_EQ(icrc_compute(g.data(), g.size(), v6), ref) << pay;
        }
    }
}
