#!/usr/bin/env bash
# Where the time goes at W workers against one worker, function by function (issue 32:
# "at 2 workers no function's share of the per-packet profile grows more than 1.5x
# against 1 worker"). A function whose share grows with the workers is where they share
# something: in the 16-core profile of the issue, the first reads of a received frame
# (decode_bth 1.5 % -> 31.6 %) showed frames last written on another core.
#
#   flock /tmp/droce-heavy.lock bench/profile_workers.sh [--bin PATH] [--workers W]
#       [--rounds N] [--seconds S] [--min-share PCT] [--out DIR]
#
# Each round runs `bench_scale workers --rounds=1` once at W=1 and once at W=W (default 2)
# under `perf record -e cpu-clock:u` (a VM has no PMU: the clock is what it samples), in
# ABBA order, each a process of its own (a fresh engine, as bench_scale's rounds). The
# samples of all rounds are summed per function and W. Printed: the rate of each run, and
# for every function with at least --min-share % (default 0.5) of the samples at either
# W: its share at 1 and at W workers and the ratio, largest ratio first; then the verdict
# line "largest growth: R x (FUNCTION)". Set-up (engine creation, registration) is in the
# samples too; --seconds (default 4) keeps it small against the measured run.
#
# Needs perf (Debian's linux-perf) and a release build of bench/bench_scale.
set -euo pipefail
BIN=build/bench/bench_scale
W=2
ROUNDS=3
SECS=4
MIN=0.5
OUT=
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --workers) W=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    --min-share) MIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    *) echo "usage: $0 [--bin PATH] [--workers W] [--rounds N] [--seconds S] [--min-share PCT] [--out DIR]" >&2; exit 2 ;;
    esac
done
case "$W" in '' | *[!0-9]* | 0 | 1) echo "$0: --workers takes a count of 2 or more" >&2; exit 2 ;; esac
case "$ROUNDS" in '' | *[!0-9]* | 0) echo "$0: --rounds takes a count (1 or more)" >&2; exit 2 ;; esac
[ -x "$BIN" ] || { echo "$0: $BIN is not an executable (build first)" >&2; exit 2; }
command -v perf >/dev/null || { echo "$0: perf is not installed (apt install linux-perf)" >&2; exit 2; }
if [ -z "$OUT" ]; then
    OUT=$(mktemp -d)
    trap 'rm -rf "$OUT"' EXIT
fi
mkdir -p "$OUT"

# One run at w workers, round r: the perf data, the samples per function, the rate.
run_one() {
    local w=$1 r=$2 data="$OUT/w$1.r$2.data"
    perf record -q -e cpu-clock:u -F 1999 -o "$data" -- \
        "$BIN" workers --workers="$w" --rounds=1 --seconds="$SECS" > "$OUT/w$w.r$r.log" 2>&1
    grep -m1 "^round 1 W=$w:" "$OUT/w$w.r$r.log" | sed "s/^round 1/round $r/" ||
        { echo "$0: bench_scale printed no rate (see $OUT/w$w.r$r.log)" >&2; exit 1; }
    perf report -i "$data" --stdio --no-children --sort dso,symbol -F sample,dso,sym \
        --field-separator=';' 2> /dev/null | grep -v '^#' | grep -v '^$' > "$OUT/w$w.r$r.samples"
}

for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then order="1 $W"; else order="$W 1"; fi
    for w in $order; do
        run_one "$w" "$r"
    done
done

python3 - "$OUT" "$W" "$ROUNDS" "$MIN" << 'PY'
import sys
out, w, rounds, min_share = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])

def shares(workers):
    """Samples per function summed over the rounds, as a share of all of them (%)."""
    total, per = 0, {}
    for r in range(1, rounds + 1):
        for line in open(f"{out}/w{workers}.r{r}.samples"):
            f = [x.strip() for x in line.split(';')]
            if len(f) < 3 or not f[0].isdigit():
                continue
            n, fn = int(f[0]), f[2].removeprefix('[.] ').removeprefix('[k] ')
            per[fn] = per.get(fn, 0) + n
            total += n
    if total == 0:
        sys.exit(f"no samples at W={workers}")
    return {k: 100.0 * v / total for k, v in per.items()}, total

one, n1 = shares(1)
many, nw = shares(w)
rows = []
for fn in set(one) | set(many):
    a, b = one.get(fn, 0.0), many.get(fn, 0.0)
    if max(a, b) >= min_share:
        rows.append((b / a if a > 0 else float('inf'), a, b, fn))
rows.sort(reverse=True)
print(f"\nsamples: W=1 {n1}, W={w} {nw} ({rounds} rounds each)")
print(f"| function | share at W=1 (%) | share at W={w} (%) | W={w} / W=1 |")
print("|---|---|---|---|")
for ratio, a, b, fn in rows:
    print(f"| `{fn[:90]}` | {a:.2f} | {b:.2f} | {ratio:.2f} |")
ratio, a, b, fn = rows[0]
print(f"\nlargest growth: {ratio:.2f} x ({fn[:90]}: {a:.2f} % -> {b:.2f} %)")
PY
