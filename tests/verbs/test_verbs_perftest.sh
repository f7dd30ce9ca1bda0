#!/usr/bin/env bash
# Debian's unmodified perftest (4.5+0.17) on both ends, each on droce (droce-run), two
# processes over net_memif through droce-fabric (a learning switch; each end is a memif
# client of it): perftest refuses a port that is not active when it starts ("Port number
# 1 state is Down"), and a memif port directly on its peer is down until the peer comes.
# ib_write_bw, ib_send_bw, ib_read_bw, ib_atomic_bw,
# ib_write_lat, ib_send_lat, ib_read_lat, ib_atomic_lat with their default posting API,
# and ib_write_bw with --use_old_post_send;
# ib_send_bw and ib_send_lat with -e (completion events); ib_write_bw and ib_read_bw with
# -R (rdma_cm, through droce's librdmacm); ib_write_bw -q 4 --report_gbits (four QPs);
# ib_send_bw -c UD and ib_send_lat -c UD (UD QPs, address handles).
# Short runs (-n small): each end must exit 0 and the client print its result row (the
# row of the message size and iteration count under perftest's table header).
# perftest takes its ibv_wr_* posting path only on the devices it lists as having it
# (mlx5 and EFA parts, by vendor part id); on any other device, droce included, its
# default is ibv_post_send, the same as --use_old_post_send. verbs_wr_test covers
# droce's ibv_wr_* API.
# Usage: test_verbs_perftest.sh PATH/TO/droce-run PATH/TO/droce-fabric
set -u
# shellcheck source=../../scripts/fabric_ready.sh
. "$(dirname "$0")/../../scripts/fabric_ready.sh"
# Only what droce-run sets: meson points LD_LIBRARY_PATH at the library for its tests.
unset LD_LIBRARY_PATH
run=${1:?usage: $0 DROCE_RUN DROCE_FABRIC}
fab=${2:?usage: $0 DROCE_RUN DROCE_FABRIC}
for tool in ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw ib_write_lat ib_send_lat ib_read_lat \
    ib_atomic_lat; do
    command -v $tool >/dev/null || { echo "SKIP: $tool missing (perftest)"; exit 77; }
done
work=$(mktemp -d)
port=$((24000 + $$ % 20000))
fpid=
trap '[[ -n $fpid ]] && kill "$fpid" 2>/dev/null; rm -rf "$work"' EXIT
fails=0

conf() { # SOCKET IP MAC
    printf '[eal]\nvdev = net_memif0,role=client,socket=%s,socket-abstract=no\n\n' "$1"
    printf '[port]\ndevice = net_memif0\nip = %s\nmac = %s\n' "$2" "$3"
}
conf "$work/s1" 10.83.0.1/24 02:00:00:00:83:01 >"$work/server.conf"
conf "$work/s0" 10.83.0.2/24 02:00:00:00:83:02 >"$work/client.conf"

# The switch: port 1 (toward the perftest server) at 100 Gb/s, no ECN marks; it naps when
# idle (more busy threads than cores here).
timeout 170 "$fab" -l 0 --no-huge -m 256 --no-pci --no-shconf --file-prefix "vfab$$" \
    --log-level='*:warning' \
    --vdev="net_memif0,role=server,socket=$work/s0,socket-abstract=no" \
    --vdev="net_memif1,role=server,socket=$work/s1,socket-abstract=no" -- \
    --to 1 --rate-gbps 100 --no-ecn --idle-us 20 >"$work/fab" 2>&1 &
fpid=$!
fabric_ready "$work/fab" "$fpid" || { echo "FAIL: droce-fabric did not start"; cat "$work/fab"; exit 1; }

# listening PORT: the server's TCP port is open (it opens it once its device is up).
listening() { ss -Htln "sport = :$1" 2>/dev/null | grep -q .; }

# perf SIZE ITERS TOOL ARGS...: server and client with the same arguments (-d droce0, GID
# 1, -F: no CPU frequency check, the machine may scale it); both must end well and the
# client print the row "SIZE ITERS ..." (ITERS times the QPs with -q: ROW_ITERS).
perf() {
    local size=$1 iters=$2 tool=$3
    shift 3
    local args=(-d droce0 -x 1 -F -p "$port" -n "$iters" "$@")
    timeout 30 "$run" --config "$work/server.conf" "$tool" "${args[@]}" >"$work/srv" 2>&1 &
    local srv=$!
    # -R: no TCP; the client reaches the server through rdma_cm at its RoCE address
    # (droce's librdmacm), once the server listens (no port to watch: a pause).
    local host=127.0.0.1
    if [[ " $* " == *" -R "* ]]; then
        host=10.83.0.1
        sleep 3
    else
        for _ in $(seq 100); do listening "$port" && break; sleep 0.1; done
    fi
    # A pause is a guess: a server slower to listen than that gets the client's REQ
    # rejected by droce's CM with reason 8 (invalid service ID: nobody listens on the
    # port yet); the server never saw it, so the client tries again, up to 5 times.
    local rc try
    for try in 1 2 3 4 5; do
        timeout 30 "$run" --config "$work/client.conf" "$tool" "${args[@]}" "$host" \
            >"$work/cli" 2>&1
        rc=$?
        [[ $rc -ne 0 && $try -lt 5 && $host != 127.0.0.1 ]] && kill -0 "$srv" 2>/dev/null &&
            grep -q "RDMA_CM_EVENT_REJECTED; error: 8\." "$work/cli" || break
        echo "note: $tool $*: REJ (no listener yet), client try $((try + 1))"
        sleep 1
    done
    # A client that failed leaves the server waiting for it: end the server's run.
    [[ $rc -ne 0 ]] && kill "$srv" 2>/dev/null
    wait "$srv"
    local src=$?
    port=$((port + 1))
    local row
    row=$(grep -E "^ +$size +${ROW_ITERS:-$iters} +[0-9]" "$work/cli")
    if [[ $rc -ne 0 || $src -ne 0 || -z $row ]]; then
        echo "FAIL: $tool $*: client exit $rc, server exit $src (124 = timeout)"
        echo "--- client"; tail -n 15 "$work/cli"
        echo "--- server"; tail -n 15 "$work/srv"
        fails=$((fails + 1))
        return
    fi
    echo "ok: $tool $*:$(echo "$row" | tr -s ' ')"
}

perf 65536 200 ib_write_bw
perf 64 2000 ib_write_bw -s 64
perf 65536 200 ib_write_bw --use_old_post_send
perf 4096 500 ib_send_bw -s 4096
perf 65536 200 ib_read_bw
perf 8 1000 ib_atomic_bw
perf 64 500 ib_write_lat -s 64
perf 64 500 ib_send_lat -s 64
perf 64 500 ib_read_lat -s 64
perf 8 500 ib_atomic_lat
# -e: perftest sleeps on completion events (ibv_req_notify_cq, ibv_get_cq_event).
perf 4096 500 ib_send_bw -s 4096 -e
perf 2 500 ib_send_lat -e
# -R: connected through rdma_cm (droce's librdmacm over droce's CM).
perf 65536 200 ib_write_bw -R
perf 4096 200 ib_read_bw -R -s 4096
# Several QPs, and UD.
ROW_ITERS=800 perf 4096 200 ib_write_bw -s 4096 -q 4 --report_gbits
# UD has no retransmission: a datagram the receiver had no room for is dropped (counted),
# and perftest's UD server then waits for it for good. 200 of them, 32 in flight, stay
# well inside the server's 512 posted receives and the memif rings.
perf 1024 200 ib_send_bw -c UD -s 1024 -t 32
perf 64 500 ib_send_lat -c UD -s 64

if [[ $fails -ne 0 ]]; then echo "$fails run(s) failed"; exit 1; fi
echo "perftest ran droce <-> droce"
