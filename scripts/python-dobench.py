#!/usr/bin/env python3
"""The seeds' Triton kernels (examples/python/rope_triton.py,
layernorm_triton.py) timed by triton.testing.do_bench_cudagraph at
configs/peers.json's shapes, beside kbench's medians of the same rows
(--timing graph) from a peers.json result (argv[1]). Issue 44's
measurement 2; scripts/gpu-python.sh dobench runs it.

do_bench_cudagraph replays the launches from a CUDA graph as kbench does,
but with no L2 flush between them (kbench flushes before every sample): a
case whose data fits the 50 MB L2 reads it hot there. Median of its runs."""
import importlib.util
import json
import sys

import torch
import triton.testing

ex = {}
for name in ("rope_triton", "layernorm_triton"):
    spec = importlib.util.spec_from_file_location(name, "examples/python/%s.py" % name)
    ex[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex[name])


class Case(dict):
    __getattr__ = dict.__getitem__


def rope_case(pas, s, b, h, d):
    c = Case({"pass": pas, "dtype": "bf16", "layout": "sbhd", "style": "neox", "seq": s, "batch": b, "heads": h,
              "dim": d, "rotary_dim": 0, "base": 10000.0})
    x = torch.randn(s, b, h, d, device="cuda", dtype=torch.bfloat16)
    pos = torch.arange(s, device="cuda", dtype=torch.float32)[:, None]
    angles = pos * 10000.0 ** (-torch.arange(0, d, 2, device="cuda", dtype=torch.float32) / d)
    t = {"angles": angles, ("t" if pas == "fwd" else "dy"): x, ("out" if pas == "fwd" else "dt"): torch.empty_like(x)}
    return "rope_triton", c, t, {"seq": s, "batch": b, "heads": h, "dim": d}


def ln_case(pas, rows, cols):
    c = Case({"pass": pas, "dtype": "bf16", "rows": rows, "cols": cols, "eps": 1e-5, "affine": "on"})
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    g = torch.rand(cols, device="cuda", dtype=torch.bfloat16) + 0.5
    if pas == "fwd":
        t = {"x": x, "gamma": g, "beta": torch.randn_like(g), "y": torch.empty_like(x),
             "mean": torch.empty(rows, device="cuda"), "rstd": torch.empty(rows, device="cuda")}
    else:
        t = {"x": x, "gamma": g, "dy": torch.randn_like(x), "mean": x.float().mean(-1),
             "rstd": torch.rsqrt(x.float().var(-1, unbiased=False) + 1e-5), "dx": torch.empty_like(x),
             "dgamma": torch.empty(cols, device="cuda"), "dbeta": torch.empty(cols, device="cuda")}
    return "layernorm_triton", c, t, {"rows": rows, "cols": cols}


def kbench_median(rows, op, impl, pas, params):
    for r in rows:
        if r["op"] == op and r["impl"] == impl and r["pass"] == pas and r.get("median_ms") and \
                all(r["params"].get(k) == v for k, v in params.items()) and r["params"].get("dtype") == "bf16":
            return r["median_ms"]
    return None


def main():
    rows = json.load(open(sys.argv[1]))["results"] if len(sys.argv) > 1 else []
    cases = [rope_case(p, 2048, 16, 8, 256) for p in ("fwd", "bwd")]
    cases += [ln_case(p, 4096, n) for p in ("fwd", "bwd") for n in (1024, 4096, 16384)]
    print("%-18s %-4s %-32s %12s %12s %7s" % ("example", "pass", "shape", "do_bench_cg", "kbench graph", "ratio"))
    # torch.cuda.graph captures on one stream of its class: made here, so that
    # each example is prepared for it outside the capture
    if torch.cuda.graph.default_capture_stream is None:
        torch.cuda.graph.default_capture_stream = torch.cuda.Stream()
    capture = torch.cuda.graph.default_capture_stream
    for name, c, t, params in cases:
        m = ex[name]
        states = {}

        def prep(s):
            st = m.prepare(c, t, s)
            states[s] = st[0] if isinstance(st, tuple) and len(st) == 2 and isinstance(st[1], str) else st
        prep(capture.cuda_stream)
        torch.cuda.synchronize()

        def fn():
            s = torch.cuda.current_stream().cuda_stream  # do_bench_cudagraph's own stream, and its capture's
            if s not in states:
                prep(s)
            m.launch(c, t, s, states[s])
        ms = triton.testing.do_bench_cudagraph(fn, rep=200, return_mode="median")
        op, impl = ("rope", "triton_rope") if name == "rope_triton" else ("layernorm", "triton_ln")
        kb = kbench_median(rows, op, impl, c["pass"], params)
        shape = " ".join("%s=%s" % kv for kv in params.items())
        print("%-18s %-4s %-32s %12.4f %12s %7s" % (name, c["pass"], shape, ms, "%.4f" % kb if kb else "-",
                                                   "%.3f" % (ms / kb) if kb else "-"))


main()
