#!/usr/bin/env bash
# Real-process 2:1 incast through droce-fabric (issue 10, item 4a as processes): two
# droce-perf write_bw clients send to two droce-perf servers whose ports share one
# bottleneck queue (droce-fabric --to 2,3 --shared: the link into the servers' rack), all
# over net_memif (--no-huge). droce-perf has one server per process, hence two servers
# behind the one queue; at the queue it is 2:1 as in the simulator.
# Writes OUT/incast_depth.csv (t_us,port,depth_bytes,depth_frames), OUT/incast_fabric.txt
# and prints one summary line per round: per-client MB/s, Jain's index, queue max, drops.
# Each round runs every mode in turn: off / on is DCQCN (droce-perf --dcqcn=on|off on all
# four processes): off, the rate is what the RC windows and the bottleneck allow; on, the
# fabric's CE marks come back as CNPs that cut the senders' rates. pfc / pfc+on add PFC
# (issue 16): droce-fabric --pfc XOFF,XON sends pause frames to the senders (ECN off in
# pfc, on in pfc+on), whose engines honour them on priority 0 (droce-perf --pfc=0; RoCE data
# leaves with DSCP 0 here).
# Usage: flock /tmp/droce-heavy.lock bench/cc_fabric_incast.sh [build dir] [rounds] [secs]
#        [rate Gb/s] [out dir] [modes, default "off on"; also pfc, pfc+on] [XOFF,XON bytes,
#        default 80000,77800] [droce-perf port flags, default "--line-rate=RATEg --tx-burst=32":
#        memif reports no speed and has no wire, so each droce port is told the link's rate
#        (DCQCN's maximum) and holds its QPs to it in bursts of 32 frames (4 starved the senders here: a sleeping poll loop wakes late); "" = neither]
set -u
# shellcheck source=../scripts/fabric_ready.sh
. "$(dirname "$0")/../scripts/fabric_ready.sh"
build=${1:-build}
rounds=${2:-3}
secs=${3:-5}
rate=${4:-1}
out=${5:-bench/cc}
modes=${6:-off on}
pfcth=${7:-80000,77800}
portflags=${8---line-rate=${rate}g --tx-burst=32}
read -r -a pf <<<"$portflags" 
fab=$build/apps/droce-fabric/droce-fabric
perf=$build/apps/droce-perf/droce-perf
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
eal=(--no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
vdev() { echo "--vdev=net_memif0,role=client,socket=$work/s$1,socket-abstract=no"; }

for r in $(seq "$rounds"); do
  for mode in $modes; do
    dcqcn=off fabpfc=() perfpfc=()
    case $mode in
      off|on) dcqcn=$mode ;;
      pfc) fabpfc=(--pfc "$pfcth" --no-ecn); perfpfc=(--pfc=0) ;;
      pfc+on) dcqcn=on; fabpfc=(--pfc "$pfcth"); perfpfc=(--pfc=0) ;;
      *) echo "unknown mode $mode (off, on, pfc, pfc+on)"; exit 2 ;;
    esac
    rm -f "$work"/s*
    base=$((23000 + ($$ + r * 7) % 20000))
    timeout $((secs + 60)) "$fab" -l 0 "${eal[@]}" --file-prefix "fi$$" \
        --vdev="net_memif0,role=server,socket=$work/s0,socket-abstract=no" \
        --vdev="net_memif1,role=server,socket=$work/s1,socket-abstract=no" \
        --vdev="net_memif2,role=server,socket=$work/s2,socket-abstract=no" \
        --vdev="net_memif3,role=server,socket=$work/s3,socket-abstract=no" -- \
        --to 2,3 --shared --rate-gbps "$rate" --secs $((secs + 50)) --sample-us 100 \
        --csv "$work/depth.csv" "${fabpfc[@]}" >"$work/fab" 2>&1 &
    fpid=$!
    fabric_ready "$work/fab" "$fpid"
    for k in 0 1; do
        timeout $((secs + 40)) "$perf" write_bw -l 1 "${eal[@]}" --file-prefix "fis$k$$" \
            "$(vdev $((k + 2)))" -- --ip 10.80.0.$((k + 1))/24 --mac 02:00:00:00:03:0$((k + 1)) \
            -s 65536 -D "$secs" -p $((base + k)) --timeout 30 --dcqcn="$dcqcn" "${perfpfc[@]}" ${pf[@]+"${pf[@]}"} --counters >"$work/srv$k" 2>&1 &
        spid[$k]=$!
    done
    sleep 1
    for k in 0 1; do
        timeout $((secs + 40)) "$perf" write_bw -l 1 "${eal[@]}" --file-prefix "fic$k$$" \
            "$(vdev "$k")" -- --ip 10.80.0.$((k + 11))/24 --mac 02:00:00:00:03:1$k \
            -s 65536 -D "$secs" -p $((base + k)) --timeout 30 --dcqcn="$dcqcn" "${perfpfc[@]}" ${pf[@]+"${pf[@]}"} --counters 127.0.0.1 >"$work/cli$k" 2>&1 &
        cpid[$k]=$!
    done
    ok=1
    for k in 0 1; do wait "${cpid[$k]}" || ok=0; wait "${spid[$k]}" || ok=0; done
    kill -INT "$fpid"
    wait "$fpid"
    cp "$work/depth.csv" "$out/incast_depth_${mode}_$r.csv"
    cp "$work/fab" "$out/incast_fabric_${mode}_$r.txt"
    if [[ $ok -ne 1 ]]; then
        echo "round $r DCQCN $mode: a droce-perf failed"
        tail -n 3 "$work"/cli* "$work"/srv*
        continue
    fi
    m0=$(awk '$1 == 65536 && NF >= 5 { v = $4 } END { print v + 0 }' "$work/cli0")
    m1=$(awk '$1 == 65536 && NF >= 5 { v = $4 } END { print v + 0 }' "$work/cli1")
    qmax=$(awk -F, 'NR > 1 && $3 > m { m = $3 } END { print m + 0 }' "$work/depth.csv")
    qmean=$(awk -F, 'NR > 1 { s += $3; n++ } END { print n ? int(s / n) : 0 }' "$work/depth.csv")
    drops=$(awk '$1 == "port" && $2 == "2:" { for (i = 1; i < NF; ++i) if ($i ~ /^dropped_/) d += $(i + 1) } END { print d + 0 }' "$work/fab")
    cnps=$(awk '$1 == "rp_cnp_handled" { c += $2 } END { print c + 0 }' "$work"/cli0 "$work"/cli1)
    pauses=$(awk '$1 == "port" { for (i = 1; i < NF; ++i) if ($i ~ /^pfc_(xoff|xon|refresh)$/) c += $(i + 1) } END { print c + 0 }' "$work/fab")
    paused=$(awk '$1 == "port" { for (i = 1; i < NF; ++i) if ($i == "paused_us") c += $(i + 1) } END { print c + 0 }' "$work/fab")
    rxpause=$(awk '$1 ~ /^rx_prio[0-7]_pause$/ { c += $2 } END { print c + 0 }' "$work"/cli0 "$work"/cli1)
    awk -v a="$m0" -v b="$m1" -v q="$qmax" -v d="$drops" -v r="$r" -v g="$rate" -v m="$mode" -v c="$cnps" \
        -v pf="$pauses" -v pu="$paused" -v rp="$rxpause" -v qm="$qmean" 'BEGIN {
        j = (a + b) * (a + b) / (2 * (a * a + b * b));
        printf "round %d: 2:1 through %s Gb/s, mode %s: client MB/s %.1f %.1f (sum %.1f), Jain %.3f, queue mean %d max %d B, drops %d, CNPs handled %d, pause frames sent %d (senders counted %d), paused ms %.1f\n", r, g, m, a, b, a + b, j, qm, q, d, c, pf, rp, pu / 1000 }'
  done
done
