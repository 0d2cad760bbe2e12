#!/usr/bin/env python3
"""Load rate of a large safetensors file to the GPU, against the host-to-device copy rate.

Writes a file of about 9.7 GB (36 f16 tensors of 256 MiB) unless it exists, reads it once so it
sits in the page cache, then in one run measures:
  - the host-to-device copy rate of page-locked memory (PyTorch, 1 GiB copies): the ceiling;
  - `wick load FILE --device cuda --repeat N` in three processes (every tensor, streamed through
    page-locked buffers): the first load of each process and the later ones;
  - safetensors.torch.load_file(FILE, device="cuda") as a peer, when the package is there.
Prints each rate and wick's fraction of the ceiling.

usage: bench/load_rate.py WICK_BINARY [--file PATH] [--repeat N]
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import time

import numpy as np


def write_file(path, n_tensors=36, rows=8192, cols=16384):
    rng = np.random.default_rng(7)
    base = rng.standard_normal(rows * cols, dtype=np.float32).astype(np.float16)
    nbytes = base.nbytes
    header = {}
    for i in range(n_tensors):
        header[f"layer.{i}.weight"] = {"dtype": "F16", "shape": [rows, cols],
                                       "data_offsets": [i * nbytes, (i + 1) * nbytes]}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path + ".part", "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for i in range(n_tensors):
            base[i::997] += np.float16(1)  # every tensor differs a little
            f.write(base.tobytes())
    os.replace(path + ".part", path)


def warm(path):
    with open(path, "rb") as f:
        while f.read(1 << 26):
            pass


def h2d_rate(repeat):
    import torch
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, pin_memory=True)
    src.fill_(3)
    dst = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst.copy_(src, non_blocking=True)
    torch.cuda.synchronize()
    rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(4):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
        rates.append(4 * n / 1e9 / (time.perf_counter() - t0))
    return max(rates)


def wick_rates(binary, path, repeat):
    out = subprocess.run([binary, "load", path, "--device", "cuda", "--repeat", str(repeat)],
                         check=True, capture_output=True, text=True).stdout
    return [float(m) for m in re.findall(r"([0-9.]+) GB/s", out)]


def torch_safetensors_rate(path, size, repeat):
    try:
        import torch
        from safetensors.torch import load_file
    except ImportError:
        return None
    rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        d = load_file(path, device="cuda")
        torch.cuda.synchronize()
        rates.append(size / 1e9 / (time.perf_counter() - t0))
        del d
        torch.cuda.empty_cache()
    return max(rates)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("wick")
    ap.add_argument("--file", default="/tmp/wick_load_rate.safetensors")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    if not os.path.exists(a.file):
        t0 = time.perf_counter()
        write_file(a.file)
        print(f"wrote {a.file} in {time.perf_counter() - t0:.1f} s")
    size = os.path.getsize(a.file)
    warm(a.file)
    ceiling = h2d_rate(a.repeat)
    print(f"file {size / 1e9:.2f} GB (page cache)")
    print(f"host-to-device copy, page-locked 1 GiB: {ceiling:.2f} GB/s")
    # The first load of a process maps the file's pages and grows the device's memory pool; the
    # later ones of the same process show the pipeline alone.
    runs = [wick_rates(a.wick, a.file, a.repeat) for _ in range(3)]
    first = sorted(r[0] for r in runs)[1]
    later = sorted(x for r in runs for x in r[1:])
    w = later[len(later) // 2]
    print("wick load, GB/s per process: " + "; ".join(" ".join(f"{x:.1f}" for x in r) for r in runs))
    print(f"wick load, first of a process (median of 3): {first:.2f} GB/s = {first / ceiling:.2f} of the copy rate")
    print(f"wick load, later loads (median): {w:.2f} GB/s = {w / ceiling:.2f} of the copy rate")
    st = torch_safetensors_rate(a.file, size, a.repeat)
    if st:
        print(f"safetensors.torch.load_file(device='cuda'), best of {a.repeat}: {st:.2f} GB/s = {st / ceiling:.2f}; "
              f"wick's first load / it = {first / st:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
