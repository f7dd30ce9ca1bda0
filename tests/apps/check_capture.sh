#!/usr/bin/env bash
# Validates a pcapng file droce wrote with --capture (or /droce/capture):
#   - tshark reads it, and flags no frame as malformed or with an error (the InfiniBand
#     payload heuristics are off, as in tests/interop/lib.sh: the payload is opaque data)
#   - UDP 4791 is dissected as RoCEv2 (InfiniBand over UDP): at least MIN RoCE frames,
#     some received (pcapng direction inbound) and some sent (outbound)
#   - with SNAPLEN: no frame keeps more than SNAPLEN bytes; without: every frame is whole
#     and tests/interop/pcap_check.py finds the ICRC, IPv4 checksum and lengths right
# Prints one line; exit 0 when clean, 1 otherwise.
# Usage: check_capture.sh FILE [MIN_ROCE [SNAPLEN]]
set -u
f=${1:?usage: $0 FILE [MIN_ROCE [SNAPLEN]]}
min=${2:-1}
snap=${3:-}
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
opts=()
for p in rpcordma smc smb_direct nvme-rdma lnet iser infiniband_sdp fcoib; do opts+=(--disable-protocol "$p"); done

[ -s "$f" ] || { echo "capture check: no file $f"; exit 1; }
err=$(mktemp)
trap 'rm -f "$err"' EXIT
if ! bad=$(tshark -n "${opts[@]}" -r "$f" -Y '_ws.malformed || _ws.expert.severity >= error' 2>"$err"); then
    echo "capture check: tshark cannot read $f: $(grep -v 'Running as user' "$err" | head -2)"
    exit 1
fi
if [ -n "$bad" ]; then
    echo "capture check: tshark flags $(wc -l <<<"$bad") frame(s) in $f:"
    head -5 <<<"$bad"
    exit 1
fi
# One line per RoCE frame: direction flags (1 in, 2 out), captured and original length.
fields=$(tshark -n "${opts[@]}" -r "$f" -Y 'udp.dstport == 4791 && infiniband' -T fields \
    -e frame.packet_flags_direction -e frame.cap_len -e frame.len 2>/dev/null)
total=$(grep -c . <<<"$fields")
nin=$(awk '($1 + 0) % 4 == 1' <<<"$fields" | grep -c .)
nout=$(awk '($1 + 0) % 4 == 2' <<<"$fields" | grep -c .)
if [ "$total" -lt "$min" ] || [ "$nin" = 0 ] || [ "$nout" = 0 ]; then
    echo "capture check: $f holds $total RoCE frame(s) ($nin in, $nout out); want >= $min, both directions"
    exit 1
fi
if [ -n "$snap" ]; then
    over=$(awk -v s="$snap" '$2 > s' <<<"$fields" | grep -c .)
    cut=$(awk '$2 < $3' <<<"$fields" | grep -c .)
    if [ "$over" != 0 ] || [ "$cut" = 0 ]; then
        echo "capture check: snap length $snap: $over frame(s) longer, $cut cut"
        exit 1
    fi
else
    cut=$(awk '$2 != $3' <<<"$fields" | grep -c .)
    [ "$cut" = 0 ] || { echo "capture check: $cut frame(s) not whole in $f"; exit 1; }
    classic=$(mktemp)
    trap 'rm -f "$err" "$classic"' EXIT
    # pcap_check.py reads classic pcap: frames and their bytes are the same.
    editcap -F pcap "$f" "$classic" || { echo "capture check: editcap failed on $f"; exit 1; }
    python3 "$here/../interop/pcap_check.py" --quiet --min-roce "$min" "$classic" || exit 1
fi
echo "capture check: $f ok: $total RoCE frames ($nin in, $nout out)${snap:+, snap length $snap}"
