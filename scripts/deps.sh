#!/usr/bin/env bash
# Install everything droce needs to build, test and run the interop suite (Debian 12).
# Idempotent and fast when everything is present: one dpkg-query call, no apt-get at all.
# `apt-get update` runs only when something is missing. Must run as root (or via sudo).
#
#   scripts/deps.sh            install what is missing
#   scripts/deps.sh --check    exit 1 (listing them) if anything is missing; install nothing
#   scripts/deps.sh --bench    also what the benchmarks' plots need (./dev.sh bench, soak)
set -euo pipefail

PKGS=(
  # build
  meson ninja-build pkg-config clang libclang-rt-14-dev
  libdpdk-dev dpdk dpdk-dev libspdlog-dev libibverbs-dev libpcap-dev
  # unmodified verbs programs run on droce's libibverbs in tests/verbs (ibv_devinfo, ibv_rc_pingpong,
  # perftest's ib_write_bw ...)
  ibverbs-utils perftest
  # ... and unmodified rdma_cm programs on droce's librdmacm in tests/rdmacm (rping, ucmatose,
  # rdma_server/rdma_client, qperf, fio's rdma engine; the headers for lib/rdmacm)
  librdmacm-dev rdmacm-utils qperf fio
  # tests / benchmarks (dpdk-dev ships dpdk-testpmd)
  libgtest-dev libbenchmark-dev
  # interop referee (shared/rxe-peer/rxe-vm): qemu, guest busybox, apt-get download + dpkg-deb,
  # module decompression, initramfs gzip, iproute2 for taps/bridges
  qemu-system-x86 busybox-static iproute2 xz-utils zstd gzip coreutils mawk apt dpkg
  # capture and dissection, helpers used by tests/interop
  tcpdump tshark python3 procps
)
# bench/plot_*.py run under /usr/bin/python3: Debian's matplotlib, not in CI's set
if [ "${1:-}" = --bench ]; then
  PKGS+=(python3-matplotlib)
  shift
fi

missing() {
  # dpkg-query prints one line per known package; unknown packages go to stderr and count as missing
  local have
  have=$( { dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PKGS[@]}" 2>/dev/null || true; } |
         awk '$2 ~ /^ii/ {print $1}' | sed 's/:.*//' | sort -u)
  local p
  for p in "${PKGS[@]}"; do
    grep -qx -- "$p" <<<"$have" || echo "$p"
  done
}

MISSING=(); while read -r p; do [ -n "$p" ] && MISSING+=("$p"); done <<<"$(missing)"
if ((${#MISSING[@]} == 0)); then
  echo "deps: all ${#PKGS[@]} packages present"
  exit 0
fi
if [ "${1:-}" = --check ]; then
  echo "deps: missing: ${MISSING[*]}" >&2
  exit 1
fi

SUDO=
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "deps: need root to install: ${MISSING[*]}" >&2; exit 1; }
  SUDO=sudo
fi

export DEBIAN_FRONTEND=noninteractive
echo "deps: installing ${MISSING[*]}"
# tshark (wireshark-common) asks whether non-root users may capture: answer no, never prompt
echo 'wireshark-common wireshark-common/install-setuid boolean false' | $SUDO debconf-set-selections
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -q
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends \
  -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold "${MISSING[@]}"

STILL=(); while read -r p; do [ -n "$p" ] && STILL+=("$p"); done <<<"$(missing)"
if ((${#STILL[@]})); then
  echo "deps: still missing after install: ${STILL[*]}" >&2
  exit 1
fi
echo "deps: done"
