#!/usr/bin/env bash
# rxe-peer.sh: thin wrapper over shared/rxe-peer/rxe-vm for the droce test suite.
# A Linux Soft-RoCE (rdma_rxe) VM under qemu TCG, attached to a host tap device.
#
#   rxe-peer.sh build                                   build/refresh the VM image (cached)
#   rxe-peer.sh up NAME TAP HOSTIP/P VMIP/P [MTU] [-- RXE-VM-START-OPTIONS...]
#        create TAP (MTU, default 1500; host address HOSTIP/P, IPv6 off) and boot VM NAME on it
#        with eth0 address VMIP/P and the same MTU. Replaces a VM/tap of the same name.
#   rxe-peer.sh down NAME TAP                           stop the VM, delete the tap (never fails)
#   rxe-peer.sh exec NAME [--timeout S] -- CMD...       run CMD in the guest; exit status = CMD's
#   rxe-peer.sh info NAME                               guest MAC/IP/GID table/active_mtu
#
# Env: RXE_VM   path of rxe-vm (default: <repo>/../shared/rxe-peer/rxe-vm)
#      RXE_HOME state dir (default: /var/cache/droce-rxe-vm, so CI runs on one machine share the
#               package/image cache; first build ~25 s, later <0.1 s)
# Measured on 2 cores / TCG: build 24 s first, <0.1 s cached; up 14-18 s on an idle machine
# (36-47 s while it compiles); exec of a trivial command 0.6-0.8 s (the guest polls every 200 ms).
set -euo pipefail

HERE=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
RXE_VM=${RXE_VM:-$REPO/../shared/rxe-peer/rxe-vm}
export RXE_HOME=${RXE_HOME:-/var/cache/droce-rxe-vm}

die() { echo "rxe-peer: $*" >&2; exit 1; }
[ -x "$RXE_VM" ] || [ -f "$RXE_VM" ] || die "rxe-vm not found at $RXE_VM (set RXE_VM)"
rxevm() { bash "$RXE_VM" "$@"; }

tap_up() { # TAP HOSTIP/P MTU
  local tap=$1 hostip=$2 mtu=$3
  ip link del "$tap" 2>/dev/null || true
  ip tuntap add dev "$tap" mode tap
  # no IPv6 on the tap: keeps router/neighbour solicitations out of captures
  sysctl -qw "net.ipv6.conf.$tap.disable_ipv6=1" 2>/dev/null || true
  ip link set "$tap" mtu "$mtu"
  ip addr add "$hostip" dev "$tap"
  ip link set "$tap" up
}

cmd_up() {
  (($# >= 4)) || die "usage: up NAME TAP HOSTIP/P VMIP/P [MTU] [-- rxe-vm start options]"
  local name=$1 tap=$2 hostip=$3 vmip=$4 mtu=1500; shift 4
  if (($#)) && [ "$1" != -- ]; then mtu=$1; shift; fi
  [ "${1:-}" = -- ] && shift
  [[ $hostip == */* && $vmip == */* ]] || die "addresses need a prefix length (A.B.C.D/P)"
  rxevm build
  rxevm stop --name "$name" 2>/dev/null || true
  tap_up "$tap" "$hostip" "$mtu"
  rxevm start --name "$name" --tap "$tap" --ip "$vmip" --mtu "$mtu" "$@"
}

cmd_down() {
  (($# == 2)) || die "usage: down NAME TAP"
  rxevm stop --name "$1" 2>/dev/null || true
  ip link del "$2" 2>/dev/null || true
  return 0
}

cmd_exec() {
  (($# >= 1)) || die "usage: exec NAME [--timeout S] -- CMD..."
  local name=$1; shift
  rxevm exec --name "$name" "$@"
}

cmd=${1:-help}; shift || true
case $cmd in
  build) rxevm build "$@";;
  up) cmd_up "$@";;
  down) cmd_down "$@";;
  exec) cmd_exec "$@";;
  info) (($# == 1)) || die "usage: info NAME"; rxevm info --name "$1";;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2;;
esac
