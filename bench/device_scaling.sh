#!/usr/bin/env bash
# The worker-scaling curve of issue 32 on a machine with more CPUs than this one and no
# DPDK (the device machine of bench/README "Workers on a larger machine"): pack the
# benchmarks here, run them there in one call.
#
#   bench/device_scaling.sh pack DIR       (here, after a release build) copies bench_scale,
#       droce-perf, every shared library they and the DPDK plugins they load need (glibc
#       and its loader too, so the guest's own do not matter) and this script into DIR.
#   DIR/device_scaling.sh run OUT [SECONDS] [ROUNDS]   (there) installs the plugins where
#       the EAL looks for them, then for W = 1, 2, 4, 8, 12, 16 (as many as the CPUs allow;
#       16 is the engine's kMaxWorkers):
#         - bench_scale workers, weak scaling (2 QP pairs per worker), the same with the
#           workers on neighbouring queues (--queue-stride=1: what the spacing is worth),
#           and strong scaling (32 pairs in all), worker w on CPU w, rounds alternating
#           over the W list;
#         - W separate one-worker bench_scale processes at once, on CPUs 0..W-1 (what the
#           machine gives when nothing is shared);
#         - droce-perf write_bw --loopback --worker --workers W --threads W -q 2W (worker
#           mode at every W, 1 too; a posting thread per worker, on the main lcore's CPU
#           and the CPUs after the workers'; while 2W threads fit the CPUs, and at the
#           largest such W), and in the same round W one-worker droce-perf processes at
#           once, process i on CPUs 2i and 2i+1 (its poster and its worker);
#         - where the kit holds perf (packed from here when linux-perf is installed):
#           bench/profile_workers.sh at W = 8 against W = 1 (PROFILE_W, PROFILE_ROUNDS,
#           PROFILE_SECONDS override), its table in OUT/profile.md, its per-function
#           samples in OUT/profile.tgz.
#       Everything goes to OUT: scaling.csv (rows for bench/plot_workers.py), the logs (as
#       logs.tgz), and the machine's description (machine.txt). SECONDS per run (default
#       1), ROUNDS (default 3).
#
# Then here: bench/plot_workers.py OUT/scaling.csv bench/workers_scaling.png
set -euo pipefail
cmd=${1:-}
here=$(cd "$(dirname "$0")" && pwd)

pack() {
    local dir=${1:?usage: $0 pack DIR} root
    root=$(cd "$here/.." && pwd)
    local bins=("$root/build/bench/bench_scale" "$root/build/apps/droce-perf/droce-perf")
    local pmd_dir=/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0
    local pmds=("$pmd_dir/librte_mempool_ring.so.23" "$pmd_dir/librte_net_ring.so.23")
    for b in "${bins[@]}" "${pmds[@]}"; do
        [[ -e $b ]] || { echo "$0: $b is missing (release build first)" >&2; exit 2; }
    done
    mkdir -p "$dir/bin" "$dir/lib"
    cp "${bins[@]}" "$dir/bin/"
    cp -L -n "${pmds[@]}" "$dir/lib/"
    printf '%s\n' "${pmds[@]##*/}" >"$dir/plugins.txt"
    cp "$0" "$dir/device_scaling.sh"
    cp "$here/profile_workers.sh" "$dir/profile_workers.sh"
    # perf, when installed here, for the per-function profile there (the guest has none).
    # The benchmarks keep their symbols for it.
    local perf_bin
    perf_bin=$(command -v perf || true)
    [[ -n $perf_bin ]] && cp -L "$perf_bin" "$dir/bin/perf.real" && bins+=("$perf_bin")
    local f lib
    for f in "${bins[@]}" "${pmds[@]}"; do
        ldd "$f" | awk '/=> \// {print $3} /^\t\/.*ld-linux/ {print $1}' | while read -r lib; do
            cp -L -n "$lib" "$dir/lib/"
        done
    done
    strip --strip-unneeded "$dir"/bin/perf.real "$dir"/lib/*.so* 2>/dev/null || true
    du -sh "$dir"
}

run() {
    local out=${1:?usage: $0 run OUT [SECONDS] [ROUNDS]} secs=${2:-1} rounds=${3:-3}
    # The kit runs from a root-owned copy: the EAL refuses plugins below a world-writable
    # directory, and the tree the kit came in may be one.
    local d=/opt/droce-scaling ld
    rm -rf "$d"
    mkdir -p "$d"
    chmod 755 "$d"
    cp -a "$here"/bin "$here"/lib "$here"/plugins.txt "$here"/profile_workers.sh "$d"/
    ld=$(ls "$d"/lib/ld-linux-x86-64.so.* | head -1)
    # The EAL dlopens every plugin of its directory named *.so or *.so.23.0: there they
    # must be links to the very files the binaries load (a second copy of a driver
    # registers it twice).
    local pmd_dir=/usr/lib/x86_64-linux-gnu/dpdk/pmds-23.0 p
    mkdir -p "$out" "$pmd_dir"
    while read -r p; do
        [[ -e $pmd_dir/$p.0 ]] || ln -s "$d/lib/$p" "$pmd_dir/$p.0"
    done <"$d/plugins.txt"
    x() { "$ld" --library-path "$d/lib" "$@"; }
    local cpus ws=() w
    cpus=$(nproc)
    for w in 1 2 4 8 12 16; do ((w <= cpus)) && ws+=("$w"); done
    local list
    list=$(IFS=,; echo "${ws[*]}")
    {
        echo "date: $(date -u)"
        echo "nproc: $cpus"
        grep -m1 'model name' /proc/cpuinfo || true
        grep -m1 -o 'avx512[a-z]*' /proc/cpuinfo | head -1 || true
        uname -a
        # Which CPUs are hyperthreads of one core: a worker's rate depends on its sibling.
        local c
        for c in /sys/devices/system/cpu/cpu[0-9]*; do
            echo "${c##*/}: siblings $(cat "$c/topology/thread_siblings_list" 2>/dev/null)" \
                "core $(cat "$c/topology/core_id" 2>/dev/null)"
        done | sort -V
    } >"$out/machine.txt"
    local csv=$out/scaling.csv
    : >"$csv"
    # Weak scaling with the adapter's queue spacing and with neighbouring queues (the
    # layout before the queue stride: what the ring PMD's shared per-queue line costs),
    # a round of each in turn.
    echo "== weak scaling (2 QP pairs per worker), W = $list; the same, --queue-stride=1"
    local r
    for r in $(seq "$rounds"); do
        x "$d/bin/bench_scale" workers --workers="$list" --pairs=2 --rounds=1 \
            --seconds="$secs" --csv="$csv" | tee -a "$out/weak.log" | grep '^round'
        x "$d/bin/bench_scale" workers --workers="$list" --pairs=2 --rounds=1 \
            --seconds="$secs" --queue-stride=1 --csv="$csv" | tee -a "$out/weak_stride1.log" |
            sed -n 's/^round/stride 1: round/p'
    done
    echo "== strong scaling (32 QP pairs in all), W = $list"
    x "$d/bin/bench_scale" workers --workers="$list" --total-pairs=32 --rounds="$rounds" \
        --seconds="$secs" --csv="$csv" | tee "$out/strong.log" | grep -v '^csv,'
    echo "== W one-worker processes at once"
    local i sum
    for r in $(seq "$rounds"); do
        for w in "${ws[@]}"; do
            for i in $(seq 0 $((w - 1))); do
                x "$d/bin/bench_scale" workers --workers=1 --rounds=1 --seconds="$secs" \
                    --cpus="$i" >"$out/proc.$w.$i.log" 2>&1 &
            done
            wait
            sum=$(cat "$out"/proc."$w".*.log | awk '/^round/ {s += $4} END {printf "%.4f", s}')
            echo "round $r: $w processes: $sum Mpps" | tee -a "$out/procs.log"
            echo "procs,loopback,$w,$r,$sum" >>"$csv"
            rm -f "$out"/proc."$w".*.log
        done
    done
    echo "== droce-perf --workers W --threads W -q 2W (worker mode); W one-worker droce-perf processes"
    local m pws=() top=$((cpus / 2))
    for w in "${ws[@]}"; do ((2 * w <= cpus)) && pws+=("$w"); done
    ((top >= 1)) && [[ " ${pws[*]} " != *" $top "* ]] && pws+=("$top")
    # One droce-perf in worker mode: lcores $1 (the main lcore's CPU first, then the
    # workers'), $2 workers, as many posting threads, 2 QP pairs per worker.
    perf_run() {
        x "$d/bin/droce-perf" write_bw -l "$1" --no-huge -m 1024 --no-pci --no-shconf \
            --log-level='*:warning' -- --loopback --worker --workers "$2" --threads "$2" \
            -q $((2 * $2)) -s 64 -D "$secs" 2>>"$out/perf.err" | tee -a "$out/perf_runs.log" |
            awk '$1 == 64 && NF >= 5 {print $5}'
    }
    for r in $(seq "$rounds"); do
        for w in "${pws[@]}"; do
            m=$(perf_run "0-$w" "$w")
            echo "round $r: droce-perf W=$w: ${m:-failed} Mpps" | tee -a "$out/perf.log"
            [[ -n $m ]] && echo "perf_threads,loopback,$w,$r,$m" >>"$csv"
            # The same work as W processes of one worker and one poster, on two CPUs each:
            # what the machine gives droce-perf when the process shares nothing.
            for i in $(seq 0 $((w - 1))); do
                perf_run "$((2 * i))-$((2 * i + 1))" 1 >"$out/perf_proc.$i" &
            done
            wait
            # The sum, where every process reported its rate.
            m=$(cat "$out"/perf_proc.* | awk -v w="$w" 'NF {s += $1; n++} END {if (n == w) printf "%.4f", s}')
            echo "round $r: $w droce-perf processes: ${m:-failed} Mpps" | tee -a "$out/perf.log"
            [[ -n $m ]] && echo "perf_procs,loopback,$w,$r,$m" >>"$csv"
            rm -f "$out"/perf_proc.*
        done
    done
    [[ -x $d/bin/perf.real ]] && profile "$d" "$ld" "$out" "$cpus"
    # The device tool brings back few files: the logs travel as one archive.
    (cd "$out" && shopt -s nullglob && logs=(./*.log ./*.err) && ((${#logs[@]})) &&
        tar -czf logs.tgz "${logs[@]}" && rm -f "${logs[@]}") || true
    return 0
}

# The per-function shares at PROFILE_W workers against one, with the kit's perf and
# bench_scale run through the kit's loader (wrappers named as the script expects).
profile() {
    local d=$1 ld=$2 out=$3 cpus=$4 w=${PROFILE_W:-8}
    ((w <= cpus)) || w=$cpus
    ((w >= 2)) || return 0
    mkdir -p "$d/wrap"
    printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$ld" "$d/lib" "$d/bin/perf.real" \
        >"$d/wrap/perf"
    printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$ld" "$d/lib" "$d/bin/bench_scale" \
        >"$d/wrap/bench_scale"
    chmod +x "$d/wrap/perf" "$d/wrap/bench_scale"
    echo "== profile: W=$w against W=1 (bench/profile_workers.sh)"
    PATH="$d/wrap:$PATH" bash "$d/profile_workers.sh" --bin "$d/wrap/bench_scale" --workers "$w" \
        --rounds "${PROFILE_ROUNDS:-2}" --seconds "${PROFILE_SECONDS:-3}" --out "$out/profile" \
        2>&1 | tee "$out/profile.md" || echo "profile: failed (see $out/profile.md)"
    tar -C "$out/profile" -czf "$out/profile.tgz" --exclude='*.data' . 2>/dev/null || true
    rm -rf "$out/profile"
}

case $cmd in
pack) shift; pack "$@" ;;
run) shift; run "$@" ;;
*) echo "usage: $0 pack DIR | run OUT [SECONDS] [ROUNDS]" >&2; exit 2 ;;
esac
