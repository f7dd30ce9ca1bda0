#!/usr/bin/env bash
# droce-perf <-> droce-perf, two processes over net_virtio_user <-> net_vhost (issue 9): a
# 64 KiB write_bw from the virtio_user side and one from the vhost side must both finish.
# virtio_user's vhost-user backend reaches only the EAL's own memory (shared through the
# memory table), not droce-perf's buffers: zero-copy TX of those regions there never
# reaches the wire (before the fix: timeout / retry exceeded with --iova-mode=va, where a
# no-op rte_dev_dma_map "succeeded"). IOVA as VA is forced so the test covers that case.
# virtio_user needs fd-backed memory: hugepages on a hugetlbfs mount (set up here when we
# may, else the test is skipped with exit 77).
# Usage: test_perf_vhost.sh PATH/TO/droce-perf
set -u
exe=${1:?usage: $0 PATH/TO/droce-perf}
work=$(mktemp -d)
sock=$work/vhost.sock
port=$((21000 + $$ % 20000))
trap 'rm -rf "$work"' EXIT

skip() { echo "SKIP: $*"; exit 77; }

# Hugepages: 2 x 256 MB for the two processes, plus slack.
need=320
free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
if [[ ${free:-0} -lt $need ]]; then
    total=$(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo)
    { echo $((total + need - free)) >/proc/sys/vm/nr_hugepages; } 2>/dev/null ||
        skip "needs $need free 2 MB hugepages (as root: echo 512 > /proc/sys/vm/nr_hugepages)"
    free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
    [[ ${free:-0} -ge $need ]] || skip "could only get ${free:-0} free hugepages, need $need"
fi
if ! awk '$3 == "hugetlbfs" { found = 1 } END { exit !found }' /proc/mounts; then
    { mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages; } 2>/dev/null ||
        skip "needs a hugetlbfs mount (as root: mount -t hugetlbfs nodev /dev/hugepages)"
fi

# --single-file-segments: the vhost-user memory table holds at most 8 regions.
eal=(-m 256 --no-pci --single-file-segments --iova-mode=va --log-level='*:warning')
fails=0

# run DIRECTION CLIENT_VDEV SERVER_VDEV: the client posts the WRITEs.
run() {
    local dir=$1 cvdev=$2 svdev=$3
    rm -f "$sock"
    timeout 60 "$exe" write_bw -l 0 "${eal[@]}" --file-prefix "pv-s$$" --vdev "$svdev" -- \
        --ip 10.79.0.1/24 -s 65536 -n 2000 -p "$port" --timeout 30 --log-level info \
        >"$work/srv" 2>&1 &
    local srv=$!
    # The server's vhost socket must exist before virtio_user connects (or the reverse).
    for _ in $(seq 50); do [[ -S $sock ]] && break; sleep 0.1; done
    timeout 60 "$exe" write_bw -l 1 "${eal[@]}" --file-prefix "pv-c$$" --vdev "$cvdev" -- \
        --ip 10.79.0.2/24 -s 65536 -n 2000 -p "$port" --timeout 30 --log-level info 127.0.0.1 \
        >"$work/cli" 2>&1
    local rc=$?
    wait "$srv"
    local src=$?
    local row
    row=$(awk '$1 == 65536 && $2 == 2000 && NF >= 5' "$work/cli")
    if [[ $rc -ne 0 || $src -ne 0 || -z $row ]]; then
        echo "FAIL: $dir: client exit $rc, server exit $src"
        echo "--- client"; grep -v '^VHOST_CONFIG\|^EAL' "$work/cli" | tail -n 15
        echo "--- server"; grep -v '^VHOST_CONFIG\|^EAL' "$work/srv" | tail -n 8
        fails=$((fails + 1))
        return
    fi
    echo "ok: $dir 64 KiB write_bw:$row"
    grep -h 'zero-copy TX' "$work/cli" "$work/srv" | sed 's/^.*\] /   /'
}

# virtio_user is the vhost-user client; net_vhost (the server, client=0) makes the socket.
run "virtio_user -> vhost" "net_virtio_user0,path=$sock" "net_vhost0,iface=$sock"
# Reverse: net_vhost posts the WRITEs; net_vhost in client mode connects to the socket a
# virtio_user in server mode makes.
run "vhost -> virtio_user" "net_vhost0,iface=$sock,client=1" "net_virtio_user0,path=$sock,server=1"

if [[ $fails -ne 0 ]]; then echo "$fails direction(s) failed"; exit 1; fi
echo "both directions passed"
