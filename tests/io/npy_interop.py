#!/usr/bin/env python3
"""wick's .npy / .npz reader and writer against NumPy.

usage: npy_interop.py WICK_IO_ST

1. Arrays saved by numpy.save (every dtype wick reads, C order, Fortran order, big-endian, rank 0
   to 5, zero-size; header versions 1.0, 2.0, 3.0) are copied by wick (`wick_io_st copy`). The copy
   of a little-endian C-order array must be the same bytes (wick writes NumPy's header byte for
   byte); every copy must load in NumPy with the same values.
2. Archives by numpy.savez and numpy.savez_compressed are copied by wick (stored and deflated);
   NumPy reads the same arrays back.
3. wick's samples (`wick_io_st sample`) are read by NumPy and compared with the formula.

Exit 77 (skipped) when numpy cannot be imported.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from numpy.lib import format as npformat
except ImportError as e:  # pragma: no cover
    print(f"skipped: {e}")
    sys.exit(77)

TOOL = sys.argv[1]
rng = np.random.default_rng(99)
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
    if dt.kind == "b":
        return np.asarray(rng.integers(0, 2, size=shape).astype(bool))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.asarray(rng.integers(max(info.min, -(2**62)), min(info.max, 2**62), size=shape, dtype=dt.newbyteorder("=")).astype(dt))
    return np.asarray((rng.standard_normal(size=shape) * 3 + 0.5).astype(dt))


def same_values(a, b):
    """Equal values, dtype equal up to byte order (bool reads back as uint8)."""
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "b":
        return b.dtype == np.uint8 and np.array_equal(a.astype(np.uint8), b)
    return a.dtype.newbyteorder("=") == b.dtype.newbyteorder("=") and np.array_equal(a, b)


DTYPES = ["bool", "uint8", "uint32", "int32", "int64", "float16", "float32", "float64"]

with tempfile.TemporaryDirectory() as tmp:
    p = lambda name: os.path.join(tmp, name)

    # ---- 1. .npy -------------------------------------------------------------------------------
    identical = 0
    copied = 0
    for dt in DTYPES:
        for shape in [(), (0,), (7,), (3, 0, 2), (4, 5), (2, 3, 1, 2, 2)]:
            a = random_array(dt, shape)
            variants = {"c": a}
            if a.ndim >= 2:
                variants["fortran"] = np.asfortranarray(a)
            if a.dtype.itemsize > 1:
                variants["big"] = a.astype(a.dtype.newbyteorder(">"))
                if a.ndim >= 2:
                    variants["big_fortran"] = np.asfortranarray(variants["big"])
            for name, v in variants.items():
                src, out = p("in.npy"), p("out.npy")
                np.save(src, v)
                run("copy", src, out)
                back = np.load(out)
                check(same_values(v, back), f"{dt} {shape} {name}: values")
                check(back.flags.c_contiguous and back.dtype.byteorder in "=|<", f"{dt} {shape} {name}: C order, little")
                copied += 1
                if name == "c" and dt != "bool":
                    with open(src, "rb") as f1, open(out, "rb") as f2:
                        check(f1.read() == f2.read(), f"{dt} {shape}: byte-identical copy")
                    identical += 1
    print(f"npy: {copied} arrays (8 dtypes, ranks 0-5, zero-size, Fortran, big-endian) read back equal; "
          f"{identical} C-order copies byte-identical to numpy.save")

    for version in [(1, 0), (2, 0), (3, 0)]:
        a = random_array("float32", (6, 4))
        with open(p("v.npy"), "wb") as f:
            npformat.write_array(f, a, version=version)
        run("copy", p("v.npy"), p("v_out.npy"))
        check(np.array_equal(np.load(p("v_out.npy")), a), f"header version {version}")
    print("npy: header versions 1.0, 2.0, 3.0 read")

    # ---- 2. .npz -------------------------------------------------------------------------------
    members = {f"a_{dt}": random_array(dt, (5, 3)) for dt in DTYPES}
    members["scalar"] = random_array("float64", ())
    members["empty"] = np.zeros((0, 2), np.int32)
    members["fortran"] = np.asfortranarray(random_array("int64", (3, 4)))
    members["big"] = random_array("float32", (6,)).astype(">f4")
    members["zeros"] = np.zeros((300, 300), np.float32)
    for saver, flag in [(np.savez, []), (np.savez_compressed, ["--compress"])]:
        src, out = p("in.npz"), p("out.npz")
        saver(src, **members)
        run("copy", src, out, *flag)
        with np.load(out) as z:
            check(sorted(z.files) == sorted(members), f"{saver.__name__}: members")
            for k, v in members.items():
                check(same_values(v, z[k]), f"{saver.__name__} {k}: values")
        if flag:
            check(os.path.getsize(out) < 200000, "wick's deflated copy is compressed")
    print(f"npz: numpy.savez and savez_compressed, {len(members)} members each, copied stored and deflated")

    # ---- 3. wick's samples ---------------------------------------------------------------------
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

    numpy_of = {"u8": "uint8", "u32": "uint32", "i32": "int32", "i64": "int64", "f16": "float16", "f32": "float32",
                "f64": "float64"}
    for kind, dt in numpy_of.items():
        a = np.load(p(f"sample_{kind}.npy"))
        check(a.dtype == np.dtype(dt) and a.shape == (3, 5), f"sample_{kind}.npy dtype and shape")
        check(np.array_equal(a.ravel().astype(np.float64), sample_values(kind, 15).astype(np.float64)),
              f"sample_{kind}.npy values")
    for archive in ["sample.npz", "sample_deflated.npz"]:
        with np.load(p(archive)) as z:
            for kind, dt in numpy_of.items():
                check(np.array_equal(z[f"t_{kind}"].ravel().astype(np.float64), sample_values(kind, 15).astype(np.float64)),
                      f"{archive} t_{kind}")
            check(z["scalar_f32"].shape == () and z["scalar_f32"] == -2.0, f"{archive} scalar")
            check(z["empty_f16"].shape == (0, 4), f"{archive} empty")
            check(np.array_equal(z["rank4_i64"].ravel(), sample_values("i64", 12)), f"{archive} rank 4")
    print(f"sample: {len(numpy_of)} .npy files and 2 archives read by NumPy: formula values")

print(f"ok: {checks} checks")
