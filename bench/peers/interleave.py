#!/usr/bin/env python3
"""Runs `wick bench` and torch_bench.py op by op, alternating, for several rounds, and writes the two
JSON documents that compare.py joins (stdlib only).

usage: interleave.py --wick PATH --rounds N --wick-out FILE --torch-out FILE [--python PY]
                     [--device D] [--op NAME]... [--reps N] [--quick|--cpu-shapes|--gpu-shapes] [--llm] [--quant] [--bw GBS]

Why: a lent machine's CPU speed drifts by up to 3x between phases of a run (other tenants), and
timing all of wick's rows and then all of torch's puts the two sides of a row minutes apart, in
different phases. Here each op is timed by wick and then by torch (torch first in even rounds), so
both sides of a row are seconds apart, and each side's row is the median of its rounds. torch runs
as one process (torch_bench.py --serve); each wick run is a fresh `wick bench --op NAME`, whose rows
of other ops that share the prefix are dropped. On the CPU, where the floor column comes from the
copy row, it is recomputed from the median copy row.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time


def key(r):
    return (r["op"], r["shape"], r["dtype"])


def median_row(rows):
    ok = sorted((r for r in rows if r.get("status") == "ok" and r.get("ms") is not None), key=lambda r: r["ms"])
    if not ok:
        return rows[0]
    return dict(ok[(len(ok) - 1) // 2], rounds_ms=[r.get("ms") for r in rows])


def merge(doc, groups, rounds, measured_bw):
    """doc with rows: per key the median of its rounds, in first-seen order; where the bandwidth is
    measured (the CPU, no --bw), GB/s rows get their floor from the merged copy row."""
    order, by_key = [], {}
    for rows in groups:
        for r in rows:
            k = key(r)
            if k not in by_key:
                order.append(k)
                by_key[k] = []
            by_key[k].append(r)
    rows = [median_row(by_key[k]) for k in order]
    bw = doc.get("floor_bw_gbs")
    if measured_bw:
        bw = None
        copy = next((r for r in rows if r["op"] == "copy" and r.get("status") == "ok" and r.get("ms")), None)
        if copy:
            bw = copy["bytes"] / (copy["ms"] * 1e-3) / 1e9
            for r in rows:
                if r.get("unit") == "GB/s" and r.get("bytes"):
                    r["floor_ms"] = float(f"{r['bytes'] / (bw * 1e9) * 1e3:.6g}")
    return dict(doc, floor_bw_gbs=None if bw is None else float(f"{bw:.6g}"), rows=rows, rounds=rounds)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wick", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--wick-out", required=True)
    ap.add_argument("--torch-out", required=True)
    ap.add_argument("--device")
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--reps")
    ap.add_argument("--bw")
    g = ap.add_mutually_exclusive_group()
    for flag in ("--quick", "--cpu-shapes", "--gpu-shapes"):
        g.add_argument(flag, dest="shapes", action="store_const", const=flag)
    ap.add_argument("--llm", action="store_true")
    ap.add_argument("--quant", action="store_true")
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error("--rounds must be >= 1")

    common = []  # to both sides; wick also gets the device as asked, torch the one wick's listing names
    if a.reps:
        common += ["--reps", a.reps]
    if a.bw:
        common += ["--bw", a.bw]
    if a.shapes:
        common.append(a.shapes)
    if a.llm:
        common.append("--llm")
    if a.quant:
        common.append("--quant")
    wick_common = (["--device", a.device] if a.device else []) + common
    listing = json.loads(subprocess.run([a.wick, "bench", "--json", "--list", *wick_common,
                                         *sum((["--op", o] for o in a.op), [])],
                                        check=True, capture_output=True, text=True).stdout)
    ops = []
    for r in listing["rows"]:
        if r["op"] not in ops:
            ops.append(r["op"])
    # Both sides on the shapes wick's listing used (the device's default set when none was named).
    set_name = listing["shapes"].removeprefix("llm-").removeprefix("quant-")
    shape_flag = {"quick": "--quick", "cpu": "--cpu-shapes"}.get(set_name, "--gpu-shapes")
    if not a.shapes:
        common.append(shape_flag)
        wick_common.append(shape_flag)
    torch_cmd = [a.python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_bench.py"), "--serve",
                 "--device", listing["device"], *common]
    torch_proc = subprocess.Popen(torch_cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    torch_doc = json.loads(torch_proc.stdout.readline())

    wick_doc, wick_groups, torch_groups = None, [], []

    def run_wick(op):
        nonlocal wick_doc
        p = subprocess.run([a.wick, "bench", "--json", "--op", op, *wick_common], capture_output=True, text=True)
        doc = json.loads(p.stdout)  # exit 1 with JSON: a row raised an error, which the row says
        wick_doc = wick_doc or doc
        wick_groups.append([r for r in doc["rows"] if r["op"] == op])

    def run_torch(op):
        torch_proc.stdin.write(op + "\n")
        torch_proc.stdin.flush()
        torch_groups.append(json.loads(torch_proc.stdout.readline())["rows"])
        time.sleep(0.3)  # let torch's idle OpenMP threads stop spinning before wick starts

    for rnd in range(a.rounds):
        for op in ops:
            first, second = (run_wick, run_torch) if rnd % 2 == 0 else (run_torch, run_wick)
            first(op)
            second(op)
            print(f"interleave.py: round {rnd + 1}/{a.rounds} {op}", file=sys.stderr, flush=True)
    torch_proc.stdin.close()
    torch_proc.wait()

    measured_bw = listing["device"] == "cpu" and not a.bw
    with open(a.wick_out, "w") as f:
        json.dump(merge(wick_doc, wick_groups, a.rounds, measured_bw), f, indent=1)
    torch_doc["floor_bw_gbs"] = wick_doc.get("floor_bw_gbs")
    with open(a.torch_out, "w") as f:
        json.dump(merge(torch_doc, torch_groups, a.rounds, measured_bw), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
