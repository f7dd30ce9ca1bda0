/* SPDX-License-Identifier: BSD-3-Clause */
/* lib/wire micro-benchmarks: ICRC, parse, build. */
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "wire_icrc.h"
#include "wire_packet.h"

using namespace droce::wire;

namespace {

FrameSpec spec_for(uint8_t opcode, const std::vector<uint8_t> &payload, FrameSpec::Seg &seg) {
    FrameSpec s{};
    const uint8_t mac[6] = {0x02, 0, 0, 0, 0, 0x0a};
    std::memcpy(s.eth.src, mac, 6);
    std::memcpy(s.eth.dst, mac, 6);
    gid_from_ipv4(0x0A4D0002, s.src_gid);
    gid_from_ipv4(0x0A4D0003, s.dst_gid);
    s.ttl = 64;
    s.udp_sport = udp_sport_for_qpn(0x11);
    s.bth.opcode = opcode;
    s.bth.pkey = kDefaultPkey;
    s.bth.dest_qp = 0x11;
    s.bth.psn = 100;
    s.reth = Reth{0x1000, 0x1234, static_cast<uint32_t>(payload.size())};
    seg = FrameSpec::Seg{payload.data(), static_cast<uint32_t>(payload.size())};
    s.segs = &seg;
    s.nsegs = 1;
    s.payload_len = static_cast<uint32_t>(payload.size());
    return s;
}

std::vector<uint8_t> make_frame(uint8_t opcode, size_t payload_len) {
    std::vector<uint8_t> payload(payload_len, 0xA5);
    FrameSpec::Seg seg;
    const FrameSpec s = spec_for(opcode, payload, seg);
    std::vector<uint8_t> f(frame_len(s));
    build_frame(s, f.data(), f.size());
    return f;
}

void BM_IcrcInplace(benchmark::State &st) {
    std::vector<uint8_t> f = make_frame(kRcWriteMiddle, static_cast<size_t>(st.range(0)));
    uint8_t *l3 = f.data() + kEthLen;
    const size_t len = f.size() - kEthLen - kIcrcLen;
    for (auto _ : st) {
        benchmark::DoNotOptimize(icrc_compute_inplace(l3, len, false));
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * (len + 8)));
}
BENCHMARK(BM_IcrcInplace)->Arg(64)->Arg(1024)->Arg(4096);

/* The read-only RX variants on the same frame: range(1) = 0 icrc_compute (masked headers
 * on the stack, the rest gathered), 1 icrc_compute_contig (raw frame, masks applied by
 * linearity). */
void BM_IcrcRx(benchmark::State &st) {
    const std::vector<uint8_t> f = make_frame(kRcWriteMiddle, static_cast<size_t>(st.range(0)));
    const uint8_t *l3 = f.data() + kEthLen;
    const size_t len = f.size() - kEthLen - kIcrcLen;
    const bool contig = st.range(1) != 0;
    for (auto _ : st) {
        benchmark::DoNotOptimize(contig ? icrc_compute_contig(l3, len, false)
                                        : icrc_compute(l3, len, false));
        benchmark::ClobberMemory();
    }
    st.SetLabel(contig ? "contig" : "const");
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * (len + 8)));
}
BENCHMARK(BM_IcrcRx)->ArgsProduct({{256, 512, 1024, 4096}, {0, 1}});

void BM_ParseWrite1K(benchmark::State &st) {
    const std::vector<uint8_t> f = make_frame(kRcWriteFirst, 1024);
    const bool verify = st.range(0) != 0;
    ParsedPacket p;
    for (auto _ : st) {
        benchmark::DoNotOptimize(parse_frame(f.data(), f.size(), p, verify));
        benchmark::ClobberMemory();
    }
    st.SetLabel(verify ? "verify_icrc" : "no_icrc");
}
BENCHMARK(BM_ParseWrite1K)->Arg(0)->Arg(1);

/* RX parse of the two frames of a write_lat hop: range(0) = 0 an ACK, else a WRITE ONLY
 * of that many bytes; range(1) = 0 the generic parse_frame, 1 parse_frame_rc_small, 2 that
 * with an AckIcrcCache (an ACK then hits it every time, as in ping-pong). */
void BM_ParseSmall(benchmark::State &st) {
    const bool ack = st.range(0) == 0;
    std::vector<uint8_t> f =
        make_frame(ack ? kRcAcknowledge : kRcWriteOnly, static_cast<size_t>(st.range(0)));
    const bool fast = st.range(1) != 0;
    AckIcrcCache cache;
    AckIcrcCache *acks = st.range(1) == 2 ? &cache : nullptr;
    ParsedPacket p;
    for (auto _ : st) {
        benchmark::DoNotOptimize(fast
                                     ? parse_frame_rc_small(f.data(), f.size(), p, acks)
                                     : parse_frame(f.data(), f.size(), p, true) == ParseResult::Ok);
        benchmark::ClobberMemory();
    }
    if (p.frame_len != f.size())
        st.SkipWithError("bad frame");
    st.SetLabel(!fast ? "generic" : acks ? "rc_small+ack_cache" : "rc_small");
}
BENCHMARK(BM_ParseSmall)->ArgsProduct({{0, 64}, {0, 1, 2}});

/* RX of one MTU-4096 WRITE_MIDDLE frame with ICRC check, as rx_one() runs it on a
 * single-segment mbuf. range(0) = 0: the same frame every time (in L1/L2); otherwise a
 * ring of that many frames (4096: ~17 MiB, past L2, in L3), as when the frame was written
 * by the other core (memif zero-copy, virtio_user) and reaches this one cold. */
void BM_ParseWrite4K(benchmark::State &st) {
    const std::vector<uint8_t> f = make_frame(kRcWriteMiddle, 4096);
    const size_t n = st.range(0) ? static_cast<size_t>(st.range(0)) : 1;
    const size_t stride = (f.size() + 63) & ~size_t{63};
    std::vector<uint8_t> ring(n * stride + 64);
    uint8_t *base = ring.data() + (64 - reinterpret_cast<uintptr_t>(ring.data()) % 64) % 64;
    for (size_t i = 0; i < n; ++i)
        std::memcpy(base + i * stride, f.data(), f.size());
    ParsedPacket p;
    size_t i = 0;
    for (auto _ : st) {
        benchmark::DoNotOptimize(parse_frame(base + i * stride, f.size(), p, true));
        benchmark::ClobberMemory();
        if (++i == n)
            i = 0;
    }
    if (p.icrc == 0)
        st.SkipWithError("bad frame");
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * f.size()));
}
BENCHMARK(BM_ParseWrite4K)->Arg(0)->Arg(4096);

void BM_BuildWriteMiddle1K(benchmark::State &st) {
    std::vector<uint8_t> payload(1024, 0x5A);
    FrameSpec::Seg seg;
    FrameSpec s = spec_for(kRcWriteMiddle, payload, seg);
    std::vector<uint8_t> out(frame_len(s));
    for (auto _ : st) {
        s.bth.psn = psn_add(s.bth.psn, 1);
        benchmark::DoNotOptimize(build_frame(s, out.data(), out.size()));
        benchmark::ClobberMemory();
    }
}
BENCHMARK(BM_BuildWriteMiddle1K);

} // namespace

/* One CRC-32 kernel over len bytes in cache: range(0) = CrcKernel (1 DPDK, 2 128-bit
 * fold, 3 256-bit fold, 4 512-bit, 5 short-run), range(1) = len. */
void BM_Crc32Kernel(benchmark::State &st) {
    const auto k = static_cast<CrcKernel>(st.range(0));
    std::vector<uint8_t> b(static_cast<size_t>(st.range(1)), 0x5A);
    if (!crc_kernel_available(k)) {
        st.SkipWithError("kernel not available on this CPU");
        return;
    }
    for (auto _ : st) {
        benchmark::DoNotOptimize(crc32_eth_kernel(b.data(), b.size(), k));
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * b.size()));
}
BENCHMARK(BM_Crc32Kernel)->ArgsProduct({{1, 2, 3, 4}, {128, 256, 512, 1024, 4096}});
/* rte_net_crc vs the short-run kernel (5) at a 64 B WRITE's ICRC (128), an ACK's (52). */
BENCHMARK(BM_Crc32Kernel)->ArgsProduct({{1, 5}, {52, 128, 256}});

/* RX placement of one MTU-4096 payload: memcpy into the target then CRC over the source
 * (two passes, what the engine does) against the fused copy+CRC. range(1) = 0: the same
 * source every time (in L1/L2); otherwise a ring of that many sources (4096 x 4 KiB: past
 * L2, in L3), as when the other core wrote the frame; the target (an MR) stays warm. */
struct CopyBufs {
    std::vector<uint8_t> src, dst;
    size_t len, n;
    explicit CopyBufs(const benchmark::State &st)
        : len(static_cast<size_t>(st.range(0))), n(st.range(1) ? st.range(1) : 1) {
        src.assign(n * len, 0x5A);
        dst.assign(len, 0);
    }
};
void BM_CopyThenCrc(benchmark::State &st) {
    CopyBufs b(st);
    size_t i = 0;
    for (auto _ : st) {
        const uint8_t *src = b.src.data() + i * b.len;
        std::memcpy(b.dst.data(), src, b.len);
        benchmark::DoNotOptimize(crc32_eth(src, b.len));
        benchmark::ClobberMemory();
        i = i + 1 == b.n ? 0 : i + 1;
    }
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * b.len));
}
BENCHMARK(BM_CopyThenCrc)->ArgsProduct({{1024, 4096}, {0}})->Args({4096, 4096});
void BM_CopyCrcFused(benchmark::State &st) {
    CopyBufs b(st);
    size_t i = 0;
    for (auto _ : st) {
        benchmark::DoNotOptimize(crc32_eth_copy(b.dst.data(), b.src.data() + i * b.len, b.len));
        benchmark::ClobberMemory();
        i = i + 1 == b.n ? 0 : i + 1;
    }
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * b.len));
}
BENCHMARK(BM_CopyCrcFused)->ArgsProduct({{1024, 4096}, {0}})->Args({4096, 4096});

/* A chained 4096-byte payload as memif hands it (2 KiB segments) plus the pad: the
 * headers, three spans, two crc32_combine per span. */
void BM_IcrcSegments4K(benchmark::State &st) {
    std::vector<uint8_t> f = make_frame(kRcWriteMiddle, 4096);
    const uint8_t *l3 = f.data() + kEthLen;
    const size_t hl = 20 + 8 + 12;
    const ByteSpan segs[3] = {
        {l3 + hl, 2048 - 54}, {l3 + hl + 2048 - 54, 2048}, {l3 + hl + 4096 - 54, 54}};
    for (auto _ : st) {
        benchmark::DoNotOptimize(icrc_compute_segments(l3, hl, segs, 3, false));
        benchmark::ClobberMemory();
    }
}
BENCHMARK(BM_IcrcSegments4K);

/* crc32_eth_gather over a frame as mbufs hand it: the first 2048 - 54 bytes (after the
 * headers), then 2 KiB segments. range(0) = CrcKernel (1: one crc32_eth per segment joined
 * by crc32_combine, the fallback; 3: 256-bit gather fold; 4: 512-bit), range(1) = len,
 * range(2) = 1: in mbuf-like segments, 0: one span. */
void BM_Crc32Gather(benchmark::State &st) {
    const auto k = static_cast<CrcKernel>(st.range(0));
    std::vector<uint8_t> b(static_cast<size_t>(st.range(1)), 0x5A);
    if (!crc_kernel_available(k)) {
        st.SkipWithError("kernel not available on this CPU");
        return;
    }
    std::vector<ByteSpan> segs;
    for (size_t o = 0, n = st.range(2) ? 2048 - 54 : b.size(); o < b.size(); o += n, n = 2048)
        segs.push_back({b.data() + o, static_cast<uint32_t>(std::min(n, b.size() - o))});
    for (auto _ : st) {
        benchmark::DoNotOptimize(
            crc32_eth_gather_kernel(0, segs.data(), static_cast<uint32_t>(segs.size()), k));
        benchmark::ClobberMemory();
    }
    st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * b.size()));
}
BENCHMARK(BM_Crc32Gather)->ArgsProduct({{1, 3, 4}, {64, 256, 512, 1024, 2048, 4096}, {0, 1}});

BENCHMARK_MAIN();
