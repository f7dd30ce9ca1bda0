#!/usr/bin/env bash
# droce-perf -R <-> droce-perf -R, two processes over net_memif (--no-huge): perftest's
# rdma_cm mode end to end without a VM (the control QP and the test QPs connected by CM
# MADs on QP1, the exchange as SENDs on the control QP). Every test must end on both sides
# by itself, print its row and its connect times, and the client must disconnect every
# connection (the server saw the control connection go).
# Usage: test_perf_cm_memif.sh PATH/TO/droce-perf
set -u
exe=${1:?usage: $0 PATH/TO/droce-perf}
work=$(mktemp -d)
sock=$work/memif.sock
port=$((22000 + $$ % 20000))
trap 'rm -rf "$work"' EXIT

eal=(--no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
fails=0

# run TEST EXTRA...: server on lcore 0, client on lcore 1.
run() {
    local t=$1
    shift
    rm -f "$sock"
    port=$((port + 1))
    timeout 40 "$exe" "$t" -l 0 "${eal[@]}" --file-prefix "pcm-s$$" \
        --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no" -- \
        --ip 10.80.0.1/24 -R -s 4096 -p "$port" --timeout 20 --counters "$@" >"$work/srv" 2>&1 &
    local srv=$!
    for _ in $(seq 100); do grep -q 'Waiting for client' "$work/srv" 2>/dev/null && break; sleep 0.1; done
    timeout 40 "$exe" "$t" -l 1 "${eal[@]}" --file-prefix "pcm-c$$" \
        --vdev "net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
        --ip 10.80.0.2/24 -R -s 4096 -p "$port" --timeout 20 --counters "$@" 10.80.0.1 >"$work/cli" 2>&1
    local rc=$?
    wait "$srv"
    local src=$?
    local crow srow
    crow=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5' "$work/cli")
    srow=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5' "$work/srv")
    local why=""
    [[ $rc -eq 0 && $src -eq 0 ]] || why+="client exit $rc, server exit $src (124 = killed by timeout); "
    [[ -n $crow && -n $srow ]] || why+="no result row; "
    grep -q '^ rdma_cm connect : ' "$work/cli" || why+="client printed no connect times; "
    # the client's DREQs: one per test QP and the control connection
    grep -Eq '^  disc_remote [1-9]' "$work/srv" || why+="server saw no disconnect; "
    if [[ -n $why ]]; then
        echo "FAIL: $t $*: $why"
        echo "--- client"; grep -v '^  ' "$work/cli" | tail -n 12
        echo "--- server"; grep -v '^  ' "$work/srv" | tail -n 12
        fails=$((fails + 1))
        return
    fi
    echo "ok: $t $*: client:$crow $(grep '^ rdma_cm connect' "$work/cli")"
    echo "    server:$srow"
}

run write_bw -n 2000
run send_bw -n 2000
run read_bw -n 2000
run write_bw -n 500 -q 4
run send_lat -n 500 -s 64
run write_bw -D 1

if [[ $fails -ne 0 ]]; then echo "$fails run(s) failed"; exit 1; fi
echo "all -R runs ended on both sides"
