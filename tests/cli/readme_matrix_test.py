#!/usr/bin/env python3
"""The README's "Consumer matrix" section cannot go stale: its commands are rerun, outputs compared.

    readme_matrix_test.py README.md BUILD_DIR

Every line of the section's code block that starts with "$ " is a command, run from the repository
root with `build/` replaced by BUILD_DIR and `example-work/` by a fresh temporary directory; it must
exit 0 (or the status written after it as "# exit N"), and its stdout must equal the lines the README
shows after it, byte for byte (blank lines included; `example-work/` in them stands for the same
directory). At least three `validate --consumers` commands must be shown.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def block(readme):
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^## Consumer matrix\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        sys.exit("no '## Consumer matrix' section in " + readme)
    blocks = re.findall(r"^```\n(.*?)^```", m.group(1), re.S | re.M)
    if len(blocks) != 1:
        sys.exit("the section must hold exactly one code block, found %d" % len(blocks))
    return blocks[0].split("\n")[:-1]  # the block ends with a newline


def main(argv):
    readme, build = argv[1], os.path.abspath(argv[2])
    root = os.path.dirname(os.path.abspath(readme))
    steps = []  # [command, status, shown lines]
    for line in block(readme):
        if line.startswith("$ "):
            cmd, status = line[2:], 0
            m = re.search(r"\s+# exit (\d+)$", cmd)
            if m:
                cmd, status = cmd[: m.start()], int(m.group(1))
            steps.append([cmd, status, []])
        elif steps:
            steps[-1][2].append(line)
        else:
            sys.exit("output before the first command: " + line)
    matrices = sum("validate --consumers" in s[0] for s in steps)
    if matrices < 3:
        sys.exit("the section shows %d consumer matrices, expected at least 3" % matrices)
    work = tempfile.mkdtemp(prefix="w4a8-matrix-")
    try:
        for cmd, status, shown in steps:
            real = cmd.replace("example-work/", work + "/").replace("build/", build + "/")
            r = subprocess.run(real, shell=True, cwd=root, capture_output=True, text=True)
            got = r.stdout.replace(work + "/", "example-work/")
            want = "".join(l + "\n" for l in shown)
            if r.returncode != status:
                sys.exit("exit status %d, the README says %d: %s\n%s%s" % (r.returncode, status, cmd, r.stdout, r.stderr))
            if got != want:
                sys.stdout.write("README shows:\n" + want + "this run prints:\n" + got)
                sys.exit("the README's output of `%s` is stale (regenerate the section with these commands)" % cmd)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("consumer matrix section: %d commands, %d matrices, as shown" % (len(steps), matrices))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
