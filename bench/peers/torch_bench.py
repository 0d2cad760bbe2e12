#!/usr/bin/env python3
"""Times the rows of `wick bench` with PyTorch, the same way, and prints the same JSON.

Needs only python3 and torch. Row keys (op, shape, dtype), shape sets, byte and flop counts and the
input rotation rule mirror tools/wick/bench.cpp: keep the two in step.

Method, per row: random inputs (never zeros), one warm-up run per input set (at least two), then
`reps` timed runs, median reported. When one run's inputs fit in a 50 MB L2-sized budget, several
input sets are made and the runs rotate among them. GPU runs are timed with CUDA events around each
run (after a synchronize, behind row sums over 256 MB that keep the GPU busy while the run's kernels
are queued, so that the events time the device's work); CPU runs with synchronize +
time.perf_counter. TF32 is off for matmul and conv (wick's f32 rows are f32); cudnn.benchmark is
on, so torch convs use their best algorithm.

usage: torch_bench.py [--device cuda|cuda:N|rocm|cpu] [--op NAME]... [--reps N]
                      [--quick | --cpu-shapes | --gpu-shapes] [--llm] [--bw GBS] [--serve]
--serve is for bench/peers/interleave.py, which alternates wick's and torch's runs op by op.
"""

import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

L2_BUDGET = 50e6
GPU_COPY_GBS = 3000.0

_COMMON = ("bm", "bn", "tr", "rr", "rc", "nr", "nc", "sr", "sc", "ir", "ic", "ik", "mm16", "mm32",
           "bb", "bmn", "bk", "mvm", "mvk", "c1n", "c1c", "c1l", "c2n", "c2c", "c2hw", "chain")


def _sizes(n, *rest):
    d = dict(zip(_COMMON, rest))
    d["n"] = n
    return d


# Same numbers as kFull / kCpu / kQuick in tools/wick/bench.cpp.
SIZES = {
    "gpu": _sizes(1 << 28, 4096, 65536, 16384, 8192, 32768, 32768, 8192, 4096, 32768, 128256, 4096, 8192,
                  8192, 4096, 64, 1024, 128, 14336, 4096, 32, 256, 4096, 32, 64, 56, 1000),
    "cpu": _sizes(1 << 24, 1024, 16384, 4096, 2048, 8192, 8192, 2048, 1024, 8192, 32064, 1024, 2048,
                  2048, 2048, 4, 1024, 128, 3584, 1024, 2, 256, 4096, 2, 64, 56, 1000),
    "quick": _sizes(1 << 14, 64, 256, 128, 64, 256, 64, 256, 32, 256, 1000, 64, 64,
                    64, 64, 2, 64, 32, 256, 128, 1, 16, 64, 1, 8, 16, 100),
}

LINEAR_TOKENS = 16  # kLinearTokens in tools/wick/bench.cpp

DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
SZ = {"f32": 4, "bf16": 2, "f16": 2}


def rnd(shape, dtype, dev, lo=-1.0, up=1.0):
    return torch.empty(shape, dtype=dtype, device=dev).uniform_(lo, up)


def dims(*v):
    return "x".join(str(x) for x in v)


class Row:
    def __init__(self, op, shape, dtype, nbytes, flops, in_bytes, make, math_dtype="f32", chain=0, rotate=0.0):
        self.op, self.shape, self.dtype = op, shape, dtype
        self.rotate = float(rotate)  # > 0: rotate input sets until they total this many bytes
        self.bytes, self.flops, self.in_bytes = float(nbytes), float(flops), float(in_bytes)
        self.make, self.math, self.chain = make, math_dtype, chain


def rms_norm(x, w, eps):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, eps)
    # torch < 2.4: no fused op; the composite is what users of those versions get.
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def make_rows(z):
    rows = []
    row = lambda *a, **k: rows.append(Row(*a, **k))  # noqa: E731
    n = z["n"]
    ns = str(n)
    f32 = torch.float32

    def copy(d):
        x = rnd((n,), f32, d)
        return lambda: x.clone()
    row("copy", ns, "f32", 8 * n, 0, 4 * n, copy)

    def fill(d):
        y = torch.empty((n,), dtype=f32, device=d)
        return lambda: y.fill_(1.5)
    row("fill", ns, "f32", 4 * n, 0, 0, fill)

    for dt in ("f32", "bf16"):
        def add(d, dt=dt):
            a, b = rnd((n,), DT[dt], d), rnd((n,), DT[dt], d)
            return lambda: a + b
        row("add", ns, dt, 3 * n * SZ[dt], 0, 2 * n * SZ[dt], add)

    bm, bn = z["bm"], z["bn"]

    def mul_bcast(d):
        a, b = rnd((bm, bn), f32, d), rnd((bn,), f32, d)
        return lambda: a * b
    row("mul_bcast", f"{dims(bm, bn)} * {bn}", "f32", 4 * (2 * bm * bn + bn), 0, 4 * (bm * bn + bn), mul_bcast)

    def unary(fn):
        def make(d):
            x = rnd((n,), f32, d)
            return lambda: fn(x)
        return make
    row("exp", ns, "f32", 8 * n, 0, 4 * n, unary(torch.exp))
    row("gelu", ns, "f32", 8 * n, 0, 4 * n, unary(lambda x: F.gelu(x, approximate="tanh")))

    def affine(d):
        # x * 1.5 + 0.5 as ONE kernel (x.mul(1.5).add(0.5) would be two passes): add(c, x, alpha).
        x = rnd((n,), f32, d)
        c = torch.tensor(0.5, dtype=f32, device=d)
        return lambda: torch.add(c, x, alpha=1.5)
    row("affine", ns, "f32", 8 * n, 0, 4 * n, affine)

    for dt in ("bf16", "f16"):
        def cast(d, dt=dt):
            x = rnd((n,), f32, d)
            return lambda: x.to(DT[dt])
        row("cast", ns, "f32->" + dt, n * (4 + SZ[dt]), 0, 4 * n, cast)

    def where(d):
        c = torch.rand((n,), device=d) < 0.5  # bool, 1 byte like wick's u8
        a, b = rnd((n,), f32, d), rnd((n,), f32, d)
        return lambda: torch.where(c, a, b)
    row("where", ns, "f32", 13 * n, 0, 9 * n, where)

    tr = z["tr"]

    def transpose_copy(d):
        x = rnd((tr, tr), f32, d)
        return lambda: x.t().contiguous()
    row("transpose_copy", dims(tr, tr), "f32", 8 * tr * tr, 0, 4 * tr * tr, transpose_copy)

    rr, rc = z["rr"], z["rc"]
    e = rr * rc
    last = dims(rr, rc) + " dim -1"

    def over(fn, shape=(rr, rc)):
        def make(d):
            x = rnd(shape, f32, d)
            return lambda: fn(x)
        return make
    row("sum", last, "f32", 4 * e + 4 * rr, 0, 4 * e, over(lambda x: x.sum(1)))
    row("max", last, "f32", 4 * e + 4 * rr, 0, 4 * e, over(lambda x: x.amax(1)))
    row("argmax", last, "f32", 4 * e + 8 * rr, 0, 4 * e, over(lambda x: x.argmax(1)))
    row("sum", dims(rr, rc) + " dim 0", "f32", 4 * e + 4 * rc, 0, 4 * e, over(lambda x: x.sum(0)))
    row("softmax", last, "f32", 8 * e, 0, 4 * e, over(lambda x: torch.softmax(x, -1)))

    nr, nc = z["nr"], z["nc"]
    ne = nr * nc

    def rms(d):
        x, w = rnd((nr, nc), f32, d), rnd((nc,), f32, d, 0.5, 1.5)
        return lambda: rms_norm(x, w, 1e-5)
    row("rms_norm", dims(nr, nc), "f32", 8 * ne + 4 * nc, 0, 4 * (ne + nc), rms)

    def ln(d):
        x, w, b = rnd((nr, nc), f32, d), rnd((nc,), f32, d, 0.5, 1.5), rnd((nc,), f32, d)
        return lambda: F.layer_norm(x, (nc,), w, b, 1e-5)
    row("layer_norm", dims(nr, nc), "f32", 8 * ne + 8 * nc, 0, 4 * (ne + 2 * nc), ln)

    row("cumsum", last, "f32", 8 * e, 0, 4 * e, over(lambda x: torch.cumsum(x, -1)))

    sr, sc = z["sr"], z["sc"]
    # Stable, like wick's sort; values and i64 indices written: 4 + 4 + 8 bytes per element.
    row("sort", dims(sr, sc) + " dim -1", "f32", 16 * sr * sc, 0, 4 * sr * sc,
        over(lambda x: torch.sort(x, dim=-1, stable=True), (sr, sc)))

    ir, ic, ik = z["ir"], z["ic"], z["ik"]

    def index_select(d):
        t = rnd((ir, ic), torch.bfloat16, d)
        i = torch.randint(0, ir, (ik,), dtype=torch.int64, device=d)
        return lambda: t.index_select(0, i)
    row("index_select", f"{dims(ir, ic)} ids {ik} dim 0", "bf16", 4 * ik * ic + 8 * ik, 0,
        2 * ir * ic + 8 * ik, index_select)

    def gather(d):
        x = rnd((rr, rc), f32, d)
        i = torch.randint(0, rc, (rr, rc), dtype=torch.int64, device=d)
        return lambda: x.gather(1, i)
    row("gather", last, "f32", 16 * e, 0, 12 * e, gather)

    row("rand", ns, "f32", 4 * n, 0, 0, lambda d: (lambda: torch.rand((n,), dtype=f32, device=d)))
    row("randn", ns, "f32", 4 * n, 0, 0, lambda d: (lambda: torch.randn((n,), dtype=f32, device=d)))

    for m, dt in ((z["mm16"], "bf16"), (z["mm16"], "f16"), (z["mm32"], "f32")):
        def mm(d, m=m, dt=dt):
            a, b = rnd((m, m), DT[dt], d), rnd((m, m), DT[dt], d)
            return lambda: a @ b
        row("matmul", dims(m, m, m), dt, 3 * m * m * SZ[dt], 2 * m ** 3, 2 * m * m * SZ[dt], mm, math_dtype=dt)

    bb, bmn, bk = z["bb"], z["bmn"], z["bk"]

    def bmm(d):
        x, y = rnd((bb, bmn, bk), torch.bfloat16, d), rnd((bb, bk, bmn), torch.bfloat16, d)
        return lambda: torch.bmm(x, y)
    row("bmm", f"{bb}x({dims(bmn, bk)} @ {dims(bk, bmn)})", "bf16", 2 * bb * (2 * bmn * bk + bmn * bmn),
        2 * bb * bmn * bmn * bk, 2 * bb * 2 * bmn * bk, bmm, math_dtype="bf16")

    mvm, mvk = z["mvm"], z["mvk"]

    def matvec(d):
        w, x = rnd((mvm, mvk), torch.bfloat16, d), rnd((mvk,), torch.bfloat16, d)
        return lambda: w @ x
    row("matvec", f"{dims(mvm, mvk)} @ {mvk}", "bf16", 2 * (mvm * mvk + mvk + mvm), 0, 2 * (mvm * mvk + mvk), matvec)

    lt = LINEAR_TOKENS

    def linear(d):
        w, x = rnd((mvm, mvk), torch.bfloat16, d), rnd((lt, mvk), torch.bfloat16, d)
        return lambda: F.linear(x, w)
    row("linear", f"{dims(lt, mvk)} @ {dims(mvm, mvk)}^T", "bf16", 2 * (mvm * mvk + lt * mvk + lt * mvm), 0,
        2 * (mvm * mvk + lt * mvk), linear)

    c1n, c1c, c1l = z["c1n"], z["c1c"], z["c1l"]

    def conv1d(d):
        x, w = rnd((c1n, c1c, c1l), f32, d), rnd((c1c, c1c, 3), f32, d)
        return lambda: F.conv1d(x, w, padding=1)
    row("conv1d", f"N{c1n} C{c1c}->{c1c} L{c1l} k3 p1", "f32", 4 * (2 * c1n * c1c * c1l + c1c * c1c * 3),
        2 * c1n * c1c * c1l * c1c * 3, 4 * (c1n * c1c * c1l + c1c * c1c * 3), conv1d)

    N, C, H = z["c2n"], z["c2c"], z["c2hw"]
    e2, wts = N * C * H * H, C * C * 9
    flops = 2 * e2 * C * 9
    base = f"N{N} C{C}"
    cshape = f"{base}->{C} {dims(H, H)} k3 p1"
    for dt in ("f32", "bf16"):
        def conv2d(d, dt=dt):
            x, w = rnd((N, C, H, H), DT[dt], d), rnd((C, C, 3, 3), DT[dt], d)
            return lambda: F.conv2d(x, w, padding=1)
        row("conv2d", cshape, dt, SZ[dt] * (2 * e2 + wts), flops, SZ[dt] * (e2 + wts), conv2d, math_dtype=dt)

    def conv_t(d):
        x, w = rnd((N, C, H, H), f32, d), rnd((C, C, 3, 3), f32, d)
        return lambda: F.conv_transpose2d(x, w, padding=1)
    row("conv_transpose2d", cshape, "f32", 4 * (2 * e2 + wts), flops, 4 * (e2 + wts), conv_t)

    # The upsampling forms, H/2 -> H at stride 2: a 4x4 kernel, and a 3x3 one with output padding 1.
    hh, ein = H // 2, N * C * (H // 2) ** 2
    for k, op in ((4, 0), (3, 1)):
        def conv_up(d, k=k, op=op):
            x, w = rnd((N, C, hh, hh), f32, d), rnd((C, C, k, k), f32, d)
            return lambda: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=op)
        wk = C * C * k * k
        row("conv_transpose2d", f"{base}->{C} {dims(hh, hh)} k{k} s2 p1" + (f" op{op}" if op else ""), "f32",
            4 * (ein + e2 + wk), 2 * ein * C * k * k, 4 * (ein + wk), conv_up)

    row("max_pool2d", f"{base} {dims(H, H)} k2 s2", "f32", 4 * e2 * 1.25, 0, 4 * e2,
        over(lambda x: F.max_pool2d(x, 2), (N, C, H, H)))
    row("upsample_nearest2d", f"{base} {dims(H, H)} x2", "f32", 4 * e2 * 5, 0, 4 * e2,
        over(lambda x: F.interpolate(x, size=(2 * H, 2 * H), mode="nearest"), (N, C, H, H)))

    k = z["chain"]

    def chain(d):
        x = rnd((16,), f32, d)

        def run():
            y = x
            for _ in range(k):
                y = y + x
            return y
        return run
    row("host_overhead", f"{k} x add [16]", "f32", 0, 0, 0, chain, chain=k)
    return rows


# Same numbers as kLlmGpu / kLlmCpu / kLlmQuick in tools/wick/bench_llm.cpp.
LLM_SIZES = {
    "gpu": dict(copy=1 << 28, hidden=4096, heads=32, kv=8, hd=128, ffn=14336, vocab=128256, tokens=2048, ctx=4096,
                batch=64),
    "cpu": dict(copy=1 << 24, hidden=2048, heads=32, kv=8, hd=64, ffn=8192, vocab=128256, tokens=128, ctx=1024,
                batch=8),
    "quick": dict(copy=1 << 14, hidden=64, heads=4, kv=2, hd=16, ffn=128, vocab=1000, tokens=16, ctx=32, batch=2),
}


def rope_half(x, cos, sin):
    """Rotary embedding of half-split pairs (wick's rope; what Llama code does in eager torch)."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


def make_llm_rows(z):
    """The rows of tools/wick/bench_llm.cpp (its header says what they model)."""
    rows = []
    row = lambda *a, **k: rows.append(Row(*a, **k))  # noqa: E731
    bf16, f32 = torch.bfloat16, torch.float32
    H, nh, hd, ffn, V, T, C = (z[k] for k in ("hidden", "heads", "hd", "ffn", "vocab", "tokens", "ctx"))
    kv = z["kv"]
    Q = (nh + 2 * kv) * hd
    cn = z["copy"]

    def copy(d):
        x = rnd((cn,), f32, d)
        return lambda: x.clone()
    row("copy", str(cn), "f32", 8 * cn, 0, 4 * cn, copy)

    # ---- prefill ----
    def embed(d):
        t = rnd((V, H), bf16, d)
        i = torch.randint(0, V, (T,), dtype=torch.int64, device=d)
        return lambda: t.index_select(0, i)
    row("index_select", f"{dims(V, H)} ids {T} dim 0", "bf16", 4 * T * H + 8 * T, 0, 2 * V * H + 8 * T, embed)

    def rms(rows_):
        def make(d):
            x, w = rnd((rows_, H), bf16, d), rnd((H,), bf16, d, 0.5, 1.5)
            return lambda: rms_norm(x, w, 1e-5)
        row("rms_norm", dims(rows_, H), "bf16", 4 * rows_ * H + 2 * H, 0, 2 * (rows_ * H + H), make)
    rms(T)

    def linear(m, n, k):
        def make(d):
            x, w = rnd((m, k), bf16, d), rnd((n, k), bf16, d)
            return lambda: F.linear(x, w)
        row("linear", f"{dims(m, k)} @ {dims(n, k)}^T", "bf16", 2 * (m * k + n * k + m * n),
            2 * m * n * k if m > 1 else 0, 2 * (m * k + n * k), make, math_dtype="bf16")
    linear(T, Q, H)

    def rope(d):
        x = rnd((1, nh, T, hd), bf16, d)
        c, s = rnd((T, hd // 2), bf16, d), rnd((T, hd // 2), bf16, d)
        return lambda: rope_half(x, c, s)
    row("rope", dims(1, nh, T, hd), "bf16", 4 * nh * T * hd + 2 * T * hd, 0, 2 * (nh * T * hd + T * hd), rope)

    def transpose(d):
        x = rnd((1, T, nh, hd), bf16, d)
        return lambda: x.transpose(1, 2).contiguous()
    row("transpose_copy", f"{dims(1, T, nh, hd)} dims 1,2", "bf16", 4 * T * nh * hd, 0, 2 * T * nh * hd, transpose)

    def scores(d):
        q, k = rnd((nh, T, hd), bf16, d), rnd((nh, T, hd), bf16, d)
        return lambda: torch.matmul(q, k.transpose(-1, -2))
    row("bmm", f"{nh}x({dims(T, hd)} @ ({dims(T, hd)})^T)", "bf16", 2 * nh * (2 * T * hd + T * T),
        2 * nh * T * T * hd, 4 * nh * T * hd, scores, math_dtype="bf16")

    def softmax_scores(d):
        x = rnd((nh, T, T), bf16, d, -4.0, 4.0)
        return lambda: torch.softmax(x, -1)
    row("softmax", f"{dims(nh, T, T)} dim -1", "bf16", 4 * nh * T * T, 0, 2 * nh * T * T, softmax_scores)

    def apply(d):
        p, x = rnd((nh, T, T), bf16, d, 0.0, 1.0), rnd((nh, T, hd), bf16, d)
        return lambda: torch.matmul(p, x)
    row("bmm", f"{nh}x({dims(T, T)} @ {dims(T, hd)})", "bf16", 2 * nh * (T * T + 2 * T * hd), 2 * nh * T * T * hd,
        2 * nh * (T * T + T * hd), apply, math_dtype="bf16")

    def residual(d):
        a, b = rnd((T, H), bf16, d), rnd((T, H), bf16, d)
        return lambda: a + b
    row("add", dims(T, H), "bf16", 6 * T * H, 0, 4 * T * H, residual)
    linear(T, 2 * ffn, H)

    half = f"{dims(T, ffn)} of {dims(T, 2 * ffn)}"

    def silu(d):
        y = rnd((T, 2 * ffn), bf16, d, -4.0, 4.0)
        return lambda: F.silu(y[:, :ffn])
    row("silu", half, "bf16", 4 * T * ffn, 0, 4 * T * ffn, silu)

    def gate_mul(d):
        g, y = rnd((T, ffn), bf16, d), rnd((T, 2 * ffn), bf16, d)
        return lambda: g * y[:, ffn:]
    row("mul", f"{dims(T, ffn)} * {half}", "bf16", 6 * T * ffn, 0, 6 * T * ffn, gate_mul)
    linear(T, H, ffn)

    # ---- decode ----
    rms(1)
    linear(1, ffn, H)

    def decode_scores(d):
        q, k = rnd((nh, 1, hd), bf16, d), rnd((nh, C, hd), bf16, d)
        return lambda: torch.matmul(q, k.transpose(-1, -2))
    row("bmm", f"{nh}x({dims(1, hd)} @ ({dims(C, hd)})^T)", "bf16", 2 * nh * (hd + C * hd + C), 0,
        2 * nh * (hd + C * hd), decode_scores)

    def decode_values(d):
        p, v = rnd((nh, 1, C), bf16, d), rnd((nh, C, hd), bf16, d)
        return lambda: torch.matmul(p, v)
    row("bmm", f"{nh}x({dims(1, C)} @ {dims(C, hd)})", "bf16", 2 * nh * (C + C * hd + hd), 0,
        2 * nh * (C + C * hd), decode_values)

    def append(d):
        a, b = rnd((1, kv, C - 1, hd), bf16, d), rnd((1, kv, 1, hd), bf16, d)
        return lambda: torch.cat((a, b), dim=2)
    row("cat", f"{dims(1, kv, C - 1, hd)} + {dims(1, kv, 1, hd)} dim 2", "bf16", 4 * kv * C * hd, 0,
        2 * kv * C * hd, append)
    linear(1, V, H)

    for r in (1, z["batch"]):
        e = r * V
        shape = f"{dims(r, V)} dim -1"

        def logits(fn, r=r):
            def make(d):
                x = rnd((r, V), f32, d, -8.0, 8.0)
                return lambda: fn(x)
            return make
        row("softmax", shape, "f32", 8 * e, 0, 4 * e, logits(lambda x: torch.softmax(x, -1)))
        row("argmax", shape, "f32", 4 * e + 8 * r, 0, 4 * e, logits(lambda x: x.argmax(-1)))
        row("sort", shape + " desc", "f32", 16 * e, 0, 4 * e,
            logits(lambda x: torch.sort(x, dim=-1, descending=True, stable=True)))
        row("cumsum", shape, "f32", 8 * e, 0, 4 * e, logits(lambda x: torch.cumsum(x, -1)))
    return rows


def peak_tflops(dev, name, math_dtype):
    if dev.type != "cuda":
        return math.nan
    f32 = math_dtype == "f32"
    if "H100" in name and "PCIe" in name:
        return 51.2 if f32 else 756.0
    if "H100" in name or "H200" in name:
        return 66.9 if f32 else 989.4
    return math.nan


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


_LEAD = {}


def time_one(fn, dev):
    """Milliseconds of one run. Kept in one place, like wick's Timer (Note [Bench timer]): on a GPU
    the run starts behind the same lead, row sums over 256 MB queued before the start event."""
    sync(dev)
    if dev.type == "cuda":
        if dev not in _LEAD:
            _LEAD[dev] = torch.ones(64, 1 << 20, device=dev)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _LEAD[dev].sum(dim=-1)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)
    t0 = time.perf_counter()
    fn()
    sync(dev)
    return (time.perf_counter() - t0) * 1e3


def measure(r, dev, reps):
    out = {"status": "ok", "message": "", "ms": math.nan, "runs": 0, "buffers": 0}
    runs = None
    try:
        sets = 1
        if r.rotate > 0 and 0 < r.in_bytes < r.rotate:
            sets = min(max(math.ceil(r.rotate / r.in_bytes), 2), 16)
        elif r.rotate == 0 and 0 < r.in_bytes <= L2_BUDGET:
            sets = min(max(math.ceil(2 * L2_BUDGET / r.in_bytes), 2), 16)
        runs = [r.make(dev) for _ in range(sets)]
        for i in range(max(sets, 2)):
            runs[i % sets]()
        sync(dev)
        t = sorted(time_one(runs[i % sets], dev) for i in range(reps))
        h = len(t) // 2
        out["ms"] = t[h] if len(t) % 2 else 0.5 * (t[h - 1] + t[h])
        out["runs"], out["buffers"] = reps, sets
    except Exception as e:  # one failing row must not end the run
        out["status"], out["message"] = "error", f"{type(e).__name__}: {e}".replace("\n", " ")[:300]
    finally:
        del runs
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    return out


def jnum(x):
    return None if x is None or not math.isfinite(x) else float(f"{x:.6g}")


def time_rows(rows, dev, name, reps, bw, measured_bw):
    """Measures rows; returns their JSON objects and the copy bandwidth (measured on a copy row where
    measured_bw)."""
    out = []
    with torch.inference_mode():
        for r in rows:
            m = measure(r, dev, reps)
            if measured_bw and r.op == "copy" and m["status"] == "ok":
                bw = r.bytes / (m["ms"] * 1e-3) / 1e9
            floor = math.nan
            if r.chain:
                unit = "us/op"
            elif r.flops:
                unit = "TFLOP/s"
                floor = r.flops / (peak_tflops(dev, name, r.math) * 1e12) * 1e3
            else:
                unit = "GB/s"
                floor = r.bytes / (bw * 1e9) * 1e3
            rate = math.nan
            if m["status"] == "ok" and m["ms"] > 0:
                if r.chain:
                    rate = m["ms"] * 1e3 / r.chain
                elif r.flops:
                    rate = r.flops / (m["ms"] * 1e-3) / 1e12
                else:
                    rate = r.bytes / (m["ms"] * 1e-3) / 1e9
            out.append({"op": r.op, "shape": r.shape, "dtype": r.dtype, "status": m["status"], "ms": jnum(m["ms"]),
                        "rate": jnum(rate), "unit": unit, "floor_ms": jnum(floor), "bytes": jnum(r.bytes),
                        "flops": jnum(r.flops), "runs": m["runs"], "buffers": m["buffers"], "message": m["message"]})
            print(f"torch_bench: {r.op} {r.shape} {r.dtype}: {m['status']} {m['ms']:.4f} ms", file=sys.stderr,
                  flush=True)
    return out, bw


# Same shapes as make_quant_specs in tools/wick/bench_quant.cpp.
QUANT_SIZES = {
    "gpu": dict(copy=1 << 28, nk=[(14336, 4096), (4096, 14336), (128256, 4096)], ms=[1, 2, 4, 8, 16, 512]),
    "cpu": dict(copy=1 << 26, nk=[(14336, 4096), (4096, 14336), (128256, 4096)], ms=[1, 2, 4, 8, 16, 512]),
    "quick": dict(copy=1 << 14, nk=[(96, 256)], ms=[1, 4, 32]),
}


def make_quant_rows(z):
    """The bf16 rows of tools/wick/bench_quant.cpp: the peer of wick's quantized matmul rows."""
    rows = []
    row = lambda *a, **k: rows.append(Row(*a, **k))  # noqa: E731
    bf16, f32 = torch.bfloat16, torch.float32
    cn = z["copy"]

    def copy(d):
        x = rnd((cn,), f32, d)
        return lambda: x.clone()
    row("copy", str(cn), "f32", 8 * cn, 0, 4 * cn, copy)
    for n, k in z["nk"]:
        for m in z["ms"]:
            def make(d, m=m, n=n, k=k):
                x, w = rnd((m, k), bf16, d), rnd((n, k), bf16, d)
                return lambda: F.linear(x, w)
            row("linear", f"{dims(m, k)} @ {dims(n, k)}^T", "bf16", 2 * (n * k + m * k + m * n),
                2 * m * n * k if m > 16 else 0, 2 * (n * k + m * k), make, math_dtype="bf16", rotate=256e6)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None)
    ap.add_argument("--op", action="append", default=[])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--bw", type=float, default=None)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--quick", dest="shapes", action="store_const", const="quick")
    g.add_argument("--cpu-shapes", dest="shapes", action="store_const", const="cpu")
    g.add_argument("--gpu-shapes", dest="shapes", action="store_const", const="gpu")
    ap.add_argument("--llm", action="store_true", help="the LLM rows (make_llm_rows), sized by the shape set")
    ap.add_argument("--quant", action="store_true", help="the bf16 peers of wick's quantized matmul rows")
    ap.add_argument("--json", action="store_true", help="accepted for symmetry with wick bench; output is always JSON")
    ap.add_argument("--serve", action="store_true",
                    help="read op names from stdin, one per line, and answer each with a JSON line of its rows "
                         "(exact op match; after a first line describing the run)")
    a = ap.parse_args(argv)
    if a.reps < 1:
        ap.error("--reps must be >= 1")

    spec = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if spec.startswith("rocm"):  # ROCm builds of torch name their GPUs "cuda"
        spec = "cuda" + spec[4:]
    dev = torch.device(spec)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", 0)
    shapes = a.shapes or ("cpu" if dev.type == "cpu" else "gpu")
    if dev.type == "cuda":
        name = torch.cuda.get_device_name(dev)
    else:
        cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", lambda: "?")()
        name = f"cpu ({torch.get_num_threads()} threads, {cap})"

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(1234)

    bw = a.bw if a.bw else (GPU_COPY_GBS if dev.type == "cuda" else math.nan)
    measured_bw = not math.isfinite(bw)
    if a.quant:
        rows = make_quant_rows(QUANT_SIZES[shapes])
    else:
        rows = make_llm_rows(LLM_SIZES[shapes]) if a.llm else make_rows(SIZES[shapes])
    if a.op:
        rows = [r for r in rows if any(r.op.startswith(f) for f in a.op)]

    doc = {"tool": "torch", "version": torch.__version__, "device": str(dev), "device_name": name,
           "shapes": ("quant-" if a.quant else "llm-" if a.llm else "") + shapes, "reps": a.reps,
           "timer": "cuda events" if dev.type == "cuda" else "perf_counter"}
    if a.serve:
        # One row group per request: a line naming an op on stdin, a line of JSON with its rows on stdout.
        print(json.dumps(doc), flush=True)
        for line in sys.stdin:
            op = line.strip()
            out, bw = time_rows([r for r in rows if r.op == op], dev, name, a.reps, bw, measured_bw)
            print(json.dumps({"rows": out}), flush=True)
        return 0
    out, bw = time_rows(rows, dev, name, a.reps, bw, measured_bw)
    doc.update({"floor_bw_gbs": jnum(bw), "rows": out})
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
