#!/usr/bin/env python3
"""GGUF files between wick and the gguf Python package (llama.cpp's gguf-py).

Usage: gguf_interop.py PATH/TO/wick_io_gguf      (exit 77: skipped, without gguf or numpy)

1. A file written by gguf.GGUFWriter (every metadata type; F32, F16, F64, I8, I16, I32, I64 tensors;
   BF16 and the block formats the package can quantize) is copied by wick (GgufFile::open, then
   GgufWriter::copy_of(...).write): the copy must be byte-identical. wick's dump of it must show
   every key, type and value, and every tensor's type, shape, offset, size and bytes (CRC-32).
2. The sample wick writes (every metadata type, every dense dtype and every block format wick
   has, from formulas recomputed here) is read by gguf.GGUFReader: every value must match; dense
   tensors exactly; BF16 and Q4_0..Q8_0 and MXFP4 byte for byte against the package's quantizer;
   the other block formats dequantized by the package (or here, for Q8_1 and Q8_K, which it cannot)
   against wick's own dequantization and, within the format's error, against the formula.
"""
import json
import os
import subprocess
import sys
import tempfile
import zlib

try:
    import numpy as np
    import gguf
    from gguf import GGMLQuantizationType as QT
    from gguf import GGUFValueType as VT
    from gguf import quants
except Exception as e:  # noqa: BLE001 - any import failure means: skip
    print(f"skipped: {e}")
    sys.exit(77)

TOOL = sys.argv[1]
TYPE_NAMES = {VT.UINT8: "u8", VT.INT8: "i8", VT.UINT16: "u16", VT.INT16: "i16", VT.UINT32: "u32",
              VT.INT32: "i32", VT.FLOAT32: "f32", VT.BOOL: "bool", VT.STRING: "string", VT.ARRAY: "array",
              VT.UINT64: "u64", VT.INT64: "i64", VT.FLOAT64: "f64"}
# ggml's block sizes (the package's table says 40 bytes for a Q8_1 block; ggml's block_q8_1 is 36).
BLOCK = {t: gguf.GGML_QUANT_SIZES[t] for t in QT}
BLOCK[QT.Q8_1] = (32, 36)
checks = []


def tool(*args):
    return subprocess.run([TOOL, *args], check=True, capture_output=True, text=True).stdout


def dump(path, values=False):
    out = tool("dump", path, *(["--values"] if values else []))
    return [json.loads(line) for line in out.splitlines()]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    checks.append(what)


def same_scalar(vtype, got, want):
    if vtype == VT.FLOAT32:
        return np.float32(got) == np.float32(want)
    if vtype == VT.BOOL:
        return isinstance(got, bool) and got == want
    return got == want


def same_value(vtype, sub, got, want):
    if vtype != VT.ARRAY:
        return same_scalar(vtype, got, want)
    if len(got) != len(want):
        return False
    if sub == VT.ARRAY:  # wick's dump: [{"elem": .., "value": [..]}, ..]
        return all(g["elem"] == TYPE_NAMES[infer(w)] and same_value(VT.ARRAY, infer(w), g["value"], w)
                   for g, w in zip(got, want))
    return all(same_scalar(sub, g, w) for g, w in zip(got, want))


def infer(v):
    """The element type GGUFWriter gives the elements of list v."""
    return VT.get_type(v[0]) if v else VT.INT32


def nbytes(qtype, shape):
    block, size = BLOCK[qtype]
    return int(np.prod(shape, dtype=np.int64)) // block * size


# ---- 1. written by gguf-py, copied and dumped by wick ---------------------------------------------

def python_file(path, alignment=None):
    w = gguf.GGUFWriter(path, "interop")
    kv = [("general.architecture", VT.STRING, "interop", None)]
    if alignment:
        w.add_custom_alignment(alignment)
        kv.append(("general.alignment", VT.UINT32, alignment, None))
    scalars = [("p.u8", VT.UINT8, 200), ("p.i8", VT.INT8, -100), ("p.u16", VT.UINT16, 60000),
               ("p.i16", VT.INT16, -30000), ("p.u32", VT.UINT32, 4000000000), ("p.i32", VT.INT32, -2000000000),
               ("p.f32", VT.FLOAT32, 1.25), ("p.bool", VT.BOOL, True), ("p.string", VT.STRING, "hello"),
               ("p.u64", VT.UINT64, 2**64 - 1), ("p.i64", VT.INT64, -2**63), ("p.f64", VT.FLOAT64, 0.1),
               ("p.empty_string", VT.STRING, ""), ("p.unicode", VT.STRING, "h\u00e9llo \u2713 \u65e5\u672c \U0001f600")]
    for key, vt, v in scalars:
        w.add_key_value(key, v, vt)
        kv.append((key, vt, v, None))
    arrays = [("a.u8", VT.UINT8, [0, 1, 255]), ("a.i8", VT.INT8, [-128, 127]), ("a.u16", VT.UINT16, [1, 65535]),
              ("a.i16", VT.INT16, [-32768, 3]), ("a.u32", VT.UINT32, list(range(100))),
              ("a.i32", VT.INT32, [-(2**31), 2**31 - 1]), ("a.f32", VT.FLOAT32, [0.5, -2.25, 1e-3]),
              ("a.bool", VT.BOOL, [True, False, True]), ("a.u64", VT.UINT64, [2**64 - 1, 0]),
              ("a.i64", VT.INT64, [-(2**63), 5]), ("a.f64", VT.FLOAT64, [0.1, -1e300]),
              ("a.string", VT.STRING, ["a", "", "\u00fc", "tok en"])]
    for key, sub, v in arrays:
        w.add_key_value(key, v, VT.ARRAY, sub_type=sub)
        kv.append((key, VT.ARRAY, v, sub))
    w.add_key_value("a.nested", [[1, 2, 3], [4, 5]], VT.ARRAY)  # inner i32 arrays
    kv.append(("a.nested", VT.ARRAY, [[1, 2, 3], [4, 5]], VT.ARRAY))
    w.add_array("a.tokens", ["<unk>", "<s>", "</s>"])
    kv.append(("a.tokens", VT.ARRAY, ["<unk>", "<s>", "</s>"], VT.STRING))

    rng = np.random.default_rng(1234)
    tensors = []  # name, ggml type, wick shape
    dense = [("d.f32", np.float32, (3, 5)), ("d.f16", np.float16, (2, 3, 4)), ("d.f64", np.float64, (7,)),
             ("d.i8", np.int8, (4, 4)), ("d.i16", np.int16, (6,)), ("d.i32", np.int32, (2, 3)),
             ("d.i64", np.int64, (5,)), ("d.rank4", np.float32, (1, 2, 3, 4)), ("d.empty", np.float32, (0, 4))]
    kinds = {np.float32: QT.F32, np.float16: QT.F16, np.float64: QT.F64, np.int8: QT.I8, np.int16: QT.I16,
             np.int32: QT.I32, np.int64: QT.I64}
    for name, dt, shape in dense:
        if np.issubdtype(dt, np.integer):
            info = np.iinfo(dt)
            x = rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
        else:
            x = rng.standard_normal(shape).astype(dt)
        w.add_tensor(name, x)
        tensors.append((name, kinds[dt], list(shape)))
    for qt in (QT.BF16, QT.Q4_0, QT.Q4_1, QT.Q5_0, QT.Q5_1, QT.Q8_0, QT.MXFP4, QT.TQ1_0, QT.TQ2_0):
        x = rng.standard_normal((2, 256)).astype(np.float32)
        w.add_tensor("q." + qt.name, quants.quantize(x, qt), raw_dtype=qt)
        tensors.append(("q." + qt.name, qt, [2, 256]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return kv, tensors


def part1(tmp, alignment=None):
    src = os.path.join(tmp, f"python_{alignment}.gguf")
    kv, tensors = python_file(src, alignment)
    out = os.path.join(tmp, f"python_{alignment}_copy.gguf")
    tool("copy", src, out)
    with open(src, "rb") as f:
        src_bytes = f.read()
    with open(out, "rb") as f:
        check(f.read() == src_bytes, f"copy of a gguf-py file (alignment {alignment or 32}) is byte-identical "
                                     f"({len(src_bytes)} bytes)")

    lines = dump(src)
    header = lines[0]
    check(header["version"] == 3 and header["alignment"] == (alignment or 32), "header version and alignment")
    check(header["n_kv"] == len(kv) and header["n_tensors"] == len(tensors), "header counts")
    dumped = [x for x in lines if x["kind"] == "kv"]
    check([x["key"] for x in dumped] == [k for k, *_ in kv], "keys in order")
    for d, (key, vt, v, sub) in zip(dumped, kv):
        check(d["type"] == TYPE_NAMES[vt], f"type of {key}")
        if vt == VT.ARRAY:
            check(d["elem"] == TYPE_NAMES[sub], f"element type of {key}")
        check(same_value(vt, sub, d["value"], v), f"value of {key}: {d['value']!r} vs {v!r}")

    reader = gguf.GGUFReader(src)
    by_name = {t.name: t for t in reader.tensors}
    dt = [x for x in lines if x["kind"] == "tensor"]
    check([x["name"] for x in dt] == [n for n, *_ in tensors], "tensor names in order")
    for d, (name, qt, shape) in zip(dt, tensors):
        rt = by_name[name]
        n = nbytes(qt, shape)
        raw = bytes(reader.data[rt.data_offset:rt.data_offset + n])
        ok = (d["type"] == qt.name and d["ggml_type"] == int(qt) and d["shape"] == shape
              and d["offset"] == rt.data_offset and d["nbytes"] == n and d["crc32"] == zlib.crc32(raw))
        check(ok, f"tensor {name} ({qt.name} {shape}): type, shape, offset, size and bytes")
    return len(kv), len(tensors)


# ---- 2. written by wick (tool sample), read by gguf-py ---------------------------------------------

def sample_value(k, n):
    i = np.arange(n, dtype=np.int64)
    return ((i * 7919 + k * 104729) % 2001 - 1000).astype(np.float64) / 256.0


def sample_qvalue(k, n):
    i = np.arange(n, dtype=np.int64)
    return sample_value(k, n) * (1 + (i // 32) % 4)


SAMPLE_KV = [
    ("general.architecture", VT.STRING, "sample"), ("sample.u8", VT.UINT8, 200), ("sample.i8", VT.INT8, -100),
    ("sample.u16", VT.UINT16, 60000), ("sample.i16", VT.INT16, -30000), ("sample.u32", VT.UINT32, 4000000000),
    ("sample.i32", VT.INT32, -2000000000), ("sample.f32", VT.FLOAT32, 1.5), ("sample.bool", VT.BOOL, True),
    ("sample.string", VT.STRING, "hello"), ("sample.u64", VT.UINT64, 0xFFFFFFFFFFFFFFF0),
    ("sample.i64", VT.INT64, -(2**62) - 3), ("sample.f64", VT.FLOAT64, 0.1), ("sample.empty_string", VT.STRING, ""),
    ("sample.unicode", VT.STRING, "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c"),
    ("sample.arr.u8", (VT.ARRAY, VT.UINT8), [1, 2, 255]), ("sample.arr.i8", (VT.ARRAY, VT.INT8), [-128, 0, 127]),
    ("sample.arr.u16", (VT.ARRAY, VT.UINT16), [0, 65535]), ("sample.arr.i16", (VT.ARRAY, VT.INT16), [-32768, 5]),
    ("sample.arr.u32", (VT.ARRAY, VT.UINT32), [7, 4294967295]),
    ("sample.arr.i32", (VT.ARRAY, VT.INT32), [-7, 2147483647]),
    ("sample.arr.f32", (VT.ARRAY, VT.FLOAT32), [0.5, -2.25, 1e-3]),
    ("sample.arr.bool", (VT.ARRAY, VT.BOOL), [True, False, True]),
    ("sample.arr.u64", (VT.ARRAY, VT.UINT64), [0, 2**64 - 1]),
    ("sample.arr.i64", (VT.ARRAY, VT.INT64), [-(2**63), 42]),
    ("sample.arr.f64", (VT.ARRAY, VT.FLOAT64), [0.1, -1e300]),
    ("sample.arr.string", (VT.ARRAY, VT.STRING), ["a", "", "\u00fc", "tok en"]),
    ("sample.arr.nested", (VT.ARRAY, VT.ARRAY), [1, 2, 3, 4, 5]),  # gguf-py flattens arrays of arrays
    ("sample.arr.empty", (VT.ARRAY, VT.UINT32), []),
]
SAMPLE_DENSE = [("dense.f32", QT.F32, (3, 5)), ("dense.f16", QT.F16, (2, 3, 4)), ("dense.bf16", QT.BF16, (7,)),
                ("dense.f64", QT.F64, (2, 2, 2, 2)), ("dense.i32", QT.I32, (6,)), ("dense.i64", QT.I64, (2, 3))]
# wick's block formats in their order (include/wick/qformat.h), with the largest error of a
# dequantized element relative to the largest magnitude of its row allowed against the formula.
SAMPLE_Q = [(QT.Q4_0, 0.15), (QT.Q4_1, 0.1), (QT.Q5_0, 0.07), (QT.Q5_1, 0.05), (QT.Q8_0, 0.01), (QT.Q8_1, 0.01),
            (QT.Q2_K, 0.4), (QT.Q3_K, 0.3), (QT.Q4_K, 0.08), (QT.Q5_K, 0.05), (QT.Q6_K, 0.025), (QT.Q8_K, 0.01),
            (QT.IQ4_NL, 0.15), (QT.IQ4_XS, 0.12), (QT.MXFP4, 0.3)]
QUANTIZABLE = {QT.Q4_0, QT.Q4_1, QT.Q5_0, QT.Q5_1, QT.Q8_0, QT.MXFP4}


def dense_expected(k, qt, shape):
    n = int(np.prod(shape))
    i = np.arange(n, dtype=object)
    if qt == QT.I32:
        return np.array([(int(j) * 2654435761 + k) % 2**32 - 2**31 for j in i], dtype=np.int32).reshape(shape)
    if qt == QT.I64:
        return np.array([(int(j) * 6364136223846793005 + k * 1442695040888963407) % 2**64 - 2**63 for j in i],
                        dtype=np.int64).reshape(shape)
    if qt == QT.F64:
        return (sample_value(k, n) / 3.0).reshape(shape)
    x = sample_value(k, n).astype(np.float32).reshape(shape)
    if qt == QT.F16:
        return x.astype(np.float16)
    return x


def manual_dequant(qt, raw, n):
    """Q8_1 and Q8_K, which gguf-py cannot dequantize."""
    if qt == QT.Q8_1:
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 36)
        d = b[:, 0:2].copy().view(np.float16).astype(np.float32)
        qs = b[:, 4:36].copy().view(np.int8).astype(np.float32)
        return (d * qs).reshape(n)
    b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 292)
    d = b[:, 0:4].copy().view(np.float32)
    qs = b[:, 4:260].copy().view(np.int8)
    bsums = b[:, 260:292].copy().view(np.int16)
    check(np.array_equal(bsums, qs.reshape(-1, 16, 16).astype(np.int32).sum(axis=2)), "Q8_K block sums")
    return (d * qs.astype(np.float32)).reshape(n)


def part2(tmp):
    path = os.path.join(tmp, "wick_sample.gguf")
    tool("sample", path)
    reader = gguf.GGUFReader(path)
    fields = {k: f for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    check(list(fields) == [k for k, *_ in SAMPLE_KV], "sample keys in order")
    for key, vt, want in SAMPLE_KV:
        f = fields[key]
        if isinstance(vt, tuple):
            check(f.types[0] == VT.ARRAY and int(f.parts[3][0]) == vt[1], f"type of {key}")
            got = f.contents()
            sub = VT.INT32 if vt[1] == VT.ARRAY else vt[1]
            check(len(got) == len(want) and all(same_scalar(sub, g, w) for g, w in zip(got, want)),
                  f"value of {key}: {got!r}")
        else:
            check(f.types == [vt], f"type of {key}")
            check(same_scalar(vt, f.contents(), want), f"value of {key}: {f.contents()!r}")

    wick_values = {x["name"]: x for x in dump(path, values=True) if x["kind"] == "tensor"}
    tensors = reader.tensors
    check([t.name for t in tensors] == [n for n, *_ in SAMPLE_DENSE] + ["q." + q.name.lower() for q, _ in SAMPLE_Q],
          "sample tensor names in order")
    for k, (name, qt, shape) in enumerate(SAMPLE_DENSE):
        t = tensors[k]
        check(t.tensor_type == qt and tuple(reversed(t.shape.tolist())) == shape, f"{name}: type and shape")
        want = dense_expected(k, qt, shape)
        if qt == QT.BF16:
            check(bytes(t.data) == quants.quantize(want, QT.BF16).tobytes(), f"{name}: bytes (round to nearest even)")
        else:
            check(t.data.dtype == want.dtype and np.array_equal(t.data, want), f"{name}: values")
    worst = {}
    for j, (qt, tol) in enumerate(SAMPLE_Q):
        k = len(SAMPLE_DENSE) + j
        t = tensors[k]
        name = "q." + qt.name.lower()
        check(t.tensor_type == qt and t.shape.tolist() == [256, 2], f"{name}: type and shape")
        n = 512
        raw = bytes(reader.data[t.data_offset:t.data_offset + nbytes(qt, (2, 256))])
        x = sample_qvalue(k, n).astype(np.float32)
        if qt in QUANTIZABLE:
            check(raw == quants.quantize(x.reshape(2, 256), qt).tobytes(), f"{name}: bytes equal gguf-py's quantizer")
        if qt in (QT.Q8_1, QT.Q8_K):
            deq = manual_dequant(qt, raw, n)
        else:
            deq = quants.dequantize(np.frombuffer(raw, dtype=np.uint8).reshape(2, -1), qt).reshape(n)
        ours = np.array(wick_values[name]["dequant"], dtype=np.float32)
        scale = np.abs(x).reshape(2, 256).max(axis=1).repeat(256)
        check(np.all(np.abs(deq - ours) <= 1e-6 * scale), f"{name}: gguf-py and wick dequantize alike")
        err = float(np.max(np.abs(deq - x) / scale))
        worst[qt.name] = err
        check(err <= tol, f"{name}: error {err:.4f} of the row's range within {tol}")
    return len(SAMPLE_KV), len(tensors), worst


def main():
    with tempfile.TemporaryDirectory() as tmp:
        n_kv, n_t = part1(tmp)
        part1(tmp, alignment=64)
        print(f"gguf-py -> wick: {n_kv} keys and {n_t} tensors (f32, f16, f64, i8, i16, i32, i64, bf16, "
              f"q4_0..q8_0, mxfp4, tq1_0, tq2_0) dumped alike; copies byte-identical at alignments 32 and 64")
        s_kv, s_t, worst = part2(tmp)
        print(f"wick -> gguf-py: {s_kv} keys and {s_t} tensors read alike; bf16, q4_0..q8_0, mxfp4 bytes equal "
              f"gguf-py's quantizer; every block format dequantized alike by both")
        print("largest error against the formula, of the row's range: " +
              ", ".join(f"{k} {v:.4f}" for k, v in worst.items()))
    print(f"{len(checks)} checks passed")


if __name__ == "__main__":
    main()
