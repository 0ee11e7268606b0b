#!/usr/bin/env python3
"""Runs the README's "Worked example" exactly as written and checks what it shows.

    worked_example_test.py README.md BUILD_DIR

Every line of the section's code block that starts with "$ " is a command, run from the repository
root with `build/` replaced by BUILD_DIR and `example-work/` by a fresh temporary directory; it must
exit 0 (or the status written after it as "# exit N"). Every other line of the block is output the
README shows: it must appear in the command's stdout+stderr.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def section(readme):
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^## Worked example\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        sys.exit("no '## Worked example' section in " + readme)
    blocks = re.findall(r"^```\n(.*?)^```", m.group(1), re.S | re.M)
    if not blocks:
        blocks = ["\n".join(l[4:] for l in m.group(1).splitlines() if l.startswith("    ")) + "\n"]
    return [l for b in blocks for l in b.splitlines()]


def main(argv):
    readme, build = argv[1], os.path.abspath(argv[2])
    root = os.path.dirname(os.path.abspath(readme))
    work = tempfile.mkdtemp(prefix="w4a8-worked-")
    steps = []  # (command, expected status, shown output lines)
    for line in section(readme):
        if line.startswith("$ "):
            cmd, status = line[2:], 0
            m = re.search(r"\s+# exit (\d+)$", cmd)
            if m:
                cmd, status = cmd[: m.start()], int(m.group(1))
            steps.append((cmd, status, []))
        elif line.strip() and steps:
            steps[-1][2].append(line)
    if len(steps) < 4:
        sys.exit("the worked example has %d commands, expected at least 4" % len(steps))
    def subst(s):
        return s.replace("example-work/", work + "/").replace("build/", build + "/")
    try:
        for cmd, status, shown in steps:
            real = subst(cmd)
            print("$ " + real, flush=True)
            r = subprocess.run(real, shell=True, cwd=root, capture_output=True, text=True)
            out = r.stdout + r.stderr
            sys.stdout.write(out)
            if r.returncode != status:
                sys.exit("exit status %d, the README says %d: %s" % (r.returncode, status, cmd))
            # Whole lines: every line shown is a line printed (stdout and stderr, which a terminal
            # interleaves); and unless the README elides some with a "..." line, every line printed
            # is shown.
            printed = out.splitlines()
            for s in shown:
                if s.strip() != "..." and subst(s) not in printed:
                    sys.exit("the README shows a line this run does not print:\n  " + s)
            if not any(s.strip() == "..." for s in shown):
                wanted = {subst(s) for s in shown}
                for p in printed:
                    if p not in wanted:
                        sys.exit("this run prints a line the README does not show (add it, or a '...' line):\n  " + p)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("worked example: %d commands as documented" % len(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
