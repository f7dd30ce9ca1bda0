#!/usr/bin/env bash
# Two workers in one process against the same two workers as two processes, CPU by CPU.
# bench_scale workers runs W = 1 on one CPU, then twice at once (one process on CPU 0, one
# on CPU 1: nothing shared but the machine), then W = 2 in one process (worker w on CPU w);
# each is 64 B WRITEs on 2 QP pairs per worker, 2 s. The in-process worker on CPU c against
# the process on CPU c of the same round is what sharing inside the process costs, whatever
# the CPUs' own speeds (on a shared VM one vCPU may run much slower than the other).
#
#   flock /tmp/droce-heavy.lock bench/workers_vs_procs.sh [ROUNDS] [BENCH_SCALE]
set -euo pipefail
ROUNDS=${1:-5}
B=${2:-build/bench/bench_scale}
[ -x "$B" ] || { echo "$0: $B is not an executable (build first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rate() { # cpu -> Mpps of one W=1 process on that CPU
    "$B" workers --workers=1 --rounds=1 --seconds=2 --cpus="$1" | awk '/^round/ {print $4}'
}
for r in $(seq 1 "$ROUNDS"); do
    alone=$(rate 0)
    rate 0 >"$tmp/p0" &
    rate 1 >"$tmp/p1"
    wait
    p0=$(cat "$tmp/p0") p1=$(cat "$tmp/p1")
    read -r w2 t0 t1 < <("$B" workers --workers=2 --rounds=1 --seconds=2 |
        awk '/^round/ {gsub(/[()]/, ""); print $4, $8, $9}')
    awk -v r="$r" -v a="$alone" -v p0="$p0" -v p1="$p1" -v w2="$w2" -v t0="$t0" -v t1="$t1" 'BEGIN {
        printf "round %d: W=1 alone %.3f | 2 processes %.3f + %.3f = %.3f | W=2 in one process %.3f + %.3f = %.3f | in-process / processes: CPU0 %.3f CPU1 %.3f total %.3f | W=2 / W=1 %.3f\n",
            r, a, p0, p1, p0 + p1, t0, t1, w2, t0 / p0, t1 / p1, w2 / (p0 + p1), w2 / a }'
done
