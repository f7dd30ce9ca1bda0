#!/usr/bin/env bash
# Unmodified ibverbs-utils on droce (no kernel RDMA): ibv_devices and ibv_devinfo under
# droce-run list the droce device of a configuration file (a net_ring port: no peer
# needed, link up) with its GUID, port state and GIDs; droce's own C verbs program walks
# the verbs and their error paths; without DROCE_CONFIG or with a bad file, no device and
# a message that says why; a program forked after its first verb gets a clear refusal in
# the child; a SIGKILLed program's runtime directory goes at the next start. Every run
# leaves no EAL runtime directory behind.
# Usage: test_verbs_tools.sh PATH/TO/droce-run PATH/TO/verbs_api_test PATH/TO/verbs_fork_test
set -u
# Only what droce-run sets: meson points LD_LIBRARY_PATH at the library for its tests.
unset LD_LIBRARY_PATH
run=${1:?usage: $0 DROCE_RUN VERBS_API_TEST}
api_test=${2:?usage: $0 DROCE_RUN VERBS_API_TEST VERBS_FORK_TEST}
fork_test=${3:?usage: $0 DROCE_RUN VERBS_API_TEST VERBS_FORK_TEST}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}

for tool in ibv_devices ibv_devinfo; do
    command -v $tool >/dev/null || { echo "SKIP: $tool missing (ibverbs-utils)"; exit 77; }
done

cat >"$work/ring.conf" <<CONF
# droce on a net_ring port (its frames come back to it): a device with its link up.
[eal]
vdev = net_ring0

[port]
device = net_ring0
ip = 10.81.0.1/24
mac = 02:00:00:00:81:01
CONF

runtime_dirs() { ls -d /var/run/dpdk/droce-* "${XDG_RUNTIME_DIR:-/nonexistent}"/dpdk/droce-* 2>/dev/null | sort; }
before=$(runtime_dirs)

# expect NAME FILE PATTERN...: every (fixed-string) pattern is in FILE.
expect() {
    local name=$1 file=$2
    shift 2
    for p in "$@"; do
        grep -qF -- "$p" "$file" || { fail "$name: no '$p' in:"; sed 's/^/    /' "$file"; return; }
    done
    echo "ok: $name"
}

timeout 60 "$run" --config "$work/ring.conf" ibv_devices >"$work/devices" 2>&1 ||
    fail "ibv_devices exited $?"
expect "ibv_devices lists droce0 and its GUID" "$work/devices" droce0 000000fffe008101

timeout 60 "$run" --config "$work/ring.conf" ibv_devinfo >"$work/devinfo" 2>&1 ||
    fail "ibv_devinfo exited $?"
expect "ibv_devinfo: device, GUID, port" "$work/devinfo" $'hca_id:\tdroce0' \
    '0000:00ff:fe00:8101' 'PORT_ACTIVE (4)' 'Ethernet' 'InfiniBand (0)'

timeout 60 "$run" --config "$work/ring.conf" ibv_devinfo -v >"$work/devinfo_v" 2>&1 ||
    fail "ibv_devinfo -v exited $?"
expect "ibv_devinfo -v: GIDs" "$work/devinfo_v" '::ffff:10.81.0.1, RoCE v2' 'max_qp_wr:'

# run_checks PROGRAM: a C verbs program of droce's own; every line "ok", exit 0.
run_checks() {
    local name out rc
    name=$(basename "$1")
    out=$work/$name.out
    timeout 60 "$run" --config "$work/ring.conf" "$1" >"$out" 2>&1
    rc=$?
    if [[ $rc -ne 0 ]] || grep -q '^FAIL' "$out"; then
        fail "$name exited $rc:"
        sed 's/^/    /' "$out"
    else
        echo "ok: $name ($(grep -c '^ok' "$out") checks)"
    fi
}
run_checks "$api_test"

# No configuration: droce's library is found, lists nothing and says why.
libdir=$(sed -n "s/^libdir='\(.*\)'$/\1/p" "$run")
env -u DROCE_CONFIG LD_LIBRARY_PATH="$libdir" timeout 30 ibv_devices >"$work/noconf" 2>&1
expect "no DROCE_CONFIG: no device, a reason" "$work/noconf" 'DROCE_CONFIG is not set'
grep -q droce0 "$work/noconf" && fail "no DROCE_CONFIG: droce0 listed"

# A configuration error names the file and line.
printf '[port]\ndevice = net_ring0\nip = 10.81.0.1/24\nbogus = 1\n' >"$work/bad.conf"
timeout 30 "$run" --config "$work/bad.conf" ibv_devices >"$work/badconf" 2>&1
expect "bad configuration: file and line named" "$work/badconf" "$work/bad.conf:4"

"$run" 2>"$work/usage" && fail "droce-run without a program succeeded"
expect "droce-run without a program: usage" "$work/usage" 'usage: droce-run'

# A program that forks after its first verb: the child's verbs fail at once (ENODEV, a
# message naming the way out), its exit leaves the parent's engine alone.
timeout 60 "$run" --config "$work/ring.conf" "$fork_test" >"$work/fork" 2>&1 ||
    fail "verbs_fork_test exited $?: $(grep -E '^FAIL' "$work/fork" | tr '\n' ' ')"
expect "fork after the first verb: the child refused, the parent unharmed" "$work/fork" \
    '0 failure(s)' 'forked after droce started' 'use threads (fio: thread=1)'

# A program killed with SIGKILL runs no exit handler: its runtime directory stays, and
# the next droce process to start removes it (its pid is gone).
timeout 60 "$run" --config "$work/ring.conf" ibv_rc_pingpong -g 1 -p 23999 >"$work/killed" 2>&1 &
victim=$!
for _ in $(seq 100); do
    kid=$(pgrep -P "$victim" -x ibv_rc_pingpong || pgrep -P "$victim" -f ibv_rc_pingpong | head -1)
    [[ -n $kid && -d /var/run/dpdk/droce-$kid ]] && break
    sleep 0.1
done
if [[ -z ${kid:-} || ! -d /var/run/dpdk/droce-$kid ]]; then
    fail "SIGKILL: the program's runtime directory never appeared (pid ${kid:-none})"
else
    kill -9 "$kid"
    wait "$victim" 2>/dev/null
    if [[ ! -d /var/run/dpdk/droce-$kid ]]; then
        fail "SIGKILL: the directory went with the process (the check proves nothing)"
    else
        timeout 30 "$run" --config "$work/ring.conf" ibv_devices >/dev/null 2>&1
        [[ -d /var/run/dpdk/droce-$kid ]] &&
            fail "SIGKILL: /var/run/dpdk/droce-$kid still there after the next start" ||
            echo "ok: a SIGKILLed program's runtime directory removed by the next start"
    fi
fi

after=$(runtime_dirs)
left=$(comm -13 <(echo "$before") <(echo "$after") | tr '\n' ' ')
[[ -z ${left// /} ]] || fail "EAL runtime directories left behind: $left"

if [[ $fails -ne 0 ]]; then echo "$fails check(s) failed"; exit 1; fi
echo "all verbs tool checks passed"
