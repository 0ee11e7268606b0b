#!/usr/bin/env python3
"""Does comfy-kitchen read a `w4a8check quantize` layer the way w4a8check's reference does?

    CK_PYTHON ck_quantize_check.py FLOAT_SHARD... -- [QUANTIZED.safetensors PREFIX KEY GEMM_OUT.safetensors]...

Runs in a Python with torch and comfy-kitchen 0.2.40 (tools/upstream/ck_env.sh). For layer PREFIX of
QUANTIZED (written from the float tensor KEY of FLOAT_SHARD...) it
  - runs comfy-kitchen's w4a8_int8_linear on it (its operand validation must accept it);
  - decodes it with comfy-kitchen's _dequant_int4_grouped_to_int8 and compares with `w_q` of
    GEMM_OUT (`w4a8check gemm --intermediates` on the same layer): must be identical;
  - quantizes the float weight with comfy-kitchen's own quantize_w4a8_int8_weight (same bits,
    scale dtype, G, R, uniform codes) and compares the layout (dtype and shape of every tensor) and the
    relative L2 weight error of both (comfy-kitchen's dequantize_w4a8_int8_weight on each).
Prints one JSON object per quadruple, a line each: {"linear": "ok" | error, "w_q_equal": bool,
"layout_equal": bool, "layout": {...}, "rel_l2_ours": x, "rel_l2_ck": y, "comfy_kitchen": VERSION}.
"""
import importlib.metadata
import json
import sys

import torch
from safetensors.torch import load_file
from comfy_kitchen.backends.eager import w4a8_int8 as ck


def main(argv):
    sep = argv.index("--")
    floats = {}
    for f in argv[1:sep]:
        floats.update(load_file(f))
    rest = argv[sep + 1:]
    for i in range(0, len(rest), 4):
        check(floats, *rest[i:i + 4])
    return 0


def check(floats, qpath, p, key, gout):
    q = load_file(qpath)
    with open(qpath, "rb") as fh:  # the marker: G and R
        n = int.from_bytes(fh.read(8), "little")
        h = json.loads(fh.read(n))
    b, e = h[p + ".comfy_quant"]["data_offsets"]
    with open(qpath, "rb") as fh:
        fh.seek(8 + n + b)
        m = json.loads(fh.read(e - b))
    g, r = int(m.get("group_size", 16)), int(m.get("convrot_groupsize", 256))
    w, s_rel, s_ch = q[p + ".weight"], q[p + ".weight_s_rel"], q[p + ".weight_s_channel"]
    cb = q.get(p + ".weight_codebook")
    k = s_rel.shape[1] * g
    bits = w.shape[1] * 8 // k
    out = {"comfy_kitchen": importlib.metadata.version("comfy-kitchen"), "bits": bits}
    try:
        ck.w4a8_int8_linear(torch.randn(2, k), w, s_rel, s_ch, cb, None, None, g, r, out_dtype=torch.float32)
        out["linear"] = "ok"
    except Exception as ex:
        out["linear"] = type(ex).__name__ + ": " + str(ex)
    out["w_q_equal"] = bool(torch.equal(ck._dequant_int4_grouped_to_int8(w, s_rel, cb, g), load_file(gout)["w_q"]))
    ref = floats[key].float()
    kw = dict(symmetric=True, codebook=cb is not None, group_size=g, convrot_groupsize=r, scale_dtype=s_rel.dtype)
    if "bits" in ck.quantize_w4a8_int8_weight.__code__.co_varnames:
        kw["bits"] = bits
    cq, cs, cc, _, ccb = ck.quantize_w4a8_int8_weight(ref, **kw)
    ours_layout = {"weight": [str(w.dtype), list(w.shape)], "s_rel": [str(s_rel.dtype), list(s_rel.shape)],
                   "s_channel": [str(s_ch.dtype), list(s_ch.shape)], "codebook": cb is not None}
    ck_layout = {"weight": [str(cq.dtype), list(cq.shape)], "s_rel": [str(cs.dtype), list(cs.shape)],
                 "s_channel": [str(cc.dtype), list(cc.shape)], "codebook": ccb is not None}
    out["layout"] = ours_layout
    out["layout_equal"] = ours_layout == ck_layout
    if not out["layout_equal"]:
        out["ck_layout"] = ck_layout

    def rel(qd, sr, sc, codebook):
        d = ck.dequantize_w4a8_int8_weight(qd, sr, sc, codebook=codebook, correction=None, group_size=g,
                                           convrot_groupsize=r, output_dtype=torch.float32)
        return float((d.double() - ref.double()).norm() / ref.double().norm())

    out["rel_l2_ours"] = rel(w, s_rel, s_ch, cb)
    out["rel_l2_ck"] = rel(cq, cs, cc, ccb)
    print(json.dumps(out, sort_keys=True), flush=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
