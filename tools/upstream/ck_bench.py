#!/usr/bin/env python3
"""One run, one table: this project's reference GEMM (prepared layer and plain gemm_fast, one thread,
from bench/gemm_bench) side by side with comfy-kitchen's eager w4a8_int8_linear on the CPU
(torch.set_num_threads(1)), M = 1, 16, 256 on an N = K = 8192 layer (4-bit codebook, FP8 group
scales, G = 16, R = 256, F32 activations). Run inside the comfy-kitchen environment:

  $(tools/upstream/ck_env.sh | cut -d' ' -f1) tools/upstream/ck_bench.py --bench build/bench/gemm_bench

GOPS counts 2*M*N*K per call; per core = one thread. comfy-kitchen's eager path decodes the whole
weight on every call (as does gemm_fast); a prepared layer decodes once (its one-time cost is the
BM_Prepare row)."""
import argparse
import importlib.metadata
import json
import os
import platform
import subprocess
import time

torch = ck = None  # imported in main(), after the arguments: --help works without them

N = K = 8192
MS = [1, 16, 256]


def ours(bench):
    filt = ("BM_Prepared/(1|16|256)/8192/8192/3/1/|BM_Gemm/(1|16|256)/8192/8192/1/3/1/|"
            "BM_Prepare/8192/8192/4/0/1/")
    out = subprocess.run([bench, f"--benchmark_filter={filt}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        name = b["name"]
        unit = {"ms": 1.0, "s": 1000.0, "us": 1e-3, "ns": 1e-6}[b["time_unit"]]
        ms = (b["real_time"] * unit, b["cpu_time"] * unit)  # one thread: its CPU time is the call's
        parts = name.split("/")
        if parts[0] == "BM_Prepare":
            rows["prepare"] = ms
        else:
            rows[(parts[0], int(parts[1]))] = ms
    return rows


def upstream_ms(m, reps):
    gen = torch.Generator().manual_seed(0)
    qdata = torch.randint(-128, 128, (N, K // 2), generator=gen, dtype=torch.int8)
    s_rel = torch.randint(0x30, 0x48, (N, K // 16), generator=gen, dtype=torch.uint8).view(torch.float8_e4m3fn)
    s_channel = torch.rand(N, generator=gen) * 1e-3 + 1e-4
    codebook = torch.linspace(-0.98, 0.98, 16)
    x = torch.randn(m, K, generator=gen)
    ck.w4a8_int8_linear(x, qdata, s_rel, s_channel, codebook, None, None, 16, 256, out_dtype=torch.float32)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(reps):
        ck.w4a8_int8_linear(x, qdata, s_rel, s_channel, codebook, None, None, 16, 256, out_dtype=torch.float32)
    return ((time.perf_counter() - t0) * 1000.0 / reps, (time.process_time() - c0) * 1000.0 / reps)


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", required=True, help="path of bench/gemm_bench")
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    global torch, ck
    import torch
    from comfy_kitchen.backends.eager import w4a8_int8 as ck

    torch.set_num_threads(1)
    mine = ours(args.bench)
    theirs = {m: upstream_ms(m, args.reps) for m in MS}
    gops = lambda m, ms: 2.0 * m * N * K / (ms * 1e-3) * 1e-9
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = float("nan")
    print(f"machine: {cpu_name()}, {os.cpu_count()} cores, load average {load:.1f} at the start; one thread "
          f"each; comfy-kitchen {importlib.metadata.version('comfy-kitchen')} eager on torch {torch.__version__}")
    prep = mine.get("prepare", (float("nan"),) * 2)
    print(f"N = K = {N}, 4-bit codebook, FP8 scales, G = 16, R = 256, F32 activations; prepare_layer once: "
          f"{prep[0]:.0f} ms wall, {prep[1]:.0f} ms CPU")
    print("time per call in ms, wall / CPU of the one thread; GOPS per core from CPU time")
    print(f"{'M':>4} | {'prepared':>15} {'GOPS':>6} | {'gemm_fast':>15} {'GOPS':>6} | {'comfy-kitchen eager':>19} "
          f"{'GOPS':>6} | prepared vs eager (CPU)")
    for m in MS:
        p, f, u = mine.get(("BM_Prepared", m)), mine.get(("BM_Gemm", m)), theirs[m]
        print(f"{m:>4} | {p[0]:7.1f} / {p[1]:5.1f} {gops(m, p[1]):6.1f} | {f[0]:7.1f} / {f[1]:5.1f} {gops(m, f[1]):6.2f} | "
              f"{u[0]:9.1f} / {u[1]:7.1f} {gops(m, u[1]):6.2f} | {u[1] / p[1]:6.0f}x")


if __name__ == "__main__":
    main()
