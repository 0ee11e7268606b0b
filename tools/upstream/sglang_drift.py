#!/usr/bin/env python3
"""Drift check: w4a8check's validator against sglang's REAL inspect_comfy_quant_markers.

For every profiled sglang release (src/core/sglang_versions.def), the release's wheel is fetched into
the cache (tools/upstream/sglang_upstream.py) and its function is run over
  (a) the validator catalogue (corpus/validator, non-strict cases), and
  (b) N freshly generated checkpoints (gen_drift_cases generate: the project's scenario generator),
  (c) --metadata-n checkpoints of one valid W4A8 layer whose _quantization_metadata text is made
      here at random (metadata_text(): keys with escapes and repeated, "layers" twice, NaN,
      nested values, markers that are not objects, ints past Python's digit limit, nesting past
      its recursion limit, syntax errors): the metadata reader's every path against json.loads,
  (d) pairs of markers of one prefix nested to json.loads' limit (gen_drift_cases deep-merge): the
      per-key merge's `!=` and its RecursionError, and NaN at the limit, compared by verdict, type
      and message only,
and each verdict is compared with OUR validator's verdict for that profile (gen_drift_cases writes
them): accepted or not, exception type, message, and the full result dict (prefix order, every
marker key in order, derived keys, value types: bool/int/float/str kept apart, NaN == NaN).

Our verdicts are predicted for the interpreter that runs this script (gen_drift_cases --python X.Y),
which runs sglang's function too: run it with another Python (tools/upstream/drift_pythons.sh does,
for every interpreter it finds) to hold that interpreter's json.loads, int() and repr() facts
against the real thing.

Usage:
  sglang_drift.py --cases-exe BUILD/tests/gen/gen_drift_cases [--n 2000] [--metadata-n 500] [--seed S]
                  [--versions 0.5.19,0.5.23] [--wheel VERSION --profile VERSION] [--real-torch]
  --wheel/--profile: run release VERSION's wheel (profiled or not, e.g. a new release) against our
  prediction for profile PROFILE (tools/upstream/latest.sh uses it for the newest release).
Exit status: 0 all agree; 1 a difference (each one printed) or a wheel that cannot be had;
77 skipped, only when W4A8_OFFLINE=1 and a wheel is not cached (printed plainly).
"""
import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import sglang_upstream as upstream  # noqa: E402
sys.path.insert(0, os.path.dirname(HERE))
import make_validator_catalogue as catalogue  # noqa: E402  (its container writer and layer tensors)

SHOWN = 8  # differences printed per source and release


def same(a, b):
    """Exact equality of JSON-built Python values: types kept apart, NaN equal to NaN, dict order.
    Iterative: Python 3.13 reads markers nested 9,998 deep, past this interpreter's call depth."""
    todo = [(a, b)]
    while todo:
        x, y = todo.pop()
        if type(x) is not type(y):
            return False
        if isinstance(x, float):
            if not ((math.isnan(x) and math.isnan(y)) or x == y):
                return False
        elif isinstance(x, list):
            if len(x) != len(y):
                return False
            todo.extend(zip(x, y))
        elif isinstance(x, dict):
            if list(x) != list(y):
                return False
            todo.extend((x[k], y[k]) for k in x)
        elif x != y:
            return False
    return True


def difference(ours, theirs):
    """'' when the verdicts agree, else what differs (no layers in ours: the verdict alone)."""
    if ours["ok"] != theirs["ok"]:
        return "accepted: ours %s, sglang %s" % (ours["ok"], theirs["ok"])
    if not ours["ok"]:
        if ours["type"] != theirs["type"]:
            return "exception type: ours %s, sglang %s" % (ours["type"], theirs["type"])
        if ours["message"] != theirs["message"]:
            return "message:\n      ours:   %r\n      sglang: %r" % (ours["message"], theirs["message"])
        return ""
    if "layers" not in ours:
        return ""
    a, b = ours["layers"], theirs["layers"]
    if list(a) != list(b):
        return "layers: ours %r, sglang %r" % (list(a)[:8], list(b)[:8])
    for p in a:
        if not same(a[p], b[p]):
            return "marker %r:\n      ours:   %s\n      sglang: %s" % (p, json.dumps(a[p])[:400], json.dumps(b[p])[:400])
    return ""


def compare(label, cases, base_dir, wheel_version, profile, real_torch):
    """Runs the wheel over every case; returns (agree, differ)."""
    fn = upstream.upstream_function(wheel_version, real_torch)
    agree = differ = 0
    for case in cases:
        raw = upstream.verdict(fn, case["files"], os.path.join(base_dir, case["dir"]))
        try:
            theirs = json.loads(json.dumps(raw))
        except RecursionError:  # a marker nested past what json.dumps can write: the verdict alone
            if case.get("compare") != "verdict":
                raise
            theirs = {k: raw[k] for k in ("ok", "type", "message")}
        why = difference(case["verdicts"][profile], theirs)
        if not why:
            agree += 1
            continue
        differ += 1
        if differ <= SHOWN:
            print("DIFF %s sglang %s (our profile %s) %s: %s" % (label, wheel_version, profile, case["dir"], why))
    return agree, differ


def write_layer_checkpoint(path, metadata_text):
    """One asym_w4a8_int8 layer "m.l" (the catalogue's tensors, no marker tensor) and the text as its
    _quantization_metadata: the tensors every metadata case shares."""
    with open(path, "wb") as f:
        f.write(catalogue.container(catalogue.w4a8("m.l", mark=False), {"_quantization_metadata": metadata_text}))


def metadata_text(rng):
    """A random _quantization_metadata text, as JSON source: mostly valid, in every shape json.loads
    accepts, with an error now and then."""
    layer_keys = ['"m.l"', '"m.\\u006c"', '"\\u006d.l"']  # the layer the tensors make, spelled three ways
    keys = ['"x"', '"caf\u00e9"', '"\\ud800"', '"a"', '"\\u0061"', '"b\\n"', '""']
    w4a8 = ['{"format": "asym_w4a8_int8"}', '{"format":"asym_w4a8_int8","group_size":16}',
            '{"format": "asym_w4a8_int8", "convrot": true, "convrot_groupsize": 16}', '{"format": "ASYM_W4A8_INT8"}',
            '{"format": "asym_w4a8_int8", "group_size": 12345678901234567890123}']
    # (the second: flat, no escape, no "format" key, so the validator keeps it as text until asked)
    others = ['{}', '{"n": 1.5e3, "s": "}{[", "n": "\u00e9", "Format": null}', '{"format": "unknown"}',
              '{"k": [1, {"a": NaN}], "k": 2}', '{"x": "\\u00e9\\n"}',
              '{"format": "asym_w4a8_int8"}', '1', '[]', 'null']
    root_values = ['"1.0"', '[1, 2.5e3, -Infinity, []]', '{"a": {"b": [null]}, "a": 1}', '"\\ud83d\\ude00"',
                   '%s' % ("9" * 4301), '%s]' % ("[" * 1000 + "]" * 999), '01', '{"k": 1,}']
    ws = lambda: rng.choice(["", " ", "\n", "\t "])
    def layers():
        members = [(rng.choice(keys), rng.choice(others if rng.random() < 0.15 else others[:5]))
                   for _ in range(rng.randrange(4))]
        for _ in range(1 if rng.random() < 0.8 else rng.randrange(3)):  # the real layer, maybe twice or not at all
            members.insert(rng.randrange(len(members) + 1), (rng.choice(layer_keys), rng.choice(w4a8 + others[:2])))
        return "{" + ",".join("%s%s:%s%s" % (ws(), k, ws(), v) for k, v in members) + "}"
    members = []
    for _ in range(rng.randrange(4)):
        members.append(('"layers"', layers()) if rng.random() < 0.2 else
                       (rng.choice(['"format_version"', '"x"', '"la\\u0079ers"']),
                        rng.choice(root_values if rng.random() < 0.15 else root_values[:4])))
    if rng.random() < 0.9:
        members.insert(rng.randrange(len(members) + 1), ('"layers"', layers()))
    text = ws() + "{" + ",".join("%s%s:%s%s" % (ws(), k, ws(), v) for k, v in members) + "}" + ws()
    if rng.random() < 0.03:
        text = rng.choice(['[]', '"layers"', '1', '{"layers": 1}', '[' * 1000 + ']' * 1000])
    if rng.random() < 0.05:
        text = text[:rng.randrange(len(text) + 1)]  # cut short
    return text


def metadata_cases(n, seed, work):
    """n case directories under work (model.safetensors, case.json, as the catalogue's)."""
    rng = random.Random(seed)
    for i in range(n):
        d = os.path.join(work, "meta-%05d" % i)
        os.makedirs(d)
        write_layer_checkpoint(os.path.join(d, "model.safetensors"), metadata_text(rng))
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"files": ["model.safetensors"], "strict": False}, f)


def run_exe(args, **kw):
    r = subprocess.run(args, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(args), r.returncode, r.stderr[-2000:]))
    return r.stdout


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases-exe", required=True, help="the gen_drift_cases executable")
    ap.add_argument("--n", type=int, default=2000, help="generated checkpoints (default 2000)")
    ap.add_argument("--metadata-n", type=int, default=500,
                    help="checkpoints with a random _quantization_metadata text (default 500)")
    ap.add_argument("--seed", type=int, default=None, help="generator seed (default: time-based, printed)")
    ap.add_argument("--versions", help="comma-separated profiled releases (default: all)")
    ap.add_argument("--wheel", help="release whose wheel to run (with --profile)")
    ap.add_argument("--profile", help="our profile to compare --wheel with (default: the newest)")
    ap.add_argument("--catalogue", default=os.path.join(ROOT, "corpus", "validator"))
    ap.add_argument("--real-torch", action="store_true", help="the real safe_open(framework='pt') (needs torch)")
    a = ap.parse_args(argv[1:])

    profiled = [v for v, _ in upstream.profiles()]
    if a.wheel:
        pairs = [(a.wheel, a.profile or profiled[-1])]
    else:
        pairs = [(v, v) for v in (a.versions.split(",") if a.versions else profiled)]
    for _, p in pairs:
        if p not in profiled:
            sys.exit("unknown profile %s (profiled: %s)" % (p, ", ".join(profiled)))
    try:
        for w, _ in pairs:
            upstream.ensure_wheel(w)
    except upstream.WheelUnavailable as e:
        if os.environ.get("W4A8_OFFLINE") == "1":
            print("SKIPPED (W4A8_OFFLINE=1): %s" % e)
            return 77
        print("FAIL: the sglang wheel is needed and could not be had: %s" % e)
        print("      (offline? set W4A8_OFFLINE=1 to skip this check, visibly)")
        return 1

    seed = a.seed if a.seed is not None else int(time.time()) % 1000000
    python = "%d.%d" % sys.version_info[:2]
    exe = [a.cases_exe, "--python", python]
    t0 = time.time()
    work = tempfile.mkdtemp(prefix="w4a8-sglang-drift-")
    failed = False
    deep = []
    try:
        catalogue = [json.loads(l) for l in run_exe(exe + ["judge", a.catalogue]).splitlines() if l.strip()]
        run_exe(exe + ["generate", str(a.n), str(seed), work])
        with open(os.path.join(work, "cases.jsonl"), encoding="ascii") as f:
            generated = [json.loads(l) for l in f if l.strip()]
        if len(generated) != a.n:
            sys.exit("gen_drift_cases wrote %d cases, not %d" % (len(generated), a.n))
        meta_dir = os.path.join(work, "metadata")
        os.makedirs(meta_dir)
        metadata_cases(a.metadata_n, seed, meta_dir)
        metadata = [json.loads(l) for l in run_exe(exe + ["judge", meta_dir]).splitlines() if l.strip()]
        if len(metadata) != a.metadata_n:
            sys.exit("gen_drift_cases judged %d metadata cases, not %d" % (len(metadata), a.metadata_n))
        deep_dir = os.path.join(work, "deep")
        deep = [json.loads(l) for l in run_exe(exe + ["deep-merge", deep_dir]).splitlines() if l.strip()]
        for wheel, profile in pairs:
            for label, cases, base in (("catalogue", catalogue, a.catalogue), ("generated", generated, work),
                                       ("metadata", metadata, meta_dir), ("deep-merge", deep, deep_dir)):
                try:
                    agree, differ = compare(label, cases, base, wheel, profile, a.real_torch)
                except upstream.WheelUnavailable as e:  # e.g. a release without the function
                    print("FAIL: sglang %s: %s" % (wheel, e))
                    failed = True
                    break
                print("sglang %-8s vs our profile %-7s %-9s: %5d agree, %d differ" % (wheel, profile, label, agree, differ))
                failed |= differ > 0
    finally:
        if not failed:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("generated cases kept in %s (seed %d)" % (work, seed))
    print("%s: %d catalogue cases + %d generated checkpoints + %d metadata texts (seed %d) + %d deep merges x %d "
          "release(s), Python %s, %.1f s" % ("FAIL" if failed else "ok", len(catalogue), a.n, a.metadata_n, seed,
                                             len(deep), len(pairs), sys.version.split()[0], time.time() - t0))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
