#!/usr/bin/env bash
# Interop, NVMe-oF: the Linux kernel NVMe/RDMA initiator (nvme-rdma on Soft-RoCE, nvme-cli) in
# the rxe VM against droce-nvmf.
#
#   tests/interop/nvmf_rxe.sh [options] PATH/TO/BUILD_DIR
#
# Cases (path MTU 1024; RDMA-CM on QP1 of both sides; port 4420):
#   nvmf-ram   droce-nvmf --config (a file whose [nvmf] has serial S, host H and two RAM
#              namespaces: the guest sees nvmeXn2 and S): in the guest `nvme discover` lists the subsystem, a host
#              NQN not H is refused (`nvme connect` fails, the target counts Connect Invalid
#              Host), `nvme connect -q H`
#              makes /dev/nvmeXnY, a random pattern is written with dd oflag=direct and read
#              back with iflag=direct (SHA-256 equal, plus a 4 KiB-block pass at an offset, and
#              4 concurrent dd streams of random 4 KiB blocks each read back at once),
#              an nvme-cli passthrough read of the block past the end (the block layer
#              would refuse it itself) gets LBA Out of Range (0x80) back,
#              `nvme disconnect` is clean; then droce-nvmf gets SIGTERM and must exit 0 with
#              no RDMA error, READ failure or post failure in its counters.
#   nvmf-file  the same on --file (O_DIRECT worker), then droce-nvmf is restarted on the same
#              file and the guest reads the pattern back again (it persisted).
# One PASS/FAIL line per case, then "N passed, N failed"; exit 1 on any failure. One VM boot; own
# tap/subnet/VM name (tap-nvmf, 10.86.0.0/24, nvmfvm). Run as root.
# Options:
#   --out DIR         artifacts (default: a new /tmp/droce-nvmf-interop.XXXXXX)
#   --cases LIST      default "ram file"
#   --mib N           pattern size in MiB (default 32, the issue's size)
#   --bench N         also time N runs of small direct dd reads/writes per case (figures)
#   --case-timeout S  per guest command (default 90)
#   --budget S        default 300
set -uo pipefail
export IL_TAP=${IL_TAP:-tap-nvmf} IL_VM=${IL_VM:-nvmfvm} IL_HOST_IP=${IL_HOST_IP:-10.86.0.1}
export IL_VM_IP=${IL_VM_IP:-10.86.0.2} IL_DROCE_IP=${IL_DROCE_IP:-10.86.0.100}
export IL_DROCE_MAC=${IL_DROCE_MAC:-02:00:00:00:08:60}
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

# Wireshark's InfiniBand dissector guesses "EtherType encapsulated" for any SEND payload whose
# first bytes are 08 00 00 00 and then flags the "inner IPv4" as bogus: a response capsule whose
# DW0 is 8 (e.g. Get Features) is exactly that. Not a wire problem: leave those frames out.
IL_TSHARK_FILTER="($IL_TSHARK_FILTER) && !(infiniband.rwh.etype == 0x0800 && ip.version == 0)"

OUT="" CASES="ram file" MIB=32 BENCH=0 CASE_TIMEOUT=90 BUDGET=300 BUILD="" PORT=4420
NQN=nqn.2026-11.io.droce:interop SERIAL=droceinterop42
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:0d0c0e00-0000-4000-8000-00000000d0ce
while (($#)); do case $1 in
  --out) OUT=$2; shift 2;; --cases) CASES=$2; shift 2;; --mib) MIB=$2; shift 2;;
  --bench) BENCH=$2; shift 2;;
  --case-timeout) CASE_TIMEOUT=$2; shift 2;; --budget) BUDGET=$2; shift 2;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0;;
  -*) il_die "unknown option $1";;
  *) [ -z "$BUILD" ] || il_die "one build directory only"; BUILD=$1; shift;;
esac; done
# The 64 MiB namespace: the pattern, then 1 MiB of 4 KiB blocks, then 4 x 4 MiB of streams
[ "$MIB" -ge 1 ] && [ "$MIB" -le 47 ] || il_die "--mib: 1..47 (the namespace is 64 MiB)"
P4K=$((MIB * 256)) # the first 4 KiB block past the pattern
CONNECT="nvme connect -t rdma -a $IL_DROCE_IP -s $PORT -n $NQN"
DROCE_EAL=${DROCE_EAL:--l 0 --no-huge -m 512 --no-pci --no-shconf}
trap il_cleanup EXIT
trap 'exit 130' INT TERM

NV=${BUILD:+$BUILD/apps/droce-nvmf/droce-nvmf}
if [ -z "$BUILD" ] || [ ! -x "$NV" ]; then
  for c in $CASES; do il_result "nvmf-$c" fail "droce-nvmf missing under '${BUILD:-<none>}'"; done
  il_summary; exit 1
fi
NV=$(readlink -f "$NV")
il_require_tools
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/droce-nvmf-interop.XXXXXX)
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
il_log "artifacts in $OUT"
VDEV="net_af_packet0,iface=$IL_TAP,qdisc_bypass=0"
NVPID=""

# start_target DIR LOGNAME BACKEND...: droce-nvmf in the background until it listens
start_target() {
  local dir=$1 log=$2 i; shift 2
  # shellcheck disable=SC2206
  local cmd=("$NV" $DROCE_EAL --vdev "$VDEV" -- --ip "$IL_DROCE_IP/$IL_PREFIX" --mac "$IL_DROCE_MAC"
             --eth-mtu "$IL_ETH_MTU" --counters -v -p "$PORT" --nqn "$NQN" "$@")
  printf '%q ' "${cmd[@]}" > "$dir/$log.cmd"
  il_bg "$dir/$log.log" "${cmd[@]}"; NVPID=$IL_BG
  for i in $(seq 300); do
    grep -q '^listening on' "$dir/$log.log" 2>/dev/null && return 0
    kill -0 "$NVPID" 2>/dev/null || return 1; sleep 0.1
  done
  return 1
}

# stop_target DIR LOGNAME: SIGTERM, exit 0 and clean counters -> status 0, else sets WHY
stop_target() {
  local dir=$1 log=$2 bad
  kill -TERM "$NVPID" 2>/dev/null
  il_wait_pid "$NVPID" 15
  [ "$IL_RC" = 0 ] || CASE_WHY+="droce-nvmf ($log) exit $IL_RC; "
  bad=$(awk '$1 ~ /^(read_failures|post_failures|rdma_wc_errors|rdma_setup_failures|rdma_accept_failures|rdma_post_failures|rdma_wc_unexpected|capsule_too_short|capsule_no_slot|bdev_errors|st_xfer|st_internal)$/ && $2 != 0' "$dir/$log.log")
  [ -z "$bad" ] || CASE_WHY+="droce-nvmf ($log) counters: $(tr '\n' ' ' <<<"$bad"); "
  grep -q '^  capsules [1-9]' "$dir/$log.log" || CASE_WHY+="droce-nvmf ($log) saw no capsule; "
}

# The guest's block device of our subsystem after nvme connect (the only NVMe device there; with
# native multipath the node is the subsystem's nvmeXnY, not the controller's)
GUEST_DEV='d=""; for i in $(seq 100); do for b in /dev/nvme[0-9]*n1; do [ -b "$b" ] && d=$b; done
  [ -n "$d" ] && break; usleep 100000; done'

guest() { # LOG CMD: run CMD in the guest, append its output to LOG; status = CMD's
  il_vm_exec --timeout "$CASE_TIMEOUT" -- "$2" >> "$1" 2>&1
}

run_case() { # KIND -> CASE_OK, CASE_WHY
  local kind=$1 name=nvmf-$1 dir; dir=$OUT/$name; mkdir -p "$dir"; CASE_DIR=$dir
  CASE_OK=0; CASE_WHY=""
  local backend t0; t0=$(date +%s)
  if [ "$kind" = ram ]; then  # from a config file: an allow list of one, two namespaces
    printf '[nvmf]\nserial = %s\nhost = %s\nnamespace = ram:64M\nnamespace = ram:8M\n' \
      "$SERIAL" "$HOSTNQN" > "$dir/nvmf.conf"
    backend=(--config "$dir/nvmf.conf")
  else rm -f "$dir/disk.img"; backend=(--file "$dir/disk.img" --size 64M); fi
  il_capture_start "$dir/capture.pcap" || true
  local cap=${IL_CAP:-} g=$dir/guest.log
  : > "$g"
  if ! start_target "$dir" droce "${backend[@]}"; then
    CASE_WHY+="droce-nvmf did not listen; "
  else
    if ! guest "$g" "nvme discover -t rdma -a $IL_DROCE_IP -s $PORT"; then CASE_WHY+="nvme discover failed; "
    elif ! grep -q "subnqn: *$NQN" "$g"; then CASE_WHY+="discovery log does not list $NQN; "
    elif [ "$kind" = ram ] && guest "$g" "$CONNECT -q nqn.2026-11.io.droce:stranger"; then
      CASE_WHY+="a host not on the allow list connected; "
    elif ! guest "$g" "$CONNECT -q $HOSTNQN"; then CASE_WHY+="nvme connect failed; "
    else
      # The ram case's config file: its serial and its second namespace reach the guest.
      [ "$kind" = ram ] && { guest "$g" "$GUEST_DEV; n2=\${d%n1}n2; for i in \$(seq 50); do
          [ -b \$n2 ] && break; usleep 100000; done; ls -l \$n2; echo serial \$(cat /sys/class/nvme/nvme*/serial)
          [ -b \$n2 ] && grep -q \"^$SERIAL *\$\" /sys/class/nvme/nvme*/serial" ||
        CASE_WHY+="the guest does not see namespace 2 or serial $SERIAL from the config file; "; }
      # The pattern, written and read back whole with 1 MiB direct I/O, then a 4 KiB-block pass
      # at an offset (many small commands, in-capsule writes) read back with 64 KiB blocks.
      local io="$GUEST_DEV; [ -n \"\$d\" ] || { echo no block device; exit 9; }; echo dev \$d
        dd if=/dev/urandom of=/tmp/p bs=1M count=$MIB 2>/dev/null &&
        dd if=/tmp/p of=\$d bs=1M oflag=direct 2>&1 | tail -1 &&
        dd if=\$d of=/tmp/r bs=1M count=$MIB iflag=direct 2>&1 | tail -1 &&
        a=\$(sha256sum < /tmp/p) && b=\$(sha256sum < /tmp/r) && echo \"sha \$a \$b\" && [ \"\$a\" = \"\$b\" ] &&
        dd if=/dev/urandom of=/tmp/q bs=4k count=256 2>/dev/null &&
        dd if=/tmp/q of=\$d bs=4k seek=$P4K oflag=direct 2>&1 | tail -1 &&
        dd if=\$d of=/tmp/s bs=64k skip=$((P4K / 16)) count=16 iflag=direct 2>&1 | tail -1 &&
        a=\$(sha256sum < /tmp/q) && b=\$(sha256sum < /tmp/s) && echo \"sha4k \$a \$b\" && [ \"\$a\" = \"\$b\" ]"
      guest "$g" "$io" || CASE_WHY+="data written and read back differ (or dd failed); "
      # Four concurrent dd streams, each 16 random 4 KiB blocks in its own 4 MiB region (past
      # the pattern and the 4 KiB pass: the file case reads the pattern again after a
      # restart), every block read back at once and compared.
      local conc="$GUEST_DEV; pids=''; for j in 0 1 2 3; do (
          i=0; while [ \$i -lt 16 ]; do b=\$(($P4K + 256 + j * 1024 + RANDOM % 1024))
            dd if=/dev/urandom of=/tmp/w\$j bs=4k count=1 2>/dev/null &&
            dd if=/tmp/w\$j of=\$d bs=4k seek=\$b oflag=direct 2>/dev/null &&
            dd if=\$d of=/tmp/v\$j bs=4k skip=\$b count=1 iflag=direct 2>/dev/null &&
            [ \"\$(sha256sum < /tmp/w\$j)\" = \"\$(sha256sum < /tmp/v\$j)\" ] || { echo \"stream \$j block \$b differs\"; exit 1; }
            i=\$((i + 1)); done ) & pids=\"\$pids \$!\"; done
        rc=0; for p in \$pids; do wait \$p || rc=1; done; echo \"concurrent 4x16 4k rc \$rc\"; exit \$rc"
      guest "$g" "$conc" || CASE_WHY+="concurrent random 4 KiB writes did not read back; "
      # An out-of-range LBA as the initiator sees it: nvme-cli's passthrough skips the block
      # layer's own size check, so the read of the block just past the end (64 MiB / 512 B)
      # reaches the target, which must answer LBA Out of Range (status 0x80).
      if [ "$kind" = ram ]; then
        guest "$g" "$GUEST_DEV; echo oor-begin; nvme read \$d --start-block=$((64 * 2048)) --block-count=0 \
          --data-size=512 --data=/tmp/oor 2>&1; echo \"oor-rc \$?\"; echo oor-end" || true
        sed -n '/^oor-begin$/,/^oor-end$/p' "$g" | grep -q 'oor-rc [1-9]' &&
          sed -n '/^oor-begin$/,/^oor-end$/p' "$g" | grep -qiE 'LBA.*\(0x(40)?80\)' ||
          CASE_WHY+="a read past the end did not give LBA Out of Range (0x80) on the initiator; "
      fi
      [ "$BENCH" -gt 0 ] && bench "$dir" "$kind"
      guest "$g" "nvme disconnect -n $NQN" || CASE_WHY+="nvme disconnect failed; "
    fi
    stop_target "$dir" droce
    [ "$kind" = ram ] && ! grep -q '^  st_connect_host 1$' "$dir/droce.log" &&
      CASE_WHY+="the stranger's Connect was not refused with Connect Invalid Host; "
    [ "$kind" = ram ] && ! grep -q '^  st_lba_range [1-9]' "$dir/droce.log" &&
      CASE_WHY+="the target did not count the out-of-range read (st_lba_range); "
    if [ "$kind" = file ] && [ -z "$CASE_WHY" ]; then  # the data outlives the target
      if ! start_target "$dir" droce2 "${backend[@]}"; then CASE_WHY+="restarted droce-nvmf did not listen; "
      elif ! guest "$g" "$CONNECT -q $HOSTNQN"; then CASE_WHY+="nvme connect after restart failed; "
      else
        guest "$g" "$GUEST_DEV; dd if=\$d of=/tmp/r2 bs=1M count=$MIB iflag=direct 2>&1 | tail -1;
          a=\$(sha256sum < /tmp/p) && b=\$(sha256sum < /tmp/r2) && echo \"sha-restart \$a \$b\" && [ \"\$a\" = \"\$b\" ]" ||
          CASE_WHY+="pattern not there after the restart; "
        guest "$g" "nvme disconnect -n $NQN" || CASE_WHY+="nvme disconnect (restart) failed; "
      fi
      stop_target "$dir" droce2
    fi
  fi
  [ -n "$NVPID" ] && kill -0 "$NVPID" 2>/dev/null && il_kill "$NVPID"
  guest "$g" "nvme disconnect-all" || true
  # A capture the kernel dropped frames of (a loaded 2-core machine; ~33k frames a case) is
  # noted, not failed: the check that matters here is the data's SHA-256.
  local capnote=""
  [ -n "$cap" ] && { il_capture_stop "$cap" "$dir/capture.pcap" || capnote="; $IL_CAPMSG"; }
  local chk
  if [ -f "$dir/capture.pcap" ] && ! chk=$(il_pcap_check "$dir/capture.pcap" 2>&1); then
    echo "$chk" > "$dir/pcap_check.txt"; CASE_WHY+="capture: $(head -1 <<<"$chk"); "
  fi
  if [ -z "$CASE_WHY" ]; then
    CASE_OK=1
    CASE_WHY="$(( $(date +%s) - t0 ))s; $MIB MiB + 1 MiB of 4 KiB blocks + 4 concurrent streams verified"
    [ "$kind" = ram ] && CASE_WHY+=", LBA out of range seen by nvme-cli"
    [ "$kind" = file ] && CASE_WHY+=", still there after a restart"
    CASE_WHY+=$capnote
    rm -f "$dir/capture.pcap" "$dir/disk.img"
  else
    CASE_WHY="${CASE_WHY%; } [logs: $dir]"
  fi
}

# bench DIR KIND: BENCH timed runs each of 1024 4 KiB direct reads, then writes (dd: one
# command in flight). busybox date has no %N: time with /proc/uptime (10 ms ticks, so 1024
# I/Os a run give the per-I/O time to 10 us).
bench() {
  local dir=$1 kind=$2 op
  for op in read write; do
    local cmd
    if [ $op = read ]; then cmd="dd if=\$d of=/dev/null bs=4k count=1024 iflag=direct"
    else cmd="dd if=/tmp/p of=\$d bs=4k count=1024 seek=$P4K oflag=direct"; fi
    guest "$dir/bench.log" "$GUEST_DEV; t() { read a b < /proc/uptime; echo \${a%.*}\${a#*.}; }
      for i in \$(seq $BENCH); do s=\$(t); $cmd 2>/dev/null || echo dd failed; e=\$(t)
      echo \"bench $kind $op 4k x1024 cs \$((e - s))\"; done"
  done
}

il_log "booting VM (path MTU 1024)"
vm_ok=1
il_vm_up 1024 > "$OUT/vm.log" 2>&1 || vm_ok=0
il_log "VM up: $vm_ok"
for c in $CASES; do
  name=nvmf-$c
  if [ $vm_ok = 0 ]; then il_result "$name" fail "VM boot failed (see $OUT/vm.log)"; continue; fi
  if [ "$(il_elapsed)" -ge "$BUDGET" ]; then il_result "$name" fail "not run: budget ${BUDGET}s used up"; continue; fi
  il_case "$name" "$c"
done
il_vm_down
il_log "done in $(il_elapsed)s"
il_summary
