#!/usr/bin/env bash
# droce-to-droce NVMe-oF figures: droce-nvmf (RAM disk) and droce-nvmf-perf, two processes
# on the two cores over net_memif (--no-huge), ROUNDS rounds of 4 KiB randread and
# randwrite at queue depth 1 and 32 (SECONDS each), alternating within each round. Prints
# min/median/max of IOPS and of the p50/p99 latency per case, and writes bench/nvmf_memif.csv.
# Usage: bench/nvmf_memif.sh [BUILD_DIR]   (ROUNDS=5 SECONDS_PER_RUN=3 by environment)
set -eu
build=${1:-build}
rounds=${ROUNDS:-5}
secs=${SECONDS_PER_RUN:-3}
here=$(cd "$(dirname "$0")" && pwd)
tgt=$build/apps/droce-nvmf/droce-nvmf
ini=$build/apps/droce-nvmf-perf/droce-nvmf-perf
work=$(mktemp -d)
sock=$work/memif.sock
trap 'kill "$tpid" 2>/dev/null; rm -rf "$work"' EXIT
eal=(--no-huge -m 1024 --no-pci --no-shconf --log-level='*:warning')
"$tgt" -l 0 "${eal[@]}" --file-prefix "nb-t$$" \
    --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no" -- \
    --ip 10.83.0.1/24 --ram 256M --busy-poll >"$work/tgt" 2>&1 &
tpid=$!
for _ in $(seq 50); do [[ -S $sock ]] && break; sleep 0.1; done
csv=$here/nvmf_memif.csv
echo "round,workload,depth,iops,lat_p50_us,lat_p99_us,lat_avg_us" >"$csv"
for r in $(seq "$rounds"); do
    for c in "randread 1" "randread 32" "randwrite 1" "randwrite 32"; do
        set -- $c
        "$ini" -l 1 "${eal[@]}" --file-prefix "nb-i$$" \
            --vdev "net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
            --ip 10.83.0.2/24 -a 10.83.0.1 --busy-poll -w "$1" -q "$2" -t "$secs" \
            --timeout $((secs + 30)) >"$work/ini" 2>&1 || { cat "$work/ini"; exit 1; }
        line=$(grep '^result:' "$work/ini")
        kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
        echo "$r,$1,$2,$(kv iops),$(kv lat_p50_us),$(kv lat_p99_us),$(kv lat_avg_us)" >>"$csv"
    done
done
kill -INT "$tpid"; wait "$tpid" || true
python3 - "$csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print("%-10s %5s  %-26s %-24s %-24s" % ("workload", "depth", "IOPS min/median/max",
                                        "p50 us min/med/max", "p99 us min/med/max"))
for w in ("randread", "randwrite"):
    for d in ("1", "32"):
        sel = [r for r in rows if r["workload"] == w and r["depth"] == d]
        f = lambda k: [float(r[k]) for r in sel]
        t = lambda v, fmt: "/".join(fmt % x for x in (min(v), statistics.median(v), max(v)))
        print("%-10s %5s  %-26s %-24s %-24s" % (w, d, t(f("iops"), "%.0f"),
              t(f("lat_p50_us"), "%.1f"), t(f("lat_p99_us"), "%.1f")))
PY
