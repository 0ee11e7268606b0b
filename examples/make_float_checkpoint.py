#!/usr/bin/env python3
"""A small float checkpoint for the README's worked example (standard library only).

Writes DIR/model-00001-of-00002.safetensors, DIR/model-00002-of-00002.safetensors and
DIR/model.safetensors.index.json: a toy transformer of N(0, 0.02) weights (F32 and BF16), biases,
a 1-D norm weight and a head whose K=100 the W4A8 kernels cannot take; plus DIR/input.safetensors
with activations `input` F32 [4, 256]. Deterministic (seeded).

    python3 examples/make_float_checkpoint.py /tmp/float-model
"""
import json
import os
import random
import struct
import sys

D = 256  # model width: K of most layers (a multiple of the default convrot_groupsize 256)


def encode(values, dtype):
    if dtype == "F32":
        return struct.pack("<%df" % len(values), *values)
    # BF16: the top half of the float32 bits, rounded to nearest even.
    out = bytearray()
    for v in values:
        (u,) = struct.unpack("<I", struct.pack("<f", v))
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        out += struct.pack("<H", u & 0xFFFF)
    return bytes(out)


def write_safetensors(path, tensors, metadata=None):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, data in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        # One optional directory; anything else (--help included) prints the usage, writing nothing.
        print(__doc__.strip(), file=sys.stderr if sys.argv[1] not in ("-h", "--help") else sys.stdout)
        return 0 if sys.argv[1] in ("-h", "--help") else 2
    out = sys.argv[1] if len(sys.argv) > 1 else "float-model"
    os.makedirs(out, exist_ok=True)
    rng = random.Random(20240611)

    def tensor(name, shape, dtype="F32", scale=0.02):
        n = 1
        for d in shape:
            n *= d
        return (name, dtype, shape, encode([rng.gauss(0.0, scale) for _ in range(n)], dtype))

    shards = [[], []]
    for b in range(2):
        s = shards[b]
        p = "blocks.%d." % b
        s.append(tensor(p + "attn.qkv.weight", [3 * D, D]))
        s.append(tensor(p + "attn.qkv.bias", [3 * D]))
        s.append(tensor(p + "attn.proj.weight", [D, D], "BF16"))
        s.append(tensor(p + "mlp.fc1.weight", [2 * D, D]))
        s.append(tensor(p + "mlp.fc1.bias", [2 * D], "BF16"))
        s.append(tensor(p + "mlp.fc2.weight", [D, 2 * D]))
        s.append(tensor(p + "norm.weight", [D], scale=1.0))
    shards[1].append(tensor("head.weight", [10, 100]))
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map = {}
    for name, tensors in zip(names, shards):
        write_safetensors(os.path.join(out, name), tensors, {"format": "pt"})
        for t in tensors:
            weight_map[t[0]] = name
    total = sum(len(t[3]) for s in shards for t in s)
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
    write_safetensors(os.path.join(out, "input.safetensors"), [tensor("input", [4, D], scale=1.0)])
    print("wrote %s: 2 shards + model.safetensors.index.json (%d tensors), input.safetensors" % (out, len(weight_map)))


if __name__ == "__main__":
    sys.exit(main())
