#!/usr/bin/env bash
# 64 B RDMA WRITE message rate through droce's libibverbs against droce's own tool, two
# processes over net_memif through droce-fabric (each end a memif client of it, as in
# tests/verbs/test_verbs_perftest.sh: perftest needs its port up when it starts), with
# one configuration pair (worker mode, lcores 0,1, the worker naps when idle):
#   verbs     Debian's unmodified ib_write_bw under droce-run (perftest's defaults: CQ
#             moderation 100, tx depth 128)
#   verbs-Q32 the same with -Q 32 (droce-perf's default moderation: min(100, tx/4))
#   perf      droce-perf write_bw --worker, its defaults
# ROUNDS alternating rounds of DURATION seconds each (-D); prints each run's Mpps, then
# min / median / max per variant.
# Usage: flock /tmp/droce-heavy.lock bench/verbs_write_bw_ab.sh BUILD_DIR [ROUNDS] [DURATION]
set -u
build=${1:?usage: $0 BUILD_DIR [ROUNDS] [DURATION]}
rounds=${2:-3}
dur=${3:-3}
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

# The MsgRate column (Mpps) of the 64 B row.
mpps() { awk '$1 == 64 && NF >= 5 { print $5; exit }' "$work/cli"; }

one() { # VARIANT
    local common=(-s 64 -D "$dur" -F -x 1 -p "$port")
    case $1 in
    verbs)
        pair "$run" --config "$work/server.conf" ib_write_bw -d droce0 "${common[@]}" -- \
            "$run" --config "$work/client.conf" ib_write_bw -d droce0 "${common[@]}" 127.0.0.1 ;;
    verbs-Q32)
        pair "$run" --config "$work/server.conf" ib_write_bw -d droce0 -Q 32 "${common[@]}" -- \
            "$run" --config "$work/client.conf" ib_write_bw -d droce0 -Q 32 "${common[@]}" 127.0.0.1 ;;
    perf)
        pair "$perf" write_bw --config="$work/server.conf" --worker "${common[@]}" -- \
            "$perf" write_bw --config="$work/client.conf" --worker "${common[@]}" 127.0.0.1 ;;
    esac
    local r
    r=$(mpps)
    if [[ -z $r ]]; then
        echo "$1: no result row" >&2
        tail -n 8 "$work/cli" >&2
        tail -n 8 "$work/srv" >&2
        r=nan
    fi
    echo "$1 $r"
}

variants=(verbs verbs-Q32 perf)
for ((i = 0; i < rounds; ++i)); do
    for v in "${variants[@]}"; do one "$v"; done
done | tee "$work/all"
echo "variant min median max (Mpps)"
for v in "${variants[@]}"; do
    awk -v v="$v" '$1 == v && $2 != "nan" { print $2 }' "$work/all" | sort -g |
        awk -v v="$v" '{ a[NR] = $1 } END { if (NR) printf "%s %s %s %s\n", v, a[1], a[int((NR + 1) / 2)], a[NR] }'
done
