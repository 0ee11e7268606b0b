#!/usr/bin/env python3
"""Fuzzing effectiveness check: plants one bug at a time in a copy of the tree (exact text
replacements, like tools/mutation_check.sh), rebuilds the libFuzzer targets of fuzz/targets.txt
without sanitizers, removes the committed seeds that already trigger the bug, fuzzes each target
from the remaining seeds for at most BUDGET CPU-seconds (process user + system time, so a shared
machine does not shorten it) and reports the CPU time to the first failure and the executions
per bug and target, or "-" when not found.

  tools/fuzz/effectiveness.py                     (BUDGET=120 s per bug and target)
  tools/fuzz/effectiveness.py --budget 30 --bugs exp4,dupkey --targets marker_json

A finding is a crash or property failure (libFuzzer's "deadly signal"); timeouts and out-of-memory
exits are shown as such. Exit status 0 when every bug applied and built.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name, file, old text, new text, what the bug is
BUGS = [
    ("exp4", "src/json/number.cpp",
     "  bool whole = false;\n  const double d = strtod_c(lit, whole);\n  return whole ?",
     "  if (const auto e = lit.find_first_of(\"eE\"); e != std::string_view::npos &&\n"
     "      lit.size() - e - 1 - (lit[e + 1] == '+' || lit[e + 1] == '-') >= 4) lit.remove_suffix(1);\n"
     "  bool whole = false;\n  const double d = strtod_c(lit, whole);\n  return whole ?",
     "a JSON number with a 4-digit exponent is mis-parsed (last digit dropped)"),
    ("dupkey", "src/json/parse.cpp",
     "          v = Value{};\n          return &v;",
     "          return new Value();  // the new value goes nowhere (leaked)",
     "a duplicate key inside a marker keeps its first value (Python keeps the last)"),
    ("surrogate", "src/json/parse.cpp",
     "cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);",
     "cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00) % 0x200;",
     "an escaped surrogate pair with a low half >= \\uDE00 decodes to the wrong code point"),
    ("negzero", "src/json/number.cpp",
     'std::string out = std::signbit(d) ? "-" : "";',
     'std::string out = d < 0 ? "-" : "";',
     "repr/dump of -0.0 loses its sign"),
    ("depth", "src/json/parse.cpp",
     "const int limit = python() ? python_depth_ : kSerdeMaxDepth;",
     "const int limit = python() ? python_depth_ + 1 : kSerdeMaxDepth;",
     "Python recursion limit one container too deep"),
    ("sizecheck", "src/safetensors/reader.cpp",
     "if (t.end - t.begin != *bits / 8) return make_error(ErrorKind::StTensorInvalidInfo);",
     "",
     "reader accepts a tensor whose byte size does not match its dtype and shape"),
    ("trailing", "src/safetensors/reader.cpp",
     "if (!total || *total != file_size) return",
     "if (!total || *total > file_size) return",
     "reader accepts trailing bytes after the last tensor"),
    ("groupbound", "src/validate/rules_w4a8.cpp",
     "group->compare(4) < 0",
     "group->compare(3) < 0",
     "W4A8 group_size lower bound 4 -> 3"),
    ("conflict", "src/validate/collect.cpp",
     "if (!json::py_equal(previous, marker))",
     "if (false)",
     "conflicting markers for one layer accepted"),
    ("mxfp8", "src/validate/mxfp8.cpp",
     "weight->shape[1] % 32 == 0",
     "weight->shape[1] % 16 == 0",
     "MXFP8 block size 32 -> 16"),
    # (Dropping only the DEL test of the first branch changes nothing: DEL then fails
    # is_printable and is escaped further down. The ASCII branch must take it.)
    ("reprdel", "src/py/repr.cpp",
     "} else if (cp < ' ' || cp == 0x7F) {\n      out += \"\\\\x\";\n      append_hex(out, cp, 2);\n    } else if (cp < 0x7F) {",
     "} else if (cp < ' ') {\n      out += \"\\\\x\";\n      append_hex(out, cp, 2);\n    } else if (cp <= 0x7F) {",
     "repr() prints DEL (0x7f) raw instead of \\x7f"),
    ("elfend", "src/plugin/elf_check.cpp",
     "if (s.p_offset + s.p_filesz > size)",
     "if (s.p_offset + s.p_filesz > size + 4096)",
     "the plugin preflight accepts a PT_LOAD/PT_DYNAMIC segment ending up to a page past the file"),
]


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=True, **kw)


def targets():
    with open(os.path.join(ROOT, "fuzz/targets.txt")) as f:
        return [l.strip() for l in f if re.fullmatch(r"[a-z_0-9]+", l.strip())]


def flags(tree, t):
    out = subprocess.run(["bash", "-c", f"source {tree}/tools/fuzz/common.sh; W4A8_ROOT={tree} fuzz_flags {t}"],
                         capture_output=True, text=True, check=True).stdout.split()
    return out


def build(tree, bdir, tlist, jobs):
    r = sh(f"nice cmake --build {bdir} -j{jobs} --target " + " ".join(f"fuzz_{t}" for t in tlist),
           capture_output=True, text=True)
    return r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


def triggers(binary, path):
    r = subprocess.run([binary, "-timeout=25", "-rss_limit_mb=2048", path], capture_output=True, text=True)
    return r.returncode != 0


def cpu_seconds(pid):
    """User + system CPU time of a running process (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def fuzz(binary, fl, seeds, work, budget):
    """Fuzzes until the first failure or until the process has used `budget` CPU seconds (so a
    machine shared with other jobs does not shorten the budget). Returns (result, cpu, execs, why)."""
    corpus = os.path.join(work, "corpus")
    art = os.path.join(work, "art") + "/"
    shutil.rmtree(corpus, ignore_errors=True)
    shutil.rmtree(art, ignore_errors=True)
    os.makedirs(corpus)
    os.makedirs(art)
    logf = open(os.path.join(work, "fuzz.log"), "w+")
    p = subprocess.Popen([binary, "-print_final_stats=1", "-timeout=25", "-rss_limit_mb=2048",
                          f"-max_total_time={budget * 20}", f"-artifact_prefix={art}"] + fl + [corpus, seeds],
                         stdout=logf, stderr=subprocess.STDOUT)
    cpu, stopped = 0.0, False
    while p.poll() is None:
        time.sleep(0.2)
        c = cpu_seconds(p.pid)
        cpu = c if c is not None else cpu
        if cpu >= budget and not stopped:
            p.send_signal(signal.SIGINT)  # libFuzzer prints its final stats and exits 0 here
            stopped = True
    logf.seek(0)
    log = logf.read()
    logf.close()
    m = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
    execs = int(m[-1]) if m else 0
    if stopped or p.returncode == 0:
        return "-", cpu, execs, ""
    kind = "found"
    if "ERROR: libFuzzer: timeout" in log:
        kind = "timeout"
    elif "out-of-memory" in log:
        kind = "oom"
    why = ""
    pm = re.search(r"property failed:\n(.*)", log)
    if pm:
        why = pm.group(1)[:110]
    return kind, cpu, execs, why


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=int, default=int(os.environ.get("BUDGET", "120")))
    ap.add_argument("--bugs", default="")
    ap.add_argument("--targets", default="")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("JOBS", "2")))
    ap.add_argument("--parallel", type=int, default=3, help="targets fuzzed at once for one bug")
    ap.add_argument("--keep", action="store_true", help="keep the temp tree (for a rerun)")
    ap.add_argument("--work", default="", help="reuse this work dir (its tree and build) from a --keep run")
    a = ap.parse_args()
    tlist = a.targets.split(",") if a.targets else targets()
    bugs = [b for b in BUGS if not a.bugs or b[0] in a.bugs.split(",")]
    work = a.work or tempfile.mkdtemp(prefix="w4a8-effect-")
    tree, bdir = os.path.join(work, "tree"), os.path.join(work, "build")
    os.makedirs(tree, exist_ok=True)
    sh(f"tar -C {ROOT} --exclude='./build*' --exclude='./.git' --exclude='./fuzz-corpus' --exclude='./fuzz-artifacts' "
       f"-cf - . | tar -C {tree} -xf -", check=True)
    for b in BUGS:  # a reused tree may have been left mid-bug: rebuild these from the fresh copy
        os.utime(os.path.join(tree, b[1]))
    env = dict(os.environ, CC="clang", CXX="clang++")
    launcher = "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache" if shutil.which("ccache") else ""
    sh(f"cmake -S {tree} -B {bdir} -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DW4A8_FUZZ=ON -DW4A8_CUDA=OFF "
       f"-DW4A8_BENCH=OFF {launcher} >/dev/null", check=True, env=env)
    ok, log = build(tree, bdir, tlist, a.jobs)
    if not ok:
        print("baseline build FAILED\n" + log)
        return 1
    for t in tlist:  # the seeds must pass on the unmodified code
        r = subprocess.run([f"{bdir}/fuzz/fuzz_{t}", "-runs=0"] + flags(tree, t) + [f"{tree}/corpus/{t}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"baseline seeds of {t} FAIL:\n" + (r.stdout + r.stderr)[-2000:])
            return 1
    print(f"fuzz effectiveness: {a.budget} CPU-s budget per bug and target, no sanitizers, "
          f"{os.cpu_count()} CPUs; cells: CPU time to first failure (executions), '-' = not found; "
          f"sK/N = K of the N committed seeds left after removing those that already fail")
    header = f"{'bug':<11}" + "".join(f"{t:>28}" for t in tlist) + "  what"
    print(header, flush=True)
    status = 0
    details = []
    for name, rel, old, new, what in bugs:
        path = os.path.join(tree, rel)
        src = open(path).read()
        if old not in src:
            print(f"{name:<11}" + "".join(f"{'NOAPPLY':>28}" for _ in tlist) + f"  {what}", flush=True)
            status = 1
            continue
        open(path, "w").write(src.replace(old, new, 1))
        ok, log = build(tree, bdir, tlist, a.jobs)
        cells = []
        if not ok:
            cells = ["NOBUILD"] * len(tlist)
            status = 1
            details.append(f"{name}: build failed\n{log}")
        else:
            def run_target(t):
                binary = f"{bdir}/fuzz/fuzz_{t}"
                tw = os.path.join(work, f"run-{t}")
                seeds = os.path.join(tw, "seeds")
                shutil.rmtree(tw, ignore_errors=True)
                os.makedirs(seeds)
                total = kept = 0
                for s in sorted(os.listdir(f"{tree}/corpus/{t}")):
                    total += 1
                    p = f"{tree}/corpus/{t}/{s}"
                    if not triggers(binary, p):
                        shutil.copy(p, seeds)
                        kept += 1
                res, cpu, execs, why = fuzz(binary, flags(tree, t), seeds, tw, a.budget)
                shown = f"{cpu:.0f}s" if res == "found" else res
                return f"{shown} ({execs}) s{kept}/{total}", (f"{name} / {t}: {why}" if why else "")

            # The targets of one bug fuzz side by side (each within its own CPU budget).
            with concurrent.futures.ThreadPoolExecutor(max_workers=a.parallel) as pool:
                results = list(pool.map(run_target, tlist))
            cells = [r[0] for r in results]
            details += [r[1] for r in results if r[1]]
        print(f"{name:<11}" + "".join(f"{c:>28}" for c in cells) + f"  {what}", flush=True)
        open(path, "w").write(src)
        os.utime(path)
    build(tree, bdir, tlist, a.jobs)
    if details:
        print("\nfirst failure message per finding:")
        for d in details:
            print("  " + d)
    if a.keep:
        print(f"tree kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
