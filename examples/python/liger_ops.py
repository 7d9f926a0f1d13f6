# liger_ops.py: Liger-Kernel's Triton kernels as kbench implementations
# (docs/python.md): RoPE, RMSNorm and LayerNorm (forward and backward) and the
# SwiGLU activation inside kbench's MLP. Written against liger-kernel 0.8.5
# (liger_kernel/ops/{rope,rms_norm,layer_norm,swiglu}.py), calling its
# forward/backward functions from the submodules (the default Triton kernels,
# never a backend swapped in by liger_kernel.ops' dispatch), not autograd.
# Run, for example:
#   kbench rmsnorm --impl opt,liger=examples/python/liger_ops.py
#   kbench sweep configs/peers.json
# Rows are n/a, naming the import error, where liger-kernel (or torch, triton)
# is missing, and where torch sees no CUDA device.
#
# gamma (and beta) are held in fp32, converted once in prepare: Liger returns
# dgamma/dbeta in gamma's dtype, and kbench's are fp32 sums (as a trainer with
# fp32 master weights keeps them); the kernels do their arithmetic in fp32
# either way. Outputs the library allocates are returned as a dict (kbench
# copies them, untimed, after the verifying launch); the allocation is timed.
try:
    import torch
    from liger_kernel.ops.layer_norm import layer_norm_backward, layer_norm_forward
    from liger_kernel.ops.rms_norm import rms_norm_backward, rms_norm_forward
    from liger_kernel.ops.rope import rope_backward, rope_forward
    from liger_kernel.ops.swiglu import swiglu_forward, swiglu_fused_gate_up_forward
    _missing = None
except Exception as e:  # ImportError, or a library that fails while importing
    _missing = e

try:
    from importlib.metadata import version as _version
    _VER = "liger-kernel " + _version("liger-kernel")
except Exception:
    _VER = "liger-kernel"


def _why_not(case):
    if _missing is not None:
        return "liger-kernel not importable: %s" % _missing
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    return None


def _views(tensors):
    return {k: torch.from_dlpack(v) for k, v in tensors.items()}


# ---- RoPE -------------------------------------------------------------------
# Liger rotates q (batch, heads, seq, dim) and k (batch, kv_heads, seq, dim),
# laid out in memory as (batch, seq, heads, dim), in place, both at once, the
# position of a row its seq index. kbench's one tensor is handed over as:
#   bshd, even batch: q = the first half of the batch, k = the second (no
#     extra traffic);
#   bshd, odd batch: q = the whole tensor, k = one extra head of zeros;
#   sbhd: (seq, batch, heads, dim) viewed as (1, seq, batch*heads, dim): q =
#     the whole tensor, k = one extra head of zeros (seq*dim elements read and
#     written on top: 1/(batch*heads) of the traffic, not in kbench's bytes).
# In place: out (dt) is t's (dy's) buffer (inplace "out=t,dt=dy"). cos and sin
# are fp32 [seq, rot/2] from kbench's angles (so the kernel's math is fp32;
# HF models pass them in the dtype), with rotary_dim=rot (partial rotary: the
# rest of each head untouched).
def _rope_supports(case):
    why = _why_not(case)
    if why:
        return why
    if case.layout == "thd":
        return "Liger's RoPE takes (batch, seq, heads, dim), positions 0..seq-1: no packed thd"
    if case.style != "neox":
        return "Liger's RoPE rotates halves (neox) only"
    return None


def _rope_qk(case, buf):
    """q and k as rope_forward takes them (batch, heads, seq, dim), views of buf."""
    if case.layout == "bshd":
        b, s, h, d = buf.shape
        if b % 2 == 0:
            return buf[: b // 2].transpose(1, 2), buf[b // 2:].transpose(1, 2), "q,k = batch halves"
        q = buf
    else:
        s, b, h, d = buf.shape
        q = buf.view(1, s, b * h, d)
    k = torch.zeros(q.shape[0], s, 1, d, dtype=buf.dtype, device=buf.device)
    return q.transpose(1, 2), k.transpose(1, 2), "q=all heads, k=1 extra head"


def _rope_prepare(case, tensors, stream):
    t = _views(tensors)
    bwd = case["pass"] == "bwd"
    buf = t["dt"] if bwd else t["out"]  # t's (dy's) buffer: inplace
    rot = 2 * t["angles"].shape[1]
    fn = rope_backward if bwd else rope_forward
    s = torch.cuda.ExternalStream(stream)
    with torch.cuda.stream(s):
        cos, sin = torch.cos(t["angles"]), torch.sin(t["angles"])  # [seq, rot/2] fp32
        q, k, how = _rope_qk(case, buf)
        # warm-up (Triton compile) on a copy: kbench keeps t's contents after prepare
        wq, wk, _ = _rope_qk(case, buf.clone())
        fn(wq, wk, cos, sin, rotary_dim=rot)
    return (s, fn, q, k, cos, sin, rot), "%s %s (%s)" % (_VER, fn.__name__, how)


def _rope_launch(case, tensors, stream, st):
    s, fn, q, k, cos, sin, rot = st
    with torch.cuda.stream(s):
        fn(q, k, cos, sin, rotary_dim=rot)


# ---- RMSNorm --------------------------------------------------------------------
# casting_mode is a tunable (liger_casting): gemma (the default here) computes
# in fp32 throughout, kbench's maths; llama (Liger's and HF Llama's default)
# rounds x*rstd to the dtype before gamma and, in the backward, before the
# dgamma sum, which at bf16/fp16 puts dgamma far outside kbench's fp32-sum
# tolerance; none computes in the dtype (rstd too).
def _rms_prepare(case, tensors, stream):
    t = _views(tensors)
    s = torch.cuda.ExternalStream(stream)
    mode = case.get("liger_casting", "gemma")
    with torch.cuda.stream(s):
        w = t["gamma"].float() if case.affine == "on" else None
        if case["pass"] == "fwd":
            rms_norm_forward(t["x"], w, case.eps, 0.0, mode, None)  # warm-up
            return (s, t, w, mode, None), "%s rms_norm_forward casting=%s" % (_VER, mode)
        # what LigerRMSNormFunction.forward saves (block size, warps, the mode as
        # its int); its rstd is not used: the backward reads kbench's
        _, _, _, block, warps, imode = rms_norm_forward(t["x"], w, case.eps, 0.0, mode, None)
        rms_norm_backward(t["dy"].clone(), t["x"], w, t["rstd"], 0.0, imode, block, warps, True, None)
    return (s, t, w, mode, (block, warps, imode)), "%s rms_norm_backward casting=%s, dx over dy" % (_VER, mode)


def _rms_launch(case, tensors, stream, st):
    s, t, w, mode, saved = st
    with torch.cuda.stream(s):
        if saved is None:
            y, _, rstd, _, _, _ = rms_norm_forward(t["x"], w, case.eps, 0.0, mode, None)
            return {"y": y, "rstd": rstd}
        block, warps, imode = saved
        # in_place=True (Liger's default): dx written over dy (inplace "dx=dy")
        _, dw = rms_norm_backward(t["dy"], t["x"], w, t["rstd"], 0.0, imode, block, warps, True, None)
    return {"dgamma": dw} if w is not None else None


# ---- LayerNorm ----------------------------------------------------------------
# Liger's LayerNorm always has gamma and beta: affine=none passes ones and
# zeros (cols elements, read once a row block).
def _ln_prepare(case, tensors, stream):
    t = _views(tensors)
    s = torch.cuda.ExternalStream(stream)
    with torch.cuda.stream(s):
        x = t["x"]
        affine = case.affine == "on"
        w = t["gamma"].float() if affine else torch.ones(x.shape[1], dtype=torch.float32, device=x.device)
        if case["pass"] == "fwd":
            b = t["beta"].float() if affine else torch.zeros_like(w)
            layer_norm_forward(x, w, b, case.eps)  # warm-up
        else:
            b = w  # the backward reads only its dtype (for dbeta)
            layer_norm_backward(t["dy"], x, w, b, t["mean"], t["rstd"], affine, affine)
    name = "layer_norm_forward" if case["pass"] == "fwd" else "layer_norm_backward"
    return (s, t, w, b, affine), "%s %s" % (_VER, name)


def _ln_launch(case, tensors, stream, st):
    s, t, w, b, affine = st
    with torch.cuda.stream(s):
        if case["pass"] == "fwd":
            y, _, mean, rstd, _, _ = layer_norm_forward(t["x"], w, b, case.eps)
            return {"y": y, "mean": mean, "rstd": rstd}
        dx, dw, db = layer_norm_backward(t["dy"], t["x"], w, b, t["mean"], t["rstd"], affine, affine)
    return {"dx": dx, "dgamma": dw, "dbeta": db} if affine else {"dx": dx}


def _norm_supports(case):
    why = _why_not(case)
    if why is None and case.cols > 65536:
        return "Liger's norms hold a row in one Triton block: cols <= 65536"
    return why


# ---- the MLP: cuBLAS GEMMs (torch, out=) around Liger's SwiGLU --------------------
def _mlp_supports(case):
    why = _why_not(case)
    if why is None and case.inter > 65536:
        return "Liger's SwiGLU holds a row in one Triton block: inter <= 65536"
    return why


def _mlp_prepare(cat):
    def prepare(case, tensors, stream):
        t = _views(tensors)
        s = torch.cuda.ExternalStream(stream)
        torch.backends.cuda.matmul.allow_tf32 = case.tf32 == "on"
        with torch.cuda.stream(s):
            x = t["x"]
            if cat:  # [G; U] stacked once, as a checkpoint's gate_up_proj stores it
                gu_w = torch.cat((t["G"], t["U"]), 0)
                gu = torch.empty(x.shape[0], gu_w.shape[0], dtype=x.dtype, device=x.device)
                st = (s, t, gu_w, gu)
            else:
                g = torch.empty(x.shape[0], t["G"].shape[0], dtype=x.dtype, device=x.device)
                st = (s, t, g, torch.empty_like(g))
            _mlp_body(case, st, cat)  # warm-up: Triton compile, cuBLAS heuristics
        fn = "swiglu_fused_gate_up_forward over x [G;U]^T" if cat else "swiglu_forward(x G^T, x U^T)"
        return st, "%s %s, torch matmuls" % (_VER, fn)
    return prepare


def _mlp_body(case, st, cat):
    s, t, a, b = st
    x, y = t["x"], t["y"]
    if cat:
        torch.matmul(x, a.t(), out=b)
        _, h = swiglu_fused_gate_up_forward(b)
    else:
        torch.matmul(x, t["G"].t(), out=a)
        torch.matmul(x, t["U"].t(), out=b)
        _, _, h = swiglu_forward(a, b)
    torch.matmul(h, t["D"].t(), out=y)


def _mlp_launch(cat):
    def launch(case, tensors, stream, st):
        torch.backends.cuda.matmul.allow_tf32 = case.tf32 == "on"  # global: another file may change it
        with torch.cuda.stream(st[0]):
            _mlp_body(case, st, cat)
    return launch


KBENCH = [
    dict(op="rope", name="liger", supports=_rope_supports, prepare=_rope_prepare, launch=_rope_launch,
         inplace="out=t,dt=dy",
         help="Liger-Kernel rope_forward/rope_backward (Triton), in place; q,k = batch halves (bshd, even batch), "
              "else q = all heads + 1 extra k head; neox, sbhd/bshd"),
    dict(op="rmsnorm", name="liger", supports=_norm_supports, prepare=_rms_prepare, launch=_rms_launch,
         inplace="dx=dy", tunables={"liger_casting": (["gemma", "llama", "none"], "gemma")},
         help="Liger-Kernel rms_norm_forward/rms_norm_backward (Triton; bwd dx over dy, Liger's in_place); "
              "fp32 gamma; casting_mode a tunable (default gemma: fp32 throughout)"),
    dict(op="layernorm", name="liger", supports=_norm_supports, prepare=_ln_prepare, launch=_ln_launch,
         help="Liger-Kernel layer_norm_forward/layer_norm_backward (Triton); fp32 gamma/beta "
              "(ones/zeros for affine=none)"),
    dict(op="mlp", name="liger_swiglu", supports=_mlp_supports, prepare=_mlp_prepare(False),
         launch=_mlp_launch(False),
         help="torch matmuls (cuBLAS, out=) x G^T, x U^T, h D^T around Liger-Kernel swiglu_forward (Triton)"),
    dict(op="mlp", name="liger_swiglu_cat", supports=_mlp_supports, prepare=_mlp_prepare(True),
         launch=_mlp_launch(True),
         help="one torch matmul x [G;U]^T (stacked in prepare), Liger-Kernel swiglu_fused_gate_up_forward, "
              "then h D^T"),
]
