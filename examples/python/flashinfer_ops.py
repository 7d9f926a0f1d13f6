# flashinfer_ops.py: FlashInfer's CUDA kernels as kbench implementations
# (docs/python.md): RoPE with cos/sin computed in the kernel
# (apply_rope_pos_ids_inplace) and from a cos/sin cache
# (apply_rope_with_cos_sin_cache_inplace), RMSNorm and LayerNorm forward, and
# silu_and_mul inside kbench's MLP. Written against flashinfer-python
# 0.6.18.post1 (flashinfer/rope.py, norm/__init__.py, activation.py). Its
# modules are JIT-built (or loaded prebuilt) on first use: prepare does that,
# untimed. Run, for example:
#   kbench rope --impl opt,flashinfer=examples/python/flashinfer_ops.py
#   kbench sweep configs/peers.json
# Rows are n/a, naming the import error, where flashinfer (or torch) is
# missing, and where torch sees no CUDA device.
#
# FlashInfer is an inference library: forward only, fp16/bf16 only. Its RoPE
# "bwd" here is the forward kernel at negated angles (dt = R(-theta) dy), as a
# trainer would use it: negated positions for apply_rope_pos_ids, a cos|-sin
# cache for the cached form. Its RoPE takes q and k: kbench's one tensor is
# split by heads, q = heads [0, ceil(h/2)), k = the rest (strided views: each
# element read and written once), in place (inplace "out=t,dt=dy").
try:
    import torch
    import flashinfer
    import flashinfer.norm as _fnorm
    _missing = None
except Exception as e:  # ImportError, or a library that fails while importing
    _missing = e

try:
    _VER = "flashinfer " + flashinfer.__version__
except Exception:
    _VER = "flashinfer"


def _why_not(case, dtypes=("fp16", "bf16")):
    if _missing is not None:
        return "flashinfer not importable: %s" % _missing
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    if case.dtype not in dtypes:
        return "FlashInfer's kernels take %s only" % "/".join(dtypes)
    return None


def _views(tensors):
    return {k: torch.from_dlpack(v) for k, v in tensors.items()}


# ---- RoPE -------------------------------------------------------------------
def _positions(case, t, n):
    """Each token's position (int32 [n]): the s index (sbhd, bshd), or its
    index within its sequence (thd, from cu_seqlens)."""
    x = t["dt"] if case["pass"] == "bwd" else t["out"]
    dev = x.device
    if case.layout == "sbhd":
        s, b = x.shape[0], x.shape[1]
        return torch.arange(s, dtype=torch.int32, device=dev).repeat_interleave(b)
    if case.layout == "bshd":
        b, s = x.shape[0], x.shape[1]
        return torch.arange(s, dtype=torch.int32, device=dev).repeat(b)
    cu = t["cu_seqlens"].long()
    starts = torch.repeat_interleave(cu[:-1], cu[1:] - cu[:-1], output_size=n)
    return (torch.arange(n, device=dev) - starts).to(torch.int32)


def _rope_supports(cached):
    def supports(case):
        why = _why_not(case)
        if why:
            return why
        if case.heads < 2:
            return "FlashInfer's RoPE rotates q and k: the heads are split between them (heads >= 2)"
        if not cached and case.dim not in (64, 128, 256, 512):
            return "apply_rope_pos_ids dispatches head_dim 64, 128, 256, 512 only"
        rot, fast = case.rotary_dim or case.dim, case.dim in (64, 128, 256, 512)
        if cached and not fast and (case.dim % 16 or rot % 16):
            # head_dims other than 64, 128, 256, 512 go to its RopeQuantize kernel, which moves
            # 16-element vectors: "misaligned address" at dim 6 and 130 (H100, 2026-11-26)
            return ("apply_rope_with_cos_sin_cache at head_dim not 64, 128, 256 or 512 loads 16-element vectors: "
                    "dim and rotary_dim multiples of 16")
        if cached and not fast and case.style == "neox" and rot % 32:
            # kbench check (H200, 2026-11-26): wrong numbers, rel_err 0.4-1.0, at neox
            # rotary_dim 16, 48, 80 on that path; gptj there and neox at rotary_dim 32, 64 pass
            return ("FlashInfer 0.6.18's RopeQuantize path (head_dim not 64, 128, 256 or 512) is wrong for neox "
                    "at rotary_dim % 32 != 0")
        return None
    return supports


def _rope_run(cached, buf, pos, cache, rot, neox, base):
    """The call on buf viewed (tokens, heads, dim): q = heads [0, ceil(h/2)),
    k = the rest, strided views of buf (rotated in place)."""
    n, h, d = pos.shape[0], buf.shape[-2], buf.shape[-1]
    x = buf.view(n, h, d)
    hq = (h + 1) // 2
    q, k = x[:, :hq], x[:, hq:]
    if cached:  # (tokens, heads*dim) views, as vLLM passes them
        q2, k2 = q.reshape(n, hq * d), k.reshape(n, (h - hq) * d)
        return lambda: flashinfer.apply_rope_with_cos_sin_cache_inplace(pos, q2, k2, d, cache, is_neox=neox)
    return lambda: flashinfer.apply_rope_pos_ids_inplace(q, k, pos, rotary_dim=rot, interleave=not neox,
                                                         rope_scale=1.0, rope_theta=base)


def _rope_prepare(cached):
    def prepare(case, tensors, stream):
        t = _views(tensors)
        bwd = case["pass"] == "bwd"
        buf = t["dt"] if bwd else t["out"]  # t's (dy's) buffer: inplace
        n = buf.numel() // (buf.shape[-2] * buf.shape[-1])
        angles = t["angles"]
        s = torch.cuda.ExternalStream(stream)
        with torch.cuda.stream(s):
            pos, cache = _positions(case, t, n), None
            if cached:  # vLLM's layout: [positions, rot] fp32, cos | sin; int64 positions
                c, sn = torch.cos(angles), torch.sin(angles)
                pos, cache = pos.long(), torch.cat((c, -sn if bwd else sn), -1).contiguous()
            elif bwd:
                pos = -pos  # R(-theta): the same kernel at negated positions
            args = (pos, cache, 2 * angles.shape[1], case.style == "neox", case.base)
            _rope_run(cached, buf.clone(), *args)()  # module load/JIT, on a copy: t stays as kbench set it
            run = _rope_run(cached, buf, *args)
        fn = "apply_rope_with_cos_sin_cache_inplace" if cached else "apply_rope_pos_ids_inplace"
        return (s, run, args), "%s %s (q,k = head halves)%s" % (_VER, fn, ", at -theta" if bwd else "")
    return prepare


def _rope_launch(case, tensors, stream, st):
    with torch.cuda.stream(st[0]):
        st[1]()


# ---- RMSNorm and LayerNorm (forward only) ------------------------------------------
def _backend(x):
    try:
        return "cuda" if _fnorm._use_cuda_norm(x.device) else "cute-dsl"
    except Exception:
        return "?"


def _norm_supports(dtypes):
    def supports(case):
        why = _why_not(case, dtypes)
        if why is None and case["pass"] != "fwd":
            return "FlashInfer's norms are forward only"
        return why
    return supports


def _rms_prepare(case, tensors, stream):
    t = _views(tensors)
    s = torch.cuda.ExternalStream(stream)
    with torch.cuda.stream(s):
        x = t["x"]
        w = t["gamma"] if case.affine == "on" else torch.ones(x.shape[1], dtype=x.dtype, device=x.device)
        flashinfer.rmsnorm(x, w, case.eps, out=t["y"])  # module load/JIT
    return (s, x, w, t["y"]), "%s rmsnorm out= (%s)" % (_VER, _backend(x))


def _rms_launch(case, tensors, stream, st):
    s, x, w, y = st
    with torch.cuda.stream(s):
        flashinfer.rmsnorm(x, w, case.eps, out=y)


def _ln_prepare(case, tensors, stream):
    t = _views(tensors)
    s = torch.cuda.ExternalStream(stream)
    with torch.cuda.stream(s):
        x = t["x"]
        if case.affine == "on":  # its only form: bf16 x, fp32 gamma and beta
            w, b = t["gamma"].float(), t["beta"].float()
        else:
            w = torch.ones(x.shape[1], dtype=torch.float32, device=x.device)
            b = torch.zeros_like(w)
        flashinfer.layernorm(x, w, b, case.eps)  # module load/JIT
    return (s, x, w, b), "%s layernorm (%s)" % (_VER, _backend(x))


def _ln_launch(case, tensors, stream, st):
    s, x, w, b = st
    with torch.cuda.stream(s):
        return {"y": flashinfer.layernorm(x, w, b, case.eps)}


# ---- the MLP: one cuBLAS GEMM over [G; U] (torch, out=), silu_and_mul, h D^T ----------
def _mlp_supports(case):
    why = _why_not(case)
    if why is None and case.inter % 8:
        # h's rows must be 16-byte multiples: inter 516 faulted (misaligned address, H100, 2026-11-26)
        return "silu_and_mul stores 16-byte vectors: inter % 8 == 0"
    return why


def _mlp_prepare(case, tensors, stream):
    t = _views(tensors)
    s = torch.cuda.ExternalStream(stream)
    with torch.cuda.stream(s):
        x = t["x"]
        gu_w = torch.cat((t["G"], t["U"]), 0)  # [G; U] stacked once, as gate_up_proj
        gu = torch.empty(x.shape[0], gu_w.shape[0], dtype=x.dtype, device=x.device)
        h = torch.empty(x.shape[0], t["G"].shape[0], dtype=x.dtype, device=x.device)
        st = (s, x, gu_w, gu, h, t["D"], t["y"])
        _mlp_body(st)  # module load/JIT, cuBLAS heuristics
    return st, "%s silu_and_mul out=, torch matmuls over x [G;U]^T and h D^T" % _VER


def _mlp_body(st):
    s, x, gu_w, gu, h, D, y = st
    torch.matmul(x, gu_w.t(), out=gu)
    flashinfer.silu_and_mul(gu, out=h)
    torch.matmul(h, D.t(), out=y)


def _mlp_launch(case, tensors, stream, st):
    with torch.cuda.stream(st[0]):
        _mlp_body(st)


KBENCH = [
    dict(op="rope", name="flashinfer", supports=_rope_supports(False), prepare=_rope_prepare(False),
         launch=_rope_launch, inplace="out=t,dt=dy",
         help="FlashInfer apply_rope_pos_ids_inplace (cos/sin by __powf/__sincosf in the kernel), q,k = head halves; "
              "bwd = the same at negated positions"),
    dict(op="rope", name="flashinfer_cache", supports=_rope_supports(True), prepare=_rope_prepare(True),
         launch=_rope_launch, inplace="out=t,dt=dy",
         help="FlashInfer apply_rope_with_cos_sin_cache_inplace, fp32 [pos, rot] cos|sin cache from kbench's angles "
              "(bwd: cos|-sin), q,k = head halves"),
    dict(op="rmsnorm", name="flashinfer", supports=_norm_supports(("fp16", "bf16")), prepare=_rms_prepare,
         launch=_rms_launch, writes="y",
         help="FlashInfer rmsnorm(out=y), forward, fp16/bf16; no rstd output (not verified, not counted)"),
    dict(op="layernorm", name="flashinfer", supports=_norm_supports(("bf16",)), prepare=_ln_prepare,
         launch=_ln_launch, writes="y",
         help="FlashInfer layernorm, forward, bf16 x with fp32 gamma/beta (its only form); no mean/rstd outputs"),
    dict(op="mlp", name="flashinfer_silu_and_mul", supports=_mlp_supports, prepare=_mlp_prepare,
         launch=_mlp_launch,
         help="torch matmul x [G;U]^T (stacked in prepare), FlashInfer silu_and_mul(out=), torch matmul h D^T; "
              "fp16/bf16"),
]
