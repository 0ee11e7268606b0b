#!/usr/bin/env python3
"""Independent check of a `w4a8check quantize` output against its float input (numpy only; written from docs/gemm.md, not from the C++ code).

    quantized_model_check.py FLOAT_SHARD... -- QUANTIZED_SHARD...

For every layer P with P.comfy_quant (tensor or _quantization_metadata marker) it decodes the int8
grid w_q = clamp(rne(f32(value(code) * s_rel)), -127, 127) (4-bit rows of K/2 bytes or 6-bit rows of
K/2 + K/4 bytes; s_rel FP8 E4M3FN or F32), multiplies by s_channel, un-rotates
with the dense normalized Hadamard matrix (float64) and compares with the float weight P.weight of
the input: relative L2 error. Every other output tensor must equal the input tensor of the same
name byte for byte. Prints one JSON object: {"layers": {P: rel_l2}, "copied": N, "markers": {...}}.
"""
import json
import sys

import numpy as np


def fp8_table():
    t = np.zeros(256, dtype=np.float64)
    for b in range(256):
        s, e, m = b >> 7, (b >> 3) & 15, b & 7
        if e == 15 and m == 7:
            v = np.nan
        elif e == 0:
            v = m / 8.0 * 2.0 ** -6
        else:
            v = (1 + m / 8.0) * 2.0 ** (e - 7)
        t[b] = -v if s else v
    return t.astype(np.float32)


def hadamard(r):
    seed = np.array([[1, 1, 1, -1], [1, 1, -1, 1], [1, -1, 1, 1], [-1, 1, 1, 1]], dtype=np.float64)
    h = np.ones((1, 1))
    while h.shape[0] < r:
        h = np.kron(h, seed)
    return h / np.sqrt(r)


def read_all(paths):
    out, meta = {}, {}
    for p in paths:
        with open(p, "rb") as fh:
            data = fh.read()
        n = int.from_bytes(data[:8], "little")
        header = json.loads(data[8:8 + n])
        for k, v in header.items():
            if k == "__metadata__":
                meta.update(v)
                continue
            b, e = v["data_offsets"]
            out[k] = (v["dtype"], tuple(v["shape"]), data[8 + n + b:8 + n + e])
    return out, meta


def floats(dtype, shape, b):
    if dtype == "F32":
        return np.frombuffer(b, dtype="<f4").astype(np.float64).reshape(shape)
    if dtype == "F16":
        return np.frombuffer(b, dtype="<f2").astype(np.float64).reshape(shape)
    if dtype == "BF16":
        u = np.frombuffer(b, dtype="<u2").astype(np.uint32) << 16
        return u.view(np.float32).astype(np.float64).reshape(shape)
    raise ValueError(dtype)


def main(argv):
    sep = argv.index("--")
    src, src_meta = read_all(argv[1:sep])
    q, q_meta = read_all(argv[sep + 1:])
    markers = {}
    for k, (dt, sh, b) in q.items():
        if k.endswith(".comfy_quant"):
            markers[k[:-len(".comfy_quant")]] = json.loads(b)
    if "_quantization_metadata" in q_meta:
        for p, m in json.loads(q_meta["_quantization_metadata"])["layers"].items():
            markers.setdefault(p, m)
    table = fp8_table()
    layers = {}
    for p, m in sorted(markers.items()):
        if m.get("format") != "asym_w4a8_int8":
            continue
        g, r = int(m.get("group_size", 16)), int(m.get("convrot_groupsize", 256))
        _, (n, cols), wb = q[p + ".weight"]
        sd, (_, groups), sb = q[p + ".weight_s_rel"]
        k = groups * g  # K from the scale grid; the row width then gives the bit width
        bits = cols * 8 // k
        assert bits in (4, 6) and cols * 8 == k * bits, (p, cols, k)
        packed = np.frombuffer(wb, dtype=np.uint8).reshape(n, cols)
        codes = np.empty((n, k), dtype=np.int64)
        codes[:, 0::2] = packed[:, :k // 2] & 15
        codes[:, 1::2] = packed[:, :k // 2] >> 4
        if bits == 6:  # a K/4-byte plane of top 2 bits: column j at byte K/2 + j/4, bits 2*(j % 4)
            top = packed[:, k // 2:]
            j = np.arange(k)
            codes |= ((top[:, j // 4] >> (2 * (j % 4))) & 3).astype(np.int64) << 4
            vals = (codes - 32).astype(np.float32)
        elif p + ".weight_codebook" in q:
            cb = np.frombuffer(q[p + ".weight_codebook"][2], dtype="<f4")
            vals = cb[codes]
        else:
            vals = (codes - 8).astype(np.float32)
        if sd == "F32":
            s_rel = np.frombuffer(sb, dtype="<f4").reshape(n, groups)
        else:
            s_rel = table[np.frombuffer(sb, dtype=np.uint8).reshape(n, groups)]
        prod = (vals * np.repeat(s_rel, g, axis=1)).astype(np.float32)  # float32 product
        w_q = np.clip(np.rint(prod), -127, 127)  # rint: round half to even
        s_ch = np.frombuffer(q[p + ".weight_s_channel"][2], dtype="<f4").astype(np.float64)
        w_rot = w_q.astype(np.float64) * s_ch[:, None]
        h = hadamard(r)
        w = (w_rot.reshape(n, k // r, r) @ h).reshape(n, k)
        ref = floats(*src[p + ".weight"])
        layers[p] = float(np.linalg.norm(w - ref) / np.linalg.norm(ref))
    produced = {p + s for p in layers for s in (".weight", ".weight_s_rel", ".weight_s_channel",
                                                 ".weight_codebook", ".comfy_quant")}
    copied = 0
    for k, v in q.items():
        if k in produced:
            continue
        if k not in src or src[k] != v:
            print(json.dumps({"error": "tensor %s differs from the input" % k}))
            return 1
        copied += 1
    missing = sorted(set(src) - set(q) - {p + ".weight" for p in layers})
    if missing:
        print(json.dumps({"error": "input tensors missing from the output: %s" % missing[:5]}))
        return 1
    print(json.dumps({"layers": layers, "copied": copied, "markers": markers}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
