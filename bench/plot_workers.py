#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots the worker-scaling curve of issue 32 from the CSV rows of
bench/device_scaling.sh (bench_scale workers --csv and the script's own rows):

    workers,loopback,<W>,<round>,<Mpps>         one process, W workers, 2 QP pairs each
    workers_strong,loopback,<W>,<round>,<Mpps>  one process, W workers, N pairs in all
    workers_stride1,loopback,<W>,<round>,<Mpps> as workers, neighbouring queues
                                                (bench_scale --queue-stride=1)
    procs,loopback,<W>,<round>,<Mpps>           W one-worker processes at once (summed)
    perf_threads,loopback,<W>,<round>,<Mpps>    droce-perf --workers W --threads W -q 2W
    perf_procs,loopback,<W>,<round>,<Mpps>      W one-worker droce-perf processes at once
    (other rows are skipped)

Draws the message rate against W (median, min-max bars) with W x the one-worker rate
(weak scaling's median at W=1) and the issue's target, 0.85 of it; prints the same as a
Markdown table: median (min-max), and x the same kind's median at W=1 (weak scaling's
where a kind has no W=1 row).

Usage: bench/plot_workers.py SCALING.csv [OUT.png]
"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KINDS = [
    ("workers", "one process, W workers (weak: 2 QP pairs each)"),
    ("workers_strong", "one process, W workers (strong: pairs in all)"),
    ("workers_stride1", "one process, W workers (weak), neighbouring queues"),
    ("procs", "W one-worker processes"),
    ("perf_threads", "droce-perf --workers W --threads W"),
    ("perf_procs", "W one-worker droce-perf processes"),
]


def load(path):
    runs = defaultdict(lambda: defaultdict(list))  # kind -> W -> [Mpps]
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) != 5 or row[0] not in dict(KINDS):
                continue
            runs[row[0]][int(row[2])].append(float(row[4]))
    return runs


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    runs = load(sys.argv[1])
    if not runs.get("workers") or 1 not in runs["workers"]:
        sys.exit(f"{sys.argv[1]}: no one-worker 'workers' rows: nothing to scale against")
    one = statistics.median(runs["workers"][1])
    ws = sorted({w for k in runs.values() for w in k})

    print(f"one worker: {one:.3f} Mpps (median)\n")
    names = [k for k, _ in KINDS if k in runs]
    print("| W | " + " | ".join(names) + " | target 0.85 x W x one |")
    print("|---" * (len(names) + 2) + "|")
    for w in ws:
        cells = []
        for k in names:
            v = runs[k].get(w)
            if not v:
                cells.append("-")
                continue
            m = statistics.median(v)
            base = statistics.median(runs[k][1]) if runs[k].get(1) else one
            cells.append(f"{m:.2f} ({min(v):.2f}-{max(v):.2f}), {m / base:.2f}x")
        print(f"| {w} | " + " | ".join(cells) + f" | {0.85 * w * one:.2f} |")

    if len(sys.argv) == 3:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        ax.plot(ws, [w * one for w in ws], "k:", label="W x one worker")
        ax.plot(ws, [0.85 * w * one for w in ws], color="0.6", ls="--", label="target: 0.85 x that")
        for k, label in KINDS:
            if k not in runs:
                continue
            x = sorted(runs[k])
            med = [statistics.median(runs[k][w]) for w in x]
            lo = [m - min(runs[k][w]) for m, w in zip(med, x)]
            hi = [max(runs[k][w]) - m for m, w in zip(med, x)]
            ax.errorbar(x, med, yerr=[lo, hi], marker="o", capsize=3, label=label)
        ax.set_xlabel("workers W")
        ax.set_ylabel("64 B RDMA WRITE, Mpps")
        ax.set_xticks(ws)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(sys.argv[2], dpi=120)
        print(f"\nwrote {sys.argv[2]}")


if __name__ == "__main__":
    main()
