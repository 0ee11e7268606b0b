#!/usr/bin/env python3
"""Python side of the validator benchmark, side by side with bench/validate_bench.cpp.

Usage: bench_validate_py.py --cpp BUILD/bench/validate_bench   (runs it, which writes the checkpoint)
       bench_validate_py.py FILE                                (Python only, on an existing file)

Times, best of N, on the same 20,000-tensor checkpoint:
  py json.loads+loop : json.loads(header) and upstream's loop (checkpoint_meta, prefixes, marker
                       json.loads, per-marker checks via tools/oracle/sglang_spec.py's functions)
  py oracle (safe_open): the full oracle, as upstream runs it (safetensors' Rust header parser)
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "oracle"))
import sglang_spec  # noqa: E402

REPEATS = 7


def loads_and_loop(blob):
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    base = 8 + n
    c = sglang_spec.Collector()
    c.read_metadata("bench.safetensors", header.pop("__metadata__", None) or {})
    for key in sorted(header):
        info = header[key]
        dtype, shape = info["dtype"], tuple(info["shape"])
        c.meta[key] = (dtype, shape)
        if key.endswith(".weight") and dtype in ("F8_E4M3", "I8", "U8"):
            c.weights.add(key[: -len(".weight")])
        if key.endswith(".comfy_quant"):
            b, e = info["data_offsets"]
            marker = json.loads(blob[base + b:base + e])
            if type(marker) is not dict:
                raise ValueError("marker")
            c.record(key[: -len(".comfy_quant")], marker)
    sglang_spec.mxfp8(c)
    if c.weights - c.markers.keys():
        raise ValueError("missing markers")
    sglang_spec.per_marker(c)
    return c.markers, n


def best(fn):
    t = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t) * 1e3


def main(argv):
    cpp_lines = []
    if len(argv) == 2 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    if len(argv) == 3 and argv[1] == "--cpp":
        tmp = tempfile.mkdtemp()
        path = os.path.join(tmp, "bench.safetensors")
        out = subprocess.run([argv[2], "--write", path], capture_output=True, text=True, check=True).stdout
        cpp_lines = out.strip().splitlines()
    elif len(argv) == 2:
        path = argv[1]
    else:
        print(__doc__, file=sys.stderr)
        return 2
    with open(path, "rb") as f:
        blob = f.read()
    layers, n = loads_and_loop(blob)
    verdict = sglang_spec.verdict([path])
    assert verdict["ok"] and len(verdict["layers"]) == len(layers), verdict.get("message")
    mb = n / 1e6
    ms_loop = best(lambda: loads_and_loop(blob))
    ms_oracle = best(lambda: sglang_spec.verdict([path]))
    for line in cpp_lines:
        print(line)
    print("py json.loads+loop     ms=%.2f header_MBps=%.1f" % (ms_loop, mb / (ms_loop / 1e3)))
    print("py oracle (safe_open)  ms=%.2f header_MBps=%.1f" % (ms_oracle, mb / (ms_oracle / 1e3)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
