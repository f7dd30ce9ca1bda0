#!/usr/bin/env bash
# Built-in capture (--capture, --capture-snaplen, /droce/capture):
#  1. droce-perf <-> droce-perf over net_memif (two processes, --no-huge): write_bw of
#     5000 x 1 KiB and send_bw of 200 x 64 KiB (zero-copy chains on TX): the client
#     captures whole frames, the server with a snap length of 128; both files must validate (check_capture.sh: tshark, no malformed frame, RoCE
#     decoded over UDP 4791 in both directions; whole frames also pass pcap_check.py's
#     ICRC check), and the capture counters must show the packets.
#  2. droce-pingpong --loopback running: /droce/capture over its telemetry socket starts
#     a capture, stops it, refuses a second start, a stop when stopped and a bad path;
#     the file written in between must validate.
#  3. A bad --capture-snaplen is refused with a message.
# Usage: test_capture.sh PATH/TO/droce-perf PATH/TO/droce-pingpong
set -u
perf=${1:?usage: $0 droce-perf droce-pingpong}
pp=${2:?usage: $0 droce-perf droce-pingpong}
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
check=$here/check_capture.sh
work=$(mktemp -d)
sock=$work/memif.sock
port=$((22000 + ($$ + 7000) % 20000))
bgpid=
cleanup() {
    [ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null && wait "$bgpid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
eal=(--no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
counter() { awk -v n="$2" '$1 == n {print $2; exit}' "$1"; }

# memif TEST SIZE ITERS EXTRA...: server on lcore 0 (snap 128), client on lcore 1 (whole
# frames: the ICRC check covers what it sent, zero-copy chains included).
memif() {
    local t=$1 size=$2 iters=$3
    shift 3
    rm -f "$sock" "$work"/*.pcapng
    port=$((port + 1))
    timeout 40 "$perf" "$t" -l 0 "${eal[@]}" --file-prefix "pc-s$$" \
        --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no" -- \
        --ip 10.81.0.1/24 -s "$size" -n "$iters" -p "$port" --timeout 20 --counters \
        --capture "$work/srv.pcapng" --capture-snaplen 128 "$@" >"$work/srv" 2>&1 &
    local srv=$!
    for _ in $(seq 50); do [[ -S $sock ]] && break; sleep 0.1; done
    timeout 40 "$perf" "$t" -l 1 "${eal[@]}" --file-prefix "pc-c$$" \
        --vdev "net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
        --ip 10.81.0.2/24 -s "$size" -n "$iters" -p "$port" --timeout 20 --counters \
        --capture "$work/cli.pcapng" "$@" 127.0.0.1 >"$work/cli" 2>&1
    local rc=$?
    wait "$srv"
    local src=$?
    if [[ $rc -ne 0 || $src -ne 0 ]]; then
        fail "memif $t: client exit $rc, server exit $src"
        tail -n 12 "$work/cli" "$work/srv"
        return
    fi
    local why="" c d before=$fails min=$iters
    [ "$size" -gt 1024 ] && min=$((iters * size / 1024))
    # Copies the writer could not keep up with are dropped and counted (capture_drop_*),
    # never silently: what the file holds plus what was counted must cover the traffic.
    drops() { echo $(( $(counter "$work/$1" capture_drop_ring_full || echo 0) + $(counter "$work/$1" capture_drop_no_mbuf || echo 0) )); }
    why=$("$check" "$work/srv.pcapng" "$(( min - $(drops srv) ))" 128) || fail "memif $t server: $why"
    echo "    $why"
    why=$("$check" "$work/cli.pcapng" "$(( min - $(drops cli) ))") || fail "memif $t client: $why"
    echo "    $why"
    for side in srv cli; do
        c=$(counter "$work/$side" capture_packets)
        d=$(drops "$side")
        [ -n "$c" ] && [ $((c + d)) -gt "$min" ] || fail "memif $t $side: capture_packets '$c' + dropped $d"
        echo "    $side: tx_bytes_zero_copy $(counter "$work/$side" tx_bytes_zero_copy) capture_packets $c drop_ring_full $(counter "$work/$side" capture_drop_ring_full)" \
            "drop_no_mbuf $(counter "$work/$side" capture_drop_no_mbuf)"
    done
    [ $fails = "$before" ] && echo "ok: memif $t $*"
}

memif write_bw 1024 5000
memif send_bw 65536 200 -r 512

# --- telemetry: /droce/capture on a running process ---
rundir=/var/run/dpdk
[ "$(id -u)" = 0 ] || rundir=${XDG_RUNTIME_DIR:-/tmp}/dpdk
# ask CMD...: each command's answer (JSON), one line each.
ask() {
    python3 - "$rundir/droce-$bgpid/dpdk_telemetry.v2" "$@" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(65536)  # the greeting
for cmd in sys.argv[2:]:
    s.send(cmd.encode())
    print(json.dumps(json.loads(s.recv(1 << 20).decode())))
EOF
}
"$pp" --loopback -n 100000000 -s 64 --timeout 300 >"$work/pp.out" 2>&1 &
bgpid=$!
dev=
for _ in $(seq 100); do
    dev=$(ask /droce/devices 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["/droce/devices"][0])' 2>/dev/null) && [ -n "$dev" ] && break
    sleep 0.2
done
if [ -z "$dev" ]; then
    fail "telemetry: no device from /droce/devices"
    cat "$work/pp.out"
else
    f=$work/live.pcapng
    # One connection, no pause between start and stop: the file holds what a few ms of
    # loopback traffic make. (With a second python3 between them it held ~1.2 million
    # frames, and tshark's two passes over them were most of this test's time.)
    ask "/droce/capture,$dev" "/droce/capture,$dev,start,$f,64" "/droce/capture,$dev,start,$f" \
        "/droce/info,$dev" \
        "/droce/capture,$dev" "/droce/capture,$dev,stop" "/droce/capture,$dev,stop" \
        "/droce/capture,$dev,start,/nonexistent-dir/x.pcapng" >"$work/t" 2>&1
    head -n 4 "$work/t" >"$work/t1"
    tail -n +5 "$work/t" >"$work/t2"
    cat "$work/t1" "$work/t2" | sed 's/^/    /'
    line() { sed -n "$2p" "$1"; }
    grep -q '"capture_active": 0' <<<"$(line "$work/t1" 1)" || fail "telemetry: active before start"
    grep -q "\"file\": \"$f\"" <<<"$(line "$work/t1" 2)" || fail "telemetry: start did not report the file"
    grep -q '"capture_active": 1' <<<"$(line "$work/t1" 2)" || fail "telemetry: not active after start"
    grep -q '"error": ".*already capturing' <<<"$(line "$work/t1" 3)" || fail "telemetry: second start not refused"
    grep -q "\"capture\": \"$f\"" <<<"$(line "$work/t1" 4)" || fail "telemetry: /droce/info lacks the file"
    grep -q '"capture_active": 1' <<<"$(line "$work/t2" 1)" || fail "telemetry: not active while running"
    grep -q '"capture_active": 0' <<<"$(line "$work/t2" 2)" || fail "telemetry: still active after stop"
    grep -q '"error": ".*not capturing' <<<"$(line "$work/t2" 3)" || fail "telemetry: stop when stopped not refused"
    grep -q '"error": "capture: /nonexistent-dir/x.pcapng: No such file' <<<"$(line "$work/t2" 4)" ||
        fail "telemetry: bad path not refused"
    why=$("$check" "$f" 100 64) || fail "telemetry capture: $why"
    echo "    $why"
    kill "$bgpid" 2>/dev/null
    wait "$bgpid" 2>/dev/null
    bgpid=
    [ $fails = 0 ] && echo "ok: telemetry start/stop"
fi

# --- a bad snap length ---
if "$pp" "${eal[@]}" -l 0 -- --loopback --capture "$work/x.pcapng" --capture-snaplen 10 \
    >"$work/bad" 2>&1; then
    fail "--capture-snaplen 10 accepted"
elif ! grep -q "invalid value '10' for --capture-snaplen" "$work/bad"; then
    fail "--capture-snaplen 10: no message"
    cat "$work/bad"
else
    echo "ok: --capture-snaplen 10 refused"
fi

if [[ $fails -ne 0 ]]; then echo "$fails check(s) failed"; exit 1; fi
echo "capture: all checks passed"
