# PyTorch's side of scripts/probes/cpu_gemm.cpp: the same matmuls (bf16 or the dtype named) on the
# CPU, timed the same way (a 2-d b where marked shared, the transpose of a row-major [n, k] where
# marked "^T"; median of 50 runs after 5 warm-ups, two
# input sets alternated, perf_counter around each).
import sys
import time

import torch

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
name = sys.argv[2] if len(sys.argv) > 2 else "bf16"
dt = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32, "f64": torch.float64}[name]
cases = [(4, 1024, 128, 1024), (1, 2048, 2048, 2048), (32, 512, 64, 512), (16, 128, 128, 2048), (1, 64, 4096, 4096),
         (1, 512, 4096, 4096), (64, 1024, 128, 1024), (8, 64, 4096, 4096, True),
         (8, 1, 4096, 4096, True), (1, 512, 4096, 4096, True, True),
         (10000, 8, 8, 8), (2000, 16, 16, 16), (500, 32, 32, 32), (100, 64, 64, 64), (1, 128, 128, 128),
         (1, 256, 256, 256), (1, 4, 4096, 4096), (1, 8, 4096, 4096), (1, 16, 4096, 4096), (1, 32, 4096, 4096),
         (1, 4, 4096, 4096, True, True), (1, 8, 4096, 4096, True, True),
         (1, 16, 4096, 4096, True, True), (1, 32, 4096, 4096, True, True), (1, 64, 4096, 4096, True, True),
         (1, 1, 4096, 4096, True, True), (1, 2, 4096, 4096, True, True), (1, 128, 4096, 4096, True, True),
         (1, 256, 4096, 4096, True, True), (1, 16, 4096, 14336, True, True), (1, 16, 14336, 4096, True, True),
         (32, 16, 128, 2048, False, True), (32, 64, 128, 512, False, True)]
skinny = len(sys.argv) > 3 and sys.argv[3] == "skinny"  # as cpu_gemm.cpp
wt = len(sys.argv) > 3 and sys.argv[3] == "wt"
for b, m, k, n, *flags in cases:
    if skinny and not (b * m <= 64 and k == 4096 and n == 4096):
        continue
    shared = bool(flags and flags[0])
    bt = len(flags) > 1 and flags[1]
    if wt and not bt:
        continue
    xs = [(torch.rand(b, m, k) * 2 - 1).to(dt) for _ in range(2)]
    if bt:
        ys = [((torch.rand(*([] if shared else [b]), n, k) * 2 - 1).to(dt)).transpose(-1, -2) for _ in range(2)]
    else:
        ys = [(torch.rand(*([] if shared else [b]), k, n) * 2 - 1).to(dt) for _ in range(2)]
    ms = []
    for r in range(reps + 5):
        t0 = time.perf_counter()
        torch.matmul(xs[r % 2], ys[r % 2])
        t = (time.perf_counter() - t0) * 1e3
        if r >= 5:
            ms.append(t)
    ms.sort()
    med = ms[len(ms) // 2]
    print(f"torch {name} {b}x({m}x{k} @ {'shared ' if shared else ''}{k}x{n}{'^T' if bt else ''}): {med:.4f} ms (min {ms[0]:.4f}, {2.0 * b * m * n * k / med / 1e9:.2f} TFLOP/s)")
