#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots a soak run (issue 15) from the CSV bench_soak --csv writes, one row per
interval: WRs/s, RSS and engine mbufs in use (flat = nothing leaks), latency p50/p99.

Usage: bench/plot_soak.py [bench/soak.csv] [bench/soak.png] [TITLE] [LATENCY LABEL]
(bench/soak_rxe.sh's CSV has the same columns; it passes its own title and label.)
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/soak.csv"
    dst = sys.argv[2] if len(sys.argv) > 2 else "bench/soak.png"
    title = sys.argv[3] if len(sys.argv) > 3 else "droce soak: mixed RC ops, every byte checked"
    lat_label = sys.argv[4] if len(sys.argv) > 4 else "latency, ms (post to completion)"
    with open(src, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{src}: no rows")
    t = [float(r["t_s"]) / 60 for r in rows]
    # a blank cell (soak_rxe.sh: no latency sample in that minute) plots as a gap
    col = lambda k: [float(r[k]) if r[k] != "" else float("nan") for r in rows]  # noqa: E731
    fig, ax = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    ax[0].plot(t, [x / 1e3 for x in col("wrs_per_s")], marker="o")
    ax[0].set_ylabel("k WR/s")
    ax[0].set_title(f"{title} "
                    f"(data errors {rows[-1]['data_errors']}, WR errors {rows[-1]['wr_errors']})")
    ax[1].plot(t, [x / 1024 for x in col("rss_kib")], marker="o", label="RSS (MiB)")
    ax1b = ax[1].twinx()
    ax1b.plot(t, col("mbufs_in_use"), marker="s", color="tab:orange", label="mbufs in use")
    ax[1].set_ylabel("RSS, MiB")
    ax1b.set_ylabel("mbufs in use")
    ax[1].set_ylim(bottom=0)
    ax1b.set_ylim(bottom=0)
    ax[1].legend(loc="lower left")
    ax1b.legend(loc="lower right")
    ax[2].plot(t, [x / 1e3 for x in col("lat_p50_us")], marker="o", label="p50")
    ax[2].plot(t, [x / 1e3 for x in col("lat_p99_us")], marker="o", label="p99")
    ax[2].set_ylabel(lat_label)
    ax[2].set_xlabel("minutes")
    ax[2].legend()
    for a in ax:
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(dst, dpi=90)
    print(f"wrote {dst}")


if __name__ == "__main__":
    main()
