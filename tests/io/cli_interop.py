#!/usr/bin/env python3
"""`wick inspect` and `wick convert` against the gguf, safetensors and numpy packages.

A GGUF written by the gguf package is converted by wick to GGUF (quantized to q8_0 and q4_k),
safetensors and .npz, and back; every output is read with the packages and compared with the
input: exactly for copies and casts (numpy's f16 rounding is the reference), within the format's
error for quantization (the gguf package's dequantize is the reference decoder).
usage: cli_interop.py WICK_BINARY        (exit 77: the packages are missing)
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import gguf
    import numpy as np
    from safetensors.numpy import load_file, save_file
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)

WICK = sys.argv[1]
checks = 0


def wick(*args, code=0):
    r = subprocess.run([WICK, *args], capture_output=True, text=True)
    if r.returncode != code:
        sys.exit(f"wick {' '.join(args)}: exit {r.returncode}, wanted {code}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def check(cond, what):
    global checks
    if not cond:
        sys.exit(f"FAILED: {what}")
    checks += 1


def main():
    rng = np.random.default_rng(11)
    tensors = {
        "tok_embd.weight": rng.standard_normal((64, 256)).astype(np.float32),
        "blk.0.attn_q.weight": rng.standard_normal((256, 256)).astype(np.float32),
        "blk.0.attn_norm.weight": rng.standard_normal((256,)).astype(np.float32),
        "blk.0.ffn_down.weight": rng.standard_normal((8, 512)).astype(np.float16),
        "ids": rng.integers(-1000, 1000, (3, 5), dtype=np.int32),
    }
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "in.gguf")
        w = gguf.GGUFWriter(src, "llama")
        w.add_uint32("llama.block_count", 1)
        w.add_string("general.name", "cli test")
        w.add_array("tokenizer.ggml.scores", [0.5, -1.25, 3.0])
        for name, a in tensors.items():
            w.add_tensor(name, a)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

        # inspect --json names every tensor with its shape (wick's row-major order) and type.
        info = json.loads(wick("inspect", src, "--json"))
        check(info["format"] == "gguf", "inspect: format")
        got = {t["name"]: t for t in info["tensors"]}
        for name, a in tensors.items():
            check(got[name]["shape"] == list(a.shape), f"inspect: shape of {name}")
        check(got["ids"]["type"] == "I32", "inspect: type of ids")
        check(info["metadata"]["llama.block_count"]["value"] == 1, "inspect: a u32 value")
        check(info["metadata"]["tokenizer.ggml.scores"]["value"] == [0.5, -1.25, 3.0], "inspect: an f32 array")
        wick("inspect", src)  # the table form runs too

        # GGUF -> GGUF: the same bytes.
        same = os.path.join(d, "same.gguf")
        wick("convert", src, same)
        check(open(same, "rb").read() == open(src, "rb").read(), "gguf -> gguf copies the bytes")

        # GGUF -> safetensors -> npz (f16): exact values.
        st = os.path.join(d, "out.safetensors")
        wick("convert", src, st)
        back = load_file(st)
        for name, a in tensors.items():
            check(back[name].dtype == a.dtype and np.array_equal(back[name], a), f"safetensors value of {name}")
        npz = os.path.join(d, "out.npz")
        wick("convert", st, npz, "--dtype", "f16")
        z = np.load(npz)
        for name, a in tensors.items():
            want = a.astype(np.float16) if a.dtype.kind == "f" else a
            check(z[name].dtype == want.dtype and np.array_equal(z[name], want), f"npz f16 value of {name}")

        # Quantization: 2-d float tensors with whole blocks become q8_0 / q4_k, the rest stay.
        for fmt, qtype, tol in (("q8_0", gguf.GGMLQuantizationType.Q8_0, 0.01),
                                ("q4_k", gguf.GGMLQuantizationType.Q4_K, 0.12)):
            q = os.path.join(d, f"{fmt}.gguf")
            wick("convert", st, q, "--quant", fmt)
            r = gguf.GGUFReader(q)
            byname = {t.name: t for t in r.tensors}
            for name, a in tensors.items():
                t = byname[name]
                quantizable = a.dtype.kind == "f" and a.ndim >= 2 and a.shape[-1] % (32 if fmt == "q8_0" else 256) == 0
                if quantizable:
                    check(t.tensor_type == qtype, f"{fmt}: type of {name}")
                    deq = gguf.quants.dequantize(t.data, t.tensor_type).reshape(a.shape)
                    err = np.abs(deq - a.astype(np.float32)).max() / np.abs(a).max()
                    check(err < tol, f"{fmt}: {name} error {err:.4f} < {tol}")
                else:
                    check(np.array_equal(np.asarray(t.data).reshape(a.shape), a), f"{fmt}: {name} kept as it was")

        # safetensors metadata becomes GGUF string keys.
        meta_st = os.path.join(d, "meta.safetensors")
        save_file({"x": tensors["blk.0.attn_q.weight"]}, meta_st, metadata={"format": "pt", "note": "hi"})
        mg = os.path.join(d, "meta.gguf")
        wick("convert", meta_st, mg)
        r = gguf.GGUFReader(mg)
        f = r.fields["note"]
        check(bytes(f.parts[f.data[0]]).decode() == "hi", "safetensors metadata -> gguf string")

        # Bad arguments exit 2 and name the problem.
        wick("convert", src, os.path.join(d, "x.bin"), code=2)
        wick("convert", src, st, "--quant", "q4_0", code=2)
        wick("inspect", "--bogus", code=2)
        wick("inspect", os.path.join(d, "absent.gguf"), code=3)  # an error while running, not bad arguments
        wick("check", "--bogus", code=2)
        wick("check", "--op", "no_such_op", code=2)
        wick("check", "--device", "nope", code=2)
        wick("devices", "extra", code=2)
        wick("frob", code=2)
        check("usage: wick check" in wick("check", "--help"), "wick check --help prints the check usage")
        check(wick("--version").startswith("wick "), "wick --version")
        # A repeated --op runs once.
        rows = [l for l in wick("check", "--op", "add", "--op", "add", "--device", "cpu").splitlines() if l.startswith("add ")]
        check(len(rows) == 1, f"--op add twice gave {len(rows)} rows")
    print(f"cli_interop: {checks} checks passed")


if __name__ == "__main__":
    main()
