# rope_triton.py: RoPE forward and backward in Triton, as a kbench Python
# implementation (docs/python.md). From the seeds' Triton RoPE
# (/work/shared/seeds 001 and 002: TransformerEngine's conventions, layout
# sbhd, NeoX halves, cos/sin taken of the fp32 angle table in the kernel),
# with one program per (s, b) position instead of one per head vector: the
# position's cos/sin are computed once and reused over its heads, a tile of
# [heads x rot/2] pairs at a time. Run, for example:
#   kbench rope --impl opt,triton=examples/python/rope_triton.py --pass fwd,bwd
#   kbench check --impl triton=examples/python/rope_triton.py
#
# Maths in fp32, outputs rounded to the dtype once. For each head vector at
# position s and i < rot/2, p = i, q = i + rot/2, a = angles[s][i]:
#   fwd: out[p] = t[p] cos a - t[q] sin a,   out[q] = t[q] cos a + t[p] sin a
#   bwd: dt[p] = dy[p] cos a + dy[q] sin a,  dt[q] = dy[q] cos a - dy[p] sin a
# (the backward is the forward with sin negated); elements rot..dim-1 copied.
try:
    import torch
    import triton
    import triton.language as tl
    _missing = None
except ImportError as e:  # the rows say so: n/a
    torch = triton = tl = None
    _missing = e

if triton is not None:

    @triton.jit
    def _rope_kernel(X, A, Y,  # input (t or dy), angles [seq, rot/2] fp32, output (out or dt)
                     batch, heads, dim, half, a_stride,
                     BWD: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_R: tl.constexpr,
                     PASS: tl.constexpr, BLOCK_P: tl.constexpr):
        row = tl.program_id(0)  # one (s, b) position: heads x dim elements, packed
        s = (row // batch).to(tl.int64)
        base = row.to(tl.int64) * heads * dim
        # cos/sin of this position's angles, once for all its heads
        i = tl.arange(0, BLOCK_R)
        a = tl.load(A + s * a_stride + i, mask=i < half, other=0.)
        cos = tl.cos(a)[None, :]
        sin = tl.sin(a)[None, :]
        if BWD:  # rotate back: by -angle
            sin = -sin
        # the rotated halves, BLOCK_H heads at a time
        for h0 in range(0, heads, BLOCK_H):
            h = h0 + tl.arange(0, BLOCK_H)
            mask = (h[:, None] < heads) & (i[None, :] < half)
            p = base + h[:, None] * dim + i[None, :]
            x1 = tl.load(X + p, mask=mask, other=0.).to(tl.float32)
            x2 = tl.load(X + p + half, mask=mask, other=0.).to(tl.float32)
            tl.store(Y + p, x1 * cos - x2 * sin, mask=mask)  # stores round to Y's dtype
            tl.store(Y + p + half, x2 * cos + x1 * sin, mask=mask)
        # partial rotary: elements rot..dim-1 of each head copied as they are
        if PASS:
            rest = dim - 2 * half
            n = heads * rest
            for off in range(0, n, BLOCK_P):
                k = off + tl.arange(0, BLOCK_P)
                q = base + (k // rest) * dim + 2 * half + k % rest
                tl.store(Y + q, tl.load(X + q, mask=k < n), mask=k < n)


def supports(case):
    if _missing is not None:
        return "triton not importable: %s" % _missing
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    if case.layout != "sbhd":
        return "layout sbhd only (the seeds' kernel: one program per (s, b) position)"
    if case.style != "neox":
        return "style neox only (the seeds' halves: pairs i, i + rot/2)"
    if case.seq * case.batch >= 2 ** 31:
        return "seq x batch >= 2^31: more programs than a grid holds"
    return None


def prepare(case, tensors, stream):
    bwd = case["pass"] == "bwd"
    x = torch.from_dlpack(tensors["dy" if bwd else "t"])
    y = torch.from_dlpack(tensors["dt" if bwd else "out"])
    angles = torch.from_dlpack(tensors["angles"])
    seq, batch, heads, dim = x.shape
    half = angles.shape[1]  # rot / 2
    rest = dim - 2 * half
    assert x.is_contiguous() and y.is_contiguous() and angles.stride(1) == 1
    block_r = triton.next_power_of_2(half)
    block_h = min(triton.next_power_of_2(heads), max(1, 2048 // block_r))  # a tile of at most 2048 pairs
    block_p = min(triton.next_power_of_2(max(heads * rest, 1)), 2048)
    meta = dict(BWD=bwd, BLOCK_H=block_h, BLOCK_R=block_r, PASS=rest > 0, BLOCK_P=block_p,
                num_warps=min(max(block_h * block_r // 256, 1), 8))
    args = (x, angles, y, batch, heads, dim, half, angles.stride(0))
    grid = (seq * batch,)
    st = torch.cuda.ExternalStream(stream, device=x.device)
    with torch.cuda.stream(st):
        _rope_kernel[grid](*args, **meta)  # compiles (untimed) and warms up
    kernel = "triton (s,b)/program tile %dx%d warps=%d" % (block_h, block_r, meta["num_warps"])
    return (st, grid, args, meta), kernel


def launch(case, tensors, stream, state):
    st, grid, args, meta = state
    with torch.cuda.stream(st):
        _rope_kernel[grid](*args, **meta)


KBENCH = [dict(op="rope", name="triton", supports=supports, prepare=prepare, launch=launch,
               help="Triton RoPE (sbhd, neox): a program per (s, b), cos/sin once per position "
                    "(examples/python/rope_triton.py)")]
