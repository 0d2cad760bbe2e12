"""NumPy reference of ggml's 32-element block formats, and the test vectors made with it.

Formats: q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, iq4_nl, mxfp4. quantize() follows ggml's
quantize_row_<f>_ref and dequantize() its dequantize_row_<f> (q8_1, which ggml never dequantizes:
q * d), every step in f32 in ggml's order of operations, vectorised over blocks.

Where C leaves the result to the platform, this follows x86-64 (as src/quant/codec_legacy.h does):
a float -> integer conversion of NaN or of a value outside int32 gives INT32_MIN before keeping
the low bits, and a NaN scale is stored as ggml's f32 -> f16 stores NaNs (sign | 0x7e00) with the
sign x86 gives it (set for a NaN the formula creates, clear for a NaN input carried through fabsf).
IQ4_NL blocks with max |x| < 1e-15 get code 8 everywhere: ggml's reference leaves those codes
unwritten (stale from the previous block).

Run as a script it quantizes the fixed inputs (inputs.py), checks the result against the gguf
package and writes tests/data/quant/NAME.q (the blocks of all rows, row after row) and
tests/data/quant/NAME.deq.f32 (their dequantized values, little-endian f32) for each format.
"""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from inputs import make_inputs  # noqa: E402

F32 = np.float32
QK = 32
FLT_MAX = F32(np.finfo(np.float32).max)
NAN_CREATED = 0xFE00  # f16 bits of x86's default (negative) NaN
NAN_CARRIED = 0x7E00
KV_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=F32)
KV_MXFP4 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=F32)

BLOCK_BYTES = {"q4_0": 18, "q4_1": 20, "q5_0": 22, "q5_1": 24, "q8_0": 34, "q8_1": 36, "iq4_nl": 18, "mxfp4": 17}


# ---- scalar helpers (elementwise on arrays)


def cvt_i32(v: np.ndarray) -> np.ndarray:
    """C's float -> integer conversion on x86-64 (cvttss2si), as int64 values."""
    v = np.asarray(v, dtype=F32)
    fits = (v >= F32(-(2.0**31))) & (v < F32(2.0**31))
    out = np.full(v.shape, -(2**31), dtype=np.int64)
    out[fits] = np.trunc(v[fits]).astype(np.int64)
    return out


def low_u8(i: np.ndarray) -> np.ndarray:
    return (np.asarray(i, dtype=np.int64) & 0xFF).astype(np.uint8)


def low_i8(i: np.ndarray) -> np.ndarray:
    return low_u8(i).view(np.int8).astype(np.int64)


def roundf(v: np.ndarray) -> np.ndarray:
    """C roundf: to nearest, halfway cases away from zero (a - floor(a) is exact in f32)."""
    a = np.abs(v)
    fl = np.floor(a)
    r = fl + ((a - fl) >= F32(0.5)).astype(F32)
    return np.copysign(r, v).astype(F32)


def f16_bits(v: np.ndarray, nan_bits) -> np.ndarray:
    """f32 -> f16 bits, round to nearest even; a NaN gives nan_bits."""
    v = np.asarray(v, dtype=F32)
    return np.where(np.isnan(v), np.asarray(nan_bits, dtype=np.uint16), v.astype(np.float16).view(np.uint16)).astype(
        np.uint16
    )


def f16_value(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    bits = lo.astype(np.uint16) | (hi.astype(np.uint16) << np.uint16(8))
    return bits.view(np.float16).astype(F32)


def u16_bytes(b: np.ndarray) -> np.ndarray:
    return np.stack([b & 0xFF, b >> 8], axis=-1).astype(np.uint8)


def u32_bytes(b: np.ndarray) -> np.ndarray:
    return np.stack([(b >> (8 * i)) & 0xFF for i in range(4)], axis=-1).astype(np.uint8)


def inverse(d: np.ndarray) -> np.ndarray:
    """ggml's `d ? 1.0f/d : 0.0f`."""
    safe = np.where(d != 0, d, F32(1))
    return np.where(d != 0, F32(1) / safe, F32(0)).astype(F32)


def pack_low_high(q: np.ndarray, mask: int) -> np.ndarray:
    """Codes of elements j and j + 16 into one byte (low, high), each and-ed with mask first."""
    q = q.astype(np.int64)
    return low_u8((q[:, :16] & mask) | ((q[:, 16:] & mask) << 4))


def unpack_low_high(qs: np.ndarray) -> np.ndarray:
    qs = qs.astype(np.int64)
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1)


def first_absmax(x: np.ndarray) -> np.ndarray:
    """The first element of largest |x| per block (0 if none is nonzero); NaNs never win."""
    amax = np.zeros(x.shape[0], dtype=F32)
    vmax = np.zeros(x.shape[0], dtype=F32)
    for j in range(QK):
        a = np.abs(x[:, j])
        take = amax < a
        amax = np.where(take, a, amax)
        vmax = np.where(take, x[:, j], vmax)
    return vmax


# ---- quantizers: x (n, 32) f32 -> (n, bytes) u8


def quant_sym(x: np.ndarray, levels: int):
    """Q4_0 (levels 8), Q5_0 (16): d = max / -levels, codes min(2 levels - 1, (int8)(x/d + levels + .5))."""
    d = (first_absmax(x) / F32(-levels)).astype(F32)
    t = low_i8(cvt_i32(x * inverse(d)[:, None] + F32(levels + 0.5)))
    q = low_u8(np.minimum(2 * levels - 1, t))
    return d, q


def quant_affine(x: np.ndarray, levels: int):
    """Q4_1 (levels 16), Q5_1 (32): d = (max - min) / (levels - 1), codes (x - min) / d + .5 truncated."""
    lo = np.full(x.shape[0], FLT_MAX, dtype=F32)
    hi = np.full(x.shape[0], -FLT_MAX, dtype=F32)
    for j in range(QK):
        lo = np.where(x[:, j] < lo, x[:, j], lo)
        hi = np.where(x[:, j] > hi, x[:, j], hi)
    d = ((hi - lo) / F32(levels - 1)).astype(F32)
    v = (x - lo[:, None]) * inverse(d)[:, None] + F32(0.5)
    if levels == 16:
        q = low_u8(np.minimum(15, low_i8(cvt_i32(v))))  # Q4_1 clamps, Q5_1 does not
    else:
        q = low_u8(cvt_i32(v))
    return d, lo, q


def quant_q8(x: np.ndarray):
    amax = np.zeros(x.shape[0], dtype=F32)
    for j in range(QK):  # ggml's MAX(a, b) = a > b ? a : b, NaN included
        a = np.abs(x[:, j])
        amax = np.where(amax > a, amax, a)
    d = (amax / F32(127)).astype(F32)
    q = low_i8(cvt_i32(roundf(x * inverse(d)[:, None])))
    return d, q


def iq4nl_index(v: np.ndarray) -> np.ndarray:
    """ggml's best_index_int8: nearest table value, ties to the upper one; ends clamp; NaN -> 15."""
    upper = np.clip(np.searchsorted(KV_IQ4NL, v, side="right"), 1, 15)
    lower_nearer = (v - KV_IQ4NL[upper - 1]) < (KV_IQ4NL[upper] - v)
    idx = np.where(lower_nearer, upper - 1, upper)
    idx = np.where(v >= KV_IQ4NL[15], 15, idx)
    return np.where(v <= KV_IQ4NL[0], 0, idx)


def quant_iq4nl(x: np.ndarray):
    """quantize_row_iq4_nl_ref: ntry = -1, so codes from d = max / -127 and d refitted by weighted
    least squares (weights x^2), accumulated element by element."""
    amax = np.zeros(x.shape[0], dtype=F32)
    vmax = np.zeros(x.shape[0], dtype=F32)
    for j in range(QK):
        a = np.abs(x[:, j])
        take = a > amax
        amax = np.where(take, a, amax)
        vmax = np.where(take, x[:, j], vmax)
    tiny = amax < F32(1e-15)
    d0 = (vmax / KV_IQ4NL[0]).astype(F32)
    inv = F32(1) / np.where(tiny, F32(1), d0)
    L = iq4nl_index(inv[:, None] * x)
    val = KV_IQ4NL[L]
    w = x * x
    sqx = np.zeros(x.shape[0], dtype=F32)
    sq2 = np.zeros(x.shape[0], dtype=F32)
    for j in range(QK):
        sqx = sqx + w[:, j] * val[:, j] * x[:, j]
        sq2 = sq2 + w[:, j] * val[:, j] * val[:, j]
    d = np.where(sq2 > 0, sqx / np.where(sq2 > 0, sq2, F32(1)), F32(0)).astype(F32)
    d = np.where(tiny, F32(0), d)
    L = np.where(tiny[:, None], 8, L)
    return d, L


def e8m0_half(e: np.ndarray) -> np.ndarray:
    e = e.astype(np.uint32)
    bits = np.where(e < 2, np.uint32(0x00200000) << e, (e - np.uint32(1)) << np.uint32(23)).astype(np.uint32)
    return bits.view(F32)


def quant_mxfp4(x: np.ndarray):
    amax = np.zeros(x.shape[0], dtype=F32)
    for j in range(QK):
        a = np.abs(x[:, j])
        amax = np.where(amax < a, a, amax)
    # log2f correctly rounded: the f64 log2 rounded to f32 is (checked for every positive f32; glibc's
    # log2f agrees), floor taken in f32 as ggml does.
    lg = np.log2(np.where(amax > 0, amax, F32(1)).astype(np.float64)).astype(F32)
    e = np.where(amax > 0, low_u8(cvt_i32(np.floor(lg) - F32(2) + F32(127))), 0).astype(np.uint8)
    d = e8m0_half(e)
    best = np.zeros(x.shape, dtype=np.int64)
    best_err = np.abs(KV_MXFP4[0] * d[:, None] - x)
    for i in range(1, 16):  # first index of the smallest error, as ggml's strict '<'
        err = np.abs(KV_MXFP4[i] * d[:, None] - x)
        take = err < best_err
        best = np.where(take, i, best)
        best_err = np.where(take, err, best_err)
    return e, best


def quantize(name: str, x: np.ndarray) -> np.ndarray:
    """Blocks of the f32 values x (any shape, size a multiple of 32) as (n_blocks, bytes) u8."""
    x = np.ascontiguousarray(x, dtype=F32).reshape(-1, QK)
    with np.errstate(all="ignore"):
        if name in ("q4_0", "q5_0"):
            d, q = quant_sym(x, 8 if name == "q4_0" else 16)
            parts = [u16_bytes(f16_bits(d, NAN_CREATED))]  # d = max / -levels: never NaN
            if name == "q5_0":
                parts.append(u32_bytes(fifth_bits(q)))
            parts.append(pack_low_high(q, 0xFF if name == "q4_0" else 0x0F))
        elif name in ("q4_1", "q5_1"):
            d, lo, q = quant_affine(x, 16 if name == "q4_1" else 32)
            parts = [u16_bytes(f16_bits(d, NAN_CREATED)), u16_bytes(f16_bits(lo, NAN_CREATED))]  # never NaN
            if name == "q5_1":
                parts.append(u32_bytes(fifth_bits(q)))
            parts.append(pack_low_high(q, 0xFF if name == "q4_1" else 0x0F))
        elif name in ("q8_0", "q8_1"):
            d, q = quant_q8(x)
            parts = [u16_bytes(f16_bits(d, NAN_CARRIED))]
            if name == "q8_1":
                s = q.sum(axis=1).astype(F32) * d
                parts.append(u16_bytes(f16_bits(s, np.where(np.isnan(d), NAN_CARRIED, NAN_CREATED))))
            parts.append(low_u8(q))
        elif name == "iq4_nl":
            d, L = quant_iq4nl(x)
            parts = [u16_bytes(f16_bits(d, NAN_CREATED)), pack_low_high(L, 0xFF)]
        elif name == "mxfp4":
            e, q = quant_mxfp4(x)
            parts = [e[:, None], pack_low_high(q, 0xFF)]
        else:
            raise ValueError(name)
    out = np.concatenate(parts, axis=1).astype(np.uint8)
    assert out.shape[1] == BLOCK_BYTES[name]
    return out


def fifth_bits(q: np.ndarray) -> np.ndarray:
    bits = (q.astype(np.uint32) >> np.uint32(4)) & np.uint32(1)
    return (bits << np.arange(QK, dtype=np.uint32)).sum(axis=1, dtype=np.uint64).astype(np.uint32)


# ---- dequantizers: (n, bytes) u8 -> (n, 32) f32


def dequantize(name: str, blocks: np.ndarray) -> np.ndarray:
    b = np.ascontiguousarray(blocks, dtype=np.uint8).reshape(-1, BLOCK_BYTES[name])
    with np.errstate(all="ignore"):
        if name == "mxfp4":
            d = e8m0_half(b[:, 0])
            return (KV_MXFP4[unpack_low_high(b[:, 1:])] * d[:, None]).astype(F32)
        d = f16_value(b[:, 0], b[:, 1])[:, None]
        if name == "q4_0":
            return ((unpack_low_high(b[:, 2:]) - 8).astype(F32) * d).astype(F32)
        if name == "q4_1":
            m = f16_value(b[:, 2], b[:, 3])[:, None]
            return (unpack_low_high(b[:, 4:]).astype(F32) * d + m).astype(F32)
        if name in ("q5_0", "q5_1"):
            off = 2 if name == "q5_0" else 4
            qh = b[:, off : off + 4].astype(np.uint32)
            qh = qh[:, 0] | (qh[:, 1] << 8) | (qh[:, 2] << 16) | (qh[:, 3] << 24)
            high = ((qh[:, None] >> np.arange(QK, dtype=np.uint32)) & 1).astype(np.int64) << 4
            q = unpack_low_high(b[:, off + 4 :]) | high
            if name == "q5_0":
                return ((q - 16).astype(F32) * d).astype(F32)
            m = f16_value(b[:, 2], b[:, 3])[:, None]
            return (q.astype(F32) * d + m).astype(F32)
        if name in ("q8_0", "q8_1"):
            qs = b[:, 2:] if name == "q8_0" else b[:, 4:]
            return (qs.view(np.int8).astype(F32) * d).astype(F32)
        if name == "iq4_nl":
            return (d * KV_IQ4NL[unpack_low_high(b[:, 2:])]).astype(F32)
    raise ValueError(name)


# ---- test vectors


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a = np.asarray(a, dtype=F32).ravel()
    b = np.asarray(b, dtype=F32).ravel()
    return bool(np.all((a.view(np.uint32) == b.view(np.uint32)) | (np.isnan(a) & np.isnan(b))))


def check_against_gguf(name: str, x: np.ndarray, q: np.ndarray, y: np.ndarray) -> None:
    """gguf's quantizers follow ggml's C reference except on non-finite inputs (its argmax/argmin
    pick NaNs where ggml's comparisons skip them) and on blocks of only +-0, where the sign of the
    zero d (Q4_0, Q5_0) or m (Q4_1, Q5_1) is that of gguf's first element or np.min, not ggml's
    (d = +0 / -levels = -0; the first zero for m). The fixed inputs are finite and their zero
    blocks are +0, so all bytes are compared. gguf has no Q8_1 and no IQ4_NL quantizer, and no
    Q8_1 dequantizer."""
    import gguf
    import gguf.quants

    qtype = getattr(gguf.GGMLQuantizationType, name.upper())
    if name not in ("q8_1", "iq4_nl"):
        ref = gguf.quants.quantize(x, qtype).reshape(-1)
        assert np.array_equal(ref, q.reshape(-1)), f"{name}: bytes differ from gguf.quants.quantize"
    if name != "q8_1":
        ref = gguf.quants.dequantize(q.reshape(x.shape[0], -1), qtype)
        assert same_bits(ref, y), f"{name}: values differ from gguf.quants.dequantize"


def main() -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    out = root / "tests" / "data" / "quant"
    x = make_inputs()
    stored = out / "input.f32"
    if stored.exists():
        assert np.array_equal(np.fromfile(stored, dtype="<f4").reshape(x.shape).view(np.uint32), x.view(np.uint32))
    assert np.all(np.isfinite(x))
    for name in BLOCK_BYTES:
        q = quantize(name, x)
        y = dequantize(name, q)
        check_against_gguf(name, x, q, y)
        q.tofile(out / f"{name}.q")
        y.astype("<f4").tofile(out / f"{name}.deq.f32")
        print(f"{name}: {q.shape[0]} blocks, {q.size} bytes")


if __name__ == "__main__":
    main()
