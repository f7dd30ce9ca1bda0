#!/usr/bin/env bash
# Interop, IP and L2 policy: droce-pingpong against ibv_rc_pingpong in the rdma_rxe VM over an
# IPv6 GID and over a VLAN GID, droce as server and as client, data checked (-c) both sides;
# then droce-perf against perftest's ib_write_bw over the same two GIDs, both roles.
#
#   tests/interop/l3_rxe.sh [--out DIR] [--iters N] [--cases LIST] [--perf PATH/TO/droce-perf]
#                           PATH/TO/droce-pingpong
# (--perf defaults to the droce-perf next to droce-pingpong in the build tree.)
#
# One VM boot (path MTU 1024, IPv6 on). The guest adds fd77:20::2/64 to eth0 (its GID found in
# rxe0's GID table) and eth0.100 (VLAN 100, egress-qos-map 0:3) with 10.77.21.2/24. The TCP
# exchange stays on the tap's untagged IPv4 (ibv_rc_pingpong listens on IPv4 only; the host
# kernel here has no 802.1Q, so only DPDK and the guest speak VLAN).
#   ipv6: droce --ip 10.77.0.100/24 --ip fd77:20::100/64 -g 2; the guest pings droce's IPv6
#         address first (neighbour discovery + ICMPv6 echo answered by droce).
#   vlan: droce --ip 10.77.21.100/24 --vlan 100 -l 3 --force-dscp 26 -g 1 (ARP on the VLAN).
#   *-wbw-*: the same addressing with droce-perf write_bw (-x 2 / -x 1, SL 3 as -S 3) against
#         ib_write_bw -x <the guest's GID index> -s 4096 -n 200 -F.
# Every case's capture (tcpdump on the tap) must pass tshark/pcap_check.py, and its RoCE frames
# must be what the case says: IPv6 between the two GIDs; on the VLAN every RoCE frame tagged
# VID 100 PCP 3, droce's with DSCP 26. One PASS/FAIL line per case, then "N passed, N failed".
# Run as root, under the heavy-job lock. About 1-2 minutes on an idle machine.
set -uo pipefail
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

OUT="" ITERS=200 BIN="" PERF=""
CASES="ipv6-droce_server ipv6-droce_client vlan-droce_server vlan-droce_client
       ipv6-wbw-droce_server ipv6-wbw-droce_client vlan-wbw-droce_server vlan-wbw-droce_client"
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --iters) ITERS=$2; shift 2;; --cases) CASES=$2; shift 2;;
  --perf) PERF=$2; shift 2;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) BIN=$1; shift;;
esac; done
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}
CASE_TIMEOUT=60
PERF_ITERS=${PERF_ITERS:-200}
# RoCEv2 over IPv6 carries UDP checksum 0 (the ICRC covers the packet), as rxe sends it too:
# tshark would flag every frame "Illegal checksum value (0)" without this preference.
IL_TSHARK_OPTS+=(-o udp.ignore_ipv6_zero_checksum:TRUE)

trap il_cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
  for c in $CASES; do il_result "$c" fail "droce-pingpong missing ('${BIN:-<none>}')"; done
  il_summary; exit 1
fi
BIN=$(readlink -f "$BIN")
[ -n "$PERF" ] || PERF=$(dirname "$BIN")/../droce-perf/droce-perf
PERF=$(readlink -f "$PERF" 2>/dev/null || echo "$PERF")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-l3.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT"

# guest_gid_index FULLGID: the index of that GID in rxe0's table (waits up to 5 s for it)
guest_gid_index() {
  il_vm_exec --timeout 20 -- "n=0; while [ \$n -lt 50 ]; do i=0; while [ \$i -lt 32 ]; do
    [ \"\$(cat /sys/class/infiniband/rxe0/ports/1/gids/\$i 2>/dev/null)\" = '$1' ] && { echo \$i; exit 0; }
    i=\$((i+1)); done; sleep 0.1; n=\$((n+1)); done; exit 1"
}

# check_capture KIND FILE [nd_any]: the RoCE frames are what KIND promises (prints the problem)
check_capture() {
  local kind=$1 f=$2 total bad # $3 = nd_any: either side's NA will do (see below)
  total=$(tshark -n -r "$f" -Y 'udp.dstport == 4791' 2>/dev/null | wc -l)
  [ "$total" -gt 0 ] || { echo "no RoCE frames"; return 1; }
  case $kind in
    ipv6)
      bad=$(tshark -n -r "$f" -Y 'udp.dstport == 4791 && !(ipv6.src == fd77:20::100 && ipv6.dst == fd77:20::2) && !(ipv6.src == fd77:20::2 && ipv6.dst == fd77:20::100)' 2>/dev/null | wc -l)
      [ "$bad" = 0 ] || { echo "$bad of $total RoCE frames not IPv6 between the GIDs"; return 1; }
      if [ "${3:-}" = nd_any ]; then
        # a short run where droce resolves first: the guest learns droce's MAC from
        # droce's NS and never asks; then droce's NS must have been answered
        [ "$(tshark -n -r "$f" -Y "(icmpv6.type == 136 && ipv6.src == fd77:20::100) || (icmpv6.type == 136 && ipv6.dst == fd77:20::100 && ipv6.src == fd77:20::2)" 2>/dev/null | wc -l)" -gt 0 ] ||
          { echo "no neighbour discovery exchange with droce"; return 1; }
      else
        [ "$(tshark -n -r "$f" -Y "icmpv6.type == 136 && ipv6.src == fd77:20::100" 2>/dev/null | wc -l)" -gt 0 ] ||
          { echo "no neighbour advertisement from droce"; return 1; }
      fi ;;
    vlan)
      bad=$(tshark -n -r "$f" -Y 'udp.dstport == 4791 && !(vlan.id == 100 && vlan.priority == 3)' 2>/dev/null | wc -l)
      [ "$bad" = 0 ] || { echo "$bad of $total RoCE frames not VID 100 PCP 3"; return 1; }
      bad=$(tshark -n -r "$f" -Y "udp.dstport == 4791 && eth.src == $IL_DROCE_MAC && ip.dsfield.dscp != 26" 2>/dev/null | wc -l)
      [ "$bad" = 0 ] || { echo "$bad of droce's RoCE frames without DSCP 26"; return 1; }
      [ "$(tshark -n -r "$f" -Y "udp.dstport == 4791 && eth.src == $IL_DROCE_MAC" 2>/dev/null | wc -l)" -gt 0 ] ||
        { echo "no RoCE frame from droce"; return 1; } ;;
  esac
}

run_case() { # NAME
  local name=$1 kind=${1%%-*} role=${1##*_} dir=$OUT/$1 gidx droce guest
  mkdir -p "$dir"; CASE_WHY=""
  # the guest resolves droce afresh in every case (ND / ARP on the wire, in the capture)
  il_vm_exec --timeout 10 -- 'ip neigh flush all' >/dev/null 2>&1 || true
  if [ "$kind" = ipv6 ]; then
    gidx=$G6
    droce=("$BIN" $DROCE_EAL --vdev "net_af_packet0,iface=$IL_TAP,qdisc_bypass=0" -- --ip "$IL_DROCE_IP/24"
           --ip fd77:20::100/64 -g 2)
  else
    gidx=$GV
    droce=("$BIN" $DROCE_EAL --vdev "net_af_packet0,iface=$IL_TAP,qdisc_bypass=0" -- --ip 10.77.21.100/24
           --vlan 100 -l 3 --force-dscp 26 -g 1)
  fi
  local common=(-p "$IL_PORT" -s 4096 -n "$ITERS" -m 1024 -c)
  droce+=(--mac "$IL_DROCE_MAC" --eth-mtu 1500 --counters --timeout "$CASE_TIMEOUT" "${common[@]}")
  guest=(ibv_rc_pingpong -d rxe0 -g "$gidx" "${common[@]}")
  [ "$role" = client ] && droce+=("$IL_VM_IP") || guest+=("$IL_HOST_IP")
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"
  il_capture_start "$dir/capture.pcap" || { CASE_WHY="tcpdump did not start"; return; }
  local cap=$IL_CAP dpid gpid drc=-1 grc=-1
  if [ "$role" = server ]; then
    il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
    if il_wait_host_listen "$IL_PORT" 30 "$dpid"; then
      if [ "$kind" = ipv6 ] && ! il_vm_exec --timeout 20 -- "ping -6 -c 2 -W 2 fd77:20::100" > "$dir/ping.log" 2>&1; then
        CASE_WHY+="guest could not ping -6 droce (ping.log); "
      fi
      il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
      il_wait_pid "$gpid" $((CASE_TIMEOUT + 15)); grc=$IL_RC
    else
      CASE_WHY+="droce not listening; "
    fi
    il_wait_pid "$dpid" "$( [ "$grc" = 0 ] && echo 30 || echo 10 )"; drc=$IL_RC
  else
    il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
    if il_wait_guest_listen "$IL_PORT" 20 >/dev/null 2>&1; then
      il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
      il_wait_pid "$dpid" $((CASE_TIMEOUT + 10)); drc=$IL_RC
    else
      CASE_WHY+="guest did not listen; "
    fi
    il_wait_pid "$gpid" "$( [ "$drc" = 0 ] && echo 30 || echo 10 )"; grc=$IL_RC
  fi
  il_capture_stop "$cap" "$dir/capture.pcap" || CASE_WHY+="$IL_CAPMSG; "
  [ "$drc" = 0 ] || CASE_WHY+="droce-pingpong exit $drc; "
  [ "$grc" = 0 ] || CASE_WHY+="guest ibv_rc_pingpong exit $grc; "
  grep -q "$ITERS iters in" "$dir/guest.log" 2>/dev/null || CASE_WHY+="guest printed no iters line; "
  local chk
  chk=$(il_pcap_check "$dir/capture.pcap" 2>&1) || CASE_WHY+="capture: $(head -1 <<<"$chk"); "
  chk=$(check_capture "$kind" "$dir/capture.pcap" 2>&1) || CASE_WHY+="capture: $chk; "
  if [ -n "$CASE_WHY" ]; then
    il_vm_exec --timeout 10 -- 'p=$(pidof ibv_rc_pingpong) && kill -9 $p; true' >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [logs: $dir]"
  fi
}

# run_perf_case NAME (ipv6-wbw-droce_server ...): droce-perf write_bw against ib_write_bw over
# the case's GID; the capture is checked as the pingpong cases' are.
run_perf_case() {
  local name=$1 kind=${1%%-*} role=${1##*_} dir=$OUT/$1 gidx
  mkdir -p "$dir"; CASE_WHY=""
  [ -x "$PERF" ] || { CASE_WHY="droce-perf missing ('$PERF')"; return; }
  il_vm_exec --timeout 10 -- 'ip neigh flush all' >/dev/null 2>&1 || true
  local common=(-p "$IL_PORT" -s 4096 -n "$PERF_ITERS" -F)
  # shellcheck disable=SC2206
  droce=("$PERF" write_bw $DROCE_EAL --vdev "net_af_packet0,iface=$IL_TAP,qdisc_bypass=0" --)
  if [ "$kind" = ipv6 ]; then
    gidx=$G6; droce+=(--ip "$IL_DROCE_IP/24" --ip fd77:20::100/64 -x "${PERF_GID6:-2}")
  else
    gidx=$GV; droce+=(--ip 10.77.21.100/24 --vlan 100 -S "${PERF_SL:-3}" --force-dscp 26 -x 1)
  fi
  droce+=(--mac "$IL_DROCE_MAC" --eth-mtu 1500 --counters --timeout "$CASE_TIMEOUT" "${common[@]}")
  guest=(ib_write_bw -d rxe0 -x "$gidx" "${common[@]}")
  [ "$role" = client ] && droce+=("$IL_VM_IP") || guest+=("$IL_HOST_IP")
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"
  il_capture_start "$dir/capture.pcap" || { CASE_WHY="tcpdump did not start"; return; }
  local cap=$IL_CAP
  il_run_pair "$role" "$dir" ib_write_bw; CASE_WHY+=$IL_PAIR_WHY
  il_capture_stop "$cap" "$dir/capture.pcap" || CASE_WHY+="$IL_CAPMSG; "
  [ "$IL_DRC" = 0 ] || CASE_WHY+="droce-perf exit $IL_DRC; "
  [ "$IL_GRC" = 0 ] || CASE_WHY+="guest ib_write_bw exit $IL_GRC; "
  grep -Eq '^ [0-9]+ +[0-9]+ +([0-9]+\.[0-9]{2}|inf)' "$dir/guest.log" 2>/dev/null ||
    CASE_WHY+="guest printed no result row; "
  local chk
  chk=$(il_pcap_check "$dir/capture.pcap" 2>&1) || CASE_WHY+="capture: $(head -1 <<<"$chk"); "
  chk=$(check_capture "$kind" "$dir/capture.pcap" nd_any 2>&1) || CASE_WHY+="capture: $chk; "
  if [ -n "$CASE_WHY" ]; then
    il_vm_exec --timeout 10 -- 'p=$(pidof ib_write_bw) && kill -9 $p; true' >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [logs: $dir]"
  fi
}

il_log "booting VM (IPv6 on)"
vm_ok=1 why=""
if ! "$IL_PEER" up "$IL_VM" "$IL_TAP" "$IL_HOST_IP/$IL_PREFIX" "$IL_VM_IP/$IL_PREFIX" 1500 \
     -- --boot-timeout 240 --ipv6 > "$OUT/vm.log" 2>&1; then
  vm_ok=0; why="VM boot failed (see $OUT/vm.log)"
fi
IL_VM_IS_UP=1
if [ $vm_ok = 1 ]; then
  il_vm_exec --timeout 30 -- 'ip -6 addr add fd77:20::2/64 dev eth0 nodad &&
    ip link add link eth0 name eth0.100 type vlan id 100 egress-qos-map 0:3 &&
    ip addr add 10.77.21.2/24 dev eth0.100 && ip link set eth0.100 up' >> "$OUT/vm.log" 2>&1 ||
    { vm_ok=0; why="guest IPv6/VLAN set-up failed (see $OUT/vm.log)"; }
fi
if [ $vm_ok = 1 ]; then
  G6=$(guest_gid_index fd77:0020:0000:0000:0000:0000:0000:0002) || { vm_ok=0; why="no IPv6 GID in rxe0"; }
  GV=$(guest_gid_index 0000:0000:0000:0000:0000:ffff:0a4d:1502) || { vm_ok=0; why="no VLAN GID in rxe0"; }
  il_log "guest GIDs: IPv6 index ${G6:-?}, VLAN index ${GV:-?}"
fi
for c in $CASES; do
  if [ $vm_ok = 0 ]; then il_result "$c" fail "$why"; continue; fi
  if [[ $c == *-wbw-* ]]; then
    run_perf_case "$c"
    if [ -z "$CASE_WHY" ]; then il_result "$c" pass "guest row: $(grep -E '^ [0-9]+ +[0-9]+ ' "$OUT/$c/guest.log" | head -1 | tr -s ' ' ' ')"
    else il_result "$c" fail "$CASE_WHY"; fi
    continue
  fi
  run_case "$c"
  if [ -z "$CASE_WHY" ]; then il_result "$c" pass "$(grep -o '[0-9.]* Mbit/sec' "$OUT/$c/guest.log" | head -1)"
  else il_result "$c" fail "$CASE_WHY"; fi
done
il_log "done in $(il_elapsed)s"
il_summary
