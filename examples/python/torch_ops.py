# torch_ops.py: PyTorch eager and torch.compile for every kbench op, the
# peers a Python user always has, as kbench Python implementations
# (docs/python.md). Run, for example:
#   kbench layernorm --impl opt,torch=examples/python/torch_ops.py
# which selects torch.eager and torch.compile (the file has two of the op).
#
# eager is what a model calls: the LayerNorm forward through
# torch.native_layer_norm (F.layer_norm's kernel, with the mean and rstd
# autograd saves), the RMSNorm forward through F.rms_norm (it returns no
# rstd: writes="y"), RoPE as TransformerEngine's unfused PyTorch form given
# each position's cos and sin (computed once a case, untimed, as they are for
# Liger: handed the angles, Inductor fused sin and cos into the kernel and
# recomputed them for every element, 17-18% of copy on an H200), the
# MLP as three matmuls. Their own outputs are returned to kbench, which
# copies them after the verifying launch only. The backward passes are the
# formula in fp32 (autograd's kernels return dgamma in gamma's dtype, where
# kbench wants the fp32 sums). compile is torch.compile (dynamic=False) of the formula,
# writing kbench's outputs in place (copy_), on kbench's stream.
try:
    import torch
    import torch.nn.functional as F
    _missing = None
except ImportError as e:  # the rows say so: n/a
    torch, _missing = None, e

# Every case is a new shape, so each compiles its own graph (dynamic=False),
# and an op's body is one function: its cases share one code object. Past
# dynamo's recompile limit (8 a code object by default) torch.compile
# silently ran the body eagerly, so from an op's ninth case on its rows were
# eager's (H200, 2026-11-28: every backward row of configs/peers.json at
# 4-16% of copy). The limits raised past any sweep, and a hit made an error
# (the row says so) rather than a silent eager run. Either name, by version.
if torch is not None:
    import torch._dynamo

    _dc = torch._dynamo.config
    for _names in (("recompile_limit", "cache_size_limit"), ("accumulated_recompile_limit", "accumulated_cache_size_limit")):
        _name = next((n for n in _names if hasattr(_dc, n)), None)
        if _name:
            setattr(_dc, _name, max(getattr(_dc, _name), 1 << 16))
    if hasattr(_dc, "fail_on_recompile_limit_hit"):
        _dc.fail_on_recompile_limit_hit = True


def _why_not(case):
    if _missing is not None:
        return "torch not importable: %s" % _missing
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def _views(tensors):
    return {k: torch.from_dlpack(v) for k, v in tensors.items()}


# ---- RoPE ---------------------------------------------------------------
def _positions(case, t, x):
    """Each row's position, shaped to broadcast over x[..., :rot/2]."""
    if case.layout == "sbhd":
        return torch.arange(x.shape[0], device=x.device)[:, None, None]
    if case.layout == "bshd":
        return torch.arange(x.shape[1], device=x.device)[None, :, None]
    cu = t["cu_seqlens"].long()
    lengths = cu[1:] - cu[:-1]
    tokens = torch.arange(x.shape[0], device=x.device)
    return (tokens - torch.repeat_interleave(cu[:-1], lengths, output_size=x.shape[0]))[:, None]


def _cos_sin(case, t, x):
    """cos and sin of each row's angles, shaped to broadcast over x[..., :rot/2]
    (the backward's sin negated): once a case, untimed, as Liger's are."""
    a = t["angles"][_positions(case, t, x)]
    s = torch.sin(a)
    return torch.cos(a), -s if case["pass"] == "bwd" else s


def rope(case, t, cs):
    bwd = case["pass"] == "bwd"
    src, dst = (t["dy"], t["dt"]) if bwd else (t["t"], t["out"])
    c, s = cs
    rot = 2 * c.shape[-1]
    x = src[..., :rot].float()
    if case.style == "neox":
        x1, x2 = x[..., : rot // 2], x[..., rot // 2:]
        o = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)
    else:
        x1, x2 = x[..., 0::2], x[..., 1::2]
        o = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), -1).flatten(-2)
    dst[..., :rot].copy_(o)
    if rot < src.shape[-1]:
        dst[..., rot:].copy_(src[..., rot:])


# ---- LayerNorm and RMSNorm: the formula (compile; RMSNorm's eager backward) --
def layernorm(case, t, _):
    x = t["x"].float()
    if case["pass"] == "fwd":
        mean = x.mean(-1)
        rstd = torch.rsqrt(x.var(-1, unbiased=False) + case.eps)
        y = (x - mean[:, None]) * rstd[:, None]
        if case.affine == "on":
            y = y * t["gamma"].float() + t["beta"].float()
        t["y"].copy_(y), t["mean"].copy_(mean), t["rstd"].copy_(rstd)
        return
    dy, mean, rstd = t["dy"].float(), t["mean"], t["rstd"]
    xhat = (x - mean[:, None]) * rstd[:, None]
    g = dy * t["gamma"].float() if case.affine == "on" else dy
    dx = rstd[:, None] * (g - g.mean(-1, keepdim=True) - xhat * (g * xhat).mean(-1, keepdim=True))
    t["dx"].copy_(dx)
    if case.affine == "on":
        t["dgamma"].copy_((dy * xhat).sum(0)), t["dbeta"].copy_(dy.sum(0))


def rmsnorm(case, t, _):
    x = t["x"].float()
    if case["pass"] == "fwd":
        rstd = torch.rsqrt((x * x).mean(-1) + case.eps)
        y = x * rstd[:, None]
        if case.affine == "on":
            y = y * t["gamma"].float()
        t["y"].copy_(y), t["rstd"].copy_(rstd)
        return
    dy, rstd = t["dy"].float(), t["rstd"]
    xhat = x * rstd[:, None]
    g = dy * t["gamma"].float() if case.affine == "on" else dy
    t["dx"].copy_(rstd[:, None] * (g - xhat * (g * xhat).mean(-1, keepdim=True)))
    if case.affine == "on":
        t["dgamma"].copy_((dy * xhat).sum(0))


# ---- LayerNorm and RMSNorm eager: torch's own kernels, their outputs returned --
def layernorm_eager(case, t, _):
    """The forward F.layer_norm runs (torch.native_layer_norm: y, and the
    mean and rstd autograd saves); the backward is the formula (autograd's
    native_layer_norm_backward returns dgamma in gamma's dtype, where kbench
    wants the fp32 sums)."""
    if case["pass"] == "bwd":
        return layernorm(case, t, None)
    x = t["x"]
    y, mean, rstd = torch.native_layer_norm(x, (x.shape[-1],), t.get("gamma"), t.get("beta"), case.eps)
    return {"y": y, "mean": mean, "rstd": rstd}


def rmsnorm_eager(case, t, w):
    if case["pass"] == "bwd":
        return rmsnorm(case, t, None)
    x = t["x"]
    return {"y": F.rms_norm(x, (x.shape[-1],), t["gamma"] if case.affine == "on" else None, case.eps)}


# ---- the LLaMA MLP ---------------------------------------------------------
def mlp(case, t, _):
    x = t["x"]
    h = F.silu(x @ t["G"].T) * (x @ t["U"].T)  # in the dtype, as the reference rounds g, u and h
    torch.matmul(h, t["D"].T, out=t["y"])


_BODIES = {"rope": rope, "layernorm": layernorm, "rmsnorm": rmsnorm, "mlp": mlp}
_EAGER = dict(_BODIES, layernorm=layernorm_eager, rmsnorm=rmsnorm_eager)


def _make(op, compiled):
    body = _BODIES[op] if compiled else _EAGER[op]

    def supports(case):
        why = _why_not(case)
        if why is None and compiled and op == "rope" and case.layout == "thd":
            return "torch.compile: thd's positions change shape with every seqlens (recompiles)"
        return why

    def prepare(case, tensors, stream):
        t = _views(tensors)
        extra = None
        if op == "rope":  # each row's cos and sin, once per case (untimed)
            extra = _cos_sin(case, t, t["dy"] if case["pass"] == "bwd" else t["t"])
        if op == "mlp":
            torch.backends.cuda.matmul.allow_tf32 = case.get("tf32") == "on"
        fn = torch.compile(body, dynamic=False) if compiled else body
        s = torch.cuda.ExternalStream(stream)
        with torch.cuda.stream(s):
            fn(case, t, extra)  # compiles (untimed) and warms up
        return (fn, t, extra, s), "torch.compile" if compiled else "torch eager"

    def launch(case, tensors, stream, state):
        fn, t, extra, s = state
        with torch.cuda.stream(s):
            return fn(case, t, extra)

    d = dict(op=op, name="compile" if compiled else "eager", supports=supports, prepare=prepare, launch=launch,
             help="PyTorch %s (examples/python/torch_ops.py)" % ("torch.compile" if compiled else "eager"))
    if op == "rmsnorm" and not compiled:
        d["writes"] = "y,dx,dgamma"  # F.rms_norm returns no rstd
    return d


KBENCH = [_make(op, c) for op in ("rope", "layernorm", "rmsnorm", "mlp") for c in (False, True)]
