#!/usr/bin/env bash
# DCQCN parameter sweep in the simulator (issue 10): one change at a time from droce's
# defaults (ConnectX's, alpha period 55 µs), 2:1 and 8:1 incast (bench/cc_sim --exp ac,
# DCQCN on), min/median/max over ROUNDS seeds, one CSV row per change and experiment:
#   change,exp,converge_ms,converge_cap_ms,conv1ms_ms,conv1ms_cap_ms,jain,goodput_gbps,
#   qmax_after_conv_kb,qmax_kb,drops
# (each figure min/median/max; converge_ms nan = never within 10% for good, on 5 ms means;
# conv1ms_ms the same on 1 ms means; the _cap_ columns against the link's share, capacity
# / N, the others against the flows' mean in each window, which counts equal flows on an
# under-used link as converged).
# Usage: flock /tmp/droce-heavy.lock bench/cc_sweep.sh [build dir] [out.csv] [rounds]
set -eu
build=${1:-build}
out=${2:-bench/cc/dcqcn_sweep.csv}
rounds=${3:-5}
sim=$build/bench/cc_sim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "change,exp,converge_ms,converge_cap_ms,conv1ms_ms,conv1ms_cap_ms,jain,goodput_gbps,qmax_after_conv_kb,qmax_kb,drops" >"$out"
run() {
    local name=$1
    shift
    "$sim" --out "$work" --exp ac --modes on --rounds "$rounds" "$@" | grep -v '^#' |
        while read -r l; do
            g() { grep -o " $1=[^ ]*" <<<"$l" | cut -d= -f2; }
            echo "\"$name\",${l%% *},$(g converge_ms),$(g converge_cap_ms),$(g conv1ms_ms),$(g conv1ms_cap_ms),$(g jain),$(g goodput_gbps),$(g qmax_after_conv_kb),$(g qmax_kb),$(g drops)"
        done >>"$out"
}
run "defaults (dce_tcp_rtt 55 us)"
for v in 1000 4000 20000 100000 300000 1000000; do run "dce_tcp_rtt_ns=$v" --cc dce_tcp_rtt_ns=$v; done
run "clamp_tgt_rate=1" --cc clamp_tgt_rate=1
run "clamp_tgt_rate_after_time_inc=0" --cc clamp_tgt_rate_after_time_inc=0
for v in 131072 1048576 4194304 10000000; do run "rpg_byte_reset=$v" --cc rpg_byte_reset=$v; done
for v in 1 2; do run "rpg_threshold=$v" --cc rpg_threshold=$v; done
for v in 55000 100000 1000000; do run "rpg_time_reset_ns=$v" --cc rpg_time_reset_ns=$v; done
for v in 0 50000; do run "rate_reduce_monitor_period_ns=$v" --cc rate_reduce_monitor_period_ns=$v; done
for v in 0 20000 50000; do run "min_time_between_cnps_ns=$v" --cc min_time_between_cnps_ns=$v; done
for v in 1020 1008 960; do run "dce_tcp_g=$v" --cc dce_tcp_g=$v; done
for v in 1000000 20000000 40000000; do run "rpg_ai_rate_bps=$v" --cc rpg_ai_rate_bps=$v; done
for v in 0.01 0.2 1.0; do run "switch: pmax=$v" --pmax "$v"; done
run "measurement: 60 ms run (Jain over its last 10 ms)" --duration-ms 60
run "dce_tcp_rtt_ns=1000 + rpg_byte_reset=1048576" --cc dce_tcp_rtt_ns=1000 --cc rpg_byte_reset=1048576
run "dce_tcp_rtt_ns=1000 + clamp_tgt_rate_after_time_inc=0" --cc dce_tcp_rtt_ns=1000 --cc clamp_tgt_rate_after_time_inc=0
run "clamp_tgt_rate_after_time_inc=0 + rpg_byte_reset=1048576" --cc clamp_tgt_rate_after_time_inc=0 --cc rpg_byte_reset=1048576
run "paper's parameters" --params paper
echo "wrote $out"
