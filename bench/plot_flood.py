#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots the flood curve of issue 15 from the CSV rows bench_flood --csv appends:

    flood,<kinds>,<rate x legit>,<round>,<WR/s>,<ratio to no flood, same round>,<achieved x>
    each,<kind>,1.00,<round>,<WR/s>,<ratio>,<achieved x>

Left: legitimate throughput relative to the same round's no-flood run vs flood rate
(median, min-max bars) per flood mix, with the issue's 0.5x bar; right: each kind alone at
1x (median, min-max).

Usage: bench/plot_flood.py [bench/flood.csv] [bench/flood.png]
"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/flood.csv"
    out = sys.argv[2] if len(sys.argv) > 2 else "bench/flood.png"
    curve = defaultdict(lambda: defaultdict(list))  # mix -> rate -> ratios
    each = defaultdict(list)  # kind -> ratios
    with open(src, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 7:
                continue
            if row[0] == "flood":
                curve[row[1]][float(row[2])].append(float(row[5]))
            elif row[0] == "each":
                each[row[1]].append(float(row[5]))
    if not curve:
        sys.exit(f"no flood rows in {src}")
    fig, (ax, axe) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    for mix, by_rate in sorted(curve.items()):
        xs = sorted(by_rate)
        med = [statistics.median(by_rate[x]) for x in xs]
        lo = [m - min(by_rate[x]) for x, m in zip(xs, med)]
        hi = [max(by_rate[x]) - m for x, m in zip(xs, med)]
        ax.errorbar(xs, med, yerr=[lo, hi], fmt="o-", capsize=3, label=mix.replace("+", " + "))
    ax.axhline(0.5, color="red", linestyle="--", linewidth=1, label="issue 15 bar (0.5x at 1x)")
    ax.set_xscale("symlog", linthresh=0.25)
    ax.set_xlabel("flood frame rate (x the legitimate packet rate without flood)")
    ax.set_ylabel("legitimate WR/s relative to no flood")
    ax.set_ylim(0, 1.15)
    ax.set_title("64 B WRITEs on 8 QP pairs under a flood (net_ring, 1 thread)")
    ax.legend(fontsize=7, loc="lower left")
    ax.grid(True, alpha=0.3)
    if each:
        kinds = list(each)
        med = [statistics.median(each[k]) for k in kinds]
        lo = [m - min(each[k]) for k, m in zip(kinds, med)]
        hi = [max(each[k]) - m for k, m in zip(kinds, med)]
        axe.bar(range(len(kinds)), med, yerr=[lo, hi], capsize=3)
        axe.set_xticks(range(len(kinds)))
        axe.set_xticklabels(kinds, rotation=35, ha="right", fontsize=8)
        axe.axhline(0.5, color="red", linestyle="--", linewidth=1)
        axe.set_ylim(0, 1.15)
        axe.set_title("each kind alone at 1x")
        axe.grid(True, axis="y", alpha=0.3)
    else:
        axe.axis("off")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
