#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The soak over memif (issue 15): bench_soak's two devices as net_memif clients in worker
# mode (several workers), joined by a separate droce-fabric process that injects the
# faults (loss at its bottleneck, duplication, reordering, corruption, delay). Starts the
# forwarder, runs the soak, stops the forwarder, prints both summaries, checks that every
# fault kind asked for was injected at least once (a clean run through a wire that did
# nothing proves nothing), writes the soak's CSV and PNG and cleans up.
#
# Usage: bench/soak_memif.sh BUILD_DIR MINUTES CSV [options]
#   --loss P --dup P --reorder P --corrupt P --delay-us D   the forwarder's faults
#                                (defaults 0.01 0.01 0.01 0.005 0)
#   --seed N                     the forwarder's and the soak's seed (default 1)
#   --rate-gbps R                the forwarder's rate each way (default 10)
#   any other --x=y option goes to bench_soak (--qps=1024 --max-size=1048576
#   --workers=2 --interval=60 --ack-timeout=16 (~270 ms) --inflight-bytes=4194304 are
#   the defaults here: at most 4 MiB of WRs in flight, the forwarder's buffer is 8 MB)
# Exit status: the soak's (1 on any data or WR error), 1 if a fault kind was never
# injected, 2 on a set-up failure. Run it under the heavy-job lock on a shared machine.
set -u
# shellcheck source=../scripts/fabric_ready.sh
. "$(dirname "$0")/../scripts/fabric_ready.sh"
build=${1:?usage: $0 BUILD_DIR MINUTES CSV [options]}
minutes=${2:?minutes}
csv=${3:?csv}
shift 3
loss=0.01 dup=0.01 reorder=0.01 corrupt=0.005 delay=0 seed=1 rate=10
soak_args=(--qps=1024 --max-size=1048576 --workers=2 --interval=60 --ack-timeout=16 --inflight-bytes=4194304)
while [ $# -gt 0 ]; do
    case $1 in
    --loss) loss=$2; shift 2 ;;
    --dup) dup=$2; shift 2 ;;
    --reorder) reorder=$2; shift 2 ;;
    --corrupt) corrupt=$2; shift 2 ;;
    --delay-us) delay=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --rate-gbps) rate=$2; shift 2 ;;
    --loss=* | --dup=* | --reorder=* | --corrupt=* | --delay-us=* | --seed=* | --rate-gbps=*)
        k=${1%%=*}; set -- "$k" "${1#*=}" "${@:2}" ;;
    --*=*) soak_args+=("$1"); shift ;;
    *) echo "soak_memif.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
fab=$build/apps/droce-fabric/droce-fabric
soak=$build/bench/bench_soak
work=$(mktemp -d /tmp/droce-soak-memif.XXXXXX)
fpid=
cleanup() {
    [ -n "$fpid" ] && kill "$fpid" 2>/dev/null && wait "$fpid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

# The forwarder: memif server for both sockets; both ports are bottlenecks with RED/ECN
# (DCQCN at the devices answers the marks), faults toward both. The rate paces delivery
# to what the soak's workers take on cores they share with it: a memif ring the receiver
# cannot drain overflows (tx_full), a loss far beyond the one asked for, and a 1,024-QP
# go-back-N storm. One queue per port per worker: a peer with two workers brings two
# rings. --idle-us: it shares two cores with the soak's threads. --secs bounds it if this
# script dies.
workers=2
for a in "${soak_args[@]}"; do [[ $a == --workers=* ]] && workers=${a#*=}; done
"$fab" -l 0 --no-huge -m 512 --no-pci --no-shconf --log-level='*:warning' \
    --file-prefix "soakfab$$" \
    "--vdev=net_memif0,role=server,socket=$work/a.sock,socket-abstract=no" \
    "--vdev=net_memif1,role=server,socket=$work/b.sock,socket-abstract=no" -- \
    --to 0,1 --rate-gbps "$rate" --buffer 8000000 --queues "$workers" \
    --loss "$loss" --dup "$dup" --reorder "$reorder" --corrupt "$corrupt" --delay-us "$delay" \
    --seed "$seed" --idle-us 20 --secs "$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 + 600 }')" >"$work/fabric.log" 2>&1 &
fpid=$!
if ! fabric_ready "$work/fabric.log" "$fpid"; then
    echo "soak_memif.sh: droce-fabric did not come up" >&2
    cat "$work/fabric.log" >&2
    exit 2
fi
"$soak" --minutes="$minutes" --csv="$csv" --seed="$seed" --memif="$work" "${soak_args[@]}"
rc=$?
kill -INT "$fpid" 2>/dev/null
wait "$fpid"
fpid=
echo
echo "forwarder (droce-fabric, $rate Gb/s, loss $loss dup $dup reorder $reorder corrupt $corrupt delay ${delay} us):"
grep -E '^(port|faults|flooded)' "$work/fabric.log"
# frames lost at the bottlenecks (both ports)
lost=$(awk '$1 == "port" { for (i = 1; i < NF; ++i) if ($i == "dropped_loss") s += $(i + 1) }
            END { print s + 0 }' "$work/fabric.log")
read -r fdup freo fcor < <(awk '$1 == "faults" { print $3, $5, $7 }' "$work/fabric.log")
echo "faults injected: lost $lost, duplicated ${fdup:-0}, reordered ${freo:-0}, corrupted ${fcor:-0}"
never=
awk -v p="$loss" 'BEGIN { exit !(p > 0) }' && [ "$lost" = 0 ] && never+=" loss"
awk -v p="$dup" 'BEGIN { exit !(p > 0) }' && [ "${fdup:-0}" = 0 ] && never+=" dup"
awk -v p="$reorder" 'BEGIN { exit !(p > 0) }' && [ "${freo:-0}" = 0 ] && never+=" reorder"
awk -v p="$corrupt" 'BEGIN { exit !(p > 0) }' && [ "${fcor:-0}" = 0 ] && never+=" corrupt"
if [ -n "$never" ]; then
    echo "FAIL: fault kind never injected:$never (the run proves nothing about it)"
    [ "$rc" = 0 ] && rc=1
fi
exit "$rc"
