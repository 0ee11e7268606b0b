#!/usr/bin/env python3
"""Generates the Unicode tables behind Python's repr()/int() and Rust's `{:?}`, one per version.

  src/py/unicode_data.inc                 per supported CPython (3.10 .. 3.14): code points where
                                          str.isprintable() is False, non-ASCII str.isspace(), and
                                          non-ASCII decimal digits with their values
  src/safetensors/rust_escape_table.inc   code points >= 0x80 that Rust's `{:?}` of a str prints as
                                          \\u{...}, for the Unicode version of the rustc that built
                                          the pinned `safetensors` wheel

Data: each Unicode version's UnicodeData comes from PyPI `unicodedata2` (one release per Unicode
version), installed into a venv per version under --venvs (default ~/.cache/w4a8check/unicode; the
tests reuse them as their oracle for Pythons that are not installed). Grapheme_Extend, which Rust's
`{:?}` escapes too and unicodedata2 does not expose, comes from PyPI `regex` at a release built on
the same Unicode version (checked: its \\p{Cn} must equal unicodedata2's Cn everywhere).

Rules, as each implementation derives them from UnicodeData.txt:
  CPython (Tools/unicode/makeunicodedata.py): printable unless the General_Category is C* or Z*
    (U+0020 excepted); space when the bidi class is WS, B or S or the category is Zs; decimal
    from the decimal-digit field.
  Rust (library/core/src/unicode/printable.py + char::escape_debug_ext): escaped when the category
    is Cc, Cf, Cs, Co, Cn, Zl, Zp or Zs (U+0020 excepted) or the code point is Grapheme_Extend.

Run: python3 tools/unicode/gen_unicode_tables.py   (needs network access to PyPI once)
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys

# CPython version -> the Unicode version of its unicodedata (3.10-3.13 checked against the real
# interpreters by tests/py/repr_test.cpp; 3.14 from its release notes, compared there against
# unicodedata2 16.0.0 when no 3.14 is installed).
PYTHONS = [("3.10", "13.0.0"), ("3.11", "14.0.0"), ("3.12", "15.0.0"), ("3.13", "15.1.0"), ("3.14", "16.0.0")]
# The rustc that built safetensors 0.8.0's wheel: Unicode 17.0.0 (probed: a header whose shape holds
# every code point; the wheel's message escapes exactly this table; tests/safetensors/unicode_test.cpp).
RUST_UNICODE = "17.0.0"
UNICODEDATA2 = {"13.0.0": "13.0.0.post2", "14.0.0": "14.0.0", "15.0.0": "15.0.0", "15.1.0": "15.1.0",
                "16.0.0": "16.0.0", "17.0.0": "17.0.0"}
REGEX = {"17.0.0": "2025.11.3"}  # a regex release whose Unicode data is exactly that version

CHILD = r"""
import json, sys
import unicodedata2 as u
want_ge = sys.argv[1] == "1"
assert u.unidata_version == sys.argv[2], (u.unidata_version, sys.argv[2])
cats, bidi, dec = [], [], {}
for cp in range(0x110000):
    c = chr(cp)
    cats.append(u.category(c))
    bidi.append(u.bidirectional(c))
    d = u.decimal(c, None)
    if d is not None:
        dec[cp] = d
ge = []
if want_ge:
    import regex
    cn = regex.compile(r"\p{Cn}")
    bad = [cp for cp in range(0x110000) if (cn.match(chr(cp)) is not None) != (cats[cp] == "Cn")]
    assert not bad, "regex %s is not Unicode %s: %d code points differ" % (regex.__version__, u.unidata_version, len(bad))
    gex = regex.compile(r"\p{Grapheme_Extend}")
    ge = [cp for cp in range(0x110000) if gex.match(chr(cp))]
json.dump({"cats": cats, "bidi": bidi, "dec": dec, "ge": ge}, sys.stdout)
"""


def interpreters():
    """Python interpreters to build venvs with: this one first, then others found on the machine
    (unicodedata2 13.0.0 only ships wheels up to CPython 3.8 and its sdist no longer builds)."""
    seen, out = set(), []
    cands = [sys.executable] + [shutil.which("python3.%d" % m) for m in range(8, 15)]
    cands += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")))
    for c in cands:
        if not c or c in seen:
            continue
        seen.add(c)
        try:
            subprocess.run([c, "-c", "import venv"], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError):
            continue  # e.g. a pyenv shim for a version that is not selected
        out.append(c)
    return out


def venv_python(root, version, with_regex):
    """A venv with unicodedata2 for this Unicode version (and regex when needed), created once."""
    path = os.path.join(root, "venv-" + version)
    py = os.path.join(path, "bin", "python")
    pkgs = ["unicodedata2==" + UNICODEDATA2[version]] + (["regex==" + REGEX[version]] if with_regex else [])
    if os.path.exists(py) and subprocess.run([py, "-c", "import unicodedata2" + (", regex" if with_regex else "")],
                                             capture_output=True).returncode == 0:
        return py
    for base in interpreters():
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run([base, "-m", "venv", path], check=True)
        r = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--only-binary=:all:"] + pkgs)
        if r.returncode == 0:
            return py
    sys.exit("no interpreter here can install " + " ".join(pkgs))


def load(root, version, with_regex):
    py = venv_python(root, version, with_regex)
    out = subprocess.run([py, "-c", CHILD, "1" if with_regex else "0", version], check=True,
                         capture_output=True, text=True).stdout
    data = json.loads(out)
    data["dec"] = {int(k): v for k, v in data["dec"].items()}
    return data


def ranges(pred, lo=0):
    out, start = [], None
    for cp in range(lo, 0x110000 + 1):
        inside = cp < 0x110000 and pred(cp)
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            out.append((start, cp - 1))
            start = None
    return out


def decimal_runs(dec):
    runs = []  # [first, last, value of first]: consecutive code points whose value rises by one
    for cp in sorted(c for c in dec if c >= 0x80):
        d = dec[cp]
        if runs and runs[-1][1] == cp - 1 and runs[-1][2] + (cp - runs[-1][0]) == d:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, d])
    return runs


def rows(items, fmt, per_line=4):
    lines = []
    for i in range(0, len(items), per_line):
        lines.append("    " + " ".join(fmt(x) for x in items[i:i + per_line]))
    return "\n".join(lines)


def python_tables(data):
    cats, bidi, dec = data["cats"], data["bidi"], data["dec"]
    nonprint = ranges(lambda cp: cp != 0x20 and cats[cp][0] in "CZ")
    space = ranges(lambda cp: bidi[cp] in ("WS", "B", "S") or cats[cp] == "Zs", lo=0x80)
    return nonprint, space, decimal_runs(dec)


def write_python(path, tables):
    w = []
    w.append("// Generated by tools/unicode/gen_unicode_tables.py from PyPI unicodedata2. Do not edit.")
    w.append("// Per CPython version: str.isprintable() False, non-ASCII str.isspace() True, non-ASCII")
    w.append("// decimal digits {first, last, value of first}. Inclusive, sorted, disjoint ranges.")
    names = []
    for py, ucd, (nonprint, space, dec) in tables:
        tag = ucd.replace(".", "_")
        names.append((py, ucd, tag))
        w.append("")
        w.append("// Unicode %s (CPython %s)" % (ucd, py))
        w.append("inline constexpr CodePointRange kNonPrintable_%s[] = {" % tag)
        w.append(rows(nonprint, lambda r: "{0x%X, 0x%X}," % r))
        w.append("};")
        w.append("inline constexpr CodePointRange kNonAsciiSpace_%s[] = {" % tag)
        w.append(rows(space, lambda r: "{0x%X, 0x%X}," % r))
        w.append("};")
        w.append("inline constexpr DecimalRun kNonAsciiDecimal_%s[] = {" % tag)
        w.append(rows(dec, lambda r: "{0x%X, 0x%X, %d}," % tuple(r)))
        w.append("};")
    w.append("")
    w.append("// In py::Version order.")
    w.append("inline constexpr VersionTables kVersionTables[] = {")
    for py, ucd, tag in names:
        w.append('    {"%s", "%s", kNonPrintable_%s, kNonAsciiSpace_%s, kNonAsciiDecimal_%s},' % (py, ucd, tag, tag, tag))
    w.append("};")
    with open(path, "w") as f:
        f.write("\n".join(w) + "\n")


def write_rust(path, data, version):
    cats, ge = data["cats"], set(data["ge"])
    escaped = ranges(lambda cp: cp in ge or (cats[cp] in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs") and cp != 0x20),
                     lo=0x80)
    with open(path, "w") as f:
        f.write("// Generated by tools/unicode/gen_unicode_tables.py (Unicode %s: unicodedata2 %s, Grapheme_Extend\n"
                "// from regex %s). Code points >= 0x80 that Rust's `{:?}` of a str escapes: [first, last].\n"
                % (version, UNICODEDATA2[version], REGEX[version]))
        f.write(rows(escaped, lambda r: "{0x%X, 0x%X}," % r).replace("    ", "", 0) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    ap = argparse.ArgumentParser()
    ap.add_argument("--venvs", default=os.path.expanduser("~/.cache/w4a8check/unicode"))
    args = ap.parse_args()
    os.makedirs(args.venvs, exist_ok=True)
    cache = {}
    tables = []
    for py, ucd in PYTHONS:
        if ucd not in cache:
            cache[ucd] = load(args.venvs, ucd, with_regex=ucd in REGEX)
        tables.append((py, ucd, python_tables(cache[ucd])))
    write_python(os.path.join(root, "src/py/unicode_data.inc"), tables)
    rust = cache.get(RUST_UNICODE) or load(args.venvs, RUST_UNICODE, with_regex=True)
    write_rust(os.path.join(root, "src/safetensors/rust_escape_table.inc"), rust, RUST_UNICODE)


if __name__ == "__main__":
    main()
