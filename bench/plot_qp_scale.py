#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots the QP-scaling curve of issue 8 from the CSV rows that bench_scale (--csv) and
qp_scale_memif.sh append:

    qps,<loopback|memif>[-tD],<N>,<round>,<Mpps>   (-tD: D WRs outstanding per QP)
    (other rows - rss, idle, workers - are skipped here)

Left: message rate vs QPs (median, min-max bars) per transport; right: the rate relative
to the 1-QP rate of the same round (median, min-max), with the issue's targets (1,024 QPs >= 0.8x, 65,536 >= 0.5x).

Usage: bench/plot_qp_scale.py [bench/qp_scale.csv] [bench/qp_scale.png]
"""
import csv
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    rates = defaultdict(lambda: defaultdict(dict))  # transport -> N -> round -> Mpps
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 5 or row[0] != "qps":
                continue
            try:
                rates[row[1]][int(row[2])][int(row[3])] = float(row[4])
            except ValueError:
                continue  # a failed run ("fail")
    return rates


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "bench/qp_scale.csv"
    out = sys.argv[2] if len(sys.argv) > 2 else "bench/qp_scale.png"
    rates = load(src)
    if not rates:
        sys.exit(f"no qps rows in {src}")
    fig, (ax, axr) = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {
        "loopback": ("o-", "net_ring, 1 process, 128 WRs in total"),
        "memif": ("s-", "net_memif, 2 processes, 128 WRs in total"),
        "loopback-t16": ("o--", "net_ring, 1 process, -t 16 per QP"),
        "memif-t16": ("s--", "net_memif, 2 processes, -t 16 per QP"),
    }
    for transport, by_n in sorted(rates.items()):
        ns = sorted(by_n)
        vals = [list(by_n[n].values()) for n in ns]
        med = [statistics.median(v) for v in vals]
        lo = [m - min(v) for v, m in zip(vals, med)]
        hi = [max(v) - m for v, m in zip(vals, med)]
        fmt, label = styles.get(transport, ("x-", transport))
        ax.errorbar(ns, med, yerr=[lo, hi], fmt=fmt, capsize=3, label=label)
        if 1 in by_n:
            # Ratios within a round (same-run): a round slowed by another job slows its
            # 1-QP setting too.
            rn, rmed, rlo, rhi = [], [], [], []
            for n in ns:
                rr = [by_n[n][r] / by_n[1][r] for r in by_n[n] if r in by_n[1]]
                if rr:
                    m = statistics.median(rr)
                    rn.append(n)
                    rmed.append(m)
                    rlo.append(m - min(rr))
                    rhi.append(max(rr) - m)
            axr.errorbar(rn, rmed, yerr=[rlo, rhi], fmt=fmt, capsize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("connected QP pairs carrying traffic (N)")
    ax.set_ylabel("64 B RDMA WRITE, Mpps (median, min-max)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    axr.set_xscale("log", base=2)
    axr.set_xlabel("N")
    axr.set_ylabel("rate / 1-QP rate, same round (median, min-max)")
    axr.set_ylim(0, 1.15)
    axr.axhline(1.0, color="grey", lw=0.5)
    axr.plot([1024], [0.8], "rv", label="target (1,024: 0.8x; 65,536: 0.5x)")
    axr.plot([65536], [0.5], "rv")
    axr.grid(True, which="both", alpha=0.3)
    axr.legend(loc="lower left")
    fig.suptitle("droce QP scaling, 1 worker per side (loaded 2-core VM)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
