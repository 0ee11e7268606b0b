#!/usr/bin/env python3
"""CLI benchmark, one run, side by side: start-up time and peak RSS of `w4a8check --version` and
`validate` on a tiny file, then `validate` (text, --json, --strict, --summary) on synthetic
asym_w4a8_int8 checkpoints of 1k to 500k tensors against Python's json.loads of the same header,
with process start included for both, and in process (C++ File::open + inspect via
bench/validate_bench --file; Python json.loads in this interpreter).

    python3 tools/bench/cli_bench.py [--build build] [--sizes 1000,10000,20000,100000,500000]
                                     [--orders crate,layer,metadata] [--runs 5] [--baseline OTHER/w4a8check]
                                     [--out table.md]

Times are the minimum over --runs (each a fresh process, measured with wait4: wall clock and the
child's peak RSS), with the median beside it. The commands of one group (start-up; one checkpoint)
run interleaved, one of each per round, so a busy spell of a shared host slows them alike.
--baseline times another w4a8check binary on the same files (e.g. the previous build) in the same
run. The Python process runs twice: as installed (`python3`, with site and its .pth hooks) and with
-S (the stdlib only, all json.loads needs); a host whose site-packages import things at every start
shows it as the gap between the two `-c pass` rows. Prints a Markdown table and the machine.
"""
import argparse
import json
import os
import platform
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def machine():
    model, cores = platform.processor() or "?", os.cpu_count()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        mem = [l for l in open("/proc/meminfo") if l.startswith("MemTotal")][0].split()[1]
        mem = "%.0f GiB" % (int(mem) / 2**20)
    except OSError:
        mem = "?"
    load = os.getloadavg()[0]
    return "%s, %d cores, %s RAM, load average %.1f at start" % (model, cores, mem, load)


GNU_TIME = "/usr/bin/time"


def run_once(argv):
    """Wall clock and CPU time (user + system, from wait4: less sensitive to a busy machine)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(status)


def peak_rss(argv):
    """Peak RSS in MiB. A forked child's ru_maxrss includes the parent's pages until exec (Linux
    records the old mm's high-water mark at exec), so Python's own size would show; GNU time, a
    small parent, is used when installed."""
    if os.access(GNU_TIME, os.X_OK):
        r = subprocess.run([GNU_TIME, "-f", "%M"] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        return int(r.stderr.strip().splitlines()[-1]) / 1024.0
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, ru = os.wait4(p.pid, 0)
    return ru.ru_maxrss / 1024.0


def best_interleaved(cmds, runs, ok=(0,)):
    """{label: (min wall, min CPU, median wall, peak RSS)} over `runs` rounds, each round running every
    command once in turn: a noisy spell of the host then slows every command alike, where a block of
    one command's runs would be judged on the spell alone."""
    walls = {label: [] for label, _ in cmds}
    cpus = {label: [] for label, _ in cmds}
    for _ in range(runs):
        for label, argv in cmds:
            w, c, rc = run_once(argv)
            if rc not in ok:
                raise SystemExit("%s exited %d" % (" ".join(argv), rc))
            walls[label].append(w)
            cpus[label].append(c)
    return {label: (min(walls[label]), min(cpus[label]), sorted(walls[label])[len(walls[label]) // 2], peak_rss(argv))
            for label, argv in cmds}


def cuda_link_stub():
    """An empty program linked (not dlopened) against cudart, cuBLAS and cuBLASLt, when the CUDA
    toolkit and a C++ compiler exist: the start-up cost a CUDA-linked executable pays every time."""
    lib = "/usr/local/cuda/lib64"
    if not os.path.exists(os.path.join(lib, "libcublasLt.so")):
        return ""
    d = tempfile.mkdtemp(prefix="w4a8-stub-")
    src, exe = os.path.join(d, "stub.cpp"), os.path.join(d, "stub")
    open(src, "w").write("int main() { return 0; }\n")
    r = subprocess.run(["c++", src, "-o", exe, "-Wl,--no-as-needed", "-L" + lib, "-lcublasLt", "-lcublas", "-lcudart",
                        "-Wl,-rpath," + lib], capture_output=True)
    return exe if r.returncode == 0 else ""


def header_len(path):
    with open(path, "rb") as f:
        return struct.unpack("<Q", f.read(8))[0]


PY_LOADS = ("import json, struct, sys\n"
            "f = open(sys.argv[1], 'rb'); n = struct.unpack('<Q', f.read(8))[0]\n"
            "h = json.loads(f.read(n))\n")


def py_inprocess(path, runs):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        blob = f.read(n)
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        json.loads(blob)
        t.append(time.perf_counter() - t0)
    return min(t)


def cpp_inprocess(bench, path, runs):
    out = subprocess.run([bench, "--file", path, "--repeats", str(runs)], capture_output=True, text=True, check=True).stdout
    fields = dict(kv.split("=", 1) for kv in out.split())
    return float(fields["open_parse_ms"]) / 1e3, float(fields["open_parse_inspect_ms"]) / 1e3


def fmt_ms(s):
    if s < 0.01:
        return "%.2f ms" % (s * 1e3)
    return "%.1f ms" % (s * 1e3) if s < 10 else "%.2f s" % s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--sizes", default="1000,10000,20000,100000,500000")
    ap.add_argument("--orders", default="crate,layer,metadata",
                    help="header tensor orders to time (validate_bench --order): crate = as the safetensors "
                         "crate writes (dtype groups, names sorted in each), layer = each layer's tensors together, "
                         "metadata = crate order with the markers in _quantization_metadata (the same layers, 3 tensors "
                         "each; the size counts 4 a layer as in the other orders)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--baseline", default="")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    cli = os.path.join(a.build, "w4a8check")
    bench = os.path.join(a.build, "bench", "validate_bench")
    tiny = os.path.join(ROOT, "examples", "flux-tiny-w4a8.safetensors")
    rows, ratios = [], []

    def row(what, wall, cpu, rss, note=""):
        r = (what, fmt_ms(wall), fmt_ms(cpu) if cpu is not None else "", "%.1f MiB" % rss if rss else "", note)
        rows.append(r)
        print("%-66s %10s %10s %10s  %s" % r, flush=True)

    print("machine:", machine(), flush=True)
    runs = max(a.runs, 20)  # start-up: many short runs
    start = [("w4a8check --version", [cli, "--version"]),
             ("w4a8check validate (tiny file, 2 layers)", [cli, "validate", tiny]),
             ("w4a8check validate --strict --json (tiny file)", [cli, "validate", "--strict", "--json", tiny]),
             ("python3 -c pass (interpreter start, reference)", [sys.executable, "-c", "pass"]),
             ("python3 -S -c pass (no site: stdlib only, reference)", [sys.executable, "-S", "-c", "pass"]),
             ("python3 json.loads of the tiny header", [sys.executable, "-c", PY_LOADS, tiny])]
    if a.baseline:
        start += [("baseline --version (%s)" % a.baseline, [a.baseline, "--version"]),
                  ("baseline validate (tiny file)", [a.baseline, "validate", tiny])]
    for label, (w, c, med, r) in best_interleaved(start, runs).items():
        row(label, w, c, r, "median %s" % fmt_ms(med))
    stub = cuda_link_stub()
    if stub:
        w, c, med, r = best_interleaved([("stub", [stub])], max(3, a.runs))["stub"]
        row("empty C++ program linking cudart + cuBLAS + cuBLASLt (what 0.1 loaded)", w, c, r)

    tmp = tempfile.mkdtemp(prefix="w4a8-cli-bench-")
    for n, order in [(int(s), o) for s in a.sizes.split(",") for o in a.orders.split(",")]:
        path = os.path.join(tmp, "bench-%d-%s.safetensors" % (n, order))
        subprocess.run([bench, "--tensors", str(n), "--order", order, "--write", path, "--repeats", "0"], check=True)
        tag = "%dk %s" % (n // 1000, order)
        hl = header_len(path)
        mb = hl / 1e6
        runs_n = a.runs if n <= 100000 else max(1, min(a.runs, 3))
        print("\n%d tensors, %s order: header %.2f MB, file %.1f MB" % (n, order, mb, os.path.getsize(path) / 1e6), flush=True)
        modes = [("validate (text)", []), ("validate --json", ["--json"]), ("validate --strict", ["--strict"]),
                 ("validate --summary", ["--summary"]), ("validate --quiet", ["--quiet"])]
        cmds = [("%s: w4a8check %s" % (tag, label), [cli, "validate"] + extra + [path]) for label, extra in modes]
        cmds.append(("%s: python3 process: json.loads(header)" % tag, [sys.executable, "-c", PY_LOADS, path]))
        # The same without site (-S): json needs only the stdlib, and site-packages hooks (.pth files
        # that import packages at every start) can add tens of ms that are not Python's json.loads.
        cmds.append(("%s: python3 -S process: json.loads(header)" % tag, [sys.executable, "-S", "-c", PY_LOADS, path]))
        if a.baseline:
            cmds += [("%s: baseline %s" % (tag, label), [a.baseline, "validate"] + extra + [path])
                     for label, extra in modes if label != "validate --strict" and label != "validate --summary"]
        timed = best_interleaved(cmds, runs_n)
        for label, (w, c, med, r) in timed.items():
            row(label, w, c, r, "%.0f MB/s of header (wall); median %s" % (mb / w, fmt_ms(med)))
        results = {label: (timed["%s: w4a8check %s" % (tag, label)][:2]) for label, _ in modes}
        w_py, c_py = timed["%s: python3 process: json.loads(header)" % tag][:2]
        w_pys = timed["%s: python3 -S process: json.loads(header)" % tag][0]
        t_open, t_all = cpp_inprocess(bench, path, runs_n)
        t_py = py_inprocess(path, runs_n)
        row("%s: in process: C++ File::open (mmap + header parse)" % tag, t_open, None, 0, "%.0f MB/s" % (mb / t_open))
        row("%s: in process: C++ File::open + validate::inspect" % tag, t_all, None, 0, "%.0f MB/s" % (mb / t_all))
        row("%s: in process: Python json.loads(header)" % tag, t_py, None, 0, "%.0f MB/s" % (mb / t_py))
        w_txt, c_txt = results["validate (text)"]
        w_q = results["validate --quiet"][0]
        ratio = ("%s: python3 json.loads process / w4a8check validate: %.1fx wall (text), %.1fx wall (--quiet), "
                 "%.1fx CPU (text); the same with python3 -S: %.1fx (text), %.1fx (--quiet); "
                 "in process json.loads / C++ open+inspect: %.1fx"
                 % (tag, w_py / w_txt, w_py / w_q, c_py / c_txt, w_pys / w_txt, w_pys / w_q, t_py / t_all))
        ratios.append(ratio)
        print("  " + ratio, flush=True)
        os.unlink(path)
    os.rmdir(tmp)
    table = ["| what | wall (min of runs) | CPU user+sys (min) | peak RSS | note |", "|---|---|---|---|---|"]
    table += ["| %s | %s | %s | %s | %s |" % r for r in rows]
    text = "Machine: %s\n\n%s\n\n%s\n" % (machine(), "\n".join(table), "\n".join("- " + r for r in ratios))
    print("\n" + text)
    if a.out:
        open(a.out, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
