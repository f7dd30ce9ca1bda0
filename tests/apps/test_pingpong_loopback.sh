#!/usr/bin/env bash
# droce-pingpong --loopback: the in-process demo (two devices on a net_ring pair, server
# and client in one thread, no hugepages) must finish, print ibv_rc_pingpong's summary
# lines for both sides and exit 0; bad command lines must exit 1 with a message.
# Usage: test_pingpong_loopback.sh PATH/TO/droce-pingpong
set -u
exe=${1:?usage: $0 PATH/TO/droce-pingpong}
# No hugepages, no PCI, no shared runtime dir (other DPDK processes may be running).
eal=(-l 0 --no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
fails=0
out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; fails=$((fails + 1)); }

# run_ok DESCRIPTION SIZE ITERS ARGS...: loopback run that must succeed.
run_ok() {
    local desc=$1 size=$2 iters=$3; shift 3
    local bytes=$((size * iters * 2))
    "$exe" "${eal[@]}" -- --loopback --timeout 60 -s "$size" -n "$iters" "$@" >"$out" 2>"$err"
    local rc=$?
    if [[ $rc -ne 0 ]]; then fail "$desc: exit $rc"; return; fi
    for side in server client; do
        grep -Eq "^\[$side\]   local address:  LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:10\.0\.0\.[12]$" "$out" \
            || { fail "$desc: no $side local address line"; return; }
        grep -Eq "^\[$side\]   remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID ::ffff:10\.0\.0\.[12]$" "$out" \
            || { fail "$desc: no $side remote address line"; return; }
        grep -Eq "^\[$side\] $bytes bytes in [0-9]+\.[0-9]{2} seconds = [0-9.]+ Mbit/sec$" "$out" \
            || { fail "$desc: no $side bytes summary line ($bytes bytes)"; return; }
        grep -Eq "^\[$side\] $iters iters in [0-9]+\.[0-9]{2} seconds = [0-9.]+ usec/iter$" "$out" \
            || { fail "$desc: no $side iters summary line"; return; }
    done
    if grep -q "invalid data" "$out"; then fail "$desc: -c found invalid data"; return; fi
    echo "ok: $desc"
    grep -E "bytes in|iters in" "$out" | sed 's/^/    /'
}

# run_bad DESCRIPTION PATTERN ARGS...: command line that must exit 1 with PATTERN on stderr.
run_bad() {
    local desc=$1 pattern=$2; shift 2
    "$exe" "$@" >"$out" 2>"$err"
    local rc=$?
    if [[ $rc -ne 1 ]]; then fail "$desc: exit $rc, expected 1"; return; fi
    if ! grep -q -- "$pattern" "$err"; then fail "$desc: stderr lacks '$pattern'"; return; fi
    if ! grep -q "^Usage:" "$err"; then fail "$desc: no usage on stderr"; return; fi
    echo "ok: $desc"
}

run_ok "-s 1 -n 100 -c" 1 100 -c
run_ok "-s 4096 -n 100 -c" 4096 100 -c
# ibv_ud_pingpong's mode: UD QPs, the largest message the 1024 path MTU carries.
run_ok "--ud -s 1024 -n 200 -c" 1024 200 --ud -c
"$exe" "${eal[@]}" -- --loopback --timeout 60 --ud -s 2048 -n 10 >"$out" 2>"$err"
if [[ $? -eq 1 ]] && grep -q "Requested size larger than port MTU (1024)" "$err"; then
    echo "ok: --ud -s 2048 refused (larger than the MTU, as ibv_ud_pingpong)"
else fail "--ud -s 2048: expected exit 1 and 'Requested size larger than port MTU (1024)'"; fi
run_ok "-s 65536 -m 1024 -n 100 -c (64 packets per message)" 65536 100 -m 1024 -c
run_ok "-s 4096 -n 50 -r 4 (small receive queue)" 4096 50 -r 4

# -e: each side's CQ on a completion channel, the loop asleep on it between completions
# (worker mode: a second lcore runs the engine). Both sides must have taken events.
"$exe" -l 0,1 --no-huge -m 512 --no-pci --no-shconf --log-level='*:warning' -- \
    --loopback --worker -e --timeout 60 -s 4096 -n 300 -c >"$out" 2>"$err"
rc=$?
if [[ $rc -ne 0 ]]; then fail "-e: exit $rc"
elif ! grep -q "^\[server\] 300 iters in" "$out" || ! grep -q "^\[client\] 300 iters in" "$out"; then
    fail "-e: no iters summary lines"
elif grep -q "invalid data" "$out"; then fail "-e: -c found invalid data"
elif ! grep -Eq "^\[server\] [1-9][0-9]* completion events$" "$out" ||
    ! grep -Eq "^\[client\] [1-9][0-9]* completion events$" "$out"; then
    fail "-e: a side took no completion events"
else echo "ok: -e: $(grep -h 'completion events' "$out" | tr '\n' ' ')"; fi

# IPv6 GIDs (-g 2: fd00::1/2, -g 0: link-local) and a VLAN with PCP from -l: the GID the
# tool reports is the IPv6 one, the data checks, nothing is dropped on the VLAN.
run_v6() {
    local desc=$1 want=$2; shift 2
    "$exe" "${eal[@]}" -- --loopback --timeout 60 -s 4096 -n 100 -c --counters "$@" >"$out" 2>"$err"
    local rc=$?
    if [[ $rc -ne 0 ]]; then fail "$desc: exit $rc"; return; fi
    grep -Eq "^\[server\]   local address:  .*GID $want$" "$out" || { fail "$desc: GID not $want"; return; }
    grep -Eq "^\[client\] 100 iters in" "$out" || { fail "$desc: no summary"; return; }
    if grep -q "invalid data" "$out"; then fail "$desc: -c found invalid data"; return; fi
    if grep -Eq "rx_drop_vlan_mismatch +[1-9]|rx_drop_not_our_ip +[1-9]" "$out"; then
        fail "$desc: drops"; return
    fi
    echo "ok: $desc"
}
run_v6 "-g 2 (IPv6 GID) --vlan 100 -l 3" "fd00::1" -g 2 --vlan 100 -l 3
run_v6 "-g 0 (link-local GID)" "fe80::.*" -g 0

run_bad "unknown long flag" "unknown option" -- --loopback --no-such-flag
run_bad "unknown short flag" "unknown option" -- --loopback -z
run_bad "bad size" "invalid value 'abc' for -s/--size" -- --loopback -s abc
run_bad "bad mtu" "invalid value '1000' for -m/--mtu" -- --loopback -m 1000
run_bad "ib port 2" "invalid value '2' for -i/--ib-port" -- --loopback -i 2
run_bad "odp" "on-demand paging" -- --loopback -o
run_bad "-e in embedded mode" "add --worker" -- --loopback -e
run_bad "missing value" "needs a value" -- --loopback -n
run_bad "bad IPv6 --ip" "invalid value 'fd::1' for --ip" -- --ip fd::1
run_bad "bad --vlan" "invalid value '4095' for --vlan" -- --loopback --vlan 4095
run_bad "no --ip outside loopback" "--ip A.B.C.D/P is required" -- 10.0.0.9

"$exe" -h >"$out" 2>"$err"
if [[ $? -eq 0 ]] && grep -q -- "--loopback" "$out"; then echo "ok: -h"; else fail "-h"; fi

if [[ $fails -ne 0 ]]; then echo "$fails check(s) failed"; exit 1; fi
echo "all pingpong loopback checks passed"
