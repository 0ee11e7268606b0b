#!/usr/bin/env python3
"""Live comfy-kitchen oracle for the W4A8 reference GEMM.

Runs INSIDE the comfy-kitchen environment (tools/upstream/ck_env.sh): comfy-kitchen quantizes
random float weights (every storage variant), its eager backend runs them on random activations,
and every upstream value we compare against is written to safetensors files. Malformed operand
sets (one or several defects at once) record the first exception upstream raises. Nothing of
comfy-kitchen is copied: its functions are called.

  ck_oracle.py gen --out DIR [--set quick|golden|full] [--seed S] [--errors N]
  ck_oracle.py run --out DIR --compare BUILD/tests/gemm/w4a8_ck_compare [--set full] [--profile V]

`gen` writes DIR/case_*.safetensors (one layer, several activation runs) and
DIR/operand_errors.safetensors; `run` then calls the C++ comparer on DIR and prints its table.
File layout (read by tests/gemm/ck_case.cpp):
  layer.weight / .weight_s_rel / .weight_s_channel [/ .weight_codebook / .weight_correction / .bias]
  expect.w_q                      I8 [N, K]   upstream _dequant_int4_grouped_to_int8
  run{r}.input                    F32|BF16|F16 [M, K]
  run{r}.x_q, .x_scale, .acc      integer path: upstream's rotation + quantize_int8_rowwise + mm_int8
  run{r}.w_dequant                correction path: upstream dequantize_w4a8_int8_weight(x.dtype)
  run{r}.out                      upstream w4a8_int8_linear(..., out_dtype = run{r}.out_dtype)
  metadata: group_size, convrot_groupsize, bits, codebook, scale_dtype, correction, runs,
            run{r}.act (f32, bf16, f16), run{r}.out_dtype (absent: the activation dtype),
            run{r}.exact ("1": out and w_dequant must match bit for bit), run{r}.error (upstream
            exception "Type: message", when it raised), versions.
The golden set pins torch's CPU kernels (ATen AVX2, MKL COMPATIBLE, no oneDNN; see PINNED) so that
corpus/golden/ck is byte-reproducible on any x86-64 CPU with AVX2.
The quick and full sets end with hand-built cases (make_special_cases; the golden set has none, so
corpus/golden/ck stays reproducible): a correction-path layer with a bias whose every float32 sum is
exact in any order (so torch's summation order cannot matter and the output must be bit-exact, BF16
and F16 activations, eager policy, out in the activation dtype and in F32), and integer-path layers
run on activations with max|x| up to 3e38 (the rotation must stay finite where upstream's does).
Operand sets: e{i}.weight/.weight_s_rel/.weight_s_channel[/.weight_codebook/.weight_correction],
e{i}.input; metadata e{i}.group_size, e{i}.convrot_groupsize, e{i}.expect ("ok" or "Type: message"),
e{i}.defects.
"""
import argparse
import importlib.metadata
import inspect
import os
import platform
import random
import subprocess
import sys
import time

import json
import struct


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("gen", "run"):
        p = sub.add_parser(name)
        p.add_argument("--out", required=True)
        p.add_argument("--set", choices=["quick", "golden", "full"], default="quick" if name == "gen" else "full")
        p.add_argument("--seed", type=int, default=20261101)
        p.add_argument("--errors", type=int, default=None)
        if name == "run":
            p.add_argument("--compare", required=True, help="path of the w4a8_ck_compare binary")
            p.add_argument("--profile", default=None, help="our comfy-kitchen profile (default: the newest "
                                                              "row not newer than the installed version)")
    return ap.parse_args()


# torch picks its float kernels by CPU, and their last bits differ: ATen's reductions and bf16 GEMM come
# in AVX2 and AVX-512 builds, MKL picks its sgemm/sgemv branch by CPU and vendor, oneDNN runs bf16
# matmuls on AVX-512 hosts. The first golden set (written, by its date, on the project's AVX-512 Xeon)
# regenerated on an AVX2 EPYC with the F32 tensors of 20 of its 31 files apart in the last bits. So the
# golden set runs one kernel choice on every x86-64 CPU with AVX2: ATen's AVX2 kernels, MKL's COMPATIBLE
# branch (the only one MKL honours on AMD too), no oneDNN, one thread (generate). Both variables are
# read once, when torch first needs them: set before the import.
ARGS = parse_args() if __name__ == "__main__" else None
PINNED = ARGS is not None and ARGS.set == "golden"
if PINNED:
    os.environ["ATEN_CPU_CAPABILITY"] = "avx2"
    os.environ["MKL_CBWR"] = "COMPATIBLE"

import torch  # after the pin

if PINNED:
    # ATen trusts the variable: AVX2 kernels on a CPU without AVX2 die of SIGILL. Exit 3 says "cannot
    # pin here" (gemm.CkLive.GoldenSetRegeneratesByteForByte skips on it), before any kernel runs.
    if not torch.cpu._is_avx2_supported():
        print("ck_oracle: the golden set is pinned to torch's AVX2 kernels; this CPU has no AVX2", file=sys.stderr)
        sys.exit(3)
    torch.backends.mkldnn.enabled = False

from safetensors.torch import save as st_save

from comfy_kitchen.backends.eager import quantization as ckq
from comfy_kitchen.backends.eager import w4a8_int8 as ck
from comfy_kitchen.tensor import int8_utils as cku

CK_VERSION = importlib.metadata.version("comfy-kitchen")
HAS_BITS = "bits" in inspect.signature(ck.quantize_w4a8_int8_weight).parameters

G4 = [4, 8, 16, 32, 48, 64, 128]      # legal group sizes exercised at 4 bits
G6 = [16, 32, 48, 64, 128]            # ... at 6 bits (multiples of 16)
RS = [16, 64, 256]
MS = [1, 3, 17]


def lcm(*xs):
    out = 1
    for x in xs:
        a, b = out, x
        while b:
            a, b = b, a % b
        out = out * x // a
    return out


def kinds():
    """Every storage variant: (bits, codebook, scale_dtype, correction)."""
    out = []
    for cb in (True, False):
        for sd in ("fp8", "f32"):
            for corr in (False, True):
                out.append((4, cb, sd, corr))
    if HAS_BITS:
        for sd in ("fp8", "f32"):
            out.append((6, False, sd, False))
    return out


def layer_specs(which, rng):
    """(bits, codebook, scale_dtype, correction, G, R, N, K, runs) per layer of a set."""
    specs = []
    if which == "full":
        for bits, cb, sd, corr in kinds():
            for g in (G6 if bits == 6 else G4):
                for r in RS:
                    unit = lcm(16, g, r, 32 if bits == 6 else 16)
                    k = unit * (1 if unit >= 256 else rng.choice([1, 2]))
                    n = rng.choice([5, 8, 13, 17, 24, 33, 40])
                    runs = [(a, m) for a in ("f32", "bf16") for m in MS]
                    specs.append((bits, cb, sd, corr, g, r, n, k, runs))
    elif which == "golden":
        i = 0
        for bits, cb, sd, corr in kinds():
            for r in RS:
                gs = G6 if bits == 6 else G4
                g = gs[i % len(gs)]
                i += 1
                unit = lcm(16, g, r, 32 if bits == 6 else 16)
                n = rng.choice([3, 5, 9, 13])
                runs = [("f32", rng.choice(MS)), ("bf16", rng.choice(MS))]
                specs.append((bits, cb, sd, corr, g, r, n, unit, runs))
    else:  # quick: one layer per storage variant, small
        for j, (bits, cb, sd, corr) in enumerate(kinds()):
            g = (G6 if bits == 6 else G4)[j % 3 + 1]
            r = RS[j % len(RS)]
            unit = lcm(16, g, r, 32 if bits == 6 else 16)
            runs = [("f32", MS[j % 3]), ("bf16", MS[(j + 1) % 3])]
            specs.append((bits, cb, sd, corr, g, r, 7, unit, runs))
    return specs


def save_file(tensors, path, metadata):
    """safetensors file with a byte-reproducible header (metadata keys sorted; the library's map
    order varies between runs), written to a temporary name and renamed."""
    raw = st_save(tensors, metadata=metadata)
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(header, separators=(",", ":"), sort_keys=False).encode()
    text += b" " * (-len(text) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + raw[8 + n:])
    os.replace(tmp, path)


def err_text(e):
    return f"{type(e).__name__}: {e}"


def float_weights(n, k, gen, heavy):
    w = torch.randn(n, k, generator=gen, dtype=torch.float32)
    if heavy:  # heavy-tailed rows make comfy-kitchen fit its own codebook instead of the fixed one
        w = w * torch.randn(n, k, generator=gen).abs().pow(3)
    return w * 0.05


def integer_intermediates(t, p, x, r, k):
    """Upstream's integer path for activations x [M, K] into t under prefix p: its rotation,
    rowwise int8 quantization and int8 GEMM against expect.w_q."""
    h = cku._build_hadamard(r, device=x.device, dtype=x.dtype)
    xr = cku._rotate_activation(x, h, r).reshape(-1, k)
    x_q, x_scale = ckq.quantize_int8_rowwise(xr)
    t[p + "x_q"] = x_q.contiguous()
    t[p + "x_scale"] = x_scale.reshape(-1).float().contiguous()
    t[p + "acc"] = ckq.mm_int8(x_q, t["expect.w_q"].T.contiguous()).contiguous()


def make_case(idx, spec, gen, rng, out_dir):
    bits, cb, sd, corr, g, r, n, k, runs = spec
    w = float_weights(n, k, gen, heavy=(idx % 5 == 4))
    scale_dtype = torch.float8_e4m3fn if sd == "fp8" else torch.float32
    kwargs = dict(group_size=g, convrot_groupsize=r, scale_dtype=scale_dtype)
    if HAS_BITS:
        kwargs["bits"] = bits
    symmetric = not (corr and not cb)
    qdata, s_rel, s_channel, correction, codebook = ck.quantize_w4a8_int8_weight(
        w, symmetric=symmetric, codebook=cb, **kwargs)
    if corr and correction is None:  # a codebook layer with a correction term: built by hand
        correction = (torch.randn(k // g, n, generator=gen) * 0.01).float()
    if correction is not None:
        correction = correction.float().contiguous()
    bias = None
    if rng.random() < 0.6:
        bias = (torch.randn(n, generator=gen) * 0.1).to(rng.choice([torch.float32, torch.bfloat16]))
    t = {"layer.weight": qdata, "layer.weight_s_rel": s_rel, "layer.weight_s_channel": s_channel}
    if codebook is not None:
        t["layer.weight_codebook"] = codebook.float().contiguous()
    if correction is not None:
        t["layer.weight_correction"] = correction
    if bias is not None:
        t["layer.bias"] = bias
    t["expect.w_q"] = ck._dequant_int4_grouped_to_int8(qdata, s_rel, codebook, g)
    meta = {"group_size": str(g), "convrot_groupsize": str(r), "bits": str(bits),
            "codebook": str(int(codebook is not None)), "scale_dtype": sd,
            "correction": str(int(correction is not None)), "runs": str(len(runs)),
            "comfy_kitchen": CK_VERSION, "torch": torch.__version__}
    for ri, (act, m) in enumerate(runs):
        dt = torch.float32 if act == "f32" else torch.bfloat16
        x = torch.randn(m, k, generator=gen, dtype=torch.float32)
        if rng.random() < 0.3:
            x[:, rng.randrange(k)] *= 40.0  # an outlier channel, as real activations have
        x = x.to(dt)
        p = f"run{ri}."
        t[p + "input"] = x
        meta[p + "act"] = act
        if correction is None:
            integer_intermediates(t, p, x, r, k)
        else:
            t[p + "w_dequant"] = ck.dequantize_w4a8_int8_weight(
                qdata, s_rel, s_channel, codebook=codebook, correction=correction, group_size=g,
                convrot_groupsize=r, output_dtype=dt).contiguous()
        try:
            t[p + "out"] = ck.w4a8_int8_linear(x, qdata, s_rel, s_channel, codebook, correction, bias,
                                               g, r, out_dtype=dt).contiguous()
        except Exception as e:  # an upstream failure: recorded, not compared
            meta[p + "error"] = err_text(e)
    name = f"case_{idx:03d}_b{bits}_{'cb' if codebook is not None else 'u'}_{sd}_{'corr' if corr else 'int'}_g{g}_r{r}.safetensors"
    save_file({k2: v.contiguous() for k2, v in t.items()}, os.path.join(out_dir, name), metadata=meta)
    return name


# ---- malformed operand sets ----------------------------------------------------------------------

DEFECTS = ["weight_dtype", "weight_rank", "s_rel_rank", "group_size", "row_width", "k_zero",
           "six_bit_k32", "six_bit_g16", "six_bit_codebook", "six_bit_correction", "k_not16",
           "k_not_r", "r_zero", "r_not_pow4", "s_rel_rows", "s_channel_shape", "correction_shape",
           "codebook_shape", "input_k", "input_0d", "s_rel_dtype", "input_dtype"]


def operand_set(rng):
    """A valid small operand set, then 0-4 defects; returns (tensors, G, R, defects)."""
    bits = rng.choice([4, 6] if HAS_BITS else [4])
    g = rng.choice([16, 32] if bits == 6 else [4, 8, 16, 32])
    r = rng.choice([4, 16, 64])
    k = lcm(16, g, r, 32 if bits == 6 else 16) * rng.choice([1, 2])
    n, m = rng.randint(1, 6), rng.randint(1, 2)
    cols = k * bits // 8
    groups = k // g  # shapes below use the valid set's sizes, whatever defects change g or K later
    shapes = {"weight": [n, cols], "s_rel": [n, k // g], "s_channel": [n], "input": [m, k]}
    dtypes = {"weight": torch.int8, "s_rel": rng.choice([torch.float8_e4m3fn, torch.float32]),
              "s_channel": torch.float32, "input": rng.choice([torch.float32, torch.bfloat16])}
    if bits == 4 and rng.random() < 0.5:
        shapes["codebook"], dtypes["codebook"] = [16], torch.float32
    if bits == 4 and rng.random() < 0.4:
        shapes["correction"], dtypes["correction"] = [k // g, n], torch.float32
    count = rng.choice([0, 1, 1, 2, 2, 3, 4])
    defects = rng.sample(DEFECTS, count)
    for d in defects:
        if d == "weight_dtype":
            dtypes["weight"] = rng.choice([torch.uint8, torch.int16, torch.float32])
        elif d == "weight_rank":
            shapes["weight"] = rng.choice([[n * cols], [n, cols, 1], []])
        elif d == "s_rel_rank":
            shapes["s_rel"] = rng.choice([[n * groups], [n, groups, 1]])
        elif d == "group_size":
            g = rng.choice([0, 2, 3, 5, 12, 24, 40, -4])
        elif d == "row_width":
            shapes["weight"] = [n, max(0, cols + rng.choice([-2, -1, 1, 3]))]
        elif d == "k_zero":
            shapes["s_rel"] = [n, 0]
        elif d == "six_bit_k32":  # a 6-bit row whose K is not a multiple of 32
            g = 16
            shapes["s_rel"] = [n, 3]
            shapes["weight"] = [n, 36]
        elif d == "six_bit_g16":
            g = 8
            shapes["s_rel"] = [n, 8]
            shapes["weight"] = [n, 48]
        elif d == "six_bit_codebook":
            shapes["weight"] = [n, k * 6 // 8] if k % 4 == 0 else shapes["weight"]
            shapes["codebook"], dtypes["codebook"] = [16], torch.float32
        elif d == "six_bit_correction":
            shapes["weight"] = [n, k * 6 // 8] if k % 4 == 0 else shapes["weight"]
            shapes["correction"], dtypes["correction"] = [groups, n], torch.float32
        elif d == "k_not16":  # K = 8 or 24 through the scale grid
            g = 4
            kk = rng.choice([8, 24])
            shapes["s_rel"] = [n, kk // 4]
            shapes["weight"] = [n, kk // 2]
        elif d == "k_not_r":
            r = rng.choice([1024, 4096])
        elif d == "r_zero":
            r = 0
        elif d == "r_not_pow4":
            r = rng.choice([2, 8, 32, -16, -4])
        elif d == "s_rel_rows":
            if len(shapes["s_rel"]) == 2:
                shapes["s_rel"] = [shapes["s_rel"][0] + 1, shapes["s_rel"][1]]
        elif d == "s_channel_shape":
            shapes["s_channel"] = rng.choice([[n + 1], [n, 1], [], [0]])
        elif d == "correction_shape":
            shapes["correction"], dtypes["correction"] = rng.choice(
                [[n, groups], [groups], [groups + 1, n]]), torch.float32
        elif d == "codebook_shape":
            shapes["codebook"], dtypes["codebook"] = rng.choice([[15], [16, 1], [], [17]]), torch.float32
        elif d == "input_k":
            shapes["input"] = [m, k + rng.choice([-16, 16, 1, -1])]
        elif d == "input_0d":
            shapes["input"] = []
        elif d == "s_rel_dtype":
            dtypes["s_rel"] = rng.choice([torch.bfloat16, torch.float16, torch.int8])
        elif d == "input_dtype":
            dtypes["input"] = rng.choice([torch.int8, torch.float64])
    tensors = {}
    for key, shape in shapes.items():
        dt = dtypes[key]
        if dt.is_floating_point:
            tensors[key] = torch.zeros(shape, dtype=torch.float32).to(dt)
        else:
            tensors[key] = torch.zeros(shape, dtype=dt)
        if key == "s_channel" and dt == torch.float32:
            tensors[key] = torch.ones(shape, dtype=dt)
    return tensors, g, r, defects


def upstream_verdict(t, g, r):
    try:
        out = ck.w4a8_int8_linear(t["input"], t["weight"], t["s_rel"], t["s_channel"], t.get("codebook"),
                                  t.get("correction"), None, g, r, out_dtype=torch.float32)
        del out
        return "ok"
    except Exception as e:
        return err_text(e)


def make_operand_sets(count, rng, out_dir):
    names = {"weight": "weight", "s_rel": "weight_s_rel", "s_channel": "weight_s_channel",
             "codebook": "weight_codebook", "correction": "weight_correction", "input": "input"}
    tensors, meta = {}, {"sets": str(count), "comfy_kitchen": CK_VERSION, "torch": torch.__version__}
    outcomes = {}
    for i in range(count):
        t, g, r, defects = operand_set(rng)
        verdict = upstream_verdict(t, g, r)
        outcomes[verdict.split(":")[0]] = outcomes.get(verdict.split(":")[0], 0) + 1
        for key, v in t.items():
            tensors[f"e{i}.{names[key]}"] = v.contiguous()
        meta[f"e{i}.group_size"] = str(g)
        meta[f"e{i}.convrot_groupsize"] = str(r)
        meta[f"e{i}.expect"] = verdict
        meta[f"e{i}.defects"] = "+".join(defects) if defects else "none"
    save_file(tensors, os.path.join(out_dir, "operand_errors.safetensors"), metadata=meta)
    return outcomes


# ---- hand-built cases ------------------------------------------------------------------------------

DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}


def exact_correction_case(idx, gen, out_dir):
    """A correction-path layer with a bias, built so that every float32 product and partial sum of
    upstream's F.linear is exact: uniform 4-bit codes (c - 8) with FP8 scale 1.0, s_channel 2^-3 and
    corrections i/8 (|i| <= 8) make W_rot = j/8 with |j| <= 16; un-rotated with R = 16 (entries
    +-1/4) w_dequant is on the grid 2^-5 with |w| <= 8 (bf16/fp16-exact after the rounding both sides
    apply); activations i/64 with |i| <= 255 (bf16/fp16-exact). Products are multiples of 2^-11 of
    magnitude <= 32, so a sum over K = 64 stays below 2^22 grid units: exact in float32 in any order.
    The output then depends only on the rounding of sum + bias, which must be exact."""
    n, k, g, r = 13, 64, 16, 16
    codes = torch.randint(0, 16, (n, k), generator=gen, dtype=torch.int32)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).to(torch.uint8).view(torch.int8).contiguous()
    s_rel = torch.ones(n, k // g, dtype=torch.float32).to(torch.float8_e4m3fn)
    s_channel = torch.full((n,), 0.125, dtype=torch.float32)
    correction = (torch.randint(-8, 9, (k // g, n), generator=gen).float() / 8).contiguous()
    t = {"layer.weight": packed, "layer.weight_s_rel": s_rel, "layer.weight_s_channel": s_channel,
         "layer.weight_correction": correction}
    t["expect.w_q"] = ck._dequant_int4_grouped_to_int8(packed, s_rel, None, g)
    runs = [("bf16", "bf16"), ("f16", "f16"), ("bf16", "f32"), ("f16", "f32"), ("f32", "f32")]
    meta = {"group_size": str(g), "convrot_groupsize": str(r), "bits": "4", "codebook": "0",
            "scale_dtype": "fp8", "correction": "1", "runs": str(len(runs)),
            "comfy_kitchen": CK_VERSION, "torch": torch.__version__}
    xs = (torch.randint(-255, 256, (5, k), generator=gen).float() / 64)
    bias32 = torch.randn(n, generator=gen) * 4
    for ri, (act, out) in enumerate(runs):
        dt = DT[act]
        x = xs.to(dt)
        assert torch.equal(x.float(), xs)
        if ri == 0:
            t["layer.bias"] = bias32.to(torch.bfloat16)  # the stored bias; f16 runs re-round it
        p = f"run{ri}."
        t[p + "input"] = x.contiguous()
        meta[p + "act"], meta[p + "out_dtype"], meta[p + "exact"] = act, out, "1"
        wd = ck.dequantize_w4a8_int8_weight(packed, s_rel, s_channel, None, correction, g, r,
                                            output_dtype=dt).contiguous()
        t[p + "w_dequant"] = wd
        # Every partial sum exact: the grid bound above, checked.
        units = (x.double().abs() @ wd.double().abs().T) * 2.0 ** 11
        assert float(units.max()) < 2.0 ** 24 and torch.equal((wd.double() * 32).round(), wd.double() * 32)
        t[p + "out"] = ck.w4a8_int8_linear(x, packed, s_rel, s_channel, None, correction,
                                           t["layer.bias"].to(dt), g, r, out_dtype=DT[out]).contiguous()
    name = f"case_{idx:03d}_special_exact_corr_bias_g{g}_r{r}.safetensors"
    save_file({k2: v.contiguous() for k2, v in t.items()}, os.path.join(out_dir, name), metadata=meta)
    return name


def huge_activation_case(idx, r, gen, out_dir):
    """An integer-path layer (comfy-kitchen's own quantizer) run on activations scaled to max|x| of
    1e38, 2e38 and 3e38 per row: upstream's rotation (a dense product with entries +-1/sqrt(R)) is
    finite there, and ours must be too."""
    n, k, g = 7, 256, 16
    w = torch.randn(n, k, generator=gen) * 0.05
    qdata, s_rel, s_channel, _, codebook = ck.quantize_w4a8_int8_weight(w, group_size=g, convrot_groupsize=r)
    t = {"layer.weight": qdata, "layer.weight_s_rel": s_rel, "layer.weight_s_channel": s_channel,
         "layer.weight_codebook": codebook.float().contiguous()}
    t["expect.w_q"] = ck._dequant_int4_grouped_to_int8(qdata, s_rel, codebook, g)
    runs = ["bf16", "f32"]
    meta = {"group_size": str(g), "convrot_groupsize": str(r), "bits": "4", "codebook": "1",
            "scale_dtype": "fp8", "correction": "0", "runs": str(len(runs)),
            "comfy_kitchen": CK_VERSION, "torch": torch.__version__}
    for ri, act in enumerate(runs):
        dt = DT[act]
        x = torch.randn(3, k, generator=gen)
        x = (x / x.abs().amax(dim=1, keepdim=True) * torch.tensor([[1e38], [2e38], [3e38]])).to(dt)
        assert bool(torch.isfinite(x).all())
        p = f"run{ri}."
        t[p + "input"] = x.contiguous()
        meta[p + "act"] = act
        integer_intermediates(t, p, x, r, k)
        t[p + "out"] = ck.w4a8_int8_linear(x, qdata, s_rel, s_channel, codebook, None, None, g, r,
                                           out_dtype=dt).contiguous()
        assert bool(torch.isfinite(t[p + "x_scale"]).all()) and bool(torch.isfinite(t[p + "out"]).all())
    name = f"case_{idx:03d}_special_huge_act_r{r}.safetensors"
    save_file({k2: v.contiguous() for k2, v in t.items()}, os.path.join(out_dir, name), metadata=meta)
    return name


def make_special_cases(first_idx, seed, out_dir):
    gen = torch.Generator().manual_seed(seed + 1)  # its own stream: the other files do not change
    names = [exact_correction_case(first_idx, gen, out_dir)]
    for j, r in enumerate((16, 256)):
        names.append(huge_activation_case(first_idx + 1 + j, r, gen, out_dir))
    return names


def generate(args):
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(1)
    rng = random.Random(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    t0 = time.time()
    specs = layer_specs(args.set, rng)
    for i, spec in enumerate(specs):
        make_case(i, spec, gen, rng, args.out)
    n_err = args.errors if args.errors is not None else {"quick": 80, "golden": 300, "full": 1500}[args.set]
    outcomes = make_operand_sets(n_err, rng, args.out)
    specials = make_special_cases(len(specs), args.seed, args.out) if args.set != "golden" else []
    print(f"ck_oracle: comfy-kitchen {CK_VERSION}, torch {torch.__version__}, python "
          f"{platform.python_version()}: {len(specs) + len(specials)} layers ({args.set}, {len(specials)} hand-built), {n_err} operand sets "
          f"({', '.join(f'{k} {v}' for k, v in sorted(outcomes.items()))}) in {time.time() - t0:.1f} s"
          f"{' (kernels pinned: ATen AVX2, MKL COMPATIBLE, no oneDNN)' if PINNED else ''} -> {args.out}")


def main():
    args = ARGS
    generate(args)
    if args.cmd == "run":
        cmd = [args.compare, "--upstream-version", CK_VERSION]
        if args.profile:
            cmd += ["--profile", args.profile]
        cmd.append(args.out)
        sys.stdout.flush()
        sys.exit(subprocess.call(cmd))


if __name__ == "__main__":
    main()
