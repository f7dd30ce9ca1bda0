#!/usr/bin/env bash
# droce-nvmf-perf against droce-nvmf, two processes over net_memif (--no-huge): droce's
# own NVMe-oF initiator and target end to end. Cases:
#   verify at queue depth 1 and 16 on a RAM disk and on an O_DIRECT file (every block
#   written with a pattern naming it and read back, compared byte for byte), randread and
#   randwrite at depth 8; a host NQN not on the allow list is refused (exit 1, the reason
#   printed) and the target counts it; every run ends with the target's error counters 0.
# Usage: test_nvmf_memif.sh PATH/TO/droce-nvmf PATH/TO/droce-nvmf-perf
set -u
tgt=${1:?usage: $0 droce-nvmf droce-nvmf-perf}
ini=${2:?usage: $0 droce-nvmf droce-nvmf-perf}
work=$(mktemp -d)
sock=$work/memif.sock
trap 'kill "$tpid" 2>/dev/null; rm -rf "$work"' EXIT
eal=(--no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
fails=0
tpid=

start_target() { # ARGS...
    rm -f "$sock"
    timeout 120 "$tgt" -l 0 "${eal[@]}" --file-prefix "nt-t$$" \
        --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no" -- \
        --ip 10.82.0.1/24 --counters "$@" >"$work/tgt" 2>&1 &
    tpid=$!
    for _ in $(seq 50); do [[ -S $sock ]] && return 0; sleep 0.1; done
    echo "FAIL: the target did not start"; cat "$work/tgt"; exit 1
}
stop_target() {
    kill -INT "$tpid"
    wait "$tpid"
    local rc=$?
    if [[ $rc -ne 0 ]]; then
        echo "FAIL: the target exited $rc"; tail -n 20 "$work/tgt"; fails=$((fails + 1))
    fi
}
# initiator EXPECT_RC ARGS...
initiator() {
    local want=$1
    shift
    timeout 60 "$ini" -l 1 "${eal[@]}" --file-prefix "nt-i$$" \
        --vdev "net_memif0,role=client,socket=$sock,socket-abstract=no" -- \
        --ip 10.82.0.2/24 -a 10.82.0.1 --timeout 40 "$@" >"$work/ini" 2>&1
    local rc=$?
    local res
    res=$(grep '^result:' "$work/ini")
    if [[ $rc -ne $want ]]; then
        echo "FAIL: $*: exit $rc, expected $want"; tail -n 15 "$work/ini"; fails=$((fails + 1))
        return 1
    fi
    if [[ $want -eq 0 ]] && ! grep -q 'errors=0 mismatches=0' <<<"$res"; then
        echo "FAIL: $*: $res"; fails=$((fails + 1)); return 1
    fi
    echo "ok: $*: ${res:-$(tail -n 1 "$work/ini")}"
}
counter() { awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' "$work/tgt"; }

start_target --ram 16M --host nqn.2014-08.org.nvmexpress:uuid:droce-nvmf-perf
initiator 0 -w verify -q 1 -t 1
initiator 0 -w verify -q 16 -t 1
initiator 0 -w randread -q 8 -t 1
initiator 0 -w randwrite -q 8 -o 16k -t 1
initiator 1 -w randread -t 1 --hostnqn nqn.2014-08.org.nvmexpress:uuid:not-allowed
grep -q 'Fabrics Connect (admin queue) failed: SCT 1 SC 0x84' "$work/ini" ||
    { echo "FAIL: the refused host's reason"; cat "$work/ini"; fails=$((fails + 1)); }
stop_target
[[ $(counter st_connect_host) -ge 1 ]] ||
    { echo "FAIL: st_connect_host did not move"; fails=$((fails + 1)); }
for c in rdma_wc_errors rdma_read_errors rdma_capsules_dropped rdma_post_failures; do
    [[ $(counter $c) -eq 0 ]] || { echo "FAIL: target $c = $(counter $c)"; fails=$((fails + 1)); }
done

start_target --file "$work/disk.img" --size 8M
initiator 0 -w verify -q 16 -t 1
stop_target

if [[ $fails -ne 0 ]]; then echo "$fails check(s) failed"; exit 1; fi
echo "all NVMe-oF runs over memif verified"
