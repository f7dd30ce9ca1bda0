#!/usr/bin/env bash
# Runs the libFuzzer targets for a bounded time: scripts/fuzz.sh [SECONDS=60]
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
ninja -C "$bdir" tests/fuzz/fuzz_parse tests/fuzz/pcap_to_corpus

seeds="$bdir/fuzz-seeds/parse"
corpus="$bdir/fuzz-corpus/parse"
artifacts="$bdir/fuzz-artifacts/"
rm -rf "$seeds"
mkdir -p "$seeds" "$corpus" "$artifacts"
"$bdir/tests/fuzz/pcap_to_corpus" "$seeds" "$vectors"/*/*.pcap "$vectors"/*/*.pcapng

# New inputs go to the first directory (corpus); seeds are read only.
"$bdir/tests/fuzz/fuzz_parse" -max_total_time="$secs" -print_final_stats=1 \
    -max_len=9100 -artifact_prefix="$artifacts" "$corpus" "$seeds"
