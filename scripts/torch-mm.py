"""torch.mm (cuBLAS NN) at kbench's GEMM ladder sizes, bf16 and fp16, timed as
../shared/tools/peers.py times (triton.testing.do_bench: L2 flushed, median):
what the GEMM ceiling must not fall below. One JSON line per size.

usage (on the GPU machine, beside `kbench device`): python3 scripts/torch-mm.py
"""
import json, torch, triton.testing as tt
for dt in (torch.bfloat16, torch.float16):
    for n in (2048, 3072, 4096, 6144, 8192):
        a = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
        b = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
        ms = tt.do_bench(lambda: torch.mm(a, b), warmup=25, rep=200, return_mode="median")
        print(json.dumps(dict(op="gemm", impl="torch_mm", n=n, dtype=str(dt), ms=ms, TFLOPs=2 * n**3 / ms / 1e9)), flush=True)
