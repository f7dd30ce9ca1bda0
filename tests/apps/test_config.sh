#!/usr/bin/env bash
# Configuration files (issue 11 item 2): every tool runs from a file in config/, the
# flags given override the file, and every bad file (unknown section, unknown key, bad
# value, out-of-range value, duplicate key or section, a line that is neither, keys this
# build does not support, missing and unreadable files) ends the tool with one line on
# stderr naming the file, line and key, and a non-zero exit, before the EAL starts.
# Usage: test_config.sh CONFIG_DIR droce-perf droce-pingpong droce-info droce-fabric
set -u
# shellcheck source=../../scripts/fabric_ready.sh
. "$(dirname "$0")/../../scripts/fabric_ready.sh"
cfg=${1:?usage: $0 CONFIG_DIR droce-perf droce-pingpong droce-info droce-fabric}
perf=${2:?} pp=${3:?} info=${4:?} fab=${5:?}
work=$(mktemp -d)
chmod 755 "$work"
port=$((23000 + $$ % 20000))
bg=()
cleanup() {
    for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$work"
    rm -f /tmp/droce-memif.sock /tmp/droce-fabric-0.sock /tmp/droce-fabric-1.sock
}
trap cleanup EXIT
fails=0
out=$work/out err=$work/err
fail() {
    echo "FAIL: $*"
    echo "--- stdout"; tail -n 15 "$out"; echo "--- stderr"; tail -n 15 "$err"
    fails=$((fails + 1))
}

# ---- every tool from a file in config/ ----

# droce-perf and droce-pingpong from droce.conf as shipped (the loopback demo).
if timeout 120 "$perf" write_bw --config "$cfg/droce.conf" -n 200 >"$out" 2>"$err" &&
    grep -Eq '^ 65536 +200 ' "$out" && grep -q ' GID index       : 1$' "$out" &&
    grep -q ' Mtu             : 1024\[B\]$' "$out"; then
    echo "ok: droce-perf write_bw --config droce.conf"
else fail "droce-perf write_bw --config droce.conf"; fi
if timeout 120 "$pp" --config "$cfg/droce.conf" -n 200 -c >"$out" 2>"$err" &&
    grep -q 'iters in' "$out"; then
    echo "ok: droce-pingpong --config droce.conf"
else fail "droce-pingpong --config droce.conf"; fi

# The file's values are used, and the flags override them: Ethernet MTU 600 carries a
# 512-byte path MTU, counters are printed; GID index 0 (the link-local GID) shows in the
# banner (droce refuses the IPv6 path it needs for now; -x 1 below fixes that).
sed -e 's/^mtu = 1500 /mtu = 600 /' -e 's/^gid_index = 1 /gid_index = 0 /' \
    -e 's/^counters = off /counters = on /' "$cfg/droce.conf" >"$work/small.conf"
timeout 120 "$perf" write_bw --config "$work/small.conf" -n 200 >"$out" 2>"$err"
if grep -q ' Mtu             : 512\[B\]$' "$out" && grep -q ' GID index       : 0$' "$out" &&
    grep -q '^\[server\] device .* counters:$' "$out"; then
    echo "ok: droce-perf uses the file's mtu, gid_index and counters"
else fail "droce-perf with mtu = 600, gid_index = 0, counters = on"; fi
if timeout 120 "$perf" write_bw --config "$work/small.conf" -n 200 --eth-mtu 1500 -x 1 \
    >"$out" 2>"$err" && grep -q ' Mtu             : 1024\[B\]$' "$out" &&
    grep -q ' GID index       : 1$' "$out" && grep -Eq '^ 65536 +200 ' "$out"; then
    echo "ok: --eth-mtu and -x override the file"
else fail "--eth-mtu 1500 -x 1 over mtu = 600, gid_index = 0"; fi

# RoCEv1 GIDs from the file ([port] gid_type = v1) and from the flag (--gid-type v1):
# the demo has GIDs 0-2, so GID 3 is then the RoCEv1 twin of GID 0 (link-local), and
# the frames are received as RoCEv1.
sed -e 's/^gid_index = 1 /gid_index = 3 /' -e 's/^counters = off /counters = on /' \
    -e 's/^\[port\]$/[port]\ngid_type = v1/' "$cfg/droce.conf" >"$work/v1.conf"
if timeout 120 "$perf" write_bw --config "$work/v1.conf" -n 200 >"$out" 2>"$err" &&
    grep -q ' GID index       : 3$' "$out" && grep -Eq '^ 65536 +200 ' "$out" &&
    grep -Eq '^\[server\]   rx_rocev1_packets +[1-9]' "$out"; then
    echo "ok: droce-perf over a RoCEv1 GID from gid_type = v1"
else fail "droce-perf --config v1.conf (gid_type = v1, gid_index = 3)"; fi
if timeout 120 "$pp" --config "$cfg/droce.conf" --gid-type v1 -g 3 -n 200 -c --counters \
    >"$out" 2>"$err" && grep -q 'iters in' "$out" &&
    grep -Eq '^\[server\]   rx_rocev1_packets +[1-9]' "$out"; then
    echo "ok: droce-pingpong --gid-type v1 -g 3"
else fail "droce-pingpong --gid-type v1 -g 3"; fi
# Without it the table has no index 3.
if ! timeout 60 "$pp" --config "$cfg/droce.conf" --gid-type v2 -g 3 -n 10 >"$out" 2>"$err"; then
    echo "ok: droce-pingpong --gid-type v2 has no GID 3"
else fail "droce-pingpong --gid-type v2 -g 3 ran"; fi
for t in "$perf" "$pp"; do
    args=(--loopback --gid-type v3)
    [[ $(basename "$t") == droce-perf ]] && args=(write_bw "${args[@]}")
    "$t" "${args[@]}" >"$out" 2>"$err"
    if [[ $? == 1 ]] && grep -q "invalid value 'v3' for --gid-type" "$err"; then
        echo "ok: $(basename "$t") --gid-type v3 refused"
    else fail "$(basename "$t") --gid-type v3"; fi
done

# [eal] is used when the command line gives no EAL arguments, and replaced as a whole
# when it does: a vdev no driver knows makes the EAL fail only in the first case.
sed -e 's/^\[eal\]$/[eal]\nvdev = net_nosuchdriver0/' "$cfg/droce.conf" >"$work/eal.conf"
timeout 60 "$perf" write_bw --config "$work/eal.conf" -n 200 >"$out" 2>"$err"
if [[ $? == 1 ]] && grep -q "^Couldn't start droce (EAL args: .* --vdev net_nosuchdriver0)" "$err"; then
    echo "ok: [eal] vdev reaches the EAL"
else fail "[eal] vdev = net_nosuchdriver0 without EAL arguments"; fi
if timeout 120 "$perf" write_bw -l 0 --no-huge -m 512 --no-pci --no-shconf \
    --log-level='*:warning' -- --config "$work/eal.conf" -n 200 >"$out" 2>"$err" &&
    grep -Eq '^ 65536 +200 ' "$out"; then
    echo "ok: EAL arguments on the command line replace [eal]"
else fail "EAL arguments on the command line over [eal]"; fi

# Two droce-perf processes over net_memif from memif-server.conf and memif-client.conf;
# droce-info finds the server from the same file (its [eal] file prefix).
rm -f /tmp/droce-memif.sock
port=$((port + 1))
timeout 60 "$perf" write_bw --config "$cfg/memif-server.conf" -n 500 -p "$port" \
    >"$work/srv" 2>&1 &
srv=$!
bg+=("$srv")
ok=0
for _ in $(seq 100); do
    if "$info" --config "$cfg/memif-server.conf" >"$out" 2>"$err" &&
        grep -q $'^hca_id:\tnet_memif0$' "$out" && grep -q '::ffff:10.79.0.1, RoCE v2$' "$out"; then
        ok=1
        break
    fi
    sleep 0.1
done
[[ $ok == 1 ]] && echo "ok: droce-info --config memif-server.conf shows the server's device" ||
    fail "droce-info --config memif-server.conf"
if timeout 60 "$perf" write_bw --config "$cfg/memif-client.conf" -n 500 -p "$port" 127.0.0.1 \
    >"$out" 2>"$err" && grep -Eq '^ 65536 +500 ' "$out" && wait "$srv"; then
    echo "ok: droce-perf server and client over net_memif from memif-server/client.conf"
else fail "droce-perf over net_memif from config files"; cat "$work/srv"; fi

# droce-fabric from fabric.conf (its two memif ports, a 1 Gb/s bottleneck toward port 1),
# the options overriding it; then droce-perf through it.
if timeout 30 "$fab" --config "$cfg/fabric.conf" --secs 0.5 >"$out" 2>"$err" &&
    grep -q 'bottleneck toward 1: 1.000 Gb/s, buffer 2000000 B' "$out"; then
    echo "ok: droce-fabric --config fabric.conf"
else fail "droce-fabric --config fabric.conf"; fi
if timeout 30 "$fab" --config "$cfg/fabric.conf" --secs 0.5 --rate-gbps 2 >"$out" 2>"$err" &&
    grep -q 'bottleneck toward 1: 2.000 Gb/s' "$out"; then
    echo "ok: droce-fabric --rate-gbps overrides the file"
else fail "droce-fabric --config fabric.conf --rate-gbps 2"; fi
timeout 60 "$fab" --config "$cfg/fabric.conf" --secs 40 >"$work/fab" 2>&1 &
fpid=$!
bg+=("$fpid")
fabric_ready "$work/fab" "$fpid" || fail "droce-fabric --config fabric.conf did not start its ports"
eal=(-l 0 --no-huge -m 512 --no-pci --no-shconf --log-level='*:warning')
port=$((port + 1))
timeout 40 "$perf" write_bw "${eal[@]}" --file-prefix "cfs$$" \
    --vdev=net_memif0,role=client,socket=/tmp/droce-fabric-1.sock,socket-abstract=no -- \
    --ip 10.78.0.1/24 -n 300 -p "$port" --timeout 30 >"$work/srv" 2>&1 &
srv=$!
bg+=("$srv")
sleep 1
timeout 40 "$perf" write_bw "${eal[@]}" --file-prefix "cfc$$" \
    --vdev=net_memif0,role=client,socket=/tmp/droce-fabric-0.sock,socket-abstract=no -- \
    --ip 10.78.0.2/24 -n 300 -p "$port" --timeout 30 127.0.0.1 >"$out" 2>"$err"
crc=$?
wait "$srv"
src=$?
kill -INT "$fpid"
wait "$fpid"
frc=$?
enq=$(awk '$1 == "port" && $2 == "1:" { for (i = 1; i < NF; ++i) if ($i == "enqueued") print $(i + 1) }' "$work/fab")
if [[ $crc == 0 && $src == 0 && $frc == 0 && ${enq:-0} -gt 0 ]] && grep -Eq '^ 65536 +300 ' "$out"; then
    echo "ok: droce-perf through droce-fabric --config fabric.conf ($enq frames queued)"
else
    fail "droce-perf through droce-fabric: client $crc, server $src, fabric $frc, enqueued ${enq:-none}"
    cat "$work/fab"
fi

# af_packet.conf needs a tap0: droce-info checks the whole file (as the tools do) and then
# looks for its process (droce-af-packet), which is not running.
"$info" --config "$cfg/af_packet.conf" >"$out" 2>"$err"
if [[ $? == 1 ]] && grep -q 'no running droce process found .*/droce-af-packet/' "$err"; then
    echo "ok: af_packet.conf is valid (droce-info looked for its process)"
else fail "droce-info --config af_packet.conf"; fi

# ---- bad files: one line on stderr naming file, line and key; exit code ----

# bad TOOL RC PATTERN CONFIG [ARGS...]: the tool refuses CONFIG before the EAL starts.
bad() {
    local tool=$1 rc=$2 pattern=$3 conf=$4 name
    shift 4
    name=$(basename "$tool")
    case $name in
    droce-perf) "$tool" write_bw --config "$conf" "$@" >"$out" 2>"$err" ;;
    droce-fabric) "$tool" --config "$conf" "$@" >"$out" 2>"$err" ;;
    *) "$tool" --config "$conf" "$@" >"$out" 2>"$err" ;;
    esac
    local got=$?
    if [[ $got != "$rc" ]]; then fail "$name '$pattern': exit $got, expected $rc"; return; fi
    grep -qF -- "$pattern" "$err" || { fail "$name: stderr lacks '$pattern'"; return; }
    [[ $(wc -l <"$err") == 1 ]] || { fail "$name '$pattern': not one line on stderr"; return; }
    echo "ok: $name: $(cat "$err")"
}
c=$work/bad.conf
# case CONTENT PATTERN: every device tool (droce-perf, droce-pingpong, droce-info).
case_all() {
    printf '%b' "$1" >"$c"
    bad "$perf" 1 "$2" "$c"
    bad "$pp" 1 "$2" "$c"
    bad "$info" 1 "$2" "$c"
}
case_all '[port]\nloopback = on\n[bogus]\nx = 1\n' "$c:3: unknown section [bogus]"
case_all '[port]\nloopback = on\nbogus_key = 1\n' "$c:3: [port] unknown key 'bogus_key'"
case_all '[dcqcn]\nenabled = maybe\n' "$c:2: [dcqcn] enabled = maybe: want on or off"
case_all '[port]\nmtu = 1500x\n' "$c:2: [port] mtu = 1500x: not a number (want 576..9600)"
case_all '# comment\n[qp]\nretry_cnt = 8\n' "$c:3: [qp] retry_cnt = 8: out of range (want 0..7)"
case_all '[dcqcn]\nrpg_gd = 16\n' "$c:2: [dcqcn] rpg_gd = 16: out of range (want 1..15)"
case_all '[pfc]\npriority = 8\n' "$c:2: [pfc] priority = 8: want a priority 0..7 or none"
case_all '[qp]\ntimeout = 14\n\ntimeout = 15  # again\n' "$c:4: [qp] timeout: duplicate key (first at line 2)"
case_all '[qp]\ntimeout = 14\n[pfc]\nstorm_ms = 5\n[qp]\n' "$c:5: duplicate section [qp] (first at line 1)"
case_all '[port]\nloopback on\n' "$c:2: expected '[section]' or 'key = value', found 'loopback on'"
case_all '[port\n' "$c:1: section heading without ']'"
case_all 'ip = 10.0.0.1/24\n' "$c:1: 'ip' before any [section]"
case_all '[port]\nip =\n' "$c:2: [port] ip: empty value"
case_all '[port]\nip = 10.0.0.300/24\n' "$c:2: [port] ip = 10.0.0.300/24: want A.B.C.D/P"
case_all '[port]\nvlan = 5000\n' "$c:2: [port] vlan = 5000: out of range (want 1..4094)"
case_all '[port]\ngateway = 10.0.0.300\n' "$c:2: [port] gateway = 10.0.0.300: want an IPv4 or IPv6 address"
case_all '[port]\nip6 = fd00::1\n' "$c:2: [port] ip6 = fd00::1: want X:Y::Z/P"
case_all '[port]\nip6 = fd00::1/64@5000\n' "$c:2: [port] ip6 = fd00::1/64@5000: want a VLAN 0..4094 after '@'"
case_all '[port]\ngid_type = v3\n' "$c:2: [port] gid_type = v3: want v1 (RoCEv1 GIDs too) or v2"
case_all '[qp]\nwindow = 64\n' "$c:2: [qp] window = 64: not supported by this build"
case_all '[capture]\nsnaplen = 10\n' "$c:2: [capture] snaplen = 10: out of range (want 64..65535)"
printf '[engine]\nworkers = 2\n' >"$c"
bad "$pp" 1 "$c:2: [engine] workers: not used by droce-pingpong" "$c"
printf '[engine]\nworkers = 200\n' >"$c"
bad "$perf" 1 "$c:2: [engine] workers = 200: want 0..128" "$c"
bad "$perf" 1 "--config given twice" "$cfg/droce.conf" --config "$cfg/droce.conf"
for t in "$perf" "$pp" "$info"; do
    bad "$t" 1 "$work/missing.conf: cannot open: No such file or directory" "$work/missing.conf"
    bad "$t" 1 "$work: not a regular file" "$work"
done
# Unreadable: as an unprivileged user (root reads a mode-000 file).
printf '[port]\nloopback = on\n' >"$work/secret.conf"
chmod 000 "$work/secret.conf"
if [[ $(id -u) != 0 ]]; then
    bad "$perf" 1 "$work/secret.conf: cannot open: Permission denied" "$work/secret.conf"
elif command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups \
    test -x "$perf"; then
    setpriv --reuid=65534 --regid=65534 --clear-groups "$perf" write_bw --config \
        "$work/secret.conf" >"$out" 2>"$err"
    rc=$?
    if [[ $rc == 1 ]] && grep -qF "$work/secret.conf: cannot open: Permission denied" "$err" &&
        [[ $(wc -l <"$err") == 1 ]]; then
        echo "ok: droce-perf as nobody: $(cat "$err")"
    else fail "unreadable file: exit $rc"; fi
else
    echo "skip: unreadable file (root, and no setpriv or the binary is not reachable as nobody)"
fi
# --line-rate and --tx-burst (the pacer's inputs, issue 10): a bad value on the command line
# or in [port] ends the tool with a line naming the option and what it wants.
# badarg TOOL RC PATTERN ARGS...: the tool refuses ARGS before the EAL starts.
badarg() {
    local tool=$1 rc=$2 pattern=$3 name
    shift 3
    name=$(basename "$tool")
    case $name in
    droce-perf) "$tool" write_bw "$@" >"$out" 2>"$err" ;;
    *) "$tool" "$@" >"$out" 2>"$err" ;;
    esac
    local got=$?
    if [[ $got != "$rc" ]]; then fail "$name $*: exit $got, expected $rc"; return; fi
    # The first line of stderr names it (droce-pingpong prints its usage after it).
    head -n 1 "$err" | grep -qF -- "$pattern" ||
        { fail "$name $*: stderr's first line lacks '$pattern'"; return; }
    [[ $name != droce-perf || $(wc -l <"$err") == 1 ]] ||
        { fail "$name $*: not one line on stderr"; return; }
    echo "ok: $name $*: $(head -n 1 "$err")"
}
rate_want="(a rate in bit/s, suffix k, m or g (e.g. 1g))"
burst_want="(frames 0..4096 (0 = off))"
for v in 0 abc 1gb -1g " 1g" 0x1p30 inf 1e14; do
    badarg "$perf" 1 "invalid value '$v' for --line-rate $rate_want" "--line-rate=$v"
done
badarg "$pp" 1 "invalid value '10x' for --line-rate $rate_want" --line-rate 10x
for v in 4097 -1 x 1.5 ""; do
    badarg "$perf" 1 "invalid value '$v' for --tx-burst $burst_want" "--tx-burst=$v"
done
badarg "$pp" 1 "invalid value '99999' for --tx-burst $burst_want" --tx-burst 99999
case_all '[port]\nline_rate = 1gb\n' "$c:2: [port] line_rate = 1gb: want a rate in bit/s"
case_all '[port]\ntx_burst = 4097\n' "$c:2: [port] tx_burst = 4097: out of range (want 0..4096)"
# RC responder pacing and the CM's stateless-answer bucket (issue 15): [qp] and [cm] keys,
# flags of the same names; out of range is an error naming the range.
case_all '[qp]\nseq_nak_after_run = 4097\n' "$c:2: [qp] seq_nak_after_run = 4097: out of range (want 0..4096)"
case_all '[qp]\ndup_ack_interval_ns = 1ms\n' "$c:2: [qp] dup_ack_interval_ns = 1ms: not a number (want 0..10000000000)"
case_all '[qp]\nseq_nak_interval_ns = 10000000001\n' "$c:2: [qp] seq_nak_interval_ns = 10000000001: out of range (want 0..10000000000)"
case_all '[cm]\nstateless_burst = 0\n' "$c:2: [cm] stateless_burst = 0: out of range (want 1..65536)"
case_all '[cm]\nstateless_per_sec = 2000000\n' "$c:2: [cm] stateless_per_sec = 2000000: out of range (want 0..1000000)"
case_all '[cm]\nstateless = 5\n' "$c:2: [cm] unknown key 'stateless'"
badarg "$perf" 1 "invalid value '4097' for --seq-nak-after-run (packets 0..4096)" --seq-nak-after-run=4097
badarg "$perf" 1 "invalid value '-1' for --dup-ack-interval-ns (nanoseconds 0..10000000000" --dup-ack-interval-ns=-1
badarg "$perf" 1 "invalid value '0' for --cm-stateless-burst (answers 1..65536)" --cm-stateless-burst=0
badarg "$pp" 1 "invalid value 'x' for --seq-nak-interval-ns (nanoseconds 0..10000000000" --seq-nak-interval-ns x
badarg "$pp" 1 "invalid value '1000001' for --cm-stateless-per-sec (answers per second 0..1000000" --cm-stateless-per-sec 1000001
# droce-fabric: its own sections, the same file/line/key errors, exit 2.
printf '[eal]\nlcores = 0\n[dcqcn]\nenabled = on\n' >"$c"
bad "$fab" 2 "$c:3: section [dcqcn] is not used by droce-fabric" "$c"
printf '[fabric]\nrate_gbps = 0\n' >"$c"
bad "$fab" 2 "$c:2: [fabric] rate_gbps = 0: want a number in 0.001 .. 1000" "$c"
printf '[fabric]\nto = 1,x\n' >"$c"
bad "$fab" 2 "$c:2: [fabric] to = 1,x: want port numbers" "$c"
printf '[fabric]\nrate = 1\n' >"$c"
bad "$fab" 2 "$c:2: [fabric] unknown key 'rate'" "$c"
printf '[fabric]\nloss = 0.1\nloss = 0.2\n' >"$c"
bad "$fab" 2 "$c:3: [fabric] loss: duplicate key (first at line 2)" "$c"
printf '[fabric]\ncorrupt = 1.5\n' >"$c"
bad "$fab" 2 "$c:2: [fabric] corrupt = 1.5: want a number in 0 .. 1 (as --corrupt)" "$c"
printf '[fabric]\nqueues = 0\n' >"$c"
bad "$fab" 2 "$c:2: [fabric] queues = 0: want a number in 1 .. 16 (as --queues)" "$c"
printf '[cm]\nstateless_burst = 2\n' >"$c"
bad "$fab" 2 "$c:1: section [cm] is not used by droce-fabric" "$c"
printf '[fabrik]\n' >"$c"
bad "$fab" 2 "$c:1: unknown section [fabrik]" "$c"
bad "$fab" 2 "$work/missing.conf: cannot open: No such file or directory" "$work/missing.conf"

if [[ $fails -ne 0 ]]; then echo "$fails check(s) failed"; exit 1; fi
echo "all configuration-file checks passed"
