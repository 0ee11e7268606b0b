#!/usr/bin/env python3
"""A test implementation for the audit's external-command protocol, using only the standard
library: each job runs `w4a8check gemm --intermediates` on the case file (so a correct run is
bit-exact), or misbehaves on purpose with --mode:
  ok        answer every job correctly
  skip      answer "skip" for every job
  error     answer "error" (an upstream failure) for every job
  crash     exit after the hello line
  garbage   answer a line that is not JSON
  junk-once before the first answer of the whole audit (a marker file in the work directory
            remembers it), print a stray line; then answer correctly, also after a restart
  hang-mid-line-once  on the first job of the whole audit (a marker file), print half a status
            line and hang; then answer correctly, also after the restart
  extra-once after the first answer of the whole audit, print a second "ok" line no job asked for
  extra-late-once  the same, only once the next job has arrived (before answering it)
  exit1     exit with status 1 before the hello line
  no-output answer "ok" without writing the output
  no-hello  print nothing and exit
  silent    print nothing and stay (the hello deadline is --timeout)
  hang      say hello, start a child that sleeps (its pid written to $W4A8_TEST_PIDFILE), never answer
Usage: via_gemm.py W4A8CHECK [--mode MODE]
"""
import json
import os
import subprocess
import sys
import time


def main():
    binary = sys.argv[1]
    mode = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--mode" else "ok"
    if mode == "no-hello":
        return
    if mode == "exit1":
        print("giving up", file=sys.stderr, flush=True)
        sys.exit(1)
    if mode == "silent":
        time.sleep(300)
        return
    print(json.dumps({"protocol": "w4a8check-audit-1", "name": "via-gemm-" + mode, "policy": "f32"}), flush=True)
    if mode == "crash":
        return
    if mode == "hang":  # ignores stdin's EOF too: only a kill of its process group ends both
        child = subprocess.Popen(["sleep", "300"])
        with open(os.environ["W4A8_TEST_PIDFILE"], "w") as f:
            f.write("%d %d\n" % (os.getpid(), child.pid))
        time.sleep(300)
        return
    stray_due = False  # extra-late-once: the stray line goes out when the next job has arrived
    for line in sys.stdin:
        job = json.loads(line)
        if stray_due:
            print(json.dumps({"status": "ok"}), flush=True)
            stray_due = False
        if mode == "skip":
            print(json.dumps({"status": "skip", "message": "this test command skips everything"}), flush=True)
            continue
        if mode == "error":
            print(json.dumps({"status": "error", "message": "RuntimeError: deliberate"}), flush=True)
            continue
        if mode == "garbage":
            print("this is not json", flush=True)
            continue
        if mode == "no-output":
            print(json.dumps({"status": "ok"}), flush=True)
            continue
        first = False  # the first job of the whole audit (restarts included)
        if mode in ("junk-once", "hang-mid-line-once", "extra-once", "extra-late-once"):
            marker = os.path.join(os.path.dirname(job["out"]), ".first-job-seen")
            first = not os.path.exists(marker)
            if first:
                open(marker, "w").close()
        if mode == "junk-once" and first:
            print("warming up", flush=True)
        if mode == "hang-mid-line-once" and first:
            sys.stdout.write('{"status": "sk')
            sys.stdout.flush()
            time.sleep(300)
        print(json.dumps(answer_with_gemm(binary, job)), flush=True)
        if mode == "extra-once" and first:
            print(json.dumps({"status": "ok"}), flush=True)
        if mode == "extra-late-once" and first:
            stray_due = True


def answer_with_gemm(binary, job):
    """The answer to one job from `w4a8check gemm --intermediates` (its output file written)."""
    e = job["entry"]
    if e["bits"] != 4 or e["scale_dtype"] != "f8_e4m3":
        # `w4a8check gemm` checks the layer with sglang's rules first, which refuse comfy-kitchen
        # 0.2.40's 6-bit codes and F32 group scales.
        return {"status": "skip", "message": "w4a8check gemm: sglang's rules refuse this storage"}
    r = subprocess.run([binary, "gemm", "--checkpoint", job["case"], "--layer", job["layer_prefix"],
                        "--input", job["case"], "--input-key", job["input_key"], "--out", job["out"],
                        "--out-dtype", e["out_dtype"], "--policy", job["policy"], "--impl", "literal",
                        "--intermediates"], capture_output=True, text=True)
    if r.returncode != 0:
        return {"status": "error", "message": r.stdout + r.stderr}
    return {"status": "ok"}


if __name__ == "__main__":
    main()
