#!/usr/bin/env python3
"""A/B of droce-perf binaries against the raw link, over virtio_user <-> net_vhost.

usage (root, on a shared machine under the heavy-job lock):
  flock /tmp/droce-heavy.lock bench/ab_vhost.py OLD/droce-perf,NEW/droce-perf ROUNDS

Copy each build's droce-perf to its own directory first; the directory name labels it.
Per round, in an order rotated every round: each binary's write_bw 64 B and 64 KiB with
the client on virtio_user (virtio_user -> vhost) and write_bw 64 B with the client on
net_vhost (vhost -> virtio_user), and bench/e2e.py's raw-link references for the same
frames (BUILD=build dir for raw_link). Prints min/median/max of each figure and of the
per-round ratio to the raw link; JSON of every value to $OUT (default /tmp/ab_vhost.json).
AB_CASES=b64,b64k,a64 picks the cases (client side a = net_vhost, b = virtio_user)."""
import argparse, json, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e
bins = sys.argv[1].split(",")
rounds = int(sys.argv[2])
cases = os.environ.get("AB_CASES", "b64,b64k,a64").split(",")
a = argparse.Namespace(build=os.environ.get("BUILD", "build"), rounds=rounds, secs=2, lat_iters=1000,
                       quick=False, out="/tmp", only="vhost")
r = e2e.Runner(a)
res = {}
hops = []
def nm(b):
    return b.split('/')[-2] if '/' in b else b
def add(k, v):
    res.setdefault(k, []).append(v)
def case(c):
    return c[0], (65536 if c[1:] == "64k" else int(c[1:]))
def val(rec, size):
    # messages per second: 64 B from droce's Mpps, 64 KiB from its Gb/s
    if rec.get("error"):
        print("ERR", rec["error"][-400:], flush=True)
        return None
    if rec["kind"] == "droce":
        return rec["mpps"] * 1e6 if size < 1024 else rec["gbps"] * 1e9 / (size * 8)
    return rec.get("msgs_per_s")
r.hugepages_up(1100)
try:
    for rnd in range(rounds):
        items = [("droce", b) for b in bins] + [("raw", None)]
        items = items[rnd % len(items):] + items[:rnd % len(items)]
        for kind, b in items:
            for c in cases:
                side, size = case(c)
                if kind == "droce":
                    r.perf = b
                    rec = r.droce("vhost", side, "write_bw", size, rnd)
                    add((b, c), val(rec, size))
                else:
                    rec = r.raw_bw("vhost", side, e2e.frames_for("write", size), e2e.ACK, rnd, "write_bw")
                    add(("raw", c), val(rec, size))
                # The VM's L3 mode just before the run (bench/cpu_pair; > 100 ns: slow mode).
                hops.append(f"{nm(b) if b else 'raw'}:{c}:{rec.get('cpu_pair', {}).get('hop_ns')}")
        print(rnd, {f"{nm(k[0])}:{k[1]}": v[-1] for k, v in res.items()}, flush=True)
        print("   cpu_pair hop ns:", " ".join(hops[-len(items) * len(cases):]), flush=True)
finally:
    r.hugepages_down()
for (who, c), v in res.items():
    print(f"{nm(who):24s} {c} msgs/s: {e2e.summ(v)}")
for b in bins:
    for c in cases:
        rat = [x / y for x, y in zip(res[(b, c)], res[("raw", c)]) if x and y]
        s = e2e.summ(rat)
        if s:
            print(f"ratio {nm(b)} / raw {c}: min {s['min']:.3f} median {s['median']:.3f} max {s['max']:.3f} (n={s['n']})")
json.dump({f"{k[0]}|{k[1]}": v for k, v in res.items()}, open(os.environ.get("OUT", "/tmp/ab_vhost.json"), "w"), indent=1)
