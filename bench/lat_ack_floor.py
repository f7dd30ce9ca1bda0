#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""What RoCE's ACK frame costs the link alone, for issue 9's latency target.

droce-perf write_lat puts two frames on the link per hop (the reply WRITE and the ACK of
the one received, in one burst), raw_link's ping/pong one. Per round, order rotated:
droce write_lat 64 B, raw ping/pong with one 138-B frame (e2e.py's reference) and raw
ping/pong with a 62-B ACK and the 138-B frame in one burst each way (no protocol: the
floor a hop of RC write_lat sits on). Over net_memif, the two cores, as bench/e2e.py.

usage (root; under the heavy-job lock): bench/lat_ack_floor.py [ROUNDS] [BUILD]
Prints min / median / max of each typical RTT/2 and the ratios; JSON to $OUT
(default /tmp/lat_ack_floor.json)."""
import argparse, json, os, statistics, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
build = sys.argv[2] if len(sys.argv) > 2 else "build"
a = argparse.Namespace(build=build, rounds=rounds, secs=2, lat_iters=100000, quick=False,
                       out="/tmp", only="memif", touch=False)
r = e2e.Runner(a)
w = e2e.frames_for("write", 64)[0]
items = [("droce", None), ("raw 1 frame", str(w)), ("raw ACK + frame", f"{e2e.ACK},{w}")]
res = {k: [] for k, _ in items}
for rnd in range(rounds):
    order = items[rnd % len(items):] + items[:rnd % len(items)]
    for name, frames in order:
        rec = r.droce("memif", "a", "write_lat", 64, rnd) if frames is None else \
            r.raw_lat("memif", "a", frames, rnd, "lat")
        v = rec.get("t_typical")
        res[name].append(v)
        print(f"round {rnd} {name:16s} {v if v is not None else 'FAIL ' + rec.get('error', '')[-300:]}",
              flush=True)


def mmm(xs):
    xs = [x for x in xs if x is not None]
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}" if xs else "fail"


for name, _ in items:
    print(f"{name:16s} typical RTT/2 us {mmm(res[name])}")
for num, den in (("droce", "raw 1 frame"), ("droce", "raw ACK + frame"), ("raw ACK + frame", "raw 1 frame")):
    ratios = [x / y for x, y in zip(res[num], res[den]) if x and y]
    print(f"{num} / {den}: {mmm(ratios)}")
json.dump(res, open(os.environ.get("OUT", "/tmp/lat_ack_floor.json"), "w"), indent=1)
