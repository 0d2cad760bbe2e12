#!/usr/bin/env python3
"""wick's safetensors reader and writer against the Python `safetensors` package.

usage: st_interop.py WICK_IO_ST

1. Files written by the package (safetensors.numpy.save_file, and safetensors.serialize for BF16
   and F8_E4M3, which NumPy lacks) are copied by wick (`wick_io_st copy`): the copy must be the
   same bytes (wick keeps the file's tensor order and writes the header as the reference does) and
   the package must read back the same values.
2. A file of every dtype the package writes, those wick has no dtype for too (BOOL, I8, I16, U16,
   U64), is dumped by wick (`wick_io_st dump`): types, shapes and bytes must be the package's.
3. A sharded checkpoint (shards by the package, an index as transformers writes it) is copied
   through its index into one file, which the package reads.
4. wick's sample file (`wick_io_st sample`) is read by the package and compared with the formula.

Exit 77 (skipped) when numpy or safetensors cannot be imported.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import safetensors
    from safetensors.numpy import load_file, save_file
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

TOOL = sys.argv[1]
rng = np.random.default_rng(1234)
checks = 0


def run(*args):
    r = subprocess.run([TOOL, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"wick_io_st {' '.join(args)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout


def check(cond, what):
    global checks
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    checks += 1


def random_array(dtype, shape):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.asarray(rng.integers(0, 2, size=shape).astype(bool))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.asarray(rng.integers(max(info.min, -(2**62)), min(info.max, 2**62), size=shape, dtype=dt, endpoint=True))
    return np.asarray((rng.standard_normal(size=shape) * 3 + 0.5).astype(dt))


def raw_spec(dtype_name, shape, bits_array):
    """A TensorSpec over the bytes of `bits_array` (kept alive by the caller)."""
    return safetensors.TensorSpec(
        dtype=dtype_name, shape=list(shape), data_ptr=bits_array.ctypes.data, data_len=bits_array.nbytes
    )


def header_of(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    return n, b[8 : 8 + n]


WICK_DTYPES = ["float16", "float32", "float64", "int32", "int64", "uint32", "uint8"]

with tempfile.TemporaryDirectory() as tmp:
    p = lambda name: os.path.join(tmp, name)

    # ---- 1. package -> wick copy -> identical bytes, same values -------------------------------
    arrays = {}
    for i, dt in enumerate(WICK_DTYPES):
        arrays[f"t.{dt}"] = random_array(dt, (3 + i, 5))
        arrays[f"r0.{dt}"] = random_array(dt, ())
    arrays["rank5"] = random_array("float32", (2, 3, 1, 2, 2))
    arrays["empty"] = np.zeros((0, 7), np.float16)
    arrays["odd_u8"] = random_array("uint8", (13,))  # unaligned offsets follow it
    for meta in [None, {"format": "np"}]:
        src = p("package.safetensors")
        save_file(arrays, src, metadata=meta)
        out = p("wick.safetensors")
        run("copy", src, out)
        with open(src, "rb") as a, open(out, "rb") as b:
            check(a.read() == b.read(), f"copy of a package file (metadata {meta}) is byte-identical")
        back = load_file(out)
        check(sorted(back) == sorted(arrays), "the copy has every tensor")
        for k, v in arrays.items():
            check(back[k].dtype == v.dtype and back[k].shape == v.shape, f"{k}: dtype and shape")
            check(np.array_equal(back[k], v), f"{k}: values")
    print(f"copy: {len(arrays)} tensors of {len(WICK_DTYPES)} dtypes, ranks 0-5, zero-size: bytes identical")

    # Several metadata keys: the reference orders them by hash, wick sorts them; the values match.
    save_file(arrays, p("meta.safetensors"), metadata={"b": "2", "a": "1", "c": "ünï\n\"x\""})
    run("copy", p("meta.safetensors"), p("meta_wick.safetensors"))
    with safetensors.safe_open(p("meta_wick.safetensors"), "np") as f:
        check(f.metadata() == {"b": "2", "a": "1", "c": "ünï\n\"x\""}, "metadata of several keys")
    n, h = header_of(p("meta_wick.safetensors"))
    check(n % 8 == 0 and h.startswith(b'{"__metadata__":{"a":"1","b":"2","c":'), "wick's metadata is sorted, first")

    # BF16 and F8_E4M3 through safetensors.serialize with raw bits.
    bf = rng.integers(0, 2**16, size=(4, 6), dtype=np.uint16)
    f8 = rng.integers(0, 256, size=(5,), dtype=np.uint8)
    f32 = random_array("float32", (3,))
    keep = [bf, f8, f32]
    blob = bytes(
        safetensors.serialize(
            {
                "bf": raw_spec("bfloat16", bf.shape, bf),
                "f8": raw_spec("float8_e4m3fn", f8.shape, f8),
                "f32": raw_spec("float32", f32.shape, f32),
            },
            metadata={"k": "v"},
        )
    )
    with open(p("raw.safetensors"), "wb") as f:
        f.write(blob)
    run("copy", p("raw.safetensors"), p("raw_wick.safetensors"))
    with open(p("raw_wick.safetensors"), "rb") as f:
        check(f.read() == blob, "BF16 / F8_E4M3 copy is byte-identical")
    got = dict(safetensors.deserialize(open(p("raw_wick.safetensors"), "rb").read()))
    check(bytes(got["bf"]["data"]) == bf.tobytes() and got["bf"]["dtype"] == "BF16", "BF16 bits")
    check(bytes(got["f8"]["data"]) == f8.tobytes() and got["f8"]["dtype"] == "F8_E4M3", "F8_E4M3 bits")
    print("copy: BF16 and F8_E4M3 (raw bits via safetensors.serialize): bytes identical")

    # ---- 2. every package dtype, dumped by wick ------------------------------------------------
    every = dict(arrays)
    for dt in ["bool", "int8", "int16", "uint16", "uint64"]:
        every[f"x.{dt}"] = random_array(dt, (4, 3))
    save_file(every, p("every.safetensors"), metadata={"m": "1"})
    dumped = {}
    meta = {}
    for line in run("dump", p("every.safetensors")).splitlines():
        parts = line.split("\t")
        if parts[0] == "meta":
            meta[parts[1]] = parts[2]
        else:
            _, name, typ, shape, _cm, hexdata = parts
            dumped[name] = (typ, tuple(int(d) for d in shape.split(",")) if shape else (), bytes.fromhex(hexdata))
    check(meta == {"m": "1"}, "dumped metadata")
    ref = {name: info for name, info in safetensors.deserialize(open(p("every.safetensors"), "rb").read())}
    check(sorted(dumped) == sorted(ref), "dump lists every tensor")
    for name, (typ, shape, data) in dumped.items():
        check(typ == ref[name]["dtype"], f"{name}: type {typ}")
        check(list(shape) == list(ref[name]["shape"]), f"{name}: shape")
        check(data == bytes(ref[name]["data"]), f"{name}: bytes")
    print(f"dump: {len(dumped)} tensors incl. BOOL, I8, I16, U16, U64: types, shapes, bytes equal")

    # ---- 3. a sharded checkpoint ----------------------------------------------------------------
    ck = os.path.join(tmp, "ckpt")
    os.makedirs(ck)
    names = sorted(arrays)
    shards = [names[: len(names) // 2], names[len(names) // 2 :]]
    weight_map = {}
    for i, part in enumerate(shards):
        shard = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file({k: arrays[k] for k in part}, os.path.join(ck, shard), metadata={"format": "pt"})
        weight_map.update({k: shard for k in part})
    total = sum(a.nbytes for a in arrays.values())
    with open(os.path.join(ck, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
    for src in [os.path.join(ck, "model.safetensors.index.json"), ck]:
        run("copy", src, p("merged.safetensors"))
        back = load_file(p("merged.safetensors"))
        check(all(np.array_equal(back[k], v) for k, v in arrays.items()) and len(back) == len(arrays), "merged values")
        with safetensors.safe_open(p("merged.safetensors"), "np") as f:
            check(f.metadata() == {"format": "pt", "total_size": str(total)}, "merged metadata")
    print(f"checkpoint: 2 shards through the index and the folder, {len(arrays)} tensors merged")

    # ---- 4. wick's sample, read by the package ----------------------------------------------
    run("sample", tmp)

    def sample_values(kind, n):
        i = np.arange(n, dtype=np.int64)
        r = (i * 7 + 3) % 23
        if kind == "u8":
            return (i * 37 + 11) % 256
        if kind == "u32":
            return r * 100000007
        if kind == "i32":
            return (r - 11) * 100003
        if kind == "i64":
            return (r - 11) * 1000000007
        return (r - 11) * 0.25

    def decode_bf16(b):
        return (np.frombuffer(b, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)

    def decode_f8e4m3(b):
        out = []
        for x in np.frombuffer(b, np.uint8):
            s, e, m = x >> 7, (x >> 3) & 15, x & 7
            if e == 15 and m == 7:
                v = float("nan")
            elif e == 0:
                v = m / 8 * 2.0**-6
            else:
                v = (1 + m / 8) * 2.0 ** (int(e) - 7)
            out.append(-v if s else v)
        return np.array(out)

    numpy_of = {"u8": "uint8", "u32": "uint32", "i32": "int32", "i64": "int64", "f16": "float16", "f32": "float32",
                "f64": "float64"}
    ref = {name: info for name, info in safetensors.deserialize(open(p("sample.safetensors"), "rb").read())}
    with safetensors.safe_open(p("sample.safetensors"), "np") as f:
        check(f.metadata() == {"source": "wick"}, "sample metadata")
    kinds = list(numpy_of) + ["bf16", "f8e4m3"]
    for kind in kinds:
        info = ref[f"t_{kind}"]
        check(info["shape"] == [3, 5], f"sample t_{kind} shape")
        want = sample_values(kind, 15)
        data = bytes(info["data"])
        if kind == "bf16":
            got = decode_bf16(data)
        elif kind == "f8e4m3":
            got = decode_f8e4m3(data)
        else:
            got = np.frombuffer(data, numpy_of[kind])
        check(np.array_equal(got.astype(np.float64), want.astype(np.float64)), f"sample t_{kind} values")
    with safetensors.safe_open(p("sample.safetensors"), "np") as f:  # the tensors of dtypes NumPy has
        loaded = {k: f.get_tensor(k) for k in ["scalar_f32", "empty_f16", "rank4_i64", "t_f32"]}
    check(np.array_equal(loaded["t_f32"].ravel(), sample_values("f32", 15)), "sample t_f32 through safe_open")
    check(loaded["scalar_f32"].shape == () and loaded["scalar_f32"] == -11 * 0.25 + 3 * 0.25, "sample scalar")
    check(loaded["empty_f16"].shape == (0, 4), "sample empty")
    check(np.array_equal(loaded["rank4_i64"].ravel(), sample_values("i64", 12)), "sample rank 4")
    n, _ = header_of(p("sample.safetensors"))
    check(n % 8 == 0, "sample header padded to 8")
    print(f"sample: {len(kinds)} dtypes (BF16 and F8_E4M3 decoded from bits), scalar, empty, rank 4: formula values")

print(f"ok: {checks} checks")
