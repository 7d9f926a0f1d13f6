# quack_ops.py: QuACK's CuTe DSL RMSNorm and LayerNorm (forward and backward)
# as kbench implementations (docs/python.md). Written against quack-kernels
# 0.6.4 (main at c8ec317, quack/rmsnorm.py: rmsnorm_fwd, rmsnorm_bwd,
# layernorm_fwd, layernorm_bwd, the functions under its autograd wrappers).
# Each is compiled for the case's shape and dtypes on first call (prepare,
# untimed). UNTESTED ON A GPU so far (QuACK and nvidia-cutlass-dsl were not
# installed where these examples were first run): check it before trusting a
# row. Run, for example:
#   kbench rmsnorm --impl opt,quack=examples/python/quack_ops.py
#   kbench sweep configs/peers.json
# Rows are n/a, naming the import error, where quack (or torch,
# nvidia-cutlass-dsl) is missing, and where torch sees no CUDA device.
#
# gamma (and beta) are held in fp32, converted once in prepare: layernorm_fwd
# asks for fp32 weights, and QuACK returns dgamma/dbeta in gamma's dtype while
# kbench's are fp32 sums (its kernels sum fp32 partials either way). The
# outputs are QuACK's allocations, returned as a dict (kbench copies them,
# untimed, after the verifying launch); the allocation is timed.
try:
    import torch
    from quack.rmsnorm import layernorm_bwd, layernorm_fwd, rmsnorm_bwd, rmsnorm_fwd
    _missing = None
except Exception as e:  # ImportError, or a library that fails while importing
    _missing = e

try:
    from importlib.metadata import version as _version
    _VER = "quack-kernels " + _version("quack-kernels")
except Exception:
    _VER = "quack-kernels"


def _why_not(case):
    if _missing is not None:
        return "quack not importable: %s" % _missing
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def _views(tensors):
    return {k: torch.from_dlpack(v) for k, v in tensors.items()}


def _prepare(rms):
    def prepare(case, tensors, stream):
        t = _views(tensors)
        s = torch.cuda.ExternalStream(stream)
        with torch.cuda.stream(s):
            x = t["x"]
            affine = case.affine == "on"
            if affine:
                w = t["gamma"].float()
            else:  # RMSNorm takes no weight; LayerNorm's layernorm_fwd/bwd need one: ones
                w = None if rms else torch.ones(x.shape[1], dtype=torch.float32, device=x.device)
            b = t["beta"].float() if not rms and affine and case["pass"] == "fwd" else None
            st = (s, t, w, b, affine)
            _body(case, st, rms)  # compile (CuTe DSL JIT) and warm up
        name = ("rmsnorm_" if rms else "layernorm_") + case["pass"]
        return st, "%s %s" % (_VER, name)
    return prepare


def _body(case, st, rms):
    s, t, w, b, affine = st
    x = t["x"]
    if case["pass"] == "fwd":
        if rms:
            y, _, rstd = rmsnorm_fwd(x, w, eps=case.eps, store_rstd=True)
            return {"y": y, "rstd": rstd}
        y, rstd, mean = layernorm_fwd(x, w, b, eps=case.eps, return_rstd=True, return_mean=True)
        return {"y": y, "mean": mean, "rstd": rstd}
    if rms:
        dx, dw, _, _ = rmsnorm_bwd(x, w, t["dy"], t["rstd"])
        return {"dx": dx, "dgamma": dw} if affine else {"dx": dx}
    dx, dw, db = layernorm_bwd(x, w, t["dy"], t["rstd"], t["mean"], has_bias=affine)
    return {"dx": dx, "dgamma": dw, "dbeta": db} if affine else {"dx": dx}


def _launch(rms):
    def launch(case, tensors, stream, st):
        with torch.cuda.stream(st[0]):
            return _body(case, st, rms)
    return launch


KBENCH = [
    dict(op="rmsnorm", name="quack", supports=_why_not, prepare=_prepare(True), launch=_launch(True),
         help="QuACK rmsnorm_fwd/rmsnorm_bwd (CuTe DSL), fp32 gamma (untested on a GPU so far)"),
    dict(op="layernorm", name="quack", supports=_why_not, prepare=_prepare(False), launch=_launch(False),
         help="QuACK layernorm_fwd/layernorm_bwd (CuTe DSL), fp32 gamma/beta, ones for affine=none "
              "(untested on a GPU so far)"),
]
