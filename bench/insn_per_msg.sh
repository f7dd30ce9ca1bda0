#!/usr/bin/env bash
# Instructions per message of droce-perf (both ends in one process, --loopback), the method
# of bench/README.md "Instructions per message": callgrind at two run lengths N1 < N2, the
# difference of total instructions (Ir) divided by N2 - N1, so set-up and tear-down cancel.
# Deterministic, so a busy machine does not skew it (run it under the heavy-job lock all
# the same: valgrind takes a core for a minute).
#
#   bench/insn_per_msg.sh [--bin PATH] [--size BYTES] [--n1 N] [--n2 N] [--test write_bw]
#                         [--qps Q] [--functions K] [--files K] [--lines SUBSTR]
#
# --qps Q runs Q QP pairs (droce-perf -q Q, N messages on each): the cost per message with
# many QPs' state in play (issue 32: 8 workers' worth of QPs is -q 16).
# Prints one line: "<test> <size> B: <Ir per message> instructions per message (N1 .. N2)"
# (with " x Q QPs" after the counts when Q > 1).
# --functions K then lists the K functions that cost the most per message, exclusive (the
# same difference, by function: where the count goes). --files K and --lines SUBSTR group
# it by source line instead (inlined code counts where it is written): the K source files
# that cost the most, or every line of the files whose path contains SUBSTR. They need a
# binary with line information (meson setup B -Ddebug=true; the count is the release
# build's). All three are bench/insn_lines.py's.
set -euo pipefail
BIN=build/apps/droce-perf/droce-perf
SIZE=64
N1=20000
N2=120000
TEST=write_bw
QPS=1
FUNCS=0
FILES=0
LINES=
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) BIN=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --n1) N1=$2; shift 2 ;;
    --n2) N2=$2; shift 2 ;;
    --test) TEST=$2; shift 2 ;;
    --qps) QPS=$2; shift 2 ;;
    --functions) FUNCS=$2; shift 2 ;;
    --files) FILES=$2; shift 2 ;;
    --lines) LINES=$2; [ -n "$LINES" ] || { echo "$0: --lines takes part of a source path" >&2; exit 2; }; shift 2 ;;
    *) echo "usage: $0 [--bin PATH] [--size BYTES] [--n1 N] [--n2 N] [--test NAME] [--qps Q] [--functions K] [--files K] [--lines SUBSTR]" >&2; exit 2 ;;
    esac
done
case "$QPS" in '' | *[!0-9]* | 0) echo "$0: --qps takes a count of QPs (1 or more)" >&2; exit 2 ;; esac
case "$FUNCS" in '' | *[!0-9]*) echo "$0: --functions takes a count of functions" >&2; exit 2 ;; esac
case "$FILES" in '' | *[!0-9]*) echo "$0: --files takes a count of source files" >&2; exit 2 ;; esac
[ "$N2" -gt "$N1" ] || { echo "$0: --n2 must be larger than --n1" >&2; exit 2; }
[ -x "$BIN" ] || { echo "$0: $BIN is not an executable (build first)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind is not installed" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

total_ir() { # the run's total Ir, from callgrind's "totals:" (or "summary:") line
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1" "$BIN" "$TEST" --loopback \
        -s "$SIZE" -q "$QPS" -n "$1" >"$tmp/log.$1" 2>&1 || { cat "$tmp/log.$1" >&2; exit 1; }
    awk '/^(totals|summary):/ {print $2; exit}' "$tmp/cg.$1"
}
ir1=$(total_ir "$N1")
ir2=$(total_ir "$N2")
awk -v a="$ir1" -v b="$ir2" -v n1="$N1" -v n2="$N2" -v t="$TEST" -v s="$SIZE" -v q="$QPS" \
    'BEGIN { printf "%s %s B: %.0f instructions per message (%d .. %d%s)\n", t, s,
             (b - a) / ((n2 - n1) * q), n1, n2, (q > 1 ? " x " q " QPs" : "") }'
# The rest regroup the same difference (bench/insn_lines.py reads both profiles).
msgs=$(( (N2 - N1) * QPS ))
lines_py=$(dirname "$0")/insn_lines.py
[ "$FILES" -eq 0 ] || python3 "$lines_py" "$tmp/cg.$N1" "$tmp/cg.$N2" "$msgs" --files "$FILES"
[ -z "$LINES" ] || python3 "$lines_py" "$tmp/cg.$N1" "$tmp/cg.$N2" "$msgs" --lines "$LINES"
[ "$FUNCS" -eq 0 ] || python3 "$lines_py" "$tmp/cg.$N1" "$tmp/cg.$N2" "$msgs" --functions "$FUNCS"
