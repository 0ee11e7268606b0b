"""The w4a8check audit line protocol (docs/audit.md), for external implementations.

An adapter calls serve(name, policy, run_case). serve() prints the hello line, then for every job
line on stdin calls run_case(job) (the job's dict: its "case" path, "entry", "policy", ...; the case
file is the adapter's to read) and answers one status line:
  run_case returns a dict of numpy arrays / torch tensors ("output" and optionally "w_q", "x_q",
  "x_scale", "acc"), which serve() writes to job["out"] as safetensors; or raises Skip(reason)
  (the implementation does not handle this case) or UpstreamError(text) (it raised on a valid case).
Any other exception is reported as an upstream error too, with its type and message.
Needs the `safetensors` and `numpy` packages only.
"""
from __future__ import annotations

import json
import os
import sys
import traceback

PROTOCOL = "w4a8check-audit-1"


class Skip(Exception):
    """The implementation does not handle this case (a capability it lacks)."""


class UpstreamError(Exception):
    """The implementation itself failed on a valid case."""


def _reply(status: str, message: str = "") -> None:
    sys.stdout.write(json.dumps({"status": status, "message": message}) + "\n")
    sys.stdout.flush()


def _write(path: str, tensors: dict) -> None:
    # Written to a temp name and renamed, like every w4a8check output.
    from safetensors.numpy import save_file
    import numpy as np

    arrays = {}
    for name, t in tensors.items():
        if hasattr(t, "detach"):  # a torch tensor: keep bf16/f16 bits exactly via safetensors.torch
            arrays = None
            break
        arrays[name] = np.ascontiguousarray(t)
    tmp = path + ".tmp"
    if arrays is None:
        from safetensors.torch import save_file as save_torch

        save_torch({k: v.detach().cpu().contiguous() for k, v in tensors.items()}, tmp)
    else:
        save_file(arrays, tmp)
    os.replace(tmp, path)


def serve(name: str, policy: str, run_case) -> None:
    """Runs the protocol on stdin/stdout until stdin closes."""
    sys.stdout.write(json.dumps({"protocol": PROTOCOL, "name": name, "policy": policy}) + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        job = json.loads(line)
        try:
            tensors = run_case(job)
            _write(job["out"], tensors)
            _reply("ok")
        except Skip as e:
            _reply("skip", str(e))
        except UpstreamError as e:
            _reply("error", str(e))
        except Exception as e:  # the implementation raised: its failure, reported as such
            traceback.print_exc(file=sys.stderr)
            _reply("error", f"{type(e).__name__}: {e}")
