#!/usr/bin/env bash
# Runs the libFuzzer targets for a bounded time: scripts/fuzz.sh [SECONDS=60]
# The time is split evenly between the targets: fuzz_parse (lib/wire decoder),
# fuzz_rx (receive path: parse + the RC QPs of a simulator pair, memory outside the
# registered regions must not change), fuzz_cm (QP1: a UD QP's receive path and the
# CM MAD codec), fuzz_config (configuration files: rte_cfgfile + the line scan, seeded
# with config/*.conf) and fuzz_nvmf (lib/nvmf: capsules into a connected NVMe-oF target).
# Builds them in a separate clang build dir (FUZZ_BUILD_DIR, default build-fuzz), seeds the
# corpus with every frame of ../shared/vectors, and keeps the grown corpus in
# FUZZ_BUILD_DIR/fuzz-corpus/ between runs. Crash reproducers land in FUZZ_BUILD_DIR/fuzz-artifacts/.
set -euo pipefail

secs="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
bdir="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
vectors="${DROCE_VECTORS_DIR:-$root/../shared/vectors}"

if [ ! -d "$vectors" ]; then
    echo "fuzz.sh: vectors not found at $vectors" >&2
    exit 1
fi
if [ ! -f "$bdir/build.ninja" ]; then
    # -Dtests=true: the top-level meson.build only enters tests/ (where fuzz/ lives)
    # when the tests option is on; only the fuzz targets are built below.
    CC=clang CXX=clang++ meson setup "$bdir" "$root" -Dfuzz=true -Dtests=true \
        -Dbenchmarks=false -Dbuildtype=debugoptimized
fi
ninja -C "$bdir" tests/fuzz/fuzz_parse tests/fuzz/fuzz_rx tests/fuzz/fuzz_cm tests/fuzz/fuzz_config \
    tests/fuzz/fuzz_nvmf tests/fuzz/pcap_to_corpus

targets=(parse rx cm config nvmf)
each=$((secs / ${#targets[@]}))
[ "$each" -ge 1 ] || each=1
artifacts="$bdir/fuzz-artifacts/"
mkdir -p "$artifacts"

# Seeds: every frame of the vectors for the parser. For fuzz_rx an input is a control
# byte + a frame (see tests/fuzz/fuzz_rx.cpp); it runs a simulator per input, so it gets
# the first frames of each capture only, aimed at the responder (0x03: fix the ICRC,
# retarget to QP B, idle) and at the completer with requests outstanding (0x17).
rm -rf "$bdir/fuzz-seeds"
mkdir -p "$bdir/fuzz-seeds/parse" "$bdir/fuzz-seeds/rx" "$bdir/fuzz-seeds/cm" "$bdir/fuzz-seeds/config" \
    "$bdir/fuzz-seeds/nvmf"
# fuzz_config: the example configuration files.
cp "$root"/config/*.conf "$bdir/fuzz-seeds/config/"
# fuzz_cm: every frame of the RDMA-CM captures (CM MADs on QP1, then RC traffic).
"$bdir/tests/fuzz/pcap_to_corpus" "$bdir/fuzz-seeds/cm" "$vectors"/rxe/rping.pcap \
    "$vectors"/rxe/ucmatose.pcap "$vectors"/rxe/write_bw_cm.pcap "$vectors"/rxe/ud_pingpong.pcap
"$bdir/tests/fuzz/pcap_to_corpus" "$bdir/fuzz-seeds/parse" "$vectors"/*/*.pcap "$vectors"/*/*.pcapng
# Frames no vector holds (tests/fuzz/seeds: one raw frame per file, e.g. a RoCEv1 one):
# the parser's seeds, and fuzz_rx's below.
for f in "$root"/tests/fuzz/seeds/*; do
    if [ -f "$f" ] && [ "$(basename "$f")" != README ]; then
        cp "$f" "$bdir/fuzz-seeds/parse/$(basename "$f")_0"
    fi
done
for f in "$bdir/fuzz-seeds/parse"/*_[0-9] "$bdir/fuzz-seeds/parse"/*_1[01]; do
    [ -f "$f" ] || continue
    b=$(basename "$f")
    { printf '\x03'; cat "$f"; } >"$bdir/fuzz-seeds/rx/$b.resp"
    { printf '\x17'; cat "$f"; } >"$bdir/fuzz-seeds/rx/$b.comp"
done

# fuzz_nvmf: a record per frame of the NVMe-oF captures (control 0x80: "a frame", admin
# queue; 0x81: I/O queue; see tests/fuzz/fuzz_nvmf.cpp), length little-endian.
rm -rf "$bdir/fuzz-seeds/nvmf-frames"
mkdir -p "$bdir/fuzz-seeds/nvmf-frames"
"$bdir/tests/fuzz/pcap_to_corpus" "$bdir/fuzz-seeds/nvmf-frames" \
    "$vectors"/rxe-features/nvmf_rdma_connect_io.pcap
for f in "$bdir/fuzz-seeds/nvmf-frames"/*; do
    [ -f "$f" ] || continue
    n=$(stat -c %s "$f")
    [ "$n" -le 1300 ] || continue
    lo=$(printf '%02x' $((n & 255)))
    hi=$(printf '%02x' $((n >> 8)))
    for c in 80 81; do
        { printf "\\x$c\\x$lo\\x$hi"; cat "$f"; } >"$bdir/fuzz-seeds/nvmf/$(basename "$f").$c"
    done
done
rm -rf "$bdir/fuzz-seeds/nvmf-frames"

# Template-mode seeds for fuzz_rx (control 0x81 idle / 0x85 requests outstanding at A,
# ICRC fixed): WRITE_ONLY, WRITE_FIRST, READ, FETCH_ADD, CMP_SWAP, SEND_ONLY_IMM at B and
# READ_RESPONSE_FIRST, ACK, ATOMIC_ACK at A; RETH/AtomicETH 4 KiB into the region, its
# own key, length 1024.
for t in 815e 8158 8160 8170 816e 8156 8563 856b 856d; do
    printf "\\x${t:0:2}\\x${t:2:2}\\x30\\x00\\x00\\x04\\x00" >"$bdir/fuzz-seeds/rx/template-$t"
done

rc=0
for t in "${targets[@]}"; do
    echo "fuzz.sh: fuzz_$t for ${each}s"
    mkdir -p "$bdir/fuzz-corpus/$t"
    # New inputs go to the first directory (corpus); seeds are read only.
    "$bdir/tests/fuzz/fuzz_$t" -max_total_time="$each" -print_final_stats=1 \
        -max_len=9100 -artifact_prefix="$artifacts$t-" "$bdir/fuzz-corpus/$t" \
        "$bdir/fuzz-seeds/$t" || rc=1
done
exit $rc
