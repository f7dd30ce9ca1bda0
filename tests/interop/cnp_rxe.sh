#!/usr/bin/env bash
# Interop: DCQCN against Linux Soft-RoCE. The guest marks what it sends CE; droce (responder,
# notification point) must answer with CNPs that Wireshark decodes, and rxe (no DCQCN) must
# still complete. Then droce sends ECT(0) data toward rxe and rxe must not mind.
#
#   tests/interop/cnp_rxe.sh [options] PATH/TO/droce-perf
#
# How CE is made: rxe sends not-ECT (unless perftest --tclass), so RED/fq_codel with ecn would
# drop, not mark. The guest's egress gets a prio qdisc with a u32 filter on UDP dport 4791 and
# `pedit munge ip tos set 3 retain 3` (+ csum ip): every RoCE packet rxe sends leaves CE. The
# ICRC masks the TOS byte, so the rewrite keeps it valid.
# Cases (one VM, path MTU 1024):
#   ce-MODE-droce_server  for MODE in --modes: guest `ib_MODE ... HOST` (requester, CE-marked),
#                         droce-perf MODE server (--counters). Pass: both exit 0, the guest
#                         printed its row, droce's np_ecn_marked_roce_packets > 0,
#                         0 < np_cnp_sent <= marked, and cnp_check.py passes on the capture
#                         (CNP fields, DestQP = the guest's QPN, vs. the published ConnectX CNP,
#                         tshark's decode). Prints the rxe hw_counters that moved.
#   ect-write_bw-droce_client  marking off; droce-perf write_bw client: both complete and every
#                         data frame droce sent is ECT(0) (cnp_check.py --ect).
# One PASS/FAIL line per case, then "N passed, N failed"; exit 1 on any failure.
# Options:
#   --out DIR           artifacts (default: a new /tmp/droce-cnp-interop.XXXXXX)
#   --modes LIST        default "write_bw send_bw"
#   --size S            default 4096;  --iters N  default 200
#   --no-mark           do not install the CE filter (the CE cases must then FAIL: a self-test)
#   --case-timeout S    per process (default 90)
set -uo pipefail
export IL_TAP=${IL_TAP:-tap-cnp} IL_VM=${IL_VM:-cnpvm} IL_HOST_IP=${IL_HOST_IP:-10.79.0.1}
export IL_VM_IP=${IL_VM_IP:-10.79.0.2} IL_DROCE_IP=${IL_DROCE_IP:-10.79.0.100}
export IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:03:00}
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

OUT="" MODES="write_bw send_bw" SIZE=4096 ITERS=200 CASE_TIMEOUT=90 MARK=1 BIN=""
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --modes) MODES=$2; shift 2;; --size) SIZE=$2; shift 2;;
  --iters) ITERS=$2; shift 2;; --case-timeout) CASE_TIMEOUT=$2; shift 2;; --no-mark) MARK=0; shift;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) [ -z "$BIN" ] || il_die "one binary only"; BIN=$1; shift;;
esac; done
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}
REF=${CNP_REF:-$IL_REPO/../shared/vectors/synthetic/good_published_cx4lx_cnp.pcap}
trap il_cleanup EXIT
trap 'exit 130' INT TERM

CASES=()
for m in $MODES; do CASES+=("ce-$m-droce_server"); done
CASES+=("ect-write_bw-droce_client")
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
  for c in "${CASES[@]}"; do il_result "$c" fail "droce-perf missing ('${BIN:-<none>}')"; done
  il_summary; exit 1
fi
BIN=$(readlink -f "$BIN")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-cnp-interop.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT; binary $BIN"
VDEV="net_af_packet0,iface=$IL_TAP,qdisc_bypass=0"
RXE_CTRS=/sys/class/infiniband/rxe0/ports/1/hw_counters

rxe_counters() { # FILE: "name value" per rxe hw counter
  il_vm_exec --timeout 20 -- "cd $RXE_CTRS && for f in *; do echo \"\$f \$(cat \$f)\"; done" > "$1" 2>/dev/null
}
counter() { # NAME LOG: droce's device counter from --counters output (0 when absent)
  awk -v n="$1" '$1 == n {v = $2} END {print v + 0}' "$2"
}

run_case() { # KIND(ce|ect) MODE ROLE -> CASE_OK, CASE_WHY
  local kind=$1 mode=$2 role=$3 name="$1-$2-droce_$3" dir
  dir=$OUT/$name; mkdir -p "$dir"
  CASE_OK=0; CASE_WHY=""
  local common=(-x 1 -n "$ITERS" -F -p "$IL_PORT" -s "$SIZE")
  local guest=("ib_$mode" -d rxe0 "${common[@]}")
  # shellcheck disable=SC2206
  local droce=("$BIN" "$mode" $DROCE_EAL --vdev "$VDEV" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC" --eth-mtu "$IL_ETH_MTU" --timeout "$CASE_TIMEOUT" --counters "${common[@]}")
  [ "$role" = client ] && droce+=("$IL_VM_IP") || guest+=("$IL_HOST_IP")
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"
  rxe_counters "$dir/rxe-before.txt"
  il_capture_start "$dir/capture.pcap" || true
  local cap=${IL_CAP:-} grc=-1 drc=-1 t0; t0=$(date +%s)
  il_run_pair "$role" "$dir" "ib_$mode"; drc=$IL_DRC grc=$IL_GRC CASE_WHY+=$IL_PAIR_WHY
  local capok=1
  [ -n "$cap" ] && { il_capture_stop "$cap" "$dir/capture.pcap" || capok=0; }
  rxe_counters "$dir/rxe-after.txt"
  [ "$drc" = 0 ] || CASE_WHY+="droce-perf exit $drc; "
  [ "$grc" = 0 ] || CASE_WHY+="guest ib_$mode exit $grc; "
  if [ "$grc" = 0 ] && ! grep -Eq '^ [0-9]+ +[0-9]+ +([0-9]+\.[0-9]{2}|inf)' "$dir/guest.log"; then
    CASE_WHY+="guest printed no result row; "
  fi
  # rxe's counters that moved during the case (rxe has no CNP counter: what it does with them
  # shows as rcvd_pkts against the frames droce sent)
  local moved
  moved=$(join "$dir/rxe-before.txt" "$dir/rxe-after.txt" 2>/dev/null | awk '$3 != $2 {printf "%s%s +%d", s, $1, $3 - $2; s = ", "}')
  local detail chk
  if [ "$kind" = ce ]; then
    local log=$dir/droce.log marked sent coal handled qpn
    marked=$(counter np_ecn_marked_roce_packets "$log"); sent=$(counter np_cnp_sent "$log")
    coal=$(counter np_cnp_coalesced "$log"); handled=$(counter rp_cnp_handled "$log")
    [ "$marked" -gt 0 ] || CASE_WHY+="np_ecn_marked_roce_packets $marked, want > 0; "
    [ "$sent" -gt 0 ] || CASE_WHY+="np_cnp_sent $sent, want > 0; "
    [ "$sent" -le "$marked" ] || CASE_WHY+="np_cnp_sent $sent > marked $marked; "
    # the guest's QP: perftest prints " local address: LID 0000 QPN 0x0011 PSN ..."
    qpn=$(grep -o 'local address: LID [0-9a-fx]* QPN 0x[0-9a-f]*' "$dir/guest.log" | head -1 | awk '{print $NF}')
    [ -n "$qpn" ] || CASE_WHY+="no QPN in the guest's output; "
    detail="marked $marked, np_cnp_sent $sent, coalesced $coal, rp_cnp_handled $handled"
    if [ -s "$dir/capture.pcap" ]; then
      local refarg=()
      [ -s "$REF" ] && refarg=(--ref "$REF")
      chk=$(python3 "$IL_DIR/cnp_check.py" --np "$IL_DROCE_IP" ${qpn:+--qpn "$qpn"} "${refarg[@]}" --tshark "$dir/capture.pcap" 2>&1) ||
        CASE_WHY+="cnp_check: $(sed -n 2p <<<"$chk"); "
      echo "$chk" > "$dir/cnp_check.txt"
      detail+="; $(head -1 <<<"$chk")"
      # the CNPs on the wire equal np_cnp_sent (when the capture is complete)
      local wire; wire=$(grep -o '^cnp: [0-9]*' <<<"$chk" | awk '{print $2}')
      [ "$capok" = 1 ] && [ -n "$wire" ] && [ "$wire" != "$sent" ] && CASE_WHY+="$wire CNPs on the wire, np_cnp_sent $sent; "
    else CASE_WHY+="no capture; "; fi
  else
    if [ -s "$dir/capture.pcap" ]; then
      chk=$(python3 "$IL_DIR/cnp_check.py" --ect "$IL_DROCE_IP" "$dir/capture.pcap" 2>&1) ||
        CASE_WHY+="cnp_check: $(sed -n 2p <<<"$chk"); "
      echo "$chk" > "$dir/cnp_check.txt"
      detail="$(head -1 <<<"$chk")"
    else CASE_WHY+="no capture; "; fi
  fi
  local chk2; chk2=$(il_pcap_check "$dir/capture.pcap") || CASE_WHY+="pcap: $(head -1 <<<"$chk2"); "
  detail+="; rxe: ${moved:-no counter moved}"
  if [ -z "$CASE_WHY" ]; then
    CASE_OK=1; CASE_WHY="$(( $(date +%s) - t0 ))s; $detail"
    rm -f "$dir/capture.pcap"
  else
    il_vm_exec --timeout 10 -- "p=\$(pidof ib_$mode) && kill -9 \$p; true" >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [$detail; logs: $dir]"
  fi
}

il_log "booting VM (path MTU 1024)"
vm_ok=1 why=""
il_vm_up 1024 > "$OUT/vm.log" 2>&1 || { vm_ok=0; why="VM boot failed (see $OUT/vm.log)"; }
MARK_CMD="tc qdisc add dev eth0 root handle 1: prio && tc filter add dev eth0 parent 1: protocol ip u32 match ip protocol 17 0xff match ip dport 4791 0xffff action pedit ex munge ip tos set 3 retain 3 pipe csum ip"
if [ $vm_ok = 1 ] && [ $MARK = 1 ] && ! il_vm_exec --timeout 30 -- "$MARK_CMD" >> "$OUT/vm.log" 2>&1; then
  vm_ok=0; why="the CE filter could not be set in the guest (see $OUT/vm.log)"
fi
il_log "VM up: $vm_ok${why:+ ($why)}"
for m in $MODES; do
  if [ $vm_ok = 0 ]; then il_result "ce-$m-droce_server" fail "$why"; continue; fi
  run_case ce "$m" server
  if [ "$CASE_OK" = 1 ]; then il_result "ce-$m-droce_server" pass "$CASE_WHY"; else il_result "ce-$m-droce_server" fail "$CASE_WHY"; fi
done
if [ $vm_ok = 1 ]; then
  il_vm_exec --timeout 30 -- "tc qdisc del dev eth0 root 2>/dev/null; true" >> "$OUT/vm.log" 2>&1
  run_case ect write_bw client
  if [ "$CASE_OK" = 1 ]; then il_result ect-write_bw-droce_client pass "$CASE_WHY"; else il_result ect-write_bw-droce_client fail "$CASE_WHY"; fi
else il_result ect-write_bw-droce_client fail "$why"; fi
il_vm_down
il_log "done in $(il_elapsed)s"
il_summary
