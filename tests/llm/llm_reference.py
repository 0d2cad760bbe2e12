#!/usr/bin/env python3
"""Checks wick's LLM inference against an independent NumPy forward pass.

    python3 tests/llm/llm_reference.py --make build/tests/llm/llm_make --tool build/tests/llm/llm_tool \
        [--wick build/wick] --device cpu [--quick] [--reference-only] [--only llama3:f32]

For each (architecture, weight format) it writes a tiny random model with llm_make, reads the files
back with the Python packages (gguf.GGUFReader + gguf.quants.dequantize for model.gguf,
safetensors + config.json for hf/), runs its own float64 forward pass (ggml's and transformers'
semantics written out in NumPy; no wick code) and compares:

  - the reference on model.gguf with the reference on hf/ (same weights; proves the q/k row
    permutation of GGUF llama files and the Llama 3.1 rope factors),
  - the reference with Hugging Face transformers on hf/ (when torch and transformers import),
  - wick's logits (llm_tool logits) on model.gguf and on hf/ with the reference, for f32 also
    prefilled in chunks of 7 positions and for a text prompt through wick's tokenizer (whose ids
    must be those of the tokenizers package, when it imports),
  - wick's greedy ids (llm_tool generate) with the reference's: equal for f32 weights, each within
    the tolerance of the reference's best for the others,
  - with --wick, for f32: the text `wick run MODEL -p TEXT --temp 0` prints with the text of the
    reference's greedy tokens after the same prompt, decoded by the tokenizers package.

Exit 0 when every check passed, 1 when one failed, 77 when numpy, gguf or safetensors is missing.
"""

import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import gguf
    from gguf.quants import dequantize
    import safetensors.numpy
except ImportError as e:  # the CTest entry treats 77 as skipped
    print(f"skip: {e}")
    sys.exit(77)

ARCHS = ["llama2", "llama3", "llama31", "mistral", "qwen2", "qwen3"]
MAIN_FORMATS = ["f32", "bf16", "q8_0", "q4_k", "q4_k_m"]
OTHER_FORMATS = ["f16", "q4_0", "q4_1", "q5_0", "q5_1", "q2_k", "q3_k", "q5_k", "q6_k", "iq4_nl", "iq4_xs", "mxfp4"]
QUICK = [("llama3", "f32", False), ("qwen2", "q4_k", False), ("qwen3", "bf16", False), ("llama2", "q8_0", False)]

# Note [Tolerances]. Every bound is on max |wick - ref| / max(1, max |ref|) over all logits; the
# logits span about -7..7. Measured on the CPU over seeds 1-8 of llm_make, the worst were: f32
# 2.1e-6, block formats 2.2e-6, f16 1.6e-3, bf16 1.4e-2 (transformers vs the reference: 2.7e-6).
# - f32 weights: wick computes in f32 what the reference computes in f64 with the same values, so
#   only f32 rounding separates them: 1e-4.
# - f16 / bf16 weights: the reference uses the stored values exactly, but wick rounds the
#   activations to the weight dtype before each matmul and returns the matmul's result in that
#   dtype too (bf16 keeps 8 bits of mantissa, a relative error of 2^-9 per element; f16 11 bits),
#   and those errors add up over the layers; a NumPy model of exactly that rounding lands at 1e-2
#   for bf16. Bounds: f16 5e-3, bf16 3e-2; a wrong weight or a wrong op is off by O(1).
# - block formats: the reference dequantizes the stored blocks with gguf-py, and wick on the CPU
#   multiplies the same dequantized values in f32 without quantizing its activations, so only f32
#   rounding separates them: 1e-4, as for f32. On a GPU a prompt of more than 16 tokens meets each
#   quantized weight in bf16 (the GEMM over dequantized rows runs on tensor cores), so the bf16
#   bound applies there: measured on an H200, 1.0e-2 to 1.6e-2 over the formats, greedy 32/32.
TOL_F32 = 1e-4
TOL_F16 = 5e-3
TOL_BF16 = 3e-2
TOL_QUANT_CPU = 1e-4
TOL_QUANT_OTHER = TOL_BF16
TOL_REF = 1e-7  # the reference on two files of the same values (GGUF keeps eps and rope factors in f32)
TOL_TRANSFORMERS = 1e-4  # transformers computes in f32

LOGIT_TOKENS = 128  # long enough for the Llama 3.1 rope scaling to show (it acts on slow frequencies)
PROMPT_TOKENS = 8
GENERATE_TOKENS = 32
RUN_TOKENS = 24
TEXT = "Hello world"
END_TOKENS = {"</s>", "<|end_of_text|>", "<|eot_id|>", "<|endoftext|>", "<|im_end|>"}


def tolerance(fmt, device):
    if fmt == "f32":
        return TOL_F32
    if fmt == "f16":
        return TOL_F16
    if fmt == "bf16":
        return TOL_BF16
    return TOL_QUANT_CPU if device == "cpu" else TOL_QUANT_OTHER


def rel_err(a, ref):
    a = np.asarray(a, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if a.shape != ref.shape:
        return math.inf
    return float(np.max(np.abs(a - ref)) / max(1.0, float(np.max(np.abs(ref)))))


# ---- the model as the reference holds it -------------------------------------------------------


class RefModel:
    """Float64 weights in HF orientation ([out, in]) and the settings the forward pass needs."""

    def __init__(self):
        self.arch = ""  # llama, qwen2, qwen3
        self.layers = []  # dicts of weights
        self.embed = None
        self.norm = None
        self.head = None  # None: tied to the embedding
        self.heads = self.kv_heads = self.head_dim = 0
        self.eps = 1e-5
        self.inv_freq = None  # [head_dim / 2] angles per position, scaling applied
        self.interleaved = False  # rope on (x[2i], x[2i+1]) instead of (x[i], x[i + d/2])
        self.tokens = []  # vocabulary strings, where known
        self.bos = None
        self.add_bos = True

    @property
    def vocab(self):
        return self.embed.shape[0]

    def end_ids(self):
        return {i for i, t in enumerate(self.tokens) if t in END_TOKENS}


# A layer's weights under the GGUF name (column 0) and the Hugging Face name (column 1); the
# optional ones are present only in some architectures.
LAYER_NAMES = {
    "attn_norm": ("attn_norm.weight", "input_layernorm.weight"),
    "wq": ("attn_q.weight", "self_attn.q_proj.weight"),
    "wk": ("attn_k.weight", "self_attn.k_proj.weight"),
    "wv": ("attn_v.weight", "self_attn.v_proj.weight"),
    "wo": ("attn_output.weight", "self_attn.o_proj.weight"),
    "ffn_norm": ("ffn_norm.weight", "post_attention_layernorm.weight"),
    "w_gate": ("ffn_gate.weight", "mlp.gate_proj.weight"),
    "w_up": ("ffn_up.weight", "mlp.up_proj.weight"),
    "w_down": ("ffn_down.weight", "mlp.down_proj.weight"),
}
OPTIONAL_LAYER_NAMES = {
    "bq": ("attn_q.bias", "self_attn.q_proj.bias"),
    "bk": ("attn_k.bias", "self_attn.k_proj.bias"),
    "bv": ("attn_v.bias", "self_attn.v_proj.bias"),
    "q_norm": ("attn_q_norm.weight", "self_attn.q_norm.weight"),
    "k_norm": ("attn_k_norm.weight", "self_attn.k_norm.weight"),
}


def layer_weights(tensors, prefix, column):
    layer = {k: tensors[prefix + names[column]] for k, names in LAYER_NAMES.items()}
    for k, names in OPTIONAL_LAYER_NAMES.items():
        if prefix + names[column] in tensors:
            layer[k] = tensors[prefix + names[column]]
    return layer

def rope_inv_freq(theta, head_dim):
    return 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)


def llama3_inv_freq(inv_freq, scaling):
    """transformers' _compute_llama3_parameters, written out."""
    factor = scaling["factor"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    out = np.where(wavelen > old / low, inv_freq / factor, inv_freq)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * out / factor + smooth * out
    medium = ~(wavelen < old / high) & ~(wavelen > old / low)
    return np.where(medium, smoothed, out)


def gguf_value(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


def load_gguf(path, ignore_rope_freqs=False):
    r = gguf.GGUFReader(path)
    arch = gguf_value(r, "general.architecture")
    tensors = {}
    for t in r.tensors:
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))  # ggml ne[0] is the last numpy dim
        values = dequantize(t.data, t.tensor_type)
        tensors[t.name] = np.asarray(values, dtype=np.float64).reshape(shape)
    m = RefModel()
    m.arch = arch
    m.heads = int(gguf_value(r, f"{arch}.attention.head_count"))
    m.kv_heads = int(gguf_value(r, f"{arch}.attention.head_count_kv", m.heads))
    hidden = int(gguf_value(r, f"{arch}.embedding_length"))
    m.head_dim = int(gguf_value(r, f"{arch}.attention.key_length", hidden // m.heads))
    m.eps = float(gguf_value(r, f"{arch}.attention.layer_norm_rms_epsilon"))
    theta = float(gguf_value(r, f"{arch}.rope.freq_base", 10000.0))
    rope_dims = int(gguf_value(r, f"{arch}.rope.dimension_count", m.head_dim))
    if rope_dims != m.head_dim:
        raise ValueError(f"{path}: partial rope ({rope_dims} of {m.head_dim}) is not modelled")
    m.inv_freq = rope_inv_freq(theta, m.head_dim)
    if "rope_freqs.weight" in tensors and not ignore_rope_freqs:
        m.inv_freq = m.inv_freq / tensors["rope_freqs.weight"]  # ggml divides each angle by its factor
    # llama.cpp: LLM_ARCH_LLAMA ropes adjacent pairs ("normal"); qwen2 / qwen3 are NEOX (half split).
    m.interleaved = arch == "llama"
    m.embed = tensors["token_embd.weight"]
    m.norm = tensors["output_norm.weight"]
    m.head = tensors.get("output.weight")
    n_layers = int(gguf_value(r, f"{arch}.block_count"))
    for i in range(n_layers):
        m.layers.append(layer_weights(tensors, f"blk.{i}.", 0))
    m.tokens = list(gguf_value(r, "tokenizer.ggml.tokens", []))
    m.bos = gguf_value(r, "tokenizer.ggml.bos_token_id")
    m.add_bos = bool(gguf_value(r, "tokenizer.ggml.add_bos_token", True))
    return m


def load_safetensors(path):
    """safetensors.numpy, except for bf16, which NumPy lacks: those tensors are widened here."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    if not any(isinstance(v, dict) and v.get("dtype") == "BF16" for v in header.values()):
        return {k: v.astype(np.float64) for k, v in safetensors.numpy.load_file(path).items()}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        raw = data[begin:end]
        if info["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = bits.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype={"F32": "<f4", "F16": "<f2", "F64": "<f8"}[info["dtype"]])
        out[name] = arr.astype(np.float64).reshape(info["shape"])
    return out


def load_hf(folder):
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    t = load_safetensors(os.path.join(folder, "model.safetensors"))
    m = RefModel()
    m.arch = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3"}[c["model_type"]]
    m.heads = c["num_attention_heads"]
    m.kv_heads = c.get("num_key_value_heads", m.heads)
    m.head_dim = c.get("head_dim") or c["hidden_size"] // m.heads
    m.eps = c["rms_norm_eps"]
    m.inv_freq = rope_inv_freq(c.get("rope_theta", 10000.0), m.head_dim)
    scaling = c.get("rope_scaling")
    if scaling:
        if scaling.get("rope_type", scaling.get("type")) != "llama3":
            raise ValueError(f"{folder}: rope_scaling {scaling} is not modelled")
        m.inv_freq = llama3_inv_freq(m.inv_freq, scaling)
    m.interleaved = False  # transformers' rotate_half
    m.embed = t["model.embed_tokens.weight"]
    m.norm = t["model.norm.weight"]
    m.head = None if c.get("tie_word_embeddings") else t["lm_head.weight"]
    for i in range(c["num_hidden_layers"]):
        m.layers.append(layer_weights(t, f"model.layers.{i}.", 1))
    return m


# ---- the forward pass ----------------------------------------------------------------------------


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, inv_freq, interleaved):
    """x [T, heads, d] at positions 0..T-1."""
    ang = np.arange(x.shape[0], dtype=np.float64)[:, None] * inv_freq[None, :]  # [T, d/2]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    d = x.shape[-1]
    a, b = (x[..., 0::2], x[..., 1::2]) if interleaved else (x[..., : d // 2], x[..., d // 2 :])
    ra, rb = a * cos - b * sin, a * sin + b * cos
    out = np.empty_like(x)
    if interleaved:
        out[..., 0::2], out[..., 1::2] = ra, rb
    else:
        out[..., : d // 2], out[..., d // 2 :] = ra, rb
    return out


def silu(x):
    return x / (1 + np.exp(-x))


def attention(x, layer, m):
    T = x.shape[0]
    hd = m.head_dim
    q = x @ layer["wq"].T
    k = x @ layer["wk"].T
    v = x @ layer["wv"].T
    if "bq" in layer:
        q, k, v = q + layer["bq"], k + layer["bk"], v + layer["bv"]
    q = q.reshape(T, m.heads, hd)
    k = k.reshape(T, m.kv_heads, hd)
    v = v.reshape(T, m.kv_heads, hd)
    if "q_norm" in layer:  # Qwen3: RMSNorm of each head's q and k, before rope
        q = rms_norm(q, layer["q_norm"], m.eps)
        k = rms_norm(k, layer["k_norm"], m.eps)
    q = rope(q, m.inv_freq, m.interleaved)
    k = rope(k, m.inv_freq, m.interleaved)
    group = m.heads // m.kv_heads
    mask = np.triu(np.full((T, T), -np.inf), k=1)
    out = np.empty((T, m.heads, hd))
    for h in range(m.heads):
        kv = h // group
        s = q[:, h, :] @ k[:, kv, :].T / math.sqrt(hd) + mask
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        out[:, h, :] = (s / s.sum(axis=-1, keepdims=True)) @ v[:, kv, :]
    return out.reshape(T, m.heads * hd) @ layer["wo"].T


def forward(m, ids):
    """Logits [T, vocab] (float64) of every position."""
    x = m.embed[np.asarray(ids)]
    for layer in m.layers:
        x = x + attention(rms_norm(x, layer["attn_norm"], m.eps), layer, m)
        h = rms_norm(x, layer["ffn_norm"], m.eps)
        x = x + (silu(h @ layer["w_gate"].T) * (h @ layer["w_up"].T)) @ layer["w_down"].T
    x = rms_norm(x, m.norm, m.eps)
    return x @ (m.embed if m.head is None else m.head).T


def greedy(m, prompt, n):
    """n greedy ids after the prompt (end-of-generation tokens included: the caller decides)."""
    ids = list(prompt)
    for _ in range(n):
        ids.append(int(np.argmax(forward(m, ids)[-1])))  # the first highest logit
    return ids[len(prompt) :]


# ---- the checks ---------------------------------------------------------------------------------


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.failures = []

    def check(self, label, what, ok, detail):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append(f"{label}: {what}: {detail}")
        return ok


def run(cmd, timeout=600):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    except OSError as e:
        return 127, "", str(e)
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"
    return p.returncode, p.stdout, p.stderr


def wick_logits(args, model, ids, out, extra=()):
    cmd = [args.tool, "logits", model, "--ids", ",".join(map(str, ids)), "--device", args.device, "--kv", "f32",
           "--out", out, *extra]
    rc, _, err = run(cmd)
    if rc != 0:
        return None, f"llm_tool logits exited {rc}: {err.strip()[-300:]}"
    return np.load(out), ""


def wick_generate(args, model, ids, n):
    cmd = [args.tool, "generate", model, "--ids", ",".join(map(str, ids)), "-n", str(n), "--device", args.device,
           "--kv", "f32"]
    rc, out, err = run(cmd)
    if rc != 0:
        return None, f"llm_tool generate exited {rc}: {err.strip()[-300:]}"
    lines = [ln for ln in out.splitlines() if ln.strip()]
    try:
        return [int(t) for t in lines[-1].split()] if lines else [], ""
    except ValueError:
        return None, f"llm_tool generate printed {lines[-1][:200]!r}, not ids"


def check_text(args, res, label, what, model, m, tokenizer_json, out, tol):
    """A fixed prompt through wick's tokenizer (llm_tool encode): its ids must be those of the
    tokenizers package on the same vocabulary (tokenizer.json), where that package imports, and
    wick's logits for them the reference's."""
    rc, stdout, err = run([args.tool, "encode", model, "--text", TEXT])
    if not res.check(label, f"wick {what} encode", rc == 0, f"llm_tool encode exited {rc}: {err.strip()[-300:]}"):
        return f"{what}: encode failed"
    try:
        ids = [int(t) for t in stdout.strip().split(",")]
    except ValueError:
        res.check(label, f"wick {what} encode", False, f"printed {stdout.strip()[:200]!r}")
        return f"{what}: encode failed"
    note = ""
    try:
        from tokenizers import Tokenizer

        want = Tokenizer.from_file(tokenizer_json).encode(TEXT).ids
        res.check(label, f"wick {what} ids", ids == want, f"wick {ids}, tokenizers {want}")
        note = " = tokenizers" if ids == want else " != tokenizers"
    except ImportError:
        note = " (no tokenizers package)"
    w, msg = wick_logits(args, model, ids, out)
    if not res.check(label, f"wick {what} logits", w is not None, msg):
        return f"{what}: logits failed"
    e = rel_err(w, forward(m, ids))
    res.check(label, f"wick {what} logits", e <= tol, f"{e:.2e} > {tol:.0e}")
    return f"{what} {ids}{note} {e:.1e}"


def gpt2_byte_decoder():
    """GPT-2's byte-level symbols back to bytes: printable bytes stand for themselves, the others for
    the code points from U+0100 on, in byte order."""
    printable = [b for b in range(256) if 33 <= b <= 126 or 161 <= b <= 172 or 174 <= b <= 255]
    rest = [b for b in range(256) if b not in printable]
    table = {chr(b): b for b in printable}
    table.update({chr(256 + i): b for i, b in enumerate(rest)})
    return table


def token_bytes(token, byte_level, decoder):
    """The bytes a vocabulary string stands for: a byte-level token's symbols, or a SentencePiece
    piece (U+2581 as a space, <0xXX> as that byte)."""
    if byte_level:
        return bytes(decoder[c] for c in token)
    if len(token) == 6 and token.startswith("<0x") and token.endswith(">"):
        return bytes([int(token[3:5], 16)])
    return token.replace("\u2581", " ").encode()


def check_wick_run(args, res, label, what, model, m, vocab, tokenizer_json):
    """`wick run MODEL -p TEXT --temp 0` must print the prompt and then the bytes of the reference's
    greedy tokens for the prompt's ids (as the tokenizers package encodes the prompt), each token's
    bytes worked out here from its vocabulary string; control tokens print nothing."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return f"{what}: no tokenizers package"
    tok = Tokenizer.from_file(tokenizer_json)
    ids = tok.encode(TEXT).ids
    gen = greedy(m, ids, RUN_TOKENS)
    byte_level = "<0x41>" not in vocab.tokens  # SentencePiece vocabularies hold the byte tokens
    decoder = gpt2_byte_decoder()
    control = vocab.end_ids() | {vocab.bos}
    want = TEXT.encode() + b"".join(token_bytes(vocab.tokens[i], byte_level, decoder) for i in gen if i not in control)
    cmd = [args.wick, "run", model, "-p", TEXT, "-n", str(RUN_TOKENS), "--temp", "0", "--ignore-eos",
           "--device", args.device, "--kv", "f32"]
    r = subprocess.run(cmd, capture_output=True, timeout=600)
    if not res.check(label, f"wick run ({what})", r.returncode == 0, f"exited {r.returncode}: {r.stderr[-300:]!r}"):
        return f"{what}: wick run failed"
    got = r.stdout[:-1] if r.stdout.endswith(b"\n") else r.stdout
    ok = res.check(label, f"wick run ({what})", got == want, f"printed {got!r}, reference {want!r}")
    return f"wick run {what} {'=' if ok else '!='} reference"


def prompts(m, seed):
    """Token ids for the logits check and the generation prompt: BOS as the tokenizer adds it, then
    regular tokens (never a special one, so that the prompt is text a tokenizer could give)."""
    rng = np.random.default_rng(seed)
    specials = m.end_ids() | {m.bos}
    named = lambda i: i < len(m.tokens) and m.tokens[i].startswith("<")  # noqa: E731 (<s>, <0x0A>, <|im_end|>)
    regular = [i for i in range(m.vocab) if i not in specials and not named(i)]
    head = [m.bos] if m.add_bos and m.bos is not None else []
    pick = lambda n: head + [int(x) for x in rng.choice(regular, n - len(head))]  # noqa: E731
    return pick(LOGIT_TOKENS), pick(PROMPT_TOKENS)


def check_greedy(res, label, what, m, prompt, wick_ids, ref_ids, tol, exact):
    """exact: wick's ids must be the reference's. Otherwise each of wick's tokens must be within the
    tolerance of the reference's highest logit for wick's own sequence (ties may go either way).
    wick may stop early at an end-of-generation token, emitted or not."""
    n = len(wick_ids)
    end = m.end_ids()
    stop_ok = n == len(ref_ids) or (n > 0 and wick_ids[-1] in end) or (n < len(ref_ids) and ref_ids[n] in end)
    if not res.check(label, what + " length", stop_ok, f"wick stopped after {n} ids: {wick_ids}"):
        return "stopped early"
    same = next((i for i, (a, b) in enumerate(zip(wick_ids, ref_ids)) if a != b), n)
    if exact:
        detail = f"wick {wick_ids} vs reference {ref_ids[:n]}"
        if same < n:
            row = forward(m, list(prompt) + ref_ids[:same])[-1]
            top = np.sort(row)[::-1]
            detail += f"; first difference at {same}, the reference's top-2 gap there is {top[0] - top[1]:.2e}"
        res.check(label, what, same == n, detail)
        return f"{same}/{n} equal"
    if n == 0:
        return "0 ids"
    logits = forward(m, list(prompt) + wick_ids[:-1])[len(prompt) - 1 :]
    scale = max(1.0, float(np.max(np.abs(logits))))
    worst = max(float(logits[i].max() - logits[i][t]) / scale for i, t in enumerate(wick_ids))
    res.check(label, what, worst <= tol, f"a wick token is {worst:.2e} below the reference's best (bound {tol:.0e})")
    return f"{same}/{n} equal, worst gap {worst:.1e}"


class Transformers:
    def __init__(self, enabled):
        self.ok = False
        self.note = "disabled"
        if not enabled:
            return
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
            self.ok = True
            self.note = f"torch {torch.__version__}, transformers {transformers.__version__}"
        except Exception as e:  # torch may fail in more ways than ImportError
            self.note = f"not available ({type(e).__name__}: {e})"

    def logits(self, folder, ids):
        import torch
        import transformers
        from transformers import AutoModelForCausalLM

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()

        model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32, attn_implementation="eager")
        model.eval()
        with torch.no_grad():
            out = model(input_ids=torch.tensor([ids], dtype=torch.long)).logits[0]
        return out.double().numpy()


def check_combination(args, res, tf, arch, fmt, tied, workdir):
    label = f"{arch} {fmt}{' tied' if tied else ''}"
    out = os.path.join(workdir, f"{arch}-{fmt}{'-tied' if tied else ''}")
    cmd = [args.make, out, "--arch", arch, "--format", fmt, "--seed", str(args.seed)] + (["--tied"] if tied else [])
    rc, _, err = run(cmd)
    if not res.check(label, "llm_make", rc == 0, f"exited {rc}: {err.strip()}"):
        print(f"{label:<22} FAILED llm_make: {err.strip()}")
        return
    tol = tolerance(fmt, args.device)
    parts = []
    fails_before = res.failed
    gguf_path, hf_path = os.path.join(out, "model.gguf"), os.path.join(out, "hf")
    m = load_gguf(gguf_path)
    ids, prompt = prompts(m, args.seed)
    ref = forward(m, ids)
    ref_greedy = greedy(m, prompt, GENERATE_TOKENS)
    # Random weights may settle into one repeated token (a weak greedy check, not a wick failure).
    distinct = len(set(ref_greedy))
    parts.append(f"logit range {ref.min():.1f}..{ref.max():.1f}, {distinct} distinct greedy ids")
    if distinct == 1:
        parts.append("WARNING: the greedy ids are one token repeated; try another --seed")

    if "rope_freqs.weight" in [t.name for t in gguf.GGUFReader(gguf_path).tensors]:
        # The scaling must move the logits far more than the f32 tolerance, or wick ignoring it would pass.
        effect = rel_err(forward(load_gguf(gguf_path, ignore_rope_freqs=True), ids), ref)
        res.check(label, "rope scaling visible", effect > 20 * TOL_F32, f"changes the logits by {effect:.1e} only")
        parts.append(f"rope scaling moves logits {effect:.1e}")

    m_hf = ref_hf = None
    if os.path.isdir(hf_path):
        m_hf = load_hf(hf_path)
        ref_hf = forward(m_hf, ids)
        e = rel_err(ref_hf, ref)
        res.check(label, "reference gguf vs hf", e <= TOL_REF, f"{e:.2e} > {TOL_REF:.0e}")
        parts.append(f"ref gguf~hf {e:.1e}")
        if tf.ok:
            e = rel_err(tf.logits(hf_path, ids), ref_hf)
            res.check(label, "transformers vs reference", e <= TOL_TRANSFORMERS, f"{e:.2e} > {TOL_TRANSFORMERS:.0e}")
            parts.append(f"transformers {e:.1e}")

    if not args.reference_only:
        wick_g, msg = wick_logits(args, gguf_path, ids, os.path.join(out, "logits_gguf.npy"))
        if res.check(label, "wick logits (gguf)", wick_g is not None, msg):
            e = rel_err(wick_g, ref)
            res.check(label, "wick logits (gguf)", e <= tol, f"{e:.2e} > {tol:.0e} (shape {wick_g.shape})")
            parts.append(f"wick gguf {e:.1e}")
        if fmt == "f32":
            # Prefill in chunks of 7: the later chunks attend to the cache the earlier ones wrote.
            w, msg = wick_logits(args, gguf_path, ids, os.path.join(out, "logits_chunk.npy"), ["--chunk", "7"])
            if res.check(label, "wick logits (gguf, chunks of 7)", w is not None, msg):
                e = rel_err(w, ref)
                res.check(label, "wick logits (gguf, chunks of 7)", e <= tol, f"{e:.2e} > {tol:.0e}")
                parts.append(f"wick chunked {e:.1e}")
        gen, msg = wick_generate(args, gguf_path, prompt, GENERATE_TOKENS)
        if res.check(label, "wick greedy (gguf)", gen is not None, msg):
            s = check_greedy(res, label, "wick greedy (gguf)", m, prompt, gen, ref_greedy, tol, fmt == "f32")
            parts.append(f"greedy {s}")
        if m_hf is not None:
            wick_h, msg = wick_logits(args, hf_path, ids, os.path.join(out, "logits_hf.npy"))
            if res.check(label, "wick logits (hf)", wick_h is not None, msg):
                e = rel_err(wick_h, ref_hf)
                res.check(label, "wick logits (hf)", e <= tol, f"{e:.2e} > {tol:.0e}")
                parts.append(f"wick hf {e:.1e}")
                if fmt == "f32" and wick_g is not None:
                    e = rel_err(wick_h, wick_g)
                    res.check(label, "wick gguf vs hf", e <= TOL_F32, f"{e:.2e} > {TOL_F32:.0e}")
                    parts.append(f"wick gguf~hf {e:.1e}")
            if fmt == "f32":
                tok = os.path.join(hf_path, "tokenizer.json")
                for what, path, model in (("text gguf", gguf_path, m), ("text hf", hf_path, m_hf)):
                    npy = os.path.join(out, what.replace(" ", "_") + ".npy")
                    parts.append(check_text(args, res, label, what, path, model, tok, npy, tol))
                if args.wick:
                    for what, path, model in (("gguf", gguf_path, m), ("hf", hf_path, m_hf)):
                        parts.append(check_wick_run(args, res, label, what, path, model, m, tok))
                gen, msg = wick_generate(args, hf_path, prompt, GENERATE_TOKENS)
                if res.check(label, "wick greedy (hf)", gen is not None, msg):
                    s = check_greedy(res, label, "wick greedy (hf)", m_hf, prompt, gen, ref_greedy, tol, True)
                    parts.append(f"greedy hf {s}")
    status = "ok" if res.failed == fails_before else "FAILED"
    print(f"{label:<22} {status:<6} " + ", ".join(parts), flush=True)


def combinations(quick):
    if quick:
        return list(QUICK)
    combos = [(a, f, False) for a in ARCHS for f in MAIN_FORMATS]
    combos += [("llama3", f, False) for f in OTHER_FORMATS]
    combos.append(("llama3", "f32", True))
    return combos


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--make", required=True, help="the llm_make executable")
    p.add_argument("--tool", help="the llm_tool executable (not needed with --reference-only)")
    p.add_argument("--wick", help="the wick executable: also check `wick run` against the reference's text")
    p.add_argument("--device", default="cpu")
    p.add_argument("--quick", action="store_true", help="llama3 f32, qwen2 q4_k, qwen3 bf16, llama2 q8_0")
    p.add_argument("--reference-only", action="store_true", help="check the reference alone; no wick calls")
    p.add_argument("--no-transformers", action="store_true", help="skip the comparison with transformers")
    p.add_argument("--only", action="append", default=[], help="ARCH:FORMAT[:tied], repeatable")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--keep", help="write the models under this folder and keep them")
    args = p.parse_args()
    if not args.reference_only and not args.tool:
        p.error("--tool is required unless --reference-only")

    combos = combinations(args.quick)
    if args.only:
        combos = []
        for o in args.only:
            parts = o.split(":")
            combos.append((parts[0], parts[1], len(parts) > 2 and parts[2] == "tied"))

    tf = Transformers(not args.no_transformers)
    if not tf.ok:
        print(f"note: transformers comparison skipped: {tf.note}")
    else:
        print(f"transformers comparison on: {tf.note}")
    res = Results()
    workdir = args.keep or tempfile.mkdtemp(prefix="llm_reference_")
    os.makedirs(workdir, exist_ok=True)
    try:
        for arch, fmt, tied in combos:
            try:
                check_combination(args, res, tf, arch, fmt, tied, workdir)
            except Exception as e:  # a file the reference cannot read: record it and go on
                label = f"{arch} {fmt}{' tied' if tied else ''}"
                res.check(label, "reference", False, f"{type(e).__name__}: {e}")
                print(f"{label:<22} FAILED {type(e).__name__}: {e}", flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    for f in res.failures:
        print(f"FAIL {f}")
    print(f"llm_reference: {res.passed} passed, {res.failed} failed")
    return 1 if res.failed else 0


if __name__ == "__main__":
    sys.exit(main())
