#!/usr/bin/env bash
# droce-perf <-> droce-perf, two processes, each on a mode-1 bond (net_bonding) over two
# taps; tap i of each side sits on bridge i (one "cable" per bridge). Mid-run (-D 4) the
# active cable is pulled (both taps down): each side's bond moves to the other tap, both
# runs end by themselves with a result row and exit 0 (no error completion), and each
# side logged the failover. Root only (taps, bridges): exit 77 otherwise.
# Usage: test_perf_bond.sh PATH/TO/droce-perf
set -u
exe=${1:?usage: $0 PATH/TO/droce-perf}
[[ $(id -u) -eq 0 ]] || { echo "skip: root only"; exit 77; }
t=fb$(($$ % 100000))
work=$(mktemp -d)
port=$((24000 + $$ % 20000))
cleanup() {
    for c in 0 1; do ip link del "${t}br$c" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
for c in 0 1; do
    ip link add "${t}br$c" type bridge || { echo "skip: no bridge"; exit 77; }
    echo 1 >"/proc/sys/net/ipv6/conf/${t}br$c/disable_ipv6"
    ip link set "${t}br$c" up
done
eal=(--no-huge -m 1024 --no-pci --no-shconf --log-level='*:warning')

# side NAME IP LCORE [SERVER]: a bond over taps ${t}NAME0 and ${t}NAME1.
side() {
    local n=$1 ip=$2 l=$3
    shift 3
    timeout 40 "$exe" write_bw -l "$l" "${eal[@]}" --file-prefix "$t$n" \
        --vdev "net_tap0,iface=$t${n}0" --vdev "net_tap1,iface=$t${n}1" \
        --vdev net_bonding0,mode=1,slave=net_tap0,slave=net_tap1 -- \
        --dpdk-port net_bonding0 --ip "$ip/24" --mac "02:00:00:00:0d:0$((l + 1))" \
        -s 65536 -D 4 -p "$port" --timeout 20 "$@"
}
# Wires side NAME's taps into the bridges once they exist (the process makes them).
plug() {
    for _ in $(seq 100); do
        ip link show "$t${1}1" >/dev/null 2>&1 && break
        sleep 0.05
    done
    for c in 0 1; do
        echo 1 >"/proc/sys/net/ipv6/conf/$t$1$c/disable_ipv6" 2>/dev/null
        ip link set "$t$1$c" master "${t}br$c"
    done
}
side a 10.79.0.1 0 >"$work/srv" 2>&1 &
srv=$!
plug a
side b 10.79.0.2 1 127.0.0.1 >"$work/cli" 2>&1 &
cli=$!
plug b
# Pull the cable once the timed run is under way.
for _ in $(seq 200); do
    grep -q '#bytes' "$work/cli" && break
    sleep 0.05
done
sleep 1.5
ip link set "${t}a0" down
ip link set "${t}b0" down
wait "$cli"
crc=$?
wait "$srv"
src=$?
crow=$(awk '$1 == 65536 && NF >= 5' "$work/cli")
srow=$(awk '$1 == 65536 && NF >= 5' "$work/srv")
fails=0
if [[ $crc -ne 0 || $src -ne 0 || -z $crow || -z $srow ]]; then
    echo "FAIL: client exit $crc, server exit $src (124 = killed by timeout)"
    fails=1
fi
for f in cli srv; do
    if ! grep -q 'failover: active member' "$work/$f"; then
        echo "FAIL: $f: no failover logged"
        fails=1
    fi
done
if [[ $fails -ne 0 ]]; then
    echo "--- client"; tail -n 15 "$work/cli"
    echo "--- server"; tail -n 15 "$work/srv"
    exit 1
fi
echo "ok: write_bw over a bond, cable pulled mid-run: client:$crow"
echo "    server:$srow"
grep -h 'failover' "$work/cli" "$work/srv"
