#!/usr/bin/env bash
# droce-fabric with two memif clients coming and going (drivers/poll_gate.h): in each round
# two memif_peer processes connect, flood each other through the fabric at full rate, and
# leave as a peer can: one ends without a goodbye (exit), stops its port (stop), or is
# SIGKILLed (kill), the other in the next way, mid-flood. The fabric polls both ports the
# whole time and must survive every round (memif's disconnect unmaps the rings on the EAL's
# interrupt thread: before the gate, a SIGSEGV in librte_net_memif, seen in CI), forward
# frames in every round, and end cleanly on SIGINT.
# Usage: test_fabric_leave.sh PATH/TO/droce-fabric PATH/TO/memif_peer [rounds]
# (rounds: default $DROCE_MEMIF_LEAVE_ITERS or 6; the long loop: 300)
set -u
# shellcheck source=../../scripts/fabric_ready.sh
. "$(dirname "$0")/../../scripts/fabric_ready.sh"
fab=${1:?usage: $0 droce-fabric memif_peer [rounds]}
peer=${2:?usage: $0 droce-fabric memif_peer [rounds]}
rounds=${3:-${DROCE_MEMIF_LEAVE_ITERS:-6}}
work=$(mktemp -d)
fpid= p0= p1=
trap 'kill -9 "$p0" "$p1" 2>/dev/null; kill "$fpid" 2>/dev/null; rm -rf "$work"' EXIT

"$fab" -l 0 --no-huge -m 512 --no-pci --no-shconf --log-level='*:warning' \
    --file-prefix "fabl$$" \
    --vdev="net_memif0,role=server,socket=$work/s0,socket-abstract=no" \
    --vdev="net_memif1,role=server,socket=$work/s1,socket-abstract=no" -- \
    >"$work/fab" 2>&1 &
fpid=$!
fabric_ready "$work/fab" "$fpid" ||
    { echo "FAIL: droce-fabric did not start its ports"; cat "$work/fab"; exit 1; }

ways=(exit stop kill)
for ((r = 0; r < rounds; r++)); do
    w0=${ways[$((r % 3))]} w1=${ways[$(((r + 1) % 3))]}
    ms0=$((5 + RANDOM % 40)) ms1=$((5 + RANDOM % 40))
    [[ $w0 == kill ]] && a0=60000 || a0=$ms0
    [[ $w1 == kill ]] && a1=60000 || a1=$ms1
    "$peer" --socket "$work/s0" --leave "$w0" --ms "$a0" --src-mac 02:00:00:00:4d:10 \
        >"$work/p0" 2>&1 &
    p0=$!
    "$peer" --socket "$work/s1" --leave "$w1" --ms "$a1" --src-mac 02:00:00:00:4d:11 \
        >"$work/p1" 2>&1 &
    p1=$!
    # both up (or gone), then the flood runs while they leave
    for ((i = 0; i < 200; i++)); do
        grep -q up "$work/p0" && grep -q up "$work/p1" && break
        sleep 0.05
    done
    if ! grep -q up "$work/p0" || ! grep -q up "$work/p1"; then
        echo "FAIL: round $r: a peer did not come up"; cat "$work/p0" "$work/p1" "$work/fab"
        exit 1
    fi
    [[ $w0 == kill ]] && { sleep "0.0$((ms0 % 10))"; kill -9 "$p0"; }
    [[ $w1 == kill ]] && { sleep "0.0$((ms1 % 10))"; kill -9 "$p1"; }
    wait "$p0" 2>/dev/null
    wait "$p1" 2>/dev/null
    p0= p1=
    if ! kill -0 "$fpid" 2>/dev/null; then
        wait "$fpid"
        echo "FAIL: droce-fabric died in round $r ($w0 / $w1), exit $?"
        tail -n 20 "$work/fab"
        exit 1
    fi
done
kill -INT "$fpid"
wait "$fpid"
frc=$?
if [[ $frc -ne 0 ]]; then
    echo "FAIL: droce-fabric exit $frc"; tail -n 20 "$work/fab"; exit 1
fi
# Both ports forwarded what the peers sent.
read -r rx0 rx1 < <(awk '/^port 0: rx/ {a = $4} /^port 1: rx/ {b = $4} END {print a + 0, b + 0}' "$work/fab")
echo "droce-fabric survived $rounds rounds of peers leaving; port rx $rx0 / $rx1"
grep -E '^(port|poll gate)' "$work/fab"
if [[ $rx0 -lt $((rounds * 1000)) || $rx1 -lt $((rounds * 1000)) ]]; then
    echo "FAIL: too little traffic through the fabric"; exit 1
fi
echo PASS
