# usage: python3 scripts/ab/ladinfo.py RUN.json TAG
#
# The GEMM ladder of a one-MLP-case run (kbench sweep ... --json RUN.json,
# one GPU or --devices all): per GPU that searched it, how long the ladder
# took, the bf16 ceiling and rung it read, and the MLP row's clocks, power and
# throttle reasons; TAG labels the line. The runs of
# results/curated/2026-11-26-h200x2-devices/ladder-ab/ swept its mlp1.json:
#   ./kbench sweep results/curated/2026-11-26-h200x2-devices/ladder-ab/mlp1.json \
#       --quiet --devices all --json /tmp/lad.json && python3 scripts/ab/ladinfo.py /tmp/lad.json dev1
import json, sys
if len(sys.argv) < 3: sys.exit("usage: python3 scripts/ab/ladinfo.py RUN.json TAG")
d = json.load(open(sys.argv[1]))
devs = d.get("devices") or [dict(d["device"], start_parts_s=d["kbench"].get("start_parts_s", {}), gpu=0)]
r = [x for x in d["results"] if x["op"] == "mlp"][0]
for x in devs:
    if x.get("gemm_tflops"):
        print(f"  {sys.argv[2]:8} gpu{x.get('gpu', 0)} ladders {x.get('start_parts_s', {}).get('ladders', 0):.2f} s (case ceilings {r['wall_s'].get('ceilings', 0):.2f}) bf16 {x['gemm_tflops']['bf16']:.1f} "
              f"rung {x.get('gemm_size', {}).get('bf16', '?')} {x.get('gemm_layout', {}).get('bf16', '?')}; row " + " ".join(f"{k} {v}" for k, v in r.get('conditions', {}).items() if k in ('sm_mhz_min', 'sm_mhz_median', 'power_w_median', 'temp_c_max', 'throttle_reasons')))
