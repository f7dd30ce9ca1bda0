#!/usr/bin/env bash
# Interop: unmodified ibv_rc_pingpong on droce (droce-run, droce's libibverbs on
# net_af_packet on the tap) against ibv_rc_pingpong on Linux Soft-RoCE (rxe0 in the VM),
# droce in both roles, data checked (-c) on both sides, 4096-byte messages, path MTU 1024.
#
#   tests/interop/verbs_rxe.sh PATH/TO/droce-run
#
# Run as root, under the heavy-job lock. One PASS/FAIL line per role; exit 1 on a failure.
set -uo pipefail
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
RUN=${1:?usage: $0 PATH/TO/droce-run}
CASE_TIMEOUT=120
OUT=$(mktemp -d /tmp/droce-verbs-rxe.XXXXXX)
trap il_cleanup EXIT
trap 'exit 130' INT TERM
il_require_tools

cat >"$OUT/droce.conf" <<CONF
[eal]
vdev = net_af_packet0,iface=$IL_TAP,qdisc_bypass=0

[port]
device = net_af_packet0
ip = $IL_DROCE_IP/$IL_PREFIX
mac = $IL_DROCE_MAC
mtu = 1500
CONF

il_vm_up 1024 || il_die "the VM did not come up"
for role in server client; do
    dir=$OUT/$role
    mkdir -p "$dir"
    if [ "$role" = server ]; then
        droce=("$RUN" --config "$OUT/droce.conf" ibv_rc_pingpong -g 1 -p "$IL_PORT" -n 200 -c)
        guest=(ibv_rc_pingpong -d rxe0 -g 1 -p "$IL_PORT" -n 200 -c "$IL_HOST_IP")
    else
        droce=("$RUN" --config "$OUT/droce.conf" ibv_rc_pingpong -g 1 -p "$IL_PORT" -n 200 -c
            "$IL_VM_IP")
        guest=(ibv_rc_pingpong -d rxe0 -g 1 -p "$IL_PORT" -n 200 -c)
    fi
    il_run_pair "$role" "$dir" rxe0
    if [ "$IL_DRC" = 0 ] && [ "$IL_GRC" = 0 ] && grep -q 'iters in' "$dir/droce.log" &&
        ! grep -qi 'invalid data' "$dir/droce.log" "$dir/guest.log"; then
        echo "PASS: droce $role: $(grep 'bytes in' "$dir/droce.log")"
        IL_PASS=$((IL_PASS + 1))
    else
        echo "FAIL: droce $role: ${IL_PAIR_WHY}droce exit $IL_DRC, guest exit $IL_GRC"
        tail -n 12 "$dir/droce.log" "$dir/guest.log"
        IL_FAIL=$((IL_FAIL + 1))
    fi
done
echo "$IL_PASS passed, $IL_FAIL failed ($OUT)"
[ "$IL_FAIL" = 0 ]
