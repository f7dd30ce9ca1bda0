#!/usr/bin/env bash
# Interop, RDMA-CM: droce-perf -R against perftest's -R (ib_*_bw -R, librdmacm, Soft-RoCE) in the
# rxe VM. perftest's -R connects a control QP and the test's QPs through RDMA-CM (CM MADs on QP1)
# and carries its exchange as RC SENDs on the control QP: no TCP at all.
#
#   tests/interop/perf_cm_rxe.sh [options] PATH/TO/droce-perf
#
# Per case MODE x droce role {server, client}: the guest runs `ib_MODE -R -d rxe0 -x 1 -s S -n N -F
# -p P [DROCE_IP]`, droce-perf the same mode with the same flags (`... [VM_IP]`). A case passes
# when both exit 0, the guest printed its result row, droce printed its connect times, and the
# capture passes il_pcap_check (tshark decodes every CM MAD, ICRCs). With --loss, the guest drops
# some of its CM MADs on egress (a REP or RTUs; see --loss) and the case must still pass: the CM's
# retries and COMM_EST recover. One PASS/FAIL line per case, then "N passed, N failed";
# exit 1 on any failure. One VM boot; own tap/subnet/VM name (tap-pcm, 10.81.0.0/24, pcmvm).
# Options:
#   --out DIR           artifacts (default: a new /tmp/droce-perfcm-interop.XXXXXX)
#   --modes LIST        default "write_bw send_bw read_bw"; also write_lat send_lat read_lat,
#                       and MODE_qN (-q N on both sides)
#   --roles LIST        droce roles, default "server client"
#   --loss              also run each case with some of the guest's CM MADs dropped (cases
#                       named ...-lossy): droce server: its first 2 RTUs; droce client: its REP;
#                       and a droce client case with every REP and REJ lost (...-unreachable): droce-perf
#                       must fail within 30 s reporting the CM's "unreachable" event
#   --loss-modes LIST   --loss for these modes only (default: every mode)
#   --size S            message size (default 4096)
#   --iters N           default 200
#   --case-timeout S    per process (default 60)
#   --budget S          default 240
set -uo pipefail
export IL_TAP=${IL_TAP:-tap-pcm} IL_VM=${IL_VM:-pcmvm} IL_HOST_IP=${IL_HOST_IP:-10.81.0.1}
export IL_VM_IP=${IL_VM_IP:-10.81.0.2} IL_DROCE_IP=${IL_DROCE_IP:-10.81.0.100}
export IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:05:00}
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

OUT="" MODES="write_bw send_bw read_bw" ROLES="server client" LOSS=0 LOSS_MODES=""
SIZE=4096 ITERS=200 CASE_TIMEOUT=60 BUDGET=240 BIN=""
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --modes) MODES=$2; shift 2;; --roles) ROLES=$2; shift 2;;
  --loss) LOSS=1; shift;; --loss-modes) LOSS_MODES=$2; LOSS=1; shift 2;; --size) SIZE=$2; shift 2;; --iters) ITERS=$2; shift 2;;
  --case-timeout) CASE_TIMEOUT=$2; shift 2;; --budget) BUDGET=$2; shift 2;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) [ -z "$BIN" ] || il_die "one binary only"; BIN=$1; shift;;
esac; done
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}
trap il_cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
  for m in $MODES; do for r in $ROLES; do il_result "cm-$m-droce_$r" fail "droce-perf missing ('${BIN:-<none>}')"; done; done
  il_summary; exit 1
fi
BIN=$(readlink -f "$BIN")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-perfcm-interop.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT; binary $BIN"
VDEV="net_af_packet0,iface=$IL_TAP,qdisc_bypass=0"
PORT=$IL_PORT

# Guest egress loss of chosen CM MADs: a prio qdisc whose band 3 is a netem with 100% loss, and a
# u32 filter sending RoCEv2 (UDP 4791) packets whose MAD attribute ID (IP offset 20 + UDP 8 + BTH
# 12 + DETH 8 + 16 = 64; the guest sends no IP options) is ATTR to that band. A guest background
# job removes the qdisc once netem counted N drops, so the retransmission gets through.
# ATTR: 0x0013 REP, 0x0014 RTU.
loss_on() { # ATTR N [MASK]
  il_vm_exec --timeout 20 -- "tc qdisc del dev eth0 root 2>/dev/null
    tc qdisc add dev eth0 root handle 1: prio bands 3 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 &&
    tc qdisc add dev eth0 parent 1:3 handle 30: netem loss 100% &&
    tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff match ip dport 4791 0xffff match u32 $(printf '0x%04x0000' "$1") ${3:-0xffff}0000 at 64 flowid 1:3 || exit 1
    (i=0; while [ \$i -lt 1200 ]; do d=\$(tc -s qdisc show dev eth0 | awk '/netem/{f=1} f&&/dropped/{gsub(\",\",\"\"); print \$7; exit}'); [ \"\${d:-0}\" -ge $2 ] && break; usleep 50000; i=\$((i+1)); done; tc qdisc del dev eth0 root) </dev/null >/dev/null 2>&1 &
    exit 0" >/dev/null 2>&1
}
loss_off() { il_vm_exec --timeout 10 -- "tc qdisc del dev eth0 root 2>/dev/null; true" >/dev/null 2>&1 || true; }
# What the guest's netem drops in a lossy case: droce server: the guest's first 2 RTUs (the control
# and the test connection: droce takes the client's first message on each as COMM_EST); droce
# client: the guest's first REP (droce's REQ is resent after its CM response timeout, the guest
# answers the duplicate REQ with its REP again).
loss_plan() { [ "$1" = server ] && echo "0x0014 2" || echo "0x0013 1"; }

case_name() { # MODE ROLE LOSSY
  case $3 in 1) echo "cm-$1-droce_$2-lossy";; 2) echo "cm-$1-droce_$2-unreachable";; *) echo "cm-$1-droce_$2";; esac
}

run_case() { # MODE ROLE LOSSY(0, 1, 2: every REP lost) -> CASE_OK, CASE_WHY
  local mode=$1 role=$2 lossy=$3 name dir; name=$(case_name "$1" "$2" "$3")
  dir=$OUT/$name; mkdir -p "$dir"; CASE_DIR=$dir
  local extra=()
  if [[ $mode =~ ^(.*)_q([0-9]+)$ ]]; then mode=${BASH_REMATCH[1]}; extra+=(-q "${BASH_REMATCH[2]}"); fi
  CASE_OK=0; CASE_WHY=""
  local common=(-R -x 1 -n "$ITERS" -F -p "$PORT" -s "$SIZE" "${extra[@]}")
  local guest=(ib_$mode -d rxe0 "${common[@]}")
  # shellcheck disable=SC2206
  local droce=("$BIN" "$mode" $DROCE_EAL --vdev "$VDEV" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC"
               --eth-mtu "$IL_ETH_MTU" --timeout "$CASE_TIMEOUT" --counters "${common[@]}")
  # every REP lost: droce's CM must give up (Unreachable) after its retries, here 4 x ~0.7 s
  [ "$lossy" = 2 ] && droce+=(--cm-response-timeout 15 --cm-retries 3)
  [ "$role" = client ] && droce+=("$IL_VM_IP") || guest+=("$IL_DROCE_IP")
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"
  il_capture_start "$dir/capture.pcap" || true
  local cap=${IL_CAP:-} gpid dpid grc=-1 drc=-1 t0 i; t0=$(date +%s)
  # shellcheck disable=SC2046
  [ "$lossy" = 1 ] && { loss_on $(loss_plan "$role") || CASE_WHY+="netem setup failed; "; }
  # every REP and REJ (0x0012/0x0013): once the guest's own REP retries run out, it answers
  # droce's resent REQ with a REJ (its listener is gone), which must not come through either
  [ "$lossy" = 2 ] && { loss_on 0x0012 1000000 0xfffe || CASE_WHY+="netem setup failed; "; }
  if [ "$role" = server ]; then
    il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
    for i in $(seq 300); do  # until the CM listens (EAL and device bring-up first)
      grep -q 'Waiting for client' "$dir/droce.log" 2>/dev/null && break
      kill -0 "$dpid" 2>/dev/null || break; sleep 0.1
    done
    if grep -q 'Waiting for client' "$dir/droce.log"; then
      il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
      il_wait_pid "$gpid" $((CASE_TIMEOUT + 15)); grc=$IL_RC
    else CASE_WHY="droce-perf did not listen; "; fi
    il_wait_pid "$dpid" "$( [ "$grc" = 0 ] && echo 20 || echo 5 )"; drc=$IL_RC
  else
    il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
    # perftest's listener is an rdma_cm id, not a socket: wait until the guest lists it
    if il_vm_exec -- "i=0; while ! rdma res show cm_id 2>/dev/null | grep -q LISTEN; do usleep 100000; i=\$((i+1)); [ \$i -ge 300 ] && exit 1; done; exit 0" >/dev/null 2>&1; then
      il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
      il_wait_pid "$dpid" $((CASE_TIMEOUT + 10)); drc=$IL_RC
    else CASE_WHY="guest ib_$mode did not listen; "; fi
    il_wait_pid "$gpid" "$( [ "$drc" = 0 ] && echo 20 || echo 5 )"; grc=$IL_RC
  fi
  [ "$lossy" = 0 ] || loss_off
  if [ "$lossy" = 2 ]; then  # the expected failure, quickly and with the right event
    CASE_WHY=""
    [ "$drc" = 1 ] || CASE_WHY+="droce-perf exit $drc, expected 1; "
    grep -q 'RDMA-CM: unreachable on the control connection' "$dir/droce.log" || CASE_WHY+="no 'unreachable' event reported; "
    [ $(( $(date +%s) - t0 )) -le 30 ] || CASE_WHY+="took $(( $(date +%s) - t0 ))s; "
    [ -n "$cap" ] && il_capture_stop "$cap" "$dir/capture.pcap"
    il_vm_exec --timeout 10 -- "p=\$(pidof ib_$mode) && kill -9 \$p; true" >/dev/null 2>&1 || true
    if [ -z "$CASE_WHY" ]; then CASE_OK=1; CASE_WHY="$(( $(date +%s) - t0 ))s; droce: $(grep 'RDMA-CM:' "$dir/droce.log" | head -1 | sed 's/^ *//')"; rm -f "$dir/capture.pcap"
    else CASE_WHY="${CASE_WHY%; } [logs: $dir]"; fi
    return
  fi
  [ -n "$cap" ] && { il_capture_stop "$cap" "$dir/capture.pcap" || CASE_WHY+="$IL_CAPMSG; "; }
  [ "$drc" = 0 ] || CASE_WHY+="droce-perf exit $drc; "
  [ "$grc" = 0 ] || CASE_WHY+="guest ib_$mode exit $grc; "
  # perftest's read_lat server prints no row (as in perftest_rxe.sh)
  if [ "$grc" = 0 ] && ! grep -Eq '^ [0-9]+ +[0-9]+ +([0-9]+\.[0-9]{2}|inf)' "$dir/guest.log" && ! { [ "$role" = client ] && [ "$mode" = read_lat ]; }; then
    CASE_WHY+="guest printed no result row; "
  fi
  grep -q '^ rdma_cm connect : ' "$dir/droce.log" || CASE_WHY+="droce printed no connect times; "
  # a lossy case must have lost what it meant to (droce's CM counters, --counters)
  # (server: both connections established by COMM_EST; client: the control connection took a
  # CM retry, ~4 s: the guest's REP resent on its timer, or droce's REQ on its own)
  if [ "$lossy" = 1 ] && [ "$role" = server ] &&
     ! awk '$1=="est_comm_est" && $2>=2 {ok=1} END {exit !ok}' "$dir/droce.log"; then
    CASE_WHY+="no loss seen (droce's est_comm_est < 2); "
  fi
  if [ "$lossy" = 1 ] && [ "$role" = client ] &&
     ! awk '/^ rdma_cm connect : control/ && $5+0 >= 1000 {ok=1} END {exit !ok}' "$dir/droce.log"; then
    CASE_WHY+="no loss seen (control connection in < 1 s); "
  fi
  local chk
  if [ -f "$dir/capture.pcap" ] && ! chk=$(il_pcap_check "$dir/capture.pcap" 2>&1); then
    echo "$chk" > "$dir/pcap_check.txt"; CASE_WHY+="capture: $(head -1 <<<"$chk"); "
  fi
  if [ -z "$CASE_WHY" ]; then
    CASE_OK=1
    CASE_WHY="$(( $(date +%s) - t0 ))s;$(grep '^ rdma_cm connect : ' "$dir/droce.log" | cut -d: -f2); droce: $(grep -E '^ [0-9]+ +[0-9]+ ' "$dir/droce.log" | head -1 | tr -s ' \t' ' ')"
    rm -f "$dir/capture.pcap"
  else
    il_vm_exec --timeout 10 -- "p=\$(pidof ib_$mode) && kill -9 \$p; true" >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [logs: $dir]"
  fi
}

il_log "booting VM (path MTU 1024)"
vm_ok=1
il_vm_up 1024 > "$OUT/vm.log" 2>&1 || vm_ok=0
il_log "VM up: $vm_ok"
LOSSES=0; [ "$LOSS" = 1 ] && LOSSES="0 1 2"
for m in $MODES; do for r in $ROLES; do for l in $LOSSES; do
  [ "$l" = 2 ] && [ "$r" = server ] && continue  # every REP lost: the droce client's case
  [ "$l" != 0 ] && [ -n "$LOSS_MODES" ] && [[ " $LOSS_MODES " != *" $m "* ]] && continue
  name=$(case_name "$m" "$r" "$l")
  if [ $vm_ok = 0 ]; then il_result "$name" fail "VM boot failed (see $OUT/vm.log)"; continue; fi
  if [ "$(il_elapsed)" -ge "$BUDGET" ]; then il_result "$name" fail "not run: budget ${BUDGET}s used up"; continue; fi
  il_case "$name" "$m" "$r" "$l"
done; done; done
il_vm_down
il_log "done in $(il_elapsed)s"
il_summary
