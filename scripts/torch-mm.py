"""torch.mm (cuBLAS NN) at kbench's GEMM ladder sizes, bf16 and fp16, timed as
../shared/tools/peers.py times (triton.testing.do_bench: L2 flushed, median):
what the GEMM ceiling must not fall below. One JSON line per size and data:

  data=torch   torch.rand(dtype) * 2 - 1, as a PyTorch user writes it: computed
               in the 16-bit type, so small values keep few mantissa bits
  data=kbench  uniform [-1, 1) drawn in fp32 and rounded once, as kbench fills
               its operands (every mantissa bit random)

A GEMM's power, and so its clock under the power limit, depends on the bits it
multiplies: compare kbench's ceiling with the data=kbench lines.

usage (on the GPU machine, beside `kbench device`): python3 scripts/torch-mm.py
"""
import json, torch, triton.testing as tt
for dt in (torch.bfloat16, torch.float16):
    for data in ("torch", "kbench"):
        for n in (2048, 3072, 4096, 6144, 8192):
            if data == "torch":
                a = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
                b = torch.rand(n, n, device="cuda", dtype=dt) * 2 - 1
            else:
                a = (torch.rand(n, n, device="cuda") * 2 - 1).to(dt)
                b = (torch.rand(n, n, device="cuda") * 2 - 1).to(dt)
            ms = tt.do_bench(lambda: torch.mm(a, b), warmup=25, rep=200, return_mode="median")
            print(json.dumps(dict(op="gemm", impl="torch_mm", data=data, n=n, dtype=str(dt), ms=ms, TFLOPs=2 * n**3 / ms / 1e9)), flush=True)
            del a, b
