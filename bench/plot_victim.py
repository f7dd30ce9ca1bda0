#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Head-of-line blocking under PFC in the real-process run (bench/cc_fabric_victim.sh,
issue 16): per mode, the min/median/max over the rounds of each flow's throughput, the
pause frames and the time the leaf's uplink was held.

  OUT/victim_summary.txt  one line per mode and column: min / median / max
  OUT/cc_victim.png       median throughput of flow 0, flow 1 and the victim per mode,
                          bars from min to max

Usage: bench/plot_victim.py [CSV dir, default bench/cc] [out dir, default: the CSV dir]
                            [incast in the title, default 2:1]
(Debian's python3-matplotlib: run with /usr/bin/python3 if another python3 comes first.)
"""
import csv
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ("off", "on", "pfc", "pfc+on")
LABEL = {"off": "lossy, no CC", "on": "DCQCN only", "pfc": "PFC only", "pfc+on": "PFC + DCQCN"}
COLS = ("flow0_MBps", "flow1_MBps", "victim_MBps", "spine_pause_frames",
        "leaf_pause_frames", "uplink_held_ms", "drops", "ring_full", "cnps", "xoff_events")


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "bench/cc"
    out = sys.argv[2] if len(sys.argv) > 2 else d
    rows = list(csv.DictReader(open(os.path.join(d, "victim.csv"))))
    modes = [m for m in ORDER if any(r["mode"] == m for r in rows)]
    stats = {}
    with open(os.path.join(out, "victim_summary.txt"), "w") as f:
        f.write("mode rounds column min median max\n")
        for m in modes:
            rs = [r for r in rows if r["mode"] == m]
            for c in COLS:
                v = [float(r.get(c) or 0) for r in rs]  # older CSVs lack xoff_events
                stats[m, c] = (min(v), statistics.median(v), max(v))
                f.write("%s %d %s %g %g %g\n" % ((m, len(v), c) + stats[m, c]))
    fig, ax = plt.subplots(figsize=(9, 5))
    w = 0.27
    for i, (c, name) in enumerate((("flow0_MBps", "flow 0 (shares the leaf uplink)"),
                                   ("flow1_MBps", "flow 1"),
                                   ("victim_MBps", "victim (not through the bottleneck)"))):
        xs = [k + (i - 1) * w for k in range(len(modes))]
        med = [stats[m, c][1] for m in modes]
        err = [[stats[m, c][1] - stats[m, c][0] for m in modes],
               [stats[m, c][2] - stats[m, c][1] for m in modes]]
        ax.bar(xs, med, w, yerr=err, capsize=3, label=name)
    ax.set_xticks(range(len(modes)))
    ax.set_xticklabels(["%s\n%d pause frames\n%d XOFF events\nuplink held %.0f ms" %
                        (LABEL[m], stats[m, "spine_pause_frames"][1] +
                         stats[m, "leaf_pause_frames"][1], stats[m, "xoff_events"][1],
                         stats[m, "uplink_held_ms"][1])
                        for m in modes], fontsize=8)
    ax.set_ylabel("MB/s (median of rounds, bar: min..max)")
    ax.set_title("Real processes: %s incast + victim flow through droce-fabric leaf/spine" %
                 (sys.argv[3] if len(sys.argv) > 3 else "2:1"))
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "cc_victim.png"), dpi=110)


if __name__ == "__main__":
    main()
