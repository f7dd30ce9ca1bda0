#!/usr/bin/env bash
# Interop, the verbs ABI: unmodified rdma-core 44 programs on droce (droce-run: droce's
# libibverbs and librdmacm, net_af_packet on the tap) against the same programs on Linux
# Soft-RoCE (rxe0 in the VM, the kernel's rdma_cm). Path MTU 1024, Ethernet MTU 1500.
#
#   tests/interop/verbs_rxe.sh [options] PATH/TO/droce-run
#
# Cases, each with droce as client and as server; data checked where the tool can:
#   rc_pingpong      ibv_rc_pingpong -g 1 -s 4096 -n 200 -c        (-c: both sides check)
#   rc_events        ibv_rc_pingpong -g 1 -s 4096 -n 200 -c -e     (completion channels)
#   ud_pingpong      ibv_ud_pingpong -g 1 -s 1024 -n 200
#   srq_pingpong     ibv_srq_pingpong -g 1 -s 4096 -q 4 -n 100 -c  (4 QPs on one SRQ)
#   write_bw_q4      ib_write_bw -x 1 -q 4 -s 4096 -n 200 -F --report_gbits
#   read_bw          ib_read_bw -x 1 -s 65536 -n 100 -F
#   send_lat         ib_send_lat -x 1 -s 64 -n 200 -F
#   write_lat        ib_write_lat -x 1 -s 64 -n 200 -F
#   atomic_bw        ib_atomic_bw -x 1 -n 200 -F
#   send_bw_ud       ib_send_bw -c UD -x 1 -s 1024 -n 200 -F
#   write_bw_cm      ib_write_bw -R -x 1 -s 4096 -n 200 -F  (droce's librdmacm <-> rdma_cm;
#                    droce as server only, see SERVER_ONLY)
#   rping            rping -C 20 -V (the client also -v: every ping's data shown)
#   ucmatose         ucmatose -c 2 (two connections, SENDs both ways)
#   udaddy           udaddy (RDMA_PS_UDP: SIDR against the kernel's rdma_cm, UD SENDs)
# The pingpong and perftest cases meet over TCP (the client starts once the server
# listens); the rdma_cm cases start the client a few seconds after the server. A case
# passes when both sides exit 0 and print their result (pingpong: "iters in", perftest: a
# table row, rping: 20 validated pings, ucmatose and udaddy: "return status 0"). A failed
# case runs once more (il_case). One VM boot; everything torn down on exit. Own tap,
# subnet and VM name. Run as root, under the heavy-job lock.
# Options:
#   --out DIR         artifacts (default: a new /tmp/droce-verbs-rxe.XXXXXX)
#   --cases LIST      default: all of the above
#   --roles LIST      droce roles, default "client server"
#   --case-timeout S  per process (default 60)
#   --budget S        default 600
set -uo pipefail
export IL_TAP=${IL_TAP:-tap-verbs} IL_VM=${IL_VM:-verbsvm} IL_HOST_IP=${IL_HOST_IP:-10.81.0.1}
export IL_VM_IP=${IL_VM_IP:-10.81.0.2} IL_DROCE_IP=${IL_DROCE_IP:-10.81.0.100}
export IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:05:00}
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

ALL="rc_pingpong rc_events ud_pingpong srq_pingpong write_bw_q4 read_bw send_lat write_lat"
ALL+=" atomic_bw send_bw_ud write_bw_cm rping ucmatose udaddy"
# Cases run with droce as server only. perftest 4.5-0.17's -R client sends its REQ as soon
# as the second handshake ends, and the server only calls rdma_listen after it: with a busy
# guest the REQ wins, the kernel rejects it (no listener: REJECTED, status 8, as it
# should), and 0.17's retry reuses the ids and channel it has just destroyed, a segfault in
# the client (CI, and reproduced with the guest's CPUs loaded). droce's active side is run
# by rping, ucmatose and udaddy as clients, and droce-perf -R by perf_cm_rxe.sh.
SERVER_ONLY=" write_bw_cm "
OUT="" CASES=$ALL ROLES="client server" CASE_TIMEOUT=60 BUDGET=600 RUN=""
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --cases) CASES=$2; shift 2;; --roles) ROLES=$2; shift 2;;
  --case-timeout) CASE_TIMEOUT=$2; shift 2;; --budget) BUDGET=$2; shift 2;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) [ -z "$RUN" ] || il_die "one droce-run only"; RUN=$1; shift;;
esac; done
trap il_cleanup EXIT
trap 'exit 130' INT TERM
if [ -z "$RUN" ] || [ ! -x "$RUN" ]; then
  for c in $CASES; do for r in $ROLES; do il_result "$c-droce_$r" fail "droce-run missing ('${RUN:-<none>}')"; done; done
  il_summary; exit 1
fi
RUN=$(readlink -f "$RUN")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-verbs-rxe.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT"
cat >"$OUT/droce.conf" <<CONF
[eal]
vdev = net_af_packet0,iface=$IL_TAP,qdisc_bypass=0

[port]
device = net_af_packet0
ip = $IL_DROCE_IP/$IL_PREFIX
mac = $IL_DROCE_MAC
mtu = 1500
CONF

# The rdma_cm cases: no TCP to wait for. The server gets a head start (droce's engine
# starts in about a second; the guest's tools at once), then the client runs.
run_pair_cm() { # ROLE DIR GUEST_NAME
  local role=$1 dir=$2 spid cpid
  IL_DRC=-1; IL_GRC=-1; IL_PAIR_WHY=""
  if [ "$role" = server ]; then
    il_bg "$dir/droce.log" "${droce[@]}"; spid=$IL_BG; sleep 5
    il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; cpid=$IL_BG
    il_wait_pid "$cpid" $((CASE_TIMEOUT + 15)); IL_GRC=$IL_RC
    il_wait_pid "$spid" "$( [ "$IL_GRC" = 0 ] && echo 30 || echo 10 )"; IL_DRC=$IL_RC
  else
    il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; spid=$IL_BG; sleep 3
    il_bg "$dir/droce.log" "${droce[@]}"; cpid=$IL_BG
    il_wait_pid "$cpid" $((CASE_TIMEOUT + 10)); IL_DRC=$IL_RC
    il_wait_pid "$spid" "$( [ "$IL_DRC" = 0 ] && echo 30 || echo 10 )"; IL_GRC=$IL_RC
  fi
}

ROW='^ *[0-9]+ +[0-9]+ +[0-9]+\.[0-9]+'
# The guest's perftest may print its latency row as "inf": the VM's cycle counter is not
# always calibrated (perftest_rxe.sh accepts it the same way). droce's own row must hold
# numbers.
ROW_GUEST='^ *[0-9]+ +[0-9]+ +([0-9]+\.[0-9]+|inf)'
# case_args CASE: sets tool, srv_args, cli_args (the server's address appended by run_case
# where the tool takes it last), ok_re (what droce's log must hold), guest_re (the guest's)
# and cm (1: rdma_cm).
case_args() {
  cm=0 ok_re=$ROW guest_re=$ROW_GUEST srv_args=
  case $1 in
    rc_pingpong) tool=ibv_rc_pingpong; srv_args="-g 1 -s 4096 -n 200 -c"; ok_re='200 iters in';;
    rc_events) tool=ibv_rc_pingpong; srv_args="-g 1 -s 4096 -n 200 -c -e"; ok_re='200 iters in';;
    ud_pingpong) tool=ibv_ud_pingpong; srv_args="-g 1 -s 1024 -n 200"; ok_re='200 iters in';;
    srq_pingpong) tool=ibv_srq_pingpong; srv_args="-g 1 -s 4096 -q 4 -n 100 -c"; ok_re='iters in';;
    write_bw_q4) tool=ib_write_bw; srv_args="-x 1 -q 4 -s 4096 -n 200 -F --report_gbits";;
    read_bw) tool=ib_read_bw; srv_args="-x 1 -s 65536 -n 100 -F";;
    send_lat) tool=ib_send_lat; srv_args="-x 1 -s 64 -n 200 -F";;
    write_lat) tool=ib_write_lat; srv_args="-x 1 -s 64 -n 200 -F";;
    atomic_bw) tool=ib_atomic_bw; srv_args="-x 1 -n 200 -F";;
    send_bw_ud) tool=ib_send_bw; srv_args="-c UD -x 1 -s 1024 -n 200 -F";;
    write_bw_cm) tool=ib_write_bw; srv_args="-R -x 1 -s 4096 -n 200 -F"; cm=1;;
    rping) tool=rping; cm=1; ok_re='';;
    ucmatose) tool=ucmatose; cm=1; ok_re='return status 0';;
    udaddy) tool=udaddy; cm=1; ok_re='return status 0';;
    *) return 1;;
  esac
  [[ $ok_re == "$ROW" ]] || guest_re=$ok_re
  cli_args=$srv_args
  case $1 in ucmatose) srv_args="-c 2"; cli_args="-c 2 -s";; udaddy) cli_args="-s";; esac
}

# The argument strings above are split into words on purpose; il_case reads CASE_DIR.
# shellcheck disable=SC2206,SC2034
run_case() { # CASE ROLE -> CASE_OK, CASE_WHY, CASE_DIR
  local c=$1 role=$2 dir=$OUT/$1-droce_$2 tool srv_args cli_args ok_re guest_re cm t0
  CASE_OK=0; CASE_WHY=""; CASE_DIR=$dir
  rm -rf "$dir"; mkdir -p "$dir"
  case_args "$c" || { CASE_WHY="unknown case $c"; return; }
  local d_ip=$IL_DROCE_IP g_ip=$IL_VM_IP
  local dsrv=($tool) dcli=($tool) gsrv=($tool -d rxe0) gcli=($tool -d rxe0)
  if [ "$c" = rping ]; then # rdma_cm picks the device by address: no -d
    dsrv=(rping -s -a "$d_ip" -C 20 -V); gsrv=(rping -s -a "$g_ip" -C 20 -V)
    dcli=(rping -c -a "$g_ip" -C 20 -V -v); gcli=(rping -c -a "$d_ip" -C 20 -V -v)
  elif [ "$c" = ucmatose ] || [ "$c" = udaddy ]; then
    dsrv+=($srv_args); gsrv=($tool $srv_args); dcli+=($cli_args "$g_ip"); gcli=($tool $cli_args "$d_ip")
  else
    # Over TCP the guest reaches droce's program at the host's address on the tap (the
    # host's TCP); over rdma_cm at droce's RoCE address.
    [ "$cm" = 1 ] || { d_ip=$IL_HOST_IP; dsrv+=(-p "$IL_PORT"); gsrv+=(-p "$IL_PORT"); dcli+=(-p "$IL_PORT"); gcli+=(-p "$IL_PORT"); }
    dsrv+=($srv_args); gsrv+=($srv_args); dcli+=($cli_args "$g_ip"); gcli+=($cli_args "$d_ip")
  fi
  local droce guest
  if [ "$role" = server ]; then droce=("$RUN" --config "$OUT/droce.conf" "${dsrv[@]}"); guest=("${gcli[@]}")
  else droce=("$RUN" --config "$OUT/droce.conf" "${dcli[@]}"); guest=("${gsrv[@]}"); fi
  printf '%q ' "${droce[@]}" >"$dir/droce.cmd"; printf '%q ' "${guest[@]}" >"$dir/guest.cmd"
  t0=$(date +%s)
  if [ "$cm" = 1 ]; then run_pair_cm "$role" "$dir" "$tool"; else il_run_pair "$role" "$dir" "$tool"; fi
  CASE_WHY+=$IL_PAIR_WHY
  local race=""
  if [ "$c" = rping ]; then # rping's own exit race, on either side (lib.sh)
    il_rping_exit_race "$IL_DRC" "$dir/droce.log" && IL_DRC=0 race=1
    il_rping_exit_race "$IL_GRC" "$dir/guest.log" && IL_GRC=0 race=1
    [ -n "$race" ] && race="; rping's exit race (rdma-core #1622)"
  fi
  [ "$IL_DRC" = 0 ] || CASE_WHY+="droce exit $IL_DRC; "
  [ "$IL_GRC" = 0 ] || CASE_WHY+="guest $tool exit $IL_GRC; "
  if [ "$c" = rping ]; then
    local client_log=$dir/droce.log
    [ "$role" = server ] && client_log=$dir/guest.log
    local n; n=$(grep -c '^ping data: rdma-ping-' "$client_log")
    [ "$n" = 20 ] || CASE_WHY+="client showed $n of 20 pings; "
    grep -qi 'mismatch\|invalid' "$dir/droce.log" "$dir/guest.log" && CASE_WHY+="data mismatch; "
  else
    grep -Eq "$ok_re" "$dir/droce.log" || CASE_WHY+="droce printed no result; "
    grep -Eq "$guest_re" "$dir/guest.log" || CASE_WHY+="guest printed no result; "
    grep -qi 'invalid data\|data mismatch' "$dir/droce.log" "$dir/guest.log" && CASE_WHY+="data mismatch; "
  fi
  if [ -z "$CASE_WHY" ]; then
    CASE_OK=1
    if [ "$c" = rping ]; then CASE_WHY="$(( $(date +%s) - t0 ))s; 20 pings validated$race"
    else CASE_WHY="$(( $(date +%s) - t0 ))s; droce: $(grep -Em1 "$ok_re" "$dir/droce.log" | tr -s ' \t' ' ')"; fi
  else
    il_vm_exec --timeout 10 -- "p=\$(pidof $tool) && kill -9 \$p; true" >/dev/null 2>&1 || true
    CASE_WHY="${CASE_WHY%; } [logs: $dir]"
  fi
}

il_log "booting VM (path MTU 1024)"
vm_ok=1
il_vm_up 1024 >"$OUT/vm.log" 2>&1 || vm_ok=0
il_log "VM up: $vm_ok"
for c in $CASES; do for r in $ROLES; do
  name=$c-droce_$r
  [ "$r" = client ] && [[ $SERVER_ONLY == *" $c "* ]] && continue
  if [ $vm_ok = 0 ]; then il_result "$name" fail "VM boot failed (see $OUT/vm.log)"; continue; fi
  if [ "$(il_elapsed)" -ge "$BUDGET" ]; then il_result "$name" fail "not run: budget ${BUDGET}s used up"; continue; fi
  il_case "$name" "$c" "$r"
done; done
il_vm_down
il_log "done in $(il_elapsed)s"
il_summary
