#!/usr/bin/env python3
"""comfy-kitchen's own verdict on each asym_w4a8_int8 layer of safetensors files, from the headers.

    PYTHONPATH=[ck-pkgs/VERSION] CK_PYTHON ck_operands_check.py FILE...

Runs in a Python with torch and comfy-kitchen (tools/upstream/ck_env.sh). For every layer P with a
P.comfy_quant marker whose format is asym_w4a8_int8, it builds zero tensors of the dtypes and shapes
the header gives P.weight, .weight_s_rel, .weight_s_channel (and .weight_codebook /
.weight_correction / .bias when present), takes G and R as int() of the marker's values (16 and 256
when absent) and an F32 input of zeros [1, K] with K = s_rel.shape[1] * G (2 * weight.shape[1] when
s_rel is not 2-D), and calls comfy-kitchen's w4a8_int8_linear. Prints one JSON object:
{"comfy_kitchen": VERSION, "layers": {FILE: {P: "ok" | "Type: message" | "missing NAME"}}}.
"""
import importlib.metadata
import json
import struct
import sys

import torch
from comfy_kitchen.backends.eager import w4a8_int8 as ck

DTYPES = {"I8": torch.int8, "U8": torch.uint8, "F32": torch.float32, "F16": torch.float16,
          "BF16": torch.bfloat16, "F8_E4M3": torch.float8_e4m3fn, "I32": torch.int32, "F64": torch.float64}


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        start = 8 + n
        return h, start, path


def marker_of(path, h, start, name):
    b, e = h[name]["data_offsets"]
    with open(path, "rb") as f:
        f.seek(start + b)
        return json.loads(f.read(e - b))


def zeros(desc):
    dt = DTYPES[desc["dtype"]]
    t = torch.zeros(desc["shape"], dtype=torch.float32)
    return t.to(dt)


def verdict(h, p, m):
    need = {}
    for s in (".weight", ".weight_s_rel", ".weight_s_channel"):
        if p + s not in h:
            return "missing " + repr(p + s)
        need[s] = zeros(h[p + s])
    opt = {s: zeros(h[p + s]) if p + s in h else None for s in (".weight_codebook", ".weight_correction", ".bias")}
    try:
        g = int(m.get("group_size", 16))
        r = int(m.get("convrot_groupsize", 256))
    except Exception as e:  # what int() raises: the loader's first error
        return type(e).__name__ + ": " + str(e)
    sr = h[p + ".weight_s_rel"]["shape"]
    w = h[p + ".weight"]["shape"]
    k = sr[1] * g if len(sr) == 2 else (2 * w[1] if len(w) == 2 else 0)
    try:
        x = torch.zeros((1, k), dtype=torch.float32)
    except Exception as e:  # K beyond torch's int64 sizes: no input can be built for the layer at all
        return "no input [1, %d]: %s: %s" % (k, type(e).__name__, str(e).splitlines()[0])
    try:
        ck.w4a8_int8_linear(x, need[".weight"], need[".weight_s_rel"], need[".weight_s_channel"],
                            opt[".weight_codebook"], opt[".weight_correction"], opt[".bias"], g, r,
                            out_dtype=torch.float32)
        return "ok"
    except Exception as e:
        return type(e).__name__ + ": " + str(e)


def main(argv):
    out = {}
    for path in argv[1:]:
        h, start, _ = header(path)
        layers = {}
        for name in sorted(h):
            if not name.endswith(".comfy_quant"):
                continue
            p = name[: -len(".comfy_quant")]
            m = marker_of(path, h, start, name)
            if m.get("format") == "asym_w4a8_int8":
                layers[p] = verdict(h, p, m)
        out[path] = layers
    print(json.dumps({"comfy_kitchen": importlib.metadata.version("comfy-kitchen"), "layers": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
