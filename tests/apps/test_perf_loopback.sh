#!/usr/bin/env bash
# droce-perf --loopback: every mode (both sides in one process over a net_ring pair, one
# thread, no hugepages) must finish with exit 0 and print perftest's table header and a
# row; bad command lines must exit 1 with a one-line message.
# Usage: test_perf_loopback.sh PATH/TO/droce-perf
set -u
exe=${1:?usage: $0 PATH/TO/droce-perf}
eal=(-l 0 --no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
fails=0
out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; fails=$((fails + 1)); }

BW_HDR=' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]'
LAT_HDR=' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] '

# run_ok MODE ARGS...
run_ok() {
    local mode=$1; shift
    timeout 120 "$exe" "$mode" "${eal[@]}" -- --loopback --timeout 90 "$@" >"$out" 2>"$err"
    local rc=$? hdr=$BW_HDR
    [[ $mode == *_lat ]] && hdr=$LAT_HDR
    [[ " $* " == *" --report_gbits "* ]] && hdr=${BW_HDR//MB\/sec/Gb\/sec}
    if [[ $rc -ne 0 ]]; then fail "$mode $*: exit $rc"; return; fi
    grep -qxF -- "$hdr" "$out" || { fail "$mode $*: no table header"; return; }
    grep -Eq '^ [0-9]+ +[0-9]+ +[0-9]+\.[0-9]{2}' "$out" || { fail "$mode $*: no result row"; return; }
    echo "ok: $mode $*"; grep -A1 -F -- "#bytes" "$out" | tail -1 | sed 's/^/   /'
}

run_bad() { # DESCRIPTION PATTERN ARGS...
    local desc=$1 pattern=$2; shift 2
    "$exe" "$@" >"$out" 2>"$err"
    local rc=$?
    if [[ $rc -ne 1 ]]; then fail "$desc: exit $rc, expected 1"; return; fi
    grep -q -- "$pattern" "$err" || { fail "$desc: stderr lacks '$pattern'"; return; }
    [[ $(wc -l <"$err") -eq 1 ]] || { fail "$desc: more than one line on stderr"; return; }
    echo "ok: $desc"
}

for m in write_bw read_bw send_bw atomic_bw; do run_ok "$m" -n 200; done
for m in write_lat read_lat send_lat atomic_lat; do run_ok "$m" -n 200; done
run_ok write_bw -s 4096 -n 100 --report_gbits
run_ok read_lat -s 65536 -n 50
run_ok send_bw -s 1 -n 500 -t 16 -r 32
run_ok atomic_bw -A CMP_AND_SWAP -n 100

run_bad "unknown mode" "unknown MODE" foo_bw
run_bad "unknown long flag" "unknown option" write_bw -- --loopback --no-such-flag
run_bad "unknown short flag" "unknown option '-z'" write_bw -- --loopback -z
run_bad "size 0" "invalid value '0' for -s/--size" write_bw -- --loopback -s 0
run_bad "size too big" "for -s/--size" write_bw -- --loopback -s 16777216
run_bad "atomic size" "atomic tests use 8-byte messages" atomic_bw -- --loopback -s 64
run_bad "bad mtu" "for -m/--mtu" write_bw -- --loopback -m 1000
run_bad "UD" "RC only" send_bw -- --loopback -c UD
run_bad "bad atomic type" "FETCH_AND_ADD or CMP_AND_SWAP" atomic_bw -- --loopback -A XOR
run_bad "two QPs" "for -q/--qp" write_bw -- --loopback -q 2
run_bad "missing value" "needs a value" write_bw -- --loopback -n
run_bad "no --ip" "--ip A.B.C.D/P is required" write_bw -- 10.0.0.9

"$exe" --help >"$out" 2>"$err"
if [[ $? -eq 0 ]] && grep -q -- "--loopback" "$out"; then echo "ok: --help"; else fail "--help"; fi

if [[ $fails -ne 0 ]]; then echo "$fails check(s) failed"; exit 1; fi
echo "all perf loopback checks passed"
