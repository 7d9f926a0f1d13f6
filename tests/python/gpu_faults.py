# Python implementations that go wrong on the GPU, for the GPU tests and
# scripts/gpu-python.sh (issue 44): layernorm forward, fp32. Each must cost
# its own rows only.
#   raises   an exception in launch: an error row with this file's line
#   wrong    writes zeros: a FAIL row (verification)
#   faults   a Triton kernel storing 256 GB past y: an illegal address,
#            isolated like a C plugin's fault (the helper restarts)
#   syncs    right, but synchronises inside launch: under --timing graph it
#            cannot be captured, so its rows fall back to events and say so
try:
    import torch
except ImportError:
    torch = None
try:
    import triton
    import triton.language as tl

    @triton.jit
    def _oob(Y):
        tl.store(Y + (1 << 36), 1.0)
except ImportError:
    triton = None


def _fp32_fwd(case):
    if torch is None:
        return "torch not importable"
    return None if case.dtype == "fp32" and case["pass"] == "fwd" else "fp32 forward only"


def _views(case, tensors, stream):
    return {k: torch.from_dlpack(v) for k, v in tensors.items()}, torch.cuda.ExternalStream(stream)


def _layernorm(t):
    y, mean, rstd = torch.native_layer_norm(t["x"], (t["x"].shape[-1],), t.get("gamma"), t.get("beta"), 1e-5)
    return {"y": y, "mean": mean, "rstd": rstd}


def raises(case, tensors, stream, state):
    raise RuntimeError("this launch raises")


def wrong(case, tensors, stream, state):
    t, s = state
    with torch.cuda.stream(s):
        t["y"].zero_(), t["mean"].zero_(), t["rstd"].zero_()


def faults(case, tensors, stream, state):
    t, s = state
    if triton is None:
        raise RuntimeError("no triton here")
    with torch.cuda.stream(s):
        _oob[(1,)](t["y"])


def syncs(case, tensors, stream, state):
    t, s = state
    with torch.cuda.stream(s):
        out = _layernorm(t)
        s.synchronize()
        return out


KBENCH = [dict(op="layernorm", name=f.__name__, supports=_fp32_fwd, prepare=_views, launch=f,
               help="goes wrong on purpose (tests/python/gpu_faults.py)") for f in (raises, wrong, faults, syncs)]
