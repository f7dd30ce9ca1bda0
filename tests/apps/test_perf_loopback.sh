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
    last=""
    if [[ $rc -ne 0 ]]; then fail "$mode $*: exit $rc"; return; fi
    grep -qxF -- "$hdr" "$out" || { fail "$mode $*: no table header"; return; }
    grep -Eq '^ [0-9]+ +[0-9]+ +[0-9]+\.[0-9]{2}' "$out" || { fail "$mode $*: no result row"; return; }
    last="ok: $mode $*"; echo "$last"; grep -A1 -F -- "#bytes" "$out" | tail -1 | sed 's/^/   /'
}

# run_q MODE Q N ARGS...: -q Q -n N; as perftest, every QP runs N iterations and the row
# counts all of them (Q x N); the banner says Q QPs; every QP's data reached its own slice
# on the other side (droce-perf --loopback's data check).
run_q() {
    local mode=$1 q=$2 n=$3; shift 3
    run_ok "$mode" -q "$q" -n "$n" "$@"
    [[ $(tail -1 <<<"$last") == ok:* ]] || return
    grep -qF " Number of qps   : $q	" "$out" || { fail "$mode -q $q: banner lacks 'Number of qps : $q'"; return; }
    local iters; iters=$(grep -A1 -F -- "#bytes" "$out" | tail -1 | awk '{print $2}')
    [[ $iters == $((q * n)) ]] || { fail "$mode -q $q -n $n: row counts $iters iterations, expected $((q * n))"; return; }
    grep -qxF " data check: $q of $q QPs' data in place" "$out" || { fail "$mode -q $q: no data check line"; return; }
    [[ $(grep -c '^ local address' "$out") == "$q" && $(grep -c '^ remote address' "$out") == "$q" ]] ||
        { fail "$mode -q $q: expected $q local and $q remote address lines"; return; }
    echo "ok:   $q QPs x $n = $iters iterations, data in place"
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
run_q write_bw 2 100 -s 4096
run_q write_bw 8 50 -s 4096
run_q read_bw 2 50 -s 8192
run_q send_bw 8 40 -s 1024 -t 16 -r 32
run_q atomic_bw 8 30
run_q atomic_bw 2 30 -A CMP_AND_SWAP
run_q write_bw 3 20 -s 65536 --workers 1
# -Q: a completion per 100 WRs of a QP; 250 per QP ends on a partial batch (its last WR is
# signaled and counts 50), and a timed run stops on a batch boundary (exit 0, no hang).
run_q write_bw 3 250 -s 64 -Q 100
run_q send_bw 2 90 -s 64 -Q 16 -t 32 -r 64
run_ok write_bw -s 64 -D 1 -Q 7 -q 2
# -N (perftest's --noPeak): BW peak prints 0.00, the average is still measured; without it
# the peak of a stamped run is at least the average.
for flags in "-N" "--noPeak" ""; do
    run_ok write_bw -s 64 -n 5000 $flags
    [[ $(tail -1 <<<"$last") == ok:* ]] || continue
    row=$(grep -A1 -F -- "#bytes" "$out" | tail -1)
    read -r _ _ peak avg _ <<<"$row"
    if [[ -n $flags ]]; then
        [[ $peak == 0.00 ]] && awk -v a="$avg" 'BEGIN { exit !(a > 0) }' ||
            fail "write_bw $flags: peak $peak (expected 0.00), average $avg"
    else
        awk -v p="$peak" -v a="$avg" 'BEGIN { exit !(a > 0 && p >= a) }' ||
            fail "write_bw: peak $peak below average $avg"
    fi
done
# -l: WRs posted in lists (one post_send call each); the CQ moderation becomes the list's
# size (perftest's banner line) unless -Q divides it; data checked on every QP.
run_q write_bw 2 1024 -s 64 -l 16
grep -qxF "Post List requested - CQ moderation will be the size of the post list" "$out" ||
    fail "write_bw -l 16: no 'Post List requested' line"
grep -qxF " CQ Moderation   : 16" "$out" || fail "write_bw -l 16: banner lacks 'CQ Moderation : 16'"
run_q send_bw 1 1000 -s 64 -l 8 -Q 4
grep -qxF " CQ Moderation   : 4" "$out" || fail "send_bw -l 8 -Q 4: banner lacks 'CQ Moderation : 4'"
run_ok write_bw -s 64 -D 1 -l 32
run_ok read_bw -s 64 -n 512 -l 8 -q 2
# -u: the QPs' retransmission timeout (perftest's flag; test_fabric_restart.sh needs a long one).
run_ok write_bw -s 64 -n 200 -u 18
# Two workers: three lcores (main + 2 workers) mapped onto the CPUs there are; QPs on both
# workers, data checked.
eal=(--lcores '0@0,1@1,2@0' --no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
run_q write_bw 4 200 -s 4096 --workers 2
run_q send_bw 4 100 -s 1024 -t 16 -r 32 --workers 2
# --threads: one posting thread per block of QPs (its CQ on worker t % workers); one row
# counts every thread's QPs (q x n), every QP's data checked. 3 QPs over 2 threads: 2 + 1.
run_q write_bw 4 200 -s 4096 --workers 2 --threads 2
run_q write_bw 3 100 -s 64 --workers 2 --threads 2
run_q read_bw 2 50 -s 8192 --workers 2 --threads 2
run_q atomic_bw 4 30 --workers 2 --threads 4
run_q send_bw 2 100 -s 1024 -t 16 -r 32 --worker --threads 2
grep -qF " Number of qps   : 2	" "$out" || fail "send_bw --threads 2: banner lacks 'Number of qps : 2'"
# The posting threads are placed off the worker lcores' CPUs (rte_eal_init pinned the
# main thread, which they would inherit) and the banner says where.
grep -qE "^ Posting threads : 2, (on CPUs [0-9]+,[0-9]+ \(one each\)|sharing CPUs [0-9,]+ \()" "$out" ||
    fail "send_bw --threads 2: banner lacks where the posting threads run"
run_ok write_bw -s 64 -D 1 -q 4 --workers 2 --threads 2
eal=(-l 0 --no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')

# -c UD: send_bw and send_lat on UD QPs; sizes above the MTU become the MTU (perftest's
# message), -a stops at the MTU.
run_ok send_lat -c UD -n 300
run_ok send_bw -c UD -n 1000
grep -q "Max msg size in UD is MTU 1024" "$out" || fail "send_bw -c UD: no 'Max msg size in UD is MTU 1024'"
grep -q "Connection type : UD" "$out" || fail "send_bw -c UD: banner lacks 'Connection type : UD'"
run_ok send_bw -c UD -a -n 200

# -e (perftest's use_event): the CQs on a completion channel, idle loops asleep on it;
# worker mode, a second lcore running the engine.
eal1=("${eal[@]}")
eal=(-l 0,1 --no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
for m in send_lat read_lat atomic_lat send_bw write_bw read_bw; do run_ok "$m" --worker -e -n 300; done
run_ok write_bw --worker -e -q 4 -n 200
eal=("${eal1[@]}")
grep -Eq '^ 2048 ' "$out" && fail "send_bw -c UD -a: a size above the MTU was run"

run_bad "unknown mode" "unknown MODE" foo_bw
run_bad "unknown long flag" "unknown option" write_bw -- --loopback --no-such-flag
run_bad "unknown short flag" "unknown option '-z'" write_bw -- --loopback -z
run_bad "size 0" "invalid value '0' for -s/--size" write_bw -- --loopback -s 0
run_bad "size too big" "for -s/--size" write_bw -- --loopback -s 16777216
run_bad "atomic size" "atomic tests use 8-byte messages" atomic_bw -- --loopback -s 64
run_bad "bad mtu" "for -m/--mtu" write_bw -- --loopback -m 1000
run_bad "UD write" "-c UD applies to send_bw and send_lat only" write_bw -- --loopback -c UD
run_bad "bad connection type" "RC, or UD" send_bw -- --loopback -c XRC
run_bad "bad atomic type" "FETCH_AND_ADD or CMP_AND_SWAP" atomic_bw -- --loopback -A XOR
run_bad "zero QPs" "invalid value '0' for -q/--qp (1..16384)" write_bw -- --loopback -q 0
run_bad "too many QPs" "invalid value '16385' for -q/--qp (1..16384)" write_bw -- --loopback -q 16385
run_bad "huge -q" "for -q/--qp" send_bw -- --loopback -q 99999999999999999999
run_bad "-q on a lat test" "multiple QPs only available on bw tests" write_lat -- --loopback -q 2
run_bad "-q on read_lat" "multiple QPs only available on bw tests" read_lat -- --loopback -q 8
run_bad "bad --workers" "for --workers" write_bw -- --loopback --workers 500
run_bad "--workers with --embedded" "--workers other than 1 needs worker mode" write_bw -- --loopback --embedded --workers 2
run_bad "missing value" "needs a value" write_bw -- --loopback -n
run_bad "zero cq-mod" "invalid value '0' for -Q/--cq-mod (1..16384)" write_bw -- --loopback -Q 0
run_bad "-n not a multiple of -l" "must be a multiple of -l/--post_list" write_bw -- --loopback -n 1001 -l 8
run_bad "-l above -t" "a list must fit in the send queue" write_bw -- --loopback -l 200
run_bad "-Q not dividing -l" "must be a multiple of -Q/--cq-mod" write_bw -- --loopback -l 8 -Q 3
run_bad "-l on a lat test" "applies to bw tests only" write_lat -- --loopback -l 2
run_bad "-N on a lat test" "-N/--noPeak applies to bw tests only" write_lat -- --loopback -N
run_bad "bad qp-timeout" "invalid value '32' for -u/--qp-timeout (0..31)" write_bw -- --loopback -u 32
run_bad "no --ip" "--ip A.B.C.D/P is required" write_bw -- 10.0.0.9
run_bad "-e on write_lat" "Events feature not available on WRITE verb" write_lat -- --loopback --worker -e
run_bad "-e with -D" "Duration mode doesn't work with events" write_bw -- --loopback --worker -e -D 2
run_bad "-e in embedded mode" "add --worker" send_bw -- --loopback -e
run_bad "--threads on a lat test" "--threads applies to bw tests only" write_lat -- --loopback --worker --threads 2
run_bad "--threads above -q" "--threads (3) above -q (2)" write_bw -- --loopback --worker --threads 3 -q 2
run_bad "--threads in embedded mode" "--threads needs worker mode: add --worker" write_bw -- --loopback --threads 2 -q 2
run_bad "--threads with --embedded" "--threads needs worker mode: drop --embedded" write_bw -- --loopback --embedded --threads 2 -q 2
run_bad "--threads with -R" "not supported with -R" write_bw -- --ip 10.0.0.1/24 --worker -R --threads 2 -q 2
run_bad "--threads with -e" "not supported with -e" write_bw -- --loopback --worker -e --threads 2 -q 2
run_bad "--threads with --run_infinitely" "not supported with --run_infinitely" write_bw -- --loopback --worker --run_infinitely --threads 2 -q 2
run_bad "--threads 0" "invalid value '0' for --threads" write_bw -- --loopback --worker --threads 0

"$exe" --help >"$out" 2>"$err"
if [[ $? -eq 0 ]] && grep -q -- "--loopback" "$out"; then echo "ok: --help"; else fail "--help"; fi

if [[ $fails -ne 0 ]]; then echo "$fails check(s) failed"; exit 1; fi
echo "all perf loopback checks passed"
