#!/usr/bin/env python3
"""Writes the bundled example checkpoints in examples/ (deterministic; numpy + safetensors).

flux-tiny-w4a8.safetensors: two asym_w4a8_int8 layers shaped like a (very) narrow Flux double block
  (N=64, K=256, G=16, R=256), one with a codebook and bias and its marker in a .comfy_quant tensor, one
  uniform with its marker in __metadata__._quantization_metadata, plus an unquantized norm weight.
broken-rank.safetensors: the same with a 3-D packed weight, which sglang rejects.
"""
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent / "examples"


def layer(rng, prefix, n, k, g, codebook, bias):
    t = {
        f"{prefix}.weight": rng.integers(-128, 128, size=(n, k // 2), dtype=np.int8),
        # FP8 e4m3fn bytes 0x30..0x3f are finite scales in [0.5, 1): never the NaN patterns 0x7f/0xff.
        f"{prefix}.weight_s_rel": rng.integers(0x30, 0x40, size=(n, k // g), dtype=np.uint8),
        f"{prefix}.weight_s_channel": (rng.random(n, dtype=np.float32) * 0.01 + 0.001).astype(np.float32),
    }
    if codebook:
        t[f"{prefix}.weight_codebook"] = np.linspace(-8, 7, 16, dtype=np.float32)
    if bias:
        t[f"{prefix}.bias"] = rng.standard_normal(n).astype(np.float32)
    return t


def save_file(tensors, path, metadata=None, dtypes=None):
    """Minimal safetensors writer (numpy has no FP8 dtype; F8_E4M3 tensors are given as uint8 bytes)."""
    names = {np.dtype(np.int8): "I8", np.dtype(np.uint8): "U8", np.dtype(np.float32): "F32"}
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name])
        raw = arr.tobytes()
        dtype = (dtypes or {}).get(name, names[arr.dtype])
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little") + text + b"".join(blobs))


def marker_bytes(obj):
    return np.frombuffer(json.dumps(obj).encode(), dtype=np.uint8).copy()


def main():
    rng = np.random.default_rng(20261129)
    marker = {"format": "asym_w4a8_int8", "group_size": 16, "convrot": True, "convrot_groupsize": 256}
    a = "double_blocks.0.img_attn.qkv"
    b = "double_blocks.0.img_mlp.0"
    tensors = {}
    tensors.update(layer(rng, a, 64, 256, 16, codebook=True, bias=True))
    tensors.update(layer(rng, b, 64, 256, 16, codebook=False, bias=False))
    tensors[f"{a}.comfy_quant"] = marker_bytes(marker)
    tensors["double_blocks.0.img_norm.weight"] = np.ones(64, dtype=np.float32)
    meta = {"_quantization_metadata": json.dumps({"format_version": "1.0", "layers": {b: marker}})}
    ROOT.mkdir(exist_ok=True)
    fp8 = {name: "F8_E4M3" for name in tensors if name.endswith(".weight_s_rel")}
    save_file(tensors, str(ROOT / "flux-tiny-w4a8.safetensors"), metadata=meta, dtypes=fp8)

    broken = dict(tensors)
    broken[f"{a}.weight"] = broken[f"{a}.weight"].reshape(8, 8, 128)
    save_file(broken, str(ROOT / "broken-rank.safetensors"), metadata=meta, dtypes=fp8)
    return 0


if __name__ == "__main__":
    sys.exit(main())
