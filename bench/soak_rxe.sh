#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Soft-RoCE leg of the soak (issue 15): droce against Linux's rdma_rxe in the rxe VM,
# through netem on the guest's egress, for MINUTES, every case verifying its data.
#
#   bench/soak_rxe.sh BUILD_DIR MINUTES CSV [options]      (root; ./dev.sh soak M --rxe)
#
# One VM boot (eth0 MTU 4200, rxe active_mtu 4096; own tap/subnet/VM: tap-rxesoak,
# 10.84.0.0/24, rxesoak), then `tc qdisc add dev eth0 root netem SPEC` in the guest (the
# guest's neighbour entry for droce is pinned: netem also drops ARP). Cases, cycled until
# the minutes run out (a case is never cut short; the last one may end past the mark):
#   pp-mMTU-sSIZE-droce_ROLE   droce-pingpong -c  <-> ibv_rc_pingpong -c, path MTU 1024 and
#                              4096, sizes 1, 4096, 65536, droce client and server (12)
#   rp-sSIZE-droce_ROLE        droce-rping -v -V  <-> rping -v -V (SEND + RDMA READ + RDMA
#                              WRITE per ping, the whole buffer compared), sizes 64, 4096,
#                              65535 (rping's range is 26..65535), droce server and client (6)
# Iterations adapt so each case moves traffic for about --case-seconds (from the case's
# previous run; first runs: pingpong 500 / 100 (65536 B), rping 100).
# A case passes when both sides exit 0 and
#   pp: both printed "N iters in", neither printed "invalid data" (-c's check)
#   rp: the client printed N "ping data: rdma-ping-I: " lines, I = 0..N-1 in order, the
#       server N "server ping data: " lines, neither printed "data mismatch"
# Two exceptions, counted in final_ack_lost and not errors, both a closing message netem
# dropped after the guest had verified everything and exited 0: droce as pingpong client
# ends with "transport retry counter exceeded" on its last SEND (the guest's last ACK was
# lost and ibv_rc_pingpong has no closing handshake; tests/interop/pingpong_rxe.sh accepts
# the same), and droce as rping server still waits for the guest's DREQ (lost; Linux's
# rping destroys its id right after rdma_disconnect, so the DREQ is never resent) and is
# killed after 15 s (its buffered output and counters are lost).
# CSV (one row at the first case boundary after each minute; cumulative unless noted):
#   t_s, minute, cases, iters (tool iterations: pingpong iters, rping pings), wrs (droce's
#   WRs: pingpong 2 per iter (SEND + RECV); rping 4 per ping as client, 6 as server),
#   wrs_per_s (interval), data_errors (verification failures: "invalid data",
#   "data mismatch", a wrong ping line), wr_errors (cases that failed, any reason),
#   final_ack_lost, rss_kib (max VmHWM of the interval's droce processes), mbufs_in_use
#   (max at exit, interval), lat_p50_us / lat_p99_us / lat_max_us (over the interval's
#   pingpong cases: droce's usec/iter, a round trip; rping prints no latency; blank when
#   none), retransmitted_packets, timeouts (local_ack_timeout_err), duplicate_request,
#   rx_drop_bad_icrc, implied_nak_seq_err (droce's --counters, summed), netem_sent_pkts,
#   netem_dropped (the guest's `tc -s qdisc`).
# Options:
#   --netem SPEC         default "loss 1% duplicate 1% reorder 1% corrupt 0.5% delay 1ms"
#                        (reorder needs the delay: netem reorders by sending a packet early)
#   --case-seconds S     traffic time per case (default 20)
#   --cases REGEX        only the cases whose names match
#   --keep               keep the logs of passing cases too
#   --out DIR            per-case logs (default: a new /tmp/droce-soak-rxe.XXXXXX; failed
#                        cases keep theirs, passing ones are removed unless --keep)
# Exit status: 1 on any data error or failed case (or no case passed), 2 on a set-up failure.
# Env: DROCE_EAL (default "-l 0 --no-huge -m 512 --no-pci --no-shconf"), RXE_HOME, IL_*.
set -uo pipefail
export IL_TAP=${IL_TAP:-tap-rxesoak} IL_VM=${IL_VM:-rxesoak} IL_HOST_IP=${IL_HOST_IP:-10.84.0.1}
export IL_VM_IP=${IL_VM_IP:-10.84.0.2} IL_DROCE_IP=${IL_DROCE_IP:-10.84.0.100}
export IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:06:00}
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../tests/interop/lib.sh"

BUILD=${1:-} MINUTES=${2:-} CSV=${3:-}
[ -n "$BUILD" ] && [ -n "$MINUTES" ] && [ -n "$CSV" ] || {
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
shift 3
NETEM="loss 1% duplicate 1% reorder 1% corrupt 0.5% delay 1ms" CASE_SECONDS=20 ONLY="" OUT="" KEEP=0
while (($#)); do case $1 in
  --netem) NETEM=$2; shift 2;; --case-seconds) CASE_SECONDS=$2; shift 2;;
  --cases) ONLY=$2; shift 2;; --out) OUT=$2; shift 2;; --keep) KEEP=1; shift;;
  *) echo "soak_rxe.sh: unknown argument $1" >&2; exit 2;;
esac; done
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}
PP=$BUILD/apps/droce-pingpong/droce-pingpong RP=$BUILD/apps/droce-rping/droce-rping
for b in "$PP" "$RP"; do [ -x "$b" ] || { echo "soak_rxe.sh: $b missing (build first)" >&2; exit 2; }; done
PP=$(readlink -f "$PP") RP=$(readlink -f "$RP")
RP_PORT=7174
CASE_TIMEOUT=$(( CASE_SECONDS * 4 > 60 ? CASE_SECONDS * 4 : 60 ))
trap il_cleanup EXIT
trap 'exit 130' INT TERM
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-soak-rxe.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
# the 4096-MTU frames need af_packet frames >= 4280 bytes (see tests/interop/README.md)
VDEV="net_af_packet0,iface=$IL_TAP,qdisc_bypass=0,framesz=4608,blocksz=36864,framecnt=512"

# ---------------------------------------------------------------- the case list
CASES=()
pp_cases=() rp_cases=()
for m in 1024 4096; do for s in 1 4096 65536; do for r in client server; do
  pp_cases+=("pp-m$m-s$s-droce_$r"); done; done; done
for s in 64 4096 65535; do for r in server client; do rp_cases+=("rp-s$s-droce_$r"); done; done
for i in "${!pp_cases[@]}"; do # interleaved, so that every minute sees both tools
  CASES+=("${pp_cases[$i]}"); [ "$i" -lt "${#rp_cases[@]}" ] && CASES+=("${rp_cases[$i]}")
done
if [ -n "$ONLY" ]; then
  keep=(); for c in "${CASES[@]}"; do [[ $c =~ $ONLY ]] && keep+=("$c"); done; CASES=("${keep[@]}")
fi
((${#CASES[@]})) || { echo "soak_rxe.sh: no case matches '$ONLY'" >&2; exit 2; }
declare -A ITERS=()  # next iteration count per case

# ---------------------------------------------------------------- one case
# sk_bg OUT ERR CMD...: il_bg with stdout and stderr apart: the tools' stdout is block
# buffered into a file and their stderr is not, so one file gets lines cut in two
sk_bg() {
  local out=$1 err=$2; shift 2
  setsid "$@" > "$out" 2> "$err" < /dev/null &
  IL_BG=$!
  IL_BG_PIDS+=("$IL_BG")
}
# wait_pair DPID GPID LIMIT: both to exit (the other gets 15 s after one ends with 0, 10 s
# after a failure; LIMIT overall); samples droce's VmHWM. Sets DRC, GRC, HWM_KIB.
wait_pair() {
  local dpid=$1 gpid=$2 end=$(( $(date +%s) + $3 )) h grace_end=0
  HWM_KIB=0 FIRST=none T_FIRST=$(date +%s.%N)
  while :; do
    h=$(awk '/^VmHWM:/{print $2}' "/proc/$dpid/status" 2>/dev/null) && [ -n "$h" ] && [ "$h" -gt "$HWM_KIB" ] && HWM_KIB=$h
    # (pid 0 = reaped already; `kill -0 0` would test this shell's own group)
    local da=0 ga=0
    [ "$dpid" != 0 ] && kill -0 "$dpid" 2>/dev/null && da=1
    [ "$gpid" != 0 ] && kill -0 "$gpid" 2>/dev/null && ga=1
    [ $da = 0 ] && [ $ga = 0 ] && break
    if [ $((da + ga)) = 1 ] && [ "$grace_end" = 0 ]; then
      local rc=0
      if [ $da = 0 ]; then wait "$dpid" 2>/dev/null; rc=$?; DRC=$rc; il_forget "$dpid"; dpid=0; FIRST=droce
      else wait "$gpid" 2>/dev/null; rc=$?; GRC=$rc; il_forget "$gpid"; gpid=0; FIRST=guest; fi
      T_FIRST=$(date +%s.%N)
      grace_end=$(( $(date +%s) + ( rc == 0 ? 15 : 10 ) ))
    fi
    if [ "$(date +%s)" -ge "$end" ] || { [ "$grace_end" != 0 ] && [ "$(date +%s)" -ge "$grace_end" ]; }; then
      break
    fi
    sleep 0.2
  done
  if [ "$dpid" != 0 ]; then il_wait_pid "$dpid" 0; DRC=$IL_RC; fi
  if [ "$gpid" != 0 ]; then il_wait_pid "$gpid" 0; GRC=$IL_RC; fi
}

# pings_ok LOG PREFIX N: N lines "PREFIXrdma-ping-I: " for I = 0..N-1, in order
pings_ok() {
  local i=0 line want
  while IFS= read -r line; do
    want="${2}rdma-ping-$i: "
    [ "${line:0:${#want}}" = "$want" ] || return 1
    i=$((i + 1))
  done < <(grep -a "^${2}rdma-ping-" "$1")
  [ "$i" = "$3" ]
}

# run_case NAME: sets C_OK, C_WHY, C_DATAERR, C_ITERS, C_WRS, C_LAT_US ("" if none),
# C_HWM, C_MBUFS, C_FINALACK, C_SECS; the droce log is $dir/droce.log
run_case() {
  local name=$1 dir=$OUT/$1 kind size role mtu n
  rm -rf "$dir"; mkdir -p "$dir"
  C_OK=0 C_WHY="" C_DATAERR=0 C_ITERS=0 C_WRS=0 C_LAT_US="" C_HWM=0 C_MBUFS=0 C_FINALACK=0
  kind=${name%%-*}; role=${name##*droce_}
  size=$(sed -E 's/.*-s([0-9]+)-.*/\1/' <<<"$name")
  local droce guest
  if [ "$kind" = pp ]; then
    mtu=$(sed -E 's/^pp-m([0-9]+)-.*/\1/' <<<"$name")
    n=${ITERS[$name]:-$( [ "$size" -gt 4096 ] && echo 100 || echo 500 )}
    local common=(-g 1 -p "$IL_PORT" -s "$size" -n "$n" -m "$mtu" -c)
    # shellcheck disable=SC2206
    droce=("$PP" $DROCE_EAL --vdev "$VDEV" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC"
           --eth-mtu "$IL_ETH_MTU" --timeout "$CASE_TIMEOUT" --counters "${common[@]}")
    guest=(ibv_rc_pingpong -d rxe0 "${common[@]}")
    if [ "$role" = client ]; then droce+=("$IL_VM_IP"); else guest+=("$IL_HOST_IP"); fi
  else
    n=${ITERS[$name]:-100}
    local common=(-v -V -C "$n" -S "$size" -p "$RP_PORT")
    # shellcheck disable=SC2206
    droce=("$RP" $DROCE_EAL --vdev "$VDEV" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC"
           --eth-mtu "$IL_ETH_MTU" --timeout "$CASE_TIMEOUT" --counters -d "${common[@]}")
    local g="rping ${common[*]}"
    if [ "$role" = server ]; then droce+=(-s); g+=" -c -a $IL_DROCE_IP"
    else droce+=(-c -a "$IL_VM_IP"); g+=" -s -a 0.0.0.0"; fi
    # -v prints each ping's whole buffer (64 KiB lines): cut them in the guest (rxe-vm
    # exec's streaming dies of SIGPIPE on such output) and pass rping's status on; its
    # stderr after its stdout (together, a line of one lands inside a line of the other)
    guest=("{ $g 2>/tmp/rping.err; echo rping-exit=\$?; cat /tmp/rping.err; } | cut -c1-80")
  fi
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"
  local t0 dpid="" gpid="" i; t0=$(date +%s.%N); DRC=-1 GRC=-1 FIRST=none T_FIRST=$t0
  if [ "$role" = server ]; then
    sk_bg "$dir/droce.log" "$dir/droce.err" "${droce[@]}"; dpid=$IL_BG
    local ready=0
    if [ "$kind" = pp ]; then il_wait_host_listen "$IL_PORT" 30 "$dpid" && ready=1
    else
      for i in $(seq 300); do # the CM listens once EAL and the device are up
        grep -q '^rdma_listen' "$dir/droce.err" 2>/dev/null && { ready=1; break; }
        kill -0 "$dpid" 2>/dev/null || break; sleep 0.1
      done
    fi
    if [ $ready = 1 ]; then
      il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
      wait_pair "$dpid" "$gpid" $((CASE_TIMEOUT + 20))
    else
      C_WHY+="droce did not listen; "; il_wait_pid "$dpid" 5; DRC=$IL_RC
    fi
  else
    il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
    local ready=0
    if [ "$kind" = pp ]; then il_wait_guest_listen "$IL_PORT" 20 >/dev/null 2>&1 && ready=1
    else # rping's listener is not a socket: wait for the process, then give it a moment
      il_vm_exec -- "i=0; while ! pidof rping >/dev/null; do usleep 100000; i=\$((i+1)); [ \$i -ge 200 ] && exit 1; done; exit 0" \
        >/dev/null 2>&1 && { sleep 2; ready=1; }
    fi
    if [ $ready = 1 ]; then
      sk_bg "$dir/droce.log" "$dir/droce.err" "${droce[@]}"; dpid=$IL_BG
      wait_pair "$dpid" "$gpid" $((CASE_TIMEOUT + 20))
    else
      C_WHY+="guest did not listen; "; il_wait_pid "$gpid" 5; GRC=$IL_RC
    fi
  fi
  C_SECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  # where the time went (a side that lingers after the other ended shows here)
  echo "droce rc=$DRC guest rc=$GRC ${C_SECS}s; $FIRST ended first at $(awk -v a="$t0" -v b="$T_FIRST" 'BEGIN{printf "%.1f", b-a}')s" > "$dir/status"
  C_HWM=$HWM_KIB
  local dlog=$dir/droce.log glog=$dir/guest.log derr=$dir/droce.err
  touch "$dlog" "$glog" "$derr"
  if [ "$kind" = rp ]; then
    # the same for droce's -v lines, after the fact (its pid is sampled for RSS)
    cut -c1-80 "$dlog" > "$dlog.cut" && mv "$dlog.cut" "$dlog"
    if [ "$GRC" = 0 ]; then
      GRC=$(awk -F= '/^rping-exit=/ {rc = $2} END {print (rc == "") ? "none" : rc}' "$glog")
    fi
  fi
  C_MBUFS=$(awk '$1 == "mbufs_in_use" {print $2; exit}' "$dlog"); C_MBUFS=${C_MBUFS:-0}
  # verification failures the tools themselves report
  local bad
  bad=$(grep -a -c -E 'invalid data in page|data mismatch' "$dlog" "$derr" "$glog" | awk -F: '{s += $NF} END {print s + 0}')
  C_DATAERR=$bad
  [ "$bad" = 0 ] || C_WHY+="$bad verification failures printed; "
  local secs_traffic=""
  if [ "$kind" = pp ]; then
    if [ "$role" = client ] && [ "$DRC" = 1 ] && [ "$GRC" = 0 ] && grep -q "^$n iters in" "$glog" &&
       [ "$(cat "$dlog" "$derr" | grep -c '^Failed status')" = 1 ] &&
       cat "$dlog" "$derr" | grep -q '^Failed status transport retry counter exceeded (12) for wr_id 2$'; then
      DRC=0; C_FINALACK=1
    fi
    grep -q "^$n iters in" "$glog" || C_WHY+="guest printed no '$n iters in'; "
    [ "$C_FINALACK" = 1 ] || grep -q "^$n iters in" "$dlog" || C_WHY+="droce printed no '$n iters in'; "
    C_LAT_US=$(awk -v n="$n" '$1 == n && $2 == "iters" {print $(NF-1); exit}' "$dlog")
    [ -n "$C_LAT_US" ] || C_LAT_US=$(awk -v n="$n" '$1 == n && $2 == "iters" {print $(NF-1); exit}' "$glog")
    secs_traffic=$(awk -v n="$n" '$1 == n && $2 == "iters" {print $4; exit}' "$glog")
  else
    local clog=$glog slog=$dlog
    [ "$role" = client ] && { clog=$dlog slog=$glog; }
    if [ "$role" = server ] && [ "$DRC" = 124 ] && [ "$GRC" = 0 ] && pings_ok "$glog" "ping data: " "$n"; then
      # The guest's rping validated all N pings and exited 0, droce still waited for the
      # DREQ: netem dropped it and Linux's rping destroys its id right after
      # rdma_disconnect, so the guest's CM never sends it again (a Linux rping server
      # hangs the same way). droce was killed, its buffered output is lost: counted apart.
      DRC=0; C_FINALACK=1
    fi
    if ! pings_ok "$clog" "ping data: " "$n"; then
      C_WHY+="client: not $n 'ping data' lines in order; "
      # a ping line that is there but wrong (not a missing tail) is a data error
      [ "$(grep -a -c '^ping data: ' "$clog")" = "$n" ] && C_DATAERR=$((C_DATAERR + 1))
    fi
    [ "$C_FINALACK" = 1 ] || pings_ok "$slog" "server ping data: " "$n" || C_WHY+="server: not $n 'server ping data' lines; "
  fi
  [ "$DRC" = 0 ] || C_WHY+="droce exit $DRC; "
  [ "$GRC" = 0 ] || C_WHY+="guest exit $GRC; "
  if [ -z "$C_WHY" ]; then
    C_OK=1; C_ITERS=$n
    if [ "$kind" = pp ]; then C_WRS=$((2 * n))
    elif [ "$role" = client ]; then C_WRS=$((4 * n)); else C_WRS=$((6 * n)); fi
    # the next run of this case aims at CASE_SECONDS of traffic
    [ -n "$secs_traffic" ] || secs_traffic=$C_SECS
    ITERS[$name]=$(awk -v n="$n" -v s="$secs_traffic" -v t="$CASE_SECONDS" \
      'BEGIN { if (s < 0.05) s = 0.05; m = int(n * t / s); if (m > 4 * n) m = 4 * n;
               if (m < 20) m = 20; if (m > 1000000) m = 1000000; print m }')
  else
    il_vm_exec --timeout 10 -- 'for p in $(pidof ibv_rc_pingpong rping); do kill -9 $p; done; true' >/dev/null 2>&1 || true
  fi
}

# ---------------------------------------------------------------- counters and rows
declare -A TOT=()   # droce counters, summed over all cases
add_counters() { # LOG: "  name   value" lines of --counters (device and CM)
  local k v
  while read -r k v; do TOT[$k]=$(( ${TOT[$k]:-0} + v )); done < <(
    awk 'NF == 2 && $1 ~ /^[a-z][a-z0-9_]*$/ && $2 ~ /^[0-9]+$/ && /^ +/ {print $1, $2}' "$1")
}
ctr() { echo "${TOT[$1]:-0}"; }
netem_stats() { # "sent_pkts dropped" of the guest's netem qdisc
  il_vm_exec --timeout 20 -- "tc -s qdisc show dev eth0" 2>/dev/null |
    awk '/qdisc netem/ {q = 1} q && /Sent/ {gsub(/[,)]/, ""); print $4, $7; exit}'
}

N_CASES=0 N_ITERS=0 N_WRS=0 N_DATAERR=0 N_FAIL=0 N_FINALACK=0
I_WRS=0 I_HWM=0 I_MBUFS=0 I_LAT=() T_LAST=0 ROW=0 HWM_ALL=()
declare -A LAT_BY=()  # "kind size" -> usec/iter values, space separated
T0=$(date +%s.%N)
elapsed_s() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }
echo "t_s,minute,cases,iters,wrs,wrs_per_s,data_errors,wr_errors,final_ack_lost,rss_kib,mbufs_in_use,lat_p50_us,lat_p99_us,lat_max_us,retransmitted_packets,timeouts,duplicate_request,rx_drop_bad_icrc,implied_nak_seq_err,netem_sent_pkts,netem_dropped" > "$CSV"
pct() { # P values...: nearest-rank percentile
  local p=$1; shift
  (($#)) || { echo ""; return; }
  printf '%s\n' "$@" | sort -g | awk -v p="$p" '{a[NR] = $1} END {r = int((p * NR + 99) / 100); if (r < 1) r = 1; print a[r]}'
}
emit_row() {
  local t; t=$(elapsed_s); ROW=$((ROW + 1))
  local rate; rate=$(awk -v w="$I_WRS" -v a="$T_LAST" -v b="$t" 'BEGIN{printf "%.1f", (b > a) ? w / (b - a) : 0}')
  local ns; ns=$(netem_stats); read -r nsent ndrop <<<"${ns:-- -}"
  echo "$t,$ROW,$N_CASES,$N_ITERS,$N_WRS,$rate,$N_DATAERR,$N_FAIL,$N_FINALACK,$I_HWM,$I_MBUFS,$(pct 50 "${I_LAT[@]}"),$(pct 99 "${I_LAT[@]}"),$(pct 100 "${I_LAT[@]}"),$(ctr retransmitted_packets),$(ctr local_ack_timeout_err),$(ctr duplicate_request),$(ctr rx_drop_bad_icrc),$(ctr implied_nak_seq_err),$nsent,$ndrop" >> "$CSV"
  echo "minute $ROW (${t}s): $N_CASES cases, $N_ITERS iters, $N_WRS WRs (${rate}/s), data errors $N_DATAERR, failed cases $N_FAIL, final ACK lost $N_FINALACK, RSS max ${I_HWM} KiB, mbufs at exit max $I_MBUFS, retransmitted $(ctr retransmitted_packets), netem sent ${nsent} dropped ${ndrop}"
  T_LAST=$t I_WRS=0 I_HWM=0 I_MBUFS=0 I_LAT=()
}

# ---------------------------------------------------------------- run
il_log "artifacts in $OUT; booting the VM (path MTU 4096, eth MTU 4200)"
il_vm_up 4096 > "$OUT/vm.log" 2>&1 || { echo "soak_rxe.sh: VM boot failed (see $OUT/vm.log)" >&2; exit 2; }
# The loss is for RoCE: a lost ARP request of the guest made rxe's RTR fail at once, so
# droce's neighbour entry is pinned in the guest.
il_vm_exec --timeout 30 -- "tc qdisc add dev eth0 root netem $NETEM && ip neigh replace $IL_DROCE_IP lladdr $IL_DROCE_MAC dev eth0 nud permanent" >> "$OUT/vm.log" 2>&1 ||
  { echo "soak_rxe.sh: netem '$NETEM' could not be set in the guest (see $OUT/vm.log)" >&2; exit 2; }
il_log "VM ready, netem: $NETEM; ${#CASES[@]} cases, ~${CASE_SECONDS}s each, $MINUTES min"
T0=$(date +%s.%N)
END_S=$(awk -v m="$MINUTES" 'BEGIN{print m * 60}')
NEXT_ROW=60
ci=0
while awk -v e="$(elapsed_s)" -v end="$END_S" 'BEGIN{exit !(e < end)}'; do
  name=${CASES[$((ci % ${#CASES[@]}))]}; ci=$((ci + 1))
  run_case "$name"
  N_CASES=$((N_CASES + 1)) N_ITERS=$((N_ITERS + C_ITERS)) N_WRS=$((N_WRS + C_WRS)) I_WRS=$((I_WRS + C_WRS))
  N_DATAERR=$((N_DATAERR + C_DATAERR)) N_FINALACK=$((N_FINALACK + C_FINALACK))
  [ "$C_HWM" -gt "$I_HWM" ] && I_HWM=$C_HWM
  [ "$C_MBUFS" -gt "$I_MBUFS" ] && I_MBUFS=$C_MBUFS
  [ "$C_HWM" -gt 0 ] && HWM_ALL+=("$C_HWM")
  if [ -n "$C_LAT_US" ] && [ "$C_OK" = 1 ]; then
    I_LAT+=("$C_LAT_US"); k="${name%-droce_*}"; LAT_BY[$k]+="$C_LAT_US "
  fi
  add_counters "$OUT/$name/droce.log"
  if [ "$C_OK" = 1 ]; then
    echo "PASS $name: $C_ITERS iters, ${C_SECS}s${C_LAT_US:+, $C_LAT_US usec/iter}, RSS ${C_HWM} KiB$( [ "$C_FINALACK" = 1 ] && echo ', final ACK lost after the guest finished')"
    if [ "$KEEP" = 1 ]; then mv "$OUT/$name" "$OUT/$name.pass$N_CASES"; else rm -rf "${OUT:?}/$name"; fi
  else
    N_FAIL=$((N_FAIL + 1))
    mv "$OUT/$name" "$OUT/$name.fail$N_CASES"
    echo "FAIL $name: ${C_WHY%; } [${C_SECS}s; logs: $OUT/$name.fail$N_CASES]"
  fi
  while awk -v e="$(elapsed_s)" -v n="$NEXT_ROW" 'BEGIN{exit !(e >= n)}'; do emit_row; NEXT_ROW=$((NEXT_ROW + 60)); done
done
[ "$I_WRS" -gt 0 ] || [ "$ROW" = 0 ] && emit_row # the tail (or a run shorter than a minute)

echo
echo "guest netem ($NETEM):"
il_vm_exec --timeout 20 -- "tc -s qdisc show dev eth0" 2>/dev/null | tee "$OUT/netem.txt"
echo "droce counters, summed over the cases (nonzero drops, retransmission and duplicates):"
for k in $(printf '%s\n' "${!TOT[@]}" | sort); do
  case $k in rx_drop_*|retransmitted_packets|local_ack_timeout_err|duplicate_*|implied_nak_seq_err|packet_seq_err|out_of_sequence|nak_seq_suppressed|rx_duplicate_ack|*retry*|*_err|*_errors|cm_*)
    [ "${TOT[$k]}" != 0 ] && printf '  %-32s %s\n' "$k" "${TOT[$k]}";; esac
done
for k in $(printf '%s\n' "${!TOT[@]}" | sort); do echo "$k ${TOT[$k]}"; done > "$OUT/counters_total.txt"
echo "pingpong usec/iter per case kind (min / median / max over the runs):"
for k in $(printf '%s\n' "${!LAT_BY[@]}" | sort -V); do
  # shellcheck disable=SC2086
  echo "  $k: $(pct 0 ${LAT_BY[$k]}) / $(pct 50 ${LAT_BY[$k]}) / $(pct 100 ${LAT_BY[$k]})"
done
hmin=$(pct 0 "${HWM_ALL[@]}") hmax=$(pct 100 "${HWM_ALL[@]}")
echo "soak_rxe: $(elapsed_s) s, $N_CASES cases, $N_ITERS iterations, $N_WRS WRs, data errors $N_DATAERR, failed cases $N_FAIL, final ACK lost $N_FINALACK, retransmitted packets $(ctr retransmitted_packets), ACK timeouts $(ctr local_ack_timeout_err), droce RSS (VmHWM) ${hmin:-?}-${hmax:-?} KiB"
echo "CSV $CSV; logs of failed cases and counters_total.txt in $OUT"
[ "$N_DATAERR" = 0 ] && [ "$N_FAIL" = 0 ] && [ "$N_CASES" -gt 0 ] && exit 0
echo "soak_rxe: FAILED" >&2
exit 1
