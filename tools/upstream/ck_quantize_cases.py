#!/usr/bin/env python3
"""comfy-kitchen's quantize_w4a8_int8_weight on BF16/F16/F32 weights and on weights near the float32
limit, as expected values for tests/gemm/quantizer_ck_live_test.cpp.

    CK_PYTHON ck_quantize_cases.py --out DIR

Runs INSIDE the comfy-kitchen environment (tools/upstream/ck_env.sh); comfy-kitchen's eager
quantizer is called, nothing of it is copied. For every case it writes DIR/NAME.safetensors:
  w                  the float weight [N, K] in its own dtype (the quantizer's input)
  weight, weight_s_rel, weight_s_channel [, weight_codebook]   upstream's outputs
and one line of DIR/cases.txt:
  NAME DTYPE N K G R BITS SCALES CODEBOOK EXPECT ROT_MISMATCH ROT_TOL
DTYPE f32|bf16|f16, SCALES fp8|f32, CODEBOOK 0|1, EXPECT one of
  exact   upstream's outputs are finite: ours must equal them (see the test for which bits)
  refuse  the exact rotation leaves the dtype's range (upstream stores inf/NaN scales): we refuse
  finite  upstream's outputs are not finite although the exact rotation is (torch's float32
          accumulation overflowed on the way): we write a finite, valid layer (documented deviation)
  tie     upstream's BF16/F16 rotation differs from the exact rotation rounded to float32 and then to
          the dtype at ROT_MISMATCH weights (rounding ties decided by torch's summation order, which
          depends on the CPU's matmul kernel): not compared bit for bit
ROT_TOL (F32 weights; 0 where the exact rotation is not finite): a bound on the relative difference
of two float32 rotations' group and row scales (s_rel, s_channel), derived from the data: torch's
float32 matmul, in whatever order the CPU's kernel sums, and our butterfly each lie within
gamma_n * sum|w_i * h_i| of the exact rotation (n = R + 1 and log2(R) + 1 roundings), so a group's
absmax moves by at most that; relative to the exact absmax of the group and of the row, plus 8 units
of roundoff for the divisions. The test allows it on top of its 1e-6 for F32 weights only.
"""
import argparse
import math
import os

import torch
from safetensors.torch import save_file

from comfy_kitchen.backends.eager import w4a8_int8 as ck
from comfy_kitchen.backends.eager.quantization import rotate_int8_convrot_weight
from comfy_kitchen.tensor.int8_utils import _build_hadamard

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
F32_MAX = torch.finfo(torch.float32).max


def exact_rotation(w, r):
    """w @ H_R^T in float64 (exact for BF16/F16 inputs; H_R is symmetric)."""
    n, k = w.shape
    h = _build_hadamard(r, dtype=torch.float64)
    return (w.double().view(n, k // r, r) @ h.T).view(n, k)


def rotation_tolerance(w, r, g, ex):
    """ROT_TOL (module docstring): the largest relative change of a scale ratio that float32
    rotation rounding can explain, over every row and group. 0 when the exact rotation ex
    (exact_rotation(w, r)) is not finite."""
    u = 2.0 ** -24

    def gamma(n):
        return n * u / (1 - n * u)

    n, k = w.shape
    y = ex.abs()
    if not bool(torch.isfinite(y).all()):
        return 0.0
    # |h| = 1/sqrt(R) everywhere: each rotated weight's error bound is gamma * (sum of |w| over its block) / sqrt(R)
    block = w.double().abs().view(n, k // r, r).sum(-1) / math.sqrt(r)
    eps = (gamma(r + 1) + gamma(int(math.log2(r)) + 1)) * block.repeat_interleave(r, dim=1)
    amax_g, eps_g = y.view(n, k // g, g).amax(-1), eps.view(n, k // g, g).amax(-1)
    amax_row, eps_row = y.amax(-1, keepdim=True), eps.amax(-1, keepdim=True)
    rel = torch.where(amax_g > 0, eps_g / amax_g.clamp_min(1e-300), torch.zeros_like(amax_g)) + \
        torch.where(amax_row > 0, eps_row / amax_row.clamp_min(1e-300), torch.zeros_like(amax_row))
    return float(rel.max()) + 8 * u


def rotation_mismatches(w, r, ex):
    """Weights where upstream's rotation differs from the exact one (ex) rounded to f32, then to w.dtype."""
    model = ex.clamp(-F32_MAX * 2, F32_MAX * 2).float().to(w.dtype)  # (past FLT_MAX: inf)
    up = rotate_int8_convrot_weight(w, r)
    same = (model == up) | (torch.isnan(model) & torch.isnan(up))
    return int((~same).sum()), bool(torch.isfinite(model).all())


def cases():
    g = torch.Generator().manual_seed(20261206)
    torch.manual_seed(20261206)  # StudentT.sample draws from the global generator: the same cases every run

    def randn(n, k, scale=1.0):
        return torch.randn(n, k, generator=g) * scale

    out = []
    variants = [(4, "fp8", True), (4, "fp8", False), (6, "fp8", False), (4, "f32", False), (6, "f32", False),
                (4, "f32", True)]
    # Defect A: BF16/F16 weights are rotated in their own dtype upstream.
    for dt in ("bf16", "f16"):
        for gs, r in ((16, 256), (16, 64), (32, 16), (8, 4)):
            for bits, sd, cb in variants:
                if bits == 6 and gs % 16:
                    continue
                out.append((f"{dt}_g{gs}_r{r}_b{bits}_{sd}_{'cb' if cb else 'un'}", randn(16, 256, 0.05).to(DTYPES[dt]),
                            gs, r, bits, sd, cb))
        # heavy tails: the kurtosis gate fits a codebook to the rotated weights
        t = torch.distributions.StudentT(torch.tensor(2.5)).sample((16, 256)) * 0.02
        out.append((f"{dt}_heavy_tails_cb", t.to(DTYPES[dt]), 16, 256, 4, "fp8", True))
        # a wide dynamic range (F16: subnormal rotated weights)
        wide = randn(16, 256) * torch.exp(randn(16, 256) * 3.0) * 1e-3
        out.append((f"{dt}_wide_range", wide.to(DTYPES[dt]), 16, 64, 4, "fp8", False))
        out.append((f"{dt}_wide_range_b6", wide.to(DTYPES[dt]), 16, 64, 6, "fp8", False))
    for bits, sd, cb in variants:  # control: F32 weights
        out.append((f"f32_g16_r256_b{bits}_{sd}_{'cb' if cb else 'un'}", randn(16, 256, 0.05), 16, 256, bits, sd, cb))
    # Tiny weights: the scales' 1e-8 floor (s_channel 1e-8, codes at zero) and rows on either side of
    # it, with an all-zero row.
    rows = torch.stack([randn(1, 256, s)[0] for s in (0.05, 1e-6, 1e-7, 1e-9, 1e-12, 0.0)] * 2)
    for bits, sd, cb in variants:
        out.append((f"f32_tiny_rows_b{bits}_{sd}_{'cb' if cb else 'un'}", rows.clone(), 16, 256, bits, sd, cb))
    out.append(("bf16_tiny_rows_un", rows.to(torch.bfloat16), 16, 64, 4, "fp8", False))
    # Finite weights near the float32 limit, 4-bit uniform.
    g2 = torch.Generator().manual_seed(10)
    for mx in (1e38, 1.5e38, 2e38, 3e38):
        w = torch.randn(6, 256, generator=g2)
        w = w / w.abs().max() * mx
        for r in (4, 16, 64):
            out.append((f"f32_max{mx:.1e}_r{r}".replace("+", ""), w.clone(), 16, r, 4, "fp8", False))
    for r in (4, 16, 64):
        out.append((f"f32_const2p127_r{r}", torch.full((6, 64), 2.0 ** 127), 16, r, 4, "fp8", False))
    # ... whose exact rotation leaves the dtype's range: one row along a column of H_R (its rotated
    # value is sqrt(R) * |w|), the other rows ordinary.
    for dt, mag, r in (("f32", F32_MAX, 4), ("f32", 1e38, 16), ("bf16", 3e38, 4), ("f16", 60000.0, 4),
                       ("f16", 20000.0, 16), ("f16", 9000.0, 64)):
        w = randn(4, 64, 0.05)
        h = _build_hadamard(r, dtype=torch.float64)
        col = torch.sign(h[:, 0]).float()
        w[2, :r] = col * mag
        out.append((f"{dt}_overflow_r{r}", w.to(DTYPES[dt]), 16, r, 4, "fp8", False))
    # F16 weights whose rotation is finite in float32 but not in F16 (sqrt(R) * 40000 > 65504).
    w = randn(4, 64, 0.05)
    w[1, :16] = 40000.0 * torch.sign(_build_hadamard(16, dtype=torch.float64)[:, 3]).float()
    out.append(("f16_overflow_only_f16", w.to(torch.float16), 16, 16, 4, "fp8", True))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(1)
    lines = []
    for name, w, gs, r, bits, sd, cb in cases():
        dt = {v: k for k, v in DTYPES.items()}[w.dtype]
        q, s_rel, s_ch, _corr, book = ck.quantize_w4a8_int8_weight(
            w, group_size=gs, convrot_groupsize=r, scale_dtype=torch.float32 if sd == "f32" else torch.float8_e4m3fn,
            codebook=cb, bits=bits)
        finite = bool(torch.isfinite(s_rel.float()).all()) and bool(torch.isfinite(s_ch).all())
        if book is not None:
            finite = finite and bool(torch.isfinite(book).all())
        ex = exact_rotation(w, r)  # (one float64 product per case, shared by both uses)
        mism, exact_finite = rotation_mismatches(w, r, ex)
        if not exact_finite:
            expect = "refuse"
        elif not finite:
            expect = "finite"
        elif mism and dt != "f32":
            expect = "tie"
        else:
            expect = "exact"
        t = {"w": w.contiguous(), "weight": q, "weight_s_rel": s_rel, "weight_s_channel": s_ch}
        if book is not None:
            t["weight_codebook"] = book
        save_file(t, os.path.join(a.out, name + ".safetensors"))
        n, k = w.shape
        tol = rotation_tolerance(w, r, gs, ex) if dt == "f32" else 0.0
        lines.append(f"{name} {dt} {n} {k} {gs} {r} {bits} {sd} {int(cb)} {expect} {mism} {tol:.6e}")
    with open(os.path.join(a.out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{len(lines)} cases in {a.out}")


if __name__ == "__main__":
    main()
