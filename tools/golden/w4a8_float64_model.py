#!/usr/bin/env python3
"""Independent float64 model of the asym_w4a8_int8 linear layer, written from the layer's definition
(docs/gemm.md; not from the C++ reference), producing the golden cases in corpus/golden/.

Each case file holds the layer (prefix "layer": weight, weight_s_rel, weight_s_channel, optional
weight_codebook / weight_correction / bias, comfy_quant marker), the activations `input` [M, K] (F32)
and the expected results:
  integer path:    w_q I8 [N, K], x_q I8 [M, K], x_scale F64 [M], acc I32 [M, N], out F64 [M, N]
  correction path: w_q I8 [N, K], w_dequant F64 [N, K], out F64 [M, N]
Expected floats are float64 (exact rationals where the case is exact); `__metadata__` says which cases
are "exact" (every float32 step of the spec is exact, so float32 results must match bit for bit) and
the model's checks that no integer result sits on a rounding boundary float32 could flip.

Usage: w4a8_float64_model.py OUT_DIR
"""
import json
import math
import struct
import sys
from fractions import Fraction

import numpy as np
from safetensors.numpy import save_file

LUT = [-0.980602, -0.794529, -0.638165, -0.500986, -0.377321, -0.263187, -0.155210, -0.050720,
       0.052541, 0.156985, 0.265284, 0.379533, 0.502636, 0.638953, 0.794876, 0.980671]
SEED4 = np.array([[1, 1, 1, -1], [1, 1, -1, 1], [1, -1, 1, 1], [-1, 1, 1, 1]], dtype=np.float64)


def fp8_value(b):
    """FP8 E4M3FN byte -> float (spec: bias 7, subnormal m/8 * 2^-6, 0x7F/0xFF NaN)."""
    sign = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 0xF, b & 7
    if e == 15 and m == 7:
        return math.nan
    if e == 0:
        return sign * m / 8.0 * 2.0 ** -6
    return sign * (1.0 + m / 8.0) * 2.0 ** (e - 7)


def hadamard(r):
    h = np.array([[1.0]])
    while h.shape[0] < r:
        h = np.kron(h, SEED4)
    return h / math.sqrt(r)


def rotate_rows(x, r):
    """x_block := x_block @ H_R for every block of R consecutive elements of each row."""
    h = hadamard(r)
    m, k = x.shape
    return (x.reshape(m, k // r, r) @ h).reshape(m, k)


def rne(v):
    """Round half to even (Python's round on floats is exactly that)."""
    return float(round(v))


def f32(v):
    return float(np.float32(v))


class Boundary(Exception):
    """A value sits so close to a rounding boundary that float32 evaluation might round differently."""


def check_margin(v, what):
    frac = abs(v - math.floor(v) - 0.5)
    if frac < 1e-4 * max(1.0, abs(v)) * 2.0 ** -10:
        raise Boundary(what)


def decode(codes, s_rel, codebook, g):
    n, k = codes.shape
    w = np.zeros((n, k), dtype=np.int64)
    for i in range(n):
        for j in range(k):
            c = int(codes[i, j])
            v = float(np.float32(codebook[c])) if codebook is not None else float(c - 8)
            s = fp8_value(int(s_rel[i, j // g]))
            exact = v * s  # exact in float64 (24 + 4 significant bits)
            # The spec's float32 product may round; flag any case where that could move rne().
            if f32(exact) != exact:
                lo, hi = sorted((exact, f32(exact)))
                if math.floor(lo + 0.5) != math.floor(hi + 0.5) or abs(abs(exact) % 1 - 0.5) < 1e-6:
                    raise Boundary("weight product")
            p = f32(exact)
            w[i, j] = int(max(-127, min(127, rne(p))))
    return w


def integer_path(x, w_q, s_channel, bias, r):
    m, k = x.shape
    x_rot = rotate_rows(x, r)
    x_q = np.zeros((m, k), dtype=np.int64)
    scale = np.zeros(m)
    for a in range(m):
        absmax = float(np.max(np.abs(x_rot[a]))) if k else 0.0
        scale[a] = max(absmax / 127.0, 1e-30)
        for j in range(k):
            q = x_rot[a, j] / scale[a]
            if absmax > 0:
                check_margin(q, "activation quantization")
            x_q[a, j] = int(max(-128, min(127, rne(q))))
    acc = x_q @ w_q.T
    out = acc.astype(np.float64) * (scale[:, None] * s_channel[None, :])
    if bias is not None:
        out = out + bias[None, :]
    return x_q, scale, acc, out


def correction_path(x, w_q, s_channel, correction, bias, g, r):
    n, k = w_q.shape
    groups = np.arange(k) // g
    w_rot = w_q.astype(np.float64) * s_channel[:, None] + correction[groups, :].T
    w = rotate_rows(w_rot, r)  # H is its own inverse
    out = x @ w.T
    if bias is not None:
        out = out + bias[None, :]
    return w, out


def pack(codes):
    lo = codes[:, 0::2].astype(np.uint8) & 0xF
    hi = codes[:, 1::2].astype(np.uint8) & 0xF
    return (lo | (hi << 4)).astype(np.uint8).view(np.int8)


def bf16_bytes(values):
    """float64 values exactly representable in bf16 -> little-endian BF16 bytes."""
    out = bytearray()
    for v in values:
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        assert bits & 0xFFFF == 0, "bias must be exact in bf16"
        out += struct.pack("<H", bits >> 16)
    return bytes(out)


def make_case(name, rng, m, n, k, g, r, *, codebook, correction=False, bias=None, exact=False):
    codes = rng.integers(0, 16, size=(n, k))
    if exact:
        # Power-of-two group scales and uniform codes: every weight product is exact.
        s_rel = rng.choice([0x30, 0x38, 0x40, 0x48], size=(n, k // g)).astype(np.uint8)
        s_channel = np.float32(2.0) ** rng.integers(-6, 0, size=n).astype(np.float32)
    else:
        s_rel = rng.integers(0x28, 0x58, size=(n, k // g)).astype(np.uint8)
        s_channel = (rng.integers(1, 1000, size=n) / 1024.0).astype(np.float32)
    cb = np.array(LUT, dtype=np.float32) if codebook else None
    x = rng.integers(-20, 21, size=(m, k)).astype(np.float64)
    if exact:
        # Rotated rows whose absmax is 127 * 2^e make the scale a power of two: place one spike
        # of 127 * sqrt(R) at the start of a block (its rotation is +-127 * 2^0 ... exactly).
        x[:, :] = 0
        for a in range(m):
            base = r * int(rng.integers(0, k // r))
            x[a, base] = 127 * math.sqrt(r) * 2.0 ** int(rng.integers(-3, 2))
            # small integer perturbations elsewhere keep |x_rot| below the spike's entries
            others = [j for j in range(k) if j // r != base // r]
            for j in rng.choice(others, size=min(len(others), 5), replace=False) if others else []:
                x[a, j] = float(rng.integers(-8, 9)) * math.sqrt(r) / 8
    w_q = decode(codes, s_rel, cb, g)
    tensors = {
        "layer.weight": pack(codes),
        "layer.weight_s_rel": s_rel,  # relabelled F8_E4M3 below
        "layer.weight_s_channel": s_channel,
        "input": x.astype(np.float32),
        "w_q": w_q.astype(np.int8),
    }
    assert np.array_equal(tensors["input"].astype(np.float64), x)
    if cb is not None:
        tensors["layer.weight_codebook"] = cb
    b64 = None
    if bias is not None:
        b64 = np.array(bias, dtype=np.float64)
        tensors["layer.bias"] = b64.astype(np.float32)
    sc = s_channel.astype(np.float64)
    if correction:
        corr = (rng.integers(-64, 65, size=(k // g, n)) / 256.0).astype(np.float32)
        tensors["layer.weight_correction"] = corr
        w, out = correction_path(x, w_q, sc, corr.astype(np.float64), b64, g, r)
        tensors["w_dequant"] = w
        tensors["out"] = out
    else:
        x_q, scale, acc, out = integer_path(x, w_q, sc, b64, r)
        assert np.max(np.abs(acc)) < 2**31
        tensors["x_q"] = x_q.astype(np.int8)
        tensors["x_scale"] = scale
        tensors["acc"] = acc.astype(np.int32)
        tensors["out"] = out
    marker = json.dumps({"format": "asym_w4a8_int8", "group_size": g, "convrot": True, "convrot_groupsize": r})
    tensors["layer.comfy_quant"] = np.frombuffer(marker.encode(), dtype=np.uint8)
    meta = {"case": name, "exact": "1" if exact else "0", "M": str(m), "N": str(n), "K": str(k),
            "group_size": str(g), "convrot_groupsize": str(r), "model": "float64 numpy, from w4a8-gemm.md"}
    return tensors, meta


def relabel_fp8(path):
    """safetensors' numpy API has no FP8 dtype: rewrite the s_rel entry's dtype U8 -> F8_E4M3
    (same byte size, so the data offsets stay valid)."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header["layer.weight_s_rel"]["dtype"] = "F8_E4M3"
    # The crate writes __metadata__ from a hash map (unordered): sort it so output is reproducible.
    if "__metadata__" in header:
        header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data[8 + n:])


CASES = [
    # name, seed, M, N, K, G, R, options
    ("exact_uniform_r4", 1, 3, 5, 32, 16, 4, dict(codebook=False, exact=True)),
    ("exact_uniform_r16_bias", 2, 4, 7, 64, 8, 16, dict(codebook=False, exact=True, bias=[0.5, -1.25, 2.0, 0.0, 3.5, -0.75, 1.0])),
    ("exact_uniform_r64_g4", 3, 2, 9, 128, 4, 64, dict(codebook=False, exact=True)),
    ("integer_codebook_r16", 4, 7, 13, 96, 16, 16, dict(codebook=True)),
    ("integer_uniform_r256_g32", 5, 5, 11, 256, 32, 256, dict(codebook=False)),
    ("integer_codebook_r64_g48_bias", 6, 3, 6, 192, 48, 64, dict(codebook=True, bias=[0.25, -0.5, 1.0, 2.0, -4.0, 0.125])),
    ("correction_codebook_r16", 7, 4, 10, 64, 16, 16, dict(codebook=True, correction=True)),
    ("correction_uniform_r4_bias", 8, 2, 5, 48, 16, 4, dict(codebook=False, correction=True, bias=[1.0, -2.0, 0.5, 0.0, 0.25])),
]


def main():
    out_dir = sys.argv[1]
    for name, seed, m, n, k, g, r, opts in CASES:
        for attempt in range(50):
            rng = np.random.default_rng(seed * 1000 + attempt)
            try:
                tensors, meta = make_case(name, rng, m, n, k, g, r, **opts)
                break
            except Boundary:
                continue
        else:
            raise SystemExit(f"{name}: every attempt hit a rounding boundary")
        meta["attempt"] = str(attempt)
        path = f"{out_dir}/{name}.safetensors"
        save_file(tensors, path, metadata=meta)
        relabel_fp8(path)
        print(path)


if __name__ == "__main__":
    main()
