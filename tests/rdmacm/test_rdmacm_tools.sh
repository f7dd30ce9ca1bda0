#!/usr/bin/env bash
# Unmodified rdma_cm programs (rdma-core 44's rdmacm-utils, qperf, fio) on both ends, each
# on droce's librdmacm and libibverbs (droce-run), two processes, no kernel RDMA, no VM.
#  - direct memif (server and client roles): rping -V (the client checks every ping's
#    data), ucmatose (two connections, SENDs both ways), rdma_server / rdma_client (the
#    synchronous rdma_create_ep API), udaddy (RDMA_PS_UDP: SIDR, then UD datagrams),
#    rping bound to an address not ours (fails; its two threads exit at once: no crash);
#    rping -V and ucmatose again over IPv6 (fd84::1, fd84::2).
#  - through droce-fabric (each end a memif client, so its link is up from the start):
#    qperf -cm1 rc_bw, rc_lat, rc_rdma_write_bw, rc_rdma_read_lat (qperf's control TCP
#    connection goes to the server's RoCE address, which this script puts on lo while it
#    runs: root only), and fio --ioengine=rdma, RDMA WRITE and RDMA READ (thread=1).
#    Not qperf's ud_* tests: its UD address handle has no GRH, which RoCE needs (droce,
#    like rxe and the kernel, refuses it with EINVAL).
#  - droce's own rdmacm_channel_test: a channel destroyed under a thread waiting on it.
# Usage: test_rdmacm_tools.sh PATH/TO/droce-run PATH/TO/droce-fabric PATH/TO/rdmacm_channel_test
set -u
# shellcheck source=../../scripts/fabric_ready.sh
. "$(dirname "$0")/../../scripts/fabric_ready.sh"
unset LD_LIBRARY_PATH
run=${1:?usage: $0 DROCE_RUN DROCE_FABRIC CHANNEL_TEST}
fab=${2:?usage: $0 DROCE_RUN DROCE_FABRIC CHANNEL_TEST}
chtest=${3:?usage: $0 DROCE_RUN DROCE_FABRIC CHANNEL_TEST}
for tool in rping ucmatose rdma_server rdma_client udaddy; do
    command -v $tool >/dev/null || { echo "SKIP: $tool missing (rdmacm-utils)"; exit 77; }
done
work=$(mktemp -d)
port=$((25000 + $$ % 20000))
fpid=
lo_ip=
cleanup() {
    [[ -n $fpid ]] && kill "$fpid" 2>/dev/null
    [[ -n $lo_ip ]] && ip addr del "$lo_ip/32" dev lo 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
fails=0
fail() {
    echo "FAIL: $1"
    echo "--- client"; tail -n 15 "$work/cli"
    echo "--- server"; tail -n 15 "$work/srv"
    fails=$((fails + 1))
}

conf() { # FILE ROLE SOCKET IP MAC [IP6]
    printf '[eal]\nvdev = net_memif0,role=%s,socket=%s,socket-abstract=no\n\n' "$2" "$3" >"$1"
    printf '[port]\ndevice = net_memif0\nip = %s\nmac = %s\n' "$4" "$5" >>"$1"
    [[ -z ${6:-} ]] || printf 'ip6 = %s\n' "$6" >>"$1"
}
conf "$work/server.conf" server "$work/memif.sock" 10.84.0.1/24 02:00:00:00:84:01 fd84::1/64
conf "$work/client.conf" client "$work/memif.sock" 10.84.0.2/24 02:00:00:00:84:02 fd84::2/64

# pair NAME SERVER_CONF CLIENT_CONF "SERVER ARGS" "CLIENT ARGS" [READY]: both must exit 0.
# The server gets 2 s to bring its device up first (its memif link waits for the client),
# or, with READY, until its output says READY (up to 30 s). A tool that ignores SIGTERM at
# the time limit is killed 5 s later.
pair() {
    local name=$1 sconf=$2 cconf=$3 ready=${6:-}
    rm -f "$work/memif.sock"
    # shellcheck disable=SC2086
    timeout -k 5 60 "$run" --config "$sconf" $4 >"$work/srv" 2>&1 &
    local srv=$!
    sleep 2
    if [[ -n $ready ]]; then
        for _ in $(seq 280); do grep -q -- "$ready" "$work/srv" && break; sleep 0.1; done
    fi
    # A client that came before the server listened is refused (the tools print no
    # "listening" line to wait for): it tries again while the server runs, 3 times at most.
    local rc try
    for try in 1 2 3; do
        # shellcheck disable=SC2086
        timeout -k 5 60 "$run" --config "$cconf" $5 >"$work/cli" 2>&1
        rc=$?
        [[ $rc -ne 0 ]] && kill -0 "$srv" 2>/dev/null &&
            grep -Eq 'Connection refused|EVENT_REJECTED, error 8' "$work/cli" || break
        echo "note: $name: client refused (try $try), the server was not listening yet"
        sleep 2
    done
    [[ $rc -ne 0 ]] && kill "$srv" 2>/dev/null
    wait "$srv"
    local src=$?
    if [[ $rc -ne 0 || $src -ne 0 ]]; then
        fail "$name: client exit $rc, server exit $src (124 = timeout)"
        return 1
    fi
    return 0
}

S=$work/server.conf C=$work/client.conf
# A channel destroyed under a thread waiting in rdma_get_cm_event (the device alone: no
# peer needed).
rm -f "$work/memif.sock"
timeout -k 5 60 "$run" --config "$S" "$chtest" 10.84.0.2 >"$work/cli" 2>&1
rc=$?
if [[ $rc -eq 0 ]]; then
    grep '^ok:' "$work/cli"
else
    echo "" >"$work/srv"
    fail "rdmacm_channel_test: exit $rc"
fi
port=$((port + 1))
if pair rping "$S" "$C" "rping -s -a 10.84.0.1 -p $port -C 20 -V" \
    "rping -c -a 10.84.0.1 -p $port -C 20 -V -v"; then
    n=$(grep -c '^ping data: rdma-ping-' "$work/cli")
    if [[ $n -eq 20 ]] && ! grep -qi 'data mismatch\|invalid' "$work/cli" "$work/srv"; then
        echo "ok: rping -C 20 -V: 20 pings, data validated"
    else fail "rping: $n of 20 pings shown, or a mismatch"; fi
fi
# The same over IPv6: rping's own sockaddr_in6 (getaddrinfo), the CM's IPv6 header and
# GIDs; ND finds the peer's MAC.
port=$((port + 1))
if pair "rping IPv6" "$S" "$C" "rping -s -a fd84::1 -p $port -C 10 -V" \
    "rping -c -a fd84::1 -p $port -C 10 -V -v"; then
    n=$(grep -c '^ping data: rdma-ping-' "$work/cli")
    if [[ $n -eq 10 ]] && ! grep -qi 'data mismatch\|invalid' "$work/cli" "$work/srv"; then
        echo "ok: rping over IPv6 (fd84::1): 10 pings, data validated"
    else fail "rping IPv6: $n of 10 pings shown, or a mismatch"; fi
fi
port=$((port + 1))
if pair ucmatose "$S" "$C" "ucmatose -p $port -c 2" "ucmatose -s 10.84.0.1 -p $port -c 2"; then
    grep -q 'return status 0' "$work/cli" && grep -q 'return status 0' "$work/srv" &&
        echo "ok: ucmatose -c 2: $(grep -c 'complete' "$work/cli") completion lines" ||
        fail "ucmatose: no 'return status 0'"
fi
# ucmatose over IPv6: rdma_getaddrinfo of an IPv6 name; the server bound to in6addr_any
# (-b ::), which hears IPv6 as the kernel's does.
port=$((port + 1))
if pair "ucmatose IPv6" "$S" "$C" "ucmatose -b :: -p $port -c 2" "ucmatose -s fd84::1 -p $port -c 2"; then
    grep -q 'return status 0' "$work/cli" && grep -q 'return status 0' "$work/srv" &&
        echo "ok: ucmatose -c 2 over IPv6" || fail "ucmatose IPv6: no 'return status 0'"
fi
port=$((port + 1))
if pair "rdma_server/rdma_client" "$S" "$C" "rdma_server -s 10.84.0.1 -p $port" \
    "rdma_client -s 10.84.0.1 -p $port"; then
    grep -q 'rdma_client: end 0' "$work/cli" && grep -q 'rdma_server: end 0' "$work/srv" &&
        echo "ok: rdma_server / rdma_client (rdma_create_ep, rdma_get_request)" ||
        fail "rdma_server/rdma_client: no 'end 0'"
fi
# udaddy (RDMA_PS_UDP): the client's SIDR_REQ resolves the server's UD QP (its number and
# Q_Key in the SIDR_REP), then 10 datagrams each way; the server answers to the address
# of the first one it got (ibv_create_ah_from_wc). Both print their last steps and exit 0.
# (udaddy's port is fixed: 7174.)
if pair udaddy "$S" "$C" "udaddy" "udaddy -s 10.84.0.1"; then
    if grep -q 'data transfers complete' "$work/cli" && grep -q 'data transfers complete' "$work/srv" &&
        grep -q 'return status 0' "$work/cli" && grep -q 'return status 0' "$work/srv"; then
        echo "ok: udaddy: SIDR resolution, 10 datagrams each way, both 'return status 0'"
    else fail "udaddy: no 'data transfers complete' / 'return status 0' on both ends"; fi
fi

# rping with an address that is not ours: bind fails, main destroys the event channel
# while rping's CM thread waits on it, and both threads call exit() at once (about every
# other run). Neither may crash: the engine's exit teardown is written for that
# (lib/verbs/verbs_exit.h). 12 runs; every one must end with rping's own failure status.
crashed=0 concurrent=0
for _ in $(seq 12); do
    rm -f "$work/memif.sock"
    timeout -k 5 30 "$run" --config "$S" rping -s -a 10.84.0.9 -p $port >"$work/srv" 2>&1
    src=$?
    grep -q 'rdma_get_cm_event: Bad file descriptor' "$work/srv" && concurrent=$((concurrent + 1))
    # rping's own failure is exit(-1), 255; a signal is 128 + its number, a timeout 124.
    if [[ $src -eq 124 || ($src -gt 128 && $src -lt 255) ]] ||
        ! grep -q 'rdma_bind_addr: Cannot assign requested address' "$work/srv"; then
        crashed=$((crashed + 1))
        cp "$work/srv" "$work/crashed"
    fi
done
if [[ $crashed -eq 0 ]]; then
    echo "ok: rping bound to a foreign address: 12 clean failures ($concurrent with both threads in exit())"
else
    cp "$work/crashed" "$work/srv"
    echo "" >"$work/cli"
    fail "rping bound to a foreign address: $crashed of 12 runs crashed or hung ($concurrent with both threads in exit())"
fi

# ---- through droce-fabric ----
conf "$work/fs.conf" client "$work/s1" 10.84.1.1/24 02:00:00:00:84:11
conf "$work/fc.conf" client "$work/s0" 10.84.1.2/24 02:00:00:00:84:12
timeout 300 "$fab" -l 0 --no-huge -m 256 --no-pci --no-shconf --file-prefix "cmfab$$" \
    --log-level='*:warning' \
    --vdev="net_memif0,role=server,socket=$work/s0,socket-abstract=no" \
    --vdev="net_memif1,role=server,socket=$work/s1,socket-abstract=no" -- \
    --to 1 --rate-gbps 100 --no-ecn --idle-us 20 >"$work/fab" 2>&1 &
fpid=$!
fabric_ready "$work/fab" "$fpid" || { echo "FAIL: droce-fabric did not start"; cat "$work/fab"; exit 1; }
FS=$work/fs.conf FC=$work/fc.conf

if ! command -v fio >/dev/null; then
    echo "SKIP (part): fio missing"
else
    for verb in rdma_write rdma_read; do
        port=$((port + 1))
        if pair "fio $verb" "$FS" "$FC" \
            "fio --name=s --ioengine=rdma --filename=10.84.1.1/$port --rw=read --bs=64k --size=8m --thread=1" \
            "fio --name=c --ioengine=rdma --filename=10.84.1.1/$port/$verb --rw=write --bs=64k --size=8m --thread=1" \
            "waiting for connection"; then
            if grep -q 'err= 0' "$work/cli" && grep -Eq 'bw=[0-9.]+[KMG]i?B/s' "$work/cli"; then
                echo "ok: fio --ioengine=rdma $verb:$(grep -Eo 'bw=[0-9.]+[KMG]i?B/s' "$work/cli" | head -1)"
            else fail "fio $verb: no 'err= 0' and bandwidth line"; fi
        fi
    done
fi

if ! command -v qperf >/dev/null; then
    echo "SKIP (part): qperf missing"
elif [[ $(id -u) -ne 0 ]] || ! command -v ip >/dev/null; then
    echo "SKIP (part): qperf needs root here (its server's address on lo)"
else
    lo_ip=10.84.1.1
    ip addr add "$lo_ip/32" dev lo 2>/dev/null || lo_ip=
    timeout -k 5 120 "$run" --config "$FS" qperf >"$work/srv" 2>&1 &
    qsrv=$!
    for _ in $(seq 100); do ss -Htln "sport = :19765" 2>/dev/null | grep -q . && break; sleep 0.1; done
    timeout -k 5 100 "$run" --config "$FC" qperf 10.84.1.1 -cm1 -t 1 rc_bw rc_lat rc_rdma_write_bw \
        rc_rdma_read_lat >"$work/cli" 2>&1
    rc=$?
    results=$(grep -Ec '^ +(bw|latency) += ' "$work/cli")
    if [[ $rc -eq 0 && $results -eq 4 ]]; then
        echo "ok: qperf -cm1 rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_lat: $(grep -E '^ +(bw|latency)' "$work/cli" | tr -s ' ' | tr '\n' ';')"
    else fail "qperf: exit $rc, $results of 4 results"; fi
    kill "$qsrv" 2>/dev/null
    wait "$qsrv" 2>/dev/null
fi

if [[ $fails -ne 0 ]]; then echo "$fails run(s) failed"; exit 1; fi
echo "the rdma_cm programs ran droce <-> droce"
