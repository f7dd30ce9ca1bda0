#!/usr/bin/env bash
# Interop, RDMA-CM: droce-cmatose against librdmacm's ucmatose (Soft-RoCE) in the rxe VM.
#
#   tests/interop/cmatose_rxe.sh [options] PATH/TO/BUILD_DIR
#
# Cases (path MTU 1024, Ethernet MTU 1500; the CM runs on QP1 of both sides, no TCP):
#   cmatose-droce_server  droce `droce-cmatose -c N -C M -S S`, guest `ucmatose -s DROCE_IP -c N -C M -S S`
#   cmatose-droce_client  guest `ucmatose -c N -C M -S S`, droce `droce-cmatose -s VM_IP -c N -C M -S S`
# N connections to port 7471, M messages of S bytes each way on each. A case passes when both
# sides exit 0 and print "data transfers complete" and "return status 0", and the capture passes
# il_pcap_check. One PASS/FAIL line per case, then "N passed, N failed"; exit 1 on any failure.
# One VM boot; own tap/subnet/VM name (tap-cma, 10.82.0.0/24, cmavm). Run as root.
# Options:
#   --out DIR         artifacts (default: a new /tmp/droce-cmatose-interop.XXXXXX)
#   --roles LIST      droce roles, default "server client"
#   --connections N   default 4
#   --count M         messages (default 10)
#   --size S          message size (default 100)
#   --case-timeout S  per process (default 60)
#   --budget S        default 300
set -uo pipefail
export IL_TAP=${IL_TAP:-tap-cma} IL_VM=${IL_VM:-cmavm} IL_HOST_IP=${IL_HOST_IP:-10.82.0.1}
export IL_VM_IP=${IL_VM_IP:-10.82.0.2} IL_DROCE_IP=${IL_DROCE_IP:-10.82.0.100}
export IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:06:00}
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

OUT="" ROLES="server client" CONNS=4 COUNT=10 SIZE=100 CASE_TIMEOUT=60 BUDGET=300 BUILD=""
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --roles) ROLES=$2; shift 2;; --count) COUNT=$2; shift 2;;
  --connections) CONNS=$2; shift 2;; --size) SIZE=$2; shift 2;;
  --case-timeout) CASE_TIMEOUT=$2; shift 2;; --budget) BUDGET=$2; shift 2;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) [ -z "$BUILD" ] || il_die "one build directory only"; BUILD=$1; shift;;
esac; done
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}
trap il_cleanup EXIT
trap 'exit 130' INT TERM

RP=${BUILD:+$BUILD/apps/droce-cmatose/droce-cmatose}
if [ -z "$BUILD" ] || [ ! -x "$RP" ]; then
  for r in $ROLES; do il_result "cmatose-droce_$r" fail "droce-cmatose missing under '${BUILD:-<none>}'"; done
  il_summary; exit 1
fi
RP=$(readlink -f "$RP")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-cmatose-interop.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT"
VDEV="net_af_packet0,iface=$IL_TAP,qdisc_bypass=0"

# done_ok LOG: the tool's own verdict lines
done_ok() { grep -q '^data transfers complete' "$1" && grep -q '^return status 0' "$1"; }

run_case() { # ROLE -> CASE_OK, CASE_WHY
  local role=$1 name=cmatose-droce_$1 dir; dir=$OUT/$name; mkdir -p "$dir"; CASE_DIR=$dir
  CASE_OK=0; CASE_WHY=""
  local common=(-c "$CONNS" -C "$COUNT" -S "$SIZE")
  # shellcheck disable=SC2206
  local droce=("$RP" $DROCE_EAL --vdev "$VDEV" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC"
               --eth-mtu "$IL_ETH_MTU" --timeout "$CASE_TIMEOUT" --counters "${common[@]}")
  local guest=(ucmatose "${common[@]}")
  if [ "$role" = server ]; then guest+=(-s "$IL_DROCE_IP")
  else droce+=(-s "$IL_VM_IP"); fi
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"
  il_capture_start "$dir/capture.pcap" || true
  local cap=${IL_CAP:-} gpid dpid grc=-1 drc=-1 t0 i; t0=$(date +%s)
  if [ "$role" = server ]; then
    il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
    for i in $(seq 300); do  # until the CM listens (EAL and device bring-up first)
      grep -q '^cmatose: starting server' "$dir/droce.log" 2>/dev/null && break
      kill -0 "$dpid" 2>/dev/null || break; sleep 0.1
    done
    if grep -q '^cmatose: starting server' "$dir/droce.log"; then
      il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
      il_wait_pid "$gpid" $((CASE_TIMEOUT + 15)); grc=$IL_RC
    else CASE_WHY="droce-cmatose did not listen; "; fi
    il_wait_pid "$dpid" "$( [ "$grc" = 0 ] && echo 20 || echo 5 )"; drc=$IL_RC
  else
    il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
    # ucmatose's listener is an rdma_cm id, not a socket: wait until the guest lists it
    if il_vm_exec -- "i=0; while ! rdma res show cm_id 2>/dev/null | grep -q LISTEN; do usleep 100000; i=\$((i+1)); [ \$i -ge 300 ] && exit 1; done; exit 0" >/dev/null 2>&1; then
      il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
      il_wait_pid "$dpid" $((CASE_TIMEOUT + 10)); drc=$IL_RC
    else CASE_WHY="guest ucmatose did not listen; "; fi
    il_wait_pid "$gpid" "$( [ "$drc" = 0 ] && echo 20 || echo 5 )"; grc=$IL_RC
  fi
  [ -n "$cap" ] && { il_capture_stop "$cap" "$dir/capture.pcap" || CASE_WHY+="$IL_CAPMSG; "; }
  [ "$drc" = 0 ] || CASE_WHY+="droce exit $drc; "
  [ "$grc" = 0 ] || CASE_WHY+="guest ucmatose exit $grc; "
  done_ok "$dir/droce.log" || CASE_WHY+="droce: no 'data transfers complete'/'return status 0'; "
  done_ok "$dir/guest.log" || CASE_WHY+="guest: no 'data transfers complete'/'return status 0'; "
  local chk
  if [ -f "$dir/capture.pcap" ] && ! chk=$(il_pcap_check "$dir/capture.pcap" 2>&1); then
    echo "$chk" > "$dir/pcap_check.txt"; CASE_WHY+="capture: $(head -1 <<<"$chk"); "
  fi
  if [ -z "$CASE_WHY" ]; then
    CASE_OK=1
    CASE_WHY="$(( $(date +%s) - t0 ))s; $CONNS connections x $COUNT messages of $SIZE B each way"
    rm -f "$dir/capture.pcap"
  else
    il_vm_exec --timeout 10 -- "p=\$(pidof ucmatose) && kill -9 \$p; true" >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [logs: $dir]"
  fi
}

il_log "booting VM (path MTU 1024)"
vm_ok=1
il_vm_up 1024 > "$OUT/vm.log" 2>&1 || vm_ok=0
il_log "VM up: $vm_ok"
for r in $ROLES; do
  name=cmatose-droce_$r
  if [ $vm_ok = 0 ]; then il_result "$name" fail "VM boot failed (see $OUT/vm.log)"; continue; fi
  if [ "$(il_elapsed)" -ge "$BUDGET" ]; then il_result "$name" fail "not run: budget ${BUDGET}s used up"; continue; fi
  il_case "$name" "$r"
done
il_vm_down
il_log "done in $(il_elapsed)s"
il_summary
