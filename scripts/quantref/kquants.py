"""NumPy reference of ggml's 256-element super-block formats: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_XS.

quantize_<name>(x) gives the bytes of ggml's quantize_row_<name>_ref for one super-block (IQ4_XS:
quantize_iq4_xs without importance weights) and dequantize_<name>(blk) the values of
dequantize_row_<name>. Every value is an np.float32 and every operation is done in the order the C
reference writes it, so each f32 rounding is the same (Python floats would be f64). Sums run in a
plain loop because NumPy's array sums are pairwise.

Run as a script it writes the test vectors of tests/test_quant_k.cpp: for each format NAME,
tests/data/quant/NAME.q (the quantized bytes of the 16 input rows of inputs.py, row after row) and
NAME.deq.f32 (their dequantized values, little-endian f32), after checking the dequantized values
bit for bit against gguf.quants.dequantize (every format but Q8_K, which gguf does not decode).
"""
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from inputs import make_inputs  # noqa: E402

F = np.float32
QK = 256
GROUP_MAX_EPS = F(1e-15)
IQ4NL_VALUES = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)


def f32_bits(v) -> int:
    return int(np.array(v, dtype=np.float32).view(np.uint32))


def nearest_int(v) -> int:
    # 1.5 * 2^23 added in f32 leaves round-half-even(v) + 2^22 in the low 23 mantissa bits.
    return (f32_bits(F(v) + F(12582912.0)) & 0x7FFFFF) - 0x400000


def clamp(v: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, v))


def to_f16_bits(v) -> int:
    return int(np.array(F(v), dtype=np.float32).astype(np.float16).view(np.uint16))


def from_f16_bits(b: int):
    return F(np.array(b, dtype=np.uint16).view(np.float16))


def put_u16(out: bytearray, off: int, v: int) -> None:
    out[off:off + 2] = int(v & 0xFFFF).to_bytes(2, "little")


def get_u16(blk, off: int) -> int:
    return int(blk[off]) | (int(blk[off + 1]) << 8)


def i8(v: int) -> int:
    """C conversion of an int to int8_t (two's complement wrap)."""
    v &= 0xFF
    return v - 256 if v >= 128 else v


# ----------------------------------------------------------------------------- shared searches

def qkx2(x, nmax: int, weights, rmin, rdelta, nstep: int, use_mad: bool):
    """make_qkx2_quants: (scale, the_min, codes) with x ~ scale * code - the_min."""
    n = len(x)
    rmin, rdelta = F(rmin), F(rdelta)
    lo = x[0]
    hi = x[0]
    sum_w = weights[0]
    sum_x = sum_w * x[0]
    for i in range(1, n):
        if x[i] < lo:
            lo = x[i]
        if x[i] > hi:
            hi = x[i]
        sum_w = sum_w + weights[i]
        sum_x = sum_x + weights[i] * x[i]
    if lo > 0:
        lo = F(0)
    if hi == lo:
        return F(0), -lo, [0] * n
    iscale = F(nmax) / (hi - lo)
    scale = F(1) / iscale
    codes = [clamp(nearest_int(iscale * (x[i] - lo)), 0, nmax) for i in range(n)]
    best_err = F(0)
    for i in range(n):
        diff = scale * F(codes[i]) + lo - x[i]
        diff = abs(diff) if use_mad else diff * diff
        best_err = best_err + weights[i] * diff
    for step in range(nstep + 1):
        iscale = (rmin + rdelta * F(step) + F(nmax)) / (hi - lo)
        trial = [clamp(nearest_int(iscale * (x[i] - lo)), 0, nmax) for i in range(n)]
        s_l = F(0)
        s_l2 = F(0)
        s_xl = F(0)
        for i in range(n):
            w, fl = weights[i], F(trial[i])
            s_l = s_l + w * fl
            s_l2 = s_l2 + w * fl * fl
            s_xl = s_xl + w * fl * x[i]
        det = sum_w * s_l2 - s_l * s_l
        if det > 0:
            t_scale = (sum_w * s_xl - sum_x * s_l) / det
            t_min = (s_l2 * sum_x - s_l * s_xl) / det
            if t_min > 0:
                t_min = F(0)
                t_scale = s_xl / s_l2
            err = F(0)
            for i in range(n):
                diff = t_scale * F(trial[i]) + t_min - x[i]
                diff = abs(diff) if use_mad else diff * diff
                err = err + weights[i] * diff
            if err < best_err:
                codes, best_err, scale, lo = trial, err, t_scale, t_min
    return scale, -lo, codes


def abs_max(x):
    """(value of largest magnitude, its magnitude), the first one on ties."""
    big = F(0)
    amax = F(0)
    for v in x:
        if abs(v) > amax:
            amax = abs(v)
            big = v
    return big, amax


def q3_search(x, nmax: int):
    """make_q3_quants with do_rmse: (scale, codes offset by nmax)."""
    n = len(x)
    big, amax = abs_max(x)
    if amax < GROUP_MAX_EPS:
        return F(0), [0] * n
    iscale = F(-nmax) / big
    codes = []
    slx_all = F(0)
    sl2_all = F(0)
    for i in range(n):
        q = clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1)
        codes.append(q)
        w = x[i] * x[i]
        slx_all = slx_all + w * x[i] * F(q)
        sl2_all = sl2_all + w * F(q) * F(q)
    for _ in range(5):
        changed = 0
        for i in range(n):
            w = x[i] * x[i]
            slx = slx_all - w * x[i] * F(codes[i])
            if slx > 0:
                sl2 = sl2_all - w * F(codes[i]) * F(codes[i])
                q = clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1)
                if q != codes[i]:
                    slx = slx + w * x[i] * F(q)
                    sl2 = sl2 + w * F(q) * F(q)
                    if sl2 > 0 and slx * slx * sl2_all > slx_all * slx_all * sl2:
                        codes[i] = q
                        slx_all, sl2_all = slx, sl2
                        changed += 1
        if not changed:
            break
    scale = slx_all / sl2_all if sl2_all > 0 else F(0)
    return scale, [q + nmax for q in codes]


def qx_search(x, nmax: int):
    """make_qx_quants with rmse_type 1, no importance weights: (scale, codes offset by nmax)."""
    n = len(x)
    big, amax = abs_max(x)
    if amax < GROUP_MAX_EPS:
        return F(0), [0] * n

    def fit(iscale):
        qs = [clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1) for i in range(n)]
        slx = F(0)
        sl2 = F(0)
        for i in range(n):
            w = x[i] * x[i]
            slx = slx + w * x[i] * F(qs[i])
            sl2 = sl2 + w * F(qs[i]) * F(qs[i])
        return qs, slx, sl2

    qs, slx, sl2 = fit(F(-nmax) / big)
    codes = [q + nmax for q in qs]
    scale = slx / sl2 if sl2 != 0 else F(0)
    best = scale * slx
    for step in range(-9, 10):
        if step == 0:
            continue
        qs, slx, sl2 = fit(-(F(nmax) + F(0.1) * F(step)) / big)
        if sl2 > 0 and slx * slx > best * sl2:
            codes = [q + nmax for q in qs]
            scale = slx / sl2
            best = scale * slx
    return scale, codes


def iq4nl_index(v) -> int:
    """best_index_int8 over the IQ4_NL levels: the nearest level, ties upward."""
    vals = IQ4NL_VALUES
    if v <= F(vals[0]):
        return 0
    if v >= F(vals[15]):
        return 15
    lo, hi = 0, 15
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if v < F(vals[mid]):
            hi = mid
        else:
            lo = mid
    return hi - 1 if v - F(vals[hi - 1]) < F(vals[hi]) - v else hi


def pack_2bit(codes, out: bytearray, off: int) -> None:
    for half in range(2):
        for l in range(32):
            e = 128 * half + l
            out[off + 32 * half + l] = (codes[e] | (codes[e + 32] << 2) | (codes[e + 64] << 4) |
                                        (codes[e + 96] << 6)) & 0xFF


# ----------------------------------------------------------------------------- Q2_K
# scales[16] (scale | min << 4), qs[64], f16 d, f16 dmin

def quantize_q2_k(x) -> bytes:
    out = bytearray(84)
    codes = [0] * QK
    scales, mins = [], []
    max_scale = F(0)
    max_min = F(0)
    for g in range(16):
        xs = x[16 * g:16 * g + 16]
        s, m, c = qkx2(xs, 3, [abs(v) for v in xs], -0.5, 0.1, 15, True)
        codes[16 * g:16 * g + 16] = c
        scales.append(s)
        mins.append(m)
        if s > max_scale:
            max_scale = s
        if m > max_min:
            max_min = m
    if max_scale > 0:
        inv = F(15) / max_scale
        for g in range(16):
            out[g] = nearest_int(inv * scales[g]) & 0xFF
        put_u16(out, 80, to_f16_bits(max_scale / F(15)))
    else:
        put_u16(out, 80, to_f16_bits(F(0)))
    if max_min > 0:
        inv = F(15) / max_min
        for g in range(16):
            out[g] = (out[g] | (nearest_int(inv * mins[g]) << 4)) & 0xFF
        put_u16(out, 82, to_f16_bits(max_min / F(15)))
    else:
        put_u16(out, 82, to_f16_bits(F(0)))
    d_all = from_f16_bits(get_u16(out, 80))
    m_all = from_f16_bits(get_u16(out, 82))
    for g in range(16):
        d = d_all * F(out[g] & 0xF)
        if d == 0:
            continue
        dm = m_all * F(out[g] >> 4)
        for i in range(16):
            codes[16 * g + i] = clamp(nearest_int((x[16 * g + i] + dm) / d), 0, 3)
    pack_2bit(codes, out, 16)
    return bytes(out)


def dequantize_q2_k(blk):
    d = from_f16_bits(get_u16(blk, 80))
    dmin = from_f16_bits(get_u16(blk, 82))
    y = np.empty(QK, dtype=np.float32)
    for e in range(QK):
        sc = blk[e // 16]
        q = (blk[16 + 32 * (e // 128) + e % 32] >> (2 * ((e % 128) // 32))) & 3
        y[e] = (d * F(sc & 0xF)) * F(q) - dmin * F(sc >> 4)
    return y


# ----------------------------------------------------------------------------- Q3_K
# hmask[32], qs[64], scales[12] (16 6-bit values + 32), f16 d

def q3k_scale(s, g: int) -> int:
    low = s[g] & 0xF if g < 8 else s[g - 8] >> 4
    return (low | (((s[8 + g % 4] >> (2 * (g // 4))) & 3) << 4)) - 32


def quantize_q3_k(x) -> bytes:
    out = bytearray(110)
    codes = [0] * QK
    scales = []
    max_scale = F(0)
    amax = F(0)
    for g in range(16):
        s, c = q3_search(x[16 * g:16 * g + 16], 4)
        codes[16 * g:16 * g + 16] = c
        scales.append(s)
        if abs(s) > amax:
            amax = abs(s)
            max_scale = s
    sc = [0] * 12
    if max_scale != 0:
        iscale = F(-32) / max_scale
        for g in range(16):
            v = clamp(i8(nearest_int(iscale * scales[g])), -32, 31) + 32
            if g < 8:
                sc[g] = v & 0xF
            else:
                sc[g - 8] |= (v & 0xF) << 4
            sc[8 + g % 4] |= (v >> 4) << (2 * (g // 4))
        put_u16(out, 108, to_f16_bits(F(1) / iscale))
    else:
        put_u16(out, 108, to_f16_bits(F(0)))
    out[96:108] = bytes(sc)
    d_all = from_f16_bits(get_u16(out, 108))
    for g in range(16):
        d = d_all * F(q3k_scale(sc, g))
        if d == 0:
            continue
        for i in range(16):
            codes[16 * g + i] = clamp(nearest_int(x[16 * g + i] / d), -4, 3) + 4
    for e in range(QK):
        if codes[e] > 3:
            out[e % 32] |= 1 << (e // 32)
            codes[e] -= 4
    pack_2bit(codes, out, 32)
    return bytes(out)


def dequantize_q3_k(blk):
    d = from_f16_bits(get_u16(blk, 108))
    y = np.empty(QK, dtype=np.float32)
    for e in range(QK):
        q = (blk[32 + 32 * (e // 128) + e % 32] >> (2 * ((e % 128) // 32))) & 3
        hbit = (blk[e % 32] >> (e // 32)) & 1
        y[e] = (d * F(q3k_scale(blk[96:108], e // 16))) * F(q - (0 if hbit else 4))
    return y


# ----------------------------------------------------------------------------- Q4_K / Q5_K
# f16 d, f16 dmin, scales[12] (8 6-bit scales and 8 6-bit mins), then the codes

def k4_scale_min(s, j: int):
    if j < 4:
        return s[j] & 63, s[j + 4] & 63
    return (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)


def k4_scales(x, nmax: int, rmin, nstep: int, out: bytearray):
    """Writes d, dmin and the 12 scale bytes; returns the 256 codes in [0, nmax]."""
    codes = [0] * QK
    scales, mins = [], []
    max_scale = F(0)
    max_min = F(0)
    for j in range(8):
        xs = x[32 * j:32 * j + 32]
        sum_x2 = F(0)
        for v in xs:
            sum_x2 = sum_x2 + v * v
        av_x = np.sqrt(sum_x2 / F(32))
        s, m, c = qkx2(xs, nmax, [av_x + abs(v) for v in xs], rmin, 0.1, nstep, False)
        codes[32 * j:32 * j + 32] = c
        scales.append(s)
        mins.append(m)
        if s > max_scale:
            max_scale = s
        if m > max_min:
            max_min = m
    inv_scale = F(63) / max_scale if max_scale > 0 else F(0)
    inv_min = F(63) / max_min if max_min > 0 else F(0)
    sc = [0] * 12
    for j in range(8):
        ls = min(63, nearest_int(inv_scale * scales[j]) & 0xFF)
        lm = min(63, nearest_int(inv_min * mins[j]) & 0xFF)
        if j < 4:
            sc[j] = ls
            sc[j + 4] = lm
        else:
            sc[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4)
            sc[j - 4] |= (ls >> 4) << 6
            sc[j] |= (lm >> 4) << 6
    put_u16(out, 0, to_f16_bits(max_scale / F(63)))
    put_u16(out, 2, to_f16_bits(max_min / F(63)))
    out[4:16] = bytes(sc)
    d_all = from_f16_bits(get_u16(out, 0))
    m_all = from_f16_bits(get_u16(out, 2))
    for j in range(8):
        s, m = k4_scale_min(sc, j)
        d = d_all * F(s)
        if d == 0:
            continue
        dm = m_all * F(m)
        for i in range(32):
            codes[32 * j + i] = clamp(nearest_int((x[32 * j + i] + dm) / d), 0, nmax)
    return codes


def quantize_q4_k(x) -> bytes:
    out = bytearray(144)
    codes = k4_scales(x, 15, -1.0, 20, out)
    for c in range(4):
        for l in range(32):
            out[16 + 32 * c + l] = codes[64 * c + l] | (codes[64 * c + 32 + l] << 4)
    return bytes(out)


def dequantize_q4_k(blk):
    d_all = from_f16_bits(get_u16(blk, 0))
    m_all = from_f16_bits(get_u16(blk, 2))
    y = np.empty(QK, dtype=np.float32)
    for e in range(QK):
        j = e // 32
        s, m = k4_scale_min(blk[4:16], j)
        q = (blk[16 + 32 * (j // 2) + e % 32] >> (4 * (j % 2))) & 0xF
        y[e] = (d_all * F(s)) * F(q) - m_all * F(m)
    return y


def quantize_q5_k(x) -> bytes:
    out = bytearray(176)
    codes = k4_scales(x, 31, -0.5, 15, out)
    for e in range(QK):
        j = e // 32
        q = codes[e]
        if q > 15:
            out[16 + e % 32] |= 1 << j
            q -= 16
        out[48 + 32 * (j // 2) + e % 32] |= q << (4 * (j % 2))
    return bytes(out)


def dequantize_q5_k(blk):
    d_all = from_f16_bits(get_u16(blk, 0))
    m_all = from_f16_bits(get_u16(blk, 2))
    y = np.empty(QK, dtype=np.float32)
    for e in range(QK):
        j = e // 32
        s, m = k4_scale_min(blk[4:16], j)
        q = (blk[48 + 32 * (j // 2) + e % 32] >> (4 * (j % 2))) & 0xF
        q += 16 if (blk[16 + e % 32] >> j) & 1 else 0
        y[e] = (d_all * F(s)) * F(q) - m_all * F(m)
    return y


# ----------------------------------------------------------------------------- Q6_K
# ql[128], qh[64], int8 scales[16], f16 d

def q6k_position(e: int):
    """(ql byte, ql shift, qh byte, qh shift) of element e."""
    n, r = divmod(e, 128)
    k, l = divmod(r, 32)
    return 64 * n + 32 * (k & 1) + l, 4 * (k >> 1), 128 + 32 * n + l, 2 * k


def quantize_q6_k(x) -> bytes:
    out = bytearray(210)
    codes = [0] * QK
    scales = []
    max_scale = F(0)
    max_abs = F(0)
    for g in range(16):
        s, c = qx_search(x[16 * g:16 * g + 16], 32)
        codes[16 * g:16 * g + 16] = c
        scales.append(s)
        if abs(s) > max_abs:
            max_abs = abs(s)
            max_scale = s
    if max_abs < GROUP_MAX_EPS:
        return bytes(out)
    iscale = F(-128) / max_scale
    put_u16(out, 208, to_f16_bits(F(1) / iscale))
    sc = [i8(min(127, nearest_int(iscale * s))) for s in scales]
    out[192:208] = bytes(v & 0xFF for v in sc)
    d_all = from_f16_bits(get_u16(out, 208))
    for g in range(16):
        d = d_all * F(sc[g])
        if d == 0:
            continue
        for i in range(16):
            codes[16 * g + i] = clamp(nearest_int(x[16 * g + i] / d), -32, 31) + 32
    for e in range(QK):
        lb, ls, hb, hs = q6k_position(e)
        out[lb] |= (codes[e] & 0xF) << ls
        out[hb] |= (codes[e] >> 4) << hs
    return bytes(out)


def dequantize_q6_k(blk):
    d = from_f16_bits(get_u16(blk, 208))
    y = np.empty(QK, dtype=np.float32)
    for e in range(QK):
        lb, ls, hb, hs = q6k_position(e)
        q = (((blk[lb] >> ls) & 0xF) | (((blk[hb] >> hs) & 3) << 4)) - 32
        y[e] = d * F(i8(blk[192 + e // 16])) * F(q)
    return y


# ----------------------------------------------------------------------------- Q8_K
# f32 d, int8 qs[256], int16 bsums[16]

def quantize_q8_k(x) -> bytes:
    out = bytearray(292)
    big, amax = abs_max(x)
    if amax == 0:
        return bytes(out)  # ggml leaves bsums unwritten here; all q are 0, so they are 0
    iscale = F(-127) / big
    qs = [i8(min(127, nearest_int(iscale * v))) for v in x]
    out[4:260] = bytes(q & 0xFF for q in qs)
    for g in range(16):
        put_u16(out, 260 + 2 * g, sum(qs[16 * g:16 * g + 16]))
    out[0:4] = np.array(F(1) / iscale, dtype="<f4").tobytes()
    return bytes(out)


def dequantize_q8_k(blk):
    d = F(np.frombuffer(blk[0:4], dtype="<f4")[0])
    return np.array([d * F(i8(q)) for q in blk[4:260]], dtype=np.float32)


# ----------------------------------------------------------------------------- IQ4_XS
# f16 d, u16 scales_h, scales_l[4], qs[128]

def iq4_fit(xb, inv, weights):
    sqx = F(0)
    sq2 = F(0)
    for j in range(32):
        q = F(IQ4NL_VALUES[iq4nl_index(inv * xb[j])])
        sqx = sqx + weights[j] * q * xb[j]
        sq2 = sq2 + weights[j] * q * q
    return sqx, sq2


def quantize_iq4_xs(x) -> bytes:
    out = bytearray(136)
    ntry = 7
    v0 = IQ4NL_VALUES[0]
    scales = []
    max_scale = F(0)
    amax_scale = F(0)
    for ib in range(8):
        xb = x[32 * ib:32 * ib + 32]
        weights = [v * v for v in xb]
        big, amax = abs_max(xb)
        if amax < GROUP_MAX_EPS:
            scales.append(F(0))
            continue
        d = -big / F(v0)
        sqx, sq2 = iq4_fit(xb, F(1) / d, weights)
        d = sqx / sq2 if sq2 > 0 else F(0)
        best = d * sqx
        for t in range(-ntry, ntry + 1):
            sqx, sq2 = iq4_fit(xb, F(t + v0) / big, weights)
            if sq2 > 0 and sqx * sqx > best * sq2:
                d = sqx / sq2
                best = d * sqx
        scales.append(d)
        if abs(d) > amax_scale:
            amax_scale = abs(d)
            max_scale = d
    d = -max_scale / F(32)  # -0.0 when every scale is 0
    put_u16(out, 0, to_f16_bits(d))
    inv = F(1) / d if d != 0 else F(0)
    scales_h = 0
    for ib in range(8):
        ls = clamp(nearest_int(inv * scales[ib]), -32, 31)
        dl = d * F(ls)
        idl = F(1) / dl if dl != 0 else F(0)
        codes = [iq4nl_index(idl * v) for v in x[32 * ib:32 * ib + 32]]
        for j in range(16):
            out[8 + 16 * ib + j] = codes[j] | (codes[16 + j] << 4)
        ls += 32
        out[4 + ib // 2] |= (ls & 0xF) << (4 * (ib % 2))
        scales_h |= (ls >> 4) << (2 * ib)
    put_u16(out, 2, scales_h)
    return bytes(out)


def dequantize_iq4_xs(blk):
    d = from_f16_bits(get_u16(blk, 0))
    scales_h = get_u16(blk, 2)
    y = np.empty(QK, dtype=np.float32)
    for ib in range(8):
        ls = ((blk[4 + ib // 2] >> (4 * (ib % 2))) & 0xF) | (((scales_h >> (2 * ib)) & 3) << 4)
        dl = d * F(ls - 32)
        for j in range(16):
            q = blk[8 + 16 * ib + j]
            y[32 * ib + j] = dl * F(IQ4NL_VALUES[q & 0xF])
            y[32 * ib + 16 + j] = dl * F(IQ4NL_VALUES[q >> 4])
    return y


# ----------------------------------------------------------------------------- test vectors

# name: (quantize, dequantize, bytes per block, gguf's type name)
FORMATS = {
    "q2_k": (quantize_q2_k, dequantize_q2_k, 84, "Q2_K"),
    "q3_k": (quantize_q3_k, dequantize_q3_k, 110, "Q3_K"),
    "q4_k": (quantize_q4_k, dequantize_q4_k, 144, "Q4_K"),
    "q5_k": (quantize_q5_k, dequantize_q5_k, 176, "Q5_K"),
    "q6_k": (quantize_q6_k, dequantize_q6_k, 210, "Q6_K"),
    "q8_k": (quantize_q8_k, dequantize_q8_k, 292, None),  # gguf has no Q8_K decoder
    "iq4_xs": (quantize_iq4_xs, dequantize_iq4_xs, 136, "IQ4_XS"),
}


def quantize_rows(name: str, x: np.ndarray) -> np.ndarray:
    quant = FORMATS[name][0]
    rows = [b"".join(quant([F(v) for v in row[b:b + QK]]) for b in range(0, x.shape[1], QK)) for row in x]
    return np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(x.shape[0], -1)


def dequantize_rows(name: str, q: np.ndarray) -> np.ndarray:
    deq, size = FORMATS[name][1], FORMATS[name][2]
    # Blocks go in as bytes: indexing gives Python ints, whose arithmetic does not wrap as uint8's.
    return np.concatenate([deq(blk.tobytes()) for blk in q.reshape(-1, size)]).reshape(q.shape[0], -1)


def main() -> None:
    import gguf.quants
    from gguf.constants import GGMLQuantizationType

    out_dir = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "quant"
    x = make_inputs()
    for name, (_, _, _, gguf_name) in FORMATS.items():
        q = quantize_rows(name, x)
        y = dequantize_rows(name, q)
        if gguf_name is not None:
            ref = gguf.quants.dequantize(q, GGMLQuantizationType[gguf_name]).astype(np.float32)
            bad = np.flatnonzero(ref.reshape(-1).view(np.uint32) != y.reshape(-1).view(np.uint32))
            assert bad.size == 0, f"{name}: {bad.size} values differ from gguf, first at {bad[0]}"
        q.tofile(out_dir / f"{name}.q")
        y.astype("<f4").tofile(out_dir / f"{name}.deq.f32")
        print(f"{name}: {q.nbytes} bytes, rel. rms error {np.sqrt(np.mean((y - x) ** 2) / np.mean(x ** 2)):.4g}")


if __name__ == "__main__":
    main()
