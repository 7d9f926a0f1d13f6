#!/usr/bin/env bash
# On a GPU machine: the measurements the issues quote, one section per op
# family, each ending with PyTorch's numbers from the same run when a copy of
# ../shared/tools/peers.py is at .peers/peers.py (ratios from one run, not
# two). Outputs (CSV, JSON, logs) go to ${OUT:-results}.
#
#   scripts/gpu-bench.sh [rope] [norm] [norm-variants] [mlp] [mlp-variants]
#                                                (default: rope norm mlp)
#
#   rope       sbhd s2048 b16 h8 d256 every dtype, bshd s4096 b2 h32 d128 bf16
#   norm       configs/layernorm.json and configs/rmsnorm.json for every
#              dtype (--set dtype=all), fwd and bwd, naive and opt
#   norm-variants  the named norm variants (warp_row, block, bulk) next to
#              opt at rows 4096, fp16/bf16 (LayerNorm) and RMSNorm bf16, twice
#   mlp        configs/mlp.json, every implementation
#   mlp-variants  fused_mma, fused and cublas_cat, and fused_wgmma at every
#              bn x cluster, at the seed's shape, twice
# Each section takes a few minutes on an H100; run one or two per call.
set -uo pipefail
out=${OUT:-results}
mkdir -p "$out"
peers() { [ -f .peers/peers.py ] && PYTHONUNBUFFERED=1 timeout 300 python3 .peers/peers.py --only "$1" --out "$out/peers-$2.json" 2>&1 | tail -n 40; }
kb() { timeout 600 ./kbench "$@"; }
# one line per row of a kbench CSV: pass dtype rows cols impl median_ms GB/s %copy (or TFLOP/s)
show() { awk -F, 'FNR==1{for(i=1;i<=NF;i++)h[$i]=i;next}{printf "%s %s %s %s %s %s %s %s%s\n",$h["pass"],$h["dtype"],$h["rows"],$h["cols"],$h["impl"],$h["median_ms"],$h["gbps"],$h["pct_of_copy"],($h["affine"]=="none"?" none":"")}' "$@"; }
LN_COLS=512,1024,2048,3072,4096,5120,6144,8192,10240,12288,14336,16384
RMS="--rows 4096,16384 --cols 2048,4096,5120,8192"
[ $# -gt 0 ] || set -- rope norm mlp
./kbench device | tee "$out/bench-device.txt"
for section in "$@"; do
    echo "== $section"
    case $section in
    rope)
        kb rope --seq 2048 --batch 16 --heads 8 --dim 256 --dtype fp32,bf16,fp16 --pass fwd,bwd \
            --csv "$out/bench-rope-sbhd.csv" --json "$out/bench-rope-sbhd.json" | tee "$out/bench-rope-sbhd.txt"
        kb rope --layout bshd --seq 4096 --batch 2 --heads 32 --dim 128 --dtype bf16 --pass fwd,bwd \
            --csv "$out/bench-rope-bshd.csv" --json "$out/bench-rope-bshd.json" | tee "$out/bench-rope-bshd.txt"
        peers copy,rope rope
        ;;
    norm)
        kb sweep configs/layernorm.json --set dtype=all --min-time 0.1 --quiet \
            --csv "$out/bench-layernorm.csv" --json "$out/bench-layernorm.json"
        kb sweep configs/rmsnorm.json --set dtype=all --min-time 0.1 --quiet \
            --csv "$out/bench-rmsnorm.csv" --json "$out/bench-rmsnorm.json"
        peers copy,layernorm norm
        ;;
    norm-variants)
        # every named norm variant next to opt at the same shapes, twice; the
        # kernel column says what each ran (n/a rows: what a variant cannot take)
        for r in 1 2; do
            kb layernorm --impl warp_row,block,bulk,opt --rows 4096 --cols $LN_COLS --dtype fp16,bf16 --pass fwd,bwd \
                --min-time 0.1 --no-verify --quiet --csv "$out/bench-layernorm-variants-$r.csv"
            kb rmsnorm --impl warp_row,block,bulk,opt $RMS --dtype bf16 --pass fwd,bwd \
                --min-time 0.1 --no-verify --quiet --csv "$out/bench-rmsnorm-variants-$r.csv"
        done
        show "$out"/bench-*norm-variants-1.csv
        ;;
    mlp)
        kb sweep configs/mlp.json --csv "$out/bench-mlp.csv" --json "$out/bench-mlp.json" | tee "$out/bench-mlp.txt" | tail -n 60
        peers mlp mlp
        ;;
    mlp-variants)
        # the fused variants and the wgmma kernel's tunables at the seed's shape, twice each
        seed="--tokens 2048 --hidden 1024 --inter 11008 --dtype bf16 --min-time 0.2 --quiet"
        for r in 1 2; do
            kb mlp --impl cublas_cat,fused_mma,fused $seed --csv "$out/bench-mlp-variants-$r.csv"
            kb mlp --impl fused_wgmma --bn 64,96,112,128 --cluster 1,2 $seed --no-verify --csv "$out/bench-mlp-tiles-$r.csv"
        done
        ;;
    *) echo "gpu-bench.sh: unknown section '$section' (rope, norm, norm-variants, mlp, mlp-variants)" >&2; exit 2 ;;
    esac
done
