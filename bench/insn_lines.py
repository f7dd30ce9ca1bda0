#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Instructions per message by function, source file or source line, from two callgrind
runs.

bench/insn_per_msg.sh runs droce-perf under callgrind at two run lengths N1 < N2; the
difference of the two profiles divided by the messages between them is the cost of one
message, with set-up and tear-down cancelled (as for the total). This groups that cost by
function (exclusive: where GCC's inlining decides what a function is), or by the source
line an instruction was compiled from, inlined code included (callgrind's fi=/fe=
records), so a step that several functions inline is seen as one.

--files and --lines need line information in the binary (a build with -Ddebug=true):
without it every instruction sits on line 0 of "???" and they exit 2 saying so.

  insn_lines.py CG1 CG2 MESSAGES --functions K   the K functions that cost the most
  insn_lines.py CG1 CG2 MESSAGES --files K       the K source files that cost the most
  insn_lines.py CG1 CG2 MESSAGES --lines SUBSTR  each line (>= 0.5 per message) of the
                                                 files whose path contains SUBSTR, and
                                                 their sum
"""
import argparse
import collections
import re
import sys

NAME = re.compile(r"\((\d+)\)(?: (.*))?$")


def line_costs(path):
    """{(function, source file, line): Ir} of a callgrind output file with positions
    "line" (callgrind's default), events Ir first; the inclusive costs of calls= lines
    are skipped (they belong to the callee's own lines). The lines must add up to the
    file's own "totals:" (or "summary:") line."""
    cost = collections.Counter()
    total = None
    files, functions = {}, {}

    def name(names, text):
        m = NAME.match(text)
        if not m:
            return text
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), text)

    fl = fi = fn = None
    line = 0
    after_call = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            if not raw:
                continue
            key, _, rest = raw.partition("=")
            if key == "fl":
                fl = fi = name(files, rest)
                continue
            if key in ("fi", "fe"):
                fi = name(files, rest)
                continue
            if key == "fn":
                fn = name(functions, rest)
                fi = fl
                continue
            if key in ("cfi", "cfl"):
                name(files, rest)  # defines a name that later records compress
                continue
            if key == "cfn":
                name(functions, rest)
                continue
            if key == "calls":
                after_call = True
                continue
            if raw.startswith(("totals:", "summary:")):
                total = int(raw.split()[1])
                continue
            if raw[0] not in "0123456789+-*":
                continue
            parts = raw.split()
            pos = parts[0]
            if pos[0] == "+":
                line += int(pos[1:])
            elif pos[0] == "-":
                line -= int(pos[1:])
            elif pos != "*":
                line = int(pos)
            if after_call:
                after_call = False
                continue
            if len(parts) > 1:
                cost[(fn, fi, line)] += int(parts[1])
    if total is not None and sum(cost.values()) != total:
        raise ValueError("%s: its lines add up to %d Ir, its totals line says %d" %
                         (path, sum(cost.values()), total))
    return cost


def per_message(cg1, cg2, messages):
    a, b = line_costs(cg1), line_costs(cg2)
    return {k: (b[k] - a.get(k, 0)) / messages for k in b}


def source_line(cache, path, line):
    if path not in cache:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                cache[path] = f.read().split("\n")
        except OSError:
            cache[path] = []
    text = cache[path]
    return text[line - 1].strip() if 0 < line <= len(text) else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("cg1")
    ap.add_argument("cg2")
    ap.add_argument("messages", type=float, help="messages between the two runs")
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--functions", type=int, metavar="K")
    group.add_argument("--files", type=int, metavar="K")
    group.add_argument("--lines", metavar="SUBSTR")
    args = ap.parse_args()
    if args.messages <= 0:
        ap.error("messages must be positive")
    try:
        d = per_message(args.cg1, args.cg2, args.messages)
    except ValueError as e:
        print("insn_lines.py: %s" % e, file=sys.stderr)
        return 2
    if args.functions is not None:
        by_function = collections.Counter()
        for (fn, _, _), v in d.items():
            by_function[fn] += v
        for fn, v in by_function.most_common(args.functions):
            if v >= 0.05:
                print("%8.1f  %s" % (v, fn))
        return 0
    total = sum(d.values())
    unknown = sum(v for (_, f, l), v in d.items() if f in (None, "???") or l == 0)
    if total <= 0 or unknown > total / 2:
        print("insn_lines.py: the profiles carry no line information (rebuild with "
              "-Ddebug=true)", file=sys.stderr)
        return 2
    if args.files is not None:
        by_file = collections.Counter()
        for (_, f, _), v in d.items():
            by_file[f] += v
        for f, v in by_file.most_common(args.files):
            print("%8.1f  %s" % (v, f))
        return 0
    by_line = collections.Counter()
    for (_, f, l), v in d.items():
        by_line[(f, l)] += v
    cache = {}
    s = 0.0
    for (f, l), v in sorted(by_line.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        if f and args.lines in f and abs(v) >= 0.5:
            s += v
            print("%7.1f  %s:%d  %s" % (v, f.rsplit("/", 1)[-1], l,
                                        source_line(cache, f, l)[:100]))
    print("%7.1f  in all (lines >= 0.5 shown)" % s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
