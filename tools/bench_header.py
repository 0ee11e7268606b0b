#!/usr/bin/env python3
"""Header parse benchmark: our parser side by side with Python's json.loads, in one run.

Usage: bench_header.py BUILD/bench/header_bench [--sizes 1000,10000,100000,500000] [--dir /tmp]

For each size, header_bench writes a checkpoint (sparse data), then each parser runs in a fresh
process on the same header bytes: best wall time of N repeats (after one warm-up parse), header
MB/s, the best thread CPU time (fair on a shared machine), and the process's peak RSS (VmHWM)
against its RSS with the header already read in.
  ours      st::parse_prefix: UTF-8 check, single-pass HashMetadata deserializer, offset checks
  reference the DOM reference deserializer (json::parse_serde + mapping), the previous path
  python    json.loads(header_bytes) in CPython (a dict of dicts; no safetensors checks)
Prints a Markdown table; the machine line comes from /proc/cpuinfo.
"""
import argparse
import json
import os
import subprocess
import sys

PY_CHILD = r"""
import json, struct, sys, time
def peak_kb():  # VmHWM: reset by exec (ru_maxrss would carry the parent's peak over the fork)
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
path, repeats = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = f.read(n)
before = peak_kb()
obj = json.loads(header)
tensors = len(obj) - ("__metadata__" in obj)
del obj
peak = peak_kb()
best = best_cpu = 1e30
for _ in range(repeats):
    c0, t0 = time.thread_time(), time.perf_counter()
    obj = json.loads(header)
    t1, c1 = time.perf_counter(), time.thread_time()
    del obj
    best, best_cpu = min(best, (t1 - t0) * 1e3), min(best_cpu, (c1 - c0) * 1e3)
print(json.dumps({"impl": "python", "tensors": tensors, "header_bytes": n, "best_ms": best,
                  "mb_per_s": n / 1e6 / (best / 1e3), "best_cpu_ms": best_cpu,
                  "cpu_mb_per_s": n / 1e6 / (best_cpu / 1e3), "rss_before_kb": before, "rss_peak_kb": peak}))
"""


def repeats_for(size):
    return max(3, min(200, 2_000_000 // size))


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d cores visible, Python %s" % (model, os.cpu_count() or 0, sys.version.split()[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bench")
    ap.add_argument("--sizes", default="1000,10000,100000,500000")
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--order", default="writer", choices=["writer", "blocks"],
                    help="tensor order in the header: as the crate's writer emits it, or layer by layer")
    args = ap.parse_args()
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        path = os.path.join(args.dir, "w4a8_header_bench_%d.safetensors" % size)
        subprocess.run([args.bench, "write", str(size), path, args.order], check=True)
        r = repeats_for(size)
        impls = [[args.bench, "parse", path, "fast", str(r)]]
        if not args.no_reference:
            impls.append([args.bench, "parse", path, "reference", str(max(3, r // 4))])
        impls.append([sys.executable, "-c", PY_CHILD, path, str(max(3, r // 4))])
        for cmd in impls:
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
        os.remove(path)
    print("machine:", machine(), "| tensor order:", args.order)
    print()
    print("| tensors | header MB | parser | best wall ms | MB/s (wall) | best CPU ms | MB/s (CPU) | peak RSS MB | RSS over header-in-memory MB |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        name = {"fast": "ours (single pass)", "reference": "ours, DOM reference", "python": "Python json.loads"}[row["impl"]]
        print("| %d | %.2f | %s | %.2f | %.0f | %.2f | %.0f | %.1f | %.1f |" % (
            row["tensors"], row["header_bytes"] / 1e6, name, row["best_ms"], row["mb_per_s"], row["best_cpu_ms"],
            row["cpu_mb_per_s"], row["rss_peak_kb"] / 1024, (row["rss_peak_kb"] - row["rss_before_kb"]) / 1024))
    print()
    print("load average at the end:", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
