#!/usr/bin/env bash
# droce-perf --threads A/B (issue 32, item 1): write_bw --loopback in worker mode, the same
# workers and QPs with T posting threads against one, rounds alternating (T1, TN, TN, T1,
# ...), Mpps per run and min/median/max per setting plus the per-round ratio.
# Usage: bench/perf_threads.sh PATH/TO/droce-perf [WORKERS] [THREADS] [QPS] [SECONDS] [ROUNDS]
# Run it under the shared lock on a shared machine: flock /tmp/droce-heavy.lock bench/...
set -u
exe=${1:?usage: $0 PATH/TO/droce-perf [workers] [threads] [qps] [seconds] [rounds]}
w=${2:-2} t=${3:-2} q=${4:-4} secs=${5:-3} rounds=${6:-3}
declare -A rate
run() { # THREADS -> Mpps
    "$exe" write_bw -- --loopback --workers "$w" --threads "$1" -q "$q" -s 64 -D "$secs" |
        awk '$1 == 64 && NF >= 5 { print $5 }'
}
ratios=()
for r in $(seq "$rounds"); do
    order=(1 "$t")
    ((r % 2 == 0)) && order=("$t" 1)
    for k in "${order[@]}"; do
        m=$(run "$k")
        [[ -n $m ]] || { echo "run failed: --threads $k" >&2; exit 1; }
        rate[$k]+="$m "
        printf 'round %d --threads %d: %s Mpps\n' "$r" "$k" "$m"
        [[ $k == 1 ]] && one=$m || many=$m
    done
    ratios+=("$(awk -v a="$many" -v b="$one" 'BEGIN { printf "%.3f", a / b }')")
done
stats() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END {
    printf "%.3f / %.3f / %.3f", v[1], (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[NR] }'; }
echo
echo "write_bw --loopback --workers $w -q $q -s 64 -D $secs, $rounds rounds, $(nproc) CPUs"
echo "| --threads | Mpps min / median / max |"
echo "|---|---|"
echo "| 1 | $(stats <<<"${rate[1]}") |"
echo "| $t | $(stats <<<"${rate[$t]}") |"
echo "ratio $t/1 per round, min / median / max: $(stats <<<"${ratios[*]}")"
