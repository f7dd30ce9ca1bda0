#!/usr/bin/env python3
"""Cost of the built-in capture: droce-perf write_bw over net_memif (two processes, both
capturing when on), in alternating rounds (the order rotates every round):

  base     a droce-perf without the capture hooks (BASE=path; skipped when unset)
  off      this build, no --capture (the hooks cost one branch per burst)
  on-128   --capture /dev/null --capture-snaplen 128 (headers: the usual way to look)
  on-full  --capture /dev/null, whole frames (the copy cost without a disk behind it)

at 64 B (packet rate) and 64 KiB (bandwidth). Prints min/median/max per variant and the
per-round ratio to `off`; JSON of every value to $OUT (default /tmp/capture_ab.json).

usage (root, on a shared machine under the heavy-job lock):
  flock /tmp/droce-heavy.lock env BASE=/tmp/base/droce-perf bench/capture_ab.py ROUNDS"""
import argparse, json, os, stat, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
build = os.environ.get("BUILD", "build")
a = argparse.Namespace(build=build, rounds=rounds, secs=2, lat_iters=100000, quick=False,
                       out="/tmp", only="memif")
r = e2e.Runner(a)
perf = os.path.abspath(os.path.join(build, "apps/droce-perf/droce-perf"))
wrap_dir = tempfile.mkdtemp(prefix="capab-")


def wrapper(name, extra):
    """A droce-perf that adds capture options (getopt_long permutes them past the host)."""
    p = os.path.join(wrap_dir, name)
    with open(p, "w") as f:
        f.write(f'#!/bin/sh\nexec {perf} "$@" {extra}\n')
    os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)
    return p


variants = [("off", perf),
            ("on-128", wrapper("on128", "--capture /dev/null --capture-snaplen 128")),
            ("on-full", wrapper("onfull", "--capture /dev/null"))]
if os.environ.get("BASE"):
    variants.insert(0, ("base", os.environ["BASE"]))
res = {}
for rnd in range(rounds):
    items = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
    for name, binary in items:
        r.perf = binary
        for size, key, field in ((64, "mpps64", "mpps"), (65536, "gbps64k", "gbps")):
            rec = r.droce("memif", "a", "write_bw", size, rnd)
            res.setdefault((name, key), []).append(rec.get(field))
            if "error" in rec:
                print("ERR", name, size, rec["error"][-300:], flush=True)
    print(rnd, {f"{k[0]}:{k[1]}": v[-1] for k, v in res.items()}, flush=True)
for (name, key), v in res.items():
    print(f"{name:8s} {key:8s} {e2e.summ(v)}")
for name, _ in variants:
    if name == "off":
        continue
    for key in ("mpps64", "gbps64k"):
        rat = [x / y for x, y in zip(res[(name, key)], res[("off", key)]) if x and y]
        s = e2e.summ(rat)
        if s:
            print(f"ratio {name} / off {key}: min {s['min']:.3f} median {s['median']:.3f} "
                  f"max {s['max']:.3f}")
json.dump({f"{k[0]}|{k[1]}": v for k, v in res.items()},
          open(os.environ.get("OUT", "/tmp/capture_ab.json"), "w"), indent=1)
