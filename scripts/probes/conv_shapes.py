# PyTorch's side of scripts/probes/conv_shapes.cpp: the same shapes, timed the same way (CUDA events,
# median of 20 runs after 3 warm-ups), 3x3 convolutions at stride 1 and padding 1 in bf16 and f16.
import sys

import torch

shapes = [(32, 64, 56, 56, 64), (32, 128, 28, 28, 128), (32, 256, 14, 14, 256), (2, 320, 64, 64, 320),
          (2, 640, 32, 32, 640), (2, 1280, 16, 16, 1280), (1, 128, 256, 256, 128), (1, 512, 64, 64, 512),
          (8, 64, 128, 128, 64)]
if len(sys.argv) > 1:
    shapes = [tuple(int(v) for v in a.split(",")) for a in sys.argv[1:]]
torch.backends.cudnn.benchmark = True  # as bench/peers/torch_bench.py: cuDNN picks its fastest algorithm
for dt, name in ((torch.bfloat16, "bf16"), (torch.float16, "f16")):
    for n, c, h, w, co in shapes:
        x = (torch.rand(n, c, h, w, device="cuda") * 2 - 1).to(dt)
        k = (torch.rand(co, c, 3, 3, device="cuda") * 2 - 1).to(dt)
        ms = []
        for r in range(23):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            torch.nn.functional.conv2d(x, k, padding=1)
            b.record()
            b.synchronize()
            if r >= 3:
                ms.append(a.elapsed_time(b))
        ms.sort()
        med = ms[len(ms) // 2]
        print(f"torch conv2d [{n}, {c}, {h}, {w}] -> {co} {name}: {med:.4f} ms {2.0 * n * co * h * w * c * 9 / med * 1e-9:.1f} TFLOP/s")
