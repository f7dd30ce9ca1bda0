#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots of the end-to-end comparison (issue 9) from bench/e2e.py's e2e.json:

  e2e_bw.png   write_bw goodput vs message size (64 B .. 1 MiB), droce vs the raw link with
               droce's frames (median over rounds, min-max bars), one line pair per link;
  e2e_lat.png  64 B latency, RTT/2 typical / p99 / p99.9 (median over rounds): droce vs the
               raw link vs kernel UDP over a veth, log scale.

Usage: bench/plot_e2e.py [bench/e2e/e2e.json] [out dir, default: the JSON's]
"""
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LINKNAME = {("memif", "a"): "net_memif", ("vhost", "a"): "vhost → virtio_user",
            ("vhost", "b"): "virtio_user → vhost"}


def gbps(rec):
    size = int(rec["job"].split("/")[3])
    if rec["kind"] == "droce":
        return rec.get("gbps")
    m = rec.get("msgs_per_s")
    return m * size * 8 / 1e9 if m is not None else None


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench/e2e/e2e.json"
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(path)
    res = json.load(open(path))
    runs = res["runs"]
    meta = res["meta"]
    sub = f"{meta['date']}, {meta['commit']}, {meta['rounds']} rounds{' (quick)' if meta['quick'] else ''}"

    # Bandwidth vs size.
    series = {}
    for r in runs:
        if r["kind"] == "kernel" or "error" in r:
            continue
        link, cl, mode, size = r["job"].split("/")
        if mode != "write_bw":
            continue
        v = gbps(r)
        if v is not None:
            series.setdefault((link, cl, r["kind"]), {}).setdefault(int(size), []).append(v)
    fig, ax = plt.subplots(figsize=(8, 5))
    colors = {("memif", "a"): "tab:blue", ("vhost", "a"): "tab:green", ("vhost", "b"): "tab:red"}
    for (link, cl, kind), pts in sorted(series.items()):
        xs = sorted(pts)
        med = [statistics.median(pts[x]) for x in xs]
        lo = [m - min(pts[x]) for m, x in zip(med, xs)]
        hi = [max(pts[x]) - m for m, x in zip(med, xs)]
        style = {"droce": ("o", "-", "droce"), "raw": ("s", "--", "raw link"),
                 "raw_touch": ("^", ":", "raw link, payload copied in and out")}[kind]
        ax.errorbar(xs, med, yerr=[lo, hi], marker=style[0], linestyle=style[1],
                    color=colors[(link, cl)], capsize=3, label=f"{LINKNAME[(link, cl)]}: {style[2]}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes), path MTU 4096")
    ax.set_ylabel("goodput, Gb/s (message payload)")
    ax.set_title(f"RDMA WRITE bandwidth: droce vs raw DPDK link, same frames\n{sub}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "e2e_bw.png"), dpi=110)
    plt.close(fig)

    # Latency percentiles.
    keys = [("t_typical", "typical"), ("p99", "p99"), ("p99_9", "p99.9")]
    lat = {}
    kern = {k: [] for k, _ in keys}
    for r in runs:
        if "error" in r:
            continue
        if r["kind"] == "kernel":
            if r["mode"] == "udp_lat":
                for k, _ in keys:
                    kern[k].append(r[k])
            continue
        link, cl, mode, size = r["job"].split("/")
        if not mode.endswith("_lat"):
            continue
        d = lat.setdefault((link, cl, mode), {"droce": {k: [] for k, _ in keys}, "raw": {k: [] for k, _ in keys}})
        for k, _ in keys:
            if r.get(k) is not None:
                d[r["kind"]][k].append(r[k])
    groups = sorted(lat)
    if groups:
        fig, axes = plt.subplots(1, len(groups), figsize=(4 * len(groups), 4.5), squeeze=False)
        for ax, g in zip(axes[0], groups):
            width = 0.27
            for i, (who, vals, col) in enumerate((("droce", lat[g]["droce"], "tab:blue"),
                                                  ("raw link", lat[g]["raw"], "tab:gray"),
                                                  ("kernel UDP (veth)", kern, "tab:orange"))):
                ys = [statistics.median(vals[k]) if vals[k] else 0 for k, _ in keys]
                ax.bar([j + (i - 1) * width for j in range(len(keys))], ys, width, label=who, color=col)
            ax.set_xticks(range(len(keys)))
            ax.set_xticklabels([n for _, n in keys])
            ax.set_yscale("log")
            ax.set_ylabel("RTT/2, µs")
            ax.set_title(f"{LINKNAME[(g[0], g[1])]}: {g[2]} 64 B", fontsize=10)
            ax.grid(True, axis="y", which="both", alpha=0.3)
        axes[0][0].legend(fontsize=8)
        fig.suptitle(f"64 B latency: droce vs raw DPDK link vs kernel UDP — {sub}", fontsize=10)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "e2e_lat.png"), dpi=110)
        plt.close(fig)
    print(f"plots: {out}/e2e_bw.png {out}/e2e_lat.png")


if __name__ == "__main__":
    main()
