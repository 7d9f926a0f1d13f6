# te_ops.py: NVIDIA TransformerEngine's fused kernels as kbench
# implementations (docs/python.md): the fused RoPE (fwd and bwd; sbhd, bshd,
# thd; neox and interleaved/gptj; partial rotary) and LayerNorm/RMSNorm
# (fwd and bwd). Written against TransformerEngine 2.20.0.dev0 (main at
# d0067d0, transformer_engine/pytorch/attention/rope.py, ops/basic/layer_norm.py,
# csrc/extensions/{apply_rope,normalization}.cpp): the transformer_engine_torch
# functions those call, with the arguments they pass. UNTESTED ON A GPU so far
# (TransformerEngine was not installed where these examples were first run):
# check it before trusting a row. Run, for example:
#   kbench rope --impl opt,te=examples/python/te_ops.py
#   kbench sweep configs/peers.json
# Rows are n/a, naming the import error, where transformer_engine (or torch)
# is missing, and where torch sees no CUDA device.
#
# Outputs TE allocates are returned as a dict (kbench copies them, untimed,
# after the verifying launch); the allocation is timed, as TE's users pay it.
# TE's norm backward returns dgamma/dbeta in gamma's dtype (its kernels need
# gamma in the input's dtype): at fp16/bf16 they are rounded to it, beyond
# kbench's fp32-sum tolerance for dgamma/dbeta, so those rows fail there.
try:
    import torch
    import transformer_engine.pytorch  # noqa: F401  (loads TE's libraries first)
    import transformer_engine_torch as tex
    from transformer_engine.pytorch.constants import TE_DType
    _missing = None
except Exception as e:  # ImportError, or a library that fails while importing
    _missing = e

try:
    from importlib.metadata import version as _version
    _VER = "transformer_engine " + _version("transformer_engine")
except Exception:
    _VER = "transformer_engine"


def _why_not(case):
    if _missing is not None:
        return "transformer_engine not importable: %s" % _missing
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def _views(tensors):
    return {k: torch.from_dlpack(v) for k, v in tensors.items()}


# ---- RoPE -------------------------------------------------------------------
# freqs as RotaryPositionEmbedding builds them: [positions, 1, 1, rot] fp32,
# the angles twice (neox: cat(a, a); interleaved: each repeated); the kernel
# takes sin and cos of them (sincosf) and copies elements rot..dim-1.
def _rope_prepare(case, tensors, stream):
    t = _views(tensors)
    bwd = case["pass"] == "bwd"
    a = t["angles"]
    s = torch.cuda.ExternalStream(stream)
    with torch.cuda.stream(s):
        if case.style == "neox":
            freqs = torch.cat((a, a), -1)
        else:
            freqs = torch.repeat_interleave(a, 2, dim=-1)
        freqs = freqs.view(a.shape[0], 1, 1, -1).contiguous()
        fmt = getattr(tex.NVTE_QKV_Format, "NVTE_" + case.layout.upper())
        cu = t["cu_seqlens"] if case.layout == "thd" else None
        args = (t["dy"] if bwd else t["t"], freqs, None, fmt, case.style != "neox", cu, 1, 0)
        fn = tex.fused_rope_backward if bwd else tex.fused_rope_forward
        fn(*args)  # warm-up
    return (s, fn, args, "dt" if bwd else "out"), "%s %s" % (_VER, fn.__name__)


def _rope_launch(case, tensors, stream, st):
    s, fn, args, out = st
    with torch.cuda.stream(s):
        return {out: fn(*args)}


# ---- LayerNorm and RMSNorm -------------------------------------------------------
# As te.ops' LayerNorm/RMSNorm call them: no quantizer, sm_margin 0,
# zero_centered_gamma off; y written into kbench's buffer (ln_out), the
# statistics allocated by TE. affine=none: gamma ones (and beta zeros) in the dtype.
def _norm_prepare(rms):
    def prepare(case, tensors, stream):
        t = _views(tensors)
        s = torch.cuda.ExternalStream(stream)
        with torch.cuda.stream(s):
            x = t["x"]
            affine = case.affine == "on"
            w = t["gamma"] if affine else torch.ones(x.shape[1], dtype=x.dtype, device=x.device)
            b = None
            if not rms and case["pass"] == "fwd":
                b = t["beta"] if affine else torch.zeros_like(w)
            st = (s, t, w, b, affine)
            _norm_body(case, st, rms)  # warm-up
        name = ("rmsnorm_" if rms else "layernorm_") + case["pass"]
        return st, "%s %s" % (_VER, name)
    return prepare


def _norm_body(case, st, rms):
    s, t, w, b, affine = st
    x = t["x"]
    if case["pass"] == "fwd":
        if rms:
            _, _, rstd = tex.rmsnorm_fwd(x, w, case.eps, t["y"], None, TE_DType[x.dtype], 0, False)
            return {"rstd": rstd}
        _, mean, rstd = tex.layernorm_fwd(x, w, b, case.eps, t["y"], None, TE_DType[x.dtype], 0, False)
        return {"mean": mean, "rstd": rstd}
    if rms:
        dx, dw = tex.rmsnorm_bwd(t["dy"], x, t["rstd"], w, 0, False)
        return {"dx": dx, "dgamma": dw} if affine else {"dx": dx}
    dx, dw, db = tex.layernorm_bwd(t["dy"], x, t["mean"], t["rstd"], w, 0, False)
    return {"dx": dx, "dgamma": dw, "dbeta": db} if affine else {"dx": dx}


def _norm_launch(rms):
    def launch(case, tensors, stream, st):
        with torch.cuda.stream(st[0]):
            return _norm_body(case, st, rms)
    return launch


_UNTESTED = " (untested on a GPU so far)"
KBENCH = [
    dict(op="rope", name="te", supports=_why_not, prepare=_rope_prepare, launch=_rope_launch,
         help="TransformerEngine fused_rope_forward/fused_rope_backward (apply_rotary_pos_emb fused=True's "
              "kernels), sbhd/bshd/thd, neox/gptj" + _UNTESTED),
    dict(op="layernorm", name="te", supports=_why_not, prepare=_norm_prepare(False), launch=_norm_launch(False),
         help="TransformerEngine layernorm_fwd (ln_out=y)/layernorm_bwd; dgamma/dbeta in gamma's dtype"
              + _UNTESTED),
    dict(op="rmsnorm", name="te", supports=_why_not, prepare=_norm_prepare(True), launch=_norm_launch(True),
         help="TransformerEngine rmsnorm_fwd (ln_out=y)/rmsnorm_bwd; dgamma in gamma's dtype" + _UNTESTED),
]
