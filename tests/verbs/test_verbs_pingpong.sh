#!/usr/bin/env bash
# Unmodified rdma-core 44 pingpongs on both ends, each on droce (droce-run), two processes
# over net_memif: no kernel RDMA, no VM. ibv_rc_pingpong with -c (the client validates
# what it received; the tool prints "invalid data" on a mismatch), 4096-byte messages, then
# 64-byte ones (sent inline: droce reports 256 bytes of inline data); ibv_srq_pingpong
# (16 RC QPs on one SRQ); ibv_ud_pingpong (UD, address handles; 512 bytes: the port's
# active MTU is 1024); the three again with -e (sleeping on completion events). Then droce's own extended-verbs program (verbs_wr_test.c:
# ibv_create_qp_ex and the ibv_wr_* API, ibv_create_cq_ex and ibv_start_poll), server
# and client.
# Usage: test_verbs_pingpong.sh PATH/TO/droce-run PATH/TO/verbs_wr_test
set -u
# Only what droce-run sets: meson points LD_LIBRARY_PATH at the library for its tests.
unset LD_LIBRARY_PATH
run=${1:?usage: $0 DROCE_RUN VERBS_WR_TEST}
wr_test=${2:?usage: $0 DROCE_RUN VERBS_WR_TEST}
for tool in ibv_rc_pingpong ibv_srq_pingpong ibv_ud_pingpong; do
    command -v $tool >/dev/null || { echo "SKIP: $tool missing (ibverbs-utils)"; exit 77; }
done
work=$(mktemp -d)
sock=$work/memif.sock
port=$((23000 + $$ % 20000))
trap 'rm -rf "$work"' EXIT
fails=0

conf() { # ROLE IP MAC
    printf '[eal]\nvdev = net_memif0,role=%s,socket=%s,socket-abstract=no\n\n' "$1" "$sock"
    printf '[port]\ndevice = net_memif0\nip = %s\nmac = %s\n' "$2" "$3"
}
conf server 10.82.0.1/24 02:00:00:00:82:01 >"$work/server.conf"
conf client 10.82.0.2/24 02:00:00:00:82:02 >"$work/client.conf"

listening() { ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }

# pingpong TOOL ARGS...: server and client with the same arguments; both must end well.
pingpong() {
    local tool=$1
    shift
    rm -f "$sock"
    port=$((port + 1))
    timeout 60 "$run" --config "$work/server.conf" "$tool" -g 1 -p "$port" "$@" \
        >"$work/srv" 2>&1 &
    local srv=$!
    # The server listens once its device is up: its memif link stays down without a
    # client, so droce's first ibv_get_device_list waits its 2 s for the link first.
    for _ in $(seq 100); do listening "$port" && break; sleep 0.1; done
    timeout 60 "$run" --config "$work/client.conf" "$tool" -g 1 -p "$port" "$@" \
        127.0.0.1 >"$work/cli" 2>&1
    local rc=$?
    # A client that failed leaves the server waiting for it: end the server's run.
    [[ $rc -ne 0 ]] && kill "$srv" 2>/dev/null
    wait "$srv"
    local src=$?
    if [[ $rc -ne 0 || $src -ne 0 ]] || ! grep -q 'iters in' "$work/cli" ||
        ! grep -q 'iters in' "$work/srv" || grep -qi 'invalid data' "$work/cli" "$work/srv"; then
        echo "FAIL: $tool $*: client exit $rc, server exit $src (124 = timeout)"
        echo "--- client"; tail -n 15 "$work/cli"
        echo "--- server"; tail -n 15 "$work/srv"
        fails=$((fails + 1))
        return
    fi
    echo "ok: $tool $*: $(grep 'bytes in' "$work/cli")"
}

pingpong ibv_rc_pingpong -c -n 200
pingpong ibv_rc_pingpong -c -n 200 -s 64
pingpong ibv_srq_pingpong -n 100
pingpong ibv_ud_pingpong -n 200 -s 512
# -e: completion channels (ibv_req_notify_cq, ibv_get_cq_event, ibv_ack_cq_events).
pingpong ibv_rc_pingpong -c -n 200 -e
pingpong ibv_srq_pingpong -n 100 -e
pingpong ibv_ud_pingpong -n 200 -s 512 -e

# verbs_wr_test: the two swap their QP numbers through files in $work/wr.
mkdir "$work/wr"
rm -f "$sock"
timeout 90 "$run" --config "$work/server.conf" "$wr_test" server "$work/wr" >"$work/wr_srv" 2>&1 &
srv=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.1; done
timeout 90 "$run" --config "$work/client.conf" "$wr_test" client "$work/wr" >"$work/wr_cli" 2>&1
rc=$?
[[ $rc -ne 0 ]] && kill "$srv" 2>/dev/null
wait "$srv"
src=$?
if [[ $rc -ne 0 || $src -ne 0 ]] || grep -q '^FAIL' "$work/wr_cli" "$work/wr_srv"; then
    echo "FAIL: verbs_wr_test: client exit $rc, server exit $src"
    echo "--- client"; cat "$work/wr_cli"
    echo "--- server"; cat "$work/wr_srv"
    fails=$((fails + 1))
else
    echo "ok: verbs_wr_test ($(grep -c '^ok' "$work/wr_cli") client checks, $(grep -c '^ok' "$work/wr_srv") server checks)"
fi

if [[ $fails -ne 0 ]]; then echo "$fails run(s) failed"; exit 1; fi
echo "the pingpongs and verbs_wr_test ran droce <-> droce"
