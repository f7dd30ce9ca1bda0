#!/usr/bin/env bash
# Real-process head-of-line blocking under PFC (issue 16, experiment e): the 2:1 incast of
# bench/cc_fabric_incast.sh plus a victim flow that shares flow 0's link but not the
# bottleneck. Two droce-fabric processes over net_memif (--no-huge):
#
#   A (flow 0) --\                         /-- S0 \  bottleneck: one queue at RATE
#                 leaf --uplink (UPX x host)- spine -- S1 /  (--to 2,3 --shared)
#   V (victim) --/                    |    \-- SV    no bottleneck
#                                B (flow 1)
#
# A -> S0 and B -> S1 meet in the spine's bottleneck (2:1); V -> SV crosses the same
# leaf-spine link as A but leaves the spine on an idle port. With PFC the spine pauses the
# uplink when A's bytes in its queue reach XOFF; the leaf obeys (droce-fabric
# --honour-pfc 0), its uplink queue fills and it pauses A and V in turn (droce-perf
# --pfc=0 on every process), so V is held though its own path is idle. Without PFC
# nothing stops V. Modes as in cc_fabric_incast.sh: off, on (DCQCN), pfc, pfc+on.
# Writes OUT/victim.csv (one row per round and mode) and prints a line per run;
# bench/plot_victim.py makes OUT/cc_victim.png and the min/median/max summary.
# Usage: flock /tmp/droce-heavy.lock bench/cc_fabric_victim.sh [build dir] [rounds]
#        [secs] [bottleneck Gb/s, default 0.06] [out dir]
#        [modes, default "off pfc pfc+on on"] [XOFF,XON bytes, default 80000,71000]
#        [hosts' line rate Gb/s, default 0.15]
# Environment (defaults in brackets): UPX leaf uplink rate in host rates [2], MTU RoCE
# path MTU [4096], KMIN KMAX PMAX the spine's RED/ECN in the DCQCN modes
# [20000 100000 0.2], DCONF droce-perf's DCQCN settings [bench/cc/victim_dcqcn.conf],
# FANIN the incast N:1, 2..7 [2] (flows 1 .. N-1 send from the spine; flow1_MBps is then
# their mean), KEEP=1 also keeps each sender's output (counters) in OUT.
# Why these values (bench/README.md, "victim flow, real processes"): eight processes share
# two cores, so the rates are low enough that every host reaches its line rate alone
# (0.15 Gb/s: the victim 17.5 of 18.5 MB/s); 4 KB frames cut the per-byte CPU 4x and
# make each RC window (128 packets, 512 KB) larger than XOFF, so a paused flow's bytes
# stand in the leaf's FIFO in front of the victim's, as a host's do in its NIC; Kmax
# below XOFF (per ingress port; the shared queue holds two) lets DCQCN act before PFC;
# DCQCN's timers and rate steps scaled to the bottleneck (victim_dcqcn.conf). The leaf
# does no ECN marking: its uplink plays the host link of the simulator, not a switch.
# RC ACK timeout 1.07 s (victim_dcqcn.conf [qp]): a queue draining slower than perftest's
# 67 ms made the senders resend windows still queued.
# 3 rounds of the 4 modes at 5 s take about 3 minutes.
set -u
# shellcheck source=../scripts/fabric_ready.sh
. "$(dirname "$0")/../scripts/fabric_ready.sh"
build=${1:-build}
rounds=${2:-3}
secs=${3:-5}
rate=${4:-0.06}
out=${5:-bench/cc}
modes=${6:-off pfc pfc+on on}
pfcth=${7:-80000,71000}
host=${8:-0.15}
upx=${UPX:-2}
n=${FANIN:-2}
if ((n < 2 || n > 7)); then echo "FANIN $n: want 2..7 (the spine has 2 FANIN + 1 ports, at most 16)"; exit 2; fi
uprate=$(awk -v r="$host" -v x="$upx" 'BEGIN { print x * r }')
mtu=${MTU:-4096}
pf=(--line-rate="${host}g" --tx-burst=32 -m "$mtu" --eth-mtu=9000)
dconf=${DCONF:-$(dirname "$0")/cc/victim_dcqcn.conf}
ecnopt=(--kmin "${KMIN:-20000}" --kmax "${KMAX:-100000}" --pmax "${PMAX:-0.2}")
fab=$build/apps/droce-fabric/droce-fabric
perf=$build/apps/droce-perf/droce-perf
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
eal=(--no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
srv() { echo "--vdev=net_memif$1,role=server,socket=$work/$2,socket-abstract=no"; }
cli() { echo "--vdev=net_memif0,role=client,socket=$work/$1,socket-abstract=no"; }
csv=$out/victim.csv
echo "round,mode,flow0_MBps,flow1_MBps,victim_MBps,spine_pause_frames,leaf_pause_frames,uplink_held_ms,drops,ring_full,cnps,xoff_events,incast_MBps" >"$csv"

for r in $(seq "$rounds"); do
  for mode in $modes; do
    dcqcn=off fabpfc=() perfpfc=() leafpfc=()
    case $mode in
      off) ;;
      on) dcqcn=on; fabpfc=("${ecnopt[@]}") ;;
      pfc) fabpfc=(--pfc "$pfcth" --no-ecn); perfpfc=(--pfc=0); leafpfc=(--pfc "$pfcth") ;;
      pfc+on) dcqcn=on; fabpfc=(--pfc "$pfcth" "${ecnopt[@]}"); perfpfc=(--pfc=0); leafpfc=(--pfc "$pfcth") ;;
      *) echo "unknown mode $mode (off, on, pfc, pfc+on)"; exit 2 ;;
    esac
    rm -f "$work"/s* "$work"/l*
    base=$((23000 + ($$ + r * 7) % 20000))
    # spine: 0 uplink from the leaf, 1 .. n-1 flows 1 .. n-1's senders (B), n .. 2n-1 their
    # receivers S0 .. S(n-1), 2n SV
    sp_vdev=() to=()
    for ((j = 0; j <= 2 * n; ++j)); do sp_vdev+=("$(srv $j s$j)"); done
    for ((k = 0; k < n; ++k)); do to+=($((n + k))); done
    timeout $((secs + 60)) "$fab" -l 0 "${eal[@]}" --file-prefix "vs$$" \
        "${sp_vdev[@]}" -- \
        --to "$(IFS=,; echo "${to[*]}")" --shared --rate-gbps "$rate" --idle-us 20 --secs $((secs + 50)) "${fabpfc[@]}" \
        >"$work/spine" 2>&1 &
    spine=$!
    pids=("$spine")
    fabric_ready "$work/spine" "$spine"
    # leaf: 0 A, 1 V, 2 uplink (memif client of the spine's port 0)
    timeout $((secs + 60)) "$fab" -l 0 "${eal[@]}" --file-prefix "vl$$" \
        "$(srv 0 l0)" "$(srv 1 l1)" \
        "--vdev=net_memif2,role=client,socket=$work/s0,socket-abstract=no" -- \
        --to 2 --rate-gbps "$uprate" --honour-pfc 0 --idle-us 20 --secs $((secs + 50)) --no-ecn "${leafpfc[@]}" \
        >"$work/leaf" 2>&1 &
    leaf=$!
    pids+=("$leaf")
    fabric_ready "$work/leaf" "$leaf"
    # flows k = 0 .. n-1 (flow 0 is A) and the victim k = n: servers on spine ports n + k,
    # clients A and V on the leaf's ports 0 and 1, B on spine port k
    for ((k = 0; k <= n; ++k)); do
        timeout $((secs + 40)) "$perf" write_bw -l 1 "${eal[@]}" --file-prefix "vs$k$$" \
            "$(cli s$((n + k)))" -- --ip 10.80.0.$((k + 1))/24 --mac 02:00:00:00:03:0$((k + 1)) \
            -s 65536 -D "$secs" -p $((base + k)) --timeout 30 --dcqcn="$dcqcn" "${perfpfc[@]}" \
            "${pf[@]}" --config="$dconf" --counters >"$work/srv$k" 2>&1 &
        spid[$k]=$!
        pids+=("${spid[$k]}")
    done
    sleep $((1 + n / 2)) # the servers listen before the clients connect
    for ((k = 0; k <= n; ++k)); do
        sock=s$k
        ((k == 0)) && sock=l0
        ((k == n)) && sock=l1
        timeout $((secs + 40)) "$perf" write_bw -l 1 "${eal[@]}" --file-prefix "vc$k$$" \
            "$(cli "$sock")" -- --ip 10.80.0.$((k + 11))/24 --mac 02:00:00:00:03:1$k \
            -s 65536 -D "$secs" -p $((base + k)) --timeout 30 --dcqcn="$dcqcn" "${perfpfc[@]}" \
            "${pf[@]}" --config="$dconf" --counters 127.0.0.1 >"$work/cli$k" 2>&1 &
        cpid[$k]=$!
        pids+=("${cpid[$k]}")
    done
    ok=1
    for ((k = 0; k <= n; ++k)); do wait "${cpid[$k]}" || ok=0; wait "${spid[$k]}" || ok=0; done
    kill -INT "$leaf" "$spine"
    wait "$leaf" || ok=0
    wait "$spine" || ok=0
    cp "$work/spine" "$out/victim_spine_${mode}_$r.txt"
    cp "$work/leaf" "$out/victim_leaf_${mode}_$r.txt"
    if [[ -n ${KEEP:-} ]]; then
        for ((k = 0; k <= n; ++k)); do cp "$work/cli$k" "$out/victim_cli${k}_${mode}_$r.txt"; done
    fi
    if [[ $ok -ne 1 ]]; then
        echo "round $r mode $mode: a process failed"
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done # none left to load the next run
        tail -n 3 "$work"/cli* "$work"/srv* "$work/spine" "$work/leaf"
        continue
    fi
    for ((k = 0; k <= n; ++k)); do
        mb[$k]=$(awk '$1 == 65536 && NF >= 5 { v = $4 } END { print v + 0 }' "$work/cli$k")
    done
    # flow1_MBps: flow 1's rate, with FANIN > 2 the mean of flows 1 .. n-1
    others=$(printf '%s\n' "${mb[@]:1:n-1}" | awk '{ s += $1 } END { printf "%.3g", s / NR }')
    incast=$(printf '%s\n' "${mb[@]:0:n}" | awk '{ s += $1 } END { printf "%.3g", s }')
    victim=${mb[$n]}
    pcount() { awk '$1 == "port" { for (i = 1; i < NF; ++i) if ($i ~ /^pfc_(xoff|xon|refresh)$/) c += $(i + 1) } END { print c + 0 }' "$1"; }
    sp=$(pcount "$work/spine")
    lp=$(pcount "$work/leaf")
    held=$(awk '$1 == "port" { for (i = 1; i < NF; ++i) if ($i == "held_us") c += $(i + 1) } END { printf "%.1f", c / 1000 }' "$work/leaf")
    # drops: the fabrics' queues (tail, RED, loss); ring_full: a process's memif ring was
    # full when a fabric sent to it (a receiver not scheduled in time, not congestion)
    drops=$(awk '$1 == "port" { for (i = 1; i < NF; ++i) if ($i ~ /^dropped_/) d += $(i + 1) } END { print d + 0 }' "$work/spine" "$work/leaf")
    full=$(awk '$1 == "port" { for (i = 1; i < NF; ++i) if ($i == "tx_full") d += $(i + 1) } END { print d + 0 }' "$work/spine" "$work/leaf")
    xoffs=$(awk '$1 == "port" { for (i = 1; i < NF; ++i) if ($i == "pfc_xoff") c += $(i + 1) } END { print c + 0 }' "$work/spine" "$work/leaf")
    cnps=$(awk '$1 == "rp_cnp_handled" { c += $2 } END { print c + 0 }' "$work"/cli*)
    echo "$r,$mode,${mb[0]},$others,$victim,$sp,$lp,$held,$drops,$full,$cnps,$xoffs,$incast" >>"$csv"
    echo "round $r mode $mode: MB/s flow0 ${mb[0]} flows 1..$((n - 1)) ${mb[*]:1:n-1} victim $victim (incast total $incast); pause frames spine $sp leaf $lp, uplink held $held ms, drops $drops, ring full $full, CNPs handled $cnps, XOFF events $xoffs"
  done
done
