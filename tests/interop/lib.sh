# tests/interop/lib.sh: helpers for interop tests against a Soft-RoCE (rdma_rxe) VM.
# Source it from bash; it sets no shell options. Every helper prefixed il_.
#
# Topology (one VM on one tap, no bridge):
#   host kernel   IL_HOST_IP (10.77.0.1/24) on IL_TAP: TCP side of the out-of-band exchange
#   droce         IL_DROCE_IP (10.77.0.100) / IL_DROCE_MAC on IL_TAP via net_af_packet; answers ARP itself
#   guest (rxe0)  IL_VM_IP (10.77.0.2/24), MAC 52:54:00:4d:00:02, GID index 1 = ::ffff:10.77.0.2
# Background processes started with il_bg are killed (process group) by il_cleanup, which the
# caller installs with: trap il_cleanup EXIT; trap 'exit 130' INT TERM

IL_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IL_REPO=$(cd "$IL_DIR/../.." && pwd)
IL_PEER=${IL_PEER:-$IL_REPO/scripts/rxe-peer.sh}
IL_TAP=${IL_TAP:-droce-it0}
IL_VM=${IL_VM:-droce-it}
IL_HOST_IP=${IL_HOST_IP:-10.77.0.1}
IL_VM_IP=${IL_VM_IP:-10.77.0.2}
IL_PREFIX=${IL_PREFIX:-24}
IL_DROCE_IP=${IL_DROCE_IP:-10.77.0.100}
IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:01:00}
IL_PORT=${IL_PORT:-18515}
IL_BG_PIDS=()
IL_VM_IS_UP=0
IL_PASS=0
IL_FAIL=0
IL_RETRIED=0
IL_VM_UP_ARGS=()
CASE_DIR=""
IL_T0=$(date +%s)

il_log() { echo "[$(il_elapsed)s] $*" >&2; }
il_die() { echo "interop: FATAL: $*" >&2; exit 1; }
il_elapsed() { echo $(( $(date +%s) - IL_T0 )); }

# il_bg LOGFILE CMD...: run CMD in its own process group (so a kill reaches its children),
# output to LOGFILE; sets IL_BG (pid) and remembers it for il_cleanup.
il_bg() {
  local log=$1; shift
  setsid "$@" > "$log" 2>&1 < /dev/null &
  IL_BG=$!
  IL_BG_PIDS+=("$IL_BG")
}

# il_kill PID...: TERM the process group, then KILL after 3 s; reaps it. Never fails.
il_kill() {
  local p i
  for p in "$@"; do
    [ -n "$p" ] || continue
    kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null || true
  done
  for p in "$@"; do
    [ -n "$p" ] || continue
    for i in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    il_forget "$p"
  done
}

# il_forget PID: a reaped process leaves the cleanup list (its pid may be reused by others)
il_forget() {
  local keep=() q
  for q in "${IL_BG_PIDS[@]}"; do [ "$q" = "$1" ] || keep+=("$q"); done
  IL_BG_PIDS=("${keep[@]}")
}

# il_wait_pid PID TIMEOUT: wait for PID (a child of this shell: do not call in $(...)) to exit
# within TIMEOUT seconds; sets IL_RC to its status, 124 on timeout (after killing it).
il_wait_pid() {
  local pid=$1 end
  end=$(( $(date +%s) + $2 ))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$end" ]; then il_kill "$pid"; IL_RC=124; return 0; fi
    sleep 0.2
  done
  IL_RC=0; wait "$pid" 2>/dev/null || IL_RC=$?
  il_forget "$pid"
}

il_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  ((${#IL_BG_PIDS[@]})) && il_kill "${IL_BG_PIDS[@]}"
  IL_BG_PIDS=()
  if [ "$IL_VM_IS_UP" = 1 ]; then "$IL_PEER" down "$IL_VM" "$IL_TAP" >/dev/null 2>&1 || true; IL_VM_IS_UP=0; fi
  ip link del "$IL_TAP" 2>/dev/null || true
  exit "$rc"
}

# il_require_tools: fail (not skip) when a tool is missing
il_require_tools() {
  local t missing=()
  for t in ip tcpdump tshark python3 setsid ss qemu-system-x86_64; do
    command -v "$t" >/dev/null || missing+=("$t")
  done
  ((${#missing[@]} == 0)) || il_die "missing tools: ${missing[*]} (run scripts/deps.sh)"
  [ "$(id -u)" = 0 ] || il_die "must run as root (taps, qemu, af_packet)"
}

# il_vm_up PATH_MTU [VM OPTION...]: (re)create the tap and boot the VM so that rxe's
# active_mtu is PATH_MTU (1024: eth MTU 1500; 4096: eth MTU 4200); options go to rxe-vm's
# boot (e.g. --ipv6). Sets IL_ETH_MTU.
il_vm_up() {
  case $1 in 1024) IL_ETH_MTU=1500;; 4096) IL_ETH_MTU=4200;; *) il_die "unsupported path MTU $1";; esac
  IL_VM_UP_ARGS=("$@")
  il_vm_down
  IL_VM_IS_UP=1
  "$IL_PEER" up "$IL_VM" "$IL_TAP" "$IL_HOST_IP/$IL_PREFIX" "$IL_VM_IP/$IL_PREFIX" "$IL_ETH_MTU" \
    -- --boot-timeout 240 "${@:2}" >&2 || return 1
  "$IL_PEER" info "$IL_VM" | grep -q "active_mtu: $1 " || { "$IL_PEER" info "$IL_VM" >&2; return 1; }
}
il_vm_down() { [ "$IL_VM_IS_UP" = 1 ] && "$IL_PEER" down "$IL_VM" "$IL_TAP" >/dev/null 2>&1; IL_VM_IS_UP=0; return 0; }

# il_vm_exec [--timeout S] -- CMD...: run in the guest, exit status = CMD's (143 when killed)
il_vm_exec() { "$IL_PEER" exec "$IL_VM" "$@"; }

# il_wait_guest_listen PORT TIMEOUT_S: until a TCP listener is on PORT in the guest
il_wait_guest_listen() {
  il_vm_exec -- "i=0; while ! ss -ltnH 2>/dev/null | grep -q ':$1 '; do usleep 100000; i=\$((i+1)); [ \$i -ge $(( $2 * 10 )) ] && exit 1; done; exit 0"
}

# il_wait_host_listen PORT TIMEOUT_S [PID]: until a TCP listener is on PORT on the host
# (gives up early when PID has exited)
il_wait_host_listen() {
  local end=$(( $(date +%s) + $2 ))
  while ! ss -ltnH "sport = :$1" 2>/dev/null | grep -q .; do
    [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null && return 1
    [ "$(date +%s)" -ge "$end" ] && return 1
    sleep 0.1
  done
}

# il_run_pair ROLE DIR GUEST_NAME: runs the caller's arrays droce[] and guest[] as one
# case, droce in ROLE. server: droce first, the guest (in the VM) once droce listens on TCP
# IL_PORT; client: the guest first, droce once the guest listens. Both in the background,
# logs DIR/droce.log and DIR/guest.log; once one side has failed the other gets 10 s.
# Sets IL_DRC and IL_GRC (exit codes, -1: not run) and IL_PAIR_WHY ("" or why a side did
# not start, naming GUEST_NAME).
il_run_pair() {
  local role=$1 dir=$2 gname=$3 gpid dpid
  IL_DRC=-1; IL_GRC=-1; IL_PAIR_WHY=""
  if [ "$role" = server ]; then
    il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
    if il_wait_host_listen "$IL_PORT" 30 "$dpid"; then
      il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
      il_wait_pid "$gpid" $((CASE_TIMEOUT + 15)); IL_GRC=$IL_RC
    else IL_PAIR_WHY="droce not listening on TCP $IL_PORT; "; fi
    il_wait_pid "$dpid" "$( [ "$IL_GRC" = 0 ] && echo 30 || echo 10 )"; IL_DRC=$IL_RC
  else
    il_bg "$dir/guest.log" "$IL_PEER" exec "$IL_VM" --timeout "$CASE_TIMEOUT" -- "${guest[@]}"; gpid=$IL_BG
    if il_wait_guest_listen "$IL_PORT" 20 >/dev/null 2>&1; then
      il_bg "$dir/droce.log" "${droce[@]}"; dpid=$IL_BG
      il_wait_pid "$dpid" $((CASE_TIMEOUT + 10)); IL_DRC=$IL_RC
    else IL_PAIR_WHY="guest $gname did not listen; "; fi
    il_wait_pid "$gpid" "$( [ "$IL_DRC" = 0 ] && echo 30 || echo 10 )"; IL_GRC=$IL_RC
  fi
}

# il_capture_start FILE: full-snaplen capture on the tap; sets IL_CAP (pid) once tcpdump listens
il_capture_start() {
  # --immediate-mode: without it packets still in the kernel ring's current block when tcpdump
  # gets SIGINT are lost ("0 packets captured, 817 packets received by filter" on a 2 s run)
  # -B: 64 MiB kernel buffer (KiB units); the default dropped ~20 % of a 64 KiB-message run
  il_bg "$1.log" tcpdump -i "$IL_TAP" -s 0 -B 65536 -U -n --immediate-mode -w "$1"
  IL_CAP=$IL_BG
  local i
  for i in $(seq 50); do grep -q 'listening on' "$1.log" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
il_capture_stop() { # PID FILE: SIGINT lets tcpdump flush; then reap. Status 1 (message in
  # IL_CAPMSG) when the capture is incomplete (captured != received by filter, or kernel drops).
  # Not in $(...): the reaping wait must run in this shell.
  IL_CAPMSG=""
  sleep 0.3
  kill -INT "$1" 2>/dev/null || true
  il_wait_pid "$1" 5
  local cap rcv drop
  cap=$(awk '/packets captured/{print $1}' "$2.log"); rcv=$(awk '/received by filter/{print $1}' "$2.log")
  drop=$(awk '/dropped by kernel/{print $1}' "$2.log")
  if [ -z "$cap" ] || [ "$cap" != "$rcv" ] || [ "${drop:-0}" != 0 ]; then
    IL_CAPMSG="capture incomplete: ${cap:-?} captured, ${rcv:-?} received by filter, ${drop:-?} dropped by kernel"
    return 1
  fi
}

# The display filter for "the dissector found something wrong". tshark decodes UDP 4791 as
# RoCEv2 (RRoCE) by default. Warnings are not counted outside InfiniBand: TCP raises them
# (D-SACK, retransmission) in normal runs of the out-of-band exchange.
IL_TSHARK_FILTER=${IL_TSHARK_FILTER:-'_ws.malformed || _ws.expert.severity >= error || (infiniband && _ws.expert.severity >= warning)'}
# Wireshark 4.0 tries heuristic sub-dissectors on every RoCE payload; RPCoRDMA throws on short
# payloads and flags rxe's own 1-byte SEND Only (and write_bw_cm.pcap) as [Malformed Packet: RPCoRDMA].
# Disable the InfiniBand payload heuristics: the payload is opaque application data here.
IL_TSHARK_OPTS=()
for _p in rpcordma smc smb_direct nvme-rdma lnet iser infiniband_sdp fcoib; do IL_TSHARK_OPTS+=(--disable-protocol "$_p"); done
unset _p

# il_pcap_check FILE: tshark malformed/error check + pcap_check.py (ICRC, IPv4 checksum, lengths,
# no ICMP unreachable, at least one RoCEv2 frame). Prints problems; status 0 when clean.
il_pcap_check() {
  local f=$1 bad rc=0
  [ -s "$f" ] || { echo "no capture $f"; return 1; }
  if ! bad=$(tshark -n "${IL_TSHARK_OPTS[@]}" -r "$f" -Y "$IL_TSHARK_FILTER" 2>/dev/null); then
    echo "tshark failed on $f"; return 1
  fi
  if [ -n "$bad" ]; then
    echo "tshark flags $(wc -l <<<"$bad") frames ($IL_TSHARK_FILTER):"; head -5 <<<"$bad"; rc=1
  fi
  python3 "$IL_DIR/pcap_check.py" --quiet "$f" || rc=1
  return $rc
}

# il_result NAME pass|fail [DETAIL]: one line per case
il_result() {
  if [ "$2" = pass ]; then IL_PASS=$((IL_PASS+1)); echo "PASS $1${3:+ ($3)}"
  else IL_FAIL=$((IL_FAIL+1)); echo "FAIL $1${3:+: $3}"; fi
}
il_summary() {
  [ "$IL_RETRIED" = 0 ] || echo "retried: $IL_RETRIED case(s) failed once and were run again (see RETRY lines)"
  echo "$IL_PASS passed, $IL_FAIL failed"; [ "$IL_FAIL" = 0 ] && [ "$IL_PASS" -gt 0 ]
}

# il_tails DIR: the last lines of each *.log in DIR, indented, so a failure's cause is in the
# output itself (CI keeps the output, not the artifacts)
il_tails() {
  local f
  [ -d "$1" ] || return 0
  for f in "$1"/*.log; do
    [ -s "$f" ] || continue
    echo "    -- ${f##*/} (last 10 lines)"
    tail -n 10 "$f" | cut -c1-200 | sed 's/^/    | /'
  done
}

# il_vm_healthy: the guest pings the host over the tap and rxe0's port is active (a guest that
# does not answer within 20 s is unwell too). A case that failed while this does not hold says
# nothing about droce.
il_vm_healthy() {
  [ "$IL_VM_IS_UP" = 1 ] || return 1
  il_vm_exec --timeout 20 -- "ping -c 2 -W 2 $IL_HOST_IP >/dev/null && ibv_devinfo -d rxe0 | grep -q PORT_ACTIVE" >/dev/null 2>&1 ||
    { il_log "health: the guest does not ping $IL_HOST_IP, rxe0 is not active, or the guest does not answer"; return 1; }
}

# il_case NAME ARGS...: run_case ARGS (which sets CASE_OK, CASE_WHY and may set CASE_DIR) and
# report NAME. A failure prints the logs' last lines, checks the VM (rebooting it with the
# arguments of the last il_vm_up when it is unwell) and runs the case once more: the result
# of the second run counts, and the first failure is printed as a RETRY line. A droce defect
# fails twice; a referee that wedged once (seen: a TCG guest whose every later case timed out)
# does not fail the suite, and its RETRY line stays in the output.
il_case() {
  local name=$1; shift
  CASE_DIR=""
  run_case "$@"
  if [ "$CASE_OK" = 1 ]; then il_result "$name" pass "$CASE_WHY"; return; fi
  echo "RETRY $name: first run failed: $CASE_WHY"
  il_tails "$CASE_DIR"
  IL_RETRIED=$((IL_RETRIED+1))
  if ! il_vm_healthy; then
    il_log "VM unwell after $name: rebooting it (il_vm_up ${IL_VM_UP_ARGS[*]})"
    il_vm_up "${IL_VM_UP_ARGS[@]}" >> "${OUT:-/tmp}/vm-reboot.log" 2>&1 || { il_result "$name" fail "$CASE_WHY; VM reboot failed"; return; }
    # a script that configures the guest after boot (netem) defines il_after_vm_up
    if declare -F il_after_vm_up >/dev/null && ! il_after_vm_up >> "${OUT:-/tmp}/vm-reboot.log" 2>&1; then
      il_result "$name" fail "$CASE_WHY; guest set-up after the reboot failed"; return
    fi
  fi
  CASE_DIR=""
  run_case "$@"
  if [ "$CASE_OK" = 1 ]; then il_result "$name" pass "$CASE_WHY; passed on retry"
  else il_result "$name" fail "$CASE_WHY (failed twice)"; il_tails "$CASE_DIR"; fi
}

# rdma-core's rping before PR #1622 can fail after a good run: its CM thread calls
# rdma_get_cm_event once more after the main thread destroyed the event channel, prints
# "rdma_get_cm_event: Bad file descriptor" and exits -1. True for exactly that: exit 255
# with that line last in LOG. The caller's other checks (every ping, data) still decide.
il_rping_exit_race() { # EXIT_CODE LOG
  [ "$1" = 255 ] && [ "$(grep -v '^[[:space:]]*$' "$2" 2>/dev/null | tail -1)" = "rdma_get_cm_event: Bad file descriptor" ]
}
