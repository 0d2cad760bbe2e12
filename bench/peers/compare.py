#!/usr/bin/env python3
"""Joins `wick bench --json` and torch_bench.py output into one markdown table (stdlib only).

usage: compare.py WICK_JSON [TORCH_JSON] [--torch-missing REASON] [--out FILE]

Rows are joined on (op, shape, dtype). torch/wick is torch's time over wick's: above 1 wick is
faster. "% copy" is the row's GB/s over the copy row's GB/s of the same wick run (memory-bound rows
only): how close the op comes to what the device moves in practice.
"""

import argparse
import json
import math
import sys


def key(r):
    return (r["op"], r["shape"], r["dtype"])


def num(x):
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def fmt_ms(r, missing):
    if r is None:
        return missing
    if r.get("status") != "ok" or num(r.get("ms")) is None:
        return r.get("status", "?")
    ms = r["ms"]
    return f"{ms:.4f}" if ms < 1 else f"{ms:.3f}" if ms < 100 else f"{ms:.1f}"


def fmt_rate(r):
    rate = num(r.get("rate")) if r else None
    if rate is None:
        return "-"
    unit = r.get("unit", "")
    if unit == "TFLOP/s":
        return f"{rate:.3g} {unit}" if rate < 1 else f"{rate:.1f} {unit}"
    if unit == "us/op":
        return f"{rate:.2f} {unit}"
    return f"{rate:.0f} {unit}" if rate >= 10 else f"{rate:.2f} {unit}"


def ratio(w, t):
    if not w or not t or w.get("status") != "ok" or t.get("status") != "ok":
        return None
    wm, tm = num(w.get("ms")), num(t.get("ms"))
    if not wm or not tm:
        return None
    return tm / wm


def build(wick, torch, torch_missing):
    lines = []
    wrows = wick.get("rows", [])
    trows = {key(r): r for r in torch.get("rows", [])} if torch else {}
    copy = next((r for r in wrows if r["op"] == "copy" and r.get("status") == "ok"), None)
    copy_gbs = num(copy.get("rate")) if copy else None

    rounds = f" in each of {wick['rounds']} rounds, alternating with torch op by op" if wick.get("rounds") else ""
    lines.append(f"wick: {wick.get('device')} ({wick.get('device_name')}), shapes {wick.get('shapes')}, "
                 f"median of {wick.get('reps')} runs{rounds}, timer {wick.get('timer')}")
    if wick.get("device_details"):
        lines.append(f"wick device: {wick.get('device_details')}")
    if torch:
        lines.append(f"torch {torch.get('version')}: {torch.get('device')} ({torch.get('device_name')}), "
                     f"shapes {torch.get('shapes')}, median of {torch.get('reps')} runs{rounds}, "
                     f"timer {torch.get('timer')}")
        if torch.get("shapes") != wick.get("shapes"):
            lines.append("WARNING: the two runs used different shape sets; ratios compare different work")
    else:
        lines.append(f"torch: {torch_missing}")
    bw = num(wick.get("floor_bw_gbs"))
    lines.append((f"floor = bytes / {bw:.0f} GB/s" if bw else "floor = bytes / copy bandwidth (none measured)")
                 + "; TFLOP/s rows: flops / the GPU's dense peak where known; torch/wick > 1: wick faster")
    lines.append("")
    lines.append("| op | shape | dtype | wick ms | torch ms | torch/wick | wick rate | % copy | floor ms |")
    lines.append("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")

    missing = "torch not found" if not torch else "-"
    ratios, unsupported, errors = [], [], []
    seen = set()
    for w in wrows:
        k = key(w)
        seen.add(k)
        t = trows.get(k)
        rt = ratio(w, t)
        if rt is not None:
            ratios.append((rt, k))
        if w.get("status") == "unsupported":
            unsupported.append(k)
        elif w.get("status") not in ("ok", "listed"):
            errors.append((k, w.get("message", "")))
        pct = "-"
        rate = num(w.get("rate"))
        if w.get("unit") == "GB/s" and rate is not None and copy_gbs:
            pct = f"{100 * rate / copy_gbs:.0f}%"
        floor = num(w.get("floor_ms"))
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            w["op"], w["shape"], w["dtype"], fmt_ms(w, "-"), fmt_ms(t, missing),
            f"{rt:.2f}x" if rt is not None else "-", fmt_rate(w), pct,
            f"{floor:.4f}" if floor is not None else "-"))
    torch_only = [k for k in trows if k not in seen]
    for k in torch_only:
        t = trows[k]
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | (no wick row) | {fmt_ms(t, missing)} | - | - | - | - |")

    lines.append("")
    lines.append("Summary")
    lines.append("")
    n_ok = sum(1 for w in wrows if w.get("status") == "ok")
    lines.append(f"- {len(wrows)} rows: wick timed {n_ok}, unsupported {len(unsupported)}, errors {len(errors)}")
    if torch:
        fast = sorted((k for rt, k in ratios if rt >= 1.0), key=lambda k: k[0])
        lines.append(f"- wick at least as fast as torch: {len(fast)} of {len(ratios)} rows timed by both"
                     + (": " + ", ".join(f"{k[0]} {k[2]}" for k in fast) if fast else ""))
        worst = sorted(ratios)[:5]
        if worst:
            lines.append("- worst five torch/wick ratios: "
                         + ", ".join(f"{k[0]} {k[1]} {k[2]} {rt:.2f}x" for rt, k in worst))
        if torch_only:
            lines.append(f"- rows only torch has: {len(torch_only)}")
    else:
        lines.append(f"- no torch comparison: {torch_missing}")
    if unsupported:
        ops = sorted({k[0] for k in unsupported})
        lines.append("- wick unsupported: " + ", ".join(ops))
    for k, msg in errors:
        lines.append(f"- wick error in {k[0]} {k[1]} {k[2]}: {msg}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("wick_json")
    ap.add_argument("torch_json", nargs="?")
    ap.add_argument("--torch-missing", default="torch not found")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    with open(a.wick_json) as f:
        wick = json.load(f)
    torch = None
    if a.torch_json:
        with open(a.torch_json) as f:
            torch = json.load(f)
    text = build(wick, torch, a.torch_missing)
    sys.stdout.write(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
