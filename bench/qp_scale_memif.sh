#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# 64 B write_bw message rate vs number of QPs, two droce-perf processes over net_memif
# (issue 8). Each process runs embedded (its poll loop on its own thread), pinned to its own
# core: server -l 0, client -l 1. The QP counts alternate within each round, so load drift on
# a shared machine hits them alike.
#
# Window: perftest posts -t WRs per QP, so the total window is t x N. The script keeps it
# near the in-process benchmark's 128 (t = max(1, 128 / N)); from N = 256 on it is N
# (one per QP, perftest's minimum). Timed runs (-D) avoid perftest's -n-per-QP semantics.
# droce-perf takes at most 16,384 QPs (perftest's MAX_QP_NUM), so 65,536 is not run here.
# -r 1: write_bw posts no receives, but droce-perf sizes its CQ for N x (t + r) and the
# default r = 512 exceeds the CQ limit (1,048,576) at N = 16,384.
#
# Usage: bench/qp_scale_memif.sh [droce-perf] [rounds] [seconds] [csv]
#   env QPS="1 16 256 1024 16384" overrides the QP counts.
#   env T=D: every QP keeps -t D WRs outstanding (ib_write_bw -q N -t D; N = 1 keeps 128),
#   CSV transport "memif-tD"; unset: the total window stays near 128 as above.
# Run it under the heavy-job lock: flock /tmp/droce-heavy.lock bench/qp_scale_memif.sh
set -u
perf=${1:-build/apps/droce-perf/droce-perf}
rounds=${2:-5}
secs=${3:-2}
csv=${4:-}
qps=${QPS:-"1 16 256 1024 16384"}
sock=/tmp/droce-memif-$$.sock
port=$((20000 + $$ % 20000))
work=$(mktemp -d)
trap 'rm -rf "$work" "$sock"' EXIT

eal=(--no-huge -m 1024 --no-pci --no-shconf --log-level=*:warning)

# One run: prints the client's MsgRate in Mpps (or "fail").
# -t for N QPs: T per QP when set (at least 128 in total), else max(1, 128 / N).
t_for() {
    local n=$1 t=$((128 / $1))
    [ "$t" -lt 1 ] && t=1
    [ -n "${T:-}" ] && [ "$t" -lt "$T" ] && t=$T
    echo "$t"
}
label=memif${T:+-t$T}

run_one() {
    local n=$1 t
    t=$(t_for "$n")
    rm -f "$sock"
    "$perf" write_bw -l 0 "${eal[@]}" --file-prefix "qsm-s$$" \
        --vdev="net_memif0,role=server,socket=$sock" -- \
        --ip 10.78.0.1/24 --mac 02:00:00:00:02:01 -s 64 -q "$n" -t "$t" -D "$secs" -r 1 \
        -p "$port" --timeout 300 >"$work/srv" 2>&1 &
    local srv=$!
    sleep 1
    "$perf" write_bw -l 1 "${eal[@]}" --file-prefix "qsm-c$$" \
        --vdev="net_memif0,role=client,socket=$sock" -- \
        --ip 10.78.0.2/24 --mac 02:00:00:00:02:02 -s 64 -q "$n" -t "$t" -D "$secs" -r 1 \
        -p "$port" --timeout 300 127.0.0.1 >"$work/cli" 2>&1
    local rc=$?
    wait "$srv"
    local src=$?
    local mpps
    mpps=$(awk '$1 == 64 && NF >= 5 { v = $5 } END { if (v != "") print v }' "$work/cli")
    if [ $rc -ne 0 ] || [ $src -ne 0 ] || [ -z "$mpps" ]; then
        echo "N=$n: client rc $rc, server rc $src" >&2
        tail -n 5 "$work/cli" "$work/srv" >&2
        echo fail
        return
    fi
    echo "$mpps"
}

declare -A res byround
for r in $(seq 1 "$rounds"); do
    for n in $qps; do
        m=$(run_one "$n")
        echo "round $r N=$n: $m Mpps"
        echo "csv,qps,$label,$n,$r,$m"
        [ -n "$csv" ] && [ "$m" != fail ] && echo "qps,$label,$n,$r,$m" >>"$csv"
        res[$n]="${res[$n]:-} $m"
        byround[$n,$r]=$m
    done
done

echo
echo "64 B write_bw, two processes over net_memif, $rounds rounds x $secs s"
echo "| QPs   | -t | Mpps min | Mpps median | Mpps max | ratio to 1 QP, same round: min / median / max |"
echo "|-------|----|----------|-------------|----------|-----------------------------------------------|"
for n in $qps; do
    t=$(t_for "$n")
    read -r mn md mx < <(echo "${res[$n]}" | tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) { print "- - -"; exit }
               m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
               printf "%.3f %.3f %.3f\n", v[1], m, v[NR] }')
    # Ratios within a round (same-run): a round slowed by another job slows N = 1 too.
    ratio=$(for r in $(seq 1 "$rounds"); do
        echo "${byround[$n,$r]:-fail} ${byround[1,$r]:-fail}"
    done | awk '$1 != "fail" && $2 != "fail" && $2 > 0 { print $1 / $2 }' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
               m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
               printf "%.2f / %.2f / %.2f\n", v[1], m, v[NR] }')
    printf "| %5s | %3s | %8s | %11s | %8s | %45s |\n" "$n" "$t" "$mn" "$md" "$mx" "$ratio"
done
