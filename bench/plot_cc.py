#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Plots of the DCQCN experiments (issue 10) from bench/cc_sim's CSVs, DCQCN on and off
side by side:

  cc_a.png  2:1 incast: per-flow rate (0.5 ms average) and bottleneck queue depth
  cc_b.png  one flow's rate after a single CNP, against the paper's equations
  cc_c.png  8:1 incast: per-flow rate and queue depth
  cc_f.png  8:1 incast into a small buffer (cc_sim --exp f): per-flow rate, queue depth and
            the buffer; without DCQCN the queue hits the buffer and drops
  cc_real.png  the real-process 2:1 incast through droce-fabric (bench/cc_fabric_incast.sh):
            queue depth against time in each mode run, off, DCQCN, PFC and PFC + DCQCN
            (incast_depth_<mode>_1.csv)
  cc_d.png  two long flows, then 15 senders of 4 KB WRITEs for 1 ms (10-11 ms): the long
            flows' rate, the short flows' sum and the queue depth
  cc_fair_a.png, cc_fair_c.png  2:1 and 8:1 under DcqcnProfile::Fair with Pmax 100%
            (<CSV dir>/fair/, from cc_sim --params fair --pmax 1 --exp ac --rounds 1)
  cc_e2.png, cc_e8.png  2:1 and 8:1 incast with PFC only, DCQCN only and PFC + DCQCN (issue
            16): per-flow rate, the victim flow's rate (shares flow 0's link, not the
            bottleneck) and the queue depth (e<N>_<pfc|dcqcn|both>_0.csv)

Usage: bench/plot_cc.py [CSV dir, default bench/cc] [out dir, default: the CSV dir]
(Debian's python3-matplotlib: run with /usr/bin/python3 if another python3 comes first.)
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KMIN, KMAX = 5, 200  # KB, bench/cc_sim's defaults


def load(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    cols = {k: [float(r[k]) for r in rows] for k in rows[0]} if rows else {}
    return cols


def smooth(v, n):
    """Trailing mean over n samples (the CSV repeats 50 µs rate bins every 10 µs)."""
    out, s = [], 0.0
    for i, x in enumerate(v):
        s += x
        if i >= n:
            s -= v[i - n]
        out.append(s / min(i + 1, n))
    return out


def flows(cols):
    return sorted((k for k in cols if k.startswith("flow") and k.endswith("_gbps")
                   and "_sent_" not in k), key=lambda k: int(k[4:].split("_")[0]))


def incast(d, out, exp, title, buffer_kb=None, png=None):
    fig, ax = plt.subplots(2, 2, figsize=(12, 6), sharex=True, sharey="row")
    for j, mode in enumerate(("on", "off")):
        path = os.path.join(d, f"{exp}_{mode}.csv")
        if not os.path.exists(path):
            continue
        c = load(path)
        t = [x / 1000 for x in c["t_us"]]
        for k in flows(c):
            ax[0][j].plot(t, smooth(c[k], 50), lw=0.8, label=k.split("_")[0])
        ax[1][j].plot(t, [x / 1000 for x in c["depth_bytes"]], lw=0.6, color="k")
        for y, lab in ((KMIN, "Kmin"), (KMAX, "Kmax")):
            ax[1][j].axhline(y, ls="--", lw=0.7, color="r")
            ax[1][j].text(t[-1], y, lab, ha="right", va="bottom", fontsize=7, color="r")
        if buffer_kb:
            ax[1][j].axhline(buffer_kb, lw=0.9, color="b")
            ax[1][j].text(t[-1], buffer_kb, "buffer (tail drop)", ha="right", va="bottom",
                          fontsize=7, color="b")
        ax[0][j].set_title(f"{title}, DCQCN {mode}")
        ax[1][j].set_xlabel("time (ms)")
        if len(flows(c)) <= 8:
            ax[0][j].legend(fontsize=7, ncol=4, loc="upper right")
    ax[0][0].set_ylabel("rate at the bottleneck (Gb/s, 0.5 ms avg)")
    ax[1][0].set_ylabel("queue depth (KB)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, png or f"cc_{exp}.png"), dpi=110)
    plt.close(fig)


def one_cnp(d, out):
    fig, ax = plt.subplots(1, 2, figsize=(12, 3.8), sharey=True)
    for j, mode in enumerate(("on", "off")):
        path = os.path.join(d, f"b_{mode}.csv")
        if not os.path.exists(path):
            continue
        c = load(path)
        t = [x / 1000 for x in c["t_us"]]
        ax[j].plot(t, smooth(c["flow0_gbps"], 3), lw=0.9, label="measured (30 µs avg)")
        ax[j].plot(t, c["reference_gbps"], lw=1.2, ls="--", label="paper's equations")
        ax[j].axvline(1.0, color="r", lw=0.6)
        ax[j].text(1.0, 0.5, " CNP", color="r", fontsize=8)
        ax[j].set_title(f"one CNP at 1 ms, DCQCN {mode}")
        ax[j].set_xlabel("time (ms)")
        ax[j].set_xlim(0.5, 3)
        ax[j].legend(fontsize=8, loc="lower right")
    ax[0].set_ylabel("rate (Gb/s)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "cc_b.png"), dpi=110)
    plt.close(fig)


def burst(d, out):
    fig, ax = plt.subplots(2, 2, figsize=(12, 6), sharex=True, sharey="row")
    for j, mode in enumerate(("on", "off")):
        path = os.path.join(d, f"d_{mode}.csv")
        if not os.path.exists(path):
            continue
        c = load(path)
        t = [x / 1000 for x in c["t_us"]]
        fl = flows(c)
        for k in fl[:2]:
            ax[0][j].plot(t, smooth(c[k], 20), lw=0.8, label="long " + k.split("_")[0])
        short = [sum(c[k][i] for k in fl[2:]) for i in range(len(t))]
        ax[0][j].plot(t, smooth(short, 20), lw=0.8, label="15 short senders (sum)")
        ax[0][j].axvspan(10, 11, color="y", alpha=0.2)
        ax[1][j].plot(t, [x / 1000 for x in c["depth_bytes"]], lw=0.6, color="k")
        ax[1][j].axhline(KMAX, ls="--", lw=0.7, color="r")
        ax[0][j].set_title(f"2 long flows + 15 x 4 KB senders (10-11 ms), DCQCN {mode}")
        ax[1][j].set_xlabel("time (ms)")
        ax[0][j].legend(fontsize=7, loc="upper right")
        ax[0][j].set_xlim(5, 20)
    ax[0][0].set_ylabel("rate (Gb/s, 0.2 ms avg)")
    ax[1][0].set_ylabel("queue depth (KB)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "cc_d.png"), dpi=110)
    plt.close(fig)


REAL_MODES = (("off", "no congestion control"), ("on", "DCQCN"), ("pfc", "PFC"),
              ("pfc+on", "PFC + DCQCN"))
XOFF = 80  # KB per ingress port, cc_fabric_incast.sh's default


def real(d, out):
    """Every mode cc_fabric_incast.sh ran, side by side (incast_depth_<mode>_1.csv)."""
    modes = [m for m in REAL_MODES if os.path.exists(os.path.join(d, f"incast_depth_{m[0]}_1.csv"))]
    if not modes:
        return
    cols = 2 if len(modes) > 2 else len(modes)
    rows = (len(modes) + cols - 1) // cols
    fig, axs = plt.subplots(rows, cols, figsize=(6 * cols, 3.2 * rows), sharex=True, sharey=True,
                            squeeze=False)
    for i, (m, title) in enumerate(modes):
        ax = axs[i // cols][i % cols]
        c = load(os.path.join(d, f"incast_depth_{m}_1.csv"))
        q = [x / 1000 for x in c["depth_bytes"]]
        ax.plot([x / 1000 for x in c["t_us"]], q, lw=0.5, color="k")
        mean = sum(q) / len(q) if q else 0
        ax.axhline(mean, lw=1.2, color="g")
        ax.text(0, mean, f" mean {mean:.1f} KB", va="bottom", fontsize=7, color="g")
        if m in ("off", "on"):
            ax.axhline(KMAX, ls="--", lw=0.7, color="r")
            ax.text(0, KMAX, " Kmax", va="bottom", fontsize=7, color="r")
        if m.startswith("pfc"):
            ax.axhline(XOFF, ls=":", lw=0.8, color="b")
            ax.text(0, XOFF, " XOFF (per ingress port)", va="bottom", fontsize=7, color="b")
        ax.set_title(f"2:1 droce-perf -> droce-fabric (1 Gb/s, shared queue): {title}",
                     fontsize=9)
    for ax in axs[-1]:
        ax.set_xlabel("time (ms)")
    for row in axs:
        row[0].set_ylabel("queue depth (KB)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "cc_real.png"), dpi=110)
    plt.close(fig)


def pfc_lab(d, out, n):
    modes = (("pfc", "PFC only"), ("dcqcn", "DCQCN only (lossy)"), ("both", "PFC + DCQCN"))
    fig, ax = plt.subplots(2, 3, figsize=(15, 6), sharex=True, sharey="row")
    drawn = False
    for j, (mode, title) in enumerate(modes):
        path = os.path.join(d, f"e{n}_{mode}_0.csv")
        if not os.path.exists(path):
            continue
        drawn = True
        c = load(path)
        t = [x / 1000 for x in c["t_us"]]
        for k in flows(c):
            ax[0][j].plot(t, smooth(c[k], 50), lw=0.8, label=k.split("_")[0])
        if "victim_gbps" in c:
            ax[0][j].plot(t, smooth(c["victim_gbps"], 50), lw=1.4, color="k", ls="--",
                          label="victim")
        ax[1][j].plot(t, [x / 1000 for x in c["depth_bytes"]], lw=0.6, color="k")
        ax[0][j].set_title(f"{n}:1 incast, {title}")
        ax[1][j].set_xlabel("time (ms)")
        if len(flows(c)) <= 8:
            ax[0][j].legend(fontsize=7, ncol=5, loc="upper right")
    if not drawn:
        plt.close(fig)
        return
    ax[0][0].set_ylabel("rate (Gb/s, 0.5 ms avg)")
    ax[1][0].set_ylabel("queue depth (KB)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, f"cc_e{n}.png"), dpi=110)
    plt.close(fig)


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "bench/cc"
    out = sys.argv[2] if len(sys.argv) > 2 else d
    incast(d, out, "a", "2:1 incast")
    one_cnp(d, out)
    incast(d, out, "c", "8:1 incast")
    burst(d, out)
    incast(d, out, "f", "8:1 incast, 500 KB buffer", buffer_kb=500)
    real(d, out)
    pfc_lab(d, out, 2)
    pfc_lab(d, out, 8)
    fair = os.path.join(d, "fair")
    if os.path.isdir(fair):  # cc_sim --params fair --pmax 1 --exp ac --out <d>/fair
        incast(fair, out, "a", "2:1, fair profile, Pmax 100%", png="cc_fair_a.png")
        incast(fair, out, "c", "8:1, fair profile, Pmax 100%", png="cc_fair_c.png")
    print("wrote", ", ".join(os.path.join(out, f"cc_{e}.png") for e in ("a", "b", "c", "d", "f", "e2", "e8")))


if __name__ == "__main__":
    main()
