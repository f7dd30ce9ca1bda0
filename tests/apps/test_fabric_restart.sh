#!/usr/bin/env bash
# droce-perf -> droce-fabric -> droce-perf over net_memif, the fabric killed (SIGKILL) in the
# middle of a timed write_bw and started again a second later: both droce-perf processes are
# memif clients, which DPDK 22.11 connects only when their port starts. The engine restarts a
# client port while its link is down (engine_link.cpp): refused while no fabric listens
# (link_reconnect_failed), connected once the new one is up. The run must end on both sides
# with its row, every WR successful (RC retransmits what the dead fabric lost; -u 18 gives
# the QPs ~8.6 s), and each side must have reconnected (link_reconnects, link_up_events)
# without polling its port while a failed restart left it stopped.
# Usage: test_fabric_restart.sh PATH/TO/droce-fabric PATH/TO/droce-perf
set -u
# shellcheck source=../../scripts/fabric_ready.sh
. "$(dirname "$0")/../../scripts/fabric_ready.sh"
fab=${1:?usage: $0 droce-fabric droce-perf}
perf=${2:?usage: $0 droce-fabric droce-perf}
work=$(mktemp -d)
port=$((22000 + $$ % 20000))
fpid= spid= cpid=
trap 'kill "$fpid" "$spid" "$cpid" 2>/dev/null; rm -rf "$work"' EXIT
eal=(--no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')

# start_fabric N: a fabric on sockets s0 and s1 (whatever a dead one left is removed first).
start_fabric() {
    rm -f "$work"/s0 "$work"/s1
    timeout 60 "$fab" -l 0 "${eal[@]}" --file-prefix "fabr$$" \
        --vdev="net_memif0,role=server,socket=$work/s0,socket-abstract=no" \
        --vdev="net_memif1,role=server,socket=$work/s1,socket-abstract=no" -- \
        --to 1 --rate-gbps 100 >"$work/fab$1" 2>&1 &
    fpid=$!
    fabric_ready "$work/fab$1" "$fpid" ||
        { echo "FAIL: droce-fabric $1 did not start its ports"; cat "$work/fab$1"; exit 1; }
}

start_fabric 1
common=(-s 4096 -D 8 -u 18 -p "$port" --timeout 40 --counters)
timeout 50 "$perf" write_bw -l 1 "${eal[@]}" --file-prefix "frsrv$$" \
    --vdev="net_memif0,role=client,socket=$work/s1,socket-abstract=no" -- \
    --ip 10.79.0.1/24 --mac 02:00:00:00:03:01 "${common[@]}" >"$work/srv" 2>&1 &
spid=$!
sleep 1
timeout 50 "$perf" write_bw -l 1 "${eal[@]}" --file-prefix "frcli$$" \
    --vdev="net_memif0,role=client,socket=$work/s0,socket-abstract=no" -- \
    --ip 10.79.0.2/24 --mac 02:00:00:00:03:02 "${common[@]}" 127.0.0.1 >"$work/cli" 2>&1 &
cpid=$!
sleep 3
# The fabric itself, not the timeout(1) above it.
pkill -KILL -P "$fpid"
wait "$fpid" 2>/dev/null
sleep 1
start_fabric 2
wait "$cpid"
crc=$?
wait "$spid"
src=$?
kill -INT "$fpid"
wait "$fpid"

fail=0
row=$(awk '$1 == 4096 && NF >= 5' "$work/cli")
if [[ $crc -ne 0 || $src -ne 0 || -z $row ]]; then
    echo "FAIL: client exit $crc, server exit $src (124 = killed by timeout)"
    tail -n 15 "$work/cli" "$work/srv" "$work/fab2"
    exit 1
fi
cnt() { awk -v n="$2" '$1 == n { print $2 }' "$work/$1"; }
for side in cli srv; do
    rec=$(cnt $side link_reconnects) up=$(cnt $side link_up_events)
    failed=$(cnt $side link_reconnect_failed)
    echo "$side: link_reconnects ${rec:-none}, link_reconnect_failed ${failed:-none}," \
        "link_up_events ${up:-none}"
    [[ ${rec:-0} -ge 1 && ${up:-0} -ge 1 ]] ||
        { echo "FAIL: $side did not reconnect"; fail=1; }
done
# While no fabric listened (1 s at least), a restart's connect() was refused on one side
# or the other.
[[ $(($(cnt cli link_reconnect_failed) + $(cnt srv link_reconnect_failed))) -ge 1 ]] ||
    { echo "FAIL: no restart found the fabric gone"; fail=1; }
# A port left stopped by a failed restart is not polled: ethdev's dummy burst functions
# would say so (once, with a stack dump).
if grep -H 'not ready port' "$work/cli" "$work/srv"; then
    echo "FAIL: the engine polled a stopped port"
    fail=1
fi
if [[ $fail -ne 0 ]]; then
    tail -n 40 "$work/cli" "$work/srv"
    exit 1
fi
echo "ok: write_bw through a fabric restart: $row"
