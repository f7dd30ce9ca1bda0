#!/usr/bin/env python3
"""A/B of droce-perf binaries against the raw link, over net_memif, in one run.

usage (root, on a shared machine under the heavy-job lock):
  flock /tmp/droce-heavy.lock bench/ab_memif.py OLD/droce-perf,NEW/droce-perf ROUNDS

Copy each build's droce-perf to its own directory first (statically linked against
libdroce, so a copy keeps its version); the directory name labels it. Per round, in an
order rotated every round: each binary's write_bw 64 B, write_lat 64 B and write_bw
64 KiB, and bench/e2e.py's raw-link references for the same frames (BUILD=build dir for
raw_link). Prints min/median/max per figure and the per-round ratio to the raw link;
JSON of every value to $OUT (default /tmp/ab_memif.json). AB_BW=65536,4096 picks the
large write_bw sizes (default 65536); AB_SMALL=0 skips the 64 B figures."""
import argparse, json, os, statistics, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e
bins = sys.argv[1].split(",")
rounds = int(sys.argv[2])
big = [int(x) for x in os.environ.get("AB_BW", "65536").split(",")]
small = os.environ.get("AB_SMALL", "1") != "0"
def bk(n):
    return "bw64k" if n == 65536 else f"bw{n // 1024}k" if n % 1024 == 0 else f"bw{n}"
a = argparse.Namespace(build=os.environ.get("BUILD", "build"), rounds=rounds, secs=2, lat_iters=100000, quick=False,
                       out="/tmp", only="memif")
r = e2e.Runner(a)
res = {}
def nm(b):
    return b.split('/')[-2] if '/' in b else b
def add(k, v):
    res.setdefault(k, []).append(v)
for rnd in range(rounds):
    items = [("droce", b) for b in bins] + [("raw", None)]
    items = items[rnd % len(items):] + items[:rnd % len(items)]
    for kind, b in items:
        if kind == "droce":
            r.perf = b
            if small:
                rec = r.droce("memif", "a", "write_bw", 64, rnd)
                add((b, "bw"), rec.get("mpps"))
                rec2 = r.droce("memif", "a", "write_lat", 64, rnd)
                add((b, "lat"), rec2.get("t_typical"))
                if "error" in rec or "error" in rec2:
                    print("ERR", rec.get("error", "")[-300:], rec2.get("error", "")[-300:])
            for n in big:
                rec3 = r.droce("memif", "a", "write_bw", n, rnd)
                add((b, bk(n)), rec3.get("gbps"))
                if "error" in rec3:
                    print("ERR", rec3.get("error", "")[-300:])
        else:
            if small:
                rec = r.raw_bw("memif", "a", e2e.frames_for("write", 64), e2e.ACK, rnd, "write_bw")
                add(("raw", "bw"), rec.get("frame_mpps"))
                rec2 = r.raw_lat("memif", "a", e2e.frames_for("write", 64)[0], rnd, "write_lat")
                add(("raw", "lat"), rec2.get("t_typical"))
            for n in big:
                rec3 = r.raw_bw("memif", "a", e2e.frames_for("write", n), e2e.ACK, rnd, "write_bw")
                add(("raw", bk(n)), rec3.get("msgs_per_s") and rec3["msgs_per_s"] * n * 8 / 1e9)
    print(rnd, {f"{nm(k[0])}:{k[1]}": v[-1] for k, v in res.items()}, flush=True)
out = {}
for (who, m), v in res.items():
    s = e2e.summ(v)
    print(f"{who:32s} {m}: {s}")
for b in bins:
    for m in (["bw", "lat"] if small else []) + [bk(n) for n in big]:
        rat = [x / y for x, y in zip(res[(b, m)], res[("raw", m)]) if x and y]
        s = e2e.summ(rat)
        print(f"ratio {nm(b)} / raw {m}: min {s['min']:.3f} median {s['median']:.3f} max {s['max']:.3f}")
json.dump({f"{k[0]}|{k[1]}": v for k, v in res.items()}, open(os.environ.get("OUT", "/tmp/ab_memif.json"), "w"), indent=1)
