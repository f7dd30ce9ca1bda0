#!/usr/bin/env bash
# Interop, RDMA-CM: droce-rping against Linux's rping (librdmacm, Soft-RoCE) in the rxe VM.
#
#   tests/interop/rping_rxe.sh [options] PATH/TO/BUILD_DIR
#
# Cases (path MTU 1024, Ethernet MTU 1500; the CM runs on QP1 of both sides, no TCP):
#   rping-droce_server  droce `droce-rping -s -v -V -C N -p P`, guest `rping -c -a DROCE_IP -v -V -C N -p P`
#   rping-droce_client  guest `rping -s -a 0.0.0.0 -v -V -C N -p P`, droce `droce-rping -c -a VM_IP -v -V -C N -p P`
#   rping6-droce_server, rping6-droce_client: the same over IPv6 (the guest's fd80::2, droce's
#                       --ip fd80::100/64; rdma_cm's header says IPv6, every RoCE frame is IPv6)
# A case passes when both sides exit 0, the client printed N "ping data: rdma-ping-I: ..."
# lines (I = 0..N-1) and the server N "server ping data:" lines, the side that got the DREQ
# answered it with a DREP (in the capture), and the capture passes il_pcap_check. One
# PASS/FAIL line per case, then "N passed, N failed"; exit 1 on any failure. One VM boot
# (IPv6 on); own tap/subnet/VM name (tap-cm, 10.80.0.0/24 and fd80::/64, cmvm). Run as root.
# Options:
#   --out DIR         artifacts (default: a new /tmp/droce-rping-interop.XXXXXX)
#   --roles LIST      droce roles, default "server client server6 client6"
#   --count N         pings (default 100, as the issue's `rping -v -C 100`)
#   --case-timeout S  per process (default 60)
#   --budget S        default 300
set -uo pipefail
export IL_TAP=${IL_TAP:-tap-cm} IL_VM=${IL_VM:-cmvm} IL_HOST_IP=${IL_HOST_IP:-10.80.0.1}
export IL_VM_IP=${IL_VM_IP:-10.80.0.2} IL_DROCE_IP=${IL_DROCE_IP:-10.80.0.100}
export IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:04:00}
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

OUT="" ROLES="server client server6 client6" COUNT=100 CASE_TIMEOUT=60 BUDGET=300 BUILD="" PORT=7174
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --roles) ROLES=$2; shift 2;; --count) COUNT=$2; shift 2;;
  --case-timeout) CASE_TIMEOUT=$2; shift 2;; --budget) BUDGET=$2; shift 2;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) [ -z "$BUILD" ] || il_die "one build directory only"; BUILD=$1; shift;;
esac; done
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}
trap il_cleanup EXIT
trap 'exit 130' INT TERM

RP=${BUILD:+$BUILD/apps/droce-rping/droce-rping}
if [ -z "$BUILD" ] || [ ! -x "$RP" ]; then
  for r in $ROLES; do il_result "rping-droce_$r" fail "droce-rping missing under '${BUILD:-<none>}'"; done
  il_summary; exit 1
fi
RP=$(readlink -f "$RP")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-rping-interop.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT"
VDEV="net_af_packet0,iface=$IL_TAP,qdisc_bypass=0"
VM_IP6=fd80::2 DROCE_IP6=fd80::100
# RoCEv2 over IPv6 carries UDP checksum 0 (the ICRC covers the packet), as rxe sends it too.
IL_TSHARK_OPTS+=(-o udp.ignore_ipv6_zero_checksum:TRUE)

# pings_ok LOG PREFIX: COUNT lines "PREFIXrdma-ping-I: " for I = 0..COUNT-1, in order
pings_ok() {
  local want i=0 line
  while IFS= read -r line; do
    want="${2}rdma-ping-$i: "
    [ "${line:0:${#want}}" = "$want" ] || return 1
    i=$((i + 1))
  done < <(grep -a "^${2}rdma-ping-" "$1")
  [ "$i" = "$COUNT" ]
}

# dreq_answered PCAP: every DREQ in the capture has a DREP from the other side (the CM's
# attribute IDs 0x15/0x16; a side exiting before its DREP left fails this)
dreq_answered() {
  local rows; rows=$(tshark -n -r "$1" -Y 'infiniband.mad.mgmtclass == 7' -T fields \
    -e ip.src -e ipv6.src -e infiniband.mad.attributeid 2>/dev/null) || return 1
  awk '$NF == "0x0015" { dreq[$1] = 1 } $NF == "0x0016" { drep[$1] = 1 }
       END { n = 0; for (s in dreq) { n++; ok = 0; for (d in drep) if (d != s) ok = 1; if (!ok) exit 1 }
             exit n ? 0 : 1 }' <<<"$rows"
}

run_case() { # ROLE (server, client, server6, client6) -> CASE_OK, CASE_WHY
  local v6=${1#"${1%6}"} role=${1%6} name dir; name=rping${v6}-droce_$role; dir=$OUT/$name; mkdir -p "$dir"
  CASE_OK=0; CASE_WHY=""
  local common=(-v -V -C "$COUNT" -p "$PORT") dip=$IL_DROCE_IP vip=$IL_VM_IP any=0.0.0.0
  [ -n "$v6" ] && { dip=$DROCE_IP6 vip=$VM_IP6 any=::; }
  # shellcheck disable=SC2206
  local droce=("$RP" $DROCE_EAL --vdev "$VDEV" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC"
               --eth-mtu "$IL_ETH_MTU" --timeout "$CASE_TIMEOUT" --counters -d "${common[@]}")
  [ -n "$v6" ] && droce+=(--ip "$DROCE_IP6/64")
  local guest=(rping "${common[@]}")
  if [ "$role" = server ]; then droce+=(-s); guest+=(-c -a "$dip")
  else droce+=(-c -a "$vip"); guest+=(-s -a "$any"); fi
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"
  il_capture_start "$dir/capture.pcap" || true
  local cap=${IL_CAP:-} gpid dpid grc=-1 drc=-1 t0 i; t0=$(date +%s)
  if [ "$role" = server ]; then
    il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
    for i in $(seq 300); do  # until the CM listens (EAL and device bring-up first)
      grep -q '^rdma_listen' "$dir/droce.log" 2>/dev/null && break
      kill -0 "$dpid" 2>/dev/null || break; sleep 0.1
    done
    if grep -q '^rdma_listen' "$dir/droce.log"; then
      il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
      il_wait_pid "$gpid" $((CASE_TIMEOUT + 15)); grc=$IL_RC
    else CASE_WHY="droce-rping did not listen; "; fi
    il_wait_pid "$dpid" "$( [ "$grc" = 0 ] && echo 20 || echo 5 )"; drc=$IL_RC
  else
    il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
    # rping's listener is not a socket: wait for the process, then give it a moment to listen
    if il_vm_exec -- "i=0; while ! pidof rping >/dev/null; do usleep 100000; i=\$((i+1)); [ \$i -ge 200 ] && exit 1; done; exit 0" >/dev/null 2>&1; then
      sleep 2
      il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
      il_wait_pid "$dpid" $((CASE_TIMEOUT + 10)); drc=$IL_RC
    else CASE_WHY="guest rping did not start; "; fi
    il_wait_pid "$gpid" "$( [ "$drc" = 0 ] && echo 20 || echo 5 )"; grc=$IL_RC
  fi
  [ -n "$cap" ] && { il_capture_stop "$cap" "$dir/capture.pcap" || CASE_WHY+="$IL_CAPMSG; "; }
  [ "$drc" = 0 ] || CASE_WHY+="droce exit $drc; "
  local race=""
  il_rping_exit_race "$grc" "$dir/guest.log" && grc=0 race="; guest rping's exit race (rdma-core #1622)"
  [ "$grc" = 0 ] || CASE_WHY+="guest rping exit $grc; "
  local clog slog
  if [ "$role" = server ]; then clog=$dir/guest.log slog=$dir/droce.log; else clog=$dir/droce.log slog=$dir/guest.log; fi
  pings_ok "$clog" "ping data: " || CASE_WHY+="client: not $COUNT 'ping data' lines; "
  pings_ok "$slog" "server ping data: " || CASE_WHY+="server: not $COUNT 'server ping data' lines; "
  local chk
  if [ -f "$dir/capture.pcap" ] && ! chk=$(il_pcap_check "$dir/capture.pcap" 2>&1); then
    echo "$chk" > "$dir/pcap_check.txt"; CASE_WHY+="capture: $(head -1 <<<"$chk"); "
  fi
  if [ -f "$dir/capture.pcap" ]; then
    dreq_answered "$dir/capture.pcap" || CASE_WHY+="capture: a DREQ without a DREP from the other side; "
    if [ -n "$v6" ] && [ "$(tshark -n -r "$dir/capture.pcap" -Y 'udp.dstport == 4791 && !ipv6' 2>/dev/null | wc -l)" != 0 ]; then
      CASE_WHY+="capture: RoCE frames not over IPv6; "
    fi
  fi
  if [ -z "$CASE_WHY" ]; then
    CASE_OK=1
    CASE_WHY="$(( $(date +%s) - t0 ))s; $COUNT pings validated$race"
    rm -f "$dir/capture.pcap"
  else
    il_vm_exec --timeout 10 -- "p=\$(pidof rping) && kill -9 \$p; true" >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [logs: $dir]"
  fi
}

il_log "booting VM (path MTU 1024, IPv6 on)"
vm_ok=1
il_vm_up 1024 --ipv6 > "$OUT/vm.log" 2>&1 || vm_ok=0
# the guest's IPv6 address, and rxe's GID for it (added by the kernel, asynchronously)
[ $vm_ok = 1 ] && { il_vm_exec --timeout 30 -- "ip -6 addr add $VM_IP6/64 dev eth0 nodad && n=0 &&
  while ! grep -qs '^fd80:' /sys/class/infiniband/rxe0/ports/1/gids/*; do
    sleep 0.1; n=\$((n+1)); [ \$n -ge 50 ] && exit 1; done" >> "$OUT/vm.log" 2>&1 || vm_ok=0; }
il_log "VM up: $vm_ok"
for r in $ROLES; do
  name=rping${r#"${r%6}"}-droce_${r%6}
  if [ $vm_ok = 0 ]; then il_result "$name" fail "VM boot failed (see $OUT/vm.log)"; continue; fi
  if [ "$(il_elapsed)" -ge "$BUDGET" ]; then il_result "$name" fail "not run: budget ${BUDGET}s used up"; continue; fi
  run_case "$r"
  if [ "$CASE_OK" = 1 ]; then il_result "$name" pass "$CASE_WHY"; else il_result "$name" fail "$CASE_WHY"; fi
done
il_vm_down
il_log "done in $(il_elapsed)s"
il_summary
