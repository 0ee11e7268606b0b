#!/usr/bin/env python3
"""Peak memory and time of `w4a8check validate --quiet` on hostile headers: nothing but layers in
the header's _quantization_metadata, the cheapest bytes a header can spend per layer (issue #9:
memory at most 3x the header plus 16 MB; docs/cli.md, "Where things stand"). Beside it, a Python
process doing what a loader does first with such a file: json.loads of the header, then of the
metadata document.

    python3 tools/bench/hostile_memory.py [--build build] [--layers 1500000]
                                          [--shapes flat,nested,escaped,repeated,distinct] [--runs 2]
                                          [--baseline OTHER/w4a8check] [--no-python] [--check-goal]

Shapes (layer i's key is str(i)):
  flat      {"layers": {"0": {}, "1": {}, ...}}: one marker (a view of its text) shared
  nested    the same plus "x": [1] at the document's root, which the reader only checks
  escaped   every key spelled with an escape ("\u0031\u0032" is "12"): decoded once, kept apart
  repeated  every key twice, the second time with another marker ({"v": 1}): a dict keeps the first
            place and the last value
  distinct  {"layers": {"0": {"a": 0}, ...}}: every marker different; format-less and flat, each is
            kept as a view of its text (validate/marker.hpp), where it was an object of its own
            (408 MiB, 10.8x, for 1.5 M layers)
Every document json.loads accepts is read without building it (json/flat_layers.hpp). Until this
script's "declined" shape was dropped, a document with a root list, a NaN or an escaped key was built
whole as json.loads builds it: 309 MiB (15.2x) for 1.5 M layers.

Each command must accept the file (exit 0) and report every layer, or the script fails: the ctest
smoke run (`hostile_memory_smoke`, 3,000 layers) keeps it working. With --check-goal it also fails
when w4a8check's peak RSS (the minimum over --runs) is above the goal, 3x the header plus 16 MB:
the ctest `hostile_memory_goal` runs it at 1.5 M layers, where the 3x term dominates the
allowance. Files go to a temporary directory, removed at the end. Peak RSS comes from GNU time when installed (else wait4), as in
cli_bench.py; each figure is the minimum of --runs runs. Prints a Markdown table and the machine.
"""
import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_bench  # noqa: E402  (machine(), GNU_TIME: one way to describe the host and read RSS)

SHAPES = ("flat", "nested", "escaped", "repeated", "distinct")

PY_LOADS = ("import json, struct, sys\n"
            "f = open(sys.argv[1], 'rb'); n = struct.unpack('<Q', f.read(8))[0]\n"
            "h = json.loads(f.read(n))\n"
            "doc = json.loads(h['__metadata__']['_quantization_metadata'])\n"
            "sys.exit(0 if len(doc['layers']) == int(sys.argv[2]) else 3)\n")


def document(shape, layers):
    marker = (lambda i: '{"a":%d}' % i) if shape == "distinct" else (lambda i: "{}")
    key = (lambda i: "".join("\\u%04x" % ord(c) for c in str(i))) if shape == "escaped" else str
    body = ",".join('"%s":%s' % (key(i), marker(i)) for i in range(layers))
    if shape == "repeated":
        body += "," + ",".join('"%d":{"v":1}' % i for i in range(layers))
    rest = ',"x":[1]' if shape == "nested" else ""
    return '{"layers":{%s}%s}' % (body, rest)


def write_checkpoint(path, shape, layers):
    """A container with no tensors whose header carries the document; returns the header's size."""
    header = json.dumps({"__metadata__": {"_quantization_metadata": document(shape, layers)}},
                        separators=(",", ":")).encode()
    header += b" " * (-len(header) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)
    return len(header)


def measure(argv):
    """(peak RSS in MiB, wall seconds, exit status) of one run."""
    if os.access(cli_bench.GNU_TIME, os.X_OK):
        t0 = time.perf_counter()
        r = subprocess.run([cli_bench.GNU_TIME, "-f", "%M"] + argv, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t0
        return int(r.stderr.strip().splitlines()[-1]) / 1024.0, wall, r.returncode, r.stdout
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    return ru.ru_maxrss / 1024.0, time.perf_counter() - t0, os.waitstatus_to_exitcode(status), out


def best(argv, runs, check):
    """Minimum RSS and time over runs; check(exit status, stdout) must hold for every run."""
    rss, wall = float("inf"), float("inf")
    for _ in range(runs):
        r, w, rc, out = measure(argv)
        problem = check(rc, out)
        if problem:
            sys.exit("hostile_memory: %s: %s" % (" ".join(argv), problem))
        rss, wall = min(rss, r), min(wall, w)
    return rss, wall


def accepted_all(layers):
    def check(rc, out):
        if rc != 0:
            return "exit status %d (the file must be accepted)" % rc
        # The OK line counts layers with a known format, then any others apart ("; M marker(s) name
        # no known format"): the hostile shapes' markers have none.
        m = re.match(r"OK: (\d+) quantized layer\(s\) accepted [^;\n]*(?:; (\d+) marker\(s\) name no known format)?", out)
        if not m or int(m.group(1)) + int(m.group(2) or 0) != layers:
            return "expected every one of %d layers reported, got: %r" % (layers, out[:200])
        return None
    return check


def python_ok(rc, out):
    return None if rc == 0 else "the Python process failed (exit status %d)" % rc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--layers", type=int, default=1_500_000)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--baseline", help="another w4a8check binary, measured the same way")
    ap.add_argument("--no-python", action="store_true", help="skip the Python process")
    ap.add_argument("--check-goal", action="store_true",
                    help="exit 1 when w4a8check's peak RSS is above 3x the header plus 16 MB")
    a = ap.parse_args()
    shapes = a.shapes.split(",")
    for s in shapes:
        if s not in SHAPES:
            ap.error("unknown shape %r (choose from %s)" % (s, ", ".join(SHAPES)))
    if a.layers < 1 or a.runs < 1:
        ap.error("--layers and --runs must be at least 1")
    exe = os.path.join(a.build, "w4a8check")
    bins = [("w4a8check", exe)] + ([("baseline", a.baseline)] if a.baseline else [])
    for _, b in bins:
        if not os.access(b, os.X_OK):
            sys.exit("hostile_memory: %s is not an executable (build first, or pass --build)" % b)

    print("Machine: %s" % cli_bench.machine())
    print()
    cols = ["shape", "layers", "header", "goal: 3x + 16 MB"] + ["%s peak RSS (x header), time" % n for n, _ in bins]
    if not a.no_python:
        cols.append("Python -S json.loads, peak RSS (x header), time")
    print("| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    over = []
    with tempfile.TemporaryDirectory(prefix="w4a8-hostile-") as tmp:
        for shape in shapes:
            path = os.path.join(tmp, shape + ".safetensors")
            n = write_checkpoint(path, shape, a.layers)
            mb = n / 1e6
            cells = [shape, "{:,}".format(a.layers), "%.2f MB" % mb, "%.1f MiB" % ((3 * n + 16e6) / 2**20)]
            goal = (3 * n + 16e6) / 2**20
            for name, b in bins:
                rss, wall = best([b, "validate", "--quiet", path], a.runs, accepted_all(a.layers))
                cells.append("%.1f MiB (%.1fx), %.3f s" % (rss, rss * 2**20 / n, wall))
                if name == "w4a8check" and rss > goal:
                    over.append("%s: %.1f MiB, above the goal's %.1f MiB" % (shape, rss, goal))
            if not a.no_python:
                rss, wall = best([sys.executable, "-S", "-c", PY_LOADS, path, str(a.layers)], a.runs, python_ok)
                cells.append("%.1f MiB (%.1fx), %.3f s" % (rss, rss * 2**20 / n, wall))
            print("| " + " | ".join(cells) + " |", flush=True)
    if a.check_goal:
        if over:
            sys.exit("hostile_memory: peak RSS over 3x the header + 16 MB:\n  " + "\n  ".join(over))
        print("\nEvery shape within 3x the header + 16 MB.")


if __name__ == "__main__":
    main()
