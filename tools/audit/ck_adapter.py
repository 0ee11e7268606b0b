"""comfy-kitchen's W4A8 linear as a w4a8check audit implementation (docs/audit.md).

    w4a8check audit check SUITE --command "PY tools/audit/ck_adapter.py --backend eager"
    w4a8check audit check SUITE --command "PY tools/audit/ck_adapter.py --backend cuda"   (GPU)

PY is a Python with torch and comfy-kitchen (e.g. ~/.cache/w4a8check/ck-venv/bin/python).
The output always comes from comfy-kitchen's public `w4a8_int8_linear` under the chosen backend.
With --backend eager on the CPU the adapter also hands over intermediates, computed by calling
comfy-kitchen's own eager building blocks (the int4/int8 decode, the ConvRot activation rotation,
the per-row int8 quantizer and the int8 matmul) in the order its eager linear uses them, so that
the audit can attribute any difference to a stage. With --outputs-only (the default for the CUDA
backend, whose fused kernels expose no intermediates) only `output` is returned.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from audit_protocol import Skip, UpstreamError, serve  # noqa: E402

torch = None  # imported in main(), after the arguments: --help works without torch
DTYPES = {}  # "f32" / "bf16" / "f16" -> torch dtype, set with the import


def load_case(job):
    from safetensors.torch import load_file

    t = load_file(job["case"])
    p = job.get("layer_prefix", "layer")
    e = job["entry"]
    layer = {
        "qdata": t[p + ".weight"],
        "s_rel": t[p + ".weight_s_rel"],
        "s_channel": t[p + ".weight_s_channel"],
        "codebook": t.get(p + ".weight_codebook"),
        "correction": t.get(p + ".weight_correction"),
        "bias": t.get(p + ".bias"),
        "group_size": int(e["group_size"]),
        "convrot_groupsize": int(e["convrot_groupsize"]),
    }
    return layer, t[job.get("input_key", "input")]


def make_runner(backend: str, device: str, outputs_only: bool):
    import comfy_kitchen as ck
    from comfy_kitchen.registry import registry

    def run_case(job):
        e = job["entry"]
        if job.get("policy", "f32") == "f32" and e["x_dtype"] != "f32" and backend == "eager":
            # The eager backend rotates and quantizes in the activation's dtype (the eager policy).
            raise Skip("comfy-kitchen's eager backend implements the eager activation policy only")
        layer, x = load_case(job)
        dev = torch.device(device)
        L = {k: (v.to(dev) if isinstance(v, torch.Tensor) else v) for k, v in layer.items()}
        x = x.to(dev)
        out_dtype = DTYPES[e["out_dtype"]]
        with torch.no_grad(), registry.use_backend(backend):
            out = ck.w4a8_int8_linear(
                x, L["qdata"], L["s_rel"], L["s_channel"], codebook=L["codebook"], correction=L["correction"],
                bias=L["bias"], group_size=L["group_size"], convrot_groupsize=L["convrot_groupsize"],
                out_dtype=out_dtype)
        result = {"output": out.reshape(x.shape[0], -1).to("cpu")}
        if outputs_only:
            return result
        from comfy_kitchen.backends.eager import w4a8_int8 as ew
        from comfy_kitchen.backends.eager import quantization as eq
        from comfy_kitchen.tensor import int8_utils as iu

        with torch.no_grad():
            w_q = ew._dequant_int4_grouped_to_int8(L["qdata"], L["s_rel"], L["codebook"], L["group_size"])
            result["w_q"] = w_q.to("cpu")
            if L["correction"] is None:
                h = iu._build_hadamard(L["convrot_groupsize"], device=x.device, dtype=x.dtype)
                x_rot = iu._rotate_activation(x, h, L["convrot_groupsize"])
                x_q, x_scale = eq.quantize_int8_rowwise(x_rot.reshape(-1, x.shape[-1]))
                acc = eq._int8_matmul_accumulate(x_q, w_q.T.contiguous())
                result["x_q"] = x_q.to("cpu")
                result["x_scale"] = x_scale.reshape(-1).to(torch.float32).to("cpu")
                result["acc"] = acc.to(torch.int32).to("cpu")
        return result

    return run_case


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="eager", help="comfy-kitchen backend: eager (CPU) or cuda")
    ap.add_argument("--device", default=None, help="torch device (default: cpu for eager, cuda for cuda)")
    ap.add_argument("--outputs-only", action="store_true", help="return only `output` (always for --backend cuda)")
    a = ap.parse_args()
    global torch
    import torch

    DTYPES.update({"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16})
    device = a.device or ("cuda" if a.backend == "cuda" else "cpu")
    outputs_only = a.outputs_only or a.backend != "eager"
    import comfy_kitchen as ck
    from comfy_kitchen.registry import registry

    version = getattr(ck, "__version__", "?")
    try:
        from importlib.metadata import version as dist_version

        version = dist_version("comfy-kitchen")
    except Exception:
        pass
    torch.set_num_threads(max(1, int(os.environ.get("W4A8_AUDIT_TORCH_THREADS", "2"))))
    if not registry.is_available(a.backend):
        reason = registry.list_backends().get(a.backend, {}).get("unavailable_reason") or "not registered"
        run_case = lambda job: (_ for _ in ()).throw(Skip(f"comfy-kitchen backend {a.backend!r} unavailable: {reason}"))
    elif device.startswith("cuda") and not torch.cuda.is_available():
        run_case = lambda job: (_ for _ in ()).throw(Skip("no CUDA device visible to torch"))
    else:
        run_case = make_runner(a.backend, device, outputs_only)
    name = f"comfy-kitchen {version} {a.backend} ({device}{', outputs only' if outputs_only else ''})"
    serve(name, "eager" if a.backend == "eager" else "f32", run_case)


if __name__ == "__main__":
    main()
