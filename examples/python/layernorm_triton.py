# layernorm_triton.py: Triton's layer-norm tutorial as a kbench Python
# implementation (docs/python.md): the fused forward (y, mean, rstd) and the
# backward, dx fused with a first stage of dgamma/dbeta partial sums into
# GROUP_SIZE_M buffers under locks, then a kernel that sums the buffers.
# From https://triton-lang.org/main/getting-started/tutorials/05-layer-norm.html
# (/work/shared/seeds 004). Run, for example:
#   kbench layernorm --impl opt,triton=examples/python/layernorm_triton.py --pass fwd,bwd
#   kbench check --impl triton=examples/python/layernorm_triton.py
#
# Changes from the tutorial: affine "none" (no gamma, beta: y = x_hat; no
# dgamma/dbeta) through a constexpr; the partial sums kept in fp32 (the
# tutorial's are in x's dtype); GROUP_SIZE_M at most rows, so that every
# buffer the second stage sums was written; row offsets in int64 (rows x cols
# can pass 2^31); the locks zeroed by .zero_() of a buffer made in prepare;
# a barrier between the partial sums' stores and the lock's release. Without
# it the release (one thread's atomic) can overtake the other warps' stores,
# and the next holder adds to stale sums: kbench check failed dgamma at fp32
# 1000 x 12288 (rel_err 4.3e-4, H100, 2026-11-26). Triton's own tutorial
# carries the barrier; the seed's copy of it does not.
# Which rows reach a buffer first changes from run to run, and so do the fp32
# sums' last bits: nondeterministic (kbench check does not require two runs
# to agree).
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
    def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd,  # pointers; W, B unused without AFFINE
                              stride, N, eps, BLOCK_SIZE: tl.constexpr, AFFINE: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        Y += row * stride
        X += row * stride
        # Compute mean
        _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            _mean += a
        mean = tl.sum(_mean, axis=0) / N
        # Compute variance
        _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
            x = tl.where(cols < N, x - mean, 0.)
            _var += x * x
        var = tl.sum(_var, axis=0) / N
        rstd = 1 / tl.sqrt(var + eps)
        # Write mean / rstd (fp32 tensors)
        tl.store(Mean + row, mean)
        tl.store(Rstd + row, rstd)
        # Normalize and apply linear transformation
        for off in range(0, N, BLOCK_SIZE):
            cols = off + tl.arange(0, BLOCK_SIZE)
            mask = cols < N
            x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
            y = (x - mean) * rstd
            if AFFINE:
                w = tl.load(W + cols, mask=mask).to(tl.float32)
                b = tl.load(B + cols, mask=mask).to(tl.float32)
                y = y * w + b
            tl.store(Y + cols, y, mask=mask)  # rounds to Y's dtype

    @triton.jit
    def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock,  # DW, DB: [GROUP_SIZE_M, N] fp32
                                 stride, N, GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                                 AFFINE: tl.constexpr):
        # Map the program id to the elements of X, DX, and DY it should compute.
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_SIZE_N)
        mask = cols < N
        X += row.to(tl.int64) * stride
        DY += row.to(tl.int64) * stride
        DX += row.to(tl.int64) * stride
        # Load data to SRAM
        x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
        dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
        mean = tl.load(Mean + row)
        rstd = tl.load(Rstd + row)
        # Compute dx
        xhat = (x - mean) * rstd
        if AFFINE:
            w = tl.load(W + cols, mask=mask).to(tl.float32)
            wdy = w * dy
        else:
            wdy = dy
        xhat = tl.where(mask, xhat, 0.)
        wdy = tl.where(mask, wdy, 0.)
        c1 = tl.sum(xhat * wdy, axis=0) / N
        c2 = tl.sum(wdy, axis=0) / N
        dx = (wdy - (xhat * c1 + c2)) * rstd
        tl.store(DX + cols, dx, mask=mask)
        if AFFINE:
            # Accumulate partial sums for dw/db into buffer row % GROUP_SIZE_M
            lock_id = row % GROUP_SIZE_M
            Lock += lock_id
            Count = Lock + GROUP_SIZE_M
            DW = DW + lock_id * N + cols
            DB = DB + lock_id * N + cols
            partial_dw = dy * xhat
            partial_db = dy
            while tl.atomic_cas(Lock, 0, 1) == 1:
                pass
            count = tl.load(Count)
            # First store doesn't accumulate
            if count == 0:
                tl.atomic_xchg(Count, 1)
            else:
                partial_dw += tl.load(DW, mask=mask)
                partial_db += tl.load(DB, mask=mask)
            tl.store(DW, partial_dw, mask=mask)
            tl.store(DB, partial_db, mask=mask)
            tl.debug_barrier()  # every warp's stores before the release
            # Release the lock
            tl.atomic_xchg(Lock, 0)

    @triton.jit
    def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N,  # M: GROUP_SIZE_M buffers to sum
                             BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
        # Map the program id to the elements of DW and DB it should compute.
        pid = tl.program_id(0)
        cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        # Iterate through the rows of DW and DB to sum the partial sums.
        for i in range(0, M, BLOCK_SIZE_M):
            rows = i + tl.arange(0, BLOCK_SIZE_M)
            mask = (rows[:, None] < M) & (cols[None, :] < N)
            offs = rows[:, None] * N + cols[None, :]
            dw += tl.load(DW + offs, mask=mask, other=0.)
            db += tl.load(DB + offs, mask=mask, other=0.)
        # Write the final sum to the output.
        tl.store(FINAL_DW + cols, tl.sum(dw, axis=0), mask=cols < N)
        tl.store(FINAL_DB + cols, tl.sum(db, axis=0), mask=cols < N)


def _max_cols(dtype):
    return 65536 // (4 if dtype == "fp32" else 2)  # the tutorial's MAX_FUSED_SIZE: 64 KB of x a row


def supports(case):
    if _missing is not None:
        return "triton not importable: %s" % _missing
    if not torch.cuda.is_available():
        return "torch sees no CUDA device"
    if case.cols > _max_cols(case.dtype):
        return "cols > %d: the tutorial's block holds a row of at most 64 KB (\"This layer norm doesn't support " \
               "feature dim >= 64KB.\")" % _max_cols(case.dtype)
    return None


def prepare(case, tensors, stream):
    t = {k: torch.from_dlpack(v) for k, v in tensors.items()}
    affine = case.affine == "on"
    x = t["x"]
    M, N = x.shape
    assert x.is_contiguous()
    # the tutorial's heuristics: a row in one block, warps by its size
    BLOCK_SIZE = min(_max_cols(case.dtype), triton.next_power_of_2(N))
    num_warps = min(max(BLOCK_SIZE // 256, 1), 8)
    st = torch.cuda.ExternalStream(stream, device=x.device)
    with torch.cuda.stream(st):  # allocations and the warm-up on kbench's stream
        if case["pass"] == "fwd":
            w, b = (t["gamma"], t["beta"]) if affine else (x, x)  # unused without affine
            calls = [(_layer_norm_fwd_fused, (M,), (x, t["y"], w, b, t["mean"], t["rstd"], x.stride(0), N, case.eps),
                      dict(BLOCK_SIZE=BLOCK_SIZE, AFFINE=affine, num_warps=num_warps))]
            locks, kernel = None, "triton fused fwd BLOCK=%d warps=%d" % (BLOCK_SIZE, num_warps)
        else:
            # heuristics for amount of parallel reduction stream for DW/DB
            GROUP_SIZE_M = 64
            if N <= 8192: GROUP_SIZE_M = 96
            if N <= 4096: GROUP_SIZE_M = 128
            if N <= 1024: GROUP_SIZE_M = 256
            GROUP_SIZE_M = min(GROUP_SIZE_M, M)  # every buffer written (the second stage sums them all)
            locks = torch.zeros(2 * GROUP_SIZE_M, dtype=torch.int32, device=x.device) if affine else None
            _dw = torch.empty((GROUP_SIZE_M, N), dtype=torch.float32, device=x.device) if affine else x
            _db = torch.empty((GROUP_SIZE_M, N), dtype=torch.float32, device=x.device) if affine else x
            w = t["gamma"] if affine else x  # unused without affine
            calls = [(_layer_norm_bwd_dx_fused, (M,),
                      (t["dx"], t["dy"], _dw, _db, x, w, t["mean"], t["rstd"], locks if affine else x, x.stride(0), N),
                      dict(GROUP_SIZE_M=GROUP_SIZE_M, BLOCK_SIZE_N=BLOCK_SIZE, AFFINE=affine, num_warps=num_warps))]
            if affine:  # accumulate partial sums in separate kernel
                calls.append((_layer_norm_bwd_dwdb, (triton.cdiv(N, 128),),
                              (_dw, _db, t["dgamma"], t["dbeta"], GROUP_SIZE_M, N),
                              dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=128)))
            kernel = "triton dx fused BLOCK=%d warps=%d" % (BLOCK_SIZE, num_warps)
            if affine:
                kernel += " + dwdb GROUP_SIZE_M=%d" % GROUP_SIZE_M
        state = (st, locks, calls)
        _run(state)  # compiles (untimed) and warms up
    return state, kernel


def _run(state):
    st, locks, calls = state
    if locks is not None:
        locks.zero_()  # part of the algorithm: the tutorial's torch.zeros each backward
    for fn, grid, args, meta in calls:
        fn[grid](*args, **meta)


def launch(case, tensors, stream, state):
    with torch.cuda.stream(state[0]):
        _run(state)


KBENCH = [dict(op="layernorm", name="triton", supports=supports, prepare=prepare, launch=launch,
               nondeterministic=True,
               help="Triton's layer-norm tutorial: fused fwd; bwd dx + locked dgamma/dbeta partial sums "
                    "(examples/python/layernorm_triton.py)")]
