#!/usr/bin/env bash
# droce-perf <-> droce-perf, two processes over net_memif (--no-huge), timed runs (-D):
# every bandwidth test must end on both sides by itself and print its row. The send_bw
# server counts receives and cannot know the client's last one: in a timed run it ends
# when the client reports (as perftest's server ends on its own -D alarm). Before the fix
# it waited forever for a receive count that a timed run never sets.
# Usage: test_perf_memif.sh PATH/TO/droce-perf
set -u
exe=${1:?usage: $0 PATH/TO/droce-perf}
work=$(mktemp -d)
sock=$work/memif.sock
port=$((22000 + $$ % 20000))
trap 'rm -rf "$work"' EXIT

eal=(--no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
fails=0
# Per-side lcores and flags (the --threads runs: worker mode, each side its own T).
srv_l=(-l 0) cli_l=(-l 1) srv_x=() cli_x=()

# run TEST EXTRA...: server on lcore 0, client on lcore 1, -D 1.
run() {
    local t=$1
    shift
    rm -f "$sock"
    port=$((port + 1))
    timeout 40 "$exe" "$t" "${srv_l[@]}" "${eal[@]}" --file-prefix "pm-s$$" \
        --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no" -- \
        --ip 10.80.0.1/24 -s 64 -D 1 -p "$port" --timeout 20 "$@" "${srv_x[@]}" >"$work/srv" 2>&1 &
    local srv=$!
    for _ in $(seq 50); do [[ -S $sock ]] && break; sleep 0.1; done
    timeout 40 "$exe" "$t" "${cli_l[@]}" "${eal[@]}" --file-prefix "pm-c$$" \
        --vdev "net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
        --ip 10.80.0.2/24 -s 64 -D 1 -p "$port" --timeout 20 "$@" "${cli_x[@]}" 127.0.0.1 \
        >"$work/cli" 2>&1
    local rc=$?
    wait "$srv"
    local src=$?
    # A result row: the size first, then #iterations and figures.
    local crow srow
    crow=$(awk '$1 == 64 && NF >= 5' "$work/cli")
    srow=$(awk '$1 == 64 && NF >= 5' "$work/srv")
    if [[ $rc -ne 0 || $src -ne 0 || -z $crow || -z $srow ]]; then
        echo "FAIL: $t $*: client exit $rc, server exit $src (124 = killed by timeout)"
        echo "--- client"; tail -n 12 "$work/cli"
        echo "--- server"; tail -n 12 "$work/srv"
        fails=$((fails + 1))
        return
    fi
    echo "ok: $t $*: client:$crow"
    echo "    server:$srow"
}

run send_bw -r 512
run write_bw
run read_bw
# --threads: each side in worker mode with its own number of posting threads (only QP
# records travel, so the peer's T may differ); 4 QPs, the rows summed over the threads.
srv_l=(--lcores '0@0,1@1') cli_l=(--lcores '0@1,1@0')
srv_x=(--worker --threads 2) cli_x=(--worker --threads 2)
run send_bw -r 512 -q 4
run write_bw -q 4
srv_x=(--worker --threads 2) cli_x=(--worker)
run send_bw -r 512 -q 4
srv_x=(--worker) cli_x=(--worker --threads 4)
run write_bw -q 4

if [[ $fails -ne 0 ]]; then echo "$fails run(s) failed"; exit 1; fi
echo "all timed runs ended on both sides"
