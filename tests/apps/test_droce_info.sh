#!/usr/bin/env bash
# droce-info against a running droce process: droce-pingpong --loopback with its default
# EAL arguments (--file-prefix droce-<pid>, telemetry on, --no-shconf) in the background,
# in embedded and in worker mode; droce-info must show both devices as ibv_devinfo -v and
# show_gids do, counters that grow, and the QPs (-q). With no process it must print one
# line and exit 1; a process that exits normally must leave no runtime directory.
# Usage: test_droce_info.sh PATH/TO/droce-pingpong PATH/TO/droce-info
set -u
pp=${1:?usage: $0 droce-pingpong droce-info}
info=${2:?usage: $0 droce-pingpong droce-info}
tmp=$(mktemp -d)
bgpid=
cleanup() {
    [ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null && wait "$bgpid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
rundir=/var/run/dpdk
[ "$(id -u)" = 0 ] || rundir=${XDG_RUNTIME_DIR:-/tmp}/dpdk

counter() { # FILE NAME: the first value of counter NAME in droce-info output
    awk -v n="$2" '$1 == n {print $2; exit}' "$1"
}

one_mode() {
    local mode=$1 profile=$2
    "$pp" --loopback $mode --dcqcn-profile "$profile" -n 100000000 -s 64 --timeout 300 >"$tmp/pp.out" 2>&1 &
    bgpid=$!
    local out=$tmp/info.out err=$tmp/info.err ok=0
    # Until the QPs are in RTS and the first frame has come in: droce-info can answer
    # between the two (seen in worker mode on a fast machine: RTS, counters still 0).
    for _ in $(seq 150); do
        if "$info" --pid "$bgpid" -q >"$out" 2>"$err" && grep -q "state RTS" "$out" &&
            [ "$(counter "$out" port_rcv_packets)" -gt 0 ] 2>/dev/null; then
            ok=1
            break
        fi
        sleep 0.2
    done
    if [ $ok = 0 ]; then
        fail "$mode: droce-info --pid $bgpid never showed the QPs in RTS with traffic"
        cat "$out" "$err" "$tmp/pp.out"
    else
        local t=$'\t'
        for ip in 1 2; do
            grep -Eq "^hca_id:${t}net_ring_droce[0-9]+[ab]$" "$out" || fail "$mode: no hca_id line"
            grep -q "^${t}${t}${t}GID\[  1\]:${t}${t}::ffff:10.0.0.$ip, RoCE v2$" "$out" ||
                fail "$mode: no GID[1] line for 10.0.0.$ip"
            grep -Eq "^net_ring_droce[0-9]+[ab]${t}1${t}1${t}0000:0000:0000:0000:0000:ffff:0a00:000$ip${t}10.0.0.$ip +${t}v2${t}" "$out" ||
                fail "$mode: no show_gids line for 10.0.0.$ip"
        done
        grep -Eq "^${t}${t}${t}GID\[  0\]:${t}${t}fe80::[0-9a-f:]+, RoCE v2$" "$out" ||
            fail "$mode: no link-local GID[0] line"
        [ "$(grep -c "state:${t}${t}${t}PORT_ACTIVE (4)" "$out")" = 2 ] || fail "$mode: not 2 active ports"
        grep -q "active_mtu:${t}${t}1024 (3)" "$out" || fail "$mode: no active_mtu line"
        grep -q "link_layer:${t}${t}Ethernet" "$out" || fail "$mode: no link_layer line"
        grep -q "pfc:${t}${t}${t}not requested" "$out" || fail "$mode: no pfc line"
        [ "$(grep -c "^${t}${t}${t}dcqcn:${t}${t}${t}on, profile $profile$" "$out")" = 2 ] ||
            fail "$mode: not 2 'dcqcn: on, profile $profile' lines"
        [ "$(grep -c "^${t}${t}${t}adapter:${t}${t}ring$" "$out")" = 2 ] || fail "$mode: not 2 ring adapter lines"
        grep -Eq "^${t}${t}${t}${t}queues [0-9]+ rx / [0-9]+ tx$" "$out" || fail "$mode: no adapter queues line"
        grep -q "^${t}${t}${t}${t}multi-segment tx yes$" "$out" || fail "$mode: no multi-segment line"
        grep -q "^${t}${t}${t}${t}external buffers any process memory$" "$out" || fail "$mode: no external buffers line"
        grep -q "^${t}${t}${t}steering:${t}${t}off$" "$out" || fail "$mode: no steering line"
        # per device: link-local, IPv4, and the --loopback IPv6 fd00::1 / fd00::2 (GID 2)
        grep -q "^${t}${t}${t}GID\[  2\]:${t}${t}fd00::1, RoCE v2$" "$out" || fail "$mode: no IPv6 GID[2] line"
        grep -q '^n_gids_found=6$' "$out" || fail "$mode: n_gids_found is not 6"
        grep -Eq "QP 0x[0-9a-f]{6}: state RTS dest_qp_num 0x[0-9a-f]{6} path_mtu 1024 .* \| qpn 0x" "$out" ||
            fail "$mode: no QP state line"
        grep -Eq "QP 0x[0-9a-f]{6}: .* \| dcqcn rp 1 np 1 rate_mbps [0-9.]+ target_mbps [0-9.]+ alpha [0-9.]+ stage line_rate " "$out" ||
            fail "$mode: no DCQCN state in the QP line"
        grep -q "np_cnp_sent" "$out" || fail "$mode: no np_cnp_sent counter"
        local r1 x1 r2
        r1=$(counter "$out" port_rcv_packets)
        x1=$(counter "$out" port_xmit_packets)
        [ -n "$r1" ] && [ "$r1" -gt 0 ] && [ -n "$x1" ] && [ "$x1" -gt 0 ] ||
            fail "$mode: port_rcv_packets/port_xmit_packets not > 0 ($r1/$x1)"
        for c in rx_drop_unknown_qpn mbufs_in_use arp_requests_sent rx_prio3_pause \
            rx_prio3_pause_duration rx_prio3_pause_transition tx_prio3_pause rx_mac_ctrl_wrong_dst; do
            grep -Eq "^${t}${t}${t}${t}$c +[0-9]+$" "$out" || fail "$mode: no counter $c"
        done
        sleep 0.5
        "$info" --pid "$bgpid" -d "$(grep -m1 '^hca_id:' "$out" | cut -f2)" >"$tmp/info2.out" 2>&1 ||
            fail "$mode: droce-info -d failed"
        r2=$(counter "$tmp/info2.out" port_rcv_packets)
        [ -n "$r2" ] && [ -n "$r1" ] && [ "$r2" -gt "$r1" ] || fail "$mode: port_rcv_packets did not grow ($r1 -> $r2)"
        [ "$(grep -c '^hca_id:' "$tmp/info2.out")" = 1 ] || fail "$mode: -d shows more than one device"
        "$info" --list | grep -q "^pid $bgpid${t}file-prefix droce-$bgpid${t}" || fail "$mode: --list lacks pid $bgpid"
        echo "ok: $mode: droce-info --pid $bgpid (port_rcv_packets $r1 -> $r2)"
    fi
    kill "$bgpid" 2>/dev/null
    wait "$bgpid" 2>/dev/null
    rm -rf "$rundir/droce-$bgpid" # killed: its atexit cleanup did not run
    bgpid=
}

one_mode --embedded connectx
one_mode --worker fair

# No process: one line on stderr, exit 1.
"$info" --file-prefix "no-such-droce-$$" >"$tmp/o" 2>"$tmp/e"
rc=$?
if [ $rc -ne 1 ] || [ "$(wc -l <"$tmp/e")" != 1 ] || ! grep -q "no running droce process" "$tmp/e"; then
    fail "no process: exit $rc, stderr: $(cat "$tmp/e")"
else
    echo "ok: no process: $(cat "$tmp/e")"
fi

# A normal exit removes the runtime directory of the default --file-prefix droce-<pid>.
"$pp" --loopback -n 10 -s 64 >"$tmp/pp.out" 2>&1 &
p=$!
wait $p || fail "short droce-pingpong run failed"
[ ! -e "$rundir/droce-$p" ] || fail "$rundir/droce-$p left behind after a normal exit"

[ $fails -eq 0 ] && echo "all passed" || echo "$fails failed"
[ $fails -eq 0 ]
