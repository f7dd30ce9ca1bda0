#!/usr/bin/env bash
# The cost of droce's libibverbs: Debian's unmodified perftest under droce-run against
# droce's own tool in the same mode, two processes over net_memif through droce-fabric
# (each end a memif client of it, as in tests/verbs/test_verbs_perftest.sh: perftest needs
# its port up when it starts), one configuration pair (worker mode, lcores 0,1, the worker
# naps when idle). Three figures (issue 31 item 7), each its own set of variants:
#   rate  64 B RDMA WRITE message rate (Mpps, perftest's MsgRate column), -D DURATION:
#         verbs      ib_write_bw (perftest's defaults: CQ moderation 100, tx depth 128)
#         verbs-Q32  the same with -Q 32 (droce-perf's default moderation: min(100, tx/4))
#         perf       droce-perf write_bw --worker, its defaults
#   bw    64 KiB RDMA WRITE bandwidth (Gb/s, from the BW average column), -D DURATION:
#         verbs-64k  ib_write_bw -s 65536 -Q 32;  perf-64k  droce-perf write_bw -s 65536;
#         perf-64k-malloc  the same with --buf-malloc: its buffer from the heap, as
#         perftest's, which a port that sends DPDK memory only (memif) must copy;
#         perf-64k-busy  the client with --busy-poll: its thread never naps when idle, as
#         perftest's client does not (perftest's write_bw server waits in a socket read)
#   lat   64 B RDMA WRITE latency (us, t_typical: the median), -n 20000:
#         verbs-lat  ib_write_lat;  perf-lat  droce-perf write_lat --worker
# ROUNDS alternating rounds (every variant of the chosen sets once per round); prints each
# run's figure, then min / median / max per variant and each median's ratio to droce's.
# Usage: flock /tmp/droce-heavy.lock bench/verbs_write_bw_ab.sh BUILD_DIR [ROUNDS]
#        [DURATION] [SETS (default "rate"; "rate bw lat" for all three)]
set -u
build=${1:?usage: $0 BUILD_DIR [ROUNDS] [DURATION] [SETS]}
rounds=${2:-3}
dur=${3:-3}
sets=${4:-rate}
run=$build/apps/droce-run/droce-run
perf=$build/apps/droce-perf/droce-perf
fab=$build/apps/droce-fabric/droce-fabric
# shellcheck source=../scripts/fabric_ready.sh
. "$(dirname "$0")/../scripts/fabric_ready.sh"
work=$(mktemp -d)
port=$((25000 + $$ % 20000))
fpid=
trap '[[ -n $fpid ]] && kill "$fpid" 2>/dev/null; rm -rf "$work"' EXIT

conf() { # SOCKET IP MAC
    printf '[eal]\nvdev = net_memif0,role=client,socket=%s,socket-abstract=no\n\n' "$1"
    printf '[port]\ndevice = net_memif0\nip = %s\nmac = %s\n' "$2" "$3"
}
conf "$work/s1" 10.84.0.1/24 02:00:00:00:84:01 >"$work/server.conf"
conf "$work/s0" 10.84.0.2/24 02:00:00:00:84:02 >"$work/client.conf"
"$fab" -l 0 --no-huge -m 256 --no-pci --no-shconf --file-prefix "bfab$$" --log-level='*:warning' \
    --vdev="net_memif0,role=server,socket=$work/s0,socket-abstract=no" \
    --vdev="net_memif1,role=server,socket=$work/s1,socket-abstract=no" -- \
    --to 1 --rate-gbps 100 --no-ecn --idle-us 20 >"$work/fab" 2>&1 &
fpid=$!
fabric_ready "$work/fab" "$fpid" || { echo "droce-fabric did not start" >&2; exit 1; }

listening() { ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }

# pair SERVER_CMD... -- CLIENT_CMD...: the client's output in $work/cli.
pair() {
    local srv_cmd=() cli_cmd=()
    while [[ $1 != -- ]]; do srv_cmd+=("$1"); shift; done
    shift
    cli_cmd=("$@")
    timeout 60 "${srv_cmd[@]}" >"$work/srv" 2>&1 &
    local srv=$!
    for _ in $(seq 100); do listening "$port" && break; sleep 0.1; done
    timeout 60 "${cli_cmd[@]}" >"$work/cli" 2>&1 || kill "$srv" 2>/dev/null
    wait "$srv"
    port=$((port + 1))
}

# The figure of the client's result row: MsgRate (Mpps), BW average as Gb/s, or t_typical.
figure() { # rate|bw|lat
    case $1 in
    rate) awk '$1 == 64 && NF >= 5 { print $5; exit }' "$work/cli" ;;
    bw) awk '$1 == 65536 && NF >= 5 { printf "%.2f\n", $4 * 8 / 1000; exit }' "$work/cli" ;;
    lat) awk '$1 == 64 && NF >= 7 { print $5; exit }' "$work/cli" ;;
    esac
}

# verbs TOOL ARGS...: the unmodified perftest tool on both ends; perf TEST ARGS...: droce-perf.
verbs() {
    local tool=$1
    shift
    pair "$run" --config "$work/server.conf" "$tool" -d droce0 "$@" -p "$port" -- \
        "$run" --config "$work/client.conf" "$tool" -d droce0 "$@" -p "$port" 127.0.0.1
}
perf() { # [--client-busy] TEST ARGS...
    local cbusy=()
    [[ $1 == --client-busy ]] && { cbusy=(--busy-poll); shift; }
    local test=$1
    shift
    pair "$perf" "$test" --config="$work/server.conf" --worker "$@" -p "$port" -- \
        "$perf" "$test" --config="$work/client.conf" --worker "${cbusy[@]}" "$@" -p "$port" 127.0.0.1
}

one() { # VARIANT
    local rate=(-s 64 -D "$dur" -F -x 1) bw=(-s 65536 -D "$dur" -F -x 1 -Q 32)
    local lat=(-s 64 -n 20000 -F -x 1) kind
    case $1 in
    verbs) verbs ib_write_bw "${rate[@]}"; kind=rate ;;
    verbs-Q32) verbs ib_write_bw -Q 32 "${rate[@]}"; kind=rate ;;
    perf) perf write_bw "${rate[@]}"; kind=rate ;;
    verbs-64k) verbs ib_write_bw "${bw[@]}"; kind=bw ;;
    perf-64k) perf write_bw "${bw[@]}"; kind=bw ;;
    perf-64k-malloc) perf write_bw --buf-malloc "${bw[@]}"; kind=bw ;;
    perf-64k-busy) perf --client-busy write_bw "${bw[@]}"; kind=bw ;;
    verbs-lat) verbs ib_write_lat "${lat[@]}"; kind=lat ;;
    perf-lat) perf write_lat "${lat[@]}"; kind=lat ;;
    esac
    local r
    r=$(figure "$kind")
    if [[ -z $r ]]; then
        echo "$1: no result row" >&2
        tail -n 8 "$work/cli" >&2
        tail -n 8 "$work/srv" >&2
        r=nan
    fi
    echo "$1 $r"
}

variants=()
for set in $sets; do
    case $set in
    rate) variants+=(verbs verbs-Q32 perf) ;;
    bw) variants+=(verbs-64k perf-64k perf-64k-malloc perf-64k-busy) ;;
    lat) variants+=(verbs-lat perf-lat) ;;
    *) echo "unknown set $set (rate, bw, lat)" >&2; exit 2 ;;
    esac
done
for ((i = 0; i < rounds; ++i)); do
    for v in "${variants[@]}"; do one "$v"; done
done | tee "$work/all"
echo "variant min median max (rate: Mpps, bw: Gb/s, lat: us) median/droce-perf's"
for v in "${variants[@]}"; do
    awk -v v="$v" '$1 == v && $2 != "nan" { print $2 }' "$work/all" | sort -g |
        awk -v v="$v" '{ a[NR] = $1 } END { if (NR) printf "%s %s %s %s\n", v, a[1], a[int((NR + 1) / 2)], a[NR] }'
done >"$work/summary"
awk '{ m[$1] = $3 } END {
    ref["verbs"] = "perf"; ref["verbs-Q32"] = "perf"; ref["verbs-64k"] = "perf-64k"
    ref["verbs-lat"] = "perf-lat"; ref["perf-64k-malloc"] = "perf-64k"
    ref["perf-64k-busy"] = "perf-64k"
}
{ line[NR] = $0; name[NR] = $1 }
END { for (i = 1; i <= NR; ++i) { r = ref[name[i]]
    if (r != "" && m[r] > 0) printf "%s %.3f\n", line[i], m[name[i]] / m[r]; else print line[i] } }' \
    "$work/summary"
