#!/usr/bin/env bash
# Interop: droce-pingpong against Linux Soft-RoCE (ibv_rc_pingpong in an rdma_rxe VM).
#
#   tests/interop/pingpong_rxe.sh [options] PATH/TO/droce-pingpong
#
# Matrix: path MTU {1024, 4096} x message size {1, 4096, 65536} x droce role {client, server},
# every run with data checking (-c) on both sides. Per path MTU the VM boots once (1024: tap and
# eth0 MTU 1500; 4096: MTU 4200). Per case: a full capture of the tap (OUT/CASE.pcap), both exit
# statuses, the guest's "iters in" line, tshark's malformed/error verdict and pcap_check.py
# (ICRC, IPv4 checksum, lengths, no ICMP unreachable). One PASS/FAIL line per case, then
# "N passed, N failed"; exit 1 on any failure. Bounded: every process has a timeout, cases that
# cannot start within --budget FAIL, and everything (VM, tap, background processes) is torn down
# on exit. Run as root.
#
# droce side (10.77.0.100, 02:00:00:00:01:00 on the tap via net_af_packet; answers ARP itself):
#   droce-pingpong $DROCE_EAL --vdev net_af_packet0,iface=TAP,qdisc_bypass=0[,big-frame args] --
#       --ip 10.77.0.100/24 --mac 02:00:00:00:01:00 --eth-mtu 1500|4200 -g 1 -p 18515 -s SIZE -n ITERS
#       -m MTU -c [10.77.0.2]
#   (--eth-mtu is needed: net_af_packet reports MTU 1500 whatever the tap's MTU is)
#   as server it must listen on TCP 18515 (the host kernel's 10.77.0.1 carries the exchange).
# guest side: ibv_rc_pingpong -d rxe0 -g 1 -p 18515 -s SIZE -n ITERS -m MTU -c [10.77.0.1]
#
# Options:
#   --out DIR            artifacts (default: a new /tmp/droce-interop.XXXXXX)
#   --mtus LIST          path MTUs, default "1024 4096"
#   --sizes LIST         default "1 4096 65536"
#   --roles LIST         droce roles, default "client server"
#   --iters N            iterations for sizes <= 4096 (default 500)
#   --iters-large N      iterations for sizes > 4096 (default 100)
#   --case-timeout S     per process (default 120)
#   --budget S           no case starts after S seconds; those left FAIL (default 1200)
#   --netem SPEC         after boot, run `tc qdisc add dev eth0 root netem SPEC` in the guest
#                        (e.g. "loss 5%": the guest drops what it sends toward droce); case
#                        names get a -netem suffix and droce prints its counters
#   --droce-capture      droce also writes its own capture (--capture CASE/droce.pcapng),
#                        validated like its test: tshark (no malformed/error frame, RoCEv2
#                        over UDP 4791, both directions) and the ICRC (check_capture.sh)

# Env: DROCE_EAL (default "-l 0 --no-huge -m 512 --no-pci --no-shconf"),
#      DROCE_VDEV_EXTRA (appended to the vdev string), IL_* (see lib.sh), RXE_HOME.
set -uo pipefail
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

OUT="" MTUS="1024 4096" SIZES="1 4096 65536" ROLES="client server"
ITERS=500 ITERS_LARGE=100 CASE_TIMEOUT=120 BUDGET=1200 BIN="" NETEM="" DCAP=0
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --mtus) MTUS=$2; shift 2;; --sizes) SIZES=$2; shift 2;;
  --roles) ROLES=$2; shift 2;; --iters) ITERS=$2; shift 2;; --iters-large) ITERS_LARGE=$2; shift 2;;
  --case-timeout) CASE_TIMEOUT=$2; shift 2;; --budget) BUDGET=$2; shift 2;;
  --netem) NETEM=$2; shift 2;;
  --droce-capture) DCAP=1; shift;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) [ -z "$BIN" ] || il_die "one binary only"; BIN=$1; shift;;
esac; done
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}

trap il_cleanup EXIT
trap 'exit 130' INT TERM

cases() { local m s r; for m in $MTUS; do for s in $SIZES; do for r in $ROLES; do echo "$m $s $r"; done; done; done; }
case_name() { echo "mtu$1-size$2-droce_$3${NETEM:+-netem}"; }

# lost_final_ack DIR N: under guest-side loss (--netem) the ACK of droce's last SEND can be
# lost after the guest has done its N iterations and destroyed its QP; droce then retries
# into nothing and ends with "transport retry counter exceeded" on that SEND (wr_id 2).
# ibv_rc_pingpong has no closing handshake, so two hardware NICs do the same. True when
# that is the one error and the guest finished.
lost_final_ack() {
  grep -q "$2 iters in" "$1/guest.log" &&
    [ "$(grep -c '^Failed status' "$1/droce.log")" = 1 ] &&
    grep -q '^Failed status transport retry counter exceeded (12) for wr_id 2$' "$1/droce.log"
}

# A missing binary fails every case, loudly, before any VM boots.
if [ -z "$BIN" ] || [ ! -x "$BIN" ]; then
  echo "interop: droce-pingpong binary not found or not executable: '${BIN:-<none given>}'" >&2
  while read -r m s r; do il_result "$(case_name "$m" "$s" "$r")" fail "droce-pingpong missing ('${BIN:-<none>}')"; done < <(cases)
  il_summary; exit 1
fi
BIN=$(readlink -f "$BIN")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-interop.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT; binary $BIN"

vdev_for() { # path MTU -> vdev string (see tests/interop/README.md: af_packet frame sizes)
  local v="net_af_packet0,iface=$IL_TAP,qdisc_bypass=0"
  # default framesz 2048 silently truncates frames to 1982 bytes: 4096-MTU frames (<= 4214 B)
  # need framesz >= 4280; the RX mbuf data room (incl. headroom) must be >= framesz + 96
  [ "$1" = 4096 ] && v+=",framesz=4608,blocksz=36864,framecnt=512"
  echo "$v${DROCE_VDEV_EXTRA:+,$DROCE_VDEV_EXTRA}"
}

# run_case MTU SIZE ROLE: sets CASE_OK (0/1) and CASE_WHY
run_case() {
  local m=$1 s=$2 role=$3 name dir n t0
  name=$(case_name "$m" "$s" "$role"); dir=$OUT/$name; mkdir -p "$dir"; CASE_DIR=$dir
  n=$ITERS; [ "$s" -gt 4096 ] && n=$ITERS_LARGE
  CASE_OK=0; CASE_WHY=""
  local common=(-g 1 -p "$IL_PORT" -s "$s" -n "$n" -m "$m" -c)
  local guest=(ibv_rc_pingpong -d rxe0 "${common[@]}")
  # shellcheck disable=SC2206
  local droce=("$BIN" $DROCE_EAL --vdev "$(vdev_for "$m")" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC" --eth-mtu "$IL_ETH_MTU" "${common[@]}")
  droce+=(--counters) # printed at exit: every failure log carries them
  [ "$DCAP" = 1 ] && droce+=(--capture "$dir/droce.pcapng")
  [ "$role" = client ] && droce+=("$IL_VM_IP") || guest+=("$IL_HOST_IP")
  printf '%q ' "${droce[@]}" > "$dir/droce.cmd"; printf '%q ' "${guest[@]}" > "$dir/guest.cmd"

  il_capture_start "$dir/capture.pcap" || { CASE_WHY="tcpdump did not start"; return; }
  local cap=$IL_CAP gpid dpid grc=-1 drc=-1
  t0=$(date +%s.%N)
  if [ "$role" = server ]; then
    il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
    if il_wait_host_listen "$IL_PORT" 30 "$dpid"; then
      # droce answers ICMP echo for its own address: the guest's kernel pings it first
      if [ "$s" = 1 ] && ! il_vm_exec --timeout 20 -- "ping -c 3 -W 2 $IL_DROCE_IP" > "$dir/ping.log" 2>&1; then
        CASE_WHY+="guest could not ping droce at $IL_DROCE_IP (see ping.log); "
      fi
      il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
      il_wait_pid "$gpid" $((CASE_TIMEOUT + 15)); grc=$IL_RC
    else
      CASE_WHY="droce-pingpong not listening on TCP $IL_PORT (exited, or not within 30 s); "
    fi
    # once the guest has failed, droce gets 10 s to notice rather than the full timeout
    il_wait_pid "$dpid" "$( [ "$grc" = 0 ] && echo "$CASE_TIMEOUT" || echo 10 )"; drc=$IL_RC
  else
    il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
    if il_wait_guest_listen "$IL_PORT" 20 >/dev/null 2>&1; then
      il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
      il_wait_pid "$dpid" $((CASE_TIMEOUT + 10)); drc=$IL_RC
    else
      CASE_WHY="guest ibv_rc_pingpong did not listen within 20 s; "
    fi
    il_wait_pid "$gpid" "$( [ "$drc" = 0 ] && echo $((CASE_TIMEOUT + 15)) || echo 10 )"; grc=$IL_RC
  fi
  local secs; secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  il_capture_stop "$cap" "$dir/capture.pcap" || CASE_WHY+="$IL_CAPMSG; "
  echo "droce rc=$drc guest rc=$grc ${secs}s" > "$dir/status"

  local lastack=""
  # Either role: as server droce sends the exchange's very last message (the final pong),
  # so its ACK is the one most exposed (seen in CI: droce_server, wr_id 2, guest done).
  if [ -n "$NETEM" ] && [ "$drc" = 1 ] && [ "$grc" = 0 ] &&
     lost_final_ack "$dir" "$n"; then
    drc=0; lastack=" (last SEND's ACK lost after the guest finished: retry exceeded, as on hardware)"
  fi
  [ "$drc" = 0 ] || CASE_WHY+="droce-pingpong exit $drc$( [ "$drc" = 124 ] && echo ' (timeout)'); "
  [ "$grc" = 0 ] || CASE_WHY+="guest ibv_rc_pingpong exit $grc$( [ "$grc" = 124 ] || [ "$grc" = 143 ] && echo ' (timeout or killed)'); "
  if [ "$grc" = 0 ] && ! grep -q "$n iters in" "$dir/guest.log"; then CASE_WHY+="guest printed no '$n iters in' line; "; fi
  local chk
  if ! chk=$(il_pcap_check "$dir/capture.pcap" 2>&1); then
    echo "$chk" > "$dir/pcap_check.txt"; CASE_WHY+="capture: $(head -1 <<<"$chk"); "
  fi
  local dchk=""
  if [ "$DCAP" = 1 ] && [ "$drc" = 0 ]; then
    # at least one frame per iteration went each way
    if dchk=$("$IL_DIR/../apps/check_capture.sh" "$dir/droce.pcapng" "$n" 2>&1); then
      dchk=", droce --capture: $(grep -o '[0-9]* RoCE frames ([0-9]* in, [0-9]* out)' <<<"$dchk")"
    else
      echo "$dchk" > "$dir/droce_capture_check.txt"; CASE_WHY+="droce --capture: $(head -1 <<<"$dchk"); "
    fi
  fi
  if [ -z "$CASE_WHY" ]; then
    CASE_OK=1; CASE_WHY="${secs}s, $n iters, $(grep -o '[0-9.]* Mbit/sec' "$dir/guest.log" | head -1)$dchk$lastack"
    rm -f "$dir/capture.pcap" "$dir/droce.pcapng"   # keep captures of failures only (they can be 100+ MB)
  else
    # leave nothing running in the guest for the next case
    il_vm_exec --timeout 10 -- 'p=$(pidof ibv_rc_pingpong) && kill -9 $p; true' >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [${secs}s; logs: $dir]"
  fi
}

# after every boot (il_case reboots an unwell guest): netem, when asked for
il_after_vm_up() {
  [ -z "$NETEM" ] && return 0
  il_vm_exec --timeout 30 -- "tc qdisc add dev eth0 root netem $NETEM && ip neigh replace $IL_DROCE_IP lladdr $IL_DROCE_MAC dev eth0 nud permanent"
}

for m in $MTUS; do
  vm_ok=1
  if [ "$(il_elapsed)" -ge "$BUDGET" ]; then vm_ok=0; why="not run: time budget ${BUDGET}s used up"
  else
    il_log "booting VM for path MTU $m"
    if ! il_vm_up "$m" > "$OUT/vm-mtu$m.log" 2>&1; then vm_ok=0; why="VM boot failed (see $OUT/vm-mtu$m.log)"; fi
    # The loss is for RoCE: a lost ARP request of the guest made rxe's RTR fail at once
    # ("Failed to modify QP to RTR"), so droce's neighbour entry is pinned in the guest.
    if [ $vm_ok = 1 ] && ! il_after_vm_up >> "$OUT/vm-mtu$m.log" 2>&1; then
      vm_ok=0; why="netem '$NETEM' could not be set in the guest (see $OUT/vm-mtu$m.log)"
    fi
    il_log "VM ready${NETEM:+ (netem $NETEM)}"
  fi
  while read -r -u 3 mm s r; do
    [ "$mm" = "$m" ] || continue
    name=$(case_name "$m" "$s" "$r")
    if [ $vm_ok = 0 ]; then il_result "$name" fail "$why"; continue; fi
    if [ "$(il_elapsed)" -ge "$BUDGET" ]; then il_result "$name" fail "not run: time budget ${BUDGET}s used up"; continue; fi
    il_case "$name" "$m" "$s" "$r"
  done 3< <(cases)
  il_vm_down
done
il_log "done in $(il_elapsed)s"
il_summary
