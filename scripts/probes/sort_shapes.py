# PyTorch's side of scripts/probes/sort_shapes.cpp: the same shapes, timed the same way (CUDA
# events, median of 20 runs after 3 warm-ups), stable descending sort of f32 and of bf16.
import torch

shapes = [(1, 32000), (1, 128256), (1, 151936), (32, 128256), (256, 128256), (4096, 32768), (65536, 256), (1, 1 << 24),
          (4096, 5000), (4096, 8192), (2048, 16384)]
for dt, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
    for rows, cols in shapes:
        x = (torch.rand(rows, cols, device="cuda") * 2 - 1).to(dt)
        ms = []
        for r in range(23):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            torch.sort(x, dim=-1, descending=True, stable=True)
            b.record()
            b.synchronize()
            if r >= 3:
                ms.append(a.elapsed_time(b))
        ms.sort()
        print(f"torch sort [{rows}, {cols}] desc {name}: {ms[len(ms) // 2]:.4f} ms")
