#!/usr/bin/env bash
# Interop, UD: droce against Linux Soft-RoCE's UD queue pairs in the rxe VM.
#
#   tests/interop/ud_rxe.sh [options] PATH/TO/BUILD_DIR
#
# Cases, each with droce as client and as server (path MTU 1024, Ethernet MTU 1500):
#   ud_pingpong  guest `ibv_ud_pingpong -d rxe0 -g 1 -s S -n N [10.79.0.1]`
#                droce `droce-pingpong ... -- --ud -g 1 -s S -n N [10.79.0.2]`
#   send_lat_ud  guest `ib_send_lat -d rxe0 -c UD -x 1 -s S -n N -F [10.79.0.1]`
#                droce `droce-perf send_lat ... -- -c UD -x 1 -s S -n N -F [10.79.0.2]`
#   send_bw_ud   the same with ib_send_bw / droce-perf send_bw
# A case passes when both sides exit 0 and the guest printed its result line (ud_pingpong:
# "N iters in"; perftest: a table row), and the capture passes il_pcap_check (ICRC, checksums,
# lengths; tshark finds nothing malformed). One PASS/FAIL line per case, then
# "N passed, N failed"; exit 1 on any failure. One VM boot; bounded by timeouts and --budget;
# everything torn down on exit. Own tap/subnet/VM name (tap-ud, 10.79.0.0/24, udvm). Run as root.
# Options:
#   --out DIR         artifacts (default: a new /tmp/droce-ud-interop.XXXXXX)
#   --cases LIST      default "ud_pingpong send_lat_ud send_bw_ud"
#   --roles LIST      droce roles, default "client server"
#   --size S          message size (default 1024: the path MTU, the largest UD message)
#   --iters N         default 500
#   --case-timeout S  per process (default 60)
#   --budget S        default 600
set -uo pipefail
export IL_TAP=${IL_TAP:-tap-ud} IL_VM=${IL_VM:-udvm} IL_HOST_IP=${IL_HOST_IP:-10.79.0.1}
export IL_VM_IP=${IL_VM_IP:-10.79.0.2} IL_DROCE_IP=${IL_DROCE_IP:-10.79.0.100}
export IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:03:00}
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

OUT="" CASES="ud_pingpong send_lat_ud send_bw_ud" ROLES="client server"
SIZE=1024 ITERS=500 CASE_TIMEOUT=60 BUDGET=600 BUILD=""
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --cases) CASES=$2; shift 2;; --roles) ROLES=$2; shift 2;;
  --size) SIZE=$2; shift 2;; --iters) ITERS=$2; shift 2;;
  --case-timeout) CASE_TIMEOUT=$2; shift 2;; --budget) BUDGET=$2; shift 2;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) [ -z "$BUILD" ] || il_die "one build directory only"; BUILD=$1; shift;;
esac; done
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}
trap il_cleanup EXIT
trap 'exit 130' INT TERM

PP=${BUILD:+$BUILD/apps/droce-pingpong/droce-pingpong}
PERF=${BUILD:+$BUILD/apps/droce-perf/droce-perf}
if [ -z "$BUILD" ] || [ ! -x "$PP" ] || [ ! -x "$PERF" ]; then
  for c in $CASES; do for r in $ROLES; do il_result "$c-droce_$r" fail "droce-pingpong/droce-perf missing under '${BUILD:-<none>}'"; done; done
  il_summary; exit 1
fi
PP=$(readlink -f "$PP"); PERF=$(readlink -f "$PERF")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-ud-interop.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT"
VDEV="net_af_packet0,iface=$IL_TAP,qdisc_bypass=0"

run_case() { # CASE ROLE -> CASE_OK, CASE_WHY
  local c=$1 role=$2 name=$1-droce_$2 dir; dir=$OUT/$name; mkdir -p "$dir"
  CASE_OK=0; CASE_WHY=""
  local guest droce gname ok_re
  # shellcheck disable=SC2206
  local dev=($DROCE_EAL --vdev "$VDEV" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC" --eth-mtu "$IL_ETH_MTU" --timeout "$CASE_TIMEOUT" --counters)
  case $c in
    ud_pingpong)
      local common=(-g 1 -p "$IL_PORT" -s "$SIZE" -n "$ITERS")
      gname=ibv_ud_pingpong; guest=(ibv_ud_pingpong -d rxe0 "${common[@]}")
      droce=("$PP" "${dev[@]}" --ud "${common[@]}"); ok_re="$ITERS iters in";;
    send_lat_ud|send_bw_ud)
      local mode=${c%_ud} common=(-c UD -x 1 -s "$SIZE" -n "$ITERS" -F -p "$IL_PORT")
      gname=ib_$mode; guest=(ib_$mode -d rxe0 "${common[@]}")
      # A result row; its figures read "inf" when the guest's perftest could not
      # calibrate its cycle counter in the VM ("Correlation coefficient r^2 < 0.9") after a
      # run it completed (exit 0), as perftest_rxe.sh accepts too.
      droce=("$PERF" "$mode" "${dev[@]}" "${common[@]}"); ok_re='^ [0-9]+ +[0-9]+ +([0-9]+\.[0-9]{2}|inf)';;
    *) CASE_WHY="unknown case $c"; return;;
  esac
  [ "$role" = client ] && droce+=("$IL_VM_IP") || guest+=("$IL_HOST_IP")
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"
  il_capture_start "$dir/capture.pcap" || true
  local cap=${IL_CAP:-} grc=-1 drc=-1 t0; t0=$(date +%s)
  il_run_pair "$role" "$dir" "$gname"; drc=$IL_DRC grc=$IL_GRC CASE_WHY+=$IL_PAIR_WHY
  [ -n "$cap" ] && { il_capture_stop "$cap" "$dir/capture.pcap" || CASE_WHY+="$IL_CAPMSG; "; }
  [ "$drc" = 0 ] || CASE_WHY+="droce exit $drc; "
  [ "$grc" = 0 ] || CASE_WHY+="guest $gname exit $grc; "
  if [ "$grc" = 0 ] && ! grep -Eq "$ok_re" "$dir/guest.log"; then CASE_WHY+="guest printed no result; "; fi
  local chk
  if [ -f "$dir/capture.pcap" ] && ! chk=$(il_pcap_check "$dir/capture.pcap" 2>&1); then
    echo "$chk" > "$dir/pcap_check.txt"; CASE_WHY+="capture: $(head -1 <<<"$chk"); "
  fi
  if [ -z "$CASE_WHY" ]; then
    CASE_OK=1
    CASE_WHY="$(( $(date +%s) - t0 ))s; guest: $(grep -E "$ok_re" "$dir/guest.log" | head -1 | tr -s ' \t' ' ')"
    rm -f "$dir/capture.pcap"
  else
    il_vm_exec --timeout 10 -- "p=\$(pidof $gname) && kill -9 \$p; true" >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [logs: $dir]"
  fi
}

il_log "booting VM (path MTU 1024)"
vm_ok=1
il_vm_up 1024 > "$OUT/vm.log" 2>&1 || vm_ok=0
il_log "VM up: $vm_ok"
for c in $CASES; do for r in $ROLES; do
  name=$c-droce_$r
  if [ $vm_ok = 0 ]; then il_result "$name" fail "VM boot failed (see $OUT/vm.log)"; continue; fi
  if [ "$(il_elapsed)" -ge "$BUDGET" ]; then il_result "$name" fail "not run: budget ${BUDGET}s used up"; continue; fi
  run_case "$c" "$r"
  if [ "$CASE_OK" = 1 ]; then il_result "$name" pass "$CASE_WHY"; else il_result "$name" fail "$CASE_WHY"; fi
done; done
il_vm_down
il_log "done in $(il_elapsed)s"
il_summary
