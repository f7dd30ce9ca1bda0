# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the tests and bench scripts that start droce-fabric in the background.
#
# fabric_ready LOG [PID] [SECONDS]: returns 0 once droce-fabric's first line
# ("droce-fabric: ...") is in LOG, 1 if PID has exited or SECONDS (default 10) have passed.
# That line is printed and flushed after every port has started. Its memif sockets exist
# earlier, from the EAL's probe: a memif client that connects in between is refused (DPDK
# 22.11); droce's engine tries again after 0.5 s, but other clients do not, and waiting for
# the line, not for the sockets, spares droce that half second.
fabric_ready() {
    local log=$1 pid=${2:-} secs=${3:-10} i
    for ((i = 0; i < secs * 10; i++)); do
        grep -q '^droce-fabric: ' "$log" 2>/dev/null && return 0
        if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
            grep -q '^droce-fabric: ' "$log" 2>/dev/null
            return
        fi
        sleep 0.1
    done
    return 1
}
