#!/usr/bin/env bash
# Interop: droce-perf against real perftest (ib_*_bw / ib_*_lat) on Linux Soft-RoCE in a VM.
#
#   tests/interop/perftest_rxe.sh [options] PATH/TO/droce-perf
#
# Per case MODE x droce role {client, server}: the guest runs `ib_MODE -d rxe0 -x 1 -s S -n N -F
# [10.78.0.1]`, droce-perf the same mode with the same flags (`-x 1 ... [10.78.0.2]`). A case
# passes when both exit 0 and the guest printed its table row. One PASS/FAIL line per case,
# then "N passed, N failed"; exit 1 on any failure. Bounded: every process has a timeout, no
# case starts after --budget, and the VM, tap and background processes are torn down on exit.
# Own tap/subnet/VM name (tap-perf, 10.78.0.0/24, perfvm) so as not to clash with pingpong_rxe.sh.
# Options:
#   --out DIR           artifacts (default: a new /tmp/droce-perf-interop.XXXXXX)
#   --modes LIST        default "write_bw send_bw read_bw write_lat send_lat read_lat atomic_bw atomic_lat
#                       atomic_bw_cs write_bw_q2 write_bw_q8 send_bw_q2" (_cs: the atomic test with
#                       -A CMP_AND_SWAP; _qN: the bw test with -q N on both sides, N QPs of --iters
#                       each, at --q-size only). Select cases with it, e.g. --modes "write_bw_q8"
#   --roles LIST        droce roles, default "client server"
#   --mtu 1024|4096     path MTU (default 1024)
#   --sizes LIST        message sizes for non-atomic modes (default "4096"; --size S = one)
#   --iters N           default 200
#   --q-size S          message size of the _qN modes (default 4096)
#   --case-timeout S    per process (default 90)
#   --budget S          default 1200
set -uo pipefail
export IL_TAP=${IL_TAP:-tap-perf} IL_VM=${IL_VM:-perfvm} IL_HOST_IP=${IL_HOST_IP:-10.78.0.1}
export IL_VM_IP=${IL_VM_IP:-10.78.0.2} IL_DROCE_IP=${IL_DROCE_IP:-10.78.0.100}
export IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:02:00}
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

OUT="" MODES="write_bw send_bw read_bw write_lat send_lat read_lat atomic_bw atomic_lat atomic_bw_cs write_bw_q2 write_bw_q8 send_bw_q2" ROLES="client server"
MTU=1024 SIZES=4096 QSIZE=4096 ITERS=200 CASE_TIMEOUT=90 BUDGET=1200 BIN=""
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --modes) MODES=$2; shift 2;; --roles) ROLES=$2; shift 2;;
  --mtu) MTU=$2; shift 2;; --size|--sizes) SIZES=$2; shift 2;; --iters) ITERS=$2; shift 2;;
  --q-size) QSIZE=$2; shift 2;;
  --case-timeout) CASE_TIMEOUT=$2; shift 2;; --budget) BUDGET=$2; shift 2;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) [ -z "$BIN" ] || il_die "one binary only"; BIN=$1; shift;;
esac; done
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}
trap il_cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
  for m in $MODES; do for r in $ROLES; do il_result "mtu$MTU-$m-droce_$r" fail "droce-perf missing ('${BIN:-<none>}')"; done; done
  il_summary; exit 1
fi
BIN=$(readlink -f "$BIN")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-perf-interop.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT; binary $BIN"
VDEV="net_af_packet0,iface=$IL_TAP,qdisc_bypass=0"
[ "$MTU" = 4096 ] && VDEV+=",framesz=4608,blocksz=36864,framecnt=512"

case_name() { # MODE SIZE ROLE
  if [[ $1 == atomic_* ]]; then echo "mtu$MTU-$1-droce_$3"; else echo "mtu$MTU-$1-s$2-droce_$3"; fi
}

run_case() { # MODE SIZE ROLE -> CASE_OK, CASE_WHY
  local mode=$1 SIZE=$2 role=$3 name dir; name=$(case_name "$1" "$2" "$3"); dir=$OUT/$name; mkdir -p "$dir"; CASE_DIR=$dir
  local extra=()
  # write_bw_q8 etc.: the same test with -q 8 on both sides (perftest's exchange for 8 QPs)
  if [[ $mode =~ ^(.*)_q([0-9]+)$ ]]; then mode=${BASH_REMATCH[1]}; extra+=(-q "${BASH_REMATCH[2]}"); fi
  # atomic_bw_cs / atomic_lat_cs: the same tests with -A CMP_AND_SWAP on both sides
  if [[ $mode == atomic_*_cs ]]; then mode=${mode%_cs}; extra+=(-A CMP_AND_SWAP); fi
  CASE_OK=0; CASE_WHY=""
  local common=(-x 1 -n "$ITERS" -F -p "$IL_PORT" "${extra[@]}")
  [[ $mode == atomic_* ]] || common+=(-s "$SIZE")
  local guest=(ib_$mode -d rxe0 "${common[@]}")
  # shellcheck disable=SC2206
  local droce=("$BIN" "$mode" $DROCE_EAL --vdev "$VDEV" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC" --eth-mtu "$IL_ETH_MTU" --timeout "$CASE_TIMEOUT" --counters "${common[@]}")
  [ "$role" = client ] && droce+=("$IL_VM_IP") || guest+=("$IL_HOST_IP")
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"
  il_capture_start "$dir/capture.pcap" || true
  local cap=${IL_CAP:-} grc=-1 drc=-1 t0; t0=$(date +%s)
  il_run_pair "$role" "$dir" "ib_$mode"; drc=$IL_DRC grc=$IL_GRC CASE_WHY+=$IL_PAIR_WHY
  [ -n "$cap" ] && { il_capture_stop "$cap" "$dir/capture.pcap" || true; }
  [ "$drc" = 0 ] || CASE_WHY+="droce-perf exit $drc; "
  [ "$grc" = 0 ] || CASE_WHY+="guest ib_$mode exit $grc; "
  if [ "$grc" = 0 ] && ! grep -Eq '^ [0-9]+ +[0-9]+ +([0-9]+\.[0-9]{2}|inf)' "$dir/guest.log" && ! { [ "$role" = client ] && [[ $mode =~ ^(read_lat|atomic_lat)$ ]]; }; then
    CASE_WHY+="guest printed no result row; "
  fi
  if [ -z "$CASE_WHY" ]; then
    CASE_OK=1; CASE_WHY="$(( $(date +%s) - t0 ))s; droce: $(grep -E '^ [0-9]+ +[0-9]+ ' "$dir/droce.log" | head -1 | tr -s ' \t' ' ')"
    rm -f "$dir/capture.pcap"
  else
    il_vm_exec --timeout 10 -- "p=\$(pidof ib_$mode) && kill -9 \$p; true" >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [logs: $dir]"
  fi
}

il_log "booting VM (path MTU $MTU)"
vm_ok=1
il_vm_up "$MTU" > "$OUT/vm.log" 2>&1 || vm_ok=0
il_log "VM up: $vm_ok"
for m in $MODES; do
  sizes=$SIZES
  [[ $m == atomic_* ]] && sizes=8 # atomics are 8 bytes whatever --sizes says
  [[ $m =~ _q[0-9]+$ ]] && sizes=$QSIZE # N QPs x --iters: one size keeps the TCG guest's time in bounds
  for sz in $sizes; do for r in $ROLES; do
    name=$(case_name "$m" "$sz" "$r")
    if [ $vm_ok = 0 ]; then il_result "$name" fail "VM boot failed (see $OUT/vm.log)"; continue; fi
    if [ "$(il_elapsed)" -ge "$BUDGET" ]; then il_result "$name" fail "not run: budget ${BUDGET}s used up"; continue; fi
    il_case "$name" "$m" "$sz" "$r"
  done; done
done
il_vm_down
il_log "done in $(il_elapsed)s"
il_summary
